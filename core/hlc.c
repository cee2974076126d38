/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* hlc.c - parse, format and compare HLC stamps; the server clock. */
#include "hlc.h"

#include <string.h>

#include "errors.h"

/* One number ended by ':' at *p, not above max; *p moves past the ':'.
 * Up to 19 digits cannot overflow 64 bits, so only longer (zero padded)
 * numbers pay for the overflow check. */
static int ss_hlc__hlc_field(const uint8_t **p, const uint8_t *end, uint64_t max, uint64_t *out)
{
    const uint8_t *s = *p;
    uint64_t v = 0;
    size_t n = 0;
    for (; s < end && *s != ':'; s++, n++) {
        unsigned d = (unsigned)*s - '0';
        if (d > 9)
            return SS_E_TS_MALFORMED;
        if (n >= 19 && (n == SS_HLC_NUM_DIGITS_MAX || v > (UINT64_MAX - d) / 10))
            return SS_E_TS_MALFORMED;
        v = v * 10 + d;
    }
    if (n == 0 || s == end || v > max)
        return SS_E_TS_MALFORMED;
    *p = s + 1;
    *out = v;
    return SS_OK;
}

int ss_hlc_parse(const uint8_t *text, size_t n, ss_hlc *out)
{
    if (n == 0)
        return SS_E_TS_MALFORMED;
    const uint8_t *p = text, *end = text + n;
    uint64_t wall, counter;
    if (ss_hlc__hlc_field(&p, end, UINT64_MAX, &wall) != SS_OK ||
        ss_hlc__hlc_field(&p, end, UINT32_MAX, &counter) != SS_OK)
        return SS_E_TS_MALFORMED;
    size_t node_len = (size_t)(end - p);
    if (node_len > SS_HLC_NODE_MAX || (node_len > 0 && memchr(p, ':', node_len) != NULL))
        return SS_E_TS_MALFORMED;
    out->wall = wall;
    out->counter = (uint32_t)counter;
    out->node_len = (uint8_t)node_len;
    if (node_len > 0)
        memcpy(out->node, p, node_len);
    return SS_OK;
}

size_t ss_hlc_format(const ss_hlc *h, char *out)
{
    size_t n = ss_u64_format(h->wall, out);
    out[n++] = ':';
    n += ss_u64_format(h->counter, out + n);
    out[n++] = ':';
    memcpy(out + n, h->node, h->node_len);
    return n + h->node_len;
}

int ss_hlc_append(ss_buf *b, const ss_hlc *h)
{
    char text[SS_HLC_TEXT_MAX];
    return ss_buf_append(b, text, ss_hlc_format(h, text));
}

int ss_hlc_compare(const ss_hlc *a, const ss_hlc *b)
{
    if (a->wall != b->wall)
        return a->wall < b->wall ? -1 : 1;
    if (a->counter != b->counter)
        return a->counter < b->counter ? -1 : 1;
    size_t n = a->node_len < b->node_len ? a->node_len : b->node_len;
    int c = n ? memcmp(a->node, b->node, n) : 0;
    if (c != 0)
        return c < 0 ? -1 : 1;
    if (a->node_len != b->node_len)
        return a->node_len < b->node_len ? -1 : 1;
    return 0;
}

int ss_clock_init(ss_clock *c, const char *node, size_t node_len)
{
    if (node_len == 0 || node_len > SS_HLC_NODE_MAX || memchr(node, ':', node_len) != NULL)
        return SS_E_INVAL;
    memset(c, 0, sizeof *c);
    memcpy(c->node, node, node_len);
    c->node_len = (uint8_t)node_len;
    return SS_OK;
}

void ss_clock_restore(ss_clock *c, uint64_t wall, uint32_t counter)
{
    if (wall > c->wall || (wall == c->wall && counter > c->counter)) {
        c->wall = wall;
        c->counter = counter;
    }
}

bool ss_hlc_too_far_ahead(const ss_hlc *h, uint64_t now_ms)
{
    return h->wall > now_ms && h->wall - now_ms > SS_HLC_MAX_SKEW_MS;
}

/* Fold one source (wall, counter + 1 as "next") into the running maximum. */
static void ss_hlc__merge(uint64_t *wall, uint64_t *next, uint64_t w, uint64_t n)
{
    if (w > *wall) {
        *wall = w;
        *next = n;
    } else if (w == *wall && n > *next) {
        *next = n;
    }
}

ss_hlc ss_clock_next(ss_clock *c, uint64_t now_ms, const ss_hlc *a, const ss_hlc *b)
{
    /* The generalised receive rule: the new wall clock is the largest of
     * all sources, and the counter is one more than the largest counter
     * among the sources at that wall clock (physical time counts as -1). A
     * stamp with an equal (wall, counter) but a larger node id is exceeded
     * too, because the counter is strictly larger. */
    uint64_t wall = now_ms, next = 0;
    ss_hlc__merge(&wall, &next, c->wall, (uint64_t)c->counter + 1);
    if (a)
        ss_hlc__merge(&wall, &next, a->wall, (uint64_t)a->counter + 1);
    if (b)
        ss_hlc__merge(&wall, &next, b->wall, (uint64_t)b->counter + 1);
    if (next > SS_HLC_COUNTER_MAX && wall < UINT64_MAX) {
        /* The counter is exhausted for this millisecond: move to the next one. */
        wall++;
        next = 0;
    } else if (next > SS_HLC_COUNTER_MAX) {
        /* At the end of time: stay there rather than wrap to 0 (see hlc.h). */
        next = SS_HLC_COUNTER_MAX;
    }
    c->wall = wall;
    c->counter = (uint32_t)next;
    ss_hlc h;
    h.wall = wall;
    h.counter = (uint32_t)next;
    h.node_len = c->node_len;
    memcpy(h.node, c->node, c->node_len);
    return h;
}

/* Raise *wall past a source's wall clock: the smallest wall clock at which
 * counter 0 exceeds the source. */
static void ss_hlc__past(uint64_t *wall, uint64_t w)
{
    if (w >= *wall)
        *wall = w == UINT64_MAX ? w : w + 1;
}

ss_hlc ss_clock_issue(ss_clock *c, uint64_t now_ms, const ss_hlc *a, const ss_hlc *b)
{
    uint64_t wall = now_ms;
    ss_hlc__past(&wall, c->wall);
    if (a)
        ss_hlc__past(&wall, a->wall);
    if (b)
        ss_hlc__past(&wall, b->wall);
    /* Past every source's wall clock, counter 0 is greater than each of
     * them whatever their counters and node ids. Too far ahead of real time
     * (or at the end of time): count by the receive rule instead. */
    if (wall - now_ms > SS_HLC_MAX_LEAD_MS || wall == UINT64_MAX)
        return ss_clock_next(c, now_ms, a, b);
    c->wall = wall;
    c->counter = 0;
    ss_hlc h;
    h.wall = wall;
    h.counter = 0;
    h.node_len = c->node_len;
    memcpy(h.node, c->node, c->node_len);
    return h;
}
