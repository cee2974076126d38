/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_reads.c - reads that a commit confirms by the other
 * brokers' commit markers (backend_etcd_txn.c: solo) rather than by a
 * compare per key: a write another broker made, which this broker's watch
 * has not brought yet, must still be seen by a read that starts after it
 * was answered; and what a broker forgets when etcd's data goes back
 * (restored) under it, and how it notices, once. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "cluster_util.h"
#include "etcd_cluster.h"
#include "harness.h"

/* The clients of a test of reads on B: a writer on A, a writer and a
 * reader on B. */
struct readers {
    struct client ca, cw, cr;
    char ra[64], rw[64], rr[64];
};

/* Round i: B frozen (SIGSTOP) while A's SET of k to v<i> is answered and
 * while B is sent a SET of another key and a GET of k; thawed, B runs
 * both in one batch. The GET must answer v<i>. */
static void frozen_read_round(struct proxied_brokers *t, struct readers *r, int i)
{
    char v[16], corr[16], want[32];
    usleep(900 * 1000); /* past solo_ms since B last heard of A */
    snprintf(v, sizeof v, "v%d", i);
    snprintf(corr, sizeof corr, "%d", i);
    ASSERT_EQ(kill(t->b.pid, SIGSTOP), 0);
    ASSERT_REPLY(request(&r->ca, r->ra, corr, NULL, NULL, W("SET", "k", v)), "+OK\r\n");
    request_send(&r->cw, r->rw, corr, NULL, NULL, W("SET", "other", v));
    request_send(&r->cr, r->rr, corr, NULL, NULL, W("GET", "k"));
    usleep(50 * 1000);
    ASSERT_EQ(kill(t->b.pid, SIGCONT), 0);
    ASSERT_REPLY(client_wait(&r->cw, 10000), "+OK\r\n");
    snprintf(want, sizeof want, "$2\r\n%s\r\n", v);
    struct msg *m = client_wait(&r->cr, 10000);
    ASSERT_TRUE(m != NULL);
    ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
}

static void readers_connect(struct proxied_brokers *t, struct readers *r)
{
    client_connect_rr(&r->ca, t->a.port, "writer-a", r->ra, sizeof r->ra);
    client_connect_rr(&r->cw, t->b.port, "writer-b", r->rw, sizeof r->rw);
    client_connect_rr(&r->cr, t->b.port, "reader-b", r->rr, sizeof r->rr);
}

static void readers_close(struct readers *r)
{
    client_close(&r->ca);
    client_close(&r->cw);
    client_close(&r->cr);
}

/* Broker B reaches etcd through a link that holds everything 300 ms each
 * way, so its watch tells of A's writes 300 ms late. B is frozen
 * (SIGSTOP) while A's SET of k is answered and while a client sends B a
 * SET of another key and a GET of k; thawed, B runs both in one batch,
 * whose Txn would confirm the GET by the markers: k's cached value is
 * A's previous one, and the Txn must fail on A's marker and the GET run
 * again. Then the same while the GET waits behind a Txn of B's: the
 * watch's news comes before the batch goes. Every GET must answer A's
 * latest value. */
TEST(cluster_reads_confirmed_by_markers_see_another_brokers_write)
{
    struct proxied_brokers t;
    proxied_brokers_up(&t, "sys_interval 1\nplugin_opt_etcd_solo_ms 100\n");
    struct delay_proxy *px = t.px;
    struct readers rd;
    readers_connect(&t, &rd);
    struct client *ca = &rd.ca, *cw = &rd.cw, *cr = &rd.cr;
    const char *ra = rd.ra, *rw = rd.rw, *rr = rd.rr;
    ASSERT_REPLY(request(ca, ra, "0", NULL, NULL, W("SET", "k", "v0")), "+OK\r\n");
    ASSERT_REPLY(request(cr, rr, "0", NULL, NULL, W("GET", "k")), "$2\r\nv0\r\n"); /* cached on B */
    delay_proxy_set(px, 300, 0);

    enum { ROUNDS = 3 };
    long long solo0 = broker_figure(t.b.port, "etcd/txns_solo");
    long long conflicts0 = broker_figure(t.b.port, "etcd/conflicts");
    for (int i = 1; i <= ROUNDS; i++)
        frozen_read_round(&t, &rd, i);
    /* Then the watch tells B of A's SET while the GET waits in B's open
     * batch, behind a Txn of B's in flight: by the time that batch goes,
     * the markers show nothing new, and k must be compared by itself. */
    char v[16], corr[16], want[32];
    for (int i = ROUNDS + 1; i <= 2 * ROUNDS; i++) {
        usleep(900 * 1000);
        snprintf(v, sizeof v, "v%d", i);
        snprintf(corr, sizeof corr, "%d", i);
        request_send(cw, rw, corr, NULL, NULL, W("SET", "first", v)); /* in flight 600 ms */
        usleep(20 * 1000);
        ASSERT_REPLY(request(ca, ra, corr, NULL, NULL, W("SET", "k", v)), "+OK\r\n");
        request_send(cr, rr, corr, NULL, NULL, W("GET", "k"));
        request_send(cw, rw, corr, NULL, NULL, W("SET", "other", v));
        ASSERT_REPLY(client_wait(cw, 10000), "+OK\r\n");
        ASSERT_REPLY(client_wait(cw, 10000), "+OK\r\n");
        snprintf(want, sizeof want, "$2\r\n%s\r\n", v);
        struct msg *m = client_wait(cr, 10000);
        ASSERT_TRUE(m != NULL);
        ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
    }
    usleep(1300 * 1000); /* the next publication of the figures */
    long long solo = broker_figure(t.b.port, "etcd/txns_solo") - solo0;
    long long conflicts = broker_figure(t.b.port, "etcd/conflicts") - conflicts0;
    printf("  %d GETs through B right after A's SET of their key, B's watch 300 ms behind: each answered "
           "A's value; %lld of B's Txns confirmed their reads by the markers, %lld conflicts\n",
           2 * ROUNDS, solo, conflicts);
    /* The path under test was taken: Txns confirmed by the markers, and
     * one failed at least (A's marker had moved). */
    ASSERT_TRUE(solo >= 1);
    ASSERT_TRUE(conflicts >= 1);
    readers_close(&rd);
    proxied_brokers_down(&t);
}

/* etcd's limit on one Txn (--max-txn-ops) at its edge for Txns that
 * confirm their reads by the markers, with a quota set (so that the
 * counter is compared too): beside the compares of the keys it writes,
 * such a Txn carries eight (the marker's, the claim's, the counter's,
 * three intervals of markers and the sentinel's two), so at 11 a batch
 * of three SETs and a GET fills it exactly. Every request is answered,
 * none refused by etcd, and the Txns took that path. */
TEST(cluster_reads_confirmed_by_markers_at_the_edge_of_the_txn_limit)
{
    struct etcd_cluster ec;
    etcd_cluster_start_with(&ec, 1, "--max-txn-ops=11");
    struct broker b;
    broker_on_etcd(&b, "b", ec.endpoints,
                   "sys_interval 1\nplugin_opt_node_id b\nplugin_opt_etcd_solo_ms 1\n"
                   "plugin_opt_etcd_max_txn_ops 11\nplugin_opt_max_keys 1000\n");
    struct client cw, cr;
    char rw[64], rr[64];
    client_connect_rr(&cw, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&cr, b.port, "reader", rr, sizeof rr);
    ASSERT_REPLY(request(&cw, rw, "r", NULL, NULL, W("SET", "read", "r")), "+OK\r\n");
    ASSERT_REPLY(request(&cr, rr, "r", NULL, NULL, W("GET", "read")), "$1\r\nr\r\n");
    usleep(100 * 1000); /* the watch past the sentinel's put */
    long long solo0 = broker_figure(b.port, "etcd/txns_solo");
    enum { PAIRS = 50 };
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < PAIRS; i++) {
            char key[16];
            snprintf(key, sizeof key, "w%d", i);
            request_send(&cw, rw, "w", NULL, NULL, W("SET", key, "v"));
            request_send(&cr, rr, "g", NULL, NULL, W("GET", "read"));
        }
        for (int i = 0; i < PAIRS; i++) {
            ASSERT_REPLY(client_wait(&cw, 10000), "+OK\r\n");
            ASSERT_REPLY(client_wait(&cr, 10000), "$1\r\nr\r\n");
        }
    }
    usleep(1300 * 1000); /* the next publication of the figures */
    long long solo = broker_figure(b.port, "etcd/txns_solo") - solo0;
    printf("  %d SETs and %d GETs with etcd's --max-txn-ops at 11: every one answered, %lld Txns "
           "confirmed their reads by the markers\n", 4 * PAIRS, 4 * PAIRS, solo);
    ASSERT_TRUE(solo >= 1);
    ASSERT_TRUE(!broker_log_has(&b, "refused"));
    client_close(&cw);
    client_close(&cr);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}

/* etcd's one member killed, its data wiped, started again: its revisions
 * start again below what the brokers saw (as after a snapshot restored). */
static void etcd_data_wiped(struct etcd_cluster *ec)
{
    etcd_member_kill9(ec, 0);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/etcd-0'", test_tmpdir());
    ASSERT_EQ(system(cmd), 0);
    etcd_member_restart(ec, 0);
}

/* etcd's data goes back while the brokers run: its one member is killed,
 * its data directory wiped and the member started again, so that its
 * revisions start again below what the brokers saw (as after a snapshot
 * restored). A broker's first Txn answered below a revision it saw makes
 * it forget what it knew: B's reads are no longer confirmed by markers
 * compared against revisions of the old history (it answered A's values
 * from before, three times in three), and its watch starts again from
 * the new revision (an observer on B was told nothing of A's SETs). */
TEST(cluster_etcd_data_gone_back_forgotten)
{
    struct proxied_brokers t;
    proxied_brokers_up(&t, "sys_interval 1\nplugin_opt_etcd_solo_ms 100\n");
    struct readers rd;
    readers_connect(&t, &rd);
    struct client *ca = &rd.ca, *cw = &rd.cw, *cr = &rd.cr, ob;
    const char *ra = rd.ra, *rw = rd.rw, *rr = rd.rr;
    char rob[64];
    client_connect_rr(&ob, t.b.port, "observer-b", rob, sizeof rob);
    for (int i = 0; i < 300; i++) /* revisions the new history will not reach soon */
        ASSERT_REPLY(request(ca, ra, "p", NULL, NULL, W("SET", "pump", "x")), "+OK\r\n");
    ASSERT_REPLY(request(cr, rr, "0", NULL, NULL, W("GET", "k")), "$-1\r\n");
    etcd_data_wiped(&t.ec);
    /* Both brokers write again, by themselves. */
    uint64_t t0 = now_ms();
    for (;;) {
        struct msg *m = request(ca, ra, "w", NULL, NULL, W("SET", "z", "1"));
        bool a_ok = m && payload_is(m, "+OK\r\n");
        m = request(cw, rw, "w", NULL, NULL, W("SET", "y", "1"));
        if (a_ok && m && payload_is(m, "+OK\r\n"))
            break;
        ASSERT_TRUE(now_ms() - t0 < 30000);
        usleep(200 * 1000);
    }
    ASSERT_TRUE(broker_log_has(&t.b, "its data went back"));
    /* B's watch tells of A's changes again. */
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "watched")), "+OK\r\n");
    ASSERT_REPLY(request(ca, ra, "0", NULL, NULL, W("SET", "k", "v0")), "+OK\r\n");
    ASSERT_REPLY(request(cr, rr, "0", NULL, NULL, W("GET", "k")), "$2\r\nv0\r\n"); /* cached on B */
    ASSERT_REPLY(request(ca, ra, "0", NULL, NULL, W("SET", "watched", "1")), "+OK\r\n");
    ASSERT_REPLY(client_wait(&ob, 5000), "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\n1\r\n");
    /* A read on B that starts after A's SET was answered sees it, with B
     * frozen so that the GET joins a batch of B's that writes (as in
     * cluster_reads_confirmed_by_markers_see_another_brokers_write). */
    delay_proxy_set(t.px, 300, 0);
    for (int i = 1; i <= 3; i++)
        frozen_read_round(&t, &rd, i);
    readers_close(&rd);
    client_close(&ob);
    proxied_brokers_down(&t);
}

/* SET key to value through c until it is answered +OK (30 s at most). */
static void set_value_until_ok(struct client *c, const char *r, const char *key, const char *value)
{
    uint64_t t0 = now_ms();
    for (;;) {
        struct msg *m = request(c, r, "w", NULL, NULL, W("SET", key, value));
        if (m && payload_is(m, "+OK\r\n"))
            return;
        ASSERT_TRUE(now_ms() - t0 < 30000);
        usleep(200 * 1000);
    }
}

static void set_until_ok(struct client *c, const char *r, const char *key)
{
    set_value_until_ok(c, r, key, "1");
}

/* A broker started after many revisions sees etcd's data go back: its
 * own commits, at revisions of the new history below where its watch had
 * started, are told once, by the watch (they were taken for commits the
 * watch would not tell, and told from the commit as well: twice). */
TEST(cluster_etcd_data_gone_back_own_writes_told_once)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    struct broker a, b;
    broker_on_etcd(&a, "a", ec.endpoints, "plugin_opt_node_id a\n");
    struct client ca, cb, ob;
    char ra[64], rb[64], rob[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    for (int i = 0; i < 300; i++)
        ASSERT_REPLY(request(&ca, ra, "p", NULL, NULL, W("SET", "pump", "x")), "+OK\r\n");
    broker_on_etcd(&b, "b", ec.endpoints, "plugin_opt_node_id b\n");
    client_connect_rr(&cb, b.port, "cb", rb, sizeof rb);
    client_connect_rr(&ob, b.port, "ob", rob, sizeof rob);
    ASSERT_REPLY(request(&cb, rb, "0", NULL, NULL, W("SET", "before", "1")), "+OK\r\n");
    etcd_data_wiped(&ec);
    set_until_ok(&cb, rb, "y");
    ASSERT_TRUE(broker_log_has(&b, "its data went back"));
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "watched")), "+OK\r\n");
    ASSERT_REPLY(request(&cb, rb, "1", NULL, NULL, W("SET", "watched", "1")), "+OK\r\n");
    ASSERT_REPLY(client_wait(&ob, 5000), "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\n1\r\n");
    ASSERT_EQ(client_drain(&ob, 1500), 0);
    client_close(&ca);
    client_close(&cb);
    client_close(&ob);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}

/* etcd's data goes back, and broker A writes past every revision broker B
 * saw before B's next write, which SETs o1 to first (a value in chunks
 * when longer than 64 KiB - 16 KiB, B's etcd_max_request_bytes being
 * 64 KiB): no revision tells B. That write fails on B's own commit
 * marker (its commit's Txn, or the guard of its chunks), gone with the
 * data, and reads it back: B forgets what it knew, once, and its read of
 * A's key, confirmed by the markers otherwise, sees A's write (it
 * answered the value from before the wipe, which A had overwritten and
 * been told +OK for before the GET began). */
static void gone_back_seen_by_the_marker(const char *first)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    struct broker a, b;
    broker_on_etcd(&a, "a", ec.endpoints, "plugin_opt_node_id a\n");
    broker_on_etcd(&b, "b", ec.endpoints, "sys_interval 1\nplugin_opt_node_id b\nplugin_opt_etcd_solo_ms 100\n"
                   "plugin_opt_etcd_max_request_bytes 65536\n");
    struct client ca, cw, cr;
    char ra[64], rw[64], rr[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cw, b.port, "cw", rw, sizeof rw);
    client_connect_rr(&cr, b.port, "cr", rr, sizeof rr);
    ASSERT_REPLY(request(&ca, ra, "0", NULL, NULL, W("SET", "k2", "old2")), "+OK\r\n");
    ASSERT_REPLY(request(&cw, rw, "0", NULL, NULL, W("SET", "w0", "x")), "+OK\r\n");
    ASSERT_REPLY(request(&cr, rr, "0", NULL, NULL, W("GET", "k2")), "$4\r\nold2\r\n"); /* cached on B */
    etcd_data_wiped(&ec);
    set_until_ok(&ca, ra, "z");
    ASSERT_REPLY(request(&ca, ra, "0", NULL, NULL, W("SET", "k2", "new2")), "+OK\r\n");
    for (int i = 0; i < 150; i++)
        ASSERT_REPLY(request(&ca, ra, "p", NULL, NULL, W("SET", "pump", "x")), "+OK\r\n");
    usleep(2500 * 1000); /* B's claim lapses and is made again; past etcd_solo_ms */
    set_value_until_ok(&cw, rw, "o1", first);
    usleep(400 * 1000);
    /* The GET joins a batch of B's that writes (B frozen meanwhile). */
    ASSERT_EQ(kill(b.pid, SIGSTOP), 0);
    request_send(&cw, rw, "2", NULL, NULL, W("SET", "o2", "x"));
    request_send(&cr, rr, "2", NULL, NULL, W("GET", "k2"));
    usleep(50 * 1000);
    ASSERT_EQ(kill(b.pid, SIGCONT), 0);
    ASSERT_REPLY(client_wait(&cw, 10000), "+OK\r\n");
    ASSERT_REPLY(client_wait(&cr, 10000), "$4\r\nnew2\r\n");
    ASSERT_TRUE(broker_log_has(&b, "its data went back"));
    usleep(1300 * 1000); /* the next publication of the figures */
    ASSERT_EQ(broker_figure(b.port, "etcd/revisions_went_back"), 1);
    client_close(&ca);
    client_close(&cw);
    client_close(&cr);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}

TEST(cluster_etcd_data_gone_back_seen_by_the_marker)
{
    gone_back_seen_by_the_marker("1");
}

/* The same, B's first write after the wipe a value in chunks: the guard
 * of its chunks is the first to read B's marker back (it took that marker
 * for B's own, and the commit then went through on it: nothing told B). */
TEST(cluster_etcd_data_gone_back_seen_by_the_marker_of_a_large_value)
{
    char *big = patterned(100000, 7);
    gone_back_seen_by_the_marker(big);
    free(big);
}

/* B's two flood clients: SETs of distinct keys (the same each round),
 * sent at once, so that a batch of two keys (etcd_max_txn_ops 9) is full
 * while the one before is in flight and Txns go through both of B's
 * slots; meanwhile watched is SET through A and B in turn, each answered
 * before the next, its values (round r) appended to vals. */
enum { FLOOD_PER = 200, WATCHED_PER_ROUND = 6 };
static void flood_round(struct client fl[2], char rf[2][64], struct client *ca, const char *ra, struct client *cb,
                        const char *rb, int r, char (*vals)[16], int *nvals)
{
    for (int j = 0; j < FLOOD_PER; j++)
        for (int i = 0; i < 2; i++) {
            char key[32];
            snprintf(key, sizeof key, "e%d-%d", i, j);
            request_send(&fl[i], rf[i], "f", NULL, NULL, W("SET", key, "v"));
        }
    for (int i = 0; i < WATCHED_PER_ROUND; i++) {
        char *v = vals[(*nvals)++];
        snprintf(v, 16, "%c%d-%d", i % 2 ? 'b' : 'a', r, i);
        ASSERT_REPLY(request(i % 2 ? cb : ca, i % 2 ? rb : ra, "s", NULL, NULL, W("SET", "watched", v)),
                     "+OK\r\n");
    }
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(client_drain_count(&fl[i], FLOOD_PER, 60000), FLOOD_PER);
}

/* One restore of etcd's data is noticed once, though both of B's slots
 * had committed before it and both read their markers back after it (a
 * slot's Txn fails on its marker as restored, the second slot's first
 * after the step back was taken, a Txn run again after one that failed on
 * a key): counted once by each broker, and an observer on B is told of
 * every SET of watched made after B noticed, once each, in order. Each
 * such marker read back was taken for the step back again: the cache
 * emptied, the watch moved on to the Txn's revision (changes between not
 * told, or told twice). */
TEST(cluster_etcd_data_gone_back_noticed_once)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    struct broker a, b;
    broker_on_etcd(&a, "a", ec.endpoints, "sys_interval 1\nplugin_opt_node_id a\n");
    broker_on_etcd(&b, "b", ec.endpoints, "sys_interval 1\nplugin_opt_node_id b\nplugin_opt_etcd_max_txn_ops 9\n");
    struct client ca, cb, ob, fl[2];
    char ra[64], rb[64], rob[64], rf[2][64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "cb", rb, sizeof rb);
    client_connect_rr(&ob, b.port, "ob", rob, sizeof rob);
    client_connect_rr(&fl[0], b.port, "fl0", rf[0], sizeof rf[0]);
    client_connect_rr(&fl[1], b.port, "fl1", rf[1], sizeof rf[1]);
    for (int i = 0; i < 300; i++) /* revisions the new history will not reach soon */
        ASSERT_REPLY(request(&ca, ra, "p", NULL, NULL, W("SET", "pump", "x")), "+OK\r\n");
    /* Under a sanitizer or valgrind the broker's thread is the slow part:
     * a Txn may be done before the next batch closes, and none overlap. */
    const char *preload = getenv("SS_BROKER_PRELOAD");
    bool plain = (preload == NULL || preload[0] == '\0') && getenv("SS_BROKER_VALGRIND") == NULL;
    enum { ROUNDS = 5 };
    char vals[ROUNDS * WATCHED_PER_ROUND][16];
    int nvals = 0, r = 0;
    long long overlapped = 0;
    while (overlapped == 0 && r < ROUNDS) {
        flood_round(fl, rf, &ca, ra, &cb, rb, r++, vals, &nvals);
        usleep(1300 * 1000); /* the next publication of the figures */
        overlapped = broker_figure(b.port, "etcd/txns_overlapped");
    }
    ASSERT_TRUE(overlapped > 0 || !plain);
    etcd_data_wiped(&ec);
    set_until_ok(&cb, rb, "y");
    set_until_ok(&ca, ra, "z");
    ASSERT_TRUE(broker_log_has(&b, "its data went back"));
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "watched")), "+OK\r\n");
    long long since = 0;
    nvals = 0;
    for (r = 0; r < 2 || (since == 0 && r < ROUNDS); r++) {
        flood_round(fl, rf, &ca, ra, &cb, rb, r, vals, &nvals);
        usleep(1300 * 1000);
        since = broker_figure(b.port, "etcd/txns_overlapped") - overlapped;
    }
    ASSERT_TRUE(since > 0 || !plain);
    for (int i = 0; i < nvals; i++)
        assert_bulk(client_wait(&ob, 5000), "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n", vals[i]);
    ASSERT_EQ(client_drain(&ob, 1500), 0);
    printf("  %d SETs of watched through A and B after etcd's data went back, told once each; "
           "B's Txns overlapped %lld times since\n", nvals, since);
    ASSERT_EQ(broker_figure(a.port, "etcd/revisions_went_back"), 1);
    ASSERT_EQ(broker_figure(b.port, "etcd/revisions_went_back"), 1);
    ASSERT_EQ(broker_log_count(&b, "its data went back"), 1);
    client_close(&ca);
    client_close(&cb);
    client_close(&ob);
    client_close(&fl[0]);
    client_close(&fl[1]);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}

/* etcd's data goes back, and B's first commit after it loses its answer
 * (everything etcd sends B is dropped for 2.7 s, B's calls timing out
 * after 1 s): the fence that settles it fails, and reads back B's commit
 * marker, gone with the data. That is etcd's data gone back (it was taken
 * for another process that wrote the marker, "two brokers must not share
 * a node id", and the step back went unnoticed): the commit's outcome
 * stays unknown, B forgets what it knew, once, and writes again. */
TEST(cluster_etcd_data_gone_back_seen_by_the_fence)
{
    struct proxied_brokers t;
    proxied_brokers_up(&t, "sys_interval 1\nplugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_solo_ms 0\n"
                           "plugin_opt_etcd_unavailable_ms 20000\n");
    struct client cb;
    char rb[64];
    client_connect_rr(&cb, t.b.port, "cb", rb, sizeof rb);
    ASSERT_REPLY(request(&cb, rb, "0", NULL, NULL, W("SET", "k", "v0")), "+OK\r\n");
    etcd_data_wiped(&t.ec);
    delay_proxy_mute_after(t.px, NULL, "needle-vb", "");
    request_send(&cb, rb, "1", NULL, NULL, W("SET", "k", "needle-vb"));
    usleep(2700 * 1000);
    delay_proxy_mute_after(t.px, NULL, NULL, NULL);
    ASSERT_REPLY(client_wait(&cb, 15000), UNAVAILABLE);
    ASSERT_TRUE(broker_log_has(&t.b, "this broker's commit marker of slot 0 is gone"));
    ASSERT_TRUE(broker_log_has(&t.b, "the outcome of a commit sent before etcd's data went back stays unknown"));
    ASSERT_TRUE(!broker_log_has(&t.b, "changed by another process"));
    set_until_ok(&cb, rb, "y");
    usleep(1300 * 1000); /* the next publication of the figures */
    ASSERT_EQ(broker_figure(t.b.port, "etcd/revisions_went_back"), 1);
    client_close(&cb);
    proxied_brokers_down(&t);
}
