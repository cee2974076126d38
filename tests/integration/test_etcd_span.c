/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_span.c - the distances between keys that bound a SCAN page's
 * Range on etcd (etcd/backend_etcd_span.h): exact arithmetic, and a
 * bound that is always past the key it starts from. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../etcd/backend_etcd_span.h"
#include "../test.h"

static ss_bytes B(const char *s, size_t len)
{
    ss_bytes b = {(const uint8_t *)s, len};
    return b;
}

/* a < b in byte order, a shorter key first when one is a prefix. */
static int key_cmp(ss_bytes a, ss_bytes b)
{
    int c = memcmp(a.data, b.data, a.len < b.len ? a.len : b.len);
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

TEST(etcd_span_arithmetic)
{
    /* Between: counted at the first byte that differs. */
    ss_etcd_span s = ss_etcd_span_between(B("a/00000", 7), B("a/00999", 7));
    ASSERT_EQ(s.at, 4);
    ASSERT_EQ(s.delta, (uint64_t)0x090909 << 40);
    s = ss_etcd_span_between(B("q", 1), B("qq", 2));
    ASSERT_EQ(s.at, 1);
    ASSERT_EQ(s.delta, (uint64_t)'q' << 56);
    s = ss_etcd_span_between(B("ab", 2), B("b", 1));
    ASSERT_EQ(s.at, 0);
    ASSERT_EQ(s.delta, ((uint64_t)'b' << 56) - ((uint64_t)'a' << 56 | (uint64_t)'b' << 48));
    /* Too close to tell (b is a and zeros): the least distance. */
    s = ss_etcd_span_between(B("x", 1), B("x\0", 2));
    ASSERT_EQ(s.at, 9);
    ASSERT_EQ(s.delta, 1);

    /* Scaled, rounded up; past 64 bits, counted a byte further left;
     * past every key, no bound; no bound stays none. */
    ss_etcd_span t = {4, 10};
    s = ss_etcd_span_scale(t, 5, 4);
    ASSERT_EQ(s.at, 4);
    ASSERT_EQ(s.delta, 13);
    t.delta = 12;
    s = ss_etcd_span_scale(t, 1, 4);
    ASSERT_EQ(s.delta, 3);
    t.delta = 1;
    s = ss_etcd_span_scale(t, 1, 1000);
    ASSERT_EQ(s.delta, 1);
    t.at = 2;
    t.delta = UINT64_MAX;
    s = ss_etcd_span_scale(t, 2, 1);
    ASSERT_EQ(s.at, 1);
    ASSERT_EQ(s.delta, (uint64_t)1 << 57);
    t.at = 0;
    s = ss_etcd_span_scale(t, 2, 1);
    ASSERT_EQ(s.delta, 0);
    t.delta = 0;
    t.at = 5;
    s = ss_etcd_span_scale(t, 3, 1);
    ASSERT_EQ(s.delta, 0);

    /* As bytes in a cursor, and back. */
    uint8_t raw[SS_ETCD_SPAN_BYTES];
    t.at = 0x01020304;
    t.delta = 0x05060708090a0b0cULL;
    ss_etcd_span_put(t, raw);
    ASSERT_MEM(raw, sizeof raw, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", 12);
    s = ss_etcd_span_get(raw);
    ASSERT_EQ(s.at, t.at);
    ASSERT_EQ(s.delta, t.delta);

    /* The end: the key padded with zeros to at + 8 bytes, plus delta
     * there, carried left; none past every key, none without a bound. */
    ss_buf end = SS_BUF_INIT;
    bool nomem = true;
    t.at = 1;
    t.delta = 1;
    ASSERT_TRUE(ss_etcd_span_end(B("ab", 2), t, &end, &nomem));
    ASSERT_TRUE(!nomem);
    ASSERT_MEM(end.data, end.len, "ab\0\0\0\0\0\0\x01", 9);
    ASSERT_TRUE(ss_etcd_span_end(B("a\xff\xff\xff\xff\xff\xff\xff\xff" "tail", 13), t, &end, &nomem));
    ASSERT_MEM(end.data, end.len, "b\0\0\0\0\0\0\0\0tail", 13);
    ASSERT_TRUE(!ss_etcd_span_end(B("\xff\xff\xff\xff\xff\xff\xff\xff\xff", 9), t, &end, &nomem));
    ASSERT_TRUE(!nomem);
    ASSERT_EQ(end.len, 0);
    t.delta = 0;
    ASSERT_TRUE(!ss_etcd_span_end(B("ab", 2), t, &end, &nomem));
    ASSERT_EQ(end.len, 0);

    /* Any key moved on by any span is past it; a span measured between
     * two keys moves the first at least to the second's first 8 bytes
     * after their common part. */
    srand(7);
    for (int i = 0; i < 20000; i++) {
        uint8_t a[24], b[24];
        size_t alen = (size_t)(rand() % 24), blen = (size_t)(rand() % 24);
        for (size_t k = 0; k < sizeof a; k++) {
            a[k] = (uint8_t)(rand() % 4 ? rand() : 0xff);
            b[k] = (uint8_t)(rand() % 4 ? rand() : 0xff);
        }
        ss_bytes ka = {a, alen}, kb = {b, blen};
        t.at = (uint32_t)(rand() % 30);
        t.delta = ((uint64_t)rand() << 32 | (uint64_t)rand()) >> (rand() % 64);
        if (t.delta == 0)
            t.delta = 1;
        if (ss_etcd_span_end(ka, t, &end, &nomem)) {
            ss_bytes e = {end.data, end.len};
            ASSERT_TRUE(key_cmp(ka, e) < 0);
        }
        if (key_cmp(ka, kb) < 0) {
            s = ss_etcd_span_between(ka, kb);
            ASSERT_TRUE(s.delta != 0);
            if (ss_etcd_span_end(ka, s, &end, &nomem)) {
                ss_bytes e = {end.data, end.len};
                ASSERT_TRUE(key_cmp(ka, e) < 0);
                /* At least as far as b cut to at + 8 bytes. */
                ss_bytes cut = {b, blen < s.at + 8 ? blen : s.at + 8};
                ASSERT_TRUE(key_cmp(cut, e) <= 0);
            }
        }
    }
    ss_buf_free(&end);
}
