/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
#define _GNU_SOURCE
/* test_cluster_versions.c - versions, deletions and expiry with several
 * brokers on one etcd: versions grow whoever deletes and whatever the
 * brokers' clocks, no answer past a deadline on any broker, one prompt
 * DELETE per expiry, an etcd member or the writer down, and a large
 * value's notification across a compaction. */
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

#define FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

static void show(const char *what, const ss_hlc *h)
{
    fprintf(stderr, "  %s %llu:%u:%.*s\n", what, (unsigned long long)h->wall, h->counter, (int)h->node_len,
            h->node);
}

/* A broker on c under race/, its wall clock shifted by faketime (NULL: none). */
static void vbroker(struct broker *b, const struct etcd_cluster *c, const char *name, const char *shift,
                    const char *more)
{
    broker_named(b, name);
    snprintf(b->data, sizeof b->data, "%s/data-%s", test_tmpdir(), name);
    if (shift) {
        snprintf(b->preload, sizeof b->preload, "%s", FAKETIME_LIB);
        setenv("FAKETIME", shift, 1);
        setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    }
    snprintf(b->extra, sizeof b->extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix race/\n"
             "plugin_opt_node_id %s\n%s",
             c->endpoints, name, more ? more : "");
    broker_start(b);
    unsetenv("FAKETIME");
    unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
}

/* Versions grow across a deletion through another broker, with the
 * tombstone present and after it went, the brokers' clocks 0.8 s apart
 * each way (1.6 s between the furthest two, under tombstone_ms 2000). */
TEST(cluster_versions_grow_after_tombstone_gone_clocks_apart)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b, d;
    const char *more = "plugin_opt_etcd_tombstone_ms 2000\n";
    vbroker(&a, &c, "a", NULL, more);
    vbroker(&b, &c, "b", "-0.8s", more); /* behind */
    vbroker(&d, &c, "d", "+0.8s", more); /* ahead */
    struct client ca, cb, cd;
    char ra[64], rb[64], rd[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "cb", rb, sizeof rb);
    client_connect_rr(&cd, d.port, "cd", rd, sizeof rd);
    struct client *cl[3] = {&ca, &cb, &cd};
    char *rr[3] = {ra, rb, rd};
    const char *names[3] = {"a", "b(-0.8)", "d(+0.8)"};
    int fails = 0, rounds = 0;
    enum { MAXR = 200 };
    static struct { char key[64]; int w, dl, cr, how, wait; ss_hlc first; } r[MAXR];
    int nr = 0;
    for (int w = 0; w < 3; w++)
        for (int dl = 0; dl < 3; dl++)
            for (int cr = 0; cr < 3; cr++)
                for (int how = 0; how < 3; how++)
                    for (int wait = 0; wait < 2; wait++) {
                        if (!wait && how == 2)
                            continue;
                        snprintf(r[nr].key, sizeof r[nr].key, "k%d%d%d%d%d", w, dl, cr, how, wait);
                        r[nr].w = w, r[nr].dl = dl, r[nr].cr = cr, r[nr].how = how, r[nr].wait = wait;
                        nr++;
                    }
    /* phase 1: write and delete (an expiry: PX 300) */
    for (int i = 0; i < nr; i++) {
        const char *key = r[i].key;
        int w = r[i].w, dl = r[i].dl;
        struct msg *m = request(cl[w], rr[w], "1", NULL, NULL,
                                r[i].how == 2 ? W("SET", key, "v", "PX", "300") : W("SET", key, "v", "PX", "60000"));
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        r[i].first = answer_version(m);
        if (r[i].how == 0)
            ASSERT_REPLY(request(cl[dl], rr[dl], "2", NULL, NULL, W("DEL", key)), ":1\r\n");
        else if (r[i].how == 1)
            ASSERT_REPLY(request(cl[dl], rr[dl], "2", NULL, NULL, W("VDEL", key, "v")), ":1\r\n");
        else if (dl != w) {
            /* the deleter reads it, so that it is cached there */
            (void)request(cl[dl], rr[dl], "2", NULL, NULL, W("GET", key));
        }
        if (!r[i].wait) {
            int cr = r[i].cr;
            m = request(cl[cr], rr[cr], "3", NULL, NULL, W("SET", key, "w", "NX"));
            ASSERT_TRUE(payload_is(m, "+OK\r\n"));
            ss_hlc second = answer_version(m);
            rounds++;
            if (ss_hlc_compare(&second, &r[i].first) <= 0) {
                fails++;
                fprintf(stderr, "  NOT GREATER (tombstone there): %s\n", key);
                show("removed", &r[i].first);
                show("new    ", &second);
            }
        }
    }
    /* phase 2: every tombstone gone (only the phase-1 creations' records left) */
    int left = -1;
    uint64_t t0 = now_ms();
    for (;;) {
        int n = etcd_cluster_count_keys(&c, "race/k/");
        left = n - rounds;
        if (left == 0 || now_ms() - t0 > 20000)
            break;
        usleep(100 * 1000);
    }
    fprintf(stderr, "  tombstones gone after %llu ms\n", (unsigned long long)(now_ms() - t0));
    ASSERT_EQ(left, 0);
    for (int i = 0; i < nr; i++) {
        if (!r[i].wait)
            continue;
        int cr = r[i].cr;
        struct msg *m = request(cl[cr], rr[cr], "3", NULL, NULL, W("SET", r[i].key, "w", "NX"));
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        ss_hlc second = answer_version(m);
        rounds++;
        if (ss_hlc_compare(&second, &r[i].first) <= 0) {
            fails++;
            fprintf(stderr, "  NOT GREATER: written %s, %s by %s, tombstone gone, created by %s\n", names[r[i].w],
                    r[i].how == 0 ? "DEL" : r[i].how == 1 ? "VDEL" : "expired", names[r[i].dl], names[cr]);
            show("removed", &r[i].first);
            show("new    ", &second);
        }
    }
    fprintf(stderr, "  %d rounds, %d where the new version did not exceed the removed one\n", rounds, fails);
    ASSERT_EQ(fails, 0);
    client_close(&ca);
    client_close(&cb);
    client_close(&cd);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* A GET through a broker other than the writer, right after the
 * deadline, finds nothing (the key cached there before, or not). */
TEST(cluster_get_right_after_deadline_on_other_broker)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    vbroker(&a, &c, "a", NULL, NULL);
    vbroker(&b, &c, "b", NULL, NULL);
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "cb", rb, sizeof rb);
    int bad = 0;
    for (int i = 0; i < 30; i++) {
        char key[32];
        snprintf(key, sizeof key, "g%d", i);
        struct msg *m = request(&ca, ra, "1", NULL, NULL, W("SET", key, "v", "PX", "300"));
        uint64_t acked = now_ms();
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        if (i % 2 == 0)
            assert_get(&cb, rb, key, "v"); /* cached on b */
        /* The deadline is at most acked + 300. */
        while (now_ms() < acked + 301)
            usleep(200);
        uint64_t sent = now_ms();
        m = request(&cb, rb, "2", NULL, NULL, W("GET", key));
        ASSERT_TRUE(m != NULL);
        if (!payload_is(m, "$-1\r\n")) {
            bad++;
            fprintf(stderr, "  round %d: GET at %llu ms after the latest possible deadline answered %.*s\n", i,
                    (unsigned long long)(sent - acked - 300), m->len, (const char *)m->payload);
        }
    }
    ASSERT_EQ(bad, 0);
    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* Round-robin waits over n observers: records each message's arrival. */
struct note {
    int obs;
    uint64_t at;
    char key[32];
    bool del;
};

static int collect(struct client **o, int n, struct note *out, int cap, int ms)
{
    int got = 0;
    uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end && got < cap) {
        for (int i = 0; i < n && got < cap; i++) {
            struct msg *m = client_wait(o[i], 1);
            if (m == NULL)
                continue;
            out[got].obs = i;
            out[got].at = now_ms();
            const char *k = strrchr(m->topic, '/');
            out[got].key[0] = '\0';
            for (size_t j = 0; k && k[1 + 2 * j] && k[2 + 2 * j] && j + 1 < sizeof out[got].key; j++) {
                unsigned v;
                sscanf(k + 1 + 2 * j, "%2x", &v);
                out[got].key[j] = (char)v;
                out[got].key[j + 1] = '\0';
            }
            out[got].del = m->len > 20 && memmem(m->payload, (size_t)m->len, "DELETE", 6) != NULL;
            got++;
        }
    }
    return got;
}

/* Expiry with three brokers, idle: each observer (one per broker) told
 * once per expired key, within 100 ms of its deadline. */
TEST(cluster_expiry_once_and_prompt_three_brokers)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker br[3];
    const char *nm[3] = {"a", "b", "d"};
    struct client w, ob[3];
    char rw[64], ro[3][64];
    for (int i = 0; i < 3; i++)
        vbroker(&br[i], &c, nm[i], NULL, NULL);
    client_connect_rr(&w, br[0].port, "w", rw, sizeof rw);
    struct client *o[3];
    enum { K = 8 };
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof id, "o%d", i);
        client_connect_rr(&ob[i], br[i].port, id, ro[i], sizeof ro[i]);
        o[i] = &ob[i];
        for (int k = 0; k < K; k++) {
            char key[16];
            snprintf(key, sizeof key, "e%d", k);
            ASSERT_REPLY(request(&ob[i], ro[i], "n", NULL, NULL, W("KEYNOTIFY", key)), "+OK\r\n");
        }
    }
    uint64_t deadline[K];
    for (int k = 0; k < K; k++) {
        char key[16], px[16];
        snprintf(key, sizeof key, "e%d", k);
        snprintf(px, sizeof px, "%d", 1000 + 237 * k);
        /* writer alternates over brokers a, b, d */
        struct client *wc = &w;
        uint64_t sent = now_ms();
        ASSERT_REPLY(request(wc, rw, "s", NULL, NULL, W("SET", key, "v", "PX", px)), "+OK\r\n");
        deadline[k] = sent + (uint64_t)atoi(px); /* at least this */
    }
    static struct note notes[256];
    int n = collect(o, 3, notes, 256, 1000 + 237 * K + 1500);
    int dels[3][K];
    memset(dels, 0, sizeof dels);
    uint64_t worst = 0;
    for (int i = 0; i < n; i++) {
        if (!notes[i].del)
            continue;
        int k = atoi(notes[i].key + 1);
        dels[notes[i].obs][k]++;
        uint64_t late = notes[i].at > deadline[k] ? notes[i].at - deadline[k] : 0;
        if (late > worst)
            worst = late;
        if (late > 100)
            fprintf(stderr, "  observer on %s: DELETE e%d %llu ms after its deadline\n", nm[notes[i].obs], k,
                    (unsigned long long)late);
    }
    int wrong = 0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < K; k++)
            if (dels[i][k] != 1) {
                wrong++;
                fprintf(stderr, "  observer on %s: %d DELETEs of e%d\n", nm[i], dels[i][k], k);
            }
    fprintf(stderr, "  latest DELETE: %llu ms after its deadline (upper bound)\n", (unsigned long long)worst);
    ASSERT_EQ(wrong, 0);
    ASSERT_TRUE(worst <= 150); /* sent before the deadline was set: slack */
    client_close(&w);
    for (int i = 0; i < 3; i++) {
        client_close(&ob[i]);
        broker_stop(&br[i]);
    }
    etcd_cluster_stop(&c);
}

static int64_t current_revision(const struct etcd_cluster *c)
{
    char out[8192];
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "endpoint", "status", "--write-out=fields", NULL), 0);
    const char *rev = strstr(out, "\"Revision\" : ");
    ASSERT_TRUE(rev != NULL);
    return strtoll(rev + 13, NULL, 10);
}

static void compact_now(const struct etcd_cluster *c, int64_t rev)
{
    char out[4096], r[32];
    snprintf(r, sizeof r, "%lld", (long long)rev);
    int st = etcd_cluster_ctl(c, out, sizeof out, "compact", "--physical", r, NULL);
    fprintf(stderr, "  etcdctl compact %s: %d %s", r, st, out);
    ASSERT_EQ(st, 0);
}

static void dump_log(const struct broker *b, const char *pattern)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "grep -E '%s' '%s' | sed 's/^/    [%s] /' >&2", pattern, b->log, b->name);
    (void)system(cmd);
}

static void notify_keys(struct client *o, const char *r, int n)
{
    for (int k = 0; k < n; k++) {
        char key[16];
        snprintf(key, sizeof key, "e%d", k);
        ASSERT_REPLY(request(o, r, "n", NULL, NULL, W("KEYNOTIFY", key)), "+OK\r\n");
    }
}

static bool any_v(const char *v)
{
    return v[0] != '\0';
}

/* A large value (chunks) SET through a while b is paused 1.5 s, and
 * etcd compacted to the current revision meanwhile: the watch delivers
 * the stub's event, but the chunks can no longer be read at its
 * revision. They are read as they are now (a blob's chunks never
 * change), and b's observer is told the whole value; if they are gone
 * too (the key replaced since), the loss is logged and counted. (The
 * SET went untold, and nothing said so.) */
TEST(cluster_large_value_notified_across_a_compaction)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    vbroker(&a, &c, "a", NULL, "sys_interval 1\n");
    vbroker(&b, &c, "b", NULL, "sys_interval 1\n");
    struct client ca, oa, ob;
    char ra[64], roa[64], rob[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&oa, a.port, "oa", roa, sizeof roa);
    client_connect_rr(&ob, b.port, "ob", rob, sizeof rob);
    ASSERT_REPLY(request(&oa, roa, "n", NULL, NULL, W("KEYNOTIFY", "big")), "+OK\r\n");
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "big")), "+OK\r\n");
    char *big = patterned(2u << 20, 1);
    ASSERT_EQ(kill(b.pid, SIGSTOP), 0);
    ASSERT_REPLY(request(&ca, ra, "1", NULL, NULL, W("SET", "big", big)), "+OK\r\n");

    struct msg *m = client_wait(&oa, 10000);
    ASSERT_TRUE(m != NULL); /* a's observer told */
    ASSERT_REPLY(request(&ca, ra, "2", NULL, NULL, W("SET", "other", "v")), "+OK\r\n");
    compact_now(&c, current_revision(&c));
    usleep(300 * 1000);
    ASSERT_EQ(kill(b.pid, SIGCONT), 0);
    m = client_wait(&ob, 8000);
    char v[64] = "", u[64] = "";
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/watch_lost_revisions", any_v, v, sizeof v));
    sys_figure_until(b.port, "etcd/watch_undecodable", any_v, u, sizeof u);
    fprintf(stderr, "  b's observer told: %s; b: watch_lost_revisions %s, watch_undecodable %s, "
            "log 'lost to observers' %d, watch restarts logged %d\n",
            m ? "yes" : "NO", v, u, broker_log_count(&b, "are lost to observers"),
            broker_log_count(&b, "the watch on changes was lost"));
    dump_log(&b, "compact|lost|chunk|warn|err");
    ASSERT_TRUE(m != NULL);
    ASSERT_TRUE(m->len > (2 << 20)); /* the whole value */
    /* Replaced before b reads it: the chunks are gone for good; b's
     * observer hears of the later SET, and b says what it lost. */
    ASSERT_EQ(kill(b.pid, SIGSTOP), 0);
    big[0] = 'Z';
    ASSERT_REPLY(request(&ca, ra, "3", NULL, NULL, W("SET", "big", big)), "+OK\r\n");
    ASSERT_REPLY(request(&ca, ra, "4", NULL, NULL, W("SET", "big", "small")), "+OK\r\n");
    compact_now(&c, current_revision(&c));
    usleep(300 * 1000);
    ASSERT_EQ(kill(b.pid, SIGCONT), 0);
    m = client_wait(&ob, 8000);
    ASSERT_TRUE(m != NULL);
    ASSERT_TRUE(m->len < 100); /* "small" */
    ASSERT_EQ(client_drain(&ob, 500), 0);
    dump_log(&b, "lost to observers");
    ASSERT_EQ(broker_log_count(&b, "is lost to observers on this broker"), 1);
    free(big);
    client_close(&ca);
    client_close(&oa);
    client_close(&ob);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* Deletions and expiries while one etcd member (the one the brokers use
 * first) is down, then back: versions grow, each observer told once. */
TEST(cluster_member_down_deletions_and_expiry)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    vbroker(&a, &c, "a", NULL, "plugin_opt_etcd_tombstone_ms 1000\n");
    vbroker(&b, &c, "b", NULL, "plugin_opt_etcd_tombstone_ms 1000\n");
    struct client ca, cb, oa, ob;
    char ra[64], rb[64], roa[64], rob[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "cb", rb, sizeof rb);
    client_connect_rr(&oa, a.port, "oa", roa, sizeof roa);
    client_connect_rr(&ob, b.port, "ob", rob, sizeof rob);
    notify_keys(&oa, roa, 6);
    notify_keys(&ob, rob, 6);
    /* some keys with deadlines before the stop */
    for (int k = 0; k < 6; k++) {
        char key[16], px[16];
        snprintf(key, sizeof key, "e%d", k);
        snprintf(px, sizeof px, "%d", 800 + 400 * k);
        ASSERT_REPLY(request(k % 2 ? &cb : &ca, k % 2 ? rb : ra, "s", NULL, NULL, W("SET", key, "v", "PX", px)),
                     "+OK\r\n");
    }
    etcd_member_kill9(&c, 0);
    int fails = 0;
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof key, "d%d", i);
        struct msg *m = request(&ca, ra, "1", NULL, NULL, W("SET", key, "v"));
        ASSERT_TRUE(m != NULL);
        if (!payload_is(m, "+OK\r\n")) {
            fprintf(stderr, "  SET during member down: %.*s\n", m->len, (const char *)m->payload);
            continue;
        }
        ss_hlc first = answer_version(m);
        ASSERT_REPLY(request(&ca, ra, "2", NULL, NULL, W("DEL", key)), ":1\r\n");
        if (i % 2)
            usleep(3500 * 1000); /* the tombstone gone */
        m = request(&cb, rb, "3", NULL, NULL, W("SET", key, "w", "NX"));
        ASSERT_TRUE(payload_is(m, "+OK\r\n"));
        ss_hlc second = answer_version(m);
        if (ss_hlc_compare(&second, &first) <= 0)
            fails++;
    }
    etcd_member_restart(&c, 0);
    usleep(1500 * 1000);
    int na[6] = {0}, nb[6] = {0}, other = 0;
    for (int i = 0; i < 2; i++) {
        struct client *o = i ? &ob : &oa;
        struct msg *m;
        while ((m = client_wait(o, 1500)) != NULL) {
            const char *t = strrchr(m->topic, '/');
            bool del = memmem(m->payload, (size_t)m->len, "DELETE", 6) != NULL;
            /* key "eN": hex 65 3N */
            int d = t && strlen(t) == 5 && t[1] == '6' && t[2] == '5' && t[3] == '3' ? t[4] - '0' : -1;
            if (del && d >= 0 && d < 6)
                (i ? nb : na)[d]++;
            else if (del)
                other++;
        }
    }
    int wrong = 0;
    for (int k = 0; k < 6; k++) {
        if (na[k] != 1 || nb[k] != 1) {
            wrong++;
            fprintf(stderr, "  e%d: %d DELETEs on a, %d on b\n", k, na[k], nb[k]);
        }
    }
    fprintf(stderr, "  versions not grown: %d; expiry notifications wrong: %d\n", fails, wrong);
    ASSERT_EQ(fails, 0);
    ASSERT_EQ(wrong, 0);
    client_close(&ca);
    client_close(&cb);
    client_close(&oa);
    client_close(&ob);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* The writer of keys with deadlines killed and restarted in the middle:
 * every observer (on the other brokers, and on the writer once back)
 * told of each expiry once. */
TEST(cluster_writer_restarted_mid_expiry)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b, d;
    vbroker(&a, &c, "a", NULL, NULL);
    vbroker(&b, &c, "b", NULL, NULL);
    vbroker(&d, &c, "d", NULL, NULL);
    struct client ca, ob, od, oa;
    char ra[64], rob[64], rod[64], roa[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&ob, b.port, "ob", rob, sizeof rob);
    client_connect_rr(&od, d.port, "od", rod, sizeof rod);
    notify_keys(&ob, rob, 10);
    notify_keys(&od, rod, 10);
    enum { K = 10 };
    uint64_t deadline[K];
    for (int k = 0; k < K; k++) {
        char key[16], px[16];
        snprintf(key, sizeof key, "e%d", k);
        snprintf(px, sizeof px, "%d", k < 5 ? 500 + 700 * k : 9000 + 700 * (k - 5));
        uint64_t t = now_ms();
        ASSERT_REPLY(request(&ca, ra, "s", NULL, NULL, W("SET", key, "v", "PX", px)), "+OK\r\n");
        deadline[k] = t + (uint64_t)atoi(px);
    }
    client_close(&ca);
    usleep(200 * 1000);
    broker_kill9(&a);
    uint64_t killed = now_ms();
    static struct note notes[256];
    struct client *o[3] = {&ob, &od, &oa};
    /* a is down while e0..e4 expire: b and d sweep them */
    int n = collect(o, 2, notes, 256, (int)(deadline[4] - now_ms()) + 600);
    broker_start(&a);
    uint64_t back = now_ms();
    client_connect_rr(&oa, a.port, "oa", roa, sizeof roa);
    notify_keys(&oa, roa, 10);
    uint64_t watched = now_ms();
    fprintf(stderr, "  a killed at +%llu, back at +%llu ms (after the first SET)\n",
            (unsigned long long)(killed - deadline[0] + 500), (unsigned long long)(back - deadline[0] + 500));
    n += collect(o, 3, notes + n, 256 - n, (int)(deadline[K - 1] - now_ms()) + 1500);
    int cnt[3][K];
    uint64_t late[3][K];
    memset(cnt, 0, sizeof cnt);
    memset(late, 0, sizeof late);
    for (int i = 0; i < n; i++) {
        if (!notes[i].del)
            continue;
        int k = atoi(notes[i].key + 1);
        cnt[notes[i].obs][k]++;
        late[notes[i].obs][k] = notes[i].at > deadline[k] ? notes[i].at - deadline[k] : 0;
    }
    int wrong = 0;
    const char *nm[3] = {"b", "d", "a(restarted)"};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < K; k++) {
            bool want_one = i < 2 || deadline[k] > watched + 50;
            if ((want_one && cnt[i][k] != 1) || cnt[i][k] > 1) {
                wrong++;
                fprintf(stderr, "  observer on %s: %d DELETEs of e%d\n", nm[i], cnt[i][k], k);
            }
            if (cnt[i][k])
                fprintf(stderr, "  %s e%d +%llu ms\n", nm[i], k, (unsigned long long)late[i][k]);
        }
    ASSERT_EQ(wrong, 0);
    client_close(&ob);
    client_close(&od);
    client_close(&oa);
    broker_stop(&a);
    broker_stop(&b);
    broker_stop(&d);
    etcd_cluster_stop(&c);
}
