/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_partition_client.c - a client on a host of its own (netns.h) cut
 * off from its broker, with a session the broker keeps: what it resends
 * after reconnecting is answered once, with its first answer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"
#include "nemesis.h"
#include "netns.h"

enum { ETCD = 0, BROKER = 1, CLIENT = 2 }; /* the hosts */

static bool any(const char *v)
{
    return v[0] != '\0';
}

/* One round: what comes back from the broker to the client is dropped
 * while it sends SET k<r> v NX and DEL gone<r> (set just before); then
 * it reconnects to its session. Fresh correlation data each round, as
 * the SDKs make. */
static void lost_answers_round(struct netns_net *net, struct broker *b, struct client *c, const char *resp,
                               struct client *other, const char *ro, int r)
{
    char k[16], gone[16], c1[16], c2[16];
    snprintf(k, sizeof k, "k%d", r);
    snprintf(gone, sizeof gone, "gone%d", r);
    snprintf(c1, sizeof c1, "1-%d", r);
    snprintf(c2, sizeof c2, "2-%d", r);
    netns_enter(net, CLIENT);
    char c0[16];
    snprintf(c0, sizeof c0, "0-%d", r);
    ASSERT_REPLY(request(c, resp, c0, NULL, NULL, W("SET", gone, "x")), "+OK\r\n");
    char rules[256];
    snprintf(rules, sizeof rules,
             "table inet nemesis {\n  chain in { type filter hook input priority 0; ip saddr %s drop; }\n}\n",
             net->addr[BROKER]);
    netns_filter(net, CLIENT, rules);
    request_send(c, resp, c1, NULL, NULL, W("SET", k, "v", "NX"));
    request_send(c, resp, c2, NULL, NULL, W("DEL", gone));
    ASSERT_TRUE(client_wait(c, 1500) == NULL); /* nothing gets through */
    /* Both ran meanwhile: another client sees their effects. */
    netns_enter(net, BROKER);
    ASSERT_REPLY(request(other, ro, "a", NULL, NULL, W("GET", k)), "$1\r\nv\r\n");
    ASSERT_REPLY(request(other, ro, "b", NULL, NULL, W("GET", gone)), "$-1\r\n");

    /* Healed; the client makes a new connection to its session. */
    netns_filter(net, CLIENT, NULL);
    netns_enter(net, CLIENT);
    c->connected = false;
    ASSERT_EQ(mosquitto_reconnect(c->m), MOSQ_ERR_SUCCESS);
    client_wait_connected(c);
    /* Every answer that comes is the first one; each request is answered
     * (an answer may come twice: the one the session kept, and the one
     * the resend cache gives the resent request). */
    bool got1 = false, got2 = false;
    uint64_t t0 = now_ms();
    while (now_ms() - t0 < ((got1 && got2) ? 1500u : 10000u)) {
        struct msg *m = client_wait(c, 300);
        if (m == NULL)
            continue;
        if (m->corr_len == (int)strlen(c1) && memcmp(m->corr, c1, strlen(c1)) == 0) {
            ASSERT_MEM(m->payload, (size_t)m->len, "+OK\r\n", 5);
            got1 = true;
        } else {
            ASSERT_MEM(m->corr, (size_t)m->corr_len, c2, strlen(c2));
            ASSERT_MEM(m->payload, (size_t)m->len, ":1\r\n", 4);
            got2 = true;
        }
    }
    ASSERT_TRUE(got1 && got2);
    /* The client did send both again, and the resend cache answered. */
    char v[32];
    netns_enter(net, BROKER);
    unsigned long long resends = 0;
    for (uint64_t t1 = now_ms(); resends < 2u * (unsigned)(r + 1); usleep(200000)) {
        ASSERT_TRUE(now_ms() - t1 < 10000);
        ASSERT_TRUE(sys_figure_until(b->port, "resends", any, v, sizeof v));
        resends = strtoull(v, NULL, 10);
    }
    /* One effect each. */
    ASSERT_REPLY(request(other, ro, "c", NULL, NULL, W("GET", k)), "$1\r\nv\r\n");
    printf("  round %d: both requests resent and answered once each, their first answers\n", r + 1);
}

/* A client on a host of its own with a session the broker keeps: its
 * requests' answers are lost on the way back (and so are the PUBACKs of
 * its requests), then it reconnects. The broker sends the answers it
 * kept, the client sends its requests again (QoS 1, DUP), and each
 * request has one effect and one answer, its first: a SET NX resent is
 * not run again (it would answer $-1), a DEL resent answers :1 again. */
TEST(partition_client_answers_lost_then_resent_on_reconnection)
{
    if (!netns_available())
        test_fail(__FILE__, __LINE__, "this test makes network namespaces: run it as root, with iproute2 and nftables");
    struct netns_net net;
    netns_up(&net, 3);
    struct etcd_cluster ec;
    const int members[1] = {ETCD};
    etcd_cluster_start_on(&ec, 1, &net, members);
    netns_enter(&net, BROKER);
    struct broker b;
    char more[256];
    int port = 1883; /* the broker's host is its own: any port is free there */
    snprintf(more, sizeof more, "sys_interval 1\nlistener %d %s\n", port, net.addr[BROKER]);
    broker_on_etcd(&b, "b", ec.endpoints, more);
    /* The client on its host, with a session kept for 60 s. */
    netns_enter(&net, CLIENT);
    struct client c;
    struct client_options o = {.host = net.addr[BROKER], .port = port, .id = "far", .session_expiry_s = 60};
    client_connect_with(&c, &o);
    const char *resp = "clients/far/resp";
    client_subscribe(&c, resp);

    struct client other;
    char ro[64];
    netns_enter(&net, BROKER);
    client_connect_rr(&other, b.port, "other", ro, sizeof ro);
    for (int r = 0; r < nemesis_rounds(); r++)
        lost_answers_round(&net, &b, &c, resp, &other, ro, r);
    client_close(&other);
    client_close(&c);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
    netns_down(&net);
}

/* How often the client was told its connection went down. */
struct downs {
    pthread_mutex_t mu;
    int n;
};

static void count_down(void *ud, bool connected, bool gap)
{
    (void)gap;
    struct downs *d = ud;
    pthread_mutex_lock(&d->mu);
    if (!connected)
        d->n++;
    pthread_mutex_unlock(&d->mu);
}

/* A client whose broker's host went silent (everything from it dropped:
 * its reconnection's connect never gets an answer) is closed promptly.
 * Its network thread made that connect blocking, and the close waited
 * for the system's connect timeout: about two minutes. */
TEST(partition_client_closed_while_reconnecting_to_a_silent_host)
{
    if (!netns_available())
        test_fail(__FILE__, __LINE__, "this test makes network namespaces: run it as root, with iproute2 and nftables");
    struct netns_net net;
    netns_up(&net, 3); /* no etcd: its host stays idle */
    netns_enter(&net, BROKER);
    struct broker b = {.no_plugin = true};
    snprintf(b.extra, sizeof b.extra, "listener 1883 %s\n", net.addr[BROKER]);
    broker_start(&b);
    netns_enter(&net, CLIENT); /* the client's threads start here, and stay */
    ss_client_options o = {.host = net.addr[BROKER], .port = 1883, .client_id = "far", .timeout_ms = 2000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    ss_client_set_reconnect_backoff(c, 50, 200);
    struct downs d = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client_set_connection_cb(c, count_down, &d);
    netns_enter(&net, BROKER);
    broker_stop(&b); /* the client sees its connection end */
    char rules[256];
    snprintf(rules, sizeof rules,
             "table inet silent {\n  chain in { type filter hook input priority 0; ip saddr %s drop; }\n}\n",
             net.addr[BROKER]);
    netns_filter(&net, CLIENT, rules);
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&d.mu);
        int n = d.n;
        pthread_mutex_unlock(&d.mu);
        if (n)
            break;
        usleep(10000);
    }
    pthread_mutex_lock(&d.mu);
    ASSERT_TRUE(d.n >= 1);
    pthread_mutex_unlock(&d.mu);
    usleep(1500 * 1000); /* attempts every 200 ms at most: one waits for an answer now */
    uint64_t t0 = now_ms();
    ss_client_close(c);
    uint64_t took = now_ms() - t0;
    fprintf(stderr, "  closed %llu ms after it was asked to, during a reconnection\n", (unsigned long long)took);
    ASSERT_TRUE(took < 5000);
    netns_down(&net);
}
