/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_final.c - answers that hold whatever becomes of their batch's
 * commit (a KEYNOTIFY's, the first answer of a request committed
 * earlier), and the rest of the table as the lifecycle uses it: the
 * expiry sweep's deletions and SCAN's pages. */
#include <stdio.h>
#include <string.h>

#include "../../core/codec.h"
#include "../../core/errors.h"
#include "../../plugin/batch.h"
#include "../test.h"
#include "fixture.h"

/* A registration lives in the broker's memory, not in the store: a
 * failed commit must not tell its client that it failed, nor a resent
 * STOP run again. (This replaces an integration test that stopped the
 * broker with SIGSTOP for 200 ms to land two requests in one batch.) */
TEST(a_keynotify_answer_holds_when_its_batch_fails)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ss_mem_commit_ends(f.be, 1, SS_MEM_END_FAIL);
    lc_send(&f, "w", "observe", "KEYNOTIFY k");
    lc_send(&f, "s", "w1", "SET other x");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(0, "w", "observe", "+OK\r\n");
    lc_expect_answer(1, "s", "w1", "-ERR storage error\r\n");
    /* The registration holds. */
    lc_send(&f, "s", "w2", "SET k v1");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    lc_expect_answer(2, "s", "w2", "+OK\r\n");
    lc_expect_notify(3, "w", "k", "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nv1\r\n");

    ss_mem_commit_ends(f.be, 3, SS_MEM_END_FAIL);
    lc_send(&f, "w", "stop", "KEYNOTIFY k STOP");
    lc_send(&f, "s", "w3", "SET other y");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 6);
    lc_expect_answer(4, "w", "stop", "+OK\r\n");
    lc_expect_answer(5, "s", "w3", "-ERR storage error\r\n");
    /* Unregistered: no notification. */
    lc_send(&f, "s", "w4", "SET k v2");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 7);
    lc_expect_answer(6, "s", "w4", "+OK\r\n");
    /* The STOP resent gets its first answer, not ":0" from running again. */
    lc_send(&f, "w", "stop", "KEYNOTIFY k STOP");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 8);
    lc_expect_answer(7, "w", "stop", "+OK\r\n");
    ASSERT_EQ(f.p->metrics.resends, 1);
    /* Resent while its failing batch is in flight: the same. (A resent
     * registration runs again, command.h: not a resend answered from the
     * cache, but answered as the first, in its turn.) */
    ss_mem_hold_commits(f.be, true);
    ss_mem_commit_ends(f.be, 5, SS_MEM_END_FAIL);
    lc_send(&f, "w", "observe-j", "KEYNOTIFY j");
    lc_send(&f, "s", "w5", "SET other z");
    lc_tick(&f);
    lc_send(&f, "w", "observe-j", "KEYNOTIFY j");
    ASSERT_EQ(f.p->metrics.resends, 1);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 8); /* it goes out with its batch, in order */
    ASSERT_TRUE(ss_mem_release_commit(f.be, 5));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 11);
    lc_expect_answer(8, "w", "observe-j", "+OK\r\n");
    lc_expect_answer(9, "s", "w5", "-ERR storage error\r\n");
    lc_expect_answer(10, "w", "observe-j", "+OK\r\n");
    lc_close(&f);
}

/* A resent request whose first run was committed is answered as it was,
 * version included, even in a batch whose commit fails: the write is
 * durable, and a lock holder told otherwise would believe it has none. */
TEST(a_resent_committed_request_survives_a_failed_batch)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    lc_send(&f, "holder", "lock-1", "SET lock holder NX PX 60000");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "holder", "lock-1", "+OK\r\n");
    ss_mem_commit_ends(f.be, 2, SS_MEM_END_FAIL);
    lc_send(&f, "holder", "lock-1", "SET lock holder NX PX 60000");
    lc_send(&f, "other", "w", "SET unrelated x");
    lc_tick(&f);
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(1, "holder", "lock-1", "+OK\r\n");
    ASSERT_MEM(lc_msg(1)->ts, strlen(lc_msg(1)->ts), lc_msg(0)->ts, strlen(lc_msg(0)->ts));
    lc_expect_answer(2, "other", "w", "-ERR storage error\r\n");
    ASSERT_STR(ss_mem_value(f.be, "lock"), 6, "holder");
    ASSERT_TRUE(ss_mem_value(f.be, "unrelated") == NULL);
    lc_close(&f);
}

/* A KEYNOTIFY queued behind a commit whose client disconnected meanwhile
 * registers nothing (its registrations were dropped at the disconnect)
 * and is not answered; nor is one whose +OK waited for its commit when
 * the client went: the same client id coming back hears nothing it did
 * not ask for, and no +OK of a registration it does not have. (This
 * replaces an integration test that hoped, five times over, to land the
 * KEYNOTIFY and the DISCONNECT during a commit of 3 MiB with fsync always.) */
TEST(a_queued_keynotify_of_a_departed_client_registers_nothing)
{
    struct lc f;
    lc_open(&f, &lc_single);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "writer", "1", "SET fill x");
    lc_tick(&f);
    lc_send(&f, "leaver", "n", "KEYNOTIFY watched"); /* queued: the commit runs */
    lc_disconnect(&f, "leaver");
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f);
    /* Not answered: a persistent session would be told +OK on its return
     * of a registration it does not have. */
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "writer", "1", "+OK\r\n");
    /* Run in the open batch, its +OK waiting for the commit, when its
     * client goes: that answer goes too (the registration did). */
    lc_send(&f, "leaver", "o", "KEYNOTIFY watched");
    lc_send(&f, "writer", "2", "SET other v");
    lc_tick(&f);
    lc_disconnect(&f, "leaver");
    ASSERT_TRUE(ss_mem_release_commit(f.be, 0)); /* the oldest held */
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(1, "writer", "2", "+OK\r\n");
    ss_mem_hold_commits(f.be, false);
    lc_send(&f, "writer", "3", "SET watched v");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(2, "writer", "3", "+OK\r\n");
    /* The same client, registered while connected, is told. */
    lc_send(&f, "leaver", "m", "KEYNOTIFY watched");
    lc_send(&f, "writer", "4", "SET watched w");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 6);
    lc_expect_answer(3, "leaver", "m", "+OK\r\n");
    lc_expect_answer(4, "writer", "4", "+OK\r\n");
    lc_expect_notify(5, "leaver", "watched", "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nw\r\n");
    lc_close(&f);
}

/* With topic protection off an answer goes to its topic's subscribers,
 * into no client's session in particular: a registering KEYNOTIFY's +OK
 * still goes with its client when it disconnects before its commit ends
 * (the registration went). Others' answers stay. */
TEST(a_departed_client_loses_its_held_keynotify_answer_without_topic_protection)
{
    struct lc f;
    lc_open(&f, &lc_single);
    f.p->opt.topic_protection = false;
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "leaver", "o", "KEYNOTIFY watched");
    lc_send(&f, "stayer", "s", "KEYNOTIFY watched");
    lc_send(&f, "writer", "1", "SET other v");
    lc_tick(&f);
    lc_disconnect(&f, "leaver");
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    const char *want[][2] = {{"resp/stayer", "+OK\r\n"}, {"resp/writer", "+OK\r\n"}};
    for (size_t i = 0; i < 2; i++) {
        const struct lc_msg *m = lc_msg(i);
        ASSERT_TRUE(m->clientid == NULL); /* routed to the topic's subscribers */
        ASSERT_MEM(m->topic, strlen(m->topic), want[i][0], strlen(want[i][0]));
        ASSERT_MEM(m->payload.data, m->payload.len, want[i][1], strlen(want[i][1]));
    }
    lc_close(&f);
}

/* The sweep deletes what expired in a batch of its own; its observer is
 * told once that batch is committed, not when it failed. */
TEST(an_expiry_is_notified_once_committed)
{
    static const char deleted[] = "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n";
    struct lc f;
    lc_open(&f, &lc_shared);
    lc_send(&f, "w", "1", "KEYNOTIFY k");
    lc_send(&f, "c", "2", "SET k v PX 60000");
    lc_send(&f, "c", "3", "SET j v PX 60000");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 4);
    lc_expect_answer(2, "c", "3", "+OK\r\n");
    lc_expect_notify(3, "w", "k", "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n");
    uint64_t later = ss_wall_ms() + 120000;
    ss_mem_commit_ends(f.be, 2, SS_MEM_END_FAIL);
    lc_tick_at(&f, later);
    ASSERT_EQ(ss_mem_commits(f.be), 2);
    ASSERT_EQ(lc_published(), 4);
    ASSERT_TRUE(lc_logged("a write to the store failed (storage error)"));
    ASSERT_STR(ss_mem_value(f.be, "k"), 1, "v");
    lc_tick_at(&f, later); /* the sweep again, committed this time */
    ASSERT_EQ(ss_mem_commits(f.be), 3);
    ASSERT_EQ(lc_published(), 5);
    lc_expect_notify(4, "w", "k", deleted);
    ASSERT_TRUE(ss_mem_value(f.be, "k") == NULL);
    ASSERT_TRUE(ss_mem_value(f.be, "j") == NULL);
    lc_close(&f);
}

/* SCAN walks what is committed and what its own batch wrote. */
TEST(a_scan_sees_its_own_batch)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k2", "x"), SS_OK);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k1", "x"), SS_OK);
    ASSERT_EQ(ss_mem_set_behind(f.be, "other", "x"), SS_OK);
    lc_send(&f, "c", "1", "SET k3 x");
    lc_send(&f, "c", "2", "DEL k2");
    lc_send(&f, "c", "3", "SCAN k*");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    lc_expect_answer(1, "c", "2", ":1\r\n");
    lc_expect_answer(2, "c", "3", "*1\r\n*2\r\n$2\r\nk1\r\n$2\r\nk3\r\n");
    lc_close(&f);
}

/* Administrative pages are read between batches, from what is committed:
 * a write whose commit is in flight is not listed yet. */
TEST(an_administrative_page_lists_what_is_committed)
{
    struct lc f;
    lc_open(&f, &lc_shared);
    ASSERT_EQ(ss_mem_set_behind(f.be, "k1", "x"), SS_OK);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "c", "1", "SET k2 y");
    lc_tick(&f);
    lc_admin(&f, "op", "a1", "KEYS k*  10"); /* the cursor empty: the first page */
    ASSERT_EQ(lc_published(), 0);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    const struct lc_msg *m = lc_msg(0);
    ASSERT_MEM(m->topic, strlen(m->topic), "resp/op", 7);
    ASSERT_BUF(m->corr, "a1");
    ASSERT_BUF(m->payload, "cursor -\nkey 6b31 1 1700000000001:0:other - -\n");
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 2);
    lc_expect_answer(1, "c", "1", "+OK\r\n");
    lc_admin(&f, "op", "a2", "KEYS k*  10");
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 3);
    char want[200];
    int n = snprintf(want, sizeof want, "cursor -\nkey 6b31 1 1700000000001:0:other - -\nkey 6b32 1 %s - -\n",
                     lc_msg(1)->ts);
    ASSERT_BUF(lc_msg(2)->corr, "a2");
    ASSERT_MEM(lc_msg(2)->payload.data, lc_msg(2)->payload.len, want, (size_t)n);
    lc_close(&f);
}

/* A registering KEYNOTIFY whose +OK could not be queued (here: it has no
 * response topic, which the outbox refuses as it would a failed
 * allocation) marks nothing: the answer queued before it, another
 * client's, is not taken for its +OK and still goes when that client
 * disconnects before the commit ends (a SET's answer is the broker's to
 * deliver). */
TEST(a_keynotify_answer_not_queued_marks_no_other_answer)
{
    struct lc f;
    lc_open(&f, &lc_single);
    ss_mem_hold_commits(f.be, true);
    lc_send(&f, "writer", "1", "SET k v");
    ss_buf payload = SS_BUF_INIT;
    ss_bytes argv[2] = {{(const uint8_t *)"KEYNOTIFY", 9}, {(const uint8_t *)"k", 1}};
    ASSERT_EQ(ss_codec_put_request(&payload, 2, argv), SS_OK);
    struct ss_request_props r = {0};
    struct ss_request_from from = {payload.data, payload.len, "watcher", NULL};
    ss_batch_submit(f.p->batch, &from, &r);
    ss_request_props_free(&r);
    ss_buf_free(&payload);
    ASSERT_TRUE(lc_logged("an answer was dropped"));
    lc_tick(&f);
    lc_disconnect(&f, "writer");
    ASSERT_TRUE(ss_mem_release_commit(f.be, 1));
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    lc_expect_answer(0, "writer", "1", "+OK\r\n");
    lc_close(&f);
}

/* A KEYNOTIFY whose notification topic (the client id and the key, in
 * hex) would be longer than MQTT allows is refused, and the log says why,
 * as it does for every other refusal of a limit. */
TEST(a_keynotify_whose_topic_would_not_fit_is_refused_and_logged)
{
    struct lc f;
    lc_open(&f, &lc_single);
    static char id[801], words[10 + 32000 + 1];
    memset(id, 'c', sizeof id - 1);
    memcpy(words, "KEYNOTIFY ", 10);
    memset(words + 10, 'k', 32000);
    lc_send(&f, id, "1", words);
    lc_tick(&f);
    ASSERT_EQ(lc_published(), 1);
    const struct lc_msg *m = lc_msg(0);
    ASSERT_BUF(m->payload, "-ERR the quota has been exceeded\r\n");
    ASSERT_TRUE(lc_logged(" refused: a KEYNOTIFY's notification topic would be 65675 bytes (the client id "
                          "and the key of 32000 bytes, in hex), longer than MQTT allows (65535)"));
    lc_close(&f);
}
