/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* engine_bench.c - the engine alone, no MQTT: SET and GET through
 * ss_engine_exec (decoding, rules, versions, LMDB) against raw LMDB puts
 * and gets of the same keys and values, in the same run.
 *
 *   engine_bench DIR [KEYS] [BATCH]
 *
 * Writes are committed every BATCH operations (as the plugin commits once
 * per broker loop iteration). Only the operations are timed: requests,
 * keys and values are prepared beforehand for both sides. Prints ops/s for each, the ratios, and a
 * summary line:  ENGINE keys=.. engine_set=.. lmdb_put=.. engine_get=.. lmdb_get=..
 */
#include <lmdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../core/codec.h"
#include "../core/backend_lmdb.h"
#include "../core/engine.h"
#include "../core/errors.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void key_of(long i, char *k)
{
    snprintf(k, 17, "k%015ld", i);
}

static void value_of(long i, char *v)
{
    for (int j = 0; j < 32; j++)
        v[j] = (char)('a' + (i + j) % 26);
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "engine_bench: %s: %d\n", what, rc);
    exit(1);
}

/* Shuffled order of key indexes, so both sides see the same access pattern. */
/* 0..n-1, shuffled unless seed is 0. */
static long *order(long n, unsigned seed)
{
    long *o = malloc((size_t)n * sizeof *o);
    for (long i = 0; i < n; i++)
        o[i] = i;
    if (seed == 0)
        return o;
    for (long i = n - 1; i > 0; i--) {
        seed = seed * 1103515245u + 12345u;
        long j = (long)(seed % (unsigned)(i + 1));
        long t = o[i];
        o[i] = o[j];
        o[j] = t;
    }
    return o;
}

/* Inputs are prepared CHUNK operations at a time outside the timed part,
 * for both sides: encoding a request or formatting a key is the client's
 * work, not the engine's. */
#define CHUNK 1000000L

struct chunk {
    ss_buf reqs;  /* engine: encoded requests, back to back */
    size_t *off;  /* engine: request j is reqs[off[j] .. off[j + 1]) */
    char *kv;     /* LMDB: 16-byte key and 32-byte value per operation */
};

static void chunk_init(struct chunk *c)
{
    c->reqs = (ss_buf)SS_BUF_INIT;
    c->off = malloc((size_t)(CHUNK + 1) * sizeof *c->off);
    c->kv = malloc((size_t)CHUNK * 48);
    if (c->off == NULL || c->kv == NULL)
        die("out of memory", 0);
}

static void chunk_free(struct chunk *c)
{
    ss_buf_free(&c->reqs);
    free(c->off);
    free(c->kv);
}

static void chunk_fill(struct chunk *c, const long *ord, long m, bool get)
{
    char key[17];
    ss_buf_clear(&c->reqs);
    for (long j = 0; j < m; j++) {
        key_of(ord[j], key);
        memcpy(c->kv + j * 48, key, 16);
        value_of(ord[j], c->kv + j * 48 + 16);
        ss_bytes argv[3] = {{(const uint8_t *)(get ? "GET" : "SET"), 3}, {(const uint8_t *)key, 16},
                            {(const uint8_t *)c->kv + j * 48 + 16, 32}};
        c->off[j] = c->reqs.len;
        if (ss_codec_put_request(&c->reqs, get ? 2 : 3, argv) != SS_OK)
            die("encode", (int)j);
    }
    c->off[m] = c->reqs.len;
}

static bool nobody_observes(void *ctx, ss_bytes key)
{
    (void)ctx;
    (void)key;
    return false;
}

static double bench_engine(const char *dir, long n, long batch, const long *ord, bool get)
{
    ss_store_options so = ss_store_options_default();
    so.path = dir;
    so.sync = SS_SYNC_PERIODIC;
    /* Room for every key (charged key + value + 64 bytes). */
    so.max_bytes = (uint64_t)n * 128 > ((uint64_t)1 << 30) ? (uint64_t)n * 128 : (uint64_t)1 << 30;
    ss_store *s;
    ss_backend *be;
    ss_engine *e;
    int rc;
    if ((rc = ss_store_open(&so, &s)) != SS_OK)
        die("store open", rc);
    if ((rc = ss_backend_lmdb_new(s, &be)) != SS_OK || (rc = ss_engine_new(be, NULL, &e)) != SS_OK)
        die("engine", rc);
    /* As in the broker when no client observes these keys: the change
     * feed keeps nothing. */
    be->wanted = nobody_observes;
    ss_buf resp = SS_BUF_INIT;
    struct chunk c;
    chunk_init(&c);
    char ts[32];
    int tl = 0;
    uint64_t clock_ms = 1700000000000ull;
    double busy = 0;
    for (long base = 0; base < n; base += CHUNK) {
        long m = n - base < CHUNK ? n - base : CHUNK;
        chunk_fill(&c, ord + base, m, get);
        double t0 = now_s();
        for (long j = 0; j < m; j++) {
            long i = base + j;
            if (i % 1000 == 0) /* the clock moves every 1000 operations */
                tl = snprintf(ts, sizeof ts, "%llu:0:b", (unsigned long long)++clock_ms);
            ss_buf_clear(&resp);
            ss_exec x = {.payload = c.reqs.data + c.off[j], .payload_len = c.off[j + 1] - c.off[j],
                         .ts = {(const uint8_t *)ts, (size_t)tl}, .now_ms = clock_ms, .response = &resp};
            if (ss_engine_exec(e, &x) != SS_OK || resp.data[0] == '-')
                die("exec", (int)i);
            if (get && resp.data[0] != '$')
                die("get", (int)i);
            if ((i + 1) % batch == 0 && ss_engine_commit(e, clock_ms) != SS_OK)
                die("commit", (int)i);
        }
        busy += now_s() - t0;
    }
    double t0 = now_s();
    if (ss_engine_commit(e, clock_ms) != SS_OK)
        die("commit", 0);
    busy += now_s() - t0;
    chunk_free(&c);
    ss_buf_free(&resp);
    ss_engine_free(e);
    ss_backend_lmdb_free(be);
    ss_store_close(s);
    return (double)n / busy;
}

static double bench_lmdb(const char *dir, long n, long batch, const long *ord, bool get)
{
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *txn;
    int rc;
    mkdir(dir, 0700);
    if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_mapsize(env, (size_t)4 << 30)) ||
        (rc = mdb_env_open(env, dir, MDB_NOSYNC | MDB_NOTLS | MDB_NORDAHEAD, 0600)))
        die("lmdb open", rc);
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) || (rc = mdb_dbi_open(txn, NULL, 0, &dbi)))
        die("lmdb dbi", rc);
    struct chunk c;
    chunk_init(&c);
    double busy = 0;
    for (long base = 0; base < n; base += CHUNK) {
        long m = n - base < CHUNK ? n - base : CHUNK;
        chunk_fill(&c, ord + base, m, get);
        double t0 = now_s();
        for (long j = 0; j < m; j++) {
            long i = base + j;
            MDB_val k = {16, c.kv + j * 48}, v;
            if (get) {
                if ((rc = mdb_get(txn, dbi, &k, &v)) != 0 || v.mv_size != 32)
                    die("lmdb get", rc);
            } else {
                v.mv_size = 32;
                v.mv_data = c.kv + j * 48 + 16;
                if ((rc = mdb_put(txn, dbi, &k, &v, 0)) != 0)
                    die("lmdb put", rc);
            }
            if ((i + 1) % batch == 0) {
                if ((rc = mdb_txn_commit(txn)) || (rc = mdb_txn_begin(env, NULL, 0, &txn)))
                    die("lmdb commit", rc);
            }
        }
        busy += now_s() - t0;
    }
    double t0 = now_s();
    if ((rc = mdb_txn_commit(txn)))
        die("lmdb commit", rc);
    busy += now_s() - t0;
    chunk_free(&c);
    mdb_env_close(env);
    return (double)n / busy;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: engine_bench DIR [KEYS] [BATCH]\n"
                        "       engine_bench --fill DIR KEYS   (a store for a broker's data_dir)\n");
        return 64;
    }
    if (strcmp(argv[1], "--fill") == 0 && argc == 4) {
        /* Keys in order, large batches: the quickest way to a big store. */
        long n = atol(argv[3]);
        long *seq = order(n, 0);
        double rate = bench_engine(argv[2], n, 10000, seq, false);
        printf("filled %s with %ld keys at %.0f SET/s\n", argv[2], n, rate);
        free(seq);
        return 0;
    }
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    long batch = argc > 3 ? atol(argv[3]) : 256;
    char edir[4096], ldir[4096];
    snprintf(edir, sizeof edir, "%s/engine", argv[1]);
    snprintf(ldir, sizeof ldir, "%s/lmdb", argv[1]);
    long *w = order(n, 1), *r = order(n, 2);
    double es = bench_engine(edir, n, batch, w, false);
    double ls = bench_lmdb(ldir, n, batch, w, false);
    double eg = bench_engine(edir, n, batch, r, true);
    double lg = bench_lmdb(ldir, n, batch, r, true);
    printf("engine alone, %ld keys (16-byte keys, 32-byte values), commit every %ld:\n", n, batch);
    printf("  SET: engine %.0f ops/s, raw LMDB put %.0f ops/s (engine = %.2fx LMDB)\n", es, ls, es / ls);
    printf("  GET: engine %.0f ops/s, raw LMDB get %.0f ops/s (engine = %.2fx LMDB)\n", eg, lg, eg / lg);
    printf("ENGINE keys=%ld engine_set=%.0f lmdb_put=%.0f engine_get=%.0f lmdb_get=%.0f\n", n, es, ls, eg,
           lg);
    free(w);
    free(r);
    return 0;
}
