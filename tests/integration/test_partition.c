/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_partition.c - network partitions made by the kernel (netns.h):
 * every etcd member and every broker a host of its own on a bridge, and
 * a host's link cut while its MQTT clients, on its loopback, stay
 * connected. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"
#include "netns.h"

enum { HOST_A = 3, HOST_B = 4 }; /* hosts 0-2: the etcd members */

/* A broker on host h, on the cluster, and a client of it there. */
static void broker_on_host(struct netns_net *net, int h, struct broker *b, const char *name,
                           const struct etcd_cluster *ec, struct client *c, char *resp)
{
    netns_enter(net, h);
    char more[200];
    snprintf(more, sizeof more,
             "plugin_opt_node_id %s\nplugin_opt_etcd_timeout_ms 500\nplugin_opt_etcd_unavailable_ms 1500\n", name);
    broker_on_etcd(b, name, ec->endpoints, more);
    char id[32];
    snprintf(id, sizeof id, "client-%s", name);
    client_connect_rr(c, b->port, id, resp, 64);
    netns_enter(net, NETNS_HUB);
}

/* The answer's payload as a string (for the messages of a failure). */
static const char *answer_text(const struct msg *m, char *buf, size_t n)
{
    snprintf(buf, n, "%.*s", m ? m->len : 4, m ? (const char *)m->payload : "none");
    return buf;
}

/* Broker A cut off from every etcd member while its clients stay
 * connected: its clients get "unavailable", never a stale value (broker
 * B changed the key meanwhile) nor a write said to be done; after the
 * heal A serves again by itself, with B's value, and what A refused was
 * not done. */
TEST(partition_broker_cut_off_from_etcd)
{
    if (!netns_available())
        test_fail(__FILE__, __LINE__, "this test makes network namespaces: run it as root, with iproute2");
    struct netns_net net;
    netns_up(&net, 5);
    struct etcd_cluster ec;
    const int members[3] = {0, 1, 2};
    etcd_cluster_start_on(&ec, 3, &net, members);
    struct broker a, b;
    struct client ca, cb;
    char ra[64], rb[64], text[256];
    broker_on_host(&net, HOST_A, &a, "a", &ec, &ca, ra);
    broker_on_host(&net, HOST_B, &b, "b", &ec, &cb, rb);

    ASSERT_REPLY(request(&ca, ra, "1", NULL, NULL, W("SET", "k", "v1")), "+OK\r\n");
    ASSERT_REPLY(request(&ca, ra, "2", NULL, NULL, W("GET", "k")), "$2\r\nv1\r\n");
    ASSERT_REPLY(request(&cb, rb, "3", NULL, NULL, W("GET", "k")), "$2\r\nv1\r\n");

    /* A's link down: B goes on, and changes k. */
    netns_link(&net, HOST_A, false);
    ASSERT_REPLY(request(&cb, rb, "4", NULL, NULL, W("SET", "k", "v2")), "+OK\r\n");
    /* A: every answer an error, within its bound; none the old value. */
    const char *unavailable = "-ERR the store is unavailable\r\n";
    uint64_t t0 = now_ms();
    struct msg *m = request(&ca, ra, "5", NULL, NULL, W("GET", "k"));
    ASSERT_TRUE(m != NULL);
    if (m->len != (int)strlen(unavailable) || memcmp(m->payload, unavailable, (size_t)m->len) != 0)
        fprintf(stderr, "  GET on the cut broker answered %s\n", answer_text(m, text, sizeof text));
    ASSERT_MEM(m->payload, (size_t)m->len, unavailable, strlen(unavailable));
    ASSERT_TRUE(now_ms() - t0 < 5000);
    ASSERT_REPLY(request(&ca, ra, "6", NULL, NULL, W("SET", "x", "1", "NX")), "-ERR the store is unavailable\r\n");
    ASSERT_REPLY(request(&ca, ra, "7", NULL, NULL, W("DEL", "k")), "-ERR the store is unavailable\r\n");

    /* Healed: A answers again by itself, with B's value; what it refused
     * was not done. */
    netns_link(&net, HOST_A, true);
    bool served = false;
    for (int i = 0; i < 100 && !served; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "h%d", i);
        m = request(&ca, ra, corr, NULL, NULL, W("GET", "k"));
        ASSERT_TRUE(m != NULL);
        served = m->len > 0 && m->payload[0] == '$';
        if (!served) {
            ASSERT_MEM(m->payload, (size_t)m->len, unavailable, strlen(unavailable));
            usleep(100000);
        }
    }
    ASSERT_TRUE(served);
    ASSERT_MEM(m->payload, (size_t)m->len, "$2\r\nv2\r\n", 8);
    ASSERT_REPLY(request(&ca, ra, "8", NULL, NULL, W("GET", "x")), "$-1\r\n");
    ASSERT_REPLY(request(&cb, rb, "9", NULL, NULL, W("GET", "x")), "$-1\r\n");
    ASSERT_REPLY(request(&ca, ra, "10", NULL, NULL, W("SET", "k", "v3")), "+OK\r\n");
    ASSERT_REPLY(request(&cb, rb, "11", NULL, NULL, W("GET", "k")), "$2\r\nv3\r\n");

    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_assert_same_history(&ec);
    etcd_cluster_stop(&ec);
    netns_down(&net);
}
