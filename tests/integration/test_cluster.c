/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster.c - the store on a 3-member etcd cluster: races between
 * two brokers, faults of etcd members under a write load, quorum loss,
 * node ids, etcd's authentication and the store's limits across brokers.
 * Notifications, locks and concurrent Txns have files of their own
 * (test_cluster_notify.c, test_cluster_locks.c, test_cluster_contention.c). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "cluster_util.h"
#include "etcd_cluster.h"
#include "harness.h"

/* Two brokers on one cluster, a client on each, racing on one key: every
 * NX, NEX and VDEL race has exactly one winner, and of two fenced writes
 * the one with the higher token always succeeds (the lower one only
 * before it). */
TEST(cluster_two_brokers_one_winner_per_race)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    cluster_broker(&a, &c, "broker-a", NULL);
    cluster_broker(&b, &c, "broker-b", NULL);
    struct client ca, cb;
    char ra[64], rb[64], x[200], y[200];
    client_connect_rr(&ca, a.port, "racer-a", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "racer-b", rb, sizeof rb);
    const int rounds = 40;
    int a_wins = 0, b_wins = 0;
    for (int i = 0; i < rounds; i++) {
        char key[32];
        snprintf(key, sizeof key, "nx%d", i);
        race(&ca, ra, NULL, W("SET", key, "A", "NX"), &cb, rb, NULL, W("SET", key, "B", "NX"), x, y, sizeof x);
        bool wa = strcmp(x, "+OK\r\n") == 0, wb = strcmp(y, "+OK\r\n") == 0;
        ASSERT_TRUE(wa != wb);
        ASSERT_TRUE(strcmp(wa ? y : x, ":-1\r\n") == 0);
        a_wins += wa;
        b_wins += wb;
        /* The winner's value is what both brokers read. */
        struct msg *m = request(&ca, ra, "g", NULL, NULL, W("GET", key));
        ASSERT_TRUE(payload_is(m, wa ? "$1\r\nA\r\n" : "$1\r\nB\r\n"));
        m = request(&cb, rb, "g", NULL, NULL, W("GET", key));
        ASSERT_TRUE(payload_is(m, wa ? "$1\r\nA\r\n" : "$1\r\nB\r\n"));

        snprintf(key, sizeof key, "nex%d", i);
        race(&ca, ra, NULL, W("SET", key, "A", "NEX"), &cb, rb, NULL, W("SET", key, "B", "NEX"), x, y, sizeof x);
        wa = strcmp(x, "+OK\r\n") == 0;
        wb = strcmp(y, "+OK\r\n") == 0;
        ASSERT_TRUE(wa != wb);

        /* Both delete the value the NX race left: one deletes it. */
        snprintf(key, sizeof key, "nx%d", i);
        m = request(&ca, ra, "g", NULL, NULL, W("GET", key));
        ASSERT_TRUE(m != NULL && m->len >= 7);
        char val[2] = {(char)m->payload[4], 0};
        race(&ca, ra, NULL, W("VDEL", key, val), &cb, rb, NULL, W("VDEL", key, val), x, y, sizeof x);
        ASSERT_TRUE((strcmp(x, ":1\r\n") == 0) != (strcmp(y, ":1\r\n") == 0));
        ASSERT_TRUE(strcmp(x, ":0\r\n") == 0 || strcmp(y, ":0\r\n") == 0);
    }
    printf("  %d NX races through two brokers: %d won through a, %d through b\n", rounds, a_wins, b_wins);

    /* Fencing: a lock's holders present tokens in order; the newer one
     * always wins, the older one only if it came first. */
    int both = 0;
    for (int i = 0; i < 20; i++) {
        char lock[32], low[64], high[64];
        snprintf(lock, sizeof lock, "lock%d", i);
        struct msg *m = request(&ca, ra, "l", NULL, NULL, W("SET", lock, "holder", "NX", "PX", "60000"));
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        snprintf(low, sizeof low, "%s", msg_user(m, "__ts"));
        m = request(&cb, rb, "l", NULL, NULL, W("SET", lock, "holder2"));
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        snprintf(high, sizeof high, "%s", msg_user(m, "__ts"));
        race(&ca, ra, low, W("SET", "protected", "low"), &cb, rb, high, W("SET", "protected", "high"), x, y,
             sizeof x);
        ASSERT_TRUE(strcmp(y, "+OK\r\n") == 0);
        ASSERT_TRUE(strcmp(x, "+OK\r\n") == 0 ||
                    strcmp(x, "-ERR the request fencing token is a lower version than the fencing token "
                              "protecting the resource\r\n") == 0);
        both += strcmp(x, "+OK\r\n") == 0;
        m = request(&ca, ra, "g", NULL, NULL, W("GET", "protected"));
        ASSERT_TRUE(payload_is(m, "$4\r\nhigh\r\n"));
    }
    printf("  20 fenced races: the higher token won each; the lower one went first %d times\n", both);
    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* The load of the fault test: SETs of unique keys, 8 in flight, so that
 * faults strike calls under way. Every answer is +OK (acknowledged:
 * recorded) or "unavailable"; none takes more than 20 s. */
struct load {
    struct client *c;
    const char *resp;
    int next, inflight;
    char *acked; /* acked[i]: SET of w<i> acknowledged */
    int cap, nacked, unavailable;
    bool hot; /* every 10th write goes to one of 4 hot keys h0..h3 */
};

#define HOT_KEYS 4

/* The key of the load's write i: w<i>, or a hot key h<k>. */
static void load_key(const struct load *l, int i, char *key, size_t n)
{
    if (l->hot && i % 10 == 0)
        snprintf(key, n, "h%d", (i / 10) % HOT_KEYS);
    else
        snprintf(key, n, "w%d", i);
}

static void load_answer(struct load *l)
{
    struct msg *m = client_wait(l->c, 20000);
    ASSERT_TRUE(m != NULL && m->corr != NULL && m->corr_len > 1 && m->corr_len < 16);
    char corr[16];
    memcpy(corr, m->corr, (size_t)m->corr_len);
    corr[m->corr_len] = '\0';
    int i = atoi(corr + 1);
    ASSERT_TRUE(i >= 0 && i < l->next && !l->acked[i]);
    if (payload_is(m, "+OK\r\n")) {
        l->acked[i] = 1;
        l->nacked++;
    } else if (payload_is(m, UNAVAILABLE)) {
        l->unavailable++;
    } else {
        PAYLOAD(m, "+OK\r\n"); /* no other answer is true */
    }
    l->inflight--;
}

/* Run the load for ms; requests stay in flight unless drain. */
static void load_for(struct load *l, int ms, bool drain)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end) {
        while (l->inflight < 8 && l->next < l->cap) {
            char key[32], val[32], corr[16];
            load_key(l, l->next, key, sizeof key);
            snprintf(val, sizeof val, "v%d", l->next);
            snprintf(corr, sizeof corr, "c%d", l->next);
            request_send(l->c, l->resp, corr, NULL, NULL, W("SET", key, val));
            l->next++;
            l->inflight++;
        }
        load_answer(l);
    }
    while (drain && l->inflight)
        load_answer(l);
}

/* The answer to a check of write i: its value. */
static void check_answer(struct client *c, const struct load *l)
{
    struct msg *m = client_wait(c, 20000);
    ASSERT_TRUE(m != NULL && m->corr != NULL && m->corr_len > 1 && m->corr_len < 16);
    char corr[16];
    memcpy(corr, m->corr, (size_t)m->corr_len);
    corr[m->corr_len] = '\0';
    int i = atoi(corr + 1);
    ASSERT_TRUE(i >= 0 && i < l->next);
    char val[32], want[48];
    snprintf(val, sizeof val, "v%d", i);
    snprintf(want, sizeof want, "$%zu\r\n%s\r\n", strlen(val), val);
    ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
}

/* Every acknowledged write is there, with its value, or (a hot key) was
 * superseded by the last acknowledged write of that key. GETs go 32 at a
 * time. */
static void check_acked(struct client *c, const char *resp, const struct load *l)
{
    int last_hot[HOT_KEYS] = {-1, -1, -1, -1};
    int inflight = 0;
    for (int i = 0; i < l->next; i++) {
        if (!l->acked[i])
            continue;
        char key[32], corr[16];
        load_key(l, i, key, sizeof key);
        if (key[0] == 'h') {
            last_hot[(i / 10) % HOT_KEYS] = i;
            continue;
        }
        snprintf(corr, sizeof corr, "g%d", i);
        request_send(c, resp, corr, NULL, NULL, W("GET", key));
        if (++inflight == 32) {
            check_answer(c, l);
            inflight--;
        }
    }
    for (int k = 0; k < HOT_KEYS; k++) {
        if (last_hot[k] < 0)
            continue;
        char key[32], corr[16];
        snprintf(key, sizeof key, "h%d", k);
        snprintf(corr, sizeof corr, "g%d", last_hot[k]);
        request_send(c, resp, corr, NULL, NULL, W("GET", key));
        inflight++;
    }
    while (inflight-- > 0)
        check_answer(c, l);
}

/* What an observer of the hot keys on another broker was told. */
struct seen {
    char *got;            /* got[i]: notifications of write i */
    int last[HOT_KEYS];   /* the last write notified per key */
    int n;
};

/* Take the observer's notifications until none came for quiet_ms: each
 * a SET of a hot key, later than the last one of that key, never twice. */
static void observe(struct client *o, struct seen *s, int quiet_ms)
{
    struct msg *m;
    while ((m = client_wait(o, quiet_ms)) != NULL) {
        const char *k = strrchr(m->topic, '/');
        ASSERT_TRUE(k != NULL && strlen(k) == 5 && k[1] == '6' && k[2] == '8' && k[3] == '3');
        int key = k[4] - '0';
        ASSERT_TRUE(key >= 0 && key < HOT_KEYS);
        static const char set[] = "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$";
        ASSERT_TRUE((size_t)m->len > sizeof set - 1 && memcmp(m->payload, set, sizeof set - 1) == 0);
        const char *v = strstr((const char *)m->payload + sizeof set - 1, "\r\nv");
        ASSERT_TRUE(v != NULL);
        int i = atoi(v + 3);
        ASSERT_TRUE(i > s->last[key] && i % 10 == 0 && (i / 10) % HOT_KEYS == key);
        s->last[key] = i;
        s->got[i]++;
        s->n++;
    }
}

/* A write load through one broker while etcd members fail: the leader
 * killed with SIGKILL (5 rounds, restarted each time), a follower killed,
 * the leader stopped with SIGSTOP and continued; then the broker itself
 * killed and restarted. No acknowledged write is lost, no answer is
 * wrong, and the store serves again after each fault. A client on a
 * second broker observes the hot keys: its watch on etcd is cut by the
 * same faults and resumes, and it hears of every acknowledged write of
 * them once. Afterwards every member's history hashes the same. */
TEST(cluster_member_faults_under_write_load)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker b;
    cluster_broker(&b, &c, "faults",
                   "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 3000\n");
    /* A second broker, whose client observes the hot keys. */
    struct broker b2;
    cluster_broker(&b2, &c, "observed",
                   "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 3000\n");
    struct client cl, ob;
    char r[64], ro[64];
    client_connect_rr(&cl, b.port, "writer", r, sizeof r);
    client_connect_rr(&ob, b2.port, "observer", ro, sizeof ro);
    for (int k = 0; k < HOT_KEYS; k++) {
        char key[16];
        snprintf(key, sizeof key, "h%d", k);
        ASSERT_REPLY(request(&ob, ro, "n", NULL, NULL, W("KEYNOTIFY", key)), "+OK\r\n");
    }
    struct load l = {.c = &cl, .resp = r, .cap = 200000, .hot = true};
    l.acked = calloc((size_t)l.cap, 1);
    struct seen seen = {.got = calloc((size_t)l.cap, 1), .last = {-1, -1, -1, -1}};
    ASSERT_TRUE(l.acked != NULL && seen.got != NULL);
    for (int round = 0; round < 7; round++) {
        if (test_quick() && round >= 1 && round <= 4)
            continue; /* one leader kill, not five */
        load_for(&l, 700, false);
        observe(&ob, &seen, 1);
        int leader = etcd_cluster_leader(&c);
        ASSERT_TRUE(leader >= 0);
        int victim = round == 5 ? (leader + 1) % 3 : leader;
        int before = l.nacked;
        if (round == 6) {
            etcd_member_sigstop(&c, victim);
            load_for(&l, 1500, false);
            kill(c.pid[victim], SIGCONT);
        } else {
            etcd_member_kill9(&c, victim);
            load_for(&l, 1500, false);
            etcd_member_restart(&c, victim);
        }
        observe(&ob, &seen, 1);
        load_for(&l, 700, true);
        observe(&ob, &seen, 1);
        /* Served again after the fault. */
        ASSERT_TRUE(l.nacked > before);
        printf("  round %d (%s member %d): %d writes acknowledged so far, %d answered unavailable\n", round,
               round == 6 ? "SIGSTOP of leader" : round == 5 ? "kill -9 of follower" : "kill -9 of leader",
               victim, l.nacked, l.unavailable);
    }
    check_acked(&cl, r, &l);
    /* The observer on the other broker was told of every acknowledged
     * write of a hot key exactly once, in order, and of nothing else. */
    observe(&ob, &seen, 2000);
    int hot_acked = 0;
    for (int i = 0; i < l.next; i += 10) {
        ASSERT_EQ(seen.got[i], l.acked[i]);
        hot_acked += l.acked[i];
    }
    size_t len2;
    char *log2 = slurp(b2.log, &len2);
    int resumed = 0;
    for (const char *p = log2; (p = strstr(p, "the watch on changes was lost")) != NULL; p++)
        resumed++;
    free(log2);
    printf("  an observer on a second broker was told of each of %d acknowledged hot-key writes once, in "
           "order, through the faults (its broker's watch was cut and resumed %d times)\n", hot_acked, resumed);
    client_close(&cl);
    size_t len;
    char *log = slurp(b.log, &len);
    int unknown = 0, settled = 0;
    for (const char *p = log; (p = strstr(p, "the outcome of a commit is unknown")) != NULL; p++)
        unknown++;
    for (const char *p = log; (p = strstr(p, "the commit of unknown outcome ")) != NULL; p++)
        settled++;
    free(log);
    ASSERT_EQ(unknown, settled); /* every one was settled */
    printf("  %d commits of unknown outcome, each settled through the marker\n", unknown);
    /* The broker crashes; what it acknowledged is in etcd. */
    broker_kill9(&b);
    snprintf(b.name, sizeof b.name, "faults-restarted");
    broker_start(&b);
    client_connect_rr(&cl, b.port, "checker", r, sizeof r);
    check_acked(&cl, r, &l);
    printf("  %d acknowledged writes of %d present after 7 faults and a broker kill -9\n", l.nacked, l.next);
    client_close(&cl);
    client_close(&ob);
    broker_stop(&b);
    broker_stop(&b2);
    /* Every member holds the same history. */
    etcd_cluster_assert_same_history(&c);
    printf("  etcdctl endpoint hashkv: equal on all 3 members\n");
    etcd_cluster_stop(&c);
    free(l.acked);
    free(seen.got);
}

/* Without quorum a request waits up to etcd_unavailable_ms and is answered
 * "the store is unavailable", having changed nothing; once a quorum is
 * back, the store serves again with everything it held. */
TEST(cluster_without_quorum_answers_unavailable)
{
    struct etcd_cluster c;
    struct broker b;
    struct client cl;
    char r[64];
    cluster_with_a_client(&c, &b, "quorum", "plugin_opt_etcd_timeout_ms 500\nplugin_opt_etcd_unavailable_ms 1500\n",
                          &cl, r);
    struct msg *m = request(&cl, r, "1", NULL, NULL, W("SET", "kept", "yes"));
    PAYLOAD(m, "+OK\r\n");
    etcd_member_kill9(&c, 1);
    etcd_member_kill9(&c, 2);
    const char *const *asks[] = {W("GET", "kept"), W("GET", "never-read"), W("SET", "new", "x"),
                                 W("DEL", "kept")};
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        uint64_t t0 = now_ms();
        request_send(&cl, r, "2", NULL, NULL, asks[i]);
        m = client_wait(&cl, 15000);
        uint64_t waited = now_ms() - t0;
        ASSERT_TRUE(m != NULL);
        PAYLOAD(m, UNAVAILABLE);
        ASSERT_TRUE(waited >= 1000);
        printf("  %s without quorum: \"the store is unavailable\" after %llu ms\n", asks[i][0],
               (unsigned long long)waited);
    }
    etcd_member_restart(&c, 1);
    etcd_member_restart(&c, 2);
    /* The refused requests changed nothing. */
    m = request(&cl, r, "3", NULL, NULL, W("GET", "kept"));
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "$3\r\nyes\r\n");
    m = request(&cl, r, "3", NULL, NULL, W("GET", "new"));
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "$-1\r\n");
    m = request(&cl, r, "4", NULL, NULL, W("SET", "new", "y"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_TRUE(broker_log_has(&b, "the requests that wait for it are answered \"the store is unavailable\""));
    client_close(&cl);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* One live broker per node id: a second broker with the same node id on
 * the same prefix refuses to start while the first lives; after a clean
 * stop it starts at once, and after a kill -9 once the claim's lease has
 * lapsed (a few seconds). */
TEST(cluster_node_id_held_by_one_live_broker)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    cluster_broker(&a, &c, "same-a", "plugin_opt_node_id twin\n");
    memset(&b, 0, sizeof b);
    snprintf(b.name, sizeof b.name, "same-b");
    snprintf(b.data, sizeof b.data, "%s/data-b", test_tmpdir());
    snprintf(b.extra, sizeof b.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix race/\n"
             "plugin_opt_node_id twin\n", c.endpoints);
    uint64_t t0 = now_ms();
    ASSERT_TRUE(broker_start_fails(&b) != 0);
    ASSERT_TRUE(broker_log_has(&b, "node id twin is claimed by another live broker"));
    printf("  a second broker with node id twin refused to start after %llu ms\n",
           (unsigned long long)(now_ms() - t0));
    /* Another node id on the same cluster is welcome. */
    struct broker other;
    t0 = now_ms();
    cluster_broker(&other, &c, "other", NULL);
    uint64_t baseline = now_ms() - t0; /* a start with nothing to wait for */
    broker_stop(&other);
    /* A clean stop gives the node id back. */
    broker_stop(&a);
    t0 = now_ms();
    broker_start(&b);
    uint64_t clean = now_ms() - t0;
    ASSERT_TRUE(clean < baseline + 1500); /* not the lease's 3 s */
    /* A broker killed keeps it until its lease lapses. */
    broker_kill9(&b);
    t0 = now_ms();
    broker_start(&a);
    uint64_t killed = now_ms() - t0;
    struct client cl;
    char r[64];
    client_connect_rr(&cl, a.port, "c", r, sizeof r);
    struct msg *m = request(&cl, r, "1", NULL, NULL, W("SET", "k", "v"));
    PAYLOAD(m, "+OK\r\n");
    client_close(&cl);
    printf("  the node id came back in %llu ms after a clean stop, %llu ms after a kill -9\n",
           (unsigned long long)clean, (unsigned long long)killed);
    broker_stop(&a);
    etcd_cluster_stop(&c);
}

/* max_keys and max_store_bytes hold for the whole store, whichever broker
 * writes: the counter is created by counting what is there, every write
 * is charged in the Txn that makes it, and deletes give room back. */
TEST(cluster_limits_hold_for_the_whole_store)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    /* Three keys before any limit: counted when a limit first needs them. */
    struct broker a, b;
    cluster_broker(&a, &c, "limits-a", NULL);
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, a.port, "a", ra, sizeof ra);
    for (int i = 0; i < 3; i++) {
        char key[16];
        snprintf(key, sizeof key, "old%d", i);
        struct msg *m = request(&ca, ra, "o", NULL, NULL, W("SET", key, "12345"));
        PAYLOAD(m, "+OK\r\n");
    }
    client_close(&ca);
    broker_stop(&a);
    const char *limits = "plugin_opt_max_keys 10\nplugin_opt_max_store_bytes 5000\n";
    cluster_broker(&a, &c, "limits-a", limits);
    cluster_broker(&b, &c, "limits-b", limits);
    client_connect_rr(&ca, a.port, "a", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "b", rb, sizeof rb);
    /* 7 more keys fit, from both brokers at once; the 11th does not. */
    int ok = 0, quota = 0;
    for (int i = 0; i < 5; i++) {
        char ka[16], kb[16], x[200], y[200];
        snprintf(ka, sizeof ka, "a%d", i);
        snprintf(kb, sizeof kb, "b%d", i);
        race(&ca, ra, NULL, W("SET", ka, "v"), &cb, rb, NULL, W("SET", kb, "v"), x, y, sizeof x);
        const char *answers[2] = {x, y};
        for (int j = 0; j < 2; j++) {
            if (strcmp(answers[j], "+OK\r\n") == 0)
                ok++;
            else if (strcmp(answers[j], "-ERR the quota has been exceeded\r\n") == 0)
                quota++;
            else
                ASSERT_TRUE(!"an answer other than +OK or the quota");
        }
    }
    ASSERT_EQ(ok, 7);
    ASSERT_EQ(quota, 3);
    /* Replacing a value adds no key; a delete makes room for one. */
    struct msg *m = request(&cb, rb, "r", NULL, NULL, W("SET", "old0", "other"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&cb, rb, "n", NULL, NULL, W("SET", "new", "v"));
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    m = request(&ca, ra, "d", NULL, NULL, W("DEL", "old1"));
    PAYLOAD(m, ":1\r\n");
    m = request(&cb, rb, "n", NULL, NULL, W("SET", "new", "v"));
    PAYLOAD(m, "+OK\r\n");
    /* Bytes: the 10 keys use about 700 of 5000 (key, value and 64 each):
     * with one deleted, a value of 4500 does not fit, one of 4000 does. */
    m = request(&ca, ra, "d", NULL, NULL, W("DEL", "old2"));
    PAYLOAD(m, ":1\r\n");
    static char big[4500], mid[4000];
    memset(big, 'x', sizeof big - 1);
    memset(mid, 'y', sizeof mid - 1);
    m = request(&ca, ra, "b", NULL, NULL, W("SET", "big", big));
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    m = request(&cb, rb, "m", NULL, NULL, W("SET", "mid", mid));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_TRUE(broker_log_has(&a, "the store's usage counted: 3 keys") ||
                broker_log_has(&b, "the store's usage counted: 3 keys"));
    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}
