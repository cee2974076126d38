/* siphash.c - SipHash-2-4 written from the paper's description. */
#include "siphash.h"

#include <string.h>

static uint64_t ss__rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

/* Eight bytes as a little-endian word, whatever the host's byte order. */
static uint64_t ss__le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

#define SS_SIPROUND(v0, v1, v2, v3)                                                 \
    do {                                                                            \
        v0 += v1; v1 = ss__rotl(v1, 13); v1 ^= v0; v0 = ss__rotl(v0, 32);           \
        v2 += v3; v3 = ss__rotl(v3, 16); v3 ^= v2;                                  \
        v0 += v3; v3 = ss__rotl(v3, 21); v3 ^= v0;                                  \
        v2 += v1; v1 = ss__rotl(v1, 17); v1 ^= v2; v2 = ss__rotl(v2, 32);           \
    } while (0)

static void ss__compress(ss_siphash_state *s, uint64_t m)
{
    s->v3 ^= m;
    SS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
    SS_SIPROUND(s->v0, s->v1, s->v2, s->v3);
    s->v0 ^= m;
}

void ss_siphash_init(ss_siphash_state *s, const uint8_t key[16])
{
    uint64_t k0 = ss__le64(key), k1 = ss__le64(key + 8);
    s->v0 = k0 ^ 0x736f6d6570736575ull;
    s->v1 = k1 ^ 0x646f72616e646f6dull;
    s->v2 = k0 ^ 0x6c7967656e657261ull;
    s->v3 = k1 ^ 0x7465646279746573ull;
    s->tail = 0;
    s->len = 0;
}

void ss_siphash_update(ss_siphash_state *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    /* Complete a word begun by an earlier piece, a byte at a time. */
    while (len > 0 && s->len % 8 != 0) {
        s->tail |= (uint64_t)*p++ << (8 * (s->len % 8));
        s->len++;
        len--;
        if (s->len % 8 == 0) {
            ss__compress(s, s->tail);
            s->tail = 0;
        }
    }
    for (; len >= 8; p += 8, len -= 8, s->len += 8)
        ss__compress(s, ss__le64(p));
    for (size_t i = 0; i < len; i++)
        s->tail |= (uint64_t)p[i] << (8 * i);
    s->len += len;
}

uint64_t ss_siphash_final(const ss_siphash_state *st)
{
    ss_siphash_state s = *st;
    /* Last block: the remaining bytes, and the length in the top byte. */
    uint64_t b = s.tail | (uint64_t)s.len << 56;
    ss__compress(&s, b);
    s.v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        SS_SIPROUND(s.v0, s.v1, s.v2, s.v3);
    return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t ss_siphash(const uint8_t key[16], const uint8_t *data, size_t len)
{
    ss_siphash_state s;
    ss_siphash_init(&s, key);
    ss_siphash_update(&s, data, len);
    return ss_siphash_final(&s);
}
