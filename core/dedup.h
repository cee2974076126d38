/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* dedup.h - answers to recent requests, so that a resent request gets its
 * first answer instead of running twice.
 *
 * A request is identified by its client id, its correlation data and a
 * keyed hash of all it carried (payload and properties), so clients that
 * reuse correlation data for different requests are not confused. Entries live for window_ms; memory is bounded by max_entries and
 * max_bytes (past either, the oldest entries go first). */
#ifndef SS_DEDUP_H
#define SS_DEDUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct ss_dedup ss_dedup;

typedef struct ss_dedup_limits {
    uint64_t window_ms;
    size_t max_entries;
    size_t max_bytes;
} ss_dedup_limits;

/* An answer: the response payload and the version text sent as __ts
 * (len 0: none). Borrowed in ss_dedup_put (copied); in ss_dedup_find it
 * borrows the cache until the next put, expire or forget. */
typedef struct ss_dedup_answer {
    ss_bytes payload;
    ss_bytes version;
    uint64_t seq; /* set by ss_dedup_find: when it was remembered, as
                     ss_dedup_mark counts (ignored by ss_dedup_put) */
    bool final;   /* the answer holds whatever becomes of the batch it was
                     given in: ss_dedup_forget_* keep it */
} ss_dedup_answer;

int ss_dedup_new(const ss_dedup_limits *lim, ss_dedup **out);
void ss_dedup_free(ss_dedup *d);

/* A request's identity: a keyed 64-bit hash of its client id, its
 * correlation data and n (at most SS_DEDUP_MAX_PARTS) further byte runs:
 * everything else it carried. Lengths are included, so runs cannot be
 * shifted into each other. One pass over the request: the table uses it as
 * the hash. */
#define SS_DEDUP_MAX_PARTS 8
uint64_t ss_dedup_id(const ss_dedup *d, ss_bytes client, ss_bytes corr, const ss_bytes *parts,
                     size_t n);

/* 1 and *out when an entry younger than the window has this client,
 * correlation data and id (from ss_dedup_id), else 0. */
int ss_dedup_find(ss_dedup *d, ss_bytes client, ss_bytes corr, uint64_t id, uint64_t now_ms,
                  ss_dedup_answer *out);
/* Remember an answer. 0, or SS_E_NOMEM (then nothing is remembered). An
 * entry larger than max_bytes is not kept (returns 0). */
int ss_dedup_put(ss_dedup *d, ss_bytes client, ss_bytes corr, uint64_t id, uint64_t now_ms,
                 const ss_dedup_answer *a);
/* Drop entries older than the window. */
void ss_dedup_expire(ss_dedup *d, uint64_t now_ms);
/* A mark, and dropping every entry added after it (a batch that failed to
 * commit: its requests never took effect and may run again), but for the
 * final ones. */
uint64_t ss_dedup_mark(const ss_dedup *d);
void ss_dedup_forget_since(ss_dedup *d, uint64_t mark);
/* Drop the entries added after mark `after` up to mark `upto` (one batch
 * of several in flight, whose commit failed), but for the final ones. */
void ss_dedup_forget_range(ss_dedup *d, uint64_t after, uint64_t upto);

size_t ss_dedup_count(const ss_dedup *d);
size_t ss_dedup_bytes(const ss_dedup *d);

#endif
