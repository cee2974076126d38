/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_chunks.c - values larger than one etcd request, stored in
 * chunks (backend_etcd_blob.c, backend_etcd_upload.c): written and read
 * through two brokers, under races and quorum loss, with keys near the
 * longest, and with the puts of chunks applied late. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/json.h"
#include "../../etcd/grpc.h"
#include "../../etcd/kv.h"
#include "../test.h"
#include "cluster_util.h"
#include "delay_proxy.h"
#include "etcd_cluster.h"
#include "harness.h"

/* A delay proxy in front of c's one member; its URL in url (n bytes). */
static struct delay_proxy *proxy_to(const struct etcd_cluster *c, char *url, size_t n)
{
    int via = free_port();
    struct delay_proxy *px = delay_proxy_start("127.0.0.1", via, "127.0.0.1", c->client_port[0]);
    snprintf(url, n, "http://127.0.0.1:%d", via);
    return px;
}

/* "cmd key tail..." for each of n keys, sent at once on c: every answer
 * must be want. */
static void pipelined(struct client *c, const char *r, char **keys, int n, const char *cmd, const char *const *tail,
                      const char *want)
{
    for (int i = 0; i < n; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "%s%d", cmd, i);
        const char *argv[6] = {cmd, keys[i]};
        for (int j = 0; j < 3 && tail[j] != NULL; j++)
            argv[2 + j] = tail[j];
        request_send(c, r, corr, NULL, NULL, argv);
    }
    for (int i = 0; i < n; i++) {
        struct msg *m = client_wait(c, 20000);
        ASSERT_TRUE(m != NULL);
        ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
    }
}

/* Values larger than one etcd request (1.5 MiB by default) are stored in
 * chunks: written, read and notified whole through either broker; their
 * chunks go when the value is replaced, deleted or expires; KEYS shows
 * the length and EXPORT the whole value. */
TEST(cluster_large_values_in_chunks)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    cluster_broker(&a, &c, "large-a", NULL);
    cluster_broker(&b, &c, "large-b", NULL);
    struct client ca, cb, ob;
    char ra[64], rb[64], rob[64];
    client_connect_rr(&ca, a.port, "writer-a", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "writer-b", rb, sizeof rb);
    client_connect_rr(&ob, b.port, "observer", rob, sizeof rob);
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "big")), "+OK\r\n");
    /* 5 MiB: 4 chunks of a little under 1.5 MiB. */
    size_t n1 = (size_t)5 << 20, n2 = n1 + 12345;
    char *v1 = patterned(n1, 0), *v2 = patterned(n2, 5);
    struct msg *m = request(&ca, ra, "1", NULL, NULL, W("SET", "big", v1));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    char ts1[80], ts2[80];
    snprintf(ts1, sizeof ts1, "%s", msg_user(m, "__ts"));
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 4);
    /* Their guard went with the commit (backend_etcd_upload.c). */
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/u/"), 0);
    assert_get(&cb, rb, "big", v1);
    assert_set_note(&ob, v1, ts1);
    /* Replaced through the other broker: the old chunks go with the old
     * value, and the first broker reads the new one. */
    m = request(&cb, rb, "2", NULL, NULL, W("SET", "big", v2));
    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
    snprintf(ts2, sizeof ts2, "%s", msg_user(m, "__ts"));
    assert_set_note(&ob, v2, ts2);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 4);
    assert_get(&ca, ra, "big", v2);
    /* KEYS gives its length; EXPORT its whole value. */
    ASSERT_REPLY(request(&ca, ra, "s", NULL, NULL, W("SET", "small", "v")), "+OK\r\n");
    char port[16];
    snprintf(port, sizeof port, "%d", a.port);
    char *keys_argv[] = {(char *)cli_path(), "-p", port, "keys", NULL};
    struct run r;
    run_cmd(keys_argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    char want[160];
    snprintf(want, sizeof want, "big  size=%zu  version=%s", n2, ts2);
    ASSERT_TRUE(r.out && strstr(r.out, want) != NULL);
    run_free(&r);
    char *export_argv[] = {(char *)cli_path(), "-p", port, "export", NULL};
    run_cmd(export_argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    ss_buf b64 = SS_BUF_INIT;
    ASSERT_EQ(ss_buf_append_str(&b64, "\"value_base64\":\""), 0);
    ASSERT_EQ(ss_json_base64(&b64, (const uint8_t *)v2, n2), 0);
    ASSERT_EQ(ss_buf_append_str(&b64, "\""), 0);
    ASSERT_EQ(ss_buf_append(&b64, "", 1), 0);
    ASSERT_TRUE(r.out && strstr(r.out, (const char *)b64.data) != NULL);
    ASSERT_TRUE(strstr(r.out, "{\"key\":\"small\"") != NULL);
    ss_buf_free(&b64);
    run_free(&r);
    /* A small value in its place: no chunk is left. */
    ASSERT_REPLY(request(&ca, ra, "3", NULL, NULL, W("SET", "big", "tiny")), "+OK\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 0);
    assert_get(&cb, rb, "big", "tiny");
    /* Large again with a deadline: the expiry takes the chunks; a DEL
     * of a large value too. The deadline leaves room for the count
     * before it: a 5 MiB SET under a sanitizer can take most of 300 ms. */
    ASSERT_REPLY(request(&cb, rb, "4", NULL, NULL, W("SET", "big", v1, "PX", "2000")), "+OK\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 4);
    await_keys(&c, "race/c/", 0);
    ASSERT_REPLY(request(&ca, ra, "5", NULL, NULL, W("GET", "big")), "$-1\r\n");
    ASSERT_REPLY(request(&ca, ra, "6", NULL, NULL, W("SET", "big", v2)), "+OK\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 4);
    ASSERT_REPLY(request(&cb, rb, "7", NULL, NULL, W("DEL", "big")), ":1\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 0);
    /* A key near the longest allowed (32000 bytes), its value in chunks:
     * the requests that write them name the key only where they must
     * (the guard's), so each chunk still fits its request. */
    char *long_key = patterned(31000, 7);
    ASSERT_REPLY(request(&ca, ra, "8", NULL, NULL, W("SET", long_key, v1)), "+OK\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 4);
    assert_get(&cb, rb, long_key, v1);
    ASSERT_REPLY(request(&cb, rb, "9", NULL, NULL, W("DEL", long_key)), ":1\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 0);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/u/"), 0);
    free(long_key);
    printf("  values of %zu and %zu bytes stored as 4 chunks each, read, notified and exported whole; "
           "their chunks went with a replacement, an expiry and a DEL; the same under a key of 31000 "
           "bytes\n", n1, n2);
    free(v1);
    free(v2);
    three_clients_two_brokers_down(&ca, &cb, &ob, &a, &b, &c);
}

/* Large values written by two brokers at once, and while the cluster
 * loses its quorum: every answer is true (what was acknowledged is what
 * both brokers read; what was refused as unavailable changed nothing),
 * and only the chunks of the value stored remain. */
TEST(cluster_large_values_under_races_and_quorum_loss)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    const char *opts = "plugin_opt_etcd_timeout_ms 500\nplugin_opt_etcd_unavailable_ms 1500\n";
    struct broker a, b;
    cluster_broker(&a, &c, "chunks-a", opts);
    cluster_broker(&b, &c, "chunks-b", opts);
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, a.port, "writer-a", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "writer-b", rb, sizeof rb);
    size_t n = (size_t)4 << 20;
    char *v[4];
    for (unsigned i = 0; i < 4; i++)
        v[i] = patterned(n + i, i);
    /* Both at once: both stored, one after the other; the later is
     * what both brokers read, and its chunks alone remain. */
    char x[64], y[64];
    for (int round = 0; round < 3; round++) {
        race(&ca, ra, NULL, W("SET", "k", v[0]), &cb, rb, NULL, W("SET", "k", v[1]), x, y, sizeof x);
        ASSERT_STR(x, strlen(x), "+OK\r\n");
        ASSERT_STR(y, strlen(y), "+OK\r\n");
        char *ga = get_value(&ca, ra, "k"), *gb = get_value(&cb, rb, "k");
        ASSERT_TRUE(ga != NULL && gb != NULL && strcmp(ga, gb) == 0);
        ASSERT_TRUE(strcmp(ga, v[0]) == 0 || strcmp(ga, v[1]) == 0);
        free(ga);
        free(gb);
        await_keys(&c, "race/c/", 3);
        await_keys(&c, "race/u/", 0);
    }
    /* The quorum lost while a large value is on its way. */
    int ok = 0, refused = 0;
    for (int round = 0; round < 4; round++) {
        char *before = get_value(&cb, rb, "k");
        ASSERT_TRUE(before != NULL);
        const char *next = v[2 + round % 2];
        request_send(&ca, ra, "q", NULL, NULL, W("SET", "k", next));
        usleep((useconds_t)(10 + 20 * round) * 1000);
        int leader = etcd_cluster_leader(&c);
        ASSERT_TRUE(leader >= 0);
        etcd_member_sigstop(&c, (leader + 1) % 3);
        etcd_member_sigstop(&c, (leader + 2) % 3);
        /* While its chunks are written, the SET is answered unavailable
         * after 1.5 s; once its Txn is sent, its outcome is unknown until
         * the quorum is back, and the answer waits for that. */
        struct msg *m = client_wait(&ca, 5000);
        bool waited = m == NULL;
        kill(c.pid[(leader + 1) % 3], SIGCONT);
        kill(c.pid[(leader + 2) % 3], SIGCONT);
        if (waited)
            m = client_wait(&ca, 15000);
        ASSERT_TRUE(m != NULL);
        bool stored = payload_is(m, "+OK\r\n");
        ASSERT_TRUE(stored || payload_is(m, UNAVAILABLE));
        char *after = NULL;
        for (int i = 0; i < 100 && after == NULL; i++) {
            struct msg *g = request(&cb, rb, "g", NULL, NULL, W("GET", "k"));
            ASSERT_TRUE(g != NULL);
            if (!payload_is(g, UNAVAILABLE))
                after = get_value(&cb, rb, "k");
            else
                usleep(100 * 1000);
        }
        ASSERT_TRUE(after != NULL);
        ASSERT_TRUE(strcmp(after, stored ? next : before) == 0);
        ok += stored;
        refused += !stored;
        await_keys(&c, "race/c/", 3);
        await_keys(&c, "race/u/", 0);
        free(before);
        free(after);
    }
    etcd_cluster_assert_same_history(&c);
    printf("  3 races of two 4 MiB values: both stored, the later read everywhere; 4 quorum losses during a "
           "large SET: %d stored, %d answered unavailable, each as told; only the stored value's chunks "
           "remained\n", ok, refused);
    for (int i = 0; i < 4; i++)
        free(v[i]);
    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* Keys near the longest allowed (32000 bytes by default), written with
 * a deadline, deleted and expired 40 at a time: every Txn stays within
 * etcd's request limit (each compare, put and tombstone names the key
 * again, and a batch counts them), so every request succeeds and the
 * sweep removes the expired keys and the tombstones. */
TEST(cluster_long_keys_written_and_deleted_in_bulk)
{
    struct etcd_cluster c;
    struct broker a;
    struct client ca;
    char ra[64];
    /* Tombstones stay 3 s: long enough to be counted before the sweep
     * takes them, even on a slow machine (under ThreadSanitizer 1 s was
     * not). */
    cluster_with_a_client(&c, &a, "long-keys", "plugin_opt_etcd_tombstone_ms 3000\n", &ca, ra);
    enum { N = 40, LEN = 30000 };
    char *keys[N];
    for (int i = 0; i < N; i++) {
        keys[i] = patterned(LEN, 0);
        char tag[16];
        snprintf(tag, sizeof tag, "%03d", i);
        memcpy(keys[i], tag, 3);
    }
    pipelined(&ca, ra, keys, N, "SET", W("v", "PX", "600000"), "+OK\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/k/"), N);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/x/"), 0); /* no expiry index */
    pipelined(&ca, ra, keys, N, "DEL", W(NULL), ":1\r\n");
    pipelined(&ca, ra, keys, N, "GET", W(NULL), "$-1\r\n");
    /* The tombstones, then nothing, once they are due (3 s). */
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/k/"), N);
    await_keys(&c, "race/k/", 0);
    /* Expired by the sweep: tombstones in their place, then nothing. */
    pipelined(&ca, ra, keys, N, "SET", W("w", "PX", "300"), "+OK\r\n");
    usleep(400 * 1000);
    pipelined(&ca, ra, keys, N, "GET", W(NULL), "$-1\r\n");
    await_keys(&c, "race/k/", 0);
    ASSERT_REPLY(request(&ca, ra, "s", NULL, NULL, W("SET", keys[0], "again")), "+OK\r\n");
    assert_get(&ca, ra, keys[0], "again");
    printf("  %d keys of %d bytes set with a deadline, deleted, and set to expire, each batch at once: "
           "every answer as on one broker; the tombstones and expired keys swept\n", N, LEN);
    for (int i = 0; i < N; i++)
        free(keys[i]);
    client_close(&ca);
    broker_stop(&a);
    etcd_cluster_stop(&c);
}

/* The proxy keeps chunks' puts (by their length) and every request that
 * names a guard (the guard's own, the commit's). */
#define TAP_CHUNK (512 * 1024)
#define TAP_GUARDS "late/u/"

/* Deliver the requests the tap kept, from the from-th on, to etcd again,
 * as the Txns they were: *applied counts those etcd applied (their
 * compares held; the others failed on them, or were refused whole). */
static void deliver_again(struct delay_proxy *px, const char *endpoints, size_t from, int *kept, int *applied)
{
    ss_grpc *g;
    ss_grpc_options o = {.endpoints = endpoints};
    ASSERT_EQ(ss_grpc_new(&o, &g, NULL, 0), SS_OK);
    *kept = *applied = 0;
    uint8_t *msg;
    size_t len;
    for (size_t i = from; (len = delay_proxy_tapped(px, i, &msg)) > 0; i++) {
        ss_grpc_call c = {.method = SS_ETCD_TXN_METHOD, .timeout_ms = 5000};
        ASSERT_EQ(ss_buf_append(&c.request, msg, len), SS_OK);
        free(msg);
        ss_grpc_call_wait(g, &c);
        ss_etcd_reply r;
        if (c.rc == SS_OK && ss_etcd_txn_unpack(&c.reply, &r, NULL) == SS_OK) {
            *applied += r.succeeded;
            ss_etcd_reply_free(&r);
        } else {
            /* Refused whole: a put on a lease that is gone. */
            ASSERT_EQ(c.rc, SS_E_SERVER);
            ASSERT_TRUE(strstr(c.message, "lease not found") != NULL);
        }
        ss_grpc_call_clear(&c);
        (*kept)++;
    }
    ss_grpc_free(g);
}

/* Deliver the requests kept from the from-th on again (the tap off),
 * then check that none was applied and that the store is as it was: k
 * holds value, in 3 chunks, and no guard is left. Returns how many were
 * delivered. */
static int deliver_again_and_check(struct delay_proxy *px, const struct etcd_cluster *c, struct client *cl,
                                   const char *r, size_t from, const char *value)
{
    int kept, applied;
    delay_proxy_tap(px, 0, NULL);
    deliver_again(px, c->endpoints, from, &kept, &applied);
    assert_get(cl, r, "k", value);
    ASSERT_EQ(etcd_cluster_count_keys(c, "late/c/"), 3);
    ASSERT_EQ(etcd_cluster_count_keys(c, "late/u/"), 0);
    ASSERT_EQ(applied, 0);
    return kept;
}

/* Wait (10 s at most) until the tap has kept a chunk's put (a message
 * of 512 KiB or more) from its from-th message on, the writer's client
 * sending what its SET of MiBs left unsent meanwhile. */
static void await_tapped_chunk(struct delay_proxy *px, size_t from, struct client *writer)
{
    for (int k = 0; k < 10000; k++) {
        uint8_t *msg;
        size_t len;
        for (size_t i = from; (len = delay_proxy_tapped(px, i, &msg)) > 0; i++) {
            free(msg);
            if (len >= TAP_CHUNK)
                return;
        }
        client_pump(writer, 1);
    }
    ASSERT_TRUE(!"no chunk's put in 10 s");
}

/* Broker A reaches etcd through a proxy that keeps a copy of the
 * requests it forwards for large values: the puts of chunks, and those
 * that name a guard (its put, the commit). Those copies are delivered
 * again, late, as etcd may apply a request that timed out (a member that
 * was frozen with it in its socket handles it when it runs again):
 *   - after the value was stored, then replaced (its chunks deleted);
 *   - after a SET whose Txn failed on another broker's write meanwhile,
 *     so that its chunks were deleted and it ran again with new ones;
 *   - after a SET answered "unavailable" while its chunks were written
 *     (what A sent was held past etcd_unavailable_ms), the record and
 *     the commit marker unchanged: the lease's revocation alone stops
 *     a late guard or chunk.
 * No chunk may come back, nor a guard: the store holds the chunks of the
 * value it holds, and nothing else. */
TEST(cluster_chunks_put_late_leave_nothing_behind)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    char tapped[64];
    struct delay_proxy *px = proxy_to(&c, tapped, sizeof tapped);
    struct broker a, b;
    broker_on_etcd(&a, "a", tapped,
                   "plugin_opt_node_id a\nplugin_opt_etcd_prefix late/\n"
                   "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 3000\n");
    broker_on_etcd(&b, "b", c.endpoints, "plugin_opt_node_id b\nplugin_opt_etcd_prefix late/\n");
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, a.port, "writer-a", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "writer-b", rb, sizeof rb);
    size_t n = (size_t)4 << 20;
    char *v[5];
    for (unsigned i = 0; i < 5; i++)
        v[i] = patterned(n + i, i);
    /* Stored, then replaced. */
    delay_proxy_tap(px, TAP_CHUNK, TAP_GUARDS);
    ASSERT_REPLY(request(&ca, ra, "1", NULL, NULL, W("SET", "k", v[0])), "+OK\r\n");
    delay_proxy_tap(px, 0, NULL);
    ASSERT_REPLY(request(&ca, ra, "2", NULL, NULL, W("SET", "k", v[1])), "+OK\r\n");
    await_keys(&c, "late/c/", 3);
    int after_replacement = deliver_again_and_check(px, &c, &cb, rb, 0, v[1]);
    ASSERT_TRUE(after_replacement >= 3);
    size_t seen = (size_t)after_replacement;
    /* Not stored: once A's first chunk is on its way, what A sends etcd
     * is held while B's SET lands; released, A writes its other chunks
     * (the guard is there), its Txn fails on B's write, and A's SET runs
     * again with chunks of a new blob. */
    delay_proxy_tap(px, TAP_CHUNK, TAP_GUARDS);
    request_send(&ca, ra, "3", NULL, NULL, W("SET", "k", v[2]));
    await_tapped_chunk(px, seen, &ca);
    delay_proxy_hold(px, true);
    ASSERT_REPLY(request(&cb, rb, "4", NULL, NULL, W("SET", "k", v[3])), "+OK\r\n");
    delay_proxy_hold(px, false);
    ASSERT_REPLY(client_wait(&ca, 20000), "+OK\r\n");
    await_keys(&c, "late/c/", 3);
    int after_conflict = deliver_again_and_check(px, &c, &cb, rb, seen, v[2]);
    /* the stored blob's 3 chunks, and 1 to 3 of the one not stored */
    ASSERT_TRUE(after_conflict >= 4);
    /* Unavailable: held from A's first chunk on, until A gives up. */
    seen += (size_t)after_conflict;
    delay_proxy_tap(px, TAP_CHUNK, TAP_GUARDS);
    request_send(&ca, ra, "5", NULL, NULL, W("SET", "k", v[4]));
    await_tapped_chunk(px, seen, &ca);
    delay_proxy_hold(px, true);
    ASSERT_REPLY(client_wait(&ca, 20000), UNAVAILABLE);
    delay_proxy_hold(px, false);
    await_keys(&c, "late/c/", 3);
    await_keys(&c, "late/u/", 0);
    int after_unavailable = deliver_again_and_check(px, &c, &cb, rb, seen, v[2]);
    ASSERT_TRUE(after_unavailable >= 1);
    printf("  requests for chunks delivered again, late: %d of a value stored then replaced, %d of a SET "
           "run again after a conflict, %d of a SET answered unavailable: none applied, no chunk came "
           "back, no guard left\n", after_replacement, after_conflict, after_unavailable);
    delay_proxy_stop(px);
    for (unsigned i = 0; i < 5; i++)
        free(v[i]);
    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* etcd limits a Txn's compares as it limits its operations
 * (--max-txn-ops), and a value in chunks adds a compare: its guard. A
 * broker alone on its prefix (its reads confirmed by the markers, which
 * brings the most compares beside the keys'), with a quota (one more: the
 * usage counter's), against an etcd of --max-txn-ops=16: a read, seven
 * SETs and a SET in chunks reach the open batch at once, while the Txn
 * before them is held on its way. Counted without the guard, the nine
 * keys would go in one Txn of 17 compares, which etcd refuses whole; the
 * large SET waits for the next Txn instead, and every request succeeds. */
TEST(cluster_chunks_guard_counts_among_a_txns_compares)
{
    struct etcd_cluster c;
    etcd_cluster_start_with(&c, 1, "--max-txn-ops=16");
    int via = free_port();
    struct delay_proxy *px = delay_proxy_start("127.0.0.1", via, "127.0.0.1", c.client_port[0]);
    char held[64];
    snprintf(held, sizeof held, "http://127.0.0.1:%d", via);
    struct broker a;
    broker_on_etcd(&a, "a", held,
                   "plugin_opt_node_id a\nplugin_opt_etcd_prefix cmp/\nplugin_opt_etcd_max_txn_ops 16\n"
                   "plugin_opt_max_keys 100000\n");
    struct client ca;
    char ra[64];
    client_connect_rr(&ca, a.port, "writer", ra, sizeof ra);
    /* Every key known to the broker first: no read of etcd is needed
     * while the link is held. */
    static const char *const keys[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "big", "blk"};
    for (int i = 0; i < 10; i++)
        ASSERT_REPLY(request(&ca, ra, "w", NULL, NULL, W("SET", keys[i], "before")), "+OK\r\n");
    usleep(1200 * 1000); /* past etcd_solo_ms: alone on the prefix */
    size_t n = (size_t)2 << 20;
    char *v = patterned(n, 7);
    delay_proxy_hold(px, true);
    request_send(&ca, ra, "blk", NULL, NULL, W("SET", "blk", "held"));
    usleep(200 * 1000); /* its Txn is on its way, held */
    request_send(&ca, ra, "get", NULL, NULL, W("GET", "r0"));
    for (int i = 1; i < 8; i++)
        request_send(&ca, ra, keys[i], NULL, NULL, W("SET", keys[i], "after"));
    request_send(&ca, ra, "big", NULL, NULL, W("SET", "big", v));
    for (uint64_t until = now_ms() + 300; now_ms() < until;)
        client_pump(&ca, 10); /* all of them in the open batch (2 MiB sent whole) */
    delay_proxy_hold(px, false);
    for (int i = 0; i < 10; i++) {
        struct msg *m = client_wait(&ca, 20000);
        ASSERT_TRUE(m != NULL);
        if (m->corr_len == 3 && memcmp(m->corr, "get", 3) == 0)
            PAYLOAD(m, "$6\r\nbefore\r\n");
        else
            PAYLOAD(m, "+OK\r\n");
    }
    assert_get(&ca, ra, "big", v);
    assert_get(&ca, ra, "r7", "after");
    assert_get(&ca, ra, "blk", "held");
    free(v);
    delay_proxy_stop(px);
    client_close(&ca);
    broker_stop(&a);
    etcd_cluster_stop(&c);
}

/* GET key through c answers the n bytes of v, whole. */
static void get_is_whole(struct client *c, const char *r, const char *key, const char *v, size_t n)
{
    struct msg *m = request(c, r, "get", NULL, NULL, W("GET", key));
    ASSERT_TRUE(m != NULL);
    char head[32];
    int hl = snprintf(head, sizeof head, "$%zu\r\n", n);
    ASSERT_EQ(m->len, hl + (int)n + 2);
    ASSERT_TRUE(memcmp(m->payload, head, (size_t)hl) == 0 && memcmp(m->payload + hl, v, n) == 0);
}

/* A large value's commit whose outcome stays unknown keeps its chunks.
 * Broker A's commit of a value in chunks reaches etcd and applies, and
 * its answer is lost (a proxy drops all A hears from then on, then holds
 * all it sends); A's claim on its node id lapses, and another broker started with the same node id
 * (a mistake CLUSTER.md warns of) takes it and commits, which changes the
 * commit marker. When A hears again, the marker says nothing of its lost
 * commit: the SET is answered "unavailable" (it may have taken effect).
 * It did: the value is stored, and its chunks must still be there (they
 * were deleted as those of a value not stored, and every read of the key
 * failed). */
TEST(cluster_chunks_kept_when_the_outcome_stays_unknown)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    char tapped[64];
    struct delay_proxy *px = proxy_to(&c, tapped, sizeof tapped);
    struct broker a, a2;
    broker_on_etcd(&a, "a", tapped,
                   "plugin_opt_node_id a\nplugin_opt_etcd_prefix lost/\n"
                   "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 60000\n");
    struct client ca, c2;
    char ra[64], r2[64];
    client_connect_rr(&ca, a.port, "writer-a", ra, sizeof ra);
    ASSERT_REPLY(request(&ca, ra, "0", NULL, NULL, W("SET", "small", "v")), "+OK\r\n");
    size_t n = (size_t)4 << 20;
    char *v = patterned(n, 7);
    /* The guard's Txn and the commit's both name the record and the
     * marker (n/<node id>); the chunks (c/...) go between them, and the
     * guard's Txn, sent again after a timeout (slow under the
     * sanitizers), comes before them. */
    delay_proxy_mute_after(px, "lost/c/", "lost/k/big", "lost/n/a");
    request_send(&ca, ra, "1", NULL, NULL, W("SET", "big", v));
    /* Its chunks, then its commit (slow under the sanitizers): 30 s, the
     * client sending the rest of its 4 MiB meanwhile. */
    for (int i = 0; i < 600 && etcd_cluster_count_keys(&c, "lost/k/big") != 1; i++)
        client_pump(&ca, 50);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "lost/k/big"), 1);
    /* Nothing of A reaches etcd either: its claim lapses (3 s), and the
     * other broker can take the node id. */
    delay_proxy_hold(px, true);
    usleep(4500 * 1000);
    broker_on_etcd(&a2, "a2", c.endpoints, "plugin_opt_node_id a\nplugin_opt_etcd_prefix lost/\n");
    client_connect_rr(&c2, a2.port, "writer-a2", r2, sizeof r2);
    request_send(&c2, r2, "2", NULL, NULL, W("SET", "other", "w"));
    ASSERT_REPLY(client_wait(&c2, 30000), "+OK\r\n"); /* once A's claim lapsed */
    delay_proxy_mute_after(px, NULL, NULL, NULL);
    delay_proxy_hold(px, false);
    ASSERT_REPLY(client_wait(&ca, 30000), UNAVAILABLE);
    ASSERT_TRUE(broker_log_has(&a, "was changed by another process"));
    ASSERT_TRUE(broker_log_has(&a, "of a value whose commit has an unknown outcome are kept"));
    /* Time for a deletion of the chunks (the lease's revocation, then
     * theirs) to be done, were there one: they stay. */
    usleep(1500 * 1000);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "lost/c/"), 3);
    get_is_whole(&c2, r2, "big", v, n);
    free(v);
    client_close(&ca);
    client_close(&c2);
    broker_stop(&a);
    broker_stop(&a2);
    delay_proxy_stop(px);
    etcd_cluster_stop(&c);
}

/* The blob id of the first chunk under prefix ("<prefix>c/<blob id>/..."),
 * into blob (33 bytes); fails the test if there is none. */
static void first_blob(const struct etcd_cluster *c, const char *prefix, char *blob)
{
    char chunks[64], out[4096];
    snprintf(chunks, sizeof chunks, "%sc/", prefix);
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "get", "--prefix", "--keys-only", chunks, NULL), 0);
    const char *at = strstr(out, chunks);
    ASSERT_TRUE(at != NULL && strlen(at + strlen(chunks)) > 32 && at[strlen(chunks) + 32] == '/');
    memcpy(blob, at + strlen(chunks), 32);
    blob[32] = '\0';
}

/* A broker stopped while a large value's chunks are being written, or
 * while the commit that stores it is under way, names the blob in its
 * log, as it names the chunks it had still to delete: nothing deletes
 * those chunks if the value was not stored, and CLUSTER.md's recipe
 * finds them by that name. (They went unnamed.) etcd's answers are lost
 * from the first chunk's put on, then from the commit on; the broker
 * stops meanwhile. */
TEST(cluster_stop_names_the_chunks_of_writes_under_way)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    char tapped[64];
    struct delay_proxy *px = proxy_to(&c, tapped, sizeof tapped);
    size_t n = (size_t)4 << 20;
    char *v = patterned(n, 3);
    const char *prefix[2] = {"up/", "cm/"};
    for (int round = 0; round < 2; round++) {
        char more[300], key[64], blob[33], said[200];
        snprintf(more, sizeof more,
                 "plugin_opt_node_id stop-%d\nplugin_opt_etcd_prefix %s\n"
                 "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 60000\n", round, prefix[round]);
        struct broker b;
        broker_on_etcd(&b, round ? "committing" : "uploading", tapped, more);
        struct client cl;
        char r[64];
        client_connect_rr(&cl, b.port, "writer", r, sizeof r);
        ASSERT_REPLY(request(&cl, r, "0", NULL, NULL, W("SET", "small", "v")), "+OK\r\n");
        if (round == 0) {
            /* A chunk's Txn names its guard and itself. */
            char guard[64], chunk[64];
            snprintf(guard, sizeof guard, "%su/", prefix[round]);
            snprintf(chunk, sizeof chunk, "%sc/", prefix[round]);
            delay_proxy_mute_after(px, NULL, guard, chunk);
            snprintf(key, sizeof key, "%sc/", prefix[round]);
        } else {
            /* The commit names the record and the marker, after the
             * chunks (the guard's Txn names them too, before). */
            char chunk[64], rec[64], marker[64];
            snprintf(chunk, sizeof chunk, "%sc/", prefix[round]);
            snprintf(rec, sizeof rec, "%sk/big", prefix[round]);
            snprintf(marker, sizeof marker, "%sn/stop-1", prefix[round]);
            delay_proxy_mute_after(px, chunk, rec, marker);
            snprintf(key, sizeof key, "%sk/big", prefix[round]);
        }
        request_send(&cl, r, "1", NULL, NULL, W("SET", "big", v));
        for (int i = 0; i < 600 && etcd_cluster_count_keys(&c, key) < 1; i++)
            client_pump(&cl, 50);
        ASSERT_TRUE(etcd_cluster_count_keys(&c, key) >= 1);
        first_blob(&c, prefix[round], blob);
        client_close(&cl);
        broker_stop(&b);
        delay_proxy_mute_after(px, NULL, NULL, NULL);
        if (round == 0)
            snprintf(said, sizeof said, "stopped before the chunks c/%s/ of a value that was not stored were "
                     "deleted: they are left behind (see CLUSTER.md)", blob);
        else
            snprintf(said, sizeof said, "stopped while the commit of a value in chunks c/%s/ was under way: "
                     "unless it was stored, they are left behind (see CLUSTER.md)", blob);
        ASSERT_TRUE(broker_log_has(&b, said));
    }
    free(v);
    delay_proxy_stop(px);
    etcd_cluster_stop(&c);
}

/* A large value written after another broker, started with this one's
 * node id while this one stalled past its claim (a mistake CLUSTER.md
 * warns of), wrote and left: that broker moved the commit marker behind
 * this one's back. The guard's Txn compares the marker; failed, it reads
 * the marker as it is, as the commit's failure branch does. (It did not:
 * every guard failed on the same stale revision, and the SET was run
 * again without end, about 230 times a second, never answered.) */
TEST(cluster_large_value_after_a_takeover_of_the_node_id)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct broker a, a2;
    broker_on_etcd(&a, "a", c.endpoints,
                   "plugin_opt_node_id a\nplugin_opt_etcd_prefix tk/\nplugin_opt_etcd_max_request_bytes 65536\n");
    struct client ca, c2;
    char ra[64], r2[64];
    client_connect_rr(&ca, a.port, "writer-a", ra, sizeof ra);
    ASSERT_REPLY(request(&ca, ra, "0", NULL, NULL, W("SET", "small", "v")), "+OK\r\n");
    /* A stalls past its claim's lease (3 s); a2 takes the node id,
     * writes (its commit moves the marker n/a) and stops. */
    ASSERT_EQ(kill(a.pid, SIGSTOP), 0);
    usleep(4500 * 1000);
    broker_on_etcd(&a2, "a2", c.endpoints, "plugin_opt_node_id a\nplugin_opt_etcd_prefix tk/\n");
    client_connect_rr(&c2, a2.port, "writer-a2", r2, sizeof r2);
    ASSERT_REPLY(request(&c2, r2, "1", NULL, NULL, W("SET", "other", "w")), "+OK\r\n");
    client_close(&c2);
    broker_stop(&a2);
    ASSERT_EQ(kill(a.pid, SIGCONT), 0);
    for (int i = 0; i < 200 && !broker_log_has(&a, "node id a is this broker's again"); i++)
        usleep(50 * 1000);
    ASSERT_TRUE(broker_log_has(&a, "node id a is this broker's again"));
    size_t n = 200000;
    char *v = patterned(n, 3);
    request_send(&ca, ra, "2", NULL, NULL, W("SET", "big", v));
    ASSERT_REPLY(client_wait(&ca, 20000), "+OK\r\n");
    get_is_whole(&ca, ra, "big", v, n);
    free(v);
    client_close(&ca);
    broker_stop(&a);
    etcd_cluster_stop(&c);
}
