/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_sweep.c - expiry on etcd without an expiry index: a broker
 * knows the deadlines of the records written before it started from its
 * read of every record at start (its watch tells it the later ones), and
 * sweeps them; the read is done again every etcd_sweep_full_ms, over
 * Ranges that each cover about a page of records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

static bool two_or_more(const char *v)
{
    return strtoull(v, NULL, 10) >= 2;
}

static bool one_or_more(const char *v)
{
    return strtoull(v, NULL, 10) >= 1;
}

static bool hundred(const char *v)
{
    return strcmp(v, "100") == 0;
}

static bool none(const char *v)
{
    return strcmp(v, "0") == 0;
}

static bool any(const char *v)
{
    (void)v;
    return true;
}

/* Wait for n DELETE notifications on o, each no later than by_ms (wall
 * clock, ms) and none before after_ms. */
static void await_deletions(struct client *o, int n, uint64_t after_ms, uint64_t by_ms)
{
    for (int i = 0; i < n; i++) {
        uint64_t now = now_ms();
        struct msg *m = client_wait(o, now < by_ms ? (int)(by_ms - now) : 1);
        ASSERT_TRUE(m != NULL);
        PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
        ASSERT_TRUE(now_ms() >= after_ms);
    }
}

/* A broker that writes n keys named prefix-NNN with PX px (and "forever"
 * without one, if asked), and stops. */
static void write_and_stop(const struct etcd_cluster *c, const char *name, const char *prefix, int n,
                           const char *px, bool forever)
{
    struct broker a;
    char conf[64];
    snprintf(conf, sizeof conf, "plugin_opt_node_id %s\n", name);
    broker_on_etcd(&a, name, c->endpoints, conf);
    struct client w;
    char rw[64], key[64];
    client_connect_rr(&w, a.port, "writer", rw, sizeof rw);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "%s-%03d", prefix, i);
        ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", key, "v", "PX", px)), "+OK\r\n");
    }
    if (forever)
        ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", "forever", "v")), "+OK\r\n");
    client_close(&w);
    broker_stop(&a);
}

TEST(cluster_broker_started_later_sweeps_deadlines_written_before)
{
    /* More keys than one page of the read at start (42 records with
     * etcd's default request limit). */
    enum { N = 100, PX = 8000, M = 10, PX2 = 3000 };
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    /* A writes keys with a deadline and one without, and stops before
     * the deadline: none of them is swept by it. */
    uint64_t t0 = now_ms();
    write_and_stop(&c, "writer", "later", N, "8000", true);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/x/"), 0); /* no index */

    /* B starts after: its watch begins later than every one of those
     * writes, so it knows the deadlines from its read at start alone. */
    struct broker b;
    broker_on_etcd(&b, "sweeper", c.endpoints,
                   "sys_interval 1\nplugin_opt_node_id sweeper\nplugin_opt_etcd_sweep_full_ms 2000\n"
                   "plugin_opt_etcd_tombstone_ms 1000\n");
    char v[32];
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadline_reads", one_or_more, v, sizeof v));
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadlines", hundred, v, sizeof v));
    struct client o;
    char ro[64];
    client_connect_rr(&o, b.port, "observer", ro, sizeof ro);
    ASSERT_REPLY(request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", "forever")), "+OK\r\n");
    for (int i = 0; i < N; i++) {
        char key[64];
        snprintf(key, sizeof key, "later-%03d", i);
        ASSERT_REPLY(request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", key)), "+OK\r\n");
    }
    ASSERT_TRUE(now_ms() - t0 < PX); /* all known and registered before the deadline */
    /* Each is swept by B, and notified once as a deletion, soon after
     * its deadline (B sweeps another's keys 250 ms after it). */
    await_deletions(&o, N, t0 + PX, now_ms() + PX + 3000);
    uint64_t took = now_ms() - t0;
    ASSERT_EQ(client_drain(&o, 500), 0); /* once each, and nothing of "forever" */

    /* Keys written while B runs, by a broker that stops at once: B knows
     * them from its watch, and sweeps them. */
    uint64_t t1 = now_ms();
    for (int i = 0; i < M; i++) {
        char key[64];
        snprintf(key, sizeof key, "watched-%03d", i);
        ASSERT_REPLY(request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", key)), "+OK\r\n");
    }
    write_and_stop(&c, "writer", "watched", M, "3000", false);
    ASSERT_TRUE(now_ms() - t1 < PX2); /* its writer stopped before their deadline */
    ASSERT_TRUE(client_drain_count(&o, M, 2000) == M); /* their SETs */
    await_deletions(&o, M, t1 + PX2, now_ms() + PX2 + 3000);
    uint64_t took2 = now_ms() - t1;
    ASSERT_EQ(client_drain(&o, 500), 0);

    /* The tombstones' ends too, once those are swept (the first deletions
     * find no lease for tombstones: theirs carry an end of 1 s), or at
     * once for those on a lease. */
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadlines", none, v, sizeof v));
    etcd_cluster_await_count(&c, "statestore/k/later-", 0, 10000);
    ASSERT_REPLY(request(&o, ro, "g", NULL, NULL, W("GET", "forever")), "$1\r\nv\r\n");
    /* The read again, every etcd_sweep_full_ms. */
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadline_reads", two_or_more, v, sizeof v));
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/x/"), 0);
    printf("  %d keys written by a broker that stopped: known to the next from its read at start, "
           "swept and notified by it %llu ms after the first was set (PX %d); %d written while it ran, "
           "known from its watch, %llu ms (PX %d)\n",
           N, (unsigned long long)took, PX, M, (unsigned long long)took2, PX2);
    client_close(&o);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* etcd counts every key of a Range's interval, past its limit: read in
 * pages of 42 up to the last record, the read at start of 20,000 records
 * would make it count n^2 / 84, about 4.8 million. Each page after the
 * first is bounded by a span learnt from the page before, so every record
 * is counted a few times: once by the first page, which reads to the end,
 * and a few more where decimal keys, spread unevenly over the bytes, make
 * a page's interval hold far more or far fewer than a page (5.4 times in
 * all here). Dense keys, then a wide gap, then sparse keys: each deadline
 * is learnt all the same. */
TEST(cluster_deadline_read_counts_each_record_a_few_times)
{
    enum { DENSE = 16000, SPARSE = 4000, N = DENSE + SPARSE, EVERY = 50 };
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct broker a;
    broker_on_etcd(&a, "writer", c.endpoints, "plugin_opt_node_id writer\n");
    struct client w;
    char rw[64];
    client_connect_rr(&w, a.port, "writer", rw, sizeof rw);
    for (int i = 0; i < N; i++) {
        char key[32];
        if (i < DENSE)
            snprintf(key, sizeof key, "d/%05d", i);
        else
            snprintf(key, sizeof key, "z/%05d", (i - DENSE) * 7);
        if (i % EVERY == 0)
            request_send(&w, rw, "s", NULL, NULL, W("SET", key, "v", "PX", "600000"));
        else
            request_send(&w, rw, "s", NULL, NULL, W("SET", key, "v"));
        if (i % 200 == 199)
            await_answers(&w, 200, "+OK\r\n");
    }
    client_close(&w);
    broker_stop(&a);

    struct broker b;
    broker_on_etcd(&b, "reader", c.endpoints, "sys_interval 1\nplugin_opt_node_id reader\n");
    char v[32], ranges[32], counted[32];
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadline_reads", one_or_more, v, sizeof v));
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadline_ranges", any, ranges, sizeof ranges));
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadline_keys_counted", any, counted, sizeof counted));
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadlines", any, v, sizeof v));
    ASSERT_EQ(atoi(v), N / EVERY); /* every deadline learnt */
    uint64_t nr = strtoull(ranges, NULL, 10), nc = strtoull(counted, NULL, 10);
    printf("  %d records read for their deadlines in %llu Ranges; etcd counted %llu keys (%.1f each); "
           "%d deadlines known\n", N, (unsigned long long)nr, (unsigned long long)nc, (double)nc / N, N / EVERY);
    ASSERT_TRUE(nr >= N / 42);
    ASSERT_TRUE(nc >= (uint64_t)N);
    ASSERT_TRUE(nc <= 8 * (uint64_t)N);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}
