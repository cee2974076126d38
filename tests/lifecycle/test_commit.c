/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_commit.c - answers and commits: nothing goes out before its
 * commit, a failed commit turns exactly its own answers into errors, an
 * unknown outcome is answered as such, a full queue waits or is refused
 * as the backend says. Each test holds or ends commits by hand
 * (mem_backend.h): nothing here depends on timing. */
#include <string.h>

#include "../../core/errors.h"
#include "../../plugin/batch.h"
#include "../test.h"
#include "fixture.h"

static void lc_same_ts(size_t i, size_t j)
{
    const struct lc_msg *a = lc_msg(i), *b = lc_msg(j);
    ASSERT_TRUE(a->ts[0] != '\0');
    ASSERT_MEM(a->ts, strlen(a->ts), b->ts, strlen(b->ts));
}

TEST(answers_wait_for_their_commit)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "SET a v1");
    lc_send(&f, "c", "2", "SET b v2");
    lc_send(&f, "c", "3", "GET a");
    ASSERT_EQ(lc_published(), 0);
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 1);
    lc_tick(&f);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 0);
    ASSERT_TRUE(ss_mem_value(f.be, "a") == NULL);
    /* Ended, but not collected yet: still nothing. */
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    ASSERT_EQ(lc_published(), 0);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(0, "c", "1", "+OK\r\n");
    lc_expect_answer(1, "c", "2", "+OK\r\n");
    lc_expect_answer(2, "c", "3", "$2\r\nv1\r\n");
    lc_same_ts(0, 2); /* the GET read the SET's version */
    ASSERT_STR(ss_mem_value(f.be, "a"), 2, "v1");
    ASSERT_EQ(ss_mem_commits(f.be), 1);
    lc_close(&f);
}

TEST(one_flight_queues_requests_behind_its_commit)
{
    struct lc f;
    lc_open(&f, &lc_single);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "SET a 1");
    lc_tick(&f);
    unsigned reads = ss_mem_reads(f.be);
    lc_send(&f, "c", "2", "SET b 2"); /* not run: the batch is closed */
    lc_send(&f, "c", "3", "GET a");
    lc_tick(&f);
    ASSERT_EQ(ss_mem_reads(f.be), reads);
    ASSERT_EQ(lc_published(), 0);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 0));
    lc_tick(&f); /* the first answer; the queue runs into commit 2 */
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "c", "1", "+OK\r\n");
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(1, "c", "2", "+OK\r\n");
    lc_expect_answer(2, "c", "3", "$1\r\n1\r\n");
    lc_same_ts(0, 2);
    lc_close(&f);
}

/* Two commits in flight; the first fails. */
TEST(a_failed_commit_fails_exactly_its_own_answers)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_hold_commits(f.be, true);
    ss_mem_commit_ends(f.be, 1, SS_MEM_END_FAIL);
    lc_send(&f, "c", "1", "SET a 1");
    lc_tick(&f);
    lc_send(&f, "c", "2", "SET b 2");
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    /* A refusal waits for nothing. */
    struct ss_request_props r = {.response_topic = strdup("resp/c"), .corr = (uint8_t *)strdup("3"),
                                 .corr_len = 1, .has_corr = true};
    const char *const extra[] = {"__stMsg", "unsupported protocol version", NULL};
    ss_batch_refuse(f.p->batch, "c", &r, "505", extra);
    ss_request_props_free(&r);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(0, "c", "1", "-ERR storage error\r\n");
    ASSERT_STR(lc_msg(0)->ts, strlen(lc_msg(0)->ts), ""); /* an error carries no version */
    const struct lc_msg *refusal = lc_msg(1);
    ASSERT_MEM(refusal->topic, strlen(refusal->topic), "resp/c", 6);
    ASSERT_TRUE(refusal->clientid != NULL && strcmp(refusal->clientid, "c") == 0);
    ASSERT_BUF(refusal->corr, "3");
    ASSERT_BUF(refusal->payload, "unsupported protocol version");
    ASSERT_STR(refusal->stat, strlen(refusal->stat), "505");
    ASSERT_TRUE(lc_logged("a write to the store failed (storage error); the requests of its batch are "
                          "answered with an error"));
    ASSERT_EQ(f.p->metrics.commits_failed, 1);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(2, "c", "2", "+OK\r\n");
    ASSERT_TRUE(ss_mem_value(f.be, "a") == NULL);
    ASSERT_STR(ss_mem_value(f.be, "b"), 1, "2");
    lc_close(&f);
}

/* A client's answers keep the order of its requests: a batch whose
 * commit ends first, or that has nothing to commit, waits for the
 * batches before it. */
TEST(a_later_batch_never_answers_before_an_earlier_one)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    lc_send(&f, "w", "0", "KEYNOTIFY b");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "w", "0", "+OK\r\n");
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "SET a 1");
    lc_tick(&f);
    lc_send(&f, "c", "2", "SET b 2");
    lc_tick(&f);
    lc_send(&f, "c", "3", "KEYNOTIFY a");
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    /* The second commit ends first: its answer waits, and so does the
     * notification of its write, which follows its answer. */
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 5);
    lc_expect_answer(1, "c", "1", "+OK\r\n");
    lc_expect_answer(2, "c", "2", "+OK\r\n");
    lc_expect_answer(3, "c", "3", "+OK\r\n");
    lc_expect_notify(4, "w", "b", "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\n2\r\n");
    lc_close(&f);
}

/* etcd's commit whose reply was lost and whose fence could not settle
 * it: "unavailable", though it took effect. */
TEST(an_unknown_outcome_is_answered_unavailable)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_commit_ends(f.be, 1, SS_MEM_END_UNKNOWN);
    lc_send(&f, "c", "1", "SET a 1");
    lc_send(&f, "c", "2", "GET a");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(0, "c", "1", "-ERR the store is unavailable\r\n");
    lc_expect_answer(1, "c", "2", "-ERR the store is unavailable\r\n");
    lc_send(&f, "c", "3", "GET a");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(2, "c", "3", "$1\r\n1\r\n");
    lc_close(&f);
}

/* A backend that never blocks the broker's thread refuses what does not
 * fit the queue (ss_batch_submit). */
TEST(a_full_queue_is_refused_when_the_backend_never_blocks)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    f.p->opt.max_queued_bytes = 1;
    ss_mem_pend_key(f.be, "a");
    lc_send(&f, "c", "1", "GET a"); /* its read is pending: queued */
    lc_send(&f, "c", "2", "SET b 2");
    ASSERT_EQ(lc_published(), 0); /* the refusal waits for the next settle */
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "c", "2", "-ERR the store is unavailable\r\n");
    ASSERT_TRUE(ss_mem_value(f.be, "b") == NULL);
    ss_mem_release_reads(f.be);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(1, "c", "1", "$-1\r\n");
    ASSERT_EQ(ss_mem_commits(f.be), 0);
    lc_close(&f);
}

/* With every flight taken the open batch cannot go, and nothing settles:
 * an answer that waits for no commit (here a full queue's refusal) still
 * goes out at the next tick, not when a flight ends. */
TEST(a_refusal_goes_out_while_every_flight_is_taken)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "SET a 1");
    lc_tick(&f);
    lc_send(&f, "c", "2", "SET b 2");
    lc_tick(&f);
    lc_send(&f, "c", "3", "SET c 3");
    lc_tick(&f); /* both flights taken: the open batch waits */
    ss_mem_pend_key(f.be, "d");
    lc_send(&f, "c", "4", "GET d"); /* pending: queued */
    f.p->opt.max_queued_bytes = 1;
    lc_send(&f, "c", "5", "SET e 5"); /* refused: the queue is full */
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "c", "5", "-ERR the store is unavailable\r\n");
    ss_mem_hold_commits(f.be, false);
    ss_mem_release_reads(f.be);
    lc_close(&f);
}

/* One that may block waits for its commit instead, and runs the queue. */
TEST(a_full_queue_waits_when_the_backend_blocks)
{
    struct lc f;
    lc_open(&f, &lc_single);
    f.p->opt.max_queued_bytes = 1;
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "SET a 1");
    lc_tick(&f);
    lc_send(&f, "c", "2", "SET b 2"); /* queued behind commit 1 */
    ASSERT_EQ(lc_published(), 0);
    lc_send(&f, "c", "3", "SET c 3"); /* the queue is full: commit 1 ends here */
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "c", "1", "+OK\r\n");
    ASSERT_STR(ss_mem_value(f.be, "a"), 1, "1");
    /* The queue ran: SET b. Its answer, held for its commit, fills the
     * same bound (answers held count apart from the queue): SET c waits
     * in the queue for it to go. */
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(1, "c", "2", "+OK\r\n");
    ASSERT_EQ(ss_mem_commits(f.be), 3);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 3));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(2, "c", "3", "+OK\r\n");
    ASSERT_STR(ss_mem_value(f.be, "c"), 1, "3");
    lc_close(&f);
}
