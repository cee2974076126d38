/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_span.c - distances between keys, to bound a page's Range
 * (backend_etcd_span.h). */
#include <string.h>

#include "../core/bigendian.h"
#include "../core/errors.h"
#include "backend_etcd_span.h"

void ss_etcd_span_put(ss_etcd_span s, uint8_t out[SS_ETCD_SPAN_BYTES])
{
    ss_put_be(out, s.at, 4);
    ss_put_be(out + 4, s.delta, 8);
}

ss_etcd_span ss_etcd_span_get(const uint8_t in[SS_ETCD_SPAN_BYTES])
{
    ss_etcd_span s = {(uint32_t)ss_get_be(in, 4), ss_get_be(in + 4, 8)};
    return s;
}

/* The 8 bytes of k from at, as a big-endian number, zeros past its end. */
static uint64_t ss_span__word(ss_bytes k, size_t at)
{
    uint8_t w[8] = {0};
    if (at < k.len)
        memcpy(w, k.data + at, k.len - at < 8 ? k.len - at : 8);
    return ss_get_be(w, 8);
}

ss_etcd_span ss_etcd_span_between(ss_bytes a, ss_bytes b)
{
    size_t c = 0;
    while (c < a.len && c < b.len && a.data[c] == b.data[c])
        c++;
    uint64_t x = ss_span__word(a, c), y = ss_span__word(b, c);
    ss_etcd_span s = {(uint32_t)c, y > x ? y - x : 0};
    if (s.delta == 0) { /* b is a plus zeros, or not after a: the least step */
        s.at = (uint32_t)c + 8;
        s.delta = 1;
    }
    return s;
}

ss_etcd_span ss_etcd_span_scale(ss_etcd_span s, uint64_t num, uint64_t den)
{
    if (s.delta == 0)
        return s;
    /* Keep delta * num within 64 bits: the same distance counted one byte
     * further left is delta / 256 (rounded up, so it never shrinks). */
    while (s.delta > UINT64_MAX / num) {
        if (s.at == 0) {
            s.delta = 0; /* past every key */
            return s;
        }
        s.delta = (s.delta >> 8) + ((s.delta & 0xff) != 0);
        s.at--;
    }
    uint64_t p = s.delta * num;
    s.delta = p / den + (p % den != 0);
    return s;
}

ss_etcd_span ss_etcd_span_of_page(ss_bytes first, ss_bytes last)
{
    return ss_etcd_span_scale(ss_etcd_span_between(first, last), 5, 4);
}

ss_etcd_span ss_etcd_span_after_bound(ss_etcd_span s, size_t n, size_t limit)
{
    uint64_t num = (uint64_t)limit * 5, den = (uint64_t)(n ? n : 1) * 4;
    return num > den * 4 ? ss_etcd_span_scale(s, 4, 1) : ss_etcd_span_scale(s, num, den);
}

bool ss_etcd_span_end(ss_bytes from, ss_etcd_span s, ss_buf *out, bool *nomem)
{
    ss_buf_clear(out);
    *nomem = false;
    if (s.delta == 0)
        return false;
    size_t len = from.len > (size_t)s.at + 8 ? from.len : (size_t)s.at + 8;
    if (ss_buf_reserve(out, len) != SS_OK) {
        *nomem = true;
        return false;
    }
    memcpy(out->data, from.data, from.len);
    memset(out->data + from.len, 0, len - from.len);
    out->len = len;
    /* Add delta to the 8 bytes at `at`, the carry going left. */
    uint64_t carry = 0;
    uint64_t w = ss_get_be(out->data + s.at, 8);
    uint64_t sum = w + s.delta;
    carry = sum < w;
    ss_put_be(out->data + s.at, sum, 8);
    for (size_t i = s.at; carry && i > 0; i--) {
        out->data[i - 1]++;
        carry = out->data[i - 1] == 0;
    }
    if (carry) {
        ss_buf_clear(out);
        return false;
    }
    return true;
}

bool ss_etcd_prefix_end(ss_bytes prefix, ss_buf *out, bool *nomem)
{
    ss_buf_clear(out);
    *nomem = false;
    size_t n = prefix.len;
    while (n > 0 && prefix.data[n - 1] == 0xff)
        n--; /* "a\xff" and all that follows it are before "b" */
    if (n == 0)
        return false;
    if (ss_buf_append(out, prefix.data, n) != SS_OK) {
        *nomem = true;
        return false;
    }
    out->data[n - 1]++;
    return true;
}
