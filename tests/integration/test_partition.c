/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_partition.c - network partitions made by the kernel (netns.h):
 * every etcd member and every broker a host of its own on a bridge, and
 * a host's link cut while its MQTT clients, on its loopback, stay
 * connected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "nemesis.h"

/* The answer's payload as a string (for the messages of a failure). */
static const char *answer_text(const struct msg *m, char *buf, size_t n)
{
    snprintf(buf, n, "%.*s", m ? m->len : 4, m ? (const char *)m->payload : "none");
    return buf;
}

/* A bulk string answer "$<len>\r\n<s>\r\n" into buf. */
static const char *bulk(char *buf, size_t n, const char *s)
{
    snprintf(buf, n, "$%zu\r\n%s\r\n", strlen(s), s);
    return buf;
}

/* One round of the cut: A's link down while B changes k (to b<r>); A
 * answers only "unavailable", within its bound; healed, A serves again
 * by itself, with B's value, and the SET NX of x<r> it refused was not
 * done. */
static void cut_off_round(struct netns_net *net, struct client *ca, const char *ra, struct client *cb, const char *rb,
                          int r)
{
    char vb[16], va[16], x[16], want[64], text[256];
    snprintf(vb, sizeof vb, "b%d", r);
    snprintf(va, sizeof va, "a%d", r);
    snprintf(x, sizeof x, "x%d", r);
    netns_link(net, HOST_A, false);
    ASSERT_REPLY(request(cb, rb, "4", NULL, NULL, W("SET", "k", vb)), "+OK\r\n");
    const char *unavailable = "-ERR the store is unavailable\r\n";
    uint64_t t0 = now_ms();
    struct msg *m = request(ca, ra, "5", NULL, NULL, W("GET", "k"));
    ASSERT_TRUE(m != NULL);
    if (m->len != (int)strlen(unavailable) || memcmp(m->payload, unavailable, (size_t)m->len) != 0)
        fprintf(stderr, "  GET on the cut broker answered %s\n", answer_text(m, text, sizeof text));
    ASSERT_MEM(m->payload, (size_t)m->len, unavailable, strlen(unavailable));
    uint64_t took = now_ms() - t0;
    ASSERT_TRUE(took < 5000);
    ASSERT_REPLY(request(ca, ra, "6", NULL, NULL, W("SET", x, "1", "NX")), "-ERR the store is unavailable\r\n");
    ASSERT_REPLY(request(ca, ra, "7", NULL, NULL, W("DEL", "k")), "-ERR the store is unavailable\r\n");

    netns_link(net, HOST_A, true);
    uint64_t healed = now_ms();
    bool served = false;
    for (int i = 0; i < 100 && !served; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "h%d", i);
        m = request(ca, ra, corr, NULL, NULL, W("GET", "k"));
        ASSERT_TRUE(m != NULL);
        served = m->len > 0 && m->payload[0] == '$';
        if (!served) {
            ASSERT_MEM(m->payload, (size_t)m->len, unavailable, strlen(unavailable));
            usleep(100000);
        }
    }
    ASSERT_TRUE(served);
    bulk(want, sizeof want, vb);
    ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
    uint64_t back = now_ms() - healed;
    ASSERT_REPLY(request(ca, ra, "8", NULL, NULL, W("GET", x)), "$-1\r\n");
    ASSERT_REPLY(request(cb, rb, "9", NULL, NULL, W("GET", x)), "$-1\r\n");
    ASSERT_REPLY(request(ca, ra, "10", NULL, NULL, W("SET", "k", va)), "+OK\r\n");
    m = request(cb, rb, "11", NULL, NULL, W("GET", "k"));
    ASSERT_TRUE(m != NULL);
    bulk(want, sizeof want, va);
    ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
    printf("  round %d: the cut broker answered \"unavailable\" after %llu ms; served again %llu ms after the "
           "heal\n", r + 1, (unsigned long long)took, (unsigned long long)back);
}

/* Brokers A and B, each on a host of its own (calls timing out after
 * 500 ms), on a 3-member cluster on three more hosts; a client of each
 * on its broker's host. */
struct two_brokers {
    struct netns_net net;
    struct etcd_cluster ec;
    struct broker a, b;
    struct client ca, cb;
    char ra[64], rb[64];
};

static void two_brokers_up(struct two_brokers *t)
{
    if (!netns_available())
        test_fail(__FILE__, __LINE__, "this test makes network namespaces: run it as root, with iproute2 and nftables");
    netns_up(&t->net, 5);
    const int members[3] = {0, 1, 2};
    etcd_cluster_start_on(&t->ec, 3, &t->net, members);
    nemesis_broker_on_host(&t->net, HOST_A, &t->a, "a", t->ec.endpoints, 500, &t->ca, t->ra);
    nemesis_broker_on_host(&t->net, HOST_B, &t->b, "b", t->ec.endpoints, 500, &t->cb, t->rb);
}

/* Everything stopped, once the members are found to hold one history. */
static void two_brokers_down(struct two_brokers *t)
{
    client_close(&t->ca);
    client_close(&t->cb);
    broker_stop(&t->a);
    broker_stop(&t->b);
    etcd_cluster_assert_same_history(&t->ec);
    etcd_cluster_stop(&t->ec);
    netns_down(&t->net);
}

/* Broker A cut off from every etcd member while its clients stay
 * connected: its clients get "unavailable", never a stale value (broker
 * B changed the key meanwhile) nor a write said to be done; after the
 * heal A serves again by itself, with B's value, and what A refused was
 * not done. */
TEST(partition_broker_cut_off_from_etcd)
{
    struct two_brokers t;
    two_brokers_up(&t);
    ASSERT_REPLY(request(&t.ca, t.ra, "1", NULL, NULL, W("SET", "k", "v1")), "+OK\r\n");
    ASSERT_REPLY(request(&t.ca, t.ra, "2", NULL, NULL, W("GET", "k")), "$2\r\nv1\r\n");
    ASSERT_REPLY(request(&t.cb, t.rb, "3", NULL, NULL, W("GET", "k")), "$2\r\nv1\r\n");

    for (int r = 0; r < nemesis_rounds(); r++)
        cut_off_round(&t.net, &t.ca, t.ra, &t.cb, t.rb, r);
    two_brokers_down(&t);
}

/* The leader's link cut, until the others have elected another (15 s
 * at most: each look waits 2 s for the member cut off, and an old leader
 * that came back with a higher term, as etcd 3.4 without pre-vote lets
 * it, may have just forced an election); then back. */
static void leader_isolated(struct nemesis_fixture *f, bool on)
{
    if (!on) {
        netns_link(&f->net, f->ec.host[f->isolated], true);
        return;
    }
    f->isolated = etcd_cluster_leader(&f->ec);
    ASSERT_TRUE(f->isolated >= 0);
    netns_link(&f->net, f->ec.host[f->isolated], false);
    int now = -1;
    for (uint64_t t0 = now_ms(); now_ms() - t0 < 15000 && (now < 0 || now == f->isolated);)
        now = etcd_cluster_leader(&f->ec);
    if (now < 0 || now == f->isolated) {
        char out[2048];
        etcd_cluster_ctl(&f->ec, out, sizeof out, "endpoint", "status", "-w", "table", NULL);
        fprintf(stderr, "  no other leader 15 s after member %d was cut off:\n%s", f->isolated, out);
    }
    ASSERT_TRUE(now >= 0 && now != f->isolated);
}

/* The etcd leader cut off from the other members (and the brokers): the
 * majority elects another, the brokers go on through it, no acknowledged
 * write is lost, and the members agree after the heal. */
TEST(partition_etcd_leader_isolated)
{
    nemesis_test("leader isolated", leader_isolated, 3000, 0);
}

/* Rules for broker A's host: it hears nothing from the etcd members
 * (hosts 0-2), or they hear nothing from it. */
#define A_HEARS_NOTHING                                                                                            \
    "table inet nemesis {\n"                                                                                        \
    "  chain in { type filter hook input priority 0; ip saddr 10.200.0.2-10.200.0.4 drop; }\n"                      \
    "}\n"
#define ETCD_HEARS_NOTHING_FROM_A                                                                                  \
    "table inet nemesis {\n"                                                                                        \
    "  chain out { type filter hook output priority 0; ip daddr 10.200.0.2-10.200.0.4 drop; }\n"                    \
    "}\n"

/* Broker A hears nothing from the etcd members while they hear it (its
 * Txns may commit unseen: outcomes unknown until the heal). */
static void one_way_to_a(struct nemesis_fixture *f, bool on)
{
    netns_filter(&f->net, HOST_A, on ? A_HEARS_NOTHING : NULL);
}

/* One-way loss: A's requests meanwhile are answered "unavailable" or
 * held until their outcome is known, never acknowledged untrue; B goes
 * on; after the heal both serve, and every acknowledged write is there. */
TEST(partition_one_way_loss)
{
    nemesis_test("A hears nothing from etcd", one_way_to_a, 3000, 0);
}

/* 10% of packets dropped at random, both ways, on every host. */
static void random_loss(struct nemesis_fixture *f, bool on)
{
    for (int h = 0; h <= HOST_B; h++)
        netns_filter(&f->net, h,
                     on ? "table inet nemesis {\n"
                          "  chain in { type filter hook input priority 0; iifname \"eth0\" numgen random mod 10 < 1 drop; }\n"
                          "  chain out { type filter hook output priority 0; oifname \"eth0\" numgen random mod 10 < 1 drop; }\n"
                          "}\n"
                        : NULL);
}

/* Random loss everywhere: slower, never wrong. */
TEST(partition_random_loss_everywhere)
{
    nemesis_test("10% loss on every link", random_loss, 4000, 0);
}

/* 200 +- 100 ms each way on every link, between the brokers and etcd
 * and between the members (through the proxies), and 10% of packets
 * lost on every host. */
static void slow_and_lossy(struct nemesis_fixture *f, bool on)
{
    for (int i = 0; i < 3; i++) {
        delay_proxy_set(f->proxy[i], on ? 200 : 0, on ? 100 : 0);
        delay_proxy_set(f->peer_proxy[i], on ? 200 : 0, on ? 100 : 0);
    }
    random_loss(f, on);
}

/* Slow, jittery and lossy links: slower, never wrong; every acknowledged
 * write there. */
TEST(partition_delay_and_loss)
{
    nemesis_test("200 +- 100 ms and 10% loss", slow_and_lossy, 5000, NEMESIS_PROXIES);
}

/* A bridge: members 0 and 2 cannot reach each other; member 1 and the
 * brokers reach everyone. */
static void bridge(struct nemesis_fixture *f, bool on)
{
    for (int k = 0; k < 2; k++) {
        int h = f->ec.host[k ? 2 : 0], other = f->ec.host[k ? 0 : 2];
        char rules[320];
        snprintf(rules, sizeof rules,
                 "table inet nemesis {\n"
                 "  chain in { type filter hook input priority 0; ip saddr %s drop; }\n"
                 "  chain out { type filter hook output priority 0; ip daddr %s drop; }\n"
                 "}\n",
                 f->net.addr[other], f->net.addr[other]);
        netns_filter(&f->net, h, on ? rules : NULL);
    }
}

/* A bridge partition (one member sees both halves; leaders may come and
 * go): never wrong, nothing acknowledged lost. */
TEST(partition_bridge)
{
    nemesis_test("bridge: members 0 and 2 apart, 1 sees both", bridge, 4000, 0);
}

/* Broker A's commit of a SET loses its answer, and broker B writes the
 * key twice before A can settle it: what A learns of its own write holds
 * all the same, and B's writes are not taken for A's. With applied, A
 * hears nothing from etcd (its SET applies unseen, before B's writes);
 * else etcd hears nothing from A (its SET never arrives, and runs again
 * after the heal, after B's). */
static void lost_then_overwritten(struct two_brokers *t, bool applied)
{
    struct client *ca = &t->ca, *cb = &t->cb;
    const char *ra = t->ra, *rb = t->rb;
    const char *key = applied ? "applied" : "not-applied";
    struct msg *m = request(ca, ra, "s0", NULL, NULL, W("SET", key, "v0"));
    PAYLOAD(m, "+OK\r\n");
    m = request(cb, rb, "g0", NULL, NULL, W("GET", key));
    PAYLOAD(m, "$2\r\nv0\r\n");
    netns_filter(&t->net, HOST_A, applied ? A_HEARS_NOTHING : ETCD_HEARS_NOTHING_FROM_A);
    request_send(ca, ra, "s1", NULL, NULL, W("SET", key, "a1"));
    usleep(300 * 1000);
    m = request(cb, rb, "b1", NULL, NULL, W("SET", key, "b1"));
    PAYLOAD(m, "+OK\r\n");
    m = request(cb, rb, "b2", NULL, NULL, W("SET", key, "b2"));
    PAYLOAD(m, "+OK\r\n");
    /* A's call times out (500 ms) and its settling waits for etcd. */
    usleep(700 * 1000);
    ASSERT_TRUE(client_wait(ca, 300) == NULL);
    netns_filter(&t->net, HOST_A, NULL);
    m = client_wait(ca, 15000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "+OK\r\n");
    /* Applied, it came before B's writes; else it ran again after them. */
    for (int i = 0; i < 2; i++) {
        m = i ? request(ca, ra, "g2", NULL, NULL, W("GET", key)) : request(cb, rb, "g1", NULL, NULL, W("GET", key));
        if (applied)
            PAYLOAD(m, "$2\r\nb2\r\n");
        else
            PAYLOAD(m, "$2\r\na1\r\n");
    }
    ASSERT_EQ(broker_log_count(&t->a, applied ? "the commit of unknown outcome happened"
                                          : "the commit of unknown outcome did not happen"),
              1);
}

/* A commit whose answer was lost is settled through the broker's commit
 * marker (etcd/backend_etcd_commit.c) while another broker writes the
 * commit's key: the SET is answered +OK once, and took effect once,
 * where it did. */
TEST(partition_lost_commit_settled_while_another_broker_writes_its_key)
{
    struct two_brokers t;
    two_brokers_up(&t);
    lost_then_overwritten(&t, true);
    lost_then_overwritten(&t, false);
    printf("  a SET whose answer was lost, then two writes of its key by another broker: found applied, and not, "
           "answered +OK once each, in its place among the other broker's writes\n");
    two_brokers_down(&t);
}
