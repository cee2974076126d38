/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_metrics.c - the store's figures under $SYS/broker/statestore/:
 * published at the broker's sys_interval, retained, with exact counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

#define SYS "$SYS/broker/statestore/"

struct figures {
    char name[128][48];
    char value[128][32];
    int n;
};

static void figure_set(struct figures *f, const struct msg *m)
{
    const char *name = m->topic + strlen(SYS);
    int i = 0;
    while (i < f->n && strcmp(f->name[i], name) != 0)
        i++;
    if (i == f->n) {
        ASSERT_TRUE(f->n < 128);
        f->n++;
        snprintf(f->name[i], sizeof f->name[i], "%s", name);
    }
    snprintf(f->value[i], sizeof f->value[i], "%.*s", m->len, (const char *)m->payload);
}

static const char *figure(const struct figures *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->name[i], name) == 0)
            return f->value[i];
    return NULL;
}

#define FIGURE(f, name, lit)                                                            \
    do {                                                                                \
        const char *v_ = figure((f), (name));                                           \
        if (v_ == NULL)                                                                 \
            test_fail(__FILE__, __LINE__, "figure " name " was not published");         \
        ASSERT_MEM(v_, strlen(v_), (lit), strlen(lit));                                 \
    } while (0)

/* Gather figures from s until requests/total reads `total` and the rest of
 * that publication has come (10 s at most). */
static void gather_until_total(struct client *s, struct figures *f, const char *total)
{
    uint64_t end = now_ms() + 10000;
    bool seen = false;
    while (now_ms() < end) {
        struct msg *m = client_wait(s, seen ? 300 : 1000);
        if (m == NULL) {
            if (seen)
                return;
            continue;
        }
        ASSERT_TRUE(strncmp(m->topic, SYS, strlen(SYS)) == 0);
        figure_set(f, m);
        const char *t = figure(f, "requests/total");
        seen = seen || (t && strcmp(t, total) == 0);
    }
    test_fail(__FILE__, __LINE__, "requests/total never reached the expected count");
}

TEST(metrics_published_under_sys_with_exact_counts)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "sys_interval 1\n");
    broker_start(&b);
    struct client c, w, s;
    char rc[256], rw[256];
    client_connect_rr(&c, b.port, "writer", rc, sizeof rc);
    client_connect_rr(&w, b.port, "watcher", rw, sizeof rw);
    ASSERT_REPLY(request(&w, rw, "w1", NULL, NULL, W("KEYNOTIFY", "k")), "+OK\r\n");
    ASSERT_REPLY(admin_call(&w, rw, "w2", W("WATCH", "k*")), "ok\n");
    ASSERT_REPLY(request(&c, rc, "1", NULL, NULL, W("SET", "k", "v")), "+OK\r\n");
    ASSERT_EQ(client_drain(&w, 500), 1); /* the notification, once */
    ASSERT_REPLY(request(&c, rc, "2", NULL, NULL, W("SET", "k", "x", "NX")), ":-1\r\n");
    ASSERT_REPLY(request(&c, rc, "3", NULL, NULL, W("GET", "k")), "$1\r\nv\r\n");
    ASSERT_REPLY(request(&c, rc, "4", NULL, NULL, W("GET", "absent")), "$-1\r\n");
    ASSERT_REPLY(request(&c, rc, "5", NULL, NULL, W("DEL")), "-ERR wrong number of arguments\r\n");
    ASSERT_REPLY(request(&c, rc, "6", "", NULL, W("SET", "k2", "v")), "-ERR missing timestamp\r\n");
    /* The same request twice: the second is a resend, answered again. */
    ASSERT_REPLY(request(&c, rc, "7", "1700000000000:0:t", NULL, W("DEL", "k2")), ":0\r\n");
    ASSERT_REPLY(request(&c, rc, "7", "1700000000000:0:t", NULL, W("DEL", "k2")), ":0\r\n");

    client_connect(&s, b.port, "sysreader", false);
    client_subscribe(&s, SYS "#");
    struct figures f = {.n = 0};
    gather_until_total(&s, &f, "8");
    FIGURE(&f, "backend", "lmdb");
    FIGURE(&f, "keys", "1");
    FIGURE(&f, "bytes", "66"); /* "k", "v" and 64 bytes charged per key */
    FIGURE(&f, "limits/max_keys", "0");
    FIGURE(&f, "limits/max_bytes", "1073741824");
    FIGURE(&f, "requests/keynotify/ok", "1");
    FIGURE(&f, "requests/set/ok", "1");
    FIGURE(&f, "requests/set/not_met", "1");
    FIGURE(&f, "requests/set/ts_missing", "1");
    FIGURE(&f, "requests/get/ok", "2");
    FIGURE(&f, "requests/unparsed/arity", "1");
    FIGURE(&f, "requests/del/ok", "1");
    FIGURE(&f, "requests/total", "8");
    FIGURE(&f, "resends", "1");
    FIGURE(&f, "notifications/sent", "1");
    FIGURE(&f, "notifications/dropped", "0");
    FIGURE(&f, "registrations", "1");
    FIGURE(&f, "pattern_watches", "1");
    FIGURE(&f, "commits/failed", "0");
    FIGURE(&f, "expiry/backlog", "0");
    ASSERT_TRUE(figure(&f, "requests/set/quota") == NULL); /* never happened: not published */
    ASSERT_TRUE(figure(&f, "commit/p99_us") && figure(&f, "fsync/p50_us"));
    ASSERT_TRUE(figure(&f, "journal/bytes") && figure(&f, "checkpoint/last"));
    ASSERT_TRUE(atoll(figure(&f, "checkpoint/last")) > 1700000000); /* seconds, Unix time */

    /* Retained: a client that subscribes later gets them at once. */
    struct client late;
    client_connect(&late, b.port, "late", false);
    client_subscribe(&late, SYS "keys");
    struct msg *m = client_wait(&late, 1000);
    ASSERT_TRUE(m != NULL && m->retain);
    PAYLOAD(m, "1");
    /* The watcher leaves: its registration goes, and a change to k is
     * no longer sent to anyone. */
    client_close(&w);
    client_close(&late);
    ASSERT_REPLY(request(&c, rc, "8", NULL, NULL, W("SET", "k", "w")), "+OK\r\n");
    gather_until_total(&s, &f, "9");
    FIGURE(&f, "registrations", "0");
    FIGURE(&f, "pattern_watches", "0");
    FIGURE(&f, "notifications/sent", "1");
    FIGURE(&f, "requests/set/ok", "2");
    client_close(&s);
    client_close(&c);
    broker_stop(&b);
}

TEST(metrics_off_with_sys_interval_zero)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "sys_interval 0\n");
    broker_start(&b);
    struct client s;
    client_connect(&s, b.port, "sysreader", false);
    client_subscribe(&s, SYS "#");
    ASSERT_EQ(client_drain(&s, 2500), 0);
    client_close(&s);
    broker_stop(&b);
}

/* Settings in files that include_dir pulls in count (Debian keeps its
 * configuration in /etc/mosquitto/conf.d): *.conf only, in order. */
TEST(metrics_and_limits_follow_include_dir)
{
    char dir[500], path[600];
    snprintf(dir, sizeof dir, "%s/conf.d", test_tmpdir());
    ASSERT_EQ(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/a.conf", dir);
    write_text(path, "sys_interval 0\nmessage_size_limit 5000\n");
    snprintf(path, sizeof path, "%s/b.conf", dir);
    write_text(path, "message_size_limit 1000\n"); /* after a.conf: this one wins */
    snprintf(path, sizeof path, "%s/c.txt", dir);
    write_text(path, "message_size_limit 7\n"); /* not a .conf file: ignored */
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "include_dir %s\n", dir);
    broker_start(&b);
    ASSERT_TRUE(broker_log_has(&b, " max_value_bytes=950 "));
    struct client s;
    client_connect(&s, b.port, "sysreader", false);
    client_subscribe(&s, SYS "#");
    ASSERT_EQ(client_drain(&s, 2500), 0);
    client_close(&s);
    broker_stop(&b);
}

/* On etcd: the backend's own figures, and keys and bytes counted over the
 * whole store when a limit is set; the LMDB store's figures are not
 * published. */
TEST(metrics_on_etcd)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra,
             "sys_interval 1\nplugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_max_keys 100\n",
             c.endpoints);
    broker_start(&b);
    struct client w, s;
    char rw[256];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    ASSERT_REPLY(request(&w, rw, "1", NULL, NULL, W("SET", "k", "v")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "2", NULL, NULL, W("GET", "k")), "$1\r\nv\r\n");
    client_connect(&s, b.port, "sysreader", false);
    client_subscribe(&s, SYS "#");
    struct figures f = {.n = 0};
    gather_until_total(&s, &f, "2");
    FIGURE(&f, "backend", "etcd");
    FIGURE(&f, "keys", "1");
    FIGURE(&f, "bytes", "66");
    FIGURE(&f, "limits/max_keys", "100");
    FIGURE(&f, "limits/max_bytes", "0"); /* no default on etcd */
    FIGURE(&f, "etcd/reachable", "1");
    FIGURE(&f, "etcd/conflicts", "0");
    FIGURE(&f, "etcd/unknown_outcomes", "0");
    FIGURE(&f, "etcd/fetches", "1"); /* k, once: then from the cache */
    FIGURE(&f, "etcd/cache_entries", "1");
    FIGURE(&f, "etcd/watch_events", "1"); /* the SET, seen through the watch */
    FIGURE(&f, "etcd/watch_restarts", "0");
    FIGURE(&f, "etcd/watch_lost_revisions", "0");
    FIGURE(&f, "etcd/watch_undecodable", "0");
    FIGURE(&f, "etcd/scan_reads", "0"); /* no listing yet */
    FIGURE(&f, "etcd/scan_keys_counted", "0");
    FIGURE(&f, "etcd/versions_ahead_ms", "0"); /* one broker: no other's versions */
    FIGURE(&f, "etcd/versions_ahead_node", "none");
    ASSERT_TRUE(atoll(figure(&f, "etcd/watch_revision")) >= 2);
    /* Every record read once for its deadline, at start; none has one. */
    FIGURE(&f, "etcd/deadline_reads", "1");
    FIGURE(&f, "etcd/deadline_ranges", "1"); /* a store of one key or none: one page */
    FIGURE(&f, "etcd/deadlines", "0");
    FIGURE(&f, "etcd/deadlines_missed", "0");
    FIGURE(&f, "etcd/tombstone_leases", "0"); /* nothing deleted */
    FIGURE(&f, "etcd/tombstones_leased", "0");
    FIGURE(&f, "etcd/lease_refusals", "0");
    FIGURE(&f, "requests/set/ok", "1");
    FIGURE(&f, "requests/get/ok", "1");
    ASSERT_TRUE(atoll(figure(&f, "etcd/txns")) >= 2); /* the SET's, the GET's */
    ASSERT_TRUE(strncmp(figure(&f, "etcd/endpoint"), "http://127.0.0.1:", 17) == 0);
    ASSERT_TRUE(figure(&f, "commit/p50_us") != NULL);
    ASSERT_TRUE(figure(&f, "journal/bytes") == NULL && figure(&f, "checkpoint/last") == NULL &&
                figure(&f, "expiry/backlog") == NULL);
    client_close(&w);
    client_close(&s);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}
