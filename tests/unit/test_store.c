/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store.c - the LMDB store's records: round trip, large values, the
 * expiry index, long keys (SipHash, chains of colliding keys, a put after
 * a get). Quotas are in test_store_quotas.c, commits and what they keep
 * in test_store_commits.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"
#include "../../core/siphash.h"
#include "../../core/store.h"
#include "../test.h"
#include "store_fixture.h"

static ss_store *open_default(void)
{
    ss_store_options o = ss_store_options_default();
    return open_store(&o);
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
