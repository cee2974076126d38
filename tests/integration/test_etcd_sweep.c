/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_sweep.c - the sweep's looks for due keys on etcd read the
 * expiry index from shortly before the last look, not from its start
 * (where the entries deleted since etcd's last compaction pile up, and
 * etcd visits each of them in every Range over them); the whole index
 * is read every etcd_sweep_full_ms, for deadlines written behind. */
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

static bool any(const char *v)
{
    return v[0] != '\0';
}

/* Whether etcd holds key. */
static bool etcd_has(const struct etcd_cluster *c, const char *key)
{
    char out[1024];
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "get", key, "--keys-only", NULL), 0);
    return strstr(out, key) != NULL;
}

TEST(cluster_sweep_reads_the_whole_expiry_index_only_every_sweep_full_ms)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct broker b;
    broker_on_etcd(&b, "sweeper", c.endpoints, "sys_interval 1\nplugin_opt_etcd_sweep_full_ms 5000\n");
    char v[32];
    /* The first look read the whole index; later ones do not. */
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/sweep_looks", two_or_more, v, sizeof v));
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/sweep_full_looks", any, v, sizeof v));
    ASSERT_STR(v, strlen(v), "1");
    uint64_t t0 = now_ms();

    /* An index entry far behind every look (deadline 1000 ms after the
     * epoch, its key never written: an orphan, deleted when found). */
    const char *orphan = "statestore/x/00000000000003e8/orphan";
    char out[1024];
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "put", orphan, "", NULL), 0);
    /* A key that expires now: found by the looks as they are. */
    struct client w, o;
    char rw[64], ro[64];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&o, b.port, "observer", ro, sizeof ro);
    ASSERT_REPLY(request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", "soon")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", "soon", "v", "PX", "300")), "+OK\r\n");
    ASSERT_TRUE(client_wait(&o, 1000) != NULL); /* its SET */
    struct msg *m = client_wait(&o, 2000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    /* The orphan is still there: the looks since did not read that far
     * back (a look every 250 ms). */
    usleep(1000000);
    ASSERT_TRUE(now_ms() - t0 < 4000); /* before the next look of the whole index */
    ASSERT_TRUE(etcd_has(&c, orphan));
    /* The next look of the whole index finds it. */
    bool gone = false;
    while (!gone && now_ms() - t0 < 12000) {
        usleep(200000);
        gone = !etcd_has(&c, orphan);
    }
    ASSERT_TRUE(gone);
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/sweep_full_looks", two_or_more, v, sizeof v));
    printf("  an index entry behind the looks stayed until the next look of the whole index, %llu ms later\n",
           (unsigned long long)(now_ms() - t0));
    client_close(&w);
    client_close(&o);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}
