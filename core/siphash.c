/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* siphash.c - SipHash written from the paper's description: SipHash-2-4
 * (2 compression rounds per word, 4 finalization rounds), and SipHash-1-3
 * for the in-memory tables. The round counts are arguments of the inline
 * helpers; every public function passes constants, so each is compiled
 * with its rounds unrolled. */
#include "siphash.h"

#include <string.h>

static uint64_t ss_siphash__rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

/* Eight bytes as a little-endian word, whatever the host's byte order. */
static uint64_t ss_siphash__le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* The first n (< 8) bytes at p as the low bytes of a little-endian word. */
static uint64_t ss_siphash__le_partial(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    switch (n) {
    case 7:
        v |= (uint64_t)p[6] << 48;
        /* fallthrough */
    case 6:
        v |= (uint64_t)p[5] << 40;
        /* fallthrough */
    case 5:
        v |= (uint64_t)p[4] << 32;
        /* fallthrough */
    case 4:
        v |= (uint64_t)p[3] << 24;
        /* fallthrough */
    case 3:
        v |= (uint64_t)p[2] << 16;
        /* fallthrough */
    case 2:
        v |= (uint64_t)p[1] << 8;
        /* fallthrough */
    case 1:
        v |= p[0];
    }
    return v;
}

#define SS_SIPROUND(v0, v1, v2, v3)                                                 \
    do {                                                                            \
        v0 += v1; v1 = ss_siphash__rotl(v1, 13); v1 ^= v0; v0 = ss_siphash__rotl(v0, 32);           \
        v2 += v3; v3 = ss_siphash__rotl(v3, 16); v3 ^= v2;                                  \
        v0 += v3; v3 = ss_siphash__rotl(v3, 21); v3 ^= v0;                                  \
        v2 += v1; v1 = ss_siphash__rotl(v1, 17); v1 ^= v2; v2 = ss_siphash__rotl(v2, 32);           \
    } while (0)

/* One message word through c compression rounds. */
#define SS_SIPCOMPRESS(v0, v1, v2, v3, m, c)                                        \
    do {                                                                            \
        v3 ^= (m);                                                                  \
        for (int r_ = 0; r_ < (c); r_++)                                            \
            SS_SIPROUND(v0, v1, v2, v3);                                            \
        v0 ^= (m);                                                                  \
    } while (0)

void ss_siphash_init(ss_siphash_state *s, const uint8_t key[16])
{
    uint64_t k0 = ss_siphash__le64(key), k1 = ss_siphash__le64(key + 8);
    s->v0 = k0 ^ 0x736f6d6570736575ull;
    s->v1 = k1 ^ 0x646f72616e646f6dull;
    s->v2 = k0 ^ 0x6c7967656e657261ull;
    s->v3 = k1 ^ 0x7465646279746573ull;
    s->tail = 0;
    s->len = 0;
}

/* The state stays in locals for the whole run of words. */
static inline void ss_siphash__update(ss_siphash_state *s, const void *data, size_t len, int c)
{
    const uint8_t *p = data;
    size_t have = s->len % 8; /* bytes already waiting in tail */
    uint64_t tail = s->tail;
    s->len += len;
    if (have + len < 8) {
        s->tail = tail | ss_siphash__le_partial(p, len) << (8 * have);
        return;
    }
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    if (have) { /* complete the word an earlier piece began */
        tail |= ss_siphash__le_partial(p, 8 - have) << (8 * have);
        SS_SIPCOMPRESS(v0, v1, v2, v3, tail, c);
        p += 8 - have;
        len -= 8 - have;
    }
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t m = ss_siphash__le64(p);
        SS_SIPCOMPRESS(v0, v1, v2, v3, m, c);
    }
    tail = ss_siphash__le_partial(p, len);
    s->v0 = v0;
    s->v1 = v1;
    s->v2 = v2;
    s->v3 = v3;
    s->tail = tail;
}

static inline uint64_t ss_siphash__final(const ss_siphash_state *s, int c, int d)
{
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    /* Last block: the remaining bytes, and the length in the top byte. */
    uint64_t b = s->tail | (uint64_t)s->len << 56;
    SS_SIPCOMPRESS(v0, v1, v2, v3, b, c);
    v2 ^= 0xff;
    for (int i = 0; i < d; i++)
        SS_SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

static inline uint64_t ss_siphash__parts(const uint8_t key[16], const ss_bytes *parts, size_t n, int c,
                                 int d)
{
    ss_siphash_state s;
    ss_siphash_init(&s, key);
    uint64_t v0 = s.v0, v1 = s.v1, v2 = s.v2, v3 = s.v3;
    SS_SIPCOMPRESS(v0, v1, v2, v3, (uint64_t)n, c);
    for (size_t i = 0; i < n; i++)
        SS_SIPCOMPRESS(v0, v1, v2, v3, (uint64_t)parts[i].len, c);
    size_t words = 1 + n;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = parts[i].data;
        size_t len = parts[i].len;
        for (; len >= 8; p += 8, len -= 8, words++) {
            uint64_t m = ss_siphash__le64(p);
            SS_SIPCOMPRESS(v0, v1, v2, v3, m, c);
        }
        if (len) {
            uint64_t m = ss_siphash__le_partial(p, len);
            SS_SIPCOMPRESS(v0, v1, v2, v3, m, c);
            words++;
        }
    }
    s.v0 = v0;
    s.v1 = v1;
    s.v2 = v2;
    s.v3 = v3;
    s.len = 8 * words;
    return ss_siphash__final(&s, c, d);
}

void ss_siphash_update(ss_siphash_state *s, const void *data, size_t len)
{
    ss_siphash__update(s, data, len, 2);
}

uint64_t ss_siphash_final(const ss_siphash_state *s)
{
    return ss_siphash__final(s, 2, 4);
}

static inline uint64_t ss_siphash__oneshot(const uint8_t key[16], const uint8_t *data, size_t len, int c,
                                   int d)
{
    ss_siphash_state s;
    ss_siphash_init(&s, key);
    ss_siphash__update(&s, data, len, c);
    return ss_siphash__final(&s, c, d);
}

uint64_t ss_siphash(const uint8_t key[16], const uint8_t *data, size_t len)
{
    return ss_siphash__oneshot(key, data, len, 2, 4);
}

uint64_t ss_siphash_parts(const uint8_t key[16], const ss_bytes *parts, size_t n)
{
    return ss_siphash__parts(key, parts, n, 2, 4);
}

uint64_t ss_siphash13(const uint8_t key[16], const uint8_t *data, size_t len)
{
    return ss_siphash__oneshot(key, data, len, 1, 3);
}

uint64_t ss_siphash13_parts(const uint8_t key[16], const ss_bytes *parts, size_t n)
{
    return ss_siphash__parts(key, parts, n, 1, 3);
}
