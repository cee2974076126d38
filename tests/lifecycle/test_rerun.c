/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_rerun.c - requests that run again: a pending read holds the queue
 * in order, a conflicted commit runs its requests again first and on
 * fresh data, the resend cache forgets a batch that failed, and
 * notifications follow only what was committed. */
#include <stdio.h>
#include <string.h>

#include "../../core/errors.h"
#include "../../core/hlc.h"
#include "../../core/latency.h"
#include "../../plugin/batch.h"
#include "../test.h"
#include "fixture.h"

TEST(a_pending_read_holds_the_queue_in_order)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "a", "va"), SS_OK);
    ss_mem_pend_key(f.be, "a");
    lc_send(&f, "c1", "1", "GET a");
    lc_send(&f, "c2", "2", "SET b vb"); /* another key, behind it all the same */
    lc_send(&f, "c3", "3", "GET c");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 0);
    ASSERT_TRUE(ss_mem_value(f.be, "b") == NULL);
    /* The keys behind the pending read are read ahead, once each. */
    const char *ahead = ss_mem_prefetched(f.be);
    ASSERT_MEM(ahead, strlen(ahead), "b c ", 4);
    lc_tick(&f);
    ahead = ss_mem_prefetched(f.be);
    ASSERT_MEM(ahead, strlen(ahead), "b c ", 4);
    ASSERT_EQ(lc_published(), 0);
    ss_mem_release_reads(f.be);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(0, "c1", "1", "$2\r\nva\r\n");
    lc_expect_answer(1, "c2", "2", "+OK\r\n");
    lc_expect_answer(2, "c3", "3", "$-1\r\n");
    ASSERT_EQ(ss_mem_commits(f.be), 1);
    lc_close(&f);
}

/* A read pending from the Nth on (here the second request's). */
TEST(a_pending_read_by_number)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_pend_read(f.be, 2);
    lc_send(&f, "c", "1", "SET a 1");
    lc_send(&f, "c", "2", "SET b 2");
    lc_send(&f, "c", "3", "SET a 3");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "c", "1", "+OK\r\n");
    ASSERT_STR(ss_mem_value(f.be, "a"), 1, "1");
    ss_mem_release_reads(f.be);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(1, "c", "2", "+OK\r\n");
    lc_expect_answer(2, "c", "3", "+OK\r\n");
    ASSERT_STR(ss_mem_value(f.be, "a"), 1, "3");
    lc_close(&f);
}

/* Another broker changes k while the commit that decided on it is in
 * flight: the commit conflicts, its requests run again first, in order,
 * on the new value, and only their second answers go out. */
TEST(a_conflict_runs_its_requests_again_on_fresh_data)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k", "v1"), SS_OK);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "VDEL k v1"); /* :1 on v1 */
    lc_send(&f, "c", "2", "GET k");
    lc_tick(&f);
    lc_send(&f, "d", "3", "SET j x"); /* runs: j is not in flight */
    lc_send(&f, "d", "4", "GET k");   /* waits: k is */
    ASSERT_EQ(ss_mem_set_behind(f.be, "k", "v9"), SS_OK);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    ss_mem_hold_commits(f.be, false);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    lc_expect_answer(0, "d", "3", "+OK\r\n");
    lc_expect_answer(1, "c", "1", ":-1\r\n");
    lc_expect_answer(2, "c", "2", "$2\r\nv9\r\n");
    lc_expect_answer(3, "d", "4", "$2\r\nv9\r\n");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    ASSERT_STR(ss_mem_value(f.be, "k"), 2, "v9");
    ASSERT_STR(ss_mem_value(f.be, "j"), 1, "x");
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    lc_close(&f);
}

/* A conflict the backend reports whatever the data (etcd's token expired,
 * its space ran out): the same requests, again, in order. */
TEST(a_reported_conflict_runs_its_requests_again_in_order)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_commit_ends(f.be, 1, SS_MEM_END_CONFLICT);
    lc_send(&f, "c", "1", "SET a 1");
    lc_send(&f, "c", "2", "SET a 2 NX");
    lc_send(&f, "c", "3", "GET a");
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 1);
    ASSERT_EQ(lc_published(), 0);
    ASSERT_TRUE(ss_mem_value(f.be, "a") == NULL);
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(0, "c", "1", "+OK\r\n");
    lc_expect_answer(1, "c", "2", ":-1\r\n");
    lc_expect_answer(2, "c", "3", "$1\r\n1\r\n");
    ASSERT_STR(ss_mem_value(f.be, "a"), 1, "1");
    lc_close(&f);
}

TEST(a_resend_shares_its_batch_and_is_forgotten_with_it)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "SET a 1");
    lc_tick(&f);
    lc_send(&f, "c", "1", "SET a 1"); /* resent while its commit is in flight */
    ASSERT_EQ(f.p->metrics.resends, 1);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 0);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(0, "c", "1", "+OK\r\n");
    lc_expect_answer(1, "c", "1", "+OK\r\n");
    ASSERT_MEM(lc_msg(0)->ts, strlen(lc_msg(0)->ts), lc_msg(1)->ts, strlen(lc_msg(1)->ts));
    ASSERT_EQ(ss_mem_commits(f.be), 1);

    /* Commit 2 fails: the resend of its request runs again. */
    ss_mem_commit_ends(f.be, 2, SS_MEM_END_FAIL);
    lc_send(&f, "c", "2", "SET b 2");
    lc_tick(&f);
    lc_send(&f, "c", "2", "SET b 2"); /* in flight: from the cache, failing with it */
    ASSERT_EQ(f.p->metrics.resends, 2);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    lc_expect_answer(2, "c", "2", "-ERR storage error\r\n");
    lc_expect_answer(3, "c", "2", "-ERR storage error\r\n");
    lc_send(&f, "c", "2", "SET b 2");
    ASSERT_EQ(f.p->metrics.resends, 2);
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 3);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 3));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 5);
    lc_expect_answer(4, "c", "2", "+OK\r\n");
    ASSERT_STR(ss_mem_value(f.be, "b"), 1, "2");
    lc_close(&f);
}

/* A conflict forgets the batch's resend entries too: a resend after it
 * gets the answer of the run that was committed. */
TEST(a_conflict_forgets_the_resend_entries_of_its_run)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k", "v1"), SS_OK);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "VDEL k v1");
    lc_tick(&f);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k", "v9"), SS_OK);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f); /* the conflict: VDEL runs again, :-1, nothing to commit */
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "c", "1", ":-1\r\n");
    lc_send(&f, "c", "1", "VDEL k v1");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(1, "c", "1", ":-1\r\n");
    ASSERT_STR(ss_mem_value(f.be, "k"), 2, "v9");
    lc_close(&f);
}

TEST(notifications_follow_committed_writes_only)
{
    static const char set_v1[] = "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nv1\r\n";
    static const char set_v3[] = "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nv3\r\n";
    struct lc f;
    lc_open(&f, &lc_shared);
    lc_send(&f, "w", "1", "KEYNOTIFY k");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "w", "1", "+OK\r\n");
    lc_send(&f, "c", "2", "SET k v1");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(1, "c", "2", "+OK\r\n"); /* the writer hears first */
    lc_expect_notify(2, "w", "k", set_v1);
    ASSERT_MEM(lc_msg(1)->ts, strlen(lc_msg(1)->ts), lc_msg(2)->ts, strlen(lc_msg(2)->ts));

    ss_mem_commit_ends(f.be, 2, SS_MEM_END_FAIL);
    lc_send(&f, "c", "3", "SET k v2");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    lc_expect_answer(3, "c", "3", "-ERR storage error\r\n");

    ss_mem_commit_ends(f.be, 3, SS_MEM_END_CONFLICT);
    lc_send(&f, "c", "4", "SET k v3");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 6);
    lc_expect_answer(4, "c", "4", "+OK\r\n");
    lc_expect_notify(5, "w", "k", set_v3);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 6);
    lc_close(&f);
}

/* A key deleted through another broker whose clock runs ahead: the read
 * of the absent key reports the version its deletion removed, and the
 * next version of the key is greater, although this broker's clock is
 * behind it (versions of a key never go backwards). */
TEST(a_removed_version_orders_the_next_one)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    uint64_t ahead = ss_wall_ms() + 3600 * 1000; /* an hour ahead of ours */
    ASSERT_EQ(ss_mem_delete_behind(f.be, "k", ahead), SS_OK);
    lc_send(&f, "c", "1", "SET k v");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "c", "1", "+OK\r\n");
    ss_hlc v;
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)lc_msg(0)->ts, strlen(lc_msg(0)->ts), &v), SS_OK);
    ASSERT_TRUE(v.wall > ahead || (v.wall == ahead && v.counter > 0));
    lc_close(&f);
}

/* A writer that observes its own key hears its answer first, then the
 * notification of its write, in one tick and in that order. */
TEST(a_writer_observing_its_key_hears_its_answer_first)
{
    static const char set_v[] = "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n";
    struct lc f;
    lc_open(&f, &lc_shared);
    lc_send(&f, "w", "1", "KEYNOTIFY k");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_send(&f, "w", "2", "SET k v");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(1, "w", "2", "+OK\r\n");
    lc_expect_notify(2, "w", "k", set_v);
    lc_close(&f);
}

/* A SCAN whose page is being read (a Range on etcd) holds the later
 * requests of its own client, in order, but not those of other clients:
 * they run and are answered while the page is read. Before, every
 * request behind it waited for the page (on etcd another client's p99 was
 * 130 times its idle one while listings ran). */
TEST(a_pending_scan_page_holds_only_its_own_client)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k1", "v1"), SS_OK);
    ss_mem_pend_scans(f.be);
    lc_send(&f, "lister", "1", "SCAN k*");
    lc_send(&f, "lister", "2", "GET k1");
    lc_send(&f, "other", "3", "GET k1");
    lc_send(&f, "other", "4", "SET k2 v2");
    lc_tick(&f);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(0, "other", "3", "$2\r\nv1\r\n");
    lc_expect_answer(1, "other", "4", "+OK\r\n");
    ss_mem_release_reads(f.be);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    lc_expect_answer(2, "lister", "1", "*1\r\n*2\r\n$2\r\nk1\r\n$2\r\nk2\r\n");
    lc_expect_answer(3, "lister", "2", "$2\r\nv1\r\n");
    lc_close(&f);
}

/* However many clients list at once: each SCAN waiting for its page holds
 * only its own client (with 16 at most, the 17th held every client). */
TEST(many_pending_scans_hold_only_their_own_clients)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k1", "v1"), SS_OK);
    ss_mem_pend_scans(f.be);
    enum { LISTERS = 40 };
    for (int i = 0; i < LISTERS; i++) {
        char id[32];
        snprintf(id, sizeof id, "lister%d", i);
        lc_send(&f, id, "s", "SCAN k*");
        lc_send(&f, id, "g", "GET k1");
    }
    lc_send(&f, "other", "o", "GET k1");
    lc_tick(&f);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "other", "o", "$2\r\nv1\r\n");
    ss_mem_release_reads(f.be);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1 + 2 * LISTERS);
    for (int i = 0; i < LISTERS; i++) {
        char id[32];
        snprintf(id, sizeof id, "lister%d", i);
        lc_expect_answer(1 + 2 * i, id, "s", "*1\r\n*1\r\n$2\r\nk1\r\n");
        lc_expect_answer(2 + 2 * i, id, "g", "$2\r\nv1\r\n");
    }
    lc_close(&f);
}
