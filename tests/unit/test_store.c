/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store.c - the LMDB store: records, long keys, expiry index,
 * quotas, batches and persistence. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/siphash.h"
#include "../../core/store.h"
#include "../test.h"

static ss_store *open_store(ss_store_options *o)
{
    ss_store *s = NULL;
    o->path = test_tmpdir();
    ASSERT_EQ(ss_store_open(o, &s), SS_OK);
    return s;
}

static ss_store *open_default(void)
{
    ss_store_options o = ss_store_options_default();
    return open_store(&o);
}

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static ss_record rec_of(ss_bytes value, uint64_t wall, uint32_t counter)
{
    ss_record r;
    memset(&r, 0, sizeof r);
    r.value = value;
    r.version.wall = wall;
    r.version.counter = counter;
    r.version.node_len = 10;
    memcpy(r.version.node, "StateStore", 10);
    return r;
}

static void put(ss_store *s, ss_bytes key, const ss_record *r)
{
    ASSERT_EQ(ss_store_put(s, key, r), SS_OK);
}

static void assert_clock(const ss_store *s, uint64_t want_wall, uint32_t want_counter)
{
    uint64_t wall;
    uint32_t counter;
    ss_store_get_clock(s, &wall, &counter);
    ASSERT_EQ(wall, want_wall);
    ASSERT_EQ(counter, want_counter);
}

/* Key i of a family sharing a long common prefix: n bytes in all. */
static void long_key(uint8_t *buf, size_t n, unsigned i)
{
    for (size_t j = 0; j < n; j++)
        buf[j] = (uint8_t)('a' + j % 26);
    char tail[16];
    snprintf(tail, sizeof tail, "%08u", i % 100000000u);
    memcpy(buf + n - 8, tail, 8);
}

TEST(store_siphash_vectors)
{
    /* Reference vectors of the SipHash paper: key 00..0f, messages 00..n-1. */
    uint8_t key[16], msg[64];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    for (int i = 0; i < 64; i++)
        msg[i] = (uint8_t)i;
    ASSERT_EQ(ss_siphash(key, msg, 0), (long long)0x726fdb47dd0e0e31ull);
    ASSERT_EQ(ss_siphash(key, msg, 8), (long long)0x93f5f5799a932462ull);
    ASSERT_EQ(ss_siphash(key, msg, 15), (long long)0xa129ca6149be45e5ull);
    ASSERT_EQ(ss_siphash(key, msg, 63), (long long)0x958a324ceb064572ull);
    /* Streaming: any split into three pieces gives the one-shot hash. */
    uint8_t data[40];
    for (int i = 0; i < 40; i++)
        data[i] = (uint8_t)(i * 37 + 1);
    for (size_t n = 0; n <= sizeof data; n++)
        for (size_t a = 0; a <= n; a++)
            for (size_t b = a; b <= n; b++) {
                ss_siphash_state st;
                ss_siphash_init(&st, key);
                ss_siphash_update(&st, data, a);
                ss_siphash_update(&st, data + a, b - a);
                ss_siphash_update(&st, data + b, n - b);
                ASSERT_EQ(ss_siphash_final(&st), ss_siphash(key, data, n));
            }
}

TEST(store_siphash_parts_is_siphash_of_its_encoding)
{
    uint8_t key[16];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)(200 - i);
    /* Runs of every length around a word, and an empty one. */
    uint8_t data[40];
    for (int i = 0; i < 40; i++)
        data[i] = (uint8_t)(i * 13 + 5);
    for (size_t a = 0; a <= 17; a++)
        for (size_t b = 0; b <= 9; b++) {
            ss_bytes parts[3] = {{data, a}, {data + 20, 0}, {data + 21, b}};
            /* The encoding spelt out: count, lengths, then padded runs. */
            uint8_t enc[128] = {0};
            size_t n = 0;
            const uint64_t words[4] = {3, a, 0, b};
            for (int w = 0; w < 4; w++, n += 8)
                for (int j = 0; j < 8; j++)
                    enc[n + (size_t)j] = (uint8_t)(words[w] >> (8 * j));
            for (int i = 0; i < 3; i++) {
                memcpy(enc + n, parts[i].data, parts[i].len);
                n += (parts[i].len + 7) / 8 * 8;
            }
            ASSERT_EQ(ss_siphash_parts(key, parts, 3), ss_siphash(key, enc, n));
            ASSERT_EQ(ss_siphash13_parts(key, parts, 3), ss_siphash13(key, enc, n));
        }
}

TEST(store_siphash13_vectors)
{
    /* Outputs of the reference implementation built with one compression
     * and three finalization rounds. */
    uint8_t zero[16] = {0}, key[16];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)i;
    ASSERT_EQ(ss_siphash13(zero, zero, 0), (long long)0xd1fba762150c532cull);
    ASSERT_EQ(ss_siphash13(zero, zero, 1), (long long)0x68a914128e01e473ull);
    ASSERT_EQ(ss_siphash13(key, zero, 0), (long long)0xabac0158050fc4dcull);
    ASSERT_TRUE(ss_siphash13(key, zero, 0) != ss_siphash(key, zero, 0));
}

TEST(store_record_round_trip)
{
    ss_store *s = open_default();
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(B("value\0\r\n\xff"), 1700000000000ull, 42);
    r.value.len = 9;
    r.has_ft = true;
    r.ft.wall = 17;
    r.ft.counter = 3;
    r.ft.node_len = 0;
    r.expiry_ms = 1700000005000ull;
    static const uint8_t bkey[] = {0, '\r', '\n', 0x80, 0xff};
    ss_bytes key = {bkey, sizeof bkey};
    put(s, key, &r);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, key, &got), SS_OK);
    ASSERT_MEM(got.value.data, got.value.len, "value\0\r\n\xff", 9);
    ASSERT_EQ(ss_hlc_compare(&got.version, &r.version), 0);
    ASSERT_TRUE(got.has_ft);
    ASSERT_EQ(ss_hlc_compare(&got.ft, &r.ft), 0);
    ASSERT_EQ(got.expiry_ms, 1700000005000ull);
    ASSERT_EQ(ss_store_get(s, B("other"), &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_key_count(s), 1);
    /* Overwrite without token or expiry: both are gone. */
    ss_record r2 = rec_of(B(""), 1700000000001ull, 0);
    put(s, key, &r2);
    ASSERT_EQ(ss_store_get(s, key, &got), SS_OK);
    ASSERT_EQ(got.value.len, 0);
    ASSERT_TRUE(!got.has_ft);
    ASSERT_EQ(got.expiry_ms, 0);
    ASSERT_EQ(ss_store_key_count(s), 1);
    ASSERT_EQ(ss_store_del(s, key), SS_OK);
    ASSERT_EQ(ss_store_del(s, key), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_key_count(s), 0);
    ASSERT_EQ(ss_store_byte_count(s), 0);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    /* Calls outside a batch are refused. */
    ASSERT_EQ(ss_store_get(s, key, &got), SS_E_BUSY);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_E_BUSY);
    ss_store_close(s);
}

TEST(store_persistence)
{
    ss_store_options o = ss_store_options_default();
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record a = rec_of(B("alpha"), 1000, 1);
    a.has_ft = true;
    a.ft = a.version;
    a.expiry_ms = 99999;
    ss_record b = rec_of(B("beta"), 1000, 2);
    put(s, B("a"), &a);
    put(s, B("b"), &b);
    ASSERT_EQ(ss_store_set_clock(s, 1000, 2), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    /* An aborted batch leaves nothing. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record c = rec_of(B("gamma"), 1000, 3);
    put(s, B("c"), &c);
    ASSERT_EQ(ss_store_del(s, B("a")), SS_OK);
    ss_store_set_clock(s, 1000, 3);
    ss_store_abort(s);
    uint64_t bytes = ss_store_byte_count(s);
    ss_store_close(s);

    s = open_store(&o);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ASSERT_EQ(ss_store_byte_count(s), bytes);
    assert_clock(s, 1000, 2);
    ASSERT_EQ(ss_store_next_expiry(s), 99999);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("a"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "alpha");
    ASSERT_EQ(got.version.counter, 1);
    ASSERT_TRUE(got.has_ft);
    ASSERT_EQ(ss_hlc_compare(&got.ft, &a.version), 0);
    ASSERT_EQ(got.expiry_ms, 99999);
    ASSERT_EQ(ss_store_get(s, B("b"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "beta");
    ASSERT_EQ(ss_store_get(s, B("c"), &got), SS_E_NOTFOUND);
    ss_store_close(s);
}

static void check_long_keys(size_t n)
{
    ss_store *s = open_default();
    uint8_t *k1 = malloc(n), *k2 = malloc(n);
    long_key(k1, n, 1);
    long_key(k2, n, 2); /* same first n-8 bytes */
    ss_bytes key1 = {k1, n}, key2 = {k2, n};
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r1 = rec_of(B("one"), 1, 0), r2 = rec_of(B("two"), 2, 0);
    r2.expiry_ms = 500;
    put(s, key1, &r1);
    put(s, key2, &r2);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, key1, &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "one");
    ASSERT_EQ(ss_store_get(s, key2, &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "two");
    /* A prefix of the key is another key. */
    ss_bytes shorter = {k1, n - 1};
    ASSERT_EQ(ss_store_get(s, shorter, &got), SS_E_NOTFOUND);
    /* Expiry returns the whole long key. */
    ss_buf popped = SS_BUF_INIT;
    ss_hlc v;
    ASSERT_EQ(ss_store_pop_due(s, 500, &popped, &v), SS_OK);
    ASSERT_MEM(popped.data, popped.len, k2, n);
    ASSERT_EQ(v.wall, 2);
    ASSERT_EQ(ss_store_get(s, key2, &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_del(s, key1), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 0);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_buf_free(&popped);
    free(k1);
    free(k2);
    ss_store_close(s);
}

TEST(store_long_keys)
{
    check_long_keys(SS_STORE_INLINE_KEY_MAX);
    check_long_keys(SS_STORE_INLINE_KEY_MAX + 1);
    check_long_keys(511);
    check_long_keys(6500);
    check_long_keys(32000);
    check_long_keys(65535);
}

/* With a 1-bit hash, long keys collide constantly: chains must stay
 * correct through inserts, deletes in any order and expiry. */
TEST(store_long_key_collisions)
{
    ss_store_options o = ss_store_options_default();
    o.long_key_hash_bits = 1;
    ss_store *s = open_store(&o);
    enum { N = 60, LEN = 700 };
    static uint8_t keys[N][LEN];
    bool present[N];
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    for (unsigned i = 0; i < N; i++) {
        long_key(keys[i], LEN, i);
        char val[16];
        snprintf(val, sizeof val, "v%u", i);
        ss_record r = rec_of(B(val), i + 1, 0);
        r.expiry_ms = i % 3 == 0 ? 1000 + i : 0;
        ss_bytes k = {keys[i], LEN};
        put(s, k, &r);
        present[i] = true;
    }
    ASSERT_EQ(ss_store_key_count(s), N);
    uint64_t seed = 12345;
    for (unsigned step = 0; step < N / 2; step++) {
        seed = seed * 6364136223846793005ull + 1;
        unsigned i = (unsigned)(seed >> 33) % N;
        ss_bytes k = {keys[i], LEN};
        ASSERT_EQ(ss_store_del(s, k), present[i] ? SS_OK : SS_E_NOTFOUND);
        present[i] = false;
        for (unsigned j = 0; j < N; j++) {
            ss_record got;
            ss_bytes kj = {keys[j], LEN};
            int rc = ss_store_get(s, kj, &got);
            ASSERT_EQ(rc, present[j] ? SS_OK : SS_E_NOTFOUND);
            if (present[j]) {
                char val[16];
                int vn = snprintf(val, sizeof val, "v%u", j);
                ASSERT_MEM(got.value.data, got.value.len, val, (size_t)vn);
                ASSERT_EQ(got.version.wall, j + 1);
            }
        }
    }
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    /* Expire everything due: each popped key is a present key with expiry. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_buf k = SS_BUF_INIT;
    ss_hlc v;
    uint64_t last_wall = 0;
    while (ss_store_pop_due(s, 5000, &k, &v) == SS_OK) {
        ASSERT_EQ(k.len, LEN);
        unsigned i = (unsigned)(v.wall - 1);
        ASSERT_MEM(k.data, k.len, keys[i], LEN);
        ASSERT_TRUE(present[i] && i % 3 == 0);
        ASSERT_TRUE(v.wall > last_wall); /* deadline order: 1000 + i */
        last_wall = v.wall;
        present[i] = false;
    }
    for (unsigned j = 0; j < N; j++) {
        ss_record got;
        ss_bytes kj = {keys[j], LEN};
        ASSERT_EQ(ss_store_get(s, kj, &got), present[j] ? SS_OK : SS_E_NOTFOUND);
        ASSERT_TRUE(!present[j] || j % 3 != 0);
    }
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_buf_free(&k);
    ss_store_close(s);
}

TEST(store_expiry_index_order)
{
    ss_store *s = open_default();
    ASSERT_EQ(ss_store_next_expiry(s), UINT64_MAX);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    uint64_t deadlines[] = {50, 10, 40, 20, 30};
    const char *names[] = {"e", "a", "d", "b", "c"};
    for (int i = 0; i < 5; i++) {
        ss_record r = rec_of(B("x"), 1, (uint32_t)i);
        r.expiry_ms = deadlines[i];
        put(s, B(names[i]), &r);
    }
    ss_record keep = rec_of(B("x"), 1, 9);
    put(s, B("forever"), &keep);
    /* Re-setting "d" without expiry takes it out of the index. */
    ss_record d = rec_of(B("y"), 2, 0);
    put(s, B("d"), &d);
    ASSERT_EQ(ss_store_next_expiry(s), 10);
    ss_buf k = SS_BUF_INIT;
    ss_hlc v;
    ASSERT_EQ(ss_store_pop_due(s, 9, &k, &v), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_pop_due(s, 25, &k, &v), SS_OK);
    ASSERT_STR(k.data, k.len, "a");
    ASSERT_EQ(ss_store_pop_due(s, 25, &k, &v), SS_OK);
    ASSERT_STR(k.data, k.len, "b");
    ASSERT_EQ(ss_store_pop_due(s, 25, &k, &v), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_next_expiry(s), 30);
    ASSERT_EQ(ss_store_pop_due(s, 1000, &k, &v), SS_OK);
    ASSERT_STR(k.data, k.len, "c");
    ASSERT_EQ(ss_store_pop_due(s, 1000, &k, &v), SS_OK);
    ASSERT_STR(k.data, k.len, "e");
    ASSERT_EQ(ss_store_pop_due(s, 1000, &k, &v), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_next_expiry(s), UINT64_MAX);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_buf_free(&k);
    ss_store_close(s);
}

TEST(store_quota_keys)
{
    ss_store_options o = ss_store_options_default();
    o.max_keys = 3;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(B("v"), 1, 0);
    put(s, B("k1"), &r);
    put(s, B("k2"), &r);
    put(s, B("k3"), &r);
    ASSERT_EQ(ss_store_put(s, B("k4"), &r), SS_E_QUOTA);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("k4"), &got), SS_E_NOTFOUND);
    put(s, B("k3"), &r); /* replacing is not a new key */
    ASSERT_EQ(ss_store_del(s, B("k1")), SS_OK);
    put(s, B("k4"), &r);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 3);
    ss_store_close(s);
}

TEST(store_quota_bytes)
{
    ss_store_options o = ss_store_options_default();
    o.max_bytes = 10000;
    ss_store *s = open_store(&o);
    static uint8_t big[4000];
    memset(big, 'x', sizeof big);
    ss_bytes bigv = {big, sizeof big};
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(bigv, 1, 0);
    put(s, B("a"), &r); /* 4065 charged */
    put(s, B("b"), &r); /* 8130 */
    uint64_t before = ss_store_byte_count(s);
    ASSERT_EQ(before, 2 * (1 + 4000 + SS_STORE_RECORD_CHARGE));
    ASSERT_EQ(ss_store_put(s, B("c"), &r), SS_E_QUOTA);
    ASSERT_EQ(ss_store_byte_count(s), before);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("c"), &got), SS_E_NOTFOUND);
    /* A smaller value fits; growing an existing key over the limit does not. */
    ss_record small = rec_of(B("s"), 2, 0);
    put(s, B("c"), &small);
    ss_bytes bigger = {big, 2000};
    ss_record grow = rec_of(bigger, 3, 0);
    ASSERT_EQ(ss_store_put(s, B("c"), &grow), SS_E_QUOTA);
    ASSERT_EQ(ss_store_get(s, B("c"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "s");
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_store_close(s);

    /* Lowering the quota below the data: shrinking writes still work. */
    o.max_bytes = 100;
    s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    put(s, B("a"), &small);
    ASSERT_EQ(ss_store_del(s, B("b")), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("new"), &small), SS_E_QUOTA);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_store_close(s);
}

/* If the LMDB map itself fills up, the whole batch is undone and the store
 * stays usable: nothing half-applied, no poisoned transaction. */
TEST(store_map_full_rolls_back_batch)
{
    ss_store_options o = ss_store_options_default();
    o.map_size = 1 << 20; /* 1 MiB map, far below the byte quota */
    o.max_bytes = (uint64_t)1 << 30;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record keep = rec_of(B("kept"), 1, 0);
    put(s, B("keep"), &keep);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);

    static uint8_t val[3000];
    memset(val, 'v', sizeof val);
    ss_bytes v = {val, sizeof val};
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    int rc = SS_OK, n = 0;
    while (rc == SS_OK && n < 10000) {
        char key[32];
        snprintf(key, sizeof key, "key%05d", n++);
        ss_record r = rec_of(v, 2, (uint32_t)n);
        rc = ss_store_put(s, B(key), &r);
    }
    ASSERT_EQ(rc, SS_E_QUOTA);
    ASSERT_TRUE(n > 10);
    /* The failed batch refuses further work and its commit fails. */
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("keep"), &got), SS_E_QUOTA);
    ASSERT_EQ(ss_store_commit(s, 0), SS_E_QUOTA);
    ASSERT_EQ(ss_store_key_count(s), 1);
    /* The store goes on. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("key00000"), &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_get(s, B("keep"), &got), SS_OK);
    ss_record after = rec_of(B("after"), 3, 0);
    put(s, B("after"), &after);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_store_close(s);

    s = open_store(&o);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ASSERT_EQ(ss_store_byte_count(s), 2 * SS_STORE_RECORD_CHARGE + 4 + 4 + 5 + 5);
    ss_store_close(s);
}

/* A checkpoint whose LMDB commit finds the map full (the commit itself
 * needs pages: the databases' roots, the free list) is the quota error,
 * as a write to a full map is, and says so. One value a page larger each
 * time, on a fresh store of a 256-page map: the batch goes into the
 * journal, then an idle checkpoint tries to put it into the file. Going a
 * page at a time, one size leaves room for the checkpoint's own records
 * but not for the commit. */
TEST(store_checkpoint_on_a_full_map_is_the_quota_error)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE); /* LMDB's page */
    size_t map = 256 * page;
    uint8_t *val = malloc(map);
    ASSERT_TRUE(val != NULL);
    memset(val, 'm', map);
    char what[256];
    snprintf(what, sizeof what,
             "checkpoint (writing the journal's changes into the data file): "
             "the LMDB map is full (map_size %zu bytes)",
             map);
    int seen = 0;
    for (size_t pages = 192; pages < 256; pages++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%zu", test_tmpdir(), pages);
        ss_store_options o = ss_store_options_default();
        o.path = dir;
        o.sync = SS_SYNC_PERIODIC;
        o.checkpoint_interval_ms = 3600000;
        o.map_size = map;
        o.max_bytes = (uint64_t)1 << 30;
        ss_store *s = NULL;
        ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
        ss_record r = rec_of((ss_bytes){val, pages * page}, 1, 0);
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        int rc = ss_store_put(s, B("k"), &r);
        if (rc == SS_OK)
            rc = ss_store_commit(s, 10);
        if (rc != SS_OK) { /* the batch itself no longer fits */
            ASSERT_EQ(rc, SS_E_QUOTA);
            ss_store_close(s);
            break;
        }
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        rc = ss_store_commit(s, 7200000); /* idle, two hours on: a checkpoint */
        if (strcmp(ss_store_cause(s), what) == 0) {
            ASSERT_EQ(rc, SS_E_QUOTA);
            ASSERT_TRUE(ss_store_checkpoint_failing(s, NULL));
            seen++;
        } else if (rc != SS_OK) {
            ASSERT_EQ(rc, SS_E_QUOTA); /* its own records did not fit */
        }
        ss_store_close(s);
    }
    ASSERT_TRUE(seen >= 1);
    free(val);
}

TEST(store_large_values)
{
    ss_store *s = open_default();
    size_t n = 1 << 20;
    uint8_t *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (uint8_t)(i * 7 + (i >> 8));
    ss_bytes v = {big, n};
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(v, 1, 0);
    put(s, B("big"), &r);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("big"), &got), SS_OK);
    ASSERT_MEM(got.value.data, got.value.len, big, n);
    ss_store_abort(s);
    free(big);
    ss_store_close(s);
}

TEST(store_periodic_sync_and_bad_options)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.sync_interval_ms = 50;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_options_get(s)->sync_interval_ms, 50);
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        ss_record r = rec_of(B("v"), 1, (uint32_t)i);
        put(s, B("k"), &r);
        ASSERT_EQ(ss_store_commit(s, (uint64_t)i * 20), SS_OK);
    }
    ASSERT_EQ(ss_store_flush(s, 1000), SS_OK);
    ss_store_close(s);

    ss_store_options bad = ss_store_options_default();
    ss_store *t = NULL;
    ASSERT_EQ(ss_store_open(&bad, &t), SS_E_INVAL); /* no path */
    bad.path = "/proc/definitely/not/here";
    ASSERT_EQ(ss_store_open(&bad, &t), SS_E_IO);
    ASSERT_TRUE(t == NULL);
}

/* A put right after a get reuses the location the get found: check it with
 * colliding long keys, where the location is a slot in a chain, and with
 * other writes in between that must make the store look again. */
TEST(store_put_after_get_reuses_location)
{
    ss_store_options o = ss_store_options_default();
    o.long_key_hash_bits = 1;
    ss_store *s = open_store(&o);
    static uint8_t a[600], b[600], c[600];
    long_key(a, sizeof a, 1);
    long_key(b, sizeof b, 2);
    long_key(c, sizeof c, 3);
    ss_bytes ka = {a, sizeof a}, kb = {b, sizeof b}, kc = {c, sizeof c};
    ss_record got, ra = rec_of(B("A"), 1, 0), rb = rec_of(B("B"), 2, 0), rc2 = rec_of(B("C"), 3, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, ka, &got), SS_E_NOTFOUND);
    put(s, ka, &ra);
    ASSERT_EQ(ss_store_get(s, kb, &got), SS_E_NOTFOUND);
    put(s, kb, &rb);
    ASSERT_EQ(ss_store_get(s, kc, &got), SS_E_NOTFOUND);
    put(s, kc, &rc2);
    /* get A, then delete B (A's chain slot may move), then put A. */
    ASSERT_EQ(ss_store_get(s, ka, &got), SS_OK);
    ASSERT_EQ(ss_store_del(s, kb), SS_OK);
    ss_record ra2 = rec_of(B("A2"), 4, 0);
    put(s, ka, &ra2);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ASSERT_EQ(ss_store_get(s, ka, &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "A2");
    ASSERT_EQ(ss_store_get(s, kc, &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "C");
    ASSERT_EQ(ss_store_get(s, kb, &got), SS_E_NOTFOUND);
    /* get of one key, put of another: no reuse. */
    ASSERT_EQ(ss_store_get(s, kc, &got), SS_OK);
    put(s, kb, &rb);
    ASSERT_EQ(ss_store_get(s, kb, &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "B");
    ASSERT_EQ(ss_store_get(s, kc, &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "C");
    ASSERT_EQ(ss_store_key_count(s), 3);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_store_close(s);
}

static void *commit_thread(void *arg)
{
    static int rc;
    rc = ss_store_commit_run(arg);
    return &rc;
}

/* Group commit: a batch prepared on one thread and written on another;
 * the store refuses every use in between, and a failure rolls back. */
TEST(store_commit_on_another_thread)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_ALWAYS;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_TRUE(!ss_store_batch_dirty(s));
    ss_record r;
    ASSERT_EQ(ss_store_get(s, B("k"), &r), SS_E_NOTFOUND);
    ASSERT_TRUE(!ss_store_batch_dirty(s)); /* a read costs no sync */
    ss_record a = rec_of(B("value"), 2000, 1);
    put(s, B("k"), &a);
    ASSERT_EQ(ss_store_set_clock(s, 2000, 1), SS_OK);
    ASSERT_TRUE(ss_store_batch_dirty(s));
    uint64_t bytes = ss_store_byte_count(s);
    ASSERT_EQ(ss_store_commit_prepare(s, 0, false), SS_OK);
    ASSERT_TRUE(!ss_store_in_batch(s));
    ASSERT_EQ(ss_store_begin(s), SS_E_BUSY);
    ASSERT_EQ(ss_store_get(s, B("k"), &r), SS_E_BUSY);
    ASSERT_EQ(ss_store_put(s, B("x"), &a), SS_E_BUSY);
    ASSERT_EQ(ss_store_commit_prepare(s, 0, false), SS_E_BUSY);
    ASSERT_EQ(ss_store_key_count(s), 1);
    ASSERT_EQ(ss_store_byte_count(s), bytes);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, commit_thread, s), 0);
    void *res;
    pthread_join(t, &res);
    ASSERT_EQ(*(int *)res, SS_OK);
    ASSERT_EQ(ss_store_commit_finish(s, *(int *)res, 0), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("k"), &r), SS_OK);
    ASSERT_MEM(r.value.data, r.value.len, "value", 5);
    /* A commit that failed leaves the counts and clock of the last one. */
    ss_record b = rec_of(B("longer value"), 2000, 2);
    put(s, B("k2"), &b);
    ASSERT_EQ(ss_store_set_clock(s, 2000, 2), SS_OK);
    ASSERT_EQ(ss_store_commit_prepare(s, 0, false), SS_OK);
    ss_store_abort(s); /* no effect while committing */
    ASSERT_EQ(ss_store_commit_run(s), SS_OK);
    ASSERT_EQ(ss_store_commit_finish(s, SS_E_IO, 0), SS_E_IO);
    ASSERT_EQ(ss_store_byte_count(s), bytes);
    assert_clock(s, 2000, 1);
    ss_store_close(s);
}

static void *sync_thread(void *arg)
{
    static int rc;
    rc = ss_store_sync_run(arg);
    return &rc;
}

static void commit_one(ss_store *s, uint32_t n, uint64_t now)
{
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(B("v"), 1, n);
    put(s, B("k"), &r);
    ASSERT_EQ(ss_store_commit(s, now), SS_OK);
}

/* The periodic sync run by the owner, on another thread, while the store
 * goes on committing: due only when something was committed and the
 * interval has passed; a failed sync is due again. */
TEST(store_external_periodic_sync)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.sync_interval_ms = 50;
    o.external_sync = true;
    o.checkpoint_interval_ms = 1000000; /* a checkpoint would sync everything */
    ss_store *s = open_store(&o);
    ASSERT_TRUE(!ss_store_sync_start(s, 1000)); /* nothing committed */
    commit_one(s, 1, 1000);
    ASSERT_TRUE(ss_store_sync_start(s, 1000));
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, sync_thread, s), 0);
    commit_one(s, 2, 1010); /* while the sync runs */
    void *res;
    pthread_join(t, &res);
    ASSERT_EQ(*(int *)res, SS_OK);
    ss_store_sync_done(s, SS_OK);
    ASSERT_TRUE(!ss_store_sync_start(s, 1040)); /* the interval has not passed */
    ASSERT_TRUE(ss_store_sync_start(s, 1050));  /* the commit during the sync */
    ss_store_sync_done(s, SS_E_IO);
    ASSERT_TRUE(!ss_store_sync_start(s, 1060));
    ASSERT_TRUE(ss_store_sync_start(s, 1100)); /* syncs go on */
    ASSERT_EQ(ss_store_sync_run(s), SS_OK);
    ss_store_sync_done(s, SS_OK);
    ASSERT_TRUE(!ss_store_sync_start(s, 1100)); /* not again in the same millisecond */
    /* ...but after a failure only a checkpoint covers the earlier writes
     * (test_journal.c: store_failed_fsync_needs_a_checkpoint). */
    ASSERT_TRUE(!ss_store_all_synced(s));
    ASSERT_TRUE(ss_store_checkpoint_due(s, 1100));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 1100), SS_OK);
    ASSERT_TRUE(ss_store_all_synced(s));
    ASSERT_TRUE(!ss_store_sync_start(s, 5000)); /* everything is synced */
    ss_store_close(s);
}

/* One process per data directory; the lock goes with the store. */
TEST(store_directory_lock)
{
    ss_store_options o = ss_store_options_default();
    ss_store *s = open_store(&o);
    ss_store *second = NULL;
    ASSERT_EQ(ss_store_open(&o, &second), SS_E_BUSY);
    ASSERT_TRUE(second == NULL);
    ss_store_close(s);
    ASSERT_EQ(ss_store_open(&o, &second), SS_OK);
    ss_store_close(second);
}
