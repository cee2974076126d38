/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* etcd_txn.c - etcd's own capacity for the Txns the state store sends:
 * the baseline of the benchmarks on etcd.
 *
 *   etcd_txn ENDPOINTS KEYS_PER_TXN SET_PERCENT IN_FLIGHT SECONDS [DEL_PERCENT PX_MS]
 *
 * Each of IN_FLIGHT threads sends one Txn after another through one gRPC
 * channel (the plugin's own client code, etcd/grpc.h), on keys of its own.
 * A Txn has the shape of one batch of the plugin: a compare on the
 * revision of each of KEYS_PER_TXN keys (16-byte keys, as read last), a
 * put of an 84-byte value (a 64-byte value and its record header) for
 * SET_PERCENT of them, and a put of a marker key when it wrote anything,
 * a Range of it when not.
 *
 * With DEL_PERCENT and PX_MS (the mixes of locks, leases and deletions),
 * the Txns are those a careful etcd application would send for the same
 * operations, KEYS_PER_TXN of them at once: no compares (etcd applies a
 * Txn at once), for each key a put (SET_PERCENT), a delete (DEL_PERCENT)
 * or a Range (the rest); with PX_MS > 0 every put is attached to a lease
 * that ends PX_MS later, rounded up to etcd's whole seconds (a lease per
 * thread and second, so that keys expire through etcd itself).
 *
 * Each key's operation is drawn at random, as the load generator draws
 * each request's: a Txn holds puts and reads mixed as a batch of the
 * plugin does. (Drawn in turn, 50 puts then 50 reads, two Txns in five
 * were read-only and needed no Raft round: 40 proposals per 1000 keys
 * in place of 67, a baseline cheaper than any application can be that
 * takes requests in the order they come.)
 *
 * With ETCD_TXN_READS_APART=1 (the mixes only), a Txn's Ranges go in a
 * read-only Txn of their own, sent after the one that writes: what an
 * application that keeps reads out of Raft would send.
 *
 * ETCD_TXN_VALUE_BYTES sets the size of every value put (1 to 65536): by
 * default 84 for the plugin's shape and 224 (a 200-byte value and what a
 * record adds to it) for an application's. A baseline for a load of
 * 200-byte values puts values of that size, whichever its shape.
 *
 * With ETCD_TXN_KEYS_PER_S set in the environment, the threads together
 * send at most that many keys a second (each paces its own share): etcd's
 * cost per key at the rate the plugin reached, rather than at etcd's
 * fastest, which on a shared machine is lower (its fixed costs per
 * Raft round and commit are shared by more keys). Prints:
 *   ETCDTXN txns=.. seconds=.. txn_per_s=.. keys_per_s=.. p50_us=.. p99_us=.. failed=..
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../etcd/grpc.h"
#include "../etcd/kv.h"

#define MAX_THREADS 16
#define KEYS_PER_THREAD 4096
#define MAX_LAT (1u << 20)

struct worker {
    ss_grpc *g;
    int id, per_txn, set_pct, del_pct, px_ms;
    bool native; /* the mixes: an application's Txns, not the plugin's */
    bool reads_apart; /* the mixes' Ranges in a read-only Txn of their own */
    uint32_t dice; /* xorshift32 state: each key's operation */
    double seconds;
    double pace_us; /* between two Txns of this thread (0: none) */
    const char *value; /* what every put writes, value_len bytes */
    size_t value_len;
    int64_t rev[KEYS_PER_THREAD]; /* each key's mod_revision (0: absent) */
    uint32_t *lat;
    size_t nlat;
    long txns, failed;
};

static uint64_t mono_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static ss_bytes bytes_of(const char *s, size_t n)
{
    ss_bytes b = {(const uint8_t *)s, n};
    return b;
}

/* A lease that ends px_ms from now (whole seconds, at least etcd's
 * minimum of 1 s past now), or 0 if none could be granted. */
static int64_t lease_grant(ss_grpc *g, int px_ms)
{
    ss_grpc_call c = {.method = SS_ETCD_LEASE_GRANT_METHOD, .timeout_ms = 5000};
    int64_t id = 0, ttl = 0;
    if (ss_etcd_lease_grant_pack(&c.request, (px_ms + 999) / 1000 + 1) == SS_OK &&
        ss_grpc_call_wait(g, &c) == SS_OK && ss_etcd_lease_grant_unpack(&c.reply, &id, &ttl) != SS_OK)
        id = 0;
    ss_grpc_call_clear(&c);
    return id;
}

/* 0..99 at random, for one key's operation. */
static int roll(struct worker *w)
{
    uint32_t x = w->dice;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    w->dice = x;
    return (int)(x % 100u);
}

/* The operations of one application Txn: a put (on the lease of this
 * second when px_ms), a delete or a Range for each of per_txn keys; the
 * Ranges into reads when the worker keeps them apart. */
static void native_ops(struct worker *w, ss_etcd_txn *t, ss_etcd_txn *reads, unsigned *next, int64_t lease)
{
    for (int i = 0; i < w->per_txn; i++) {
        int k = (int)((*next)++ % KEYS_PER_THREAD);
        char key[64];
        int n = snprintf(key, sizeof key, "raw%ld/k/%02d%014d", (long)getpid(), w->id, k);
        ss_bytes kb = bytes_of(key, (size_t)n);
        int r = roll(w);
        if (r < w->set_pct && lease)
            ss_etcd_txn_put_leased(t, kb, bytes_of(w->value, w->value_len), lease);
        else if (r < w->set_pct)
            ss_etcd_txn_put(t, kb, bytes_of(w->value, w->value_len));
        else if (r < w->set_pct + w->del_pct)
            ss_etcd_txn_delete(t, kb);
        else
            ss_etcd_txn_get(w->reads_apart ? reads : t, kb);
    }
}

/* Sends the read-only Txn of a worker that keeps reads apart, if it
 * has any; false if it failed. */
static bool send_reads(struct worker *w, const ss_etcd_txn *reads)
{
    if (!w->reads_apart || ss_etcd_txn_ops(reads) == 0)
        return true;
    ss_grpc_call c = {.method = SS_ETCD_TXN_METHOD, .timeout_ms = 5000};
    bool ok = ss_etcd_txn_pack(reads, &c.request) == SS_OK && ss_grpc_call_wait(w->g, &c) == SS_OK;
    ss_grpc_call_clear(&c);
    return ok;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    /* Keys of this process alone: a key it has not written is absent. */
    char marker[48];
    snprintf(marker, sizeof marker, "raw%ld/n/bench-%d", (long)getpid(), w->id);
    uint64_t end = mono_us() + (uint64_t)(w->seconds * 1e6);
    unsigned next = 0;
    int *batch = calloc((size_t)w->per_txn, sizeof *batch);
    ss_etcd_txn t = {0}, reads = {0};
    int64_t lease = 0;
    uint64_t lease_at = 0;
    double send_at = (double)mono_us();
    while (batch && mono_us() < end) {
        if (w->pace_us > 0) {
            send_at += w->pace_us;
            double now = (double)mono_us();
            if (send_at > now) {
                uint64_t wait_us = (uint64_t)(send_at - now);
                struct timespec ts = {(time_t)(wait_us / 1000000u), (long)(wait_us % 1000000u) * 1000};
                nanosleep(&ts, NULL);
            } else if (now - send_at > w->pace_us) {
                send_at = now; /* behind by more than a Txn: no burst to catch up */
            }
        }
        ss_etcd_txn_clear(&t);
        ss_etcd_txn_clear(&reads);
        bool wrote = false;
        if (w->native) {
            if (w->px_ms > 0 && mono_us() - lease_at >= 1000000u) {
                lease = lease_grant(w->g, w->px_ms);
                lease_at = mono_us();
            }
            native_ops(w, &t, &reads, &next, lease);
        }
        for (int i = 0; i < w->per_txn && !w->native; i++) {
            int k = (int)(next++ % KEYS_PER_THREAD);
            batch[i] = k;
            char key[64];
            int n = snprintf(key, sizeof key, "raw%ld/k/%02d%014d", (long)getpid(), w->id, k);
            ss_etcd_txn_expect(&t, bytes_of(key, (size_t)n), w->rev[k]);
        }
        for (int i = 0; i < w->per_txn && !w->native; i++) {
            if (roll(w) >= w->set_pct)
                continue;
            char key[64];
            int n = snprintf(key, sizeof key, "raw%ld/k/%02d%014d", (long)getpid(), w->id, batch[i]);
            ss_etcd_txn_put(&t, bytes_of(key, (size_t)n), bytes_of(w->value, w->value_len));
            batch[i] = -1 - batch[i]; /* written: its revision changes */
            wrote = true;
        }
        if (w->native)
            ; /* no marker: an application needs none */
        else if (wrote)
            ss_etcd_txn_put(&t, bytes_of(marker, strlen(marker)), bytes_of("txn", 3));
        else
            ss_etcd_txn_get(&t, bytes_of(marker, strlen(marker)));
        ss_grpc_call c = {.method = SS_ETCD_TXN_METHOD, .timeout_ms = 5000};
        if (ss_etcd_txn_pack(&t, &c.request) != SS_OK)
            break;
        uint64_t t0 = mono_us();
        int rc = ss_grpc_call_wait(w->g, &c);
        bool reads_ok = rc == SS_OK && send_reads(w, &reads);
        uint64_t took = mono_us() - t0;
        ss_etcd_reply r;
        if (reads_ok && ss_etcd_txn_unpack(&c.reply, &r, NULL) == SS_OK) {
            if (r.succeeded) {
                for (int i = 0; i < w->per_txn; i++)
                    if (batch[i] < 0)
                        w->rev[-1 - batch[i]] = r.revision;
                w->txns++;
                if (w->nlat < MAX_LAT)
                    w->lat[w->nlat++] = (uint32_t)took;
            } else {
                w->failed++; /* no one else writes these keys: never */
            }
            ss_etcd_reply_free(&r);
        } else {
            w->failed++;
        }
        ss_grpc_call_clear(&c);
    }
    ss_etcd_txn_free(&t);
    ss_etcd_txn_free(&reads);
    free(batch);
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 6 && argc != 8) {
        fprintf(stderr, "usage: etcd_txn ENDPOINTS KEYS_PER_TXN SET_PERCENT IN_FLIGHT SECONDS [DEL_PERCENT PX_MS]\n");
        return 2;
    }
    int per_txn = atoi(argv[2]), set_pct = atoi(argv[3]), threads = atoi(argv[4]);
    double seconds = atof(argv[5]);
    bool native = argc == 8;
    int del_pct = native ? atoi(argv[6]) : 0, px_ms = native ? atoi(argv[7]) : 0;
    if (per_txn < 1 || per_txn > 125 || set_pct < 0 || set_pct > 100 || threads < 1 || threads > MAX_THREADS ||
        seconds <= 0 || del_pct < 0 || set_pct + del_pct > 100 || px_ms < 0) {
        fprintf(stderr, "etcd_txn: 1..125 keys per Txn, 0..100 percent (SET and DEL together), 1..%d in flight, "
                "seconds > 0, PX_MS >= 0\n", MAX_THREADS);
        return 2;
    }
    ss_grpc_options o = {.endpoints = argv[1]};
    ss_grpc *g;
    char why[200];
    if (ss_grpc_new(&o, &g, why, sizeof why) != SS_OK) {
        fprintf(stderr, "etcd_txn: %s\n", why);
        return 1;
    }
    const char *rate = getenv("ETCD_TXN_KEYS_PER_S"), *apart = getenv("ETCD_TXN_READS_APART");
    const char *vbytes = getenv("ETCD_TXN_VALUE_BYTES");
    double keys_per_s = rate ? atof(rate) : 0;
    long value_len = vbytes ? atol(vbytes) : native ? 224 : 84;
    if (keys_per_s < 0 || value_len < 1 || value_len > 65536) {
        fprintf(stderr, "etcd_txn: ETCD_TXN_KEYS_PER_S must be >= 0, ETCD_TXN_VALUE_BYTES 1 to 65536\n");
        return 2;
    }
    char *value = malloc((size_t)value_len);
    if (value == NULL) {
        fprintf(stderr, "etcd_txn: out of memory\n");
        return 1;
    }
    memset(value, 'v', (size_t)value_len);
    static struct worker ws[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    uint64_t t0 = mono_us();
    for (int i = 0; i < threads; i++) {
        ws[i] = (struct worker){.g = g, .id = i, .per_txn = per_txn, .set_pct = set_pct, .del_pct = del_pct,
                                .px_ms = px_ms, .native = native, .seconds = seconds,
                                .value = value, .value_len = (size_t)value_len,
                                .reads_apart = native && apart && strcmp(apart, "1") == 0,
                                .dice = 2463534242u + 7919u * (uint32_t)i,
                                .pace_us = keys_per_s > 0 ? 1e6 * per_txn * threads / keys_per_s : 0};
        ws[i].lat = malloc(MAX_LAT * sizeof *ws[i].lat);
        if (ws[i].lat == NULL || pthread_create(&tids[i], NULL, worker_main, &ws[i]) != 0) {
            fprintf(stderr, "etcd_txn: out of memory\n");
            return 1;
        }
    }
    long txns = 0, failed = 0;
    size_t nlat = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tids[i], NULL);
        txns += ws[i].txns;
        failed += ws[i].failed;
        nlat += ws[i].nlat;
    }
    double secs = (double)(mono_us() - t0) / 1e6;
    uint32_t *all = malloc((nlat ? nlat : 1) * sizeof *all);
    size_t at = 0;
    for (int i = 0; i < threads; i++) {
        if (all)
            memcpy(all + at, ws[i].lat, ws[i].nlat * sizeof *all);
        at += ws[i].nlat;
        free(ws[i].lat);
    }
    uint32_t p50 = 0, p99 = 0;
    if (all && nlat) {
        qsort(all, nlat, sizeof *all, cmp_u32);
        p50 = all[nlat / 2];
        p99 = all[nlat * 99 / 100];
    }
    free(all);
    ss_grpc_free(g);
    free(value);
    printf("ETCDTXN txns=%ld seconds=%.3f txn_per_s=%.0f keys_per_s=%.0f p50_us=%u p99_us=%u failed=%ld\n", txns,
           secs, (double)txns / secs, (double)txns * per_txn / secs, p50, p99, failed);
    return failed ? 1 : 0;
}
