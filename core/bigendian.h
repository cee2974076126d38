/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* bigendian.h - fixed-width big-endian integers in byte arrays, the order
 * of every integer the store writes to disk. */
#ifndef SS_BIGENDIAN_H
#define SS_BIGENDIAN_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

/* Store the low n bytes of v at p, most significant first. The widths
 * used everywhere (8, 4, 2) are one load or store and a byte swap once
 * inlined with a constant n; the compiler does not see that in the loop. */
static inline void ss_put_be(uint8_t *p, uint64_t v, int n)
{
    if (n == 8) {
        uint64_t w = htobe64(v);
        memcpy(p, &w, 8);
    } else if (n == 4) {
        uint32_t w = htobe32((uint32_t)v);
        memcpy(p, &w, 4);
    } else if (n == 2) {
        uint16_t w = htobe16((uint16_t)v);
        memcpy(p, &w, 2);
    } else {
        for (int i = n - 1; i >= 0; i--) {
            p[i] = (uint8_t)v;
            v >>= 8;
        }
    }
}

static inline uint64_t ss_get_be(const uint8_t *p, int n)
{
    if (n == 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        return be64toh(w);
    }
    if (n == 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        return be32toh(w);
    }
    if (n == 2) {
        uint16_t w;
        memcpy(&w, p, 2);
        return be16toh(w);
    }
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

#endif
