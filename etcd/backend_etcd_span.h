/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_span.h - how far a page's Range may reach.
 *
 * etcd counts every key of a Range's interval, even with a limit (3.4
 * gathers them all, then cuts; 3.5 still walks them to count): a page read
 * as "the next 1000 keys up to the end of the store" costs as much as the
 * rest of the store, and a listing of n keys then costs n^2 / 2000 key
 * visits. A page is therefore read over an interval expected to hold
 * little more than a page: from the key it starts after to that key moved
 * on by a distance learned from the pages before (a span).
 *
 * A span is a distance between byte strings: `delta` counted at byte
 * `at`, i.e. what adding delta to the 8 bytes from `at` (read as one
 * big-endian number, zeros past the end) moves a key by. It is only an
 * estimate: a page that finds its interval too sparse is read again
 * further, and what it lists never depends on it. */
#ifndef SS_BACKEND_ETCD_SPAN_H
#define SS_BACKEND_ETCD_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"

typedef struct ss_etcd_span {
    uint32_t at;
    uint64_t delta; /* 0: no bound, the page reaches the end */
} ss_etcd_span;

/* A span as bytes, in a cursor: at (4) and delta (8), big-endian. */
#define SS_ETCD_SPAN_BYTES 12
void ss_etcd_span_put(ss_etcd_span s, uint8_t out[SS_ETCD_SPAN_BYTES]);
ss_etcd_span ss_etcd_span_get(const uint8_t in[SS_ETCD_SPAN_BYTES]);

/* The distance from a to b, for a < b; the least distance (1 at the byte
 * after their common part's next 8) when they are too close to tell. */
ss_etcd_span ss_etcd_span_between(ss_bytes a, ss_bytes b);

/* s times num / den (num, den >= 1), rounded up: never 0, unless it grows
 * past every key (then no bound). No bound stays no bound. */
ss_etcd_span ss_etcd_span_scale(ss_etcd_span s, uint64_t num, uint64_t den);

/* The span of the page after a full one whose keys ran from first to
 * last: their distance, a quarter more, so that the next page's interval
 * holds a little more than a page where the keys are as dense. */
ss_etcd_span ss_etcd_span_of_page(ss_bytes first, ss_bytes last);

/* The span of the next page when this one, over s, ended at its bound
 * with n keys of a limit of limit: s grown towards a quarter more than
 * the limit, at most 4 times (keys are rarely spread evenly over the
 * bytes: "1000" follows "0999" far off). */
ss_etcd_span ss_etcd_span_after_bound(ss_etcd_span s, size_t n, size_t limit);

/* from moved on by s, into *out (cleared first): a key greater than
 * from. False when s has no bound or the sum passes every key of its
 * length (*out is then empty). 0-padding from to at + 8 bytes is what
 * makes a short key comparable; out may be that long. SS_E_NOMEM is
 * reported as false with *nomem set. */
bool ss_etcd_span_end(ss_bytes from, ss_etcd_span s, ss_buf *out, bool *nomem);

/* The least byte string after every key that starts with prefix, into
 * *out (cleared first): prefix without its trailing 0xff bytes, its last
 * byte then one more ("a/" -> "a0", "a\xff" -> "b"), the end of a Range
 * of those keys. False when there is none: an empty prefix, or one of
 * 0xff bytes alone, which every key after it starts with. SS_E_NOMEM is
 * reported as false with *nomem set. */
bool ss_etcd_prefix_end(ss_bytes prefix, ss_buf *out, bool *nomem);

#endif
