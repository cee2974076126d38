/* dedup.h - answers to recent requests, so that a resent request gets its
 * first answer instead of running twice.
 *
 * A request is identified by its client id, its correlation data and a
 * fingerprint of everything else it carried (payload and properties), so
 * clients that reuse correlation data for different requests are not
 * confused. Entries live for window_ms; memory is bounded by max_entries and
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
} ss_dedup_answer;

int ss_dedup_new(const ss_dedup_limits *lim, ss_dedup **out);
void ss_dedup_free(ss_dedup *d);

/* Keyed 64-bit fingerprint of n byte runs (lengths included). */
uint64_t ss_dedup_fingerprint(const ss_dedup *d, const ss_bytes *parts, size_t n);

/* 1 and *out when an entry younger than the window matches, else 0. */
int ss_dedup_find(ss_dedup *d, ss_bytes client, ss_bytes corr, uint64_t fp, uint64_t now_ms,
                  ss_dedup_answer *out);
/* Remember an answer. 0, or SS_E_NOMEM (then nothing is remembered). An
 * entry larger than max_bytes is not kept (returns 0). */
int ss_dedup_put(ss_dedup *d, ss_bytes client, ss_bytes corr, uint64_t fp, uint64_t now_ms,
                 const ss_dedup_answer *a);
/* Drop entries older than the window. */
void ss_dedup_expire(ss_dedup *d, uint64_t now_ms);
/* A mark, and dropping every entry added after it (a batch that failed to
 * commit: its requests never took effect and may run again). */
uint64_t ss_dedup_mark(const ss_dedup *d);
void ss_dedup_forget_since(ss_dedup *d, uint64_t mark);

size_t ss_dedup_count(const ss_dedup *d);
size_t ss_dedup_bytes(const ss_dedup *d);

#endif
