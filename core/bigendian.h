/* bigendian.h - fixed-width big-endian integers in byte arrays, the order
 * of every integer the store writes to disk. */
#ifndef SS_BIGENDIAN_H
#define SS_BIGENDIAN_H

#include <stdint.h>

/* Store the low n bytes of v at p, most significant first. */
static inline void ss_put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static inline uint64_t ss_get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

#endif
