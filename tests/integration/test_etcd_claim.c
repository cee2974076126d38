/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_claim.c - one live broker per node id, also when a broker
 * stalls past its claim's lease and another takes the node id over: the
 * stalled one must write nothing when it resumes (every write Txn
 * compares the claim it made), while it still answers reads. The claim
 * is kept through a member that stops answering while a quorum is
 * there. And a clean stop while calls to etcd are under way. */
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

static bool any(const char *v)
{
    return v[0] != '\0';
}

/* A broker writing one key after the other, a write in flight at a time. */
struct frozen_writer {
    struct broker b;
    struct client c;
    char resp[64];
    int sent, acked, refused;
    uint64_t sent_ms, worst_ms;
};

static void frozen_writer_send(struct frozen_writer *w)
{
    char key[32];
    snprintf(key, sizeof key, "w%d", w->sent++);
    request_send(&w->c, w->resp, key, NULL, NULL, W("SET", key, "v"));
    w->sent_ms = now_ms();
}

/* Its answer, if one came, counted; the next write goes out. */
static void frozen_writer_pump(struct frozen_writer *w)
{
    struct msg *m = client_wait(&w->c, 5);
    if (m == NULL)
        return;
    bool ok = m->len == 5 && memcmp(m->payload, "+OK\r\n", 5) == 0;
    if (!ok)
        printf("  %s: write %d answered %.*s", w->b.name, w->sent - 1, m->len, (const char *)m->payload);
    w->acked += ok;
    w->refused += !ok;
    uint64_t took = now_ms() - w->sent_ms;
    if (took > w->worst_ms)
        w->worst_ms = took;
    frozen_writer_send(w);
}

/* The member a broker talks to stops answering (SIGSTOP) while a quorum
 * is there: the claim on its node id must hold. Its renewal used to go
 * out with etcd_timeout_ms as its timeout, a third into the 3 s lease:
 * it failed 2 s later, the next try came 500 ms after that on the next
 * endpoint, and by then the leader had let the lease go. The claim
 * lapsed ("the claim on node id X lapsed (etcd was out of reach, ...)",
 * untrue) within 3 s, and with etcd_timeout_ms of 3 s or more at every
 * such failover. Three brokers pointed at a follower first: one idle (its
 * renewal alone on the connection), and two that
 * write throughout, one with the default etcd_timeout_ms and one with
 * 5 s. No claim lapses, and every write is answered within a bound. */
TEST(cluster_claim_kept_when_the_member_in_use_stops_answering)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    int leader = etcd_cluster_leader(&c);
    ASSERT_TRUE(leader >= 0);
    int frozen = (leader + 1) % 3;
    char url[3][128];
    for (int i = 0; i < 3; i++)
        etcd_member_url(&c, i, url[i], sizeof url[i]);
    char endpoints[400];
    snprintf(endpoints, sizeof endpoints, "%s,%s,%s", url[frozen], url[(frozen + 1) % 3], url[(frozen + 2) % 3]);
    struct frozen_writer w[2];
    memset(w, 0, sizeof w);
    broker_on_etcd(&w[0].b, "default", endpoints, "sys_interval 1\nplugin_opt_node_id kept-default\n");
    broker_on_etcd(&w[1].b, "slow", endpoints,
                   "sys_interval 1\nplugin_opt_node_id kept-slow\nplugin_opt_etcd_timeout_ms 5000\n");
    struct broker idle;
    broker_on_etcd(&idle, "idle", endpoints, "sys_interval 1\nplugin_opt_node_id kept-idle\n");
    char at[200];
    ASSERT_TRUE(sys_figure_until(idle.port, "etcd/endpoint", any, at, sizeof at));
    ASSERT_MEM(at, strlen(at), url[frozen], strlen(url[frozen]));
    for (int i = 0; i < 2; i++) {
        client_connect_rr(&w[i].c, w[i].b.port, i ? "ws" : "wd", w[i].resp, sizeof w[i].resp);
        ASSERT_REPLY(request(&w[i].c, w[i].resp, "0", NULL, NULL, W("SET", "first", "v")), "+OK\r\n");
        /* It talks to the follower, the first endpoint. */
        ASSERT_TRUE(sys_figure_until(w[i].b.port, "etcd/endpoint", any, at, sizeof at));
        ASSERT_MEM(at, strlen(at), url[frozen], strlen(url[frozen]));
    }
    /* Writing for a while first: past a renewal or two, at whatever
     * phase of the lease the member stops. */
    for (int i = 0; i < 2; i++)
        frozen_writer_send(&w[i]);
    for (uint64_t t0 = now_ms(); now_ms() - t0 < 1500;)
        for (int i = 0; i < 2; i++)
            frozen_writer_pump(&w[i]);
    etcd_member_sigstop(&c, frozen);
    int before[2] = {w[0].acked, w[1].acked};
    for (uint64_t t0 = now_ms(); now_ms() - t0 < 8000;)
        for (int i = 0; i < 2; i++)
            frozen_writer_pump(&w[i]);
    for (int i = 0; i < 2; i++) {
        uint64_t waiting = now_ms() - w[i].sent_ms; /* the write still in flight */
        if (waiting > w[i].worst_ms)
            w[i].worst_ms = waiting;
        printf("  %s: %d writes acknowledged in 8 s with member %d stopped (%d refused), the slowest "
               "answered in %llu ms; the claim lapsed %d times\n", w[i].b.name, w[i].acked - before[i], frozen,
               w[i].refused, (unsigned long long)w[i].worst_ms, broker_log_count(&w[i].b, "lapsed"));
    }
    printf("  idle: the claim lapsed %d times\n", broker_log_count(&idle, "lapsed"));
    ASSERT_EQ(broker_log_count(&idle, "lapsed"), 0);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(broker_log_count(&w[i].b, "lapsed"), 0);
        ASSERT_EQ(w[i].refused, 0);
        /* The write under way when the member stopped waits for the
         * connection to be given up (the renewal's timeout, a second at
         * most, due within a second), then for its outcome to be settled
         * on another member. */
        ASSERT_TRUE(w[i].worst_ms < 4000);
        ASSERT_TRUE(w[i].acked - before[i] >= 50);
    }
    ASSERT_EQ(kill(c.pid[frozen], SIGCONT), 0);
    for (int i = 0; i < 2; i++) {
        client_close(&w[i].c);
        broker_stop(&w[i].b);
    }
    broker_stop(&idle);
    etcd_cluster_stop(&c);
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
