/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_notify.c - two brokers on one cluster: observers on one
 * told of the other's changes, key and pattern watches alike, and versions
 * that keep growing across a deletion made through the other broker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/hlc.h"
#include "../test.h"
#include "cluster_util.h"
#include "etcd_cluster.h"
#include "harness.h"

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
    /* The broker set the deadline between the request and its answer:
     * the DELETE may come no earlier than the first plus 300 ms, and its
     * lateness is counted from the second. */
    uint64_t asked = now_ms();
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
    uint64_t at_a = expect_notifications(&oa, want, 7);
    uint64_t at_b = expect_notifications(&ob, want, 7);
    ASSERT_TRUE(at_a >= asked + 300 && at_b >= asked + 300);
    /* (ob's messages waited while oa's were checked: late_b bounds it.) */
    long long late_a = (long long)at_a - (long long)deadline, late_b = (long long)at_b - (long long)deadline;
    printf("  expiry DELETE reached the observers %lld ms (broker a) and at most %lld ms (broker b) "
           "after the deadline (its answer's arrival + 300 ms)\n", late_a, late_b);
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

/* On etcd a broker hears of its own changes through its watch. A
 * KEYNOTIFY ... STOP takes effect after the watch reported the changes
 * before it, however late: here the watch's answers are held at a proxy
 * while a SET, the STOP and another SET are answered; once they go on,
 * the client is told of the first SET and not of the second. */
TEST(cluster_stop_waits_for_the_watch_to_tell_earlier_changes)
{
    struct proxied_brokers t;
    proxied_brokers_up(&t, "");
    struct client w;
    char rw[64];
    client_connect_rr(&w, t.b.port, "stopper", rw, sizeof rw);
    ASSERT_REPLY(request(&w, rw, "n", NULL, NULL, W("KEYNOTIFY", "lk")), "+OK\r\n");
    char want[1][160];
    struct msg *m = request(&w, rw, "0", NULL, NULL, W("SET", "lk", "v0"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(want[0], sizeof want[0], "SET lk v0 %s", msg_user(m, "__ts"));
    expect_notifications(&w, want, 1);
    delay_proxy_lag(t.px, true);
    m = request(&w, rw, "1", NULL, NULL, W("SET", "lk", "v1"));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(want[0], sizeof want[0], "SET lk v1 %s", msg_user(m, "__ts"));
    ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("KEYNOTIFY", "lk", "STOP")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "2", NULL, NULL, W("SET", "lk", "v2")), "+OK\r\n");
    /* The watch is what is late: nothing was told yet. */
    ASSERT_EQ(client_drain(&w, 500), 0);
    delay_proxy_lag(t.px, false);
    expect_notifications(&w, want, 1);
    /* Stopped for good: a later change is not told either. */
    ASSERT_REPLY(request(&w, rw, "3", NULL, NULL, W("SET", "lk", "v3")), "+OK\r\n");
    ASSERT_EQ(client_drain(&w, 400), 0);
    client_close(&w);
    proxied_brokers_down(&t);
}
