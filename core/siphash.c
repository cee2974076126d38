/* siphash.c - SipHash-2-4 written from the paper's description. */
#include "siphash.h"

static uint64_t ss__rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static uint64_t ss__le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define SS_SIPROUND(v0, v1, v2, v3)                                                 \
    do {                                                                            \
        v0 += v1; v1 = ss__rotl(v1, 13); v1 ^= v0; v0 = ss__rotl(v0, 32);           \
        v2 += v3; v3 = ss__rotl(v3, 16); v3 ^= v2;                                  \
        v0 += v3; v3 = ss__rotl(v3, 21); v3 ^= v0;                                  \
        v2 += v1; v1 = ss__rotl(v1, 17); v1 ^= v2; v2 = ss__rotl(v2, 32);           \
    } while (0)

uint64_t ss_siphash(const uint8_t key[16], const uint8_t *data, size_t len)
{
    uint64_t k0 = ss__le64(key), k1 = ss__le64(key + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ull;
    uint64_t v1 = k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ull;
    uint64_t v3 = k1 ^ 0x7465646279746573ull;
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = ss__le64(data + i);
        v3 ^= m;
        SS_SIPROUND(v0, v1, v2, v3);
        SS_SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    /* Last block: the remaining bytes, and the length in the top byte. */
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; i++)
        b |= (uint64_t)data[whole + i] << (8 * i);
    v3 ^= b;
    SS_SIPROUND(v0, v1, v2, v3);
    SS_SIPROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        SS_SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}
