/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* nemesis.c - the cluster under load that the nemeses fault, and its
 * checks (nemesis.h). */
#include "nemesis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"

/* A broker on host h, on the cluster (through `endpoints`), with calls
 * timing out after timeout_ms, and a client of it there. */
void nemesis_broker_on_host(struct netns_net *net, int h, struct broker *b, const char *name, const char *endpoints,
                           int timeout_ms, struct client *c, char *resp)
{
    netns_enter(net, h);
    char more[200];
    snprintf(more, sizeof more,
             "plugin_opt_node_id %s\nplugin_opt_etcd_timeout_ms %d\nplugin_opt_etcd_unavailable_ms %d\n", name,
             timeout_ms, 3 * timeout_ms);
    broker_on_etcd(b, name, endpoints, more);
    char id[32];
    snprintf(id, sizeof id, "client-%s", name);
    client_connect_rr(c, b->port, id, resp, 64);
    netns_enter(net, NETNS_HUB);
}


/* ---- the loads ------------------------------------------------------------ */

#define QUOTA "-ERR the quota has been exceeded\r\n"

static bool answer_is(const struct msg *m, const char *lit)
{
    return m->len == (int)strlen(lit) && memcmp(m->payload, lit, strlen(lit)) == 0;
}

static void writer_send(struct writer *w)
{
    ASSERT_TRUE(w->next < WRITES_MAX);
    char key[32], val[16], corr[16];
    snprintf(key, sizeof key, "w/%s/%d", w->tag, w->next);
    snprintf(val, sizeof val, "%d", w->next);
    snprintf(corr, sizeof corr, "w%d", w->next);
    w->sent_ms[w->next] = now_ms();
    request_send(w->c, w->resp, corr, NULL, NULL, W("SET", key, val));
    w->pending = w->next++;
}

/* Take the answers that came within ms. */
static void writer_poll(struct writer *w, int ms)
{
    struct msg *m = client_wait(w->c, ms);
    if (m == NULL)
        return;
    ASSERT_TRUE(m->corr != NULL && m->corr_len > 1 && m->corr[0] == 'w');
    int i = atoi(m->corr + 1);
    ASSERT_TRUE(i == w->pending); /* one in flight: its answer, once */
    const char *unavailable = "-ERR the store is unavailable\r\n";
    if (m->len == 5 && memcmp(m->payload, "+OK\r\n", 5) == 0) {
        w->acked[i] = true;
        w->ok++;
        w->last_ok_ms = w->acked_ms[i] = now_ms();
    } else if (w->full_ok && answer_is(m, QUOTA)) {
        w->full++;
    } else {
        ASSERT_MEM(m->payload, (size_t)m->len, unavailable, strlen(unavailable));
        w->refused++;
    }
    w->pending = -1;
}

/* Every acknowledged write of w is there, read through client c. */
static void writer_check(const struct writer *w, struct client *c, const char *resp)
{
    for (int i = 0; i < w->next; i++) {
        if (!w->acked[i])
            continue;
        char key[32], val[16], want[32], corr[16];
        snprintf(key, sizeof key, "w/%s/%d", w->tag, i);
        int vlen = snprintf(val, sizeof val, "%d", i);
        int n = snprintf(want, sizeof want, "$%d\r\n%s\r\n", vlen, val);
        snprintf(corr, sizeof corr, "c%d", i);
        /* "Unavailable" is a true answer while the cluster settles after
         * a heal (an old leader rejoining may start an election): asked
         * again, for 10 s at most; any other answer must be the value. */
        struct msg *m = request(c, resp, corr, NULL, NULL, W("GET", key));
        for (uint64_t t0 = now_ms(); m && answer_is(m, "-ERR the store is unavailable\r\n");) {
            ASSERT_TRUE(now_ms() - t0 < 10000);
            m = request(c, resp, corr, NULL, NULL, W("GET", key));
        }
        ASSERT_TRUE(m != NULL);
        ASSERT_MEM(m->payload, (size_t)m->len, want, (size_t)n);
    }
}


/* The writer index and i of a notification's key "w/<a|b>/<i>" (the
 * topic's last level, in hex); false for another key. */
static bool observed_key(const struct msg *m, int *w, int *i)
{
    const char *hex = strrchr(m->topic, '/');
    ASSERT_TRUE(hex != NULL);
    char key[64] = "";
    size_t n = strlen(hex + 1) / 2;
    ASSERT_TRUE(n < sizeof key);
    for (size_t k = 0; k < n; k++) {
        unsigned v;
        ASSERT_TRUE(sscanf(hex + 1 + 2 * k, "%2x", &v) == 1);
        key[k] = (char)v;
    }
    key[n] = '\0';
    if (strncmp(key, "w/a/", 4) != 0 && strncmp(key, "w/b/", 4) != 0)
        return false;
    *w = key[2] == 'b';
    *i = atoi(key + 4);
    ASSERT_TRUE(*i >= 0 && *i < WRITES_MAX);
    return true;
}

/* Take what came: each a SET of a writer's key with its value, never a
 * second time. */
static void observer_take(struct observer *o)
{
    struct msg *m;
    while ((m = client_wait(&o->c, 0)) != NULL) {
        int w = 0, i = 0;
        ASSERT_TRUE(observed_key(m, &w, &i));
        char want[64];
        int vlen = snprintf(want, sizeof want, "%d", i);
        int n = snprintf(want, sizeof want, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$%d\r\n%d\r\n", vlen,
                         i);
        ASSERT_MEM(m->payload, (size_t)m->len, want, (size_t)n);
        if (o->seen[w][i] != 0)
            fprintf(stderr, "  %s was told of w/%c/%d twice\n", o->id, "ab"[w], i);
        ASSERT_EQ(o->seen[w][i], 0);
        o->seen[w][i] = 1;
        o->notified++;
    }
}

/* Whether o may not have been told of write i of w: it was acknowledged
 * after (or within a second before) o's broker died, and sent before o
 * watched again through the broker started anew. */
static bool in_gap(const struct observer *o, const struct writer *w, int i)
{
    for (int g = 0; g < o->ngaps; g++)
        if (w->acked_ms[i] + 1000 >= o->gap[g].from && w->sent_ms[i] <= o->gap[g].to)
            return true;
    return false;
}

/* Every acknowledged write of w told to o (after a last second to come),
 * but for those of o's gaps. */
static void observer_check(struct observer *o, const struct writer *w, int wi)
{
    for (int i = 0; i < w->next; i++) {
        if (!w->acked[i] || o->seen[wi][i])
            continue;
        if (in_gap(o, w, i)) {
            o->missed++;
            continue;
        }
        fprintf(stderr, "  %s was never told of w/%c/%d\n", o->id, "ab"[wi], i);
        ASSERT_TRUE(false);
    }
}

/* Take k's answer if it came: false while it has not. */
static bool locker_take(struct locker *k, struct lock_log *log)
{
    if (k->busy) {
        struct msg *m = client_wait(&k->c, 0);
        if (m == NULL) {
            /* Every request is answered, an error at worst, well within
             * 20 s: the faults last at most 5 s, an etcd request 2 s. */
            if (now_ms() - k->sent_ms >= 20000)
                fprintf(stderr, "  %s's request %s has had no answer for 20 s\n", k->id, k->corr);
            ASSERT_TRUE(now_ms() - k->sent_ms < 20000);
            return false;
        }
        ASSERT_MEM(m->corr, (size_t)m->corr_len, k->corr, strlen(k->corr));
        k->busy = false;
        if (answer_is(m, "-ERR the store is unavailable\r\n")) {
            k->state = LK_ACQUIRE; /* it may hold the lock: it lapses */
        } else if (log->full_ok && k->state != LK_RELEASE && answer_is(m, QUOTA)) {
            log->full++; /* not taken, or not written: then released */
            k->state = k->state == LK_WRITE ? LK_RELEASE : LK_ACQUIRE;
        } else if (k->state == LK_ACQUIRE) {
            if (answer_is(m, "+OK\r\n")) {
                snprintf(k->token, sizeof k->token, "%s", msg_user(m, "__ts"));
                k->state = LK_WRITE;
                log->taken++;
            } else {
                ASSERT_TRUE(answer_is(m, ":-1\r\n")); /* held by the other */
            }
        } else if (k->state == LK_WRITE) {
            if (answer_is(m, "+OK\r\n")) {
                ASSERT_TRUE(log->naccepted < FENCED_MAX);
                struct fenced *a = &log->accepted[log->naccepted++];
                const char *v = msg_user(m, "__ts");
                ASSERT_EQ(ss_hlc_parse((const uint8_t *)k->token, strlen(k->token), &a->token), 0);
                ASSERT_EQ(ss_hlc_parse((const uint8_t *)v, strlen(v), &a->version), 0);
            } else {
                ASSERT_TRUE(answer_is(m, "-ERR the request fencing token is a lower version than the fencing "
                                         "token protecting the resource\r\n"));
                log->refused++;
            }
            k->state = LK_RELEASE;
        } else {
            ASSERT_TRUE(answer_is(m, ":1\r\n") || answer_is(m, ":0\r\n") || answer_is(m, ":-1\r\n"));
            k->state = LK_ACQUIRE;
        }
    }
    return true;
}

/* Take k's answer if it came, then send its next request. */
static void locker_step(struct locker *k, struct lock_log *log)
{
    if (!locker_take(k, log))
        return;
    snprintf(k->corr, sizeof k->corr, "%c%u", "lwr"[k->state], ++k->seq);
    char val[32];
    snprintf(val, sizeof val, "%s-%u", k->id, k->seq);
    if (k->state == LK_ACQUIRE)
        request_send(&k->c, k->resp, k->corr, NULL, NULL, W("SET", "lock", k->id, "NX", "PX", "2000"));
    else if (k->state == LK_WRITE)
        request_send(&k->c, k->resp, k->corr, NULL, k->token, W("SET", "fenced", val));
    else
        request_send(&k->c, k->resp, k->corr, NULL, NULL, W("VDEL", "lock", k->id));
    k->busy = true;
    k->sent_ms = now_ms();
}

static int fenced_by_version(const void *a, const void *b)
{
    return ss_hlc_compare(&((const struct fenced *)a)->version, &((const struct fenced *)b)->version);
}

/* In version order, the accepted fenced writes' tokens never went down. */
static void lock_log_check(struct lock_log *log)
{
    qsort(log->accepted, (size_t)log->naccepted, sizeof log->accepted[0], fenced_by_version);
    for (int i = 0; i + 1 < log->naccepted; i++)
        ASSERT_TRUE(ss_hlc_compare(&log->accepted[i].token, &log->accepted[i + 1].token) <= 0);
    ASSERT_TRUE(log->taken > 0 && log->naccepted > 0);
}


/* A process's resident memory, in KiB (VmRSS). */
static long rss_kb(pid_t pid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *fp = fopen(path, "r");
    ASSERT_TRUE(fp != NULL);
    long kb = -1;
    while (kb < 0 && fgets(line, sizeof line, fp))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    fclose(fp);
    return kb;
}

/* Broker i's clients on its host: the writer's, the locker, the
 * observer (watching), its half of the linearizability load. */
static void clients_up(struct nemesis_fixture *f, int i)
{
    struct broker *b = i ? &f->b : &f->a;
    netns_enter(&f->net, i ? HOST_B : HOST_A);
    char id[48];
    snprintf(id, sizeof id, "client-%s", b->name);
    client_connect_rr(i ? &f->cb : &f->ca, b->port, id, i ? f->rb : f->ra, 64);
    snprintf(f->lk[i].id, sizeof f->lk[i].id, "locker-%c", "ab"[i]);
    client_connect_rr(&f->lk[i].c, b->port, f->lk[i].id, f->lk[i].resp, sizeof f->lk[i].resp);
    struct observer *o = &f->obs[i];
    snprintf(o->id, sizeof o->id, "observer-%c", "ab"[i]);
    client_connect_rr(&o->c, b->port, o->id, o->resp, sizeof o->resp);
    ASSERT_REPLY(admin_call(&o->c, o->resp, "watch", W("WATCH", "w/*")), "ok\n");
    for (int k = i; k < LIN_NEMESIS_CLIENTS; k += 2)
        lin_load_connect(&f->lin, k, b->port);
    if (i == 1 && (f->flags & NEMESIS_QUOTA))
        client_connect_rr(&f->filler, b->port, "filler", f->rfill, sizeof f->rfill);
    netns_enter(&f->net, NETNS_HUB);
}

/* Broker i on its host; with NEMESIS_CLOCK_A, A's wall clock is offset
 * by what f->clock_file says (libfaketime reads it at every call; the
 * monotonic clock, its timers, stay true). */
static void broker_up(struct nemesis_fixture *f, int i)
{
    struct broker *b = i ? &f->b : &f->a;
    netns_enter(&f->net, i ? HOST_B : HOST_A);
    int port = b->port; /* 0 the first time: a free one */
    broker_named(b, i ? "b" : "a");
    b->port = port;
    snprintf(b->extra, sizeof b->extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_node_id %s\n"
             "plugin_opt_etcd_timeout_ms %d\nplugin_opt_etcd_unavailable_ms %d\n",
             f->endpoints, b->name, f->timeout_ms, 3 * f->timeout_ms);
    bool clock = i == 0 && (f->flags & NEMESIS_CLOCK_A);
    if (clock) {
        snprintf(b->preload, sizeof b->preload, "%s", NEMESIS_FAKETIME_LIB);
        setenv("FAKETIME_TIMESTAMP_FILE", f->clock_file, 1);
        setenv("FAKETIME_NO_CACHE", "1", 1);
        setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    }
    broker_start(b);
    if (clock) {
        unsetenv("FAKETIME_TIMESTAMP_FILE");
        unsetenv("FAKETIME_NO_CACHE");
        unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
    }
    netns_enter(&f->net, NETNS_HUB);
    f->dead[i] = false;
}

void nemesis_clock_a(struct nemesis_fixture *f, const char *offset)
{
    FILE *fp = fopen(f->clock_file, "w");
    ASSERT_TRUE(fp != NULL);
    fprintf(fp, "%s\n", offset);
    ASSERT_EQ(fclose(fp), 0);
}

void nemesis_up(struct nemesis_fixture *f, unsigned flags)
{
    if (!netns_available())
        test_fail(__FILE__, __LINE__, "this test makes network namespaces: run it as root, with iproute2 and nftables");
    memset(f, 0, sizeof *f);
    f->flags = flags;
    netns_up(&f->net, 5);
    const int members[3] = {0, 1, 2};
    f->timeout_ms = 500;
    if (flags & NEMESIS_PROXIES) {
        /* The members reach each other, and the brokers reach them,
         * through proxies in the hub (10.200.0.1), which forward at once
         * until told to delay: peers on 2380x, clients on 2379x. */
        netns_enter(&f->net, NETNS_HUB); /* the proxies' threads live there */
        char via[3][64];
        const char *peer_via[3];
        size_t used = 0;
        for (int i = 0; i < 3; i++) {
            f->peer_proxy[i] = delay_proxy_start("10.200.0.1", 23800 + i, f->net.addr[members[i]], 2380);
            snprintf(via[i], sizeof via[i], "http://10.200.0.1:%d", 23800 + i);
            peer_via[i] = via[i];
            f->proxy[i] = delay_proxy_start("10.200.0.1", 23790 + i, f->net.addr[members[i]], 2379);
            used += (size_t)snprintf(f->endpoints + used, sizeof f->endpoints - used, "%shttp://10.200.0.1:%d",
                                     i ? "," : "", 23790 + i);
        }
        etcd_cluster_start_on_via(&f->ec, 3, &f->net, members, peer_via);
        f->timeout_ms = 2000; /* above the delays the test makes */
    } else {
        etcd_cluster_start_on_with(&f->ec, 3, &f->net, members,
                                   flags & NEMESIS_QUOTA ? "--quota-backend-bytes=67108864" : NULL);
        snprintf(f->endpoints, sizeof f->endpoints, "%s", f->ec.endpoints);
    }
    if (flags & NEMESIS_CLOCK_A) {
        ASSERT_TRUE(access(NEMESIS_FAKETIME_LIB, R_OK) == 0); /* make test installs faketime */
        snprintf(f->clock_file, sizeof f->clock_file, "%s/clock-a", test_tmpdir());
        nemesis_clock_a(f, "+0s");
    }
    lin_load_init(&f->lin, LIN_NEMESIS_CLIENTS, 3, "r", 1000000, true);
    for (int i = 0; i < 2; i++) {
        broker_up(f, i);
        clients_up(f, i);
    }
    f->rss_kb[0] = rss_kb(f->a.pid);
    f->rss_kb[1] = rss_kb(f->b.pid);
    f->wa = (struct writer){.c = &f->ca, .resp = f->ra, .tag = "a", .pending = -1};
    f->wb = (struct writer){.c = &f->cb, .resp = f->rb, .tag = "b", .pending = -1};
}

void nemesis_broker_kill(struct nemesis_fixture *f, int i)
{
    broker_kill9(i ? &f->b : &f->a);
    f->dead[i] = true;
    struct writer *w = i ? &f->wb : &f->wa;
    if (w->pending >= 0) {
        w->lost++;
        w->pending = -1;
    }
    client_close(w->c);
    struct locker *k = &f->lk[i];
    k->busy = false;
    k->state = LK_ACQUIRE; /* it may hold the lock: it lapses */
    client_close(&k->c);
    struct observer *o = &f->obs[i];
    ASSERT_TRUE(o->ngaps < (int)(sizeof o->gap / sizeof o->gap[0]));
    o->gap[o->ngaps].from = now_ms();
    o->gap[o->ngaps].to = UINT64_MAX;
    o->ngaps++;
    client_close(&o->c);
    for (int c = i; c < LIN_NEMESIS_CLIENTS; c += 2)
        lin_load_drop(&f->lin, c);
}

void nemesis_broker_restart(struct nemesis_fixture *f, int i)
{
    broker_up(f, i);
    clients_up(f, i);
    struct observer *o = &f->obs[i];
    o->gap[o->ngaps - 1].to = now_ms();
}

/* Everyone told that "quota exceeded" is now a true answer, or no more. */
static void full_ok(struct nemesis_fixture *f, bool ok)
{
    f->wa.full_ok = f->wb.full_ok = f->locks.full_ok = f->lin.may_be_full = ok;
}

void nemesis_fill(struct nemesis_fixture *f)
{
    full_ok(f, true);
    static char big[1024 * 1024]; /* in one etcd request: 1.5 MiB */
    memset(big, 'f', sizeof big - 1);
    bool full = false;
    for (int i = 0; i < 200 && !full; i++) {
        char key[32];
        snprintf(key, sizeof key, "fill/%d", f->filled);
        struct msg *m = request(&f->filler, f->rfill, "f", NULL, NULL, W("SET", key, big));
        ASSERT_TRUE(m != NULL);
        full = answer_is(m, QUOTA);
        if (!full) {
            ASSERT_TRUE(answer_is(m, "+OK\r\n"));
            f->filled++;
        }
        nemesis_load(f, 20);
    }
    ASSERT_TRUE(full);
}

void nemesis_free(struct nemesis_fixture *f)
{
    for (; f->filled > 0; f->filled--) {
        char key[32];
        snprintf(key, sizeof key, "fill/%d", f->filled - 1);
        ASSERT_REPLY(request(&f->filler, f->rfill, "d", NULL, NULL, W("DEL", key)), ":1\r\n");
    }
    etcd_cluster_reclaim(&f->ec, 32LL << 20); /* half the quota */
    char out[4096];
    ASSERT_EQ(etcd_cluster_ctl(&f->ec, out, sizeof out, "alarm", "disarm", NULL), 0);
    /* Each broker tries again every few seconds (20 s at most here);
     * answers already on their way may still say "quota exceeded". */
    for (uint64_t t0 = now_ms(); broker_log_count(&f->a, "etcd takes writes again") < f->round ||
                                 broker_log_count(&f->b, "etcd takes writes again") < f->round;) {
        ASSERT_TRUE(now_ms() - t0 < 20000);
        nemesis_load(f, 100);
    }
    nemesis_load(f, 300);
    full_ok(f, false);
}

void nemesis_down(struct nemesis_fixture *f)
{
    if (f->flags & NEMESIS_QUOTA)
        client_close(&f->filler);
    for (int i = 0; i < 2; i++) {
        client_close(&f->lk[i].c);
        client_close(&f->obs[i].c);
    }
    client_close(&f->ca);
    client_close(&f->cb);
    broker_stop(&f->a);
    broker_stop(&f->b);
    for (int i = 0; i < 3; i++)
        if (f->proxy[i])
            delay_proxy_stop(f->proxy[i]);
    etcd_cluster_assert_same_history(&f->ec);
    etcd_cluster_stop(&f->ec);
    for (int i = 0; i < 3; i++)
        if (f->peer_proxy[i])
            delay_proxy_stop(f->peer_proxy[i]);
    netns_down(&f->net);
}

/* Both writers for ms: a write sent whenever the last one was answered. */
void nemesis_load(struct nemesis_fixture *f, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end) {
        struct writer *ws[2] = {&f->wa, &f->wb};
        for (int k = 0; k < 2; k++) {
            if (f->dead[k])
                continue;
            if (ws[k]->pending < 0)
                writer_send(ws[k]);
            writer_poll(ws[k], 20);
            locker_step(&f->lk[k], &f->locks);
            observer_take(&f->obs[k]);
        }
        lin_load_step(&f->lin);
    }
}

/* Until both writers' last writes are answered and each broker has
 * acknowledged a write since `since` (30 s at most); the time that took. */
uint64_t nemesis_recover(struct nemesis_fixture *f, uint64_t since)
{
    uint64_t t0 = now_ms();
    while (f->wa.pending >= 0 || f->wb.pending >= 0 || f->wa.last_ok_ms < since || f->wb.last_ok_ms < since) {
        ASSERT_TRUE(now_ms() - t0 < 30000);
        nemesis_load(f, 50);
    }
    /* The last ones answered, nothing in flight. */
    while (f->wa.pending >= 0 || f->wb.pending >= 0) {
        ASSERT_TRUE(now_ms() - t0 < 30000);
        writer_poll(&f->wa, 20);
        writer_poll(&f->wb, 20);
    }
    return now_ms() - t0;
}

/* One round of a nemesis: load, the fault for fault_ms under load, the
 * heal, recovery; prints what was answered during the fault. */
void nemesis_round(struct nemesis_fixture *f, const char *name, void (*fault)(struct nemesis_fixture *, bool),
                   int fault_ms)
{
    f->round++;
    nemesis_load(f, 500);
    fault(f, true);
    /* What is answered while the fault is in place (from when it is). */
    int ok0 = f->wa.ok + f->wb.ok, refused0 = f->wa.refused + f->wb.refused, full0 = f->wa.full + f->wb.full;
    nemesis_load(f, fault_ms);
    int ok = f->wa.ok + f->wb.ok - ok0, refused = f->wa.refused + f->wb.refused - refused0;
    int full = f->wa.full + f->wb.full - full0;
    uint64_t healed = now_ms();
    fault(f, false);
    nemesis_recover(f, healed);
    uint64_t took = 0; /* from the heal to both brokers' first acknowledgement since */
    const struct writer *ws[2] = {&f->wa, &f->wb};
    for (int k = 0; k < 2; k++) {
        uint64_t first = UINT64_MAX;
        for (int i = ws[k]->next - 1; i >= 0 && (!ws[k]->acked[i] || ws[k]->acked_ms[i] >= healed); i--)
            if (ws[k]->acked[i])
                first = ws[k]->acked_ms[i];
        ASSERT_TRUE(first != UINT64_MAX);
        took = first - healed > took ? first - healed : took;
    }
    char quota[48] = "";
    if (f->flags & NEMESIS_QUOTA)
        snprintf(quota, sizeof quota, ", %d quota exceeded", full);
    printf("  %s (round %d): during %d ms, %d writes acknowledged, %d unavailable%s; after the heal, both brokers "
           "acknowledged writes within %llu ms\n",
           name, f->round, fault_ms, ok, refused, quota, (unsigned long long)took);
}

/* The end of a test: every acknowledged write there, through both
 * brokers. */
void nemesis_check(struct nemesis_fixture *f)
{
    writer_check(&f->wa, &f->cb, f->rb);
    writer_check(&f->wb, &f->ca, f->ra);
    writer_check(&f->wa, &f->ca, f->ra);
    writer_check(&f->wb, &f->cb, f->rb);
    /* The lockers' last requests are answered too (locker_step fails one
     * that has waited 20 s). */
    for (int i = 0; i < 2; i++)
        while (!f->dead[i] && !locker_take(&f->lk[i], &f->locks))
            usleep(10000);
    lock_log_check(&f->locks);
    /* The observers, after a last 1.5 s for what is on its way: every
     * acknowledged write, exactly once each (observer_take fails on a
     * second one). */
    for (uint64_t t0 = now_ms(); now_ms() - t0 < 1500; usleep(20000))
        for (int i = 0; i < 2; i++)
            observer_take(&f->obs[i]);
    for (int i = 0; i < 2; i++) {
        observer_check(&f->obs[i], &f->wa, 0);
        observer_check(&f->obs[i], &f->wb, 1);
    }
    printf("  writes: %d acknowledged (all there, through both brokers; each told once to each broker's observer: "
           "%d and %d notifications), %d unavailable, %d lost in a broker's death; locks: taken %d times, %d fenced "
           "writes accepted (tokens only increased), %d refused\n",
           f->wa.ok + f->wb.ok, f->obs[0].notified, f->obs[1].notified, f->wa.refused + f->wb.refused,
           f->wa.lost + f->wb.lost, f->locks.taken, f->locks.naccepted, f->locks.refused);
    for (int i = 0; i < 2; i++)
        if (f->obs[i].ngaps)
            printf("  %s was not told of %d acknowledged writes around its broker's %d deaths (its broker was "
                   "dead, as documented)\n", f->obs[i].id, f->obs[i].missed, f->obs[i].ngaps);
    int n = f->lin.n, unknown = lin_load_finish(&f->lin, 30000);
    printf("  one history of %d requests on 3 keys through both brokers: linearizable (%d of unknown outcome)\n",
           n, unknown);
    /* Every commit whose answer was lost was settled, one way or the
     * other, or said to stay unknown (backend_etcd_commit.c); but for
     * those of a broker killed before it could settle them. A commit lost
     * just before the check may still be settling (its fence retried
     * after a call timed out): up to 15 s for it. */
    {
        int lost = 0, happened = 0, not_happened = 0, unsettled = 0;
        bool gaps = f->obs[0].ngaps + f->obs[1].ngaps != 0;
        for (uint64_t t0 = now_ms();; usleep(100000)) {
            lost = happened = not_happened = unsettled = 0;
            for (int i = 0; i < 2; i++) {
                const struct broker *br = i ? &f->b : &f->a;
                lost += broker_log_count(br, "the outcome of a commit is unknown");
                happened += broker_log_count(br, "the commit of unknown outcome happened");
                not_happened += broker_log_count(br, "the commit of unknown outcome did not happen");
                unsettled += broker_log_count(br, "the outcome of a commit stays unknown");
            }
            if (gaps || lost == happened + not_happened + unsettled || now_ms() - t0 > 15000)
                break;
        }
        ASSERT_TRUE(lost >= happened + not_happened + unsettled);
        if (!gaps)
            ASSERT_EQ(lost, happened + not_happened + unsettled);
        printf("  commits whose answer was lost: %d, settled as happened %d, as not %d, %d left unknown\n", lost,
               happened, not_happened, unsettled);
    }
    printf("  brokers' memory: a %ld KiB after start, %ld KiB at the end; b %ld, %ld\n", f->rss_kb[0],
           rss_kb(f->a.pid), f->rss_kb[1], rss_kb(f->b.pid));
}

/* Rounds of each nemesis: 1, or SS_NEMESIS_ROUNDS (make stress). */
int nemesis_rounds(void)
{
    const char *r = getenv("SS_NEMESIS_ROUNDS");
    return r && atoi(r) > 0 ? atoi(r) : 1;
}

/* A nemesis's test: the fixture, its rounds, every acknowledged write
 * checked, the members compared. */
void nemesis_test(const char *name, void (*fault)(struct nemesis_fixture *, bool), int fault_ms, unsigned flags)
{
    struct nemesis_fixture *f = malloc(sizeof *f); /* megabytes: not on the stack */
    ASSERT_TRUE(f != NULL);
    nemesis_up(f, flags);
    for (int r = 0; r < nemesis_rounds(); r++)
        nemesis_round(f, name, fault, fault_ms);
    nemesis_check(f);
    nemesis_down(f);
    free(f);
}
