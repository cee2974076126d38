/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* record.c - the byte layout of a stored record (see record.h). */
#include "record.h"

#include <string.h>

#include "bigendian.h"
#include "errors.h"

static size_t ss_record__stamp_size(const ss_hlc *h)
{
    return 8 + 4 + 1 + (size_t)h->node_len;
}

static uint8_t *ss_record__stamp_put(uint8_t *p, const ss_hlc *h)
{
    ss_put_be(p, h->wall, 8);
    ss_put_be(p + 8, h->counter, 4);
    p[12] = h->node_len;
    memcpy(p + 13, h->node, h->node_len);
    return p + 13 + h->node_len;
}

static int ss_record__stamp_get(const uint8_t **p, const uint8_t *end, ss_hlc *h)
{
    if (end - *p < 13)
        return SS_E_CORRUPT;
    h->wall = ss_get_be(*p, 8);
    h->counter = (uint32_t)ss_get_be(*p + 8, 4);
    h->node_len = (*p)[12];
    *p += 13;
    if (end - *p < h->node_len)
        return SS_E_CORRUPT;
    memcpy(h->node, *p, h->node_len);
    *p += h->node_len;
    return SS_OK;
}

int ss_record_decode(const uint8_t *bytes, size_t n, ss_record *rec, ss_bytes *tail)
{
    const uint8_t *p = bytes, *end = bytes + n;
    if (n < 1)
        return SS_E_CORRUPT;
    uint8_t flags = *p++;
    if (ss_record__stamp_get(&p, end, &rec->version) != SS_OK)
        return SS_E_CORRUPT;
    rec->has_ft = (flags & SS_RECORD_FT) != 0;
    if (rec->has_ft && ss_record__stamp_get(&p, end, &rec->ft) != SS_OK)
        return SS_E_CORRUPT;
    rec->expiry_ms = 0;
    if (flags & SS_RECORD_EXPIRY) {
        if (end - p < 8)
            return SS_E_CORRUPT;
        rec->expiry_ms = ss_get_be(p, 8);
        p += 8;
    }
    tail->data = NULL;
    tail->len = 0;
    if (flags & SS_RECORD_LONG_KEY) {
        if (end - p < 4)
            return SS_E_CORRUPT;
        size_t tail_len = (size_t)ss_get_be(p, 4);
        p += 4;
        if ((size_t)(end - p) < tail_len)
            return SS_E_CORRUPT;
        tail->data = p;
        tail->len = tail_len;
        p += tail_len;
    }
    rec->value.data = p;
    rec->value.len = (size_t)(end - p);
    return SS_OK;
}

size_t ss_record_size(const ss_record *rec, size_t tail_len, bool is_long)
{
    size_t n = 1 + ss_record__stamp_size(&rec->version);
    if (rec->has_ft)
        n += ss_record__stamp_size(&rec->ft);
    if (rec->expiry_ms)
        n += 8;
    if (is_long)
        n += 4 + tail_len;
    return n + rec->value.len;
}

void ss_record_encode(uint8_t *p, const ss_record *rec, const uint8_t *tail, size_t tail_len,
                      bool is_long)
{
    uint8_t flags = (uint8_t)((rec->has_ft ? SS_RECORD_FT : 0) | (rec->expiry_ms ? SS_RECORD_EXPIRY : 0) |
                              (is_long ? SS_RECORD_LONG_KEY : 0));
    *p++ = flags;
    p = ss_record__stamp_put(p, &rec->version);
    if (rec->has_ft)
        p = ss_record__stamp_put(p, &rec->ft);
    if (rec->expiry_ms) {
        ss_put_be(p, rec->expiry_ms, 8);
        p += 8;
    }
    if (is_long) {
        ss_put_be(p, tail_len, 4);
        memcpy(p + 4, tail, tail_len);
        p += 4 + tail_len;
    }
    if (rec->value.len)
        memcpy(p, rec->value.data, rec->value.len);
}
