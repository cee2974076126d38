/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* journal_batches.h - the records the journal's tests write, k<i> =
 * value-<i> in batches of one by a process that then crashes, and the
 * checks of what the store holds of them after; for more than one file
 * of tests. */
#ifndef SS_TEST_JOURNAL_BATCHES_H
#define SS_TEST_JOURNAL_BATCHES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../core/store.h"

/* B and rec_of are inline, each file's own: test_store's files have a B
 * and a rec_of of their own (store_fixture.h), this rec_of of another
 * shape, and all the unit tests are one program. */

/* A C string as bytes, without its NUL. */
static inline ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

/* A record of value at version 5000:<counter>:N, expiring at expiry (0:
 * never). */
static inline ss_record rec_of(const char *value, uint32_t counter, uint64_t expiry)
{
    ss_record r;
    memset(&r, 0, sizeof r);
    r.value = B(value);
    r.version.wall = 5000;
    r.version.counter = counter;
    r.version.node_len = 1;
    r.version.node[0] = 'N';
    r.expiry_ms = expiry;
    return r;
}

/* Put "k<i>" = "value-<i>" in batches of one, committed at time 1 (no
 * checkpoint), optionally checkpoint after them (an empty batch an hour
 * later), then end the process without closing the store: a crash. */
void crash_after_batches_then(int from, int to, bool checkpoint);
/* crash_after_batches_then without the checkpoint. */
void crash_after_batches(int from, int to);
/* Keys k<from>..k<to-1> are there with their values, and nothing else. */
void assert_keys(ss_store *s, int from, int to, int upto);
/* The bytes charged for k<from>..k<to-1> with their values. */
uint64_t charge_of(int from, int to);

#endif
