/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* buf.c - growable byte buffer; see buf.h. */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

int ss_buf_reserve(ss_buf *b, size_t extra)
{
    if (extra <= b->cap - b->len)
        return SS_OK;
    if (extra > SIZE_MAX / 2 - b->len)
        return SS_E_NOMEM;
    size_t need = b->len + extra;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    uint8_t *p = realloc(b->data, cap);
    if (p == NULL)
        return SS_E_NOMEM;
    b->data = p;
    b->cap = cap;
    return SS_OK;
}

int ss_buf_append(ss_buf *b, const void *data, size_t len)
{
    if (len == 0)
        return SS_OK;
    int rc = ss_buf_reserve(b, len);
    if (rc != SS_OK)
        return rc;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return SS_OK;
}

int ss_buf_append_str(ss_buf *b, const char *s)
{
    return ss_buf_append(b, s, strlen(s));
}

/* Two digits per division: version stamps are formatted for every answer. */
static const char ss_digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                        "25262728293031323334353637383940414243444546474849"
                                        "50515253545556575859606162636465666768697071727374"
                                        "75767778798081828384858687888990919293949596979899";

size_t ss_u64_format(uint64_t v, char out[20])
{
    size_t n = 1;
    for (uint64_t p = 10; n < 20 && v >= p; p *= 10)
        n++;
    size_t i = n;
    while (v >= 100) {
        size_t d = (size_t)(v % 100) * 2;
        v /= 100;
        out[--i] = ss_digit_pairs[d + 1];
        out[--i] = ss_digit_pairs[d];
    }
    if (v >= 10) {
        out[--i] = ss_digit_pairs[v * 2 + 1];
        out[--i] = ss_digit_pairs[v * 2];
    } else {
        out[--i] = (char)('0' + v);
    }
    return n;
}

int ss_buf_append_u64(ss_buf *b, uint64_t v)
{
    char d[20];
    return ss_buf_append(b, d, ss_u64_format(v, d));
}

int ss_buf_append_i64(ss_buf *b, int64_t v)
{
    if (v >= 0)
        return ss_buf_append_u64(b, (uint64_t)v);
    int rc = ss_buf_append(b, "-", 1);
    if (rc != SS_OK)
        return rc;
    /* -(v + 1) + 1 avoids overflow for INT64_MIN. */
    return ss_buf_append_u64(b, (uint64_t)(-(v + 1)) + 1);
}

void ss_buf_clear(ss_buf *b)
{
    b->len = 0;
}

void ss_buf_free(ss_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
