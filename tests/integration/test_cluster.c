/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster.c - the store on a 3-member etcd cluster: races between
 * two brokers, and faults of etcd members under a write load. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/hlc.h"
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

/* Run etcdctl against the cluster with the words given. */
static void etcdctl(const struct etcd_cluster *c, const char *const *words)
{
    char ep[600];
    snprintf(ep, sizeof ep, "--endpoints=%s", c->endpoints);
    char *argv[16] = {"build/etcd/root/usr/bin/etcdctl", ep};
    int n = 2;
    for (size_t i = 0; words[i] && n < 15; i++)
        argv[n++] = (char *)words[i];
    argv[n] = NULL;
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    if (r.status != 0)
        fprintf(stderr, "  etcdctl: %s%s", r.out, r.err ? r.err : "");
    ASSERT_EQ(r.status, 0);
    run_free(&r);
}

/* With etcd's authentication on, the plugin logs in with
 * etcd_username/etcd_password (a user whose role may read and write only
 * the store's prefix) and serves; a wrong password stops the broker at
 * start, naming the options. */
TEST(cluster_etcd_user_and_password)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    etcdctl(&c, W("user", "add", "root", "--new-user-password=rootpw", "--interactive=false"));
    etcdctl(&c, W("role", "add", "store"));
    etcdctl(&c, W("role", "grant-permission", "--prefix=true", "store", "readwrite", "race/"));
    etcdctl(&c, W("user", "add", "store", "--new-user-password=storepw", "--interactive=false"));
    etcdctl(&c, W("user", "grant-role", "store", "store"));
    etcdctl(&c, W("auth", "enable"));
    struct broker b;
    cluster_broker(&b, &c, "auth", "plugin_opt_etcd_username store\nplugin_opt_etcd_password storepw\n");
    struct client cl;
    char r[64];
    client_connect_rr(&cl, b.port, "c", r, sizeof r);
    /* 2 s: the GET comes before the deadline even under the sanitizers. */
    struct msg *m = request(&cl, r, "1", NULL, NULL, W("SET", "k", "v", "PX", "2000"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&cl, r, "2", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$1\r\nv\r\n");
    usleep(2400 * 1000); /* expired and swept, under the user's rights */
    m = request(&cl, r, "3", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$-1\r\n");
    client_close(&cl);
    ASSERT_TRUE(broker_log_has(&b, "etcd_username=store"));
    ASSERT_TRUE(!broker_log_has(&b, "storepw"));
    broker_stop(&b);
    struct broker bad;
    memset(&bad, 0, sizeof bad);
    snprintf(bad.name, sizeof bad.name, "bad-password");
    snprintf(bad.extra, sizeof bad.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix race/\n"
             "plugin_opt_etcd_username store\nplugin_opt_etcd_password wrong\n", c.endpoints);
    ASSERT_TRUE(broker_start_fails(&bad) != 0);
    ASSERT_TRUE(broker_log_has(&bad, "plugin_opt_etcd_username, plugin_opt_etcd_password: etcd did not accept user store"));
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

/* What an observer was told: "SET key value ts" or "DELETE key ts". */
static void notification_line(const struct msg *m, char *out, size_t n)
{
    /* The key is the topic's last level, in hex. */
    const char *k = strrchr(m->topic, '/');
    ASSERT_TRUE(k != NULL);
    char key[64] = "";
    for (size_t i = 0; k[1 + 2 * i] && k[2 + 2 * i] && i + 1 < sizeof key; i++) {
        unsigned v;
        ASSERT_TRUE(sscanf(k + 1 + 2 * i, "%2x", &v) == 1);
        key[i] = (char)v;
        key[i + 1] = '\0';
    }
    const char *ts = msg_user(m, "__ts");
    ASSERT_TRUE(ts != NULL);
    static const char del[] = "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n";
    static const char set[] = "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$";
    if ((size_t)m->len == sizeof del - 1 && memcmp(m->payload, del, sizeof del - 1) == 0) {
        snprintf(out, n, "DELETE %s %s", key, ts);
        return;
    }
    ASSERT_TRUE((size_t)m->len > sizeof set - 1 && memcmp(m->payload, set, sizeof set - 1) == 0);
    const char *v = strstr((const char *)m->payload + sizeof set - 1, "\r\n");
    ASSERT_TRUE(v != NULL);
    int vlen = m->len - (int)(v + 2 - (const char *)m->payload) - 2;
    snprintf(out, n, "SET %s %.*s %s", key, vlen, v + 2, ts);
}

/* Each observer gets exactly want (the lines in order), then nothing.
 * Returns when the last one came (now_ms). */
static uint64_t expect_notifications(struct client *o, char (*want)[160], int n)
{
    uint64_t last = 0;
    for (int i = 0; i < n; i++) {
        struct msg *m = client_wait(o, 5000);
        ASSERT_TRUE(m != NULL);
        char got[160];
        notification_line(m, got, sizeof got);
        ASSERT_MEM(got, strlen(got), want[i], strlen(want[i]));
        last = now_ms();
    }
    ASSERT_EQ(client_drain(o, 400), 0);
    return last;
}

/* A client on broker a hears of changes made through broker b, and the
 * other way round: the exact payloads and versions, in order, each once,
 * expiry included (one DELETE per expiry although both brokers sweep). */
TEST(cluster_notifications_across_brokers)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    cluster_broker(&a, &c, "broker-a", NULL);
    cluster_broker(&b, &c, "broker-b", NULL);
    struct client oa, ob, wa, wb;
    char roa[64], rob[64], rwa[64], rwb[64];
    client_connect_rr(&oa, a.port, "observer-a", roa, sizeof roa);
    client_connect_rr(&ob, b.port, "observer-b", rob, sizeof rob);
    client_connect_rr(&wa, a.port, "writer-a", rwa, sizeof rwa);
    client_connect_rr(&wb, b.port, "writer-b", rwb, sizeof rwb);
    const char *keys[] = {"k1", "k2", "exp"};
    for (int i = 0; i < 3; i++) {
        ASSERT_REPLY(request(&oa, roa, "n", NULL, NULL, W("KEYNOTIFY", keys[i])), "+OK\r\n");
        ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", keys[i])), "+OK\r\n");
    }
    char want[8][160], ts[4][80];
    struct msg *m = request(&wa, rwa, "1", NULL, NULL, W("SET", "k1", "one"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(ts[0], sizeof ts[0], "%s", msg_user(m, "__ts"));
    m = request(&wb, rwb, "2", NULL, NULL, W("SET", "k1", "two"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(ts[1], sizeof ts[1], "%s", msg_user(m, "__ts"));
    m = request(&wa, rwa, "3", NULL, NULL, W("SET", "k2", "x"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(ts[2], sizeof ts[2], "%s", msg_user(m, "__ts"));
    ASSERT_REPLY(request(&wb, rwb, "4", NULL, NULL, W("DEL", "k1")), ":1\r\n");
    ASSERT_REPLY(request(&wa, rwa, "5", NULL, NULL, W("VDEL", "k2", "nope")), ":-1\r\n");
    ASSERT_REPLY(request(&wb, rwb, "6", NULL, NULL, W("VDEL", "k2", "x")), ":1\r\n");
    m = request(&wa, rwa, "7", NULL, NULL, W("SET", "exp", "soon", "PX", "300"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(ts[3], sizeof ts[3], "%s", msg_user(m, "__ts"));
    uint64_t deadline = now_ms() + 300;
    snprintf(want[0], sizeof want[0], "SET k1 one %s", ts[0]);
    snprintf(want[1], sizeof want[1], "SET k1 two %s", ts[1]);
    snprintf(want[2], sizeof want[2], "SET k2 x %s", ts[2]);
    snprintf(want[3], sizeof want[3], "DELETE k1 %s", ts[1]);
    snprintf(want[4], sizeof want[4], "DELETE k2 %s", ts[2]);
    snprintf(want[5], sizeof want[5], "SET exp soon %s", ts[3]);
    snprintf(want[6], sizeof want[6], "DELETE exp %s", ts[3]);
    uint64_t late_a = expect_notifications(&oa, want, 7) - deadline;
    uint64_t late_b = expect_notifications(&ob, want, 7) - deadline;
    /* (ob's messages waited while oa's were checked: late_b bounds it.) */
    printf("  expiry DELETE reached the observers %llu ms (broker a) and at most %llu ms (broker b) "
           "after the deadline\n", (unsigned long long)late_a, (unsigned long long)late_b);
    ASSERT_TRUE(late_a < 1000);

    /* A load through both brokers on four keys: each observer hears of
     * every acknowledged write exactly once, in version order per key. */
    const char *hot[] = {"k1", "k2", "h3", "h4"};
    for (int i = 2; i < 4; i++) {
        ASSERT_REPLY(request(&oa, roa, "n", NULL, NULL, W("KEYNOTIFY", hot[i])), "+OK\r\n");
        ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", hot[i])), "+OK\r\n");
    }
    enum { WRITES = 200 };
    static char acked[WRITES][160];
    for (int i = 0; i < WRITES; i++) {
        struct client *w = i % 2 ? &wb : &wa;
        char val[16];
        snprintf(val, sizeof val, "v%d", i);
        m = request(w, i % 2 ? rwb : rwa, "w", NULL, NULL, W("SET", hot[i % 4], val));
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        snprintf(acked[i], sizeof acked[i], "SET %s %s %s", hot[i % 4], val, msg_user(m, "__ts"));
    }
    /* Sequential writes: the order is the order of acknowledgement. */
    expect_notifications(&oa, acked, WRITES);
    expect_notifications(&ob, acked, WRITES);
    printf("  %d writes through two brokers: each observer told of each once, in order\n", WRITES);

    /* Changes of one key sent at once (one batch on one broker): each is
     * a revision of its own, so every observer hears of each. */
    const char *const *burst[] = {W("SET", "k1", "b1"), W("DEL", "k1"), W("SET", "k1", "b2"), W("DEL", "k1"),
                                  W("SET", "k1", "b3")};
    for (int i = 0; i < 5; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "b%d", i);
        request_send(&wa, rwa, corr, NULL, NULL, burst[i]);
    }
    char bts[5][80];
    for (int n = 0; n < 5; n++) {
        m = client_wait(&wa, 5000);
        ASSERT_TRUE(m != NULL && m->corr != NULL && m->corr_len == 2);
        int i = m->corr[1] - '0';
        ASSERT_TRUE(i >= 0 && i < 5);
        ASSERT_TRUE(payload_is(m, i % 2 ? ":1\r\n" : "+OK\r\n"));
        const char *t = msg_user(m, "__ts");
        snprintf(bts[i], sizeof bts[i], "%s", t ? t : "");
    }
    char bwant[5][160];
    snprintf(bwant[0], sizeof bwant[0], "SET k1 b1 %s", bts[0]);
    snprintf(bwant[1], sizeof bwant[1], "DELETE k1 %s", bts[0]);
    snprintf(bwant[2], sizeof bwant[2], "SET k1 b2 %s", bts[2]);
    snprintf(bwant[3], sizeof bwant[3], "DELETE k1 %s", bts[2]);
    snprintf(bwant[4], sizeof bwant[4], "SET k1 b3 %s", bts[4]);
    expect_notifications(&oa, bwant, 5);
    expect_notifications(&ob, bwant, 5);
    printf("  5 changes of one key sent at once: each observer told of each, in order\n");
    client_close(&oa);
    client_close(&ob);
    client_close(&wa);
    client_close(&wb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* Pattern watches across brokers: an observer on broker b hears, from the
 * watch feed, of the changes made through broker a that its patterns
 * match (exact payloads and versions, each once although a KEYNOTIFY and
 * two patterns match), and of nothing else. */
TEST(cluster_pattern_watch_across_brokers)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    cluster_broker(&a, &c, "broker-a", NULL);
    cluster_broker(&b, &c, "broker-b", NULL);
    struct client ob, wa;
    char rob[64], rwa[64];
    client_connect_rr(&ob, b.port, "observer-b", rob, sizeof rob);
    client_connect_rr(&wa, a.port, "writer-a", rwa, sizeof rwa);
    ASSERT_REPLY(admin_call(&ob, rob, "p1", W("WATCH", "sensor/*")), "ok\n");
    ASSERT_REPLY(admin_call(&ob, rob, "p2", W("WATCH", "*/t")), "ok\n");
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "sensor/t")), "+OK\r\n");
    char want[3][160], ts[80];
    struct msg *m = request(&wa, rwa, "1", NULL, NULL, W("SET", "sensor/t", "one"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(ts, sizeof ts, "%s", msg_user(m, "__ts"));
    snprintf(want[0], sizeof want[0], "SET sensor/t one %s", ts);
    ASSERT_REPLY(request(&wa, rwa, "2", NULL, NULL, W("SET", "other/x", "no")), "+OK\r\n");
    m = request(&wa, rwa, "3", NULL, NULL, W("SET", "room/t", "two"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(want[1], sizeof want[1], "SET room/t two %.80s", msg_user(m, "__ts"));
    ASSERT_REPLY(request(&wa, rwa, "4", NULL, NULL, W("DEL", "sensor/t")), ":1\r\n");
    snprintf(want[2], sizeof want[2], "DELETE sensor/t %s", ts);
    expect_notifications(&ob, want, 3);
    /* The observer's disconnect drops its patterns on its broker. */
    client_close(&ob);
    client_connect_rr(&ob, b.port, "observer-b", rob, sizeof rob);
    ASSERT_REPLY(request(&wa, rwa, "5", NULL, NULL, W("SET", "sensor/u", "three")), "+OK\r\n");
    ASSERT_EQ(client_drain(&ob, 500), 0);
    client_close(&ob);
    client_close(&wa);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* ---- locks, renewals and deadlines under faults, two brokers ----------- */

enum lk_state { LK_ACQUIRE, LK_WRITE, LK_RELEASE };

/* A client of the lock test: one request in flight at a time. */
struct lk_client {
    struct client c;
    char id[16], resp[64];
    int port;
    bool busy;
    uint64_t sent_ms;
    enum lk_state state;
    char token[80]; /* LK_WRITE: the lock's fencing token */
    int n;
    /* Correlation data of the request under way: unique, as the SDKs make
     * it (an identical request with the same data and timestamp within a
     * millisecond would be a resend, answered from the resend cache). */
    char corr[24];
    unsigned seq;
};

/* Fresh correlation data for k's next request. */
static const char *lk_corr(struct lk_client *k, char kind)
{
    snprintf(k->corr, sizeof k->corr, "%c%u", kind, ++k->seq);
    return k->corr;
}

/* A fenced write the store accepted: its token and its version. */
struct lk_accepted {
    ss_hlc token, version;
};

static int lk_by_version(const void *a, const void *b)
{
    return ss_hlc_compare(&((const struct lk_accepted *)a)->version, &((const struct lk_accepted *)b)->version);
}

static void lk_connect(struct lk_client *k, int port)
{
    k->port = port;
    k->busy = false;
    client_connect_rr(&k->c, port, k->id, k->resp, sizeof k->resp);
}

/* The answer of k's request, if it came; NULL otherwise. */
static struct msg *lk_answer(struct lk_client *k)
{
    if (!k->busy)
        return NULL;
    struct msg *m = client_wait(&k->c, 0);
    if (m != NULL) {
        k->busy = false;
        /* The answer to this request, not to an earlier one. */
        if (m->corr_len != (int)strlen(k->corr) || memcmp(m->corr, k->corr, strlen(k->corr)) != 0)
            printf("  %s waited for the answer to %s and got one to %.*s: %.*s\n", k->id, k->corr, m->corr_len,
                   m->corr ? m->corr : "", m->len, (const char *)m->payload);
        ASSERT_MEM(m->corr, (size_t)m->corr_len, k->corr, strlen(k->corr));
    }
    return m;
}

static bool lk_unavailable(const struct msg *m)
{
    return payload_is(m, UNAVAILABLE);
}

/* Lockers take a lock (SET NX PX), write a fenced resource with its
 * token, and release it (VDEL); a renewer keeps a lease alive (SET NEX
 * PX); a reader writes keys with a 200 ms deadline and reads them until
 * they are gone. Clients on both brokers, while the etcd leader is
 * killed, a follower stopped, and one broker killed (its clients move to
 * the other); in a longer run (make stress) the rounds repeat, the dead
 * broker starts again and the other is killed next. Afterwards: the tokens the resource accepted only increase
 * in version order, no GET begun after a key's deadline returned it, and
 * every member's history hashes the same. */
TEST(cluster_locks_renewals_and_deadlines_under_faults)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    const char *opts = "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 3000\n";
    cluster_broker(&a, &c, "locks-a", opts);
    cluster_broker(&b, &c, "locks-b", opts);
    enum { LOCKERS = 4, RENEWER = LOCKERS, READER = LOCKERS + 1, ALL = LOCKERS + 2 };
    static struct lk_client ks[ALL];
    for (int i = 0; i < ALL; i++) {
        snprintf(ks[i].id, sizeof ks[i].id, i < LOCKERS ? "locker%d" : i == RENEWER ? "renewer" : "reader", i);
        lk_connect(&ks[i], i % 2 ? b.port : a.port);
    }
    static struct lk_accepted accepted[200000];
    int naccepted = 0, refused = 0, acquired = 0, unknown = 0, renewed = 0, lapsed = 0, reads = 0;
    int expiring = 0, late_reads = 0;
    bool renewer_has_lease = false;
    uint64_t tmp_deadline = 0; /* the reader's key: latest possible deadline */
    int tmp_n = 0;
    /* 14 s; make stress runs it longer (SS_CLUSTER_SOAK_S), the etcd
     * faults again every 12 s. */
    const char *soak = getenv("SS_CLUSTER_SOAK_S");
    uint64_t run_ms = soak && atoi(soak) > 14 ? (uint64_t)atoi(soak) * 1000u : 14000u;
    uint64_t start = now_ms(), end = start + run_ms, cycle_start = start;
    int fault = 0, stopped = -1, cycles = 1;
    int broker_kills = 0, broker_restarts = 0;
    struct broker *brokers[2] = {&a, &b};
    struct broker *dead = NULL; /* killed, to start again in the next round */
    while (now_ms() < end) {
        uint64_t t = now_ms() - cycle_start;
        if (fault == 5 && t >= 12000 && now_ms() + 12000 <= end) {
            cycle_start = now_ms(); /* the next round of etcd faults */
            fault = 0;
            cycles++;
            t = 0;
        }
        /* The faults, at fixed times. A broker killed in the last round
         * starts again first (its node id's claim has lapsed by then). */
        if (fault == 0 && dead != NULL) {
            broker_start(dead);
            broker_restarts++;
            dead = NULL;
        }
        if (fault == 0 && t >= 3000) {
            int leader = etcd_cluster_leader(&c);
            ASSERT_TRUE(leader >= 0);
            etcd_member_kill9(&c, leader);
            stopped = leader;
            fault++;
        } else if (fault == 1 && t >= 5000) {
            etcd_member_restart(&c, stopped);
            fault++;
        } else if (fault == 2 && t >= 7000) {
            int leader = etcd_cluster_leader(&c);
            ASSERT_TRUE(leader >= 0);
            stopped = (leader + 1) % 3;
            etcd_member_sigstop(&c, stopped);
            fault++;
        } else if (fault == 3 && t >= 8500) {
            ASSERT_EQ(kill(c.pid[stopped], SIGCONT), 0);
            fault++;
        } else if (fault == 4 && t >= 10000) {
            /* A broker dies (a, then b, in turns); its clients go on
             * through the other. */
            struct broker *victim = brokers[broker_kills % 2], *other = brokers[(broker_kills + 1) % 2];
            broker_kill9(victim);
            broker_kills++;
            dead = victim;
            for (int i = 0; i < ALL; i++) {
                if (ks[i].port != victim->port)
                    continue;
                if (ks[i].busy)
                    unknown++; /* its answer will never come */
                client_close(&ks[i].c);
                lk_connect(&ks[i], other->port);
            }
            fault++;
        }
        for (int i = 0; i < ALL; i++) {
            struct lk_client *k = &ks[i];
            struct msg *m = lk_answer(k);
            if (k->busy)
                continue;
            if (m != NULL)
                ASSERT_TRUE(now_ms() - k->sent_ms < 20000);
            if (i < LOCKERS) {
                if (m != NULL && lk_unavailable(m)) {
                    unknown++;
                    k->state = LK_ACQUIRE;
                } else if (m != NULL && k->state == LK_ACQUIRE) {
                    if (payload_is(m, "+OK\r\n")) {
                        snprintf(k->token, sizeof k->token, "%s", msg_user(m, "__ts"));
                        k->state = LK_WRITE;
                        acquired++;
                    } else {
                        ASSERT_TRUE(payload_is(m, ":-1\r\n"));
                    }
                } else if (m != NULL && k->state == LK_WRITE) {
                    if (payload_is(m, "+OK\r\n")) {
                        ASSERT_TRUE(naccepted < 200000);
                        const char *v = msg_user(m, "__ts");
                        ASSERT_EQ(ss_hlc_parse((const uint8_t *)k->token, strlen(k->token),
                                               &accepted[naccepted].token), 0);
                        ASSERT_EQ(ss_hlc_parse((const uint8_t *)v, strlen(v), &accepted[naccepted].version), 0);
                        naccepted++;
                    } else {
                        if (!payload_is(m, "-ERR the request fencing token is a lower version than "
                                           "the fencing token protecting the resource\r\n"))
                            printf("  a fenced write of %s was answered %.*s (correlation data %.*s)\n", k->id, m->len,
                                   (const char *)m->payload, m->corr_len, m->corr ? m->corr : "");
                        ASSERT_TRUE(payload_is(m, "-ERR the request fencing token is a lower version than "
                                                  "the fencing token protecting the resource\r\n"));
                        refused++;
                    }
                    k->state = LK_RELEASE;
                } else if (m != NULL && k->state == LK_RELEASE) {
                    ASSERT_TRUE(payload_is(m, ":1\r\n") || payload_is(m, ":0\r\n") || payload_is(m, ":-1\r\n"));
                    k->state = LK_ACQUIRE;
                }
                char val[32];
                snprintf(val, sizeof val, "%s-%d", k->id, k->n++);
                if (k->state == LK_ACQUIRE)
                    request_send(&k->c, k->resp, lk_corr(k, 'l'), NULL, NULL, W("SET", "lock", k->id, "NX", "PX", "2000"));
                else if (k->state == LK_WRITE)
                    request_send(&k->c, k->resp, lk_corr(k, 'w'), NULL, k->token, W("SET", "protected", val));
                else
                    request_send(&k->c, k->resp, lk_corr(k, 'r'), NULL, NULL, W("VDEL", "lock", k->id));
            } else if (i == RENEWER) {
                if (m != NULL && payload_is(m, "+OK\r\n")) {
                    renewed += renewer_has_lease;
                    renewer_has_lease = true;
                } else if (m != NULL && payload_is(m, ":-1\r\n")) {
                    lapsed++; /* the lease expired (a fault outlasted it): take it again */
                    renewer_has_lease = false;
                } else if (m != NULL) {
                    ASSERT_TRUE(lk_unavailable(m));
                    unknown++;
                    renewer_has_lease = false;
                }
                if (renewer_has_lease)
                    request_send(&k->c, k->resp, lk_corr(k, 'n'), NULL, NULL, W("SET", "lease", "held", "NEX", "PX", "1500"));
                else
                    request_send(&k->c, k->resp, lk_corr(k, 'n'), NULL, NULL, W("SET", "lease", "held", "PX", "1500"));
            } else {
                /* The reader: "SET tmp<n> x PX 200", then GETs until gone. */
                char key[16];
                snprintf(key, sizeof key, "tmp%d", tmp_n);
                if (m != NULL && lk_unavailable(m)) {
                    unknown++;
                    tmp_deadline = 0;
                    tmp_n++;
                } else if (m != NULL && tmp_deadline == 0) {
                    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
                    tmp_deadline = now_ms() + 200; /* the deadline is at most this */
                    expiring++;
                } else if (m != NULL) {
                    reads++;
                    if (payload_is(m, "$1\r\nx\r\n")) {
                        /* Begun after the latest possible deadline: must
                         * have been absent. */
                        if (k->sent_ms > tmp_deadline + 1)
                            late_reads++;
                    } else {
                        ASSERT_TRUE(payload_is(m, "$-1\r\n"));
                        tmp_deadline = 0;
                        tmp_n++;
                    }
                }
                snprintf(key, sizeof key, "tmp%d", tmp_n);
                if (tmp_deadline == 0)
                    request_send(&k->c, k->resp, lk_corr(k, 't'), NULL, NULL, W("SET", key, "x", "PX", "200"));
                else
                    request_send(&k->c, k->resp, lk_corr(k, 't'), NULL, NULL, W("GET", key));
            }
            k->busy = true;
            k->sent_ms = now_ms();
        }
        usleep(200);
    }
    ASSERT_TRUE(fault == 5 && broker_kills == cycles && broker_restarts == cycles - 1);
    ASSERT_EQ(late_reads, 0);
    /* The fenced resource: in version order, tokens never went down. */
    qsort(accepted, (size_t)naccepted, sizeof accepted[0], lk_by_version);
    for (int i = 0; i + 1 < naccepted; i++)
        ASSERT_TRUE(ss_hlc_compare(&accepted[i].token, &accepted[i + 1].token) <= 0);
    ASSERT_TRUE(acquired > 0 && naccepted > 0 && expiring > 0 && renewed > 0);
    printf("  %d s, %d rounds of etcd faults, %d brokers killed, %d started again: %d locks taken, %d fenced "
           "writes accepted (tokens only increased) and %d refused; %d renewals, %d lapses; %d keys with "
           "deadlines, %d reads of them, none past the deadline; %d operations of unknown outcome\n",
           (int)(run_ms / 1000), cycles, broker_kills, broker_restarts, acquired, naccepted, refused, renewed,
           lapsed, expiring, reads, unknown);
    for (int i = 0; i < ALL; i++)
        client_close(&ks[i].c);
    broker_stop(dead == &a ? &b : &a);
    etcd_cluster_assert_same_history(&c);
    etcd_cluster_stop(&c);
}

/* Several Txns in flight at once, on disjoint keys: a flood of writes to
 * distinct keys commits in overlapping Txns, while requests on one key
 * keep their order exactly (each waits for the Txn of the one before):
 * answers with versions in the order sent, the last value read back, and
 * an observer told of every change, in order. */
TEST(cluster_txns_in_flight_on_disjoint_keys)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a;
    cluster_broker(&a, &c, "flights", "sys_interval 1\n");
    enum { FLOOD = 4, PER = 500, SEQ = 200 };
    struct client fl[FLOOD], one, ob;
    char rf[FLOOD][64], r1[64], ro[64];
    for (int i = 0; i < FLOOD; i++) {
        char id[24];
        snprintf(id, sizeof id, "flood%d", i);
        client_connect_rr(&fl[i], a.port, id, rf[i], sizeof rf[i]);
    }
    client_connect_rr(&one, a.port, "one-key", r1, sizeof r1);
    client_connect_rr(&ob, a.port, "observer", ro, sizeof ro);
    ASSERT_REPLY(request(&ob, ro, "n", NULL, NULL, W("KEYNOTIFY", "seq")), "+OK\r\n");
    /* Distinct keys alone (cached after the first round, so that no read
     * holds the queue): Txns overlap. How much depends on the machine's
     * speed; a few rounds at most show it. */
    long long txns = 0, overlapped = 0;
    int rounds = 0;
    while (overlapped == 0 && rounds < 4) {
        for (int j = 0; j < PER; j++)
            for (int i = 0; i < FLOOD; i++) {
                char key[32];
                snprintf(key, sizeof key, "e%d-%d", i, j);
                request_send(&fl[i], rf[i], "f", NULL, NULL, W("SET", key, "v"));
            }
        for (int i = 0; i < FLOOD; i++)
            ASSERT_EQ(client_drain_count(&fl[i], PER, 60000), PER);
        rounds++;
        if (rounds < 2)
            continue;
        usleep(1300000); /* the next publication of the figures */
        txns = broker_figure(a.port, "etcd/txns");
        overlapped = broker_figure(a.port, "etcd/txns_overlapped");
    }
    /* Under a sanitizer or valgrind the broker's thread is the slow part:
     * a Txn is done before the next batch closes, and none overlap. */
    const char *preload = getenv("SS_BROKER_PRELOAD");
    bool plain = (preload == NULL || preload[0] == '\0') && getenv("SS_BROKER_VALGRIND") == NULL;
    if (overlapped == 0)
        printf("  %d rounds: %lld Txns, none sent while another was in flight\n", rounds, txns);
    ASSERT_TRUE(overlapped > 0 || !plain);
    /* Then with one key written again and again among them: a request on
     * a key in flight waits, and every later one behind it (arrival order
     * is kept), so Txns overlap less. */
    for (int j = 0; j < PER; j++) {
        for (int i = 0; i < FLOOD; i++) {
            char key[32];
            snprintf(key, sizeof key, "d%d-%d", i, j);
            request_send(&fl[i], rf[i], "f", NULL, NULL, W("SET", key, "v"));
        }
        if (j < SEQ) {
            char v[16];
            snprintf(v, sizeof v, "%d", j);
            request_send(&one, r1, "s", NULL, NULL, W("SET", "seq", v));
        }
    }
    for (int i = 0; i < FLOOD; i++)
        ASSERT_EQ(client_drain_count(&fl[i], PER, 60000), PER);
    /* One key: every answer +OK, versions increasing in the order sent. */
    ss_hlc last = {0};
    for (int j = 0; j < SEQ; j++) {
        struct msg *m = client_wait(&one, 30000);
        ASSERT_TRUE(m != NULL);
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        const char *ts = msg_user(m, "__ts");
        ss_hlc v;
        ASSERT_TRUE(ts != NULL);
        ASSERT_EQ(ss_hlc_parse((const uint8_t *)ts, strlen(ts), &v), 0);
        ASSERT_TRUE(ss_hlc_compare(&last, &v) < 0);
        last = v;
    }
    ASSERT_TRUE(payload_is(request(&one, r1, "g", NULL, NULL, W("GET", "seq")), "$3\r\n199\r\n"));
    for (int j = 0; j < SEQ; j++) {
        struct msg *m = client_wait(&ob, 30000);
        ASSERT_TRUE(m != NULL);
        char note[96], v[16];
        snprintf(v, sizeof v, "%d", j);
        snprintf(note, sizeof note, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$%zu\r\n%s\r\n", strlen(v), v);
        ASSERT_TRUE(payload_is(m, note));
    }
    ASSERT_EQ(client_drain(&ob, 300), 0);
    printf("  %d rounds of %d writes to distinct keys: %lld Txns, %lld of them sent while another was in "
           "flight; then %d more among %d to one key: that key's answers and notifications in the order sent\n",
           rounds, FLOOD * PER, txns, overlapped, FLOOD * PER, SEQ);
    for (int i = 0; i < FLOOD; i++)
        client_close(&fl[i]);
    client_close(&one);
    client_close(&ob);
    broker_stop(&a);
    etcd_cluster_stop(&c);
}

/* The version an answer carries, parsed. */
static ss_hlc answer_version(const struct msg *m)
{
    ss_hlc h;
    ASSERT_TRUE(m != NULL);
    const char *ts = msg_user(m, "__ts");
    ASSERT_TRUE(ts != NULL);
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)ts, strlen(ts), &h), 0);
    return h;
}

/* A key's next version exceeds the one its deletion removed, whichever
 * broker writes it: a lock released through one broker and taken through
 * another gets a greater fencing token, even when the first one came from
 * a client's clock 30 s ahead of the brokers' (the protocol accepts up to
 * 60 s). What keeps that version is the deletion's tombstone: it stays
 * etcd_tombstone_ms, unseen by reads, and goes without a notification. */
TEST(cluster_versions_grow_across_a_deletion_on_another_broker)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    /* The broker that writes after a deletion has the lower node id: in
     * one millisecond, it would issue the lower version by itself. */
    cluster_broker(&a, &c, "vg-a", "plugin_opt_etcd_tombstone_ms 1000\n");
    cluster_broker(&b, &c, "vg-b", "plugin_opt_etcd_tombstone_ms 1000\n");
    struct client ca, cb, ob;
    char ra[64], rb[64], rob[64];
    client_connect_rr(&ca, a.port, "vg-client-a", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "vg-client-b", rb, sizeof rb);
    client_connect_rr(&ob, b.port, "vg-observer", rob, sizeof rob);
    char ahead[80];
    snprintf(ahead, sizeof ahead, "%llu:0:vg-client-b", (unsigned long long)now_ms() + 30000);

    /* First, while the clocks are not ahead: the tombstone of a key
     * deleted stays a second; GET, DEL and VDEL find nothing, and the
     * observer hears of the SET and the DELETE once each, not of the
     * tombstone's going. */
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "gone")), "+OK\r\n");
    struct msg *m = request(&ca, ra, "8", NULL, NULL, W("SET", "gone", "x"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    char ts[80], want[2][160];
    snprintf(ts, sizeof ts, "%s", msg_user(m, "__ts"));
    ASSERT_REPLY(request(&ca, ra, "9", NULL, NULL, W("DEL", "gone")), ":1\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/k/gone"), 1);
    ASSERT_REPLY(request(&cb, rb, "10", NULL, NULL, W("GET", "gone")), "$-1\r\n");
    ASSERT_REPLY(request(&cb, rb, "11", NULL, NULL, W("DEL", "gone")), ":0\r\n");
    ASSERT_REPLY(request(&cb, rb, "12", NULL, NULL, W("VDEL", "gone", "x")), ":0\r\n");
    snprintf(want[0], sizeof want[0], "SET gone x %s", ts);
    snprintf(want[1], sizeof want[1], "DELETE gone %s", ts);
    expect_notifications(&ob, want, 2);
    await_keys(&c, "race/k/gone", 0);
    ASSERT_EQ(client_drain(&ob, 300), 0);

    /* A lock: taken through b (the client's clock ahead), released,
     * taken through a. */
    m = request(&cb, rb, "1", ahead, NULL, W("SET", "lock", "holder-1", "NX", "PX", "10000"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    ss_hlc first = answer_version(m);
    ASSERT_REPLY(request(&cb, rb, "2", NULL, NULL, W("VDEL", "lock", "holder-1")), ":1\r\n");
    m = request(&ca, ra, "3", NULL, NULL, W("SET", "lock", "holder-2", "NX", "PX", "10000"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    ss_hlc second = answer_version(m);
    ASSERT_TRUE(ss_hlc_compare(&second, &first) > 0);
    /* DEL through a, SET through b, and an expiry. */
    ASSERT_REPLY(request(&ca, ra, "4", NULL, NULL, W("DEL", "lock")), ":1\r\n");
    m = request(&cb, rb, "5", NULL, NULL, W("SET", "lock", "holder-3", "PX", "200"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    ss_hlc third = answer_version(m);
    ASSERT_TRUE(ss_hlc_compare(&third, &second) > 0);
    usleep(600 * 1000); /* it expires, and is swept */
    ASSERT_REPLY(request(&ca, ra, "6", NULL, NULL, W("GET", "lock")), "$-1\r\n");
    m = request(&ca, ra, "7", NULL, NULL, W("SET", "lock", "holder-4", "NX"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    ss_hlc fourth = answer_version(m);
    ASSERT_TRUE(ss_hlc_compare(&fourth, &third) > 0);
    fprintf(stderr, "  a tombstone went after 1 s, unnoticed; after a client's stamp 30 s ahead, versions grew "
            "past each deletion (VDEL, DEL, expiry) through the other broker\n");
    three_clients_two_brokers_down(&ca, &cb, &ob, &a, &b, &c);
}
