/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_sweep.c - expiry on etcd without an expiry index: a broker
 * knows the deadlines of the records written before it started from its
 * read of every record at start (its watch tells it the later ones), and
 * sweeps them; the read is done again every etcd_sweep_full_ms. */
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

static bool twenty(const char *v)
{
    return strcmp(v, "20") == 0;
}

static bool none(const char *v)
{
    return strcmp(v, "0") == 0;
}

TEST(cluster_broker_started_later_sweeps_deadlines_written_before)
{
    enum { N = 20, PX = 4000 };
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    /* A writes keys with a deadline and one without, and stops before
     * the deadline: none of them is swept by it. */
    struct broker a;
    broker_on_etcd(&a, "writer", c.endpoints, "");
    struct client w;
    char rw[64], key[N][24];
    client_connect_rr(&w, a.port, "writer", rw, sizeof rw);
    uint64_t t0 = now_ms();
    for (int i = 0; i < N; i++) {
        snprintf(key[i], sizeof key[i], "later-%02d", i);
        ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", key[i], "v", "PX", "4000")), "+OK\r\n");
    }
    ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", "forever", "v")), "+OK\r\n");
    client_close(&w);
    broker_stop(&a);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/x/"), 0); /* no index */

    /* B starts after: its watch begins later than every one of those
     * writes, so it knows the deadlines from its read at start alone. */
    struct broker b;
    broker_on_etcd(&b, "sweeper", c.endpoints,
                   "sys_interval 1\nplugin_opt_etcd_sweep_full_ms 2000\nplugin_opt_etcd_tombstone_ms 1000\n");
    char v[32];
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadline_reads", one_or_more, v, sizeof v));
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadlines", twenty, v, sizeof v));
    ASSERT_TRUE(now_ms() - t0 < PX); /* known before the deadline */
    struct client o;
    char ro[64];
    client_connect_rr(&o, b.port, "observer", ro, sizeof ro);
    for (int i = 0; i < N; i++)
        ASSERT_REPLY(request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", key[i])), "+OK\r\n");
    ASSERT_REPLY(request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", "forever")), "+OK\r\n");
    ASSERT_TRUE(now_ms() - t0 < PX); /* registered before the deadline */
    /* Each is swept by B, and notified once as a deletion. */
    for (int i = 0; i < N; i++) {
        struct msg *m = client_wait(&o, PX + 5000);
        ASSERT_TRUE(m != NULL);
        PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
        ASSERT_TRUE(now_ms() - t0 >= PX);
    }
    uint64_t took = now_ms() - t0;
    ASSERT_EQ(client_drain(&o, 500), 0); /* once each, and nothing of "forever" */
    /* Their tombstones' ends too, once those are swept (the first
     * deletions find no lease for tombstones: theirs carry an end of
     * 1 s), or at once for those on a lease. */
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadlines", none, v, sizeof v));
    etcd_cluster_await_count(&c, "statestore/k/later-", 0, 10000);
    ASSERT_REPLY(request(&o, ro, "g", NULL, NULL, W("GET", "forever")), "$1\r\nv\r\n");
    /* The read again, every etcd_sweep_full_ms. */
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadline_reads", two_or_more, v, sizeof v));
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/x/"), 0);
    printf("  %d keys written by a broker that stopped: known to the next from its read at start, "
           "swept and notified by it %llu ms after they were set (PX %d)\n",
           N, (unsigned long long)took, PX);
    client_close(&o);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}
