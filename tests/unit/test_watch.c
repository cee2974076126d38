/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_watch.c - KEYNOTIFY registrations and the dedup cache. */
#include <stdio.h>
#include <string.h>

#include "../../core/dedup.h"
#include "../../core/errors.h"
#include "../../core/watch.h"
#include "../test.h"

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static void collect(void *ctx, ss_bytes client, const char *username)
{
    (void)username;
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%.*s;", (int)client.len, (const char *)client.data);
}

TEST(watch_register_notify_drop)
{
    ss_watch *w;
    ASSERT_EQ(ss_watch_new(3, 0, &w), SS_OK);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("k")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("k")), 0); /* already */
    ASSERT_EQ(ss_watch_add(w, B("c2"), B("k")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("other")), 1);
    char out[256] = "";
    ss_watch_each(w, B("k"), collect, out);
    ASSERT_MEM(out, strlen(out), "c2;c1;", 6);
    out[0] = '\0';
    ss_watch_each(w, B("none"), collect, out);
    ASSERT_EQ(strlen(out), 0);
    ASSERT_EQ(ss_watch_count(w), 3);
    /* Per-client limit. */
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("x")), 1);
    ASSERT_EQ(ss_watch_refused(w), SS_WATCH_LIMIT_NONE);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("y")), SS_E_QUOTA);
    ASSERT_EQ(ss_watch_refused(w), SS_WATCH_LIMIT_PER_CLIENT); /* named in the log */
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("x")), 0); /* re-registering is fine at the limit */
    ASSERT_EQ(ss_watch_client_count(w, B("c1")), 3);
    ASSERT_EQ(ss_watch_remove(w, B("c1"), B("x")), 1);
    ASSERT_EQ(ss_watch_remove(w, B("c1"), B("x")), 0);
    ASSERT_EQ(ss_watch_remove(w, B("nobody"), B("k")), 0);
    /* A disconnect drops all of a client's registrations. */
    ASSERT_EQ(ss_watch_drop_client(w, B("c1")), 2);
    ASSERT_EQ(ss_watch_drop_client(w, B("c1")), 0);
    out[0] = '\0';
    ss_watch_each(w, B("k"), collect, out);
    ASSERT_MEM(out, strlen(out), "c2;", 3);
    ASSERT_EQ(ss_watch_count(w), 1);
    ss_watch_free(w);
}

/* A STOP leaves the registration to be walked until the changes before
 * it are told (ss_watch_settle past its batch); a second STOP answers 0,
 * a KEYNOTIFY meanwhile takes it back, a disconnect drops it at once. */
TEST(watch_stop_holds_until_settled)
{
    ss_watch *w;
    ASSERT_EQ(ss_watch_new(0, 0, &w), SS_OK);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("k")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c2"), B("k")), 1);
    ASSERT_EQ(ss_watch_stop(w, B("c1"), B("k"), 5), 1);
    ASSERT_EQ(ss_watch_stop(w, B("c1"), B("k"), 5), 0); /* stopped already */
    ASSERT_EQ(ss_watch_stop(w, B("c3"), B("k"), 5), 0);
    char out[256] = "";
    ss_watch_each(w, B("k"), collect, out);
    ASSERT_MEM(out, strlen(out), "c2;c1;", 6);
    ASSERT_EQ(ss_watch_settle(w, 5), 0); /* batch 5 not told yet */
    ASSERT_EQ(ss_watch_count(w), 2);
    ASSERT_EQ(ss_watch_settle(w, 6), 1);
    out[0] = '\0';
    ss_watch_each(w, B("k"), collect, out);
    ASSERT_MEM(out, strlen(out), "c2;", 3);
    ASSERT_EQ(ss_watch_client_count(w, B("c1")), 0);
    /* Taken back before it went. */
    ASSERT_EQ(ss_watch_stop(w, B("c2"), B("k"), 7), 1);
    ASSERT_EQ(ss_watch_add(w, B("c2"), B("k")), 1);
    ASSERT_EQ(ss_watch_settle(w, 100), 0);
    ASSERT_EQ(ss_watch_count(w), 1);
    /* A stopped registration counts toward no limit: its slot may be
     * taken before it settles; taking it back then is over the limit. */
    ss_watch *q;
    ASSERT_EQ(ss_watch_new(2, 0, &q), SS_OK);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k1")), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k2")), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k3")), SS_E_QUOTA);
    ASSERT_EQ(ss_watch_stop(q, B("c"), B("k1"), 3), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k3")), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k1")), SS_E_QUOTA);
    ASSERT_EQ(ss_watch_settle(q, 4), 1);
    ASSERT_EQ(ss_watch_client_count(q, B("c")), 2);
    ASSERT_EQ(ss_watch_stop(q, B("c"), B("k2"), 5), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k2")), 1); /* taken back within the limit */
    ASSERT_EQ(ss_watch_settle(q, 6), 0);
    ASSERT_EQ(ss_watch_client_count(q, B("c")), 2);
    /* Stopped ones not settled yet (a watch that lags) count up to as
     * many again: registering and stopping in a loop meets a limit. */
    ASSERT_EQ(ss_watch_stop(q, B("c"), B("k2"), 7), 1);
    ASSERT_EQ(ss_watch_stop(q, B("c"), B("k3"), 7), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k4")), 1);
    ASSERT_EQ(ss_watch_stop(q, B("c"), B("k4"), 7), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k5")), 1);
    ASSERT_EQ(ss_watch_stop(q, B("c"), B("k5"), 7), 1);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k6")), SS_E_QUOTA); /* 4 held: twice the limit */
    ASSERT_EQ(ss_watch_refused(q), SS_WATCH_LIMIT_PER_CLIENT);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k2")), 1); /* taken back: no new one */
    ASSERT_EQ(ss_watch_settle(q, 8), 3);
    ASSERT_EQ(ss_watch_add(q, B("c"), B("k6")), 1);
    ss_watch_free(q);
    /* Dropped with its client while stopping: nothing left to settle. */
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("a")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("b")), 1);
    ASSERT_EQ(ss_watch_stop(w, B("c1"), B("a"), 8), 1);
    ASSERT_EQ(ss_watch_drop_client(w, B("c1")), 2);
    ASSERT_EQ(ss_watch_settle(w, 100), 0);
    ASSERT_EQ(ss_watch_count(w), 1);
    ss_watch_free(w);
}

TEST(watch_many_and_total_limit)
{
    ss_watch *w;
    ASSERT_EQ(ss_watch_new(0, 5000, &w), SS_OK);
    char c[32], k[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(c, sizeof c, "client%d", i % 50);
        snprintf(k, sizeof k, "key%d", i);
        ASSERT_EQ(ss_watch_add(w, B(c), B(k)), 1);
    }
    ASSERT_EQ(ss_watch_add(w, B("late"), B("key")), SS_E_QUOTA);
    ASSERT_EQ(ss_watch_refused(w), SS_WATCH_LIMIT_TOTAL);
    ASSERT_EQ(ss_watch_client_count(w, B("late")), 0);
    for (int i = 0; i < 50; i += 2) {
        snprintf(c, sizeof c, "client%d", i);
        ASSERT_EQ(ss_watch_drop_client(w, B(c)), 100);
    }
    ASSERT_EQ(ss_watch_count(w), 2500);
    ss_watch_free(w); /* frees the rest: valgrind checks it */
}

/* Keys may be long: the bytes of the registered keys are bounded too,
 * each registration counting its key's, and a removal or a disconnect
 * gives them back. */
TEST(watch_bytes_limit)
{
    ss_watch *w;
    ASSERT_EQ(ss_watch_new(0, 0, &w), SS_OK);
    ss_watch_set_max_bytes(w, 100);
    ASSERT_EQ(ss_watch_add(w, B("a"), B("0123456789012345678901234567890123456789")), 1); /* 40 */
    ASSERT_EQ(ss_watch_add(w, B("b"), B("0123456789012345678901234567890123456789")), 1); /* 80: counted again */
    ASSERT_EQ(ss_watch_add(w, B("a"), B("012345678901234567890")), SS_E_QUOTA);        /* 101 */
    ASSERT_EQ(ss_watch_add(w, B("a"), B("01234567890123456789")), 1);                 /* 100 */
    ASSERT_EQ(ss_watch_add(w, B("c"), B("x")), SS_E_QUOTA);
    ASSERT_EQ(ss_watch_refused(w), SS_WATCH_LIMIT_BYTES);
    ASSERT_EQ(ss_watch_client_count(w, B("c")), 0);
    ASSERT_EQ(ss_watch_add(w, B("a"), B("01234567890123456789")), 0); /* registered already */
    ASSERT_EQ(ss_watch_remove(w, B("a"), B("01234567890123456789")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c"), B("x")), 1);
    ASSERT_EQ(ss_watch_drop_client(w, B("b")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c"), B("0123456789012345678901234567890123456789")), 1); /* 81 */
    ss_watch_set_max_bytes(w, 0);
    ASSERT_EQ(ss_watch_add(w, B("c"), B("0123456789012345678901234567890123456789-")), 1);
    ss_watch_free(w);
}

TEST(dedup_first_answer_within_window)
{
    ss_dedup_limits lim = {10000, 100, 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    ss_bytes parts[2] = {B("payload"), B("ts")};
    uint64_t fp = ss_dedup_id(d, B("c"), B("corr"), parts, 2);
    /* Every byte run counts, and runs cannot be shifted into each other. */
    ss_bytes other[2] = {B("payloa"), B("dts")};
    ASSERT_TRUE(fp != ss_dedup_id(d, B("c"), B("corr"), other, 2));
    ASSERT_TRUE(fp != ss_dedup_id(d, B("c"), B("corr"), parts, 1));
    ASSERT_TRUE(fp != ss_dedup_id(d, B("c2"), B("corr"), parts, 2));
    ASSERT_TRUE(fp != ss_dedup_id(d, B("cc"), B("orr"), parts, 2));
    ASSERT_EQ(fp, ss_dedup_id(d, B("c"), B("corr"), parts, 2));
    ss_dedup_answer a = {.payload = B("+OK\r\n"), .version = B("1:0:n")}, got;
    ASSERT_EQ(ss_dedup_find(d, B("c"), B("corr"), fp, 1000, &got), 0);
    ASSERT_EQ(ss_dedup_put(d, B("c"), B("corr"), fp, 1000, &a), SS_OK);
    ASSERT_EQ(ss_dedup_find(d, B("c"), B("corr"), fp, 10999, &got), 1);
    ASSERT_STR(got.payload.data, got.payload.len, "+OK\r\n");
    ASSERT_STR(got.version.data, got.version.len, "1:0:n");
    /* Another client, other correlation data, another request: no match. */
    ASSERT_EQ(ss_dedup_find(d, B("c2"), B("corr"), fp, 2000, &got), 0);
    ASSERT_EQ(ss_dedup_find(d, B("c"), B("corr2"), fp, 2000, &got), 0);
    ASSERT_EQ(ss_dedup_find(d, B("c"), B("corr"), fp + 1, 2000, &got), 0);
    /* After the window. */
    ASSERT_EQ(ss_dedup_find(d, B("c"), B("corr"), fp, 11000, &got), 0);
    ss_dedup_expire(d, 11000);
    ASSERT_EQ(ss_dedup_count(d), 0);
    ASSERT_EQ(ss_dedup_bytes(d), 0);
    ss_dedup_free(d);
}

/* The payload length of answer i below: mostly small, some large enough
 * for an allocation of their own, two larger than a block. */
static size_t span_len(int i)
{
    if (i == 1000 || i == 2500)
        return 100000;
    return i % 97 == 0 ? 5000 : 100 + (size_t)(i % 200);
}

/* Answers are cut from blocks in time order: forgetting from the tail
 * and expiring from the head across many blocks, with large answers
 * among them, keeps exactly the right ones. */
TEST(dedup_entries_span_blocks)
{
    ss_dedup_limits lim = {1000, 100000, 8 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    static uint8_t value[100000];
    for (size_t i = 0; i < sizeof value; i++)
        value[i] = (uint8_t)i;
    char corr[16];
    uint64_t mark = 0;
    for (int i = 0; i < 3000; i++) {
        if (i == 2000)
            mark = ss_dedup_mark(d);
        snprintf(corr, sizeof corr, "c%d", i);
        ss_dedup_answer a = {.payload = {value, span_len(i)}, .version = B("")};
        ASSERT_EQ(ss_dedup_put(d, B("cl"), B(corr), (uint64_t)i, (uint64_t)i, &a), SS_OK);
    }
    ss_dedup_forget_since(d, mark);
    ASSERT_EQ(ss_dedup_count(d), 2000);
    for (int i = 0; i < 2000; i++) { /* new answers take the forgotten room */
        snprintf(corr, sizeof corr, "n%d", i);
        ss_dedup_answer a = {.payload = {value + 7, 50}, .version = B("v")};
        ASSERT_EQ(ss_dedup_put(d, B("cl"), B(corr), (uint64_t)i, 2500, &a), SS_OK);
    }
    ss_dedup_expire(d, 2500); /* the entries put at times 0..1500 */
    ASSERT_EQ(ss_dedup_count(d), 2499);
    ss_dedup_answer got;
    for (int i = 0; i < 3000; i++) {
        snprintf(corr, sizeof corr, "c%d", i);
        int want = i > 1500 && i < 2000;
        ASSERT_EQ(ss_dedup_find(d, B("cl"), B(corr), (uint64_t)i, 2500, &got), want);
        if (want)
            ASSERT_MEM(got.payload.data, got.payload.len, value, span_len(i));
    }
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("n1999"), 1999, 2500, &got), 1);
    ASSERT_MEM(got.payload.data, got.payload.len, value + 7, 50);
    ASSERT_STR(got.version.data, got.version.len, "v");
    ss_dedup_expire(d, 3500);
    ASSERT_EQ(ss_dedup_count(d), 0);
    ASSERT_EQ(ss_dedup_bytes(d), 0);
    ss_dedup_free(d);
}

TEST(dedup_bounded_and_forget)
{
    ss_dedup_limits lim = {10000, 10, 4096};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    ss_dedup_answer a = {.payload = B(":1\r\n"), .version = B("")}, got;
    char corr[16];
    for (int i = 0; i < 100; i++) {
        snprintf(corr, sizeof corr, "c%d", i);
        ASSERT_EQ(ss_dedup_put(d, B("cl"), B(corr), 7, 1000, &a), SS_OK);
        ASSERT_TRUE(ss_dedup_count(d) <= 10);
        ASSERT_TRUE(ss_dedup_bytes(d) <= 4096);
    }
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("c99"), 7, 1000, &got), 1);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("c0"), 7, 1000, &got), 0); /* evicted */
    uint64_t mark = ss_dedup_mark(d);
    ASSERT_EQ(ss_dedup_put(d, B("cl"), B("new1"), 7, 1000, &a), SS_OK);
    ASSERT_EQ(ss_dedup_put(d, B("cl"), B("new2"), 7, 1000, &a), SS_OK);
    /* A final answer (a KEYNOTIFY's) outlives the batch it was given in;
     * the others of that batch go, before and after it. */
    ss_dedup_answer fin = {.payload = B("+OK\r\n"), .version = B(""), .final = true};
    ASSERT_EQ(ss_dedup_put(d, B("cl"), B("final"), 7, 1000, &fin), SS_OK);
    ASSERT_EQ(ss_dedup_put(d, B("cl"), B("new3"), 7, 1000, &a), SS_OK);
    ss_dedup_forget_since(d, mark);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("new1"), 7, 1000, &got), 0);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("new2"), 7, 1000, &got), 0);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("new3"), 7, 1000, &got), 0);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("c99"), 7, 1000, &got), 1);
    ASSERT_EQ(got.final, false);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("final"), 7, 1000, &got), 1);
    ASSERT_STR(got.payload.data, got.payload.len, "+OK\r\n");
    ASSERT_EQ(got.final, true);
    ss_dedup_forget_range(d, 0, UINT64_MAX);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("final"), 7, 1000, &got), 1);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("c99"), 7, 1000, &got), 0);
    /* Too big to keep: not kept, not an error. */
    static uint8_t big[8192];
    ss_dedup_answer huge = {.payload = {big, sizeof big}, .version = B("")};
    ASSERT_EQ(ss_dedup_put(d, B("cl"), B("big"), 7, 1000, &huge), SS_OK);
    ASSERT_EQ(ss_dedup_find(d, B("cl"), B("big"), 7, 1000, &got), 0);
    ss_dedup_free(d);
}

/* A client's username is kept with its registrations while it has any,
 * and ss_watch_each hands it over with the client's id, a C string. */
static void collect_users(void *ctx, ss_bytes client, const char *username)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%s%s=%s;", client.data[client.len] == '\0' ? "" : "!", (const char *)client.data,
             username ? username : "-");
}

#define USERS(w, key, want)                                 \
    do {                                                    \
        char out_[256] = "";                                \
        ss_watch_each((w), B(key), collect_users, out_);    \
        ASSERT_STR(out_, strlen(out_), want);               \
    } while (0)

TEST(watch_keeps_a_username_with_a_clients_registrations)
{
    ss_watch *w;
    ASSERT_EQ(ss_watch_new(0, 0, &w), SS_OK);
    ASSERT_EQ(ss_watch_set_user(w, B("c1"), "bob"), SS_E_INVAL); /* no registration */
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("k")), 1);
    USERS(w, "k", "c1=-;");
    ASSERT_EQ(ss_watch_set_user(w, B("c1"), "bob"), SS_OK);
    ASSERT_EQ(ss_watch_add(w, B("c2"), B("k")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("j")), 1);
    USERS(w, "k", "c2=-;c1=bob;");
    USERS(w, "j", "c1=bob;");
    ASSERT_EQ(ss_watch_set_user(w, B("c1"), "carol"), SS_OK);
    USERS(w, "j", "c1=carol;");
    /* Gone with the client's last registration; a new one starts without. */
    ASSERT_EQ(ss_watch_remove(w, B("c1"), B("k")), 1);
    USERS(w, "j", "c1=carol;");
    ASSERT_EQ(ss_watch_remove(w, B("c1"), B("j")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c1"), B("k")), 1);
    USERS(w, "k", "c1=-;c2=-;");
    ASSERT_EQ(ss_watch_set_user(w, B("c1"), NULL), SS_OK);
    ASSERT_EQ(ss_watch_set_user(w, B("c2"), "dave"), SS_OK);
    ASSERT_EQ(ss_watch_drop_client(w, B("c2")), 1);
    ASSERT_EQ(ss_watch_add(w, B("c2"), B("k")), 1);
    USERS(w, "k", "c2=-;c1=-;");
    ASSERT_EQ(ss_watch_set_user(w, B("c1"), "erin"), SS_OK);
    ss_watch_free(w); /* frees what it kept: valgrind and LeakSanitizer see */
}
