/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_refusals.c - the client library's PUBACK refusals that come before
 * their call knows its packet id (client/refusals.h). */
#include "../../client/refusals.h"
#include "../test.h"

TEST(client_early_refusal_taken_only_by_a_call_begun_before_it)
{
    struct ss_early_refusals r = {0};
    /* A call begins; its refusal comes before it learns its id (7). */
    uint64_t a = ss_early_begin(&r);
    ss_early_note(&r, 7, 0x87);
    ASSERT_EQ(ss_early_take(&r, 8, a), 0);
    ASSERT_EQ(ss_early_take(&r, 7, a), 0x87);
    ASSERT_EQ(ss_early_take(&r, 7, a), 0); /* taken once */
    /* A late refusal of a call that ended already (its time ran out):
     * kept, as no pending call has its id, but a later call given the
     * same id (libmosquitto's ids wrap) must not take it. */
    ss_early_note(&r, 9, 0x80);
    uint64_t later = ss_early_begin(&r);
    ASSERT_EQ(ss_early_take(&r, 9, later), 0);
    /* Its own refusal, though, it takes. */
    ss_early_note(&r, 9, 0x97);
    ASSERT_EQ(ss_early_take(&r, 9, later), 0x97);
    /* Two calls publishing at once: each takes its own. */
    uint64_t x = ss_early_begin(&r), y = ss_early_begin(&r);
    ss_early_note(&r, 11, 0x87);
    ss_early_note(&r, 12, 0x90);
    ASSERT_EQ(ss_early_take(&r, 12, y), 0x90);
    ASSERT_EQ(ss_early_take(&r, 11, x), 0x87);
    /* The oldest goes when more come than it keeps; 0 is no packet id. */
    uint64_t z = ss_early_begin(&r);
    for (int i = 0; i < SS_EARLY_REFUSALS + 1; i++)
        ss_early_note(&r, 100 + i, 0x80 + i);
    ASSERT_EQ(ss_early_take(&r, 100, z), 0);
    ASSERT_EQ(ss_early_take(&r, 100 + SS_EARLY_REFUSALS, z), 0x80 + SS_EARLY_REFUSALS);
    ASSERT_EQ(ss_early_take(&r, 0, 0), 0);
}
