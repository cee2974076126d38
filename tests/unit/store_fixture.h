/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_fixture.h - the store as the store's tests (test_store*.c) open
 * it, and the records they put; for more than one file of tests. */
#ifndef SS_TEST_STORE_FIXTURE_H
#define SS_TEST_STORE_FIXTURE_H

#include <stdint.h>

#include "../../core/store.h"

/* Open the store of options o in the test's directory (o->path becomes
 * it). */
ss_store *open_store(ss_store_options *o);
/* A C string as bytes, without its NUL. */
ss_bytes B(const char *s);
/* A record of value at version <wall>:<counter>:StateStore, with no
 * fencing token and no expiry. */
ss_record rec_of(ss_bytes value, uint64_t wall, uint32_t counter);
/* ss_store_put, which must succeed. */
void put(ss_store *s, ss_bytes key, const ss_record *r);

#endif
