/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_walk.h - reading every record under k/ in pages.
 *
 * etcd counts every key of a Range's interval, past its limit
 * (backend_etcd_span.h): a page read up to the last record would cost as
 * much as the rest of the store, and the whole read n^2 / (2 x page) key
 * visits (220,000 records: over 500 million, minutes of etcd's CPU). So
 * each page after the first is read over an interval expected to hold a
 * little more than a page, learnt from the page before, as SCAN's pages
 * are. And a page holds at most SS_ETCD_WALK_PAGE_BYTES of values if each
 * were as large as etcd's request limit: a reply never holds the whole
 * store.
 *
 * Two walks use it: the deadlines' (backend_etcd_sweep.c) and the count
 * of the store's usage (backend_etcd_quota.c).
 */
#ifndef SS_BACKEND_ETCD_WALK_H
#define SS_BACKEND_ETCD_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "backend_etcd_span.h"

#define SS_ETCD_WALK_PAGE 128
#define SS_ETCD_WALK_PAGE_BYTES ((size_t)64 << 20)

struct ss_etcd_walk {
    ss_buf after;      /* the next page's first key (empty: from the start) */
    ss_etcd_span span; /* how far the next page's Range reaches */
    ss_buf end;        /* where the page asked ends (empty: the last record) */
    size_t limit;      /* the records the page asked may hold */
};

/* The next page is the first. */
void ss_etcd_walk_restart(struct ss_etcd_walk *w);
void ss_etcd_walk_free(struct ss_etcd_walk *w);

/* The Range of the next page into out (replaced): from the walk's place,
 * or first (the first record's key, k/ itself) for the first page, to
 * records_end or the span's bound, with values; at revision (0: the
 * latest, linearizable). max_request_bytes sizes the page. 0 or
 * SS_E_NOMEM. */
int ss_etcd_walk_pack(struct ss_etcd_walk *w, ss_bytes first, ss_bytes records_end, size_t max_request_bytes,
                      int64_t revision, ss_buf *out);

/* The page asked came back with n records, from first to last; full:
 * more keys in its interval than it held (etcd's count past n). True when
 * another page follows (the walk's place moved; an empty place after a
 * page that was not the first means out of memory: restart); false when
 * this was the last. */
bool ss_etcd_walk_next(struct ss_etcd_walk *w, ss_bytes first, ss_bytes last, size_t n, bool full);

/* Did w lose its place for want of memory (after ss_etcd_walk_next said
 * another page follows)? */
bool ss_etcd_walk_lost(const struct ss_etcd_walk *w);

#endif
