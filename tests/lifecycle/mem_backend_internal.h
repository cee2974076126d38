/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mem_backend_internal.h - what the in-memory backend's files share
 * (mem_backend.h): its state, its records and batches.
 *
 * What is committed is a sorted array of records, deleted keys included
 * (their revision and the version their deletion removed stay, as etcd's
 * tombstones do). A batch is an array of writes, each with the revision
 * it was decided on; committing it compares those with the committed
 * revisions, like etcd's Txn, and applies it whole or not at all. A key
 * that a commit under way writes is pending for reads until that commit
 * is collected, as in the etcd backend: no request decides on a write
 * whose outcome is not known yet.
 */
#ifndef SS_MEM_BACKEND_INTERNAL_H
#define SS_MEM_BACKEND_INTERNAL_H

#include "mem_backend.h"

/* Commits in flight at most (the owner allows four). */
#define SS_MEM_FLIGHTS_MAX 4u
/* Commits whose end a test may choose (later ones are checked). */
#define SS_MEM_ENDS_MAX 64u
/* The clock of the other broker of ss_mem_set_behind (Nov 2023). */
#define SS_MEM_BEHIND_WALL 1700000000000ull
/* Keys whose reads may be pending at once. */
#define SS_MEM_PENDING_MAX 16u

/* A committed record, or a write of a batch (rev: what it was decided on). */
struct ss_mem_rec {
    ss_buf key, value;
    ss_hlc version; /* deleted: the version the deletion removed */
    bool has_ft;
    ss_hlc ft;
    uint64_t expiry_ms;
    bool present;
    ss_revision rev;
};

struct ss_mem_recs {
    struct ss_mem_rec *items;
    size_t len, cap;
};

struct ss_mem_batch {
    struct ss_mem_recs writes;
    ss_feed feed; /* its changes, for the feed once committed */
};

struct ss_mem_flight {
    bool used, done;
    unsigned n; /* the commit's number, its id */
    int rc;
    struct ss_mem_batch batch;
};

struct ss_mem {
    ss_backend base;
    struct ss_mem_options o;
    struct ss_mem_recs committed; /* sorted by key */
    ss_revision rev;              /* the last revision given */
    struct ss_mem_batch open;
    struct ss_mem_flight flights[SS_MEM_FLIGHTS_MAX];
    ss_feed settling; /* the changes of the commit collected last */
    unsigned commits, reads;
    enum ss_mem_end ends[SS_MEM_ENDS_MAX + 1];
    bool hold;
    ss_buf pending[SS_MEM_PENDING_MAX];
    size_t npending;
    unsigned pend_read; /* 0: none */
    bool pend_scans;    /* SCAN's pages are pending */
    ss_buf prefetched;
    ss_buf scratch;
    uint64_t clock_wall;
    uint32_t clock_counter;
    /* The administrative page asked for (page_start). */
    bool page;
    ss_buf page_from;
    bool page_inclusive;
    size_t page_limit;
};

/* ---- records (mem_records.c) ------------------------------------------ */

/* Views of a buffer's or a C string's bytes (borrowed). */
ss_bytes ss_mem__bytes(const ss_buf *b);
ss_bytes ss_mem__str(const char *s);
/* Byte order, a prefix first. */
int ss_mem__cmp(ss_bytes a, ss_bytes b);
void ss_mem__recs_free(struct ss_mem_recs *rs);
/* Where key is in rs, or where it would go in a sorted rs (*found false). */
size_t ss_mem__search(const struct ss_mem_recs *rs, ss_bytes key, bool *found);
/* The write of key in a batch (few, kept in the order they were made), or
 * NULL. */
struct ss_mem_rec *ss_mem__write_of(struct ss_mem_recs *rs, ss_bytes key);
/* The committed record of key (a deletion's trace included), or NULL. */
struct ss_mem_rec *ss_mem__committed(struct ss_mem *m, ss_bytes key);
/* The record of key in rs, made at position at (an empty one), or NULL
 * when memory ran out. */
struct ss_mem_rec *ss_mem__insert(struct ss_mem_recs *rs, size_t at, ss_bytes key);
/* Give r the record rec (present; its value is copied) or, rec NULL, the
 * deletion of version *removed. */
int ss_mem__assign(struct ss_mem_rec *r, const ss_record *rec, const ss_hlc *removed);
/* r as the table returns it: the value borrows r's memory; a deletion
 * sets only the version it removed. */
void ss_mem__to_record(const struct ss_mem_rec *r, ss_record *rec);

/* ---- batches and commits (mem_records.c) ------------------------------- */

void ss_mem__batch_clear(struct ss_mem_batch *b);
void ss_mem__batch_free(struct ss_mem_batch *b);
/* Does a commit under way write key? */
bool ss_mem__in_flight(struct ss_mem *m, ss_bytes key);
/* Are reads of key held pending (ss_mem_pend_key, ss_mem_pend_read)? */
bool ss_mem__pending(const struct ss_mem *m, ss_bytes key);
void ss_mem__pend(struct ss_mem *m, ss_bytes key);
/* The open batch's write of key, made if needed, decided on decided_on:
 * 0, SS_E_CONFLICT (the batch wrote key decided on another revision), or
 * SS_E_NOMEM. */
int ss_mem__write(struct ss_mem *m, ss_bytes key, ss_revision decided_on, struct ss_mem_rec **out);
/* Keep a copy of c in feed, if the owner wants changes of its key. */
void ss_mem__record_change(struct ss_mem *m, ss_feed *feed, const ss_change *c);
/* Write what batch b holds into the committed records, each with a new
 * revision. */
int ss_mem__apply(struct ss_mem *m, const struct ss_mem_batch *b);
/* Did every write of b decide on the revision that is committed now? */
bool ss_mem__fresh(struct ss_mem *m, const struct ss_mem_batch *b);
/* Commit f ends now, as its number's end says (ss_mem_commit_ends); the
 * owner is woken. */
void ss_mem__end(struct ss_mem *m, struct ss_mem_flight *f);

#endif
