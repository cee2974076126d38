/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_claim.c - one live broker per node id, also when a broker
 * stalls past its claim's lease and another takes the node id over: the
 * stalled one must write nothing when it resumes (every write Txn
 * compares the claim it made), while it still answers reads. And a clean
 * stop while calls to etcd are under way. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

static void claim_broker(struct broker *b, const struct etcd_cluster *c, const char *name)
{
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    snprintf(b->data, sizeof b->data, "%s/data-%s", test_tmpdir(), name);
    snprintf(b->extra, sizeof b->extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix claim/\n"
             "plugin_opt_node_id same\nplugin_opt_etcd_unavailable_ms 1500\n", c->endpoints);
    broker_start(b);
}

TEST(cluster_broker_that_lost_its_node_id_writes_nothing)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    claim_broker(&a, &c, "claim-a");
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    struct msg *m = request(&ca, ra, "1", NULL, NULL, W("SET", "k", "a1"));
    PAYLOAD(m, "+OK\r\n");
    client_drain(&ca, 100); /* our PUBACK reaches the broker */

    /* A stalls past its claim's lease (3 s); B, with the same node id,
     * takes it over and writes. */
    ASSERT_EQ(kill(a.pid, SIGSTOP), 0);
    usleep(3500000);
    claim_broker(&b, &c, "claim-b");
    ASSERT_TRUE(broker_log_has(&b, "node id same claimed"));
    client_connect_rr(&cb, b.port, "cb", rb, sizeof rb);
    m = request(&cb, rb, "2", NULL, NULL, W("SET", "k", "b1"));
    PAYLOAD(m, "+OK\r\n");

    /* A resumes: its writes are refused, never applied. */
    ASSERT_EQ(kill(a.pid, SIGCONT), 0);
    m = request(&ca, ra, "3", NULL, NULL, W("SET", "k", "a2"));
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "-ERR the store is unavailable\r\n");
    m = request(&ca, ra, "4", NULL, NULL, W("DEL", "k"));
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "-ERR the store is unavailable\r\n");
    m = request(&cb, rb, "5", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$2\r\nb1\r\n");
    /* It still reads, and says why it does not write. */
    m = request(&ca, ra, "6", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$2\r\nb1\r\n");
    ASSERT_TRUE(broker_log_has(&a, "the claim on node id same lapsed"));
    ASSERT_TRUE(broker_log_has(&a, "node id same is claimed by another live broker"));
    /* B goes on writing. */
    m = request(&cb, rb, "7", NULL, NULL, W("SET", "k", "b2"));
    PAYLOAD(m, "+OK\r\n");
    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

static bool nonzero(const char *v)
{
    return strcmp(v, "0") != 0;
}

/* A broker stopped while its calls to etcd are under way (etcd frozen: a
 * read of a key not in its cache, a write) exits cleanly: each call is
 * dropped with what waits on it. A fetch freed before its cache entry once
 * left the entry pointing at it, a write into freed memory at the stop
 * that AddressSanitizer reports (this test bites under the sanitizers). */
TEST(cluster_broker_stopped_with_calls_under_way_exits_cleanly)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct broker b;
    broker_on_etcd(&b, "stopped", c.endpoints, "sys_interval 1\nplugin_opt_etcd_timeout_ms 500\n");
    struct client o;
    char ro[64];
    client_connect_rr(&o, b.port, "o", ro, sizeof ro);
    struct msg *m = request(&o, ro, "1", NULL, NULL, W("SET", "written", "v"));
    PAYLOAD(m, "+OK\r\n");
    etcd_member_sigstop(&c, 0);
    request_send(&o, ro, "2", NULL, NULL, W("GET", "never-read"));
    request_send(&o, ro, "3", NULL, NULL, W("SET", "written", "w"));
    client_drain(&o, 300); /* both reach the broker, their calls go out */
    char fetches[32];
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/fetches", nonzero, fetches, sizeof fetches));
    client_close(&o);
    broker_stop(&b);
    ASSERT_EQ(kill(c.pid[0], SIGCONT), 0);
    etcd_cluster_stop(&c);
}
