/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_watch.c - the etcd backend's change feed (its Watch) against a
 * real 3-member cluster: a stream cut by a stopped member resumes after
 * the last revision seen, and history compacted meanwhile is reported
 * with the revisions lost; and reads that a commit confirms by the watch
 * and the other brokers' commit markers. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/record.h"
#include "../../etcd/backend_etcd.h"
#include "../../etcd/grpc.h"
#include "../../etcd/kv.h"
#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

struct logged {
    char text[8192];
    size_t len;
};

static void log_line(void *ctx, int level, const char *msg)
{
    (void)level;
    struct logged *l = ctx;
    int n = snprintf(l->text + l->len, sizeof l->text - l->len, "%s\n", msg);
    if (n > 0 && l->len + (size_t)n < sizeof l->text)
        l->len += (size_t)n;
}

static uint64_t wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* A Txn of ops, as another process sends it; its revision. */
static int64_t send_txn(ss_grpc *g, ss_etcd_txn *t)
{
    ss_grpc_call c = {.method = SS_ETCD_TXN_METHOD, .timeout_ms = 5000};
    ASSERT_EQ(ss_etcd_txn_pack(t, &c.request), SS_OK);
    int rc;
    for (int tries = 0; (rc = ss_grpc_call_wait(g, &c)) != SS_OK && tries < 50; tries++)
        usleep(100000); /* a new leader is being elected */
    ASSERT_EQ(rc, SS_OK);
    ss_etcd_reply r;
    ASSERT_EQ(ss_etcd_txn_unpack(&c.reply, &r, NULL), SS_OK);
    ASSERT_TRUE(r.succeeded);
    int64_t rev = r.revision;
    ss_etcd_reply_free(&r);
    ss_grpc_call_clear(&c);
    ss_etcd_txn_free(t);
    return rev;
}

/* Put a record with value under <prefix>k/<key> through g, as a broker
 * named "other" would, with its commit marker <prefix>n/other when marker
 * is set: the revision it was committed at. */
static int64_t put_record_in(ss_grpc *g, const char *prefix, const char *key, const char *value, bool marker)
{
    ss_record rec = {.value = {(const uint8_t *)value, strlen(value)}};
    rec.version.wall = wall_ms();
    rec.version.node_len = 5;
    memcpy(rec.version.node, "other", 5);
    uint8_t bytes[256];
    size_t n = ss_record_size(&rec, 0, false);
    ASSERT_TRUE(n <= sizeof bytes);
    ss_record_encode(bytes, &rec, NULL, 0, false);
    char k[64], m[64];
    snprintf(k, sizeof k, "%sk/%s", prefix, key);
    snprintf(m, sizeof m, "%sn/other", prefix);
    ss_etcd_txn t = {0};
    ss_bytes kb = {(const uint8_t *)k, strlen(k)}, vb = {bytes, n};
    ss_bytes mb = {(const uint8_t *)m, strlen(m)}, id = {(const uint8_t *)"commit", 6};
    ASSERT_EQ(ss_etcd_txn_put(&t, kb, vb), SS_OK);
    if (marker)
        ASSERT_EQ(ss_etcd_txn_put(&t, mb, id), SS_OK);
    return send_txn(g, &t);
}

/* What a broker out of space sends to delete key under prefix: the
 * record and the sentinel, no commit marker. */
static int64_t delete_unmarked(ss_grpc *g, const char *prefix, const char *key)
{
    char k[64], s[64];
    snprintf(k, sizeof k, "%sk/%s", prefix, key);
    snprintf(s, sizeof s, "%ss/marked", prefix);
    ss_etcd_txn t = {0};
    ss_bytes kb = {(const uint8_t *)k, strlen(k)}, sb = {(const uint8_t *)s, strlen(s)};
    ASSERT_EQ(ss_etcd_txn_delete(&t, kb), SS_OK);
    ASSERT_EQ(ss_etcd_txn_delete(&t, sb), SS_OK);
    return send_txn(g, &t);
}

/* Put the sentinel under prefix again, as a broker does in one of its
 * commits (its own marker, which its Txns leave out, is not put here). */
static int64_t put_sentinel(ss_grpc *g, const char *prefix)
{
    char s[64];
    snprintf(s, sizeof s, "%ss/marked", prefix);
    ss_etcd_txn t = {0};
    ss_bytes sb = {(const uint8_t *)s, strlen(s)}, empty = {NULL, 0};
    ASSERT_EQ(ss_etcd_txn_put(&t, sb, empty), SS_OK);
    return send_txn(g, &t);
}

/* The mod_revision of key in etcd (0: absent). */
static int64_t key_revision(ss_grpc *g, const char *key)
{
    ss_grpc_call c = {.method = SS_ETCD_RANGE_METHOD, .timeout_ms = 5000};
    ss_bytes kb = {(const uint8_t *)key, strlen(key)};
    ASSERT_EQ(ss_etcd_range_pack(&c.request, kb, false), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_OK);
    ss_etcd_reply r;
    ss_etcd_kv kv;
    ASSERT_EQ(ss_etcd_range_unpack(&c.reply, &r, &kv), SS_OK);
    int64_t rev = kv.found ? kv.mod_revision : 0;
    ss_etcd_reply_free(&r);
    ss_grpc_call_clear(&c);
    return rev;
}

static int64_t put_record(ss_grpc *g, const char *key, const char *value)
{
    return put_record_in(g, "w/", key, value, false);
}

struct fed {
    char lines[16][64];
    int n;
};

static void on_change(void *ctx, const ss_change *c)
{
    struct fed *f = ctx;
    ASSERT_TRUE(f->n < 16);
    snprintf(f->lines[f->n++], sizeof f->lines[0], "%s %.*s %.*s", c->type == SS_CHANGE_SET ? "SET" : "DELETE",
             (int)c->key.len, (const char *)c->key.data, (int)c->value.len,
             c->value.len ? (const char *)c->value.data : "");
}

/* One of b's figures (backend.h: figures), as its owner sees them. */
struct figure {
    const char *name;
    char value[200];
};

static void on_figure(void *ctx, const char *name, const char *value)
{
    struct figure *f = ctx;
    if (strcmp(name, f->name) == 0)
        snprintf(f->value, sizeof f->value, "%s", value);
}

static const char *figure_text(ss_backend *b, const char *name, struct figure *f)
{
    f->name = name;
    f->value[0] = '\0';
    b->ops->figures(b->impl, wall_ms(), on_figure, f);
    return f->value;
}

static uint64_t figure_u64(ss_backend *b, const char *name)
{
    struct figure f;
    return strtoull(figure_text(b, name, &f), NULL, 10);
}

/* Poll b (settling as its owner does) until the feed holds want changes
 * or 15 s passed. */
static void feed_until(ss_backend *b, struct fed *f, int want)
{
    for (int i = 0; i < 1500 && f->n < want; i++) {
        b->ops->poll(b->impl, wall_ms());
        b->ops->settled(b->impl, SS_OK, 0);
        ss_backend_deliver(b, on_change, f);
        if (f->n < want)
            usleep(10000);
    }
}

TEST(etcd_watch_resumes_and_reports_compacted_history)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 3);
    struct logged logs = {.len = 0};
    ss_backend_etcd_options o = {.endpoints = ec.endpoints, .prefix = "w/", .node_id = "watcher",
                                 .call_timeout_ms = 500, .log = log_line, .log_ctx = &logs};
    ss_backend *b;
    char why[200];
    ASSERT_EQ(ss_backend_etcd_new(&o, &b, why, sizeof why), SS_OK);
    ASSERT_EQ(b->ops->start(b->impl, why, sizeof why), SS_OK); /* the claim, then the watch */
    ASSERT_TRUE(figure_u64(b, "etcd/watch_revision") > 0);
    ss_grpc *g;
    ss_grpc_options go = {.endpoints = ec.endpoints};
    ASSERT_EQ(ss_grpc_new(&go, &g, NULL, 0), SS_OK);

    /* A change made by someone else reaches the feed. */
    struct fed f = {.n = 0};
    put_record(g, "a", "1");
    feed_until(b, &f, 1);
    ASSERT_EQ(f.n, 1);
    ASSERT_STR(f.lines[0], strlen(f.lines[0]), "SET a 1");

    /* Stop the member the backend is connected to: its calls time out,
     * the watch's stream goes with the connection and resumes on another
     * member after the last revision seen: nothing is skipped. */
    struct figure endpoint;
    figure_text(b, "etcd/endpoint", &endpoint);
    int stopped = -1;
    for (int i = 0; i < ec.n; i++) {
        char url[64];
        if (strcmp(endpoint.value, etcd_member_url(&ec, i, url, sizeof url)) == 0)
            stopped = i;
    }
    ASSERT_TRUE(stopped >= 0);
    etcd_member_sigstop(&ec, stopped);
    char others[200];
    char u1[64], u2[64];
    snprintf(others, sizeof others, "%s,%s", etcd_member_url(&ec, (stopped + 1) % 3, u1, sizeof u1),
             etcd_member_url(&ec, (stopped + 2) % 3, u2, sizeof u2));
    ss_grpc *g2;
    ss_grpc_options go2 = {.endpoints = others};
    ASSERT_EQ(ss_grpc_new(&go2, &g2, NULL, 0), SS_OK);
    int64_t seen = put_record(g2, "b", "2");
    feed_until(b, &f, 2);
    ASSERT_EQ(f.n, 2);
    ASSERT_STR(f.lines[1], strlen(f.lines[1]), "SET b 2");
    ASSERT_TRUE(figure_u64(b, "etcd/watch_restarts") >= 1);
    ASSERT_EQ(figure_u64(b, "etcd/watch_lost_revisions"), 0);
    ASSERT_EQ(kill(ec.pid[stopped], SIGCONT), 0);

    /* Now cut it off again, and compact the history past what it has not
     * seen: the changes in between are lost to it, and it says which. */
    figure_text(b, "etcd/endpoint", &endpoint);
    for (int i = 0; i < ec.n; i++) {
        char url[64];
        if (strcmp(endpoint.value, etcd_member_url(&ec, i, url, sizeof url)) == 0)
            stopped = i;
    }
    etcd_member_sigstop(&ec, stopped);
    ss_grpc_free(g2);
    snprintf(others, sizeof others, "%s,%s", etcd_member_url(&ec, (stopped + 1) % 3, u1, sizeof u1),
             etcd_member_url(&ec, (stopped + 2) % 3, u2, sizeof u2));
    go2.endpoints = others;
    ASSERT_EQ(ss_grpc_new(&go2, &g2, NULL, 0), SS_OK);
    int64_t lost = put_record(g2, "c", "3");
    int64_t kept = put_record(g2, "d", "4");
    char ctl[600], rev[32];
    snprintf(ctl, sizeof ctl, "%s", getenv("SS_ETCD") && getenv("SS_ETCD")[0] ? getenv("SS_ETCD")
                                                                                 : "build/etcd/root/usr/bin/etcd");
    snprintf(ctl + strlen(ctl), sizeof ctl - strlen(ctl), "ctl");
    snprintf(rev, sizeof rev, "%lld", (long long)kept);
    char *argv[] = {ctl, "--endpoints", others, "compact", rev, NULL};
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    feed_until(b, &f, 3);
    ASSERT_EQ(f.n, 3);
    ASSERT_STR(f.lines[2], strlen(f.lines[2]), "SET d 4"); /* c's change is gone */
    /* The revisions reported lost run from after the last one the watch
     * saw (b's, or a later revision of a key outside its range, such as
     * the node id's claim) to the one before the compaction: c's is in
     * it, and the count is its length. */
    const char *said = strstr(logs.text, "changes of records in revisions ");
    ASSERT_TRUE(said != NULL);
    long long first = 0, last = 0;
    ASSERT_EQ(sscanf(said, "changes of records in revisions %lld to %lld (if any) are lost to observers on this "
                           "broker", &first, &last), 2);
    ASSERT_TRUE(first > seen && first <= lost);
    ASSERT_EQ(last, kept - 1);
    ASSERT_EQ(figure_u64(b, "etcd/watch_lost_revisions"), (uint64_t)(last - first + 1));
    printf("  a stopped member cut the watch %llu times; it resumed each time; a compaction past revision "
           "%lld was reported\n", (unsigned long long)figure_u64(b, "etcd/watch_restarts"), (long long)lost);
    ASSERT_EQ(kill(ec.pid[stopped], SIGCONT), 0);
    ss_grpc_free(g);
    ss_grpc_free(g2);
    b->ops->destroy(b);
    etcd_cluster_stop(&ec);
}

/* Poll b until its watch has seen revision rev. */
static void watch_until(ss_backend *b, int64_t rev)
{
    for (int i = 0; i < 1500 && figure_u64(b, "etcd/watch_revision") < (uint64_t)rev; i++) {
        b->ops->poll(b->impl, wall_ms());
        usleep(10000);
    }
    ASSERT_TRUE(figure_u64(b, "etcd/watch_revision") >= (uint64_t)rev);
}

/* Read key in b's open batch, polling while it is fetched: 0 or
 * SS_E_NOTFOUND, with its record and revision. */
static int read_known(ss_backend *b, const char *key, ss_record *rec, ss_revision *rev)
{
    ss_bytes k = {(const uint8_t *)key, strlen(key)};
    int rc = SS_E_PENDING;
    for (int i = 0; i < 1500 && (rc = b->ops->read(b->impl, k, rec, rev)) == SS_E_PENDING; i++) {
        usleep(10000);
        b->ops->poll(b->impl, wall_ms());
    }
    ASSERT_TRUE(rc == SS_OK || rc == SS_E_NOTFOUND);
    return rc;
}

/* Read key in b's open batch and put value there, as this broker. */
static void read_and_put(ss_backend *b, const char *key, const char *value)
{
    ss_record rec;
    ss_revision rev;
    read_known(b, key, &rec, &rev);
    ss_record next = {.value = {(const uint8_t *)value, strlen(value)}};
    next.version.wall = wall_ms();
    next.version.node_len = 6;
    memcpy(next.version.node, "reader", 6);
    ss_bytes k = {(const uint8_t *)key, strlen(key)};
    ASSERT_EQ(b->ops->put(b->impl, k, &next, rev), SS_OK);
}

/* The outcome of b's commit of the open batch, which starts at once
 * (polling b, which would take in what its watch brought, only after). */
static int commit_now(ss_backend *b)
{
    unsigned id;
    ASSERT_EQ(b->ops->commit_start(b->impl, wall_ms(), true, &id), SS_OK);
    ss_commit_outcome o = {.rc = SS_E_IO};
    bool done = false;
    for (int i = 0; i < 1500 && !done; i++) {
        b->ops->poll(b->impl, wall_ms());
        done = b->ops->commit_collect(b->impl, &o);
        if (!done)
            usleep(10000);
    }
    ASSERT_TRUE(done);
    ASSERT_EQ(o.id, id);
    if (o.rc == SS_OK)
        b->ops->settled(b->impl, SS_OK, 0);
    return o.rc;
}

/* The outcome of b's commit of the open batch, which must confirm its
 * reads by the markers. */
static int commit_solo(ss_backend *b)
{
    uint64_t solo0 = figure_u64(b, "etcd/txns_solo");
    int rc = commit_now(b);
    ASSERT_EQ(figure_u64(b, "etcd/txns_solo"), solo0 + 1);
    return rc;
}

/* A commit confirms what its batch only read by one compare on the other
 * brokers' commit markers, as of its watch's revision (solo_ms after the
 * last change of another broker it saw): a change of a key read that the
 * watch told while the key waited in the open batch makes the key
 * compared by itself (the markers show nothing: it came without one),
 * another broker's commit that the watch has not told yet fails the Txn
 * on its marker, and a deletion without a marker (out of space) fails it
 * on the sentinel, gone or put again since the watch's revision. Each
 * runs again on the key's new value. */
TEST(etcd_watch_confirms_reads_with_the_markers)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    ss_backend_etcd_options o = {.endpoints = ec.endpoints, .prefix = "s/", .node_id = "reader", .solo_ms = 1};
    ss_backend *b;
    char why[200];
    ASSERT_EQ(ss_backend_etcd_new(&o, &b, why, sizeof why), SS_OK);
    ASSERT_EQ(b->ops->start(b->impl, why, sizeof why), SS_OK);
    ss_grpc *g;
    ss_grpc_options go = {.endpoints = ec.endpoints};
    ASSERT_EQ(ss_grpc_new(&go, &g, NULL, 0), SS_OK);
    /* A first commit learns the marker; k is another broker's; y stays
     * absent, read beside k below so that the batch has a key the markers
     * confirm. */
    ss_record rec;
    ss_revision rev;
    read_and_put(b, "x", "0");
    ASSERT_EQ(read_known(b, "y", &rec, &rev), SS_E_NOTFOUND);
    ASSERT_EQ(commit_now(b), SS_OK);
    watch_until(b, put_record_in(g, "s/", "k", "1", true));

    /* 1: k read, then changed, and the watch tells it while k waits. */
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_OK);
    ASSERT_STR(rec.value.data, rec.value.len, "1");
    watch_until(b, put_record_in(g, "s/", "k", "2", false));
    ASSERT_EQ(read_known(b, "y", &rec, &rev), SS_E_NOTFOUND);
    read_and_put(b, "x", "1");
    usleep(5000); /* past solo_ms since the watch told of another broker */
    ASSERT_EQ(commit_solo(b), SS_E_CONFLICT);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_OK);
    ASSERT_STR(rec.value.data, rec.value.len, "2");
    read_and_put(b, "x", "2");
    ASSERT_EQ(commit_now(b), SS_OK); /* compared one by one after a conflict */

    /* 2: k read, then another broker commits a change of it that the
     * watch has not told when the Txn goes. */
    usleep(5000);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_OK);
    ASSERT_STR(rec.value.data, rec.value.len, "2");
    read_and_put(b, "x", "3");
    put_record_in(g, "s/", "k", "3", true);
    ASSERT_EQ(commit_solo(b), SS_E_CONFLICT);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_OK);
    ASSERT_STR(rec.value.data, rec.value.len, "3");
    read_and_put(b, "x", "4");
    ASSERT_EQ(commit_now(b), SS_OK);

    /* 3: k read, then another broker out of space deletes it: no
     * marker, but the sentinel goes with it. The failed Txn may have
     * failed on the sentinel: the next commit puts it again. */
    int64_t marked = key_revision(g, "s/s/marked");
    ASSERT_TRUE(marked > 0);
    watch_until(b, marked);
    usleep(5000);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_OK);
    ASSERT_STR(rec.value.data, rec.value.len, "3");
    read_and_put(b, "x", "5");
    delete_unmarked(g, "s/", "k");
    ASSERT_EQ(key_revision(g, "s/s/marked"), 0);
    ASSERT_EQ(commit_solo(b), SS_E_CONFLICT);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_E_NOTFOUND);
    read_and_put(b, "x", "6");
    ASSERT_EQ(commit_now(b), SS_OK);
    int64_t again = key_revision(g, "s/s/marked");
    ASSERT_TRUE(again > marked);

    /* 4: confirmed by the markers again once the watch has passed that
     * put. */
    watch_until(b, again);
    usleep(5000);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_E_NOTFOUND);
    read_and_put(b, "x", "7");
    ASSERT_EQ(commit_solo(b), SS_OK);

    /* 5: k read, then deleted without a marker, and the sentinel put
     * back before the Txn goes (as by this broker's other flight): it is
     * there, but newer than the watch's revision, and the Txn fails. */
    watch_until(b, put_record_in(g, "s/", "k", "4", true));
    usleep(5000);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_OK);
    ASSERT_STR(rec.value.data, rec.value.len, "4");
    read_and_put(b, "x", "8");
    delete_unmarked(g, "s/", "k");
    put_sentinel(g, "s/");
    ASSERT_EQ(commit_solo(b), SS_E_CONFLICT);
    ASSERT_EQ(read_known(b, "k", &rec, &rev), SS_E_NOTFOUND);
    read_and_put(b, "x", "9");
    ASSERT_EQ(commit_now(b), SS_OK);
    printf("  a change told while the key waited in the batch, a commit of another broker not told "
           "yet, a deletion without a marker (the sentinel's with it), and one hidden by the "
           "sentinel's put again: each Txn that confirmed its reads by the markers failed, and the "
           "read ran again\n");
    ss_grpc_free(g);
    b->ops->destroy(b);
    etcd_cluster_stop(&ec);
}
