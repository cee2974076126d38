/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* journaled.h - the store as the journal's tests open it, for more than
 * one file of tests. */
#ifndef SS_TEST_JOURNALED_H
#define SS_TEST_JOURNALED_H

#include <sys/types.h>

#include "../../core/store.h"

/* In the test's directory, journaled, synced periodically, with no
 * checkpoint but those the test asks for. */
ss_store_options journaled(void);
/* The journal's size in the test's directory now. */
off_t journal_size(void);

#endif
