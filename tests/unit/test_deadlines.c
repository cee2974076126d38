/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_deadlines.c - the etcd backend's map of deadlines (etcd/deadlines.h):
 * the order of sweeping, a later revision winning, entries dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/buf.h"
#include "../../core/errors.h"
#include "../../etcd/deadlines.h"
#include "../test.h"

static ss_bytes K(const char *s)
{
    return (ss_bytes){(const uint8_t *)s, strlen(s)};
}

/* Pops every entry in order: its key and at, "key@at " each. */
static void drain(ss_etcd_deadlines *d, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    ss_etcd_deadline *x;
    while ((x = ss_etcd_deadlines_first(d)) != NULL) {
        len += (size_t)snprintf(out + len, n - len, "%.*s@%llu ", (int)x->key_len, (const char *)x->key,
                                (unsigned long long)x->at);
        ss_etcd_deadlines_drop(d, x);
    }
}

TEST(deadlines_sweep_in_order_of_at)
{
    ss_etcd_deadlines d;
    ASSERT_EQ(ss_etcd_deadlines_init(&d), SS_OK);
    ASSERT_TRUE(ss_etcd_deadlines_first(&d) == NULL);
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("c"), 5, 300, 300), SS_OK);
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("a"), 6, 100, 350), SS_OK); /* another's: swept later */
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("b"), 7, 200, 200), SS_OK);
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("none"), 8, 0, 0), SS_OK); /* no deadline: not kept */
    ASSERT_EQ(d.n, 3);
    ASSERT_TRUE(ss_etcd_deadlines_find(&d, K("none")) == NULL);
    ss_etcd_deadline *x = ss_etcd_deadlines_find(&d, K("a"));
    ASSERT_TRUE(x != NULL);
    ASSERT_EQ(x->deadline, 100);
    ASSERT_EQ(x->rev, 6);
    /* Deferred: its deadline and revision stay. */
    ss_etcd_deadlines_defer(&d, ss_etcd_deadlines_first(&d), 1000);
    ASSERT_EQ(ss_etcd_deadlines_find(&d, K("b"))->deadline, 200);
    char out[256];
    drain(&d, out, sizeof out);
    ASSERT_STR(out, strlen(out), "c@300 a@350 b@1000 ");
    ASSERT_EQ(d.n, 0);
    ss_etcd_deadlines_free(&d);
}

TEST(deadlines_a_later_revision_wins)
{
    ss_etcd_deadlines d;
    ASSERT_EQ(ss_etcd_deadlines_init(&d), SS_OK);
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("k"), 10, 500, 500), SS_OK);
    /* Older news (a page read before the watch's change): ignored. */
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("k"), 9, 100, 100), SS_OK);
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("k"), 9, 0, 0), SS_OK);
    ss_etcd_deadline *x = ss_etcd_deadlines_first(&d);
    ASSERT_EQ(x->deadline, 500);
    ASSERT_EQ(x->at, 500);
    /* The same revision again, to be swept later (the writer's commit,
     * then the watch's report of it): the earlier sweep stands; sooner,
     * it moves up. */
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("k"), 10, 500, 750), SS_OK);
    ASSERT_EQ(x->at, 500);
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("k"), 10, 500, 400), SS_OK);
    ASSERT_EQ(x->at, 400);
    /* Renewed: the new deadline, in its new place. */
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("j"), 11, 700, 700), SS_OK);
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("k"), 12, 900, 900), SS_OK);
    ASSERT_EQ(d.n, 2);
    ASSERT_STR(ss_etcd_deadlines_first(&d)->key, 1, "j");
    /* The same revision with another deadline (a read of the key, which
     * knows better): taken. */
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("k"), 12, 950, 1200), SS_OK);
    ASSERT_EQ(ss_etcd_deadlines_find(&d, K("k"))->deadline, 950);
    ASSERT_EQ(ss_etcd_deadlines_find(&d, K("k"))->at, 1200);
    /* Deleted at a later revision: gone. */
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("j"), 13, 0, 0), SS_OK);
    ASSERT_EQ(d.n, 1);
    ASSERT_TRUE(ss_etcd_deadlines_find(&d, K("j")) == NULL);
    ASSERT_EQ(ss_etcd_deadlines_find(&d, K("k"))->deadline, 950);
    ss_etcd_deadlines_free(&d);
}

/* Many keys learnt, renewed and dropped in a shuffled order: the heap
 * always yields the earliest at, every key once. */
TEST(deadlines_many_keys_stay_in_order)
{
    enum { N = 5000 };
    ss_etcd_deadlines d;
    ASSERT_EQ(ss_etcd_deadlines_init(&d), SS_OK);
    uint64_t seed = 12345;
    char key[16];
    for (int i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        snprintf(key, sizeof key, "key-%d", i);
        uint64_t at = 1 + (seed >> 33) % 100000;
        ASSERT_EQ(ss_etcd_deadlines_learn(&d, K(key), i + 1, at, at), SS_OK);
    }
    /* Every third renewed to a later revision, every fifth deleted. */
    for (int i = 0; i < N; i += 3) {
        snprintf(key, sizeof key, "key-%d", i);
        ASSERT_EQ(ss_etcd_deadlines_learn(&d, K(key), N + i + 1, 50000 + (uint64_t)i, 50000 + (uint64_t)i), SS_OK);
    }
    int kept = N;
    for (int i = 0; i < N; i += 5) {
        snprintf(key, sizeof key, "key-%d", i);
        ASSERT_EQ(ss_etcd_deadlines_learn(&d, K(key), 3 * N, 0, 0), SS_OK);
        kept--;
    }
    ASSERT_EQ(d.n, (size_t)kept);
    uint64_t last = 0;
    int seen = 0;
    ss_etcd_deadline *x;
    while ((x = ss_etcd_deadlines_first(&d)) != NULL) {
        ASSERT_TRUE(x->at >= last);
        ASSERT_TRUE(ss_etcd_deadlines_find(&d, (ss_bytes){x->key, x->key_len}) == x);
        char name[16] = {0};
        ASSERT_TRUE(x->key_len < sizeof name);
        memcpy(name, x->key, x->key_len); /* not terminated */
        int i = atoi(name + 4);
        ASSERT_TRUE(i % 5 != 0);
        if (i % 3 == 0)
            ASSERT_EQ(x->at, 50000 + (uint64_t)i);
        last = x->at;
        ss_etcd_deadlines_drop(&d, x);
        seen++;
    }
    ASSERT_EQ(seen, kept);
    ASSERT_EQ(d.cap, 64); /* emptied after a burst: its room went */
    /* And it takes keys again. */
    ASSERT_EQ(ss_etcd_deadlines_learn(&d, K("again"), 1, 5, 5), SS_OK);
    ASSERT_STR(ss_etcd_deadlines_first(&d)->key, 5, "again");
    ss_etcd_deadlines_free(&d);
}

/* A churn over: once most keys have gone, so has the room they took (the
 * heap's and the hash table's), and the rest still sweep in order. */
TEST(deadlines_room_goes_with_the_keys)
{
    enum { N = 20000, KEEP = 50 };
    ss_etcd_deadlines d;
    ASSERT_EQ(ss_etcd_deadlines_init(&d), SS_OK);
    char key[16];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        ASSERT_EQ(ss_etcd_deadlines_learn(&d, K(key), i + 1, 1000 + (uint64_t)i, 1000 + (uint64_t)i), SS_OK);
    }
    ASSERT_EQ(d.cap, 32768);
    ASSERT_EQ(d.table.mask + 1, 32768);
    /* All but KEEP deleted (the keys with the latest deadlines stay). */
    for (int i = 0; i < N - KEEP; i++) {
        snprintf(key, sizeof key, "key-%d", i);
        ASSERT_EQ(ss_etcd_deadlines_learn(&d, K(key), N + i + 1, 0, 0), SS_OK);
    }
    ASSERT_EQ(d.n, KEEP);
    ASSERT_EQ(d.cap, 128);             /* halved while under a quarter */
    ASSERT_EQ(d.table.mask + 1, 256);  /* halved while under an eighth */
    uint64_t at = 1000 + N - KEEP;
    ss_etcd_deadline *x;
    while ((x = ss_etcd_deadlines_first(&d)) != NULL) {
        ASSERT_EQ(x->at, at);
        ASSERT_TRUE(ss_etcd_deadlines_find(&d, (ss_bytes){x->key, x->key_len}) == x);
        ss_etcd_deadlines_drop(&d, x);
        at++;
    }
    ASSERT_EQ(at, 1000 + N);
    ASSERT_EQ(d.cap, 64);
    ASSERT_EQ(d.table.mask + 1, 16);
    ss_etcd_deadlines_free(&d);
}
