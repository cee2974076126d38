/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_bound.c - the bound on answers held (max_queued_bytes): answers
 * waiting for their commit count against it, apart from the queued
 * requests. Past it no request runs: the queue stops, in order, and goes
 * on once a flush gave the bytes back; a request that arrives meanwhile
 * waits in the queue. A GET of a large value once held a copy of it per
 * request of a few bytes, for every request queued behind a commit (on
 * LMDB with fsync always, 2,000 GETs of 1 MB behind a stream of writes
 * took the broker to 395 MB), and on etcd for as long as the open batch
 * could not fly.
 *
 * The values are 10,000 bytes, the bound 15,000: one answer of such a GET
 * (with a few small ones) is under it, two are over it, whatever a
 * message's overhead is estimated at (plugin/outbox.c), up to some 2,000
 * bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"
#include "../../plugin/batch.h"
#include "../../plugin/batch_internal.h"
#include "../test.h"
#include "fixture.h"

#define BIG 10000u
#define BOUND 15000u

/* "SET big <BIG bytes>", and the answer of a GET of it; heap, for free(). */
static char *tb_set_big(void)
{
    char *s = malloc(8 + BIG + 1);
    ASSERT_TRUE(s != NULL);
    memcpy(s, "SET big ", 8);
    memset(s + 8, 'v', BIG);
    s[8 + BIG] = '\0';
    return s;
}

/* Everything answered and settled: nothing is counted as held any more
 * (a count left over would hold the queue for good). */
static void tb_nothing_held(const struct lc *f)
{
    ASSERT_EQ(f->p->batch->outbox.len, 0);
    ASSERT_EQ(f->p->batch->outbox.bytes, 0);
    ASSERT_EQ(f->p->batch->copy_bytes, 0);
}

static char *tb_big_answer(void)
{
    char *s = malloc(16 + BIG);
    ASSERT_TRUE(s != NULL);
    int n = snprintf(s, 16, "$%u\r\n", BIG);
    memset(s + n, 'v', BIG);
    memcpy(s + n + BIG, "\r\n", 3);
    return s;
}

/* LMDB's shape: the queue waits behind a commit, and when it ends only
 * what the bound takes runs (two GETs), then goes; the next tick runs the
 * next two, and so on, every request answered in order. */
TEST(answers_held_stop_the_queue_until_they_go)
{
    struct lc f;
    lc_open(&f, &lc_single);
    char *set = tb_set_big(), *want = tb_big_answer();
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "w", "0", set);
    lc_tick(&f); /* commit 1 under way: what follows is queued */
    f.p->opt.max_queued_bytes = BOUND;
    lc_send(&f, "c", "1", "GET big");
    lc_send(&f, "c", "2", "GET big");
    lc_send(&f, "c", "3", "GET big");
    lc_send(&f, "c", "4", "GET big");
    lc_send(&f, "d", "5", "SET k 1");
    lc_send(&f, "c", "6", "GET big");
    ASSERT_EQ(lc_published(), 0);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    unsigned reads = ss_mem_reads(f.be);
    /* The commit's answer goes; two GETs run and the bound stops the
     * run; their batch, all reads, settles at once and they go too. */
    lc_tick(&f);
    ASSERT_EQ(ss_mem_reads(f.be), reads + 2);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(0, "w", "0", "+OK\r\n");
    lc_expect_answer(1, "c", "1", want);
    lc_expect_answer(2, "c", "2", want);
    lc_tick(&f);
    ASSERT_EQ(ss_mem_reads(f.be), reads + 4);
    ASSERT_EQ(lc_published(), 5);
    lc_expect_answer(3, "c", "3", want);
    lc_expect_answer(4, "c", "4", want);
    /* The SET and the last GET: their batch writes, and waits for its
     * commit. */
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    ASSERT_EQ(lc_published(), 5);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 7);
    lc_expect_answer(5, "d", "5", "+OK\r\n");
    lc_expect_answer(6, "c", "6", want);
    ASSERT_STR(ss_mem_value(f.be, "k"), 1, "1");
    tb_nothing_held(&f);
    ASSERT_EQ(f.p->batch->lister_cap, 0); /* no SCAN: no room made for listing clients */
    free(set);
    free(want);
    lc_close(&f);
}

/* An answer larger than the bound still runs when nothing else is held,
 * alone: the queue never stops for good. */
TEST(an_answer_larger_than_the_bound_still_goes_alone)
{
    struct lc f;
    lc_open(&f, &lc_single);
    char *set = tb_set_big(), *want = tb_big_answer();
    lc_send(&f, "w", "0", set);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "w", "1", "SET k 1");
    lc_tick(&f);
    lc_send(&f, "c", "2", "GET big");
    lc_send(&f, "c", "3", "GET big");
    lc_send(&f, "c", "4", "GET big");
    f.p->opt.max_queued_bytes = 1000; /* the queue's three requests fit; no answer does */
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    for (size_t i = 0; i < 3; i++) {
        lc_tick(&f);
        ASSERT_EQ(lc_published(), 3 + i);
    }
    lc_expect_answer(1, "w", "1", "+OK\r\n");
    lc_expect_answer(2, "c", "2", want);
    lc_expect_answer(3, "c", "3", want);
    lc_expect_answer(4, "c", "4", want);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 5);
    tb_nothing_held(&f);
    free(set);
    free(want);
    lc_close(&f);
}

/* etcd's shape: with every flight taken the open batch cannot fly, and a
 * read it can answer at once runs at once, its answer held with the
 * batch. Past the bound, the next requests wait in the queue (where the
 * queue's bound refuses what does not fit) instead of running into the
 * open batch for as long as the flights take; they run, in order, once
 * the open batch has gone out. */
TEST(an_open_batch_that_cannot_fly_takes_answers_up_to_the_bound)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    char *set = tb_set_big(), *want = tb_big_answer();
    lc_send(&f, "w", "0", set);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "w", "1", "SET a 1");
    lc_tick(&f);
    lc_send(&f, "w", "2", "SET b 2");
    lc_tick(&f);
    lc_send(&f, "w", "3", "SET x 3");
    lc_tick(&f); /* both flights taken: the open batch stays open */
    ASSERT_EQ(ss_mem_commits(f.be), 3);
    f.p->opt.max_queued_bytes = BOUND;
    unsigned reads = ss_mem_reads(f.be);
    lc_send(&f, "c", "4", "GET big");
    lc_send(&f, "c", "5", "GET big");
    lc_send(&f, "c", "6", "GET big"); /* over the bound: queued */
    lc_send(&f, "c", "7", "GET big");
    lc_send(&f, "d", "8", "GET x");
    lc_send(&f, "c", "9", "GET big");
    ASSERT_EQ(ss_mem_reads(f.be), reads + 2);
    lc_tick(&f);
    lc_tick(&f);
    ASSERT_EQ(ss_mem_reads(f.be), reads + 2);
    ASSERT_EQ(lc_published(), 1);
    /* The flights end: their answers go; the open batch's stay held (and
     * the queue with them) until it flies and its commit ends. */
    ASSERT_TRUE(ss_mem_release_commit(f.be, 2));
    ASSERT_TRUE(ss_mem_release_commit(f.be, 3));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    ASSERT_EQ(ss_mem_commits(f.be), 4);
    ASSERT_EQ(ss_mem_reads(f.be), reads + 2);
    ss_mem_hold_commits(f.be, false);
    ASSERT_TRUE(ss_mem_release_commit(f.be, 4));
    lc_tick(&f); /* the open batch's answers go; two more GETs run and go */
    ASSERT_EQ(lc_published(), 8);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 10);
    lc_expect_answer(1, "w", "1", "+OK\r\n");
    lc_expect_answer(2, "w", "2", "+OK\r\n");
    lc_expect_answer(3, "w", "3", "+OK\r\n");
    lc_expect_answer(4, "c", "4", want);
    lc_expect_answer(5, "c", "5", want);
    lc_expect_answer(6, "c", "6", want);
    lc_expect_answer(7, "c", "7", want);
    lc_expect_answer(8, "d", "8", "$1\r\n3\r\n");
    lc_expect_answer(9, "c", "9", want);
    tb_nothing_held(&f);
    free(set);
    free(want);
    lc_close(&f);
}

/* LMDB's shape with fsync periodic: a commit that does not wait for the
 * disk is done at once, so nothing is in flight between ticks and the
 * open batch holds the answers until the next one. Clients that send
 * GETs of a large value faster than that fill the answers' bound, then
 * the queue's: a full queue must then commit the open batch on the
 * broker's thread (its answers go, after the commit) and run what waited,
 * rather than queue without end until the tick. Both bounds hold, to
 * within one request and one answer, and every request is answered in
 * order. */
#define TB_GETS 10000u
#define TB_SMALL_BOUND 4096u
#define TB_VALUE 3072u

TEST(a_full_queue_commits_the_open_batch_when_answers_hold_it)
{
    struct lc f;
    lc_open(&f, &lc_single);
    char set[8 + TB_VALUE + 1], want[16 + TB_VALUE];
    memcpy(set, "SET big ", 8);
    memset(set + 8, 'v', TB_VALUE);
    set[8 + TB_VALUE] = '\0';
    int n = snprintf(want, 16, "$%u\r\n", TB_VALUE);
    memset(want + n, 'v', TB_VALUE);
    memcpy(want + n + TB_VALUE, "\r\n", 3);
    lc_send(&f, "w", "00000", set);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    f.p->opt.max_queued_bytes = TB_SMALL_BOUND;
    struct ss_batch *b = f.p->batch;
    uint64_t one_request = 0, one_answer = 0;
    for (unsigned i = 1; i <= TB_GETS; i++) {
        char corr[8];
        snprintf(corr, sizeof corr, "%05u", i);
        lc_send(&f, "c", corr, "GET big");
        if (one_request == 0 && b->queue.len == 1)
            one_request = b->queue_bytes; /* every request weighs the same */
        if (one_answer == 0 && b->outbox.len == 1)
            one_answer = b->outbox.bytes;
        ASSERT_TRUE(one_request == 0 || b->queue_bytes <= TB_SMALL_BOUND + one_request);
        ASSERT_TRUE(b->outbox.bytes <= TB_SMALL_BOUND + one_answer);
    }
    ASSERT_TRUE(one_request != 0); /* the queue was used */
    /* What the sends did not answer, the ticks do, in order. */
    for (size_t i = 0; i < TB_GETS && lc_published() < 1 + TB_GETS; i++)
        lc_tick(&f);
    ASSERT_EQ(lc_published(), 1 + TB_GETS);
    for (unsigned i = 1; i <= TB_GETS; i++) {
        char corr[8];
        snprintf(corr, sizeof corr, "%05u", i);
        lc_expect_answer(i, "c", corr, want);
    }
    tb_nothing_held(&f);
    ASSERT_EQ(b->lister_cap, 0);
    lc_close(&f);
}

/* What the queue counts is what it holds: a request answered from the
 * queue hands its response topic and correlation data to its answer, and
 * the count must lose what the request weighed as it was queued, not what
 * was left of it. A SCAN waiting for its page keeps the queue from
 * emptying (which would reset the count), while the requests of other
 * clients behind it run. */
TEST(the_queue_counts_what_it_holds)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k1", "v1"), SS_OK);
    ss_mem_pend_scans(f.be);
    struct ss_batch *b = f.p->batch;
    lc_send(&f, "lister", "s", "SCAN k*");
    lc_send(&f, "lister", "g", "GET k1");
    for (unsigned i = 0; i < 100; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "corr-%u", i);
        lc_send(&f, "other", corr, "GET k1");
    }
    ASSERT_EQ(b->queue.len, 102);
    lc_tick(&f);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 100);
    ASSERT_EQ(b->queue.len, 2);
    uint64_t left = 0;
    for (size_t i = 0; i < b->queue.len; i++)
        left += ss_queued_size(&b->queue.items[i]);
    ASSERT_EQ(b->queue_bytes, left);
    ss_mem_release_reads(f.be);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 102);
    ASSERT_EQ(b->queue_bytes, 0);
    lc_close(&f);
}
