/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mem_backend.h - a third backend, in memory, for the lifecycle's tests.
 *
 * It implements the whole storage interface (core/backend.h) the way a
 * shared engine does: several commits in flight, each key with a revision
 * so that a write decided on an old revision conflicts for real, reads
 * that may be pending. Nothing happens by itself: the test decides when a
 * read answers and when a commit ends, and how, through the hooks below,
 * so that every path of the owner's lifecycle (plugin/batch.c) runs
 * deterministically, without timing.
 *
 * Commits are numbered from 1 in the order commit_start started them; that
 * number is also the id commit_collect reports. Reads are numbered from 1
 * in the order read was called. Keys and values in the hooks are C
 * strings. Single-threaded: everything runs on the test's thread.
 */
#ifndef SS_MEM_BACKEND_H
#define SS_MEM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "../../core/backend.h"

struct ss_mem_options {
    unsigned max_flights; /* 1: like LMDB, no request runs while a commit is under way */
    bool may_conflict;    /* what the table says; conflicts are checked either way */
    bool blocks;          /* commit_wait ends the commits under way (LMDB); else SS_E_BUSY (etcd) */
};

/* How a commit ends (ss_mem_commit_ends). */
enum ss_mem_end {
    SS_MEM_END_CHECKED = 0, /* as the revisions decide: 0, or SS_E_CONFLICT */
    SS_MEM_END_CONFLICT,    /* SS_E_CONFLICT whatever the revisions say; nothing written */
    SS_MEM_END_FAIL,        /* SS_E_IO; nothing written */
    /* The outcome stays unknown, as etcd reports a commit whose reply was
     * lost and that its fence could not settle: SS_E_UNAVAILABLE, and the
     * writes did take effect (the worst case for a client). */
    SS_MEM_END_UNKNOWN,
};

/* A new empty backend. 0 or SS_E_NOMEM. Freed by ops->destroy. */
int ss_mem_new(const struct ss_mem_options *o, ss_backend **out);

/* ---- hooks ------------------------------------------------------------ */

/* Every read of key is pending (SS_E_PENDING) until ss_mem_release_reads. */
void ss_mem_pend_key(ss_backend *b, const char *key);
/* The read number n, and every later read of the same key, is pending
 * until ss_mem_release_reads. */
void ss_mem_pend_read(ss_backend *b, unsigned n);
/* SCAN's pages are pending (as on etcd, where each is a Range) until
 * ss_mem_release_reads. */
void ss_mem_pend_scans(ss_backend *b);
/* Pending reads (and pages) answer from now on; the owner is woken. */
void ss_mem_release_reads(ss_backend *b);
/* Commit number n ends as end says (the default: SS_MEM_END_CHECKED). */
void ss_mem_commit_ends(ss_backend *b, unsigned n, enum ss_mem_end end);
/* While hold is true, commits started stay under way until released;
 * false (the default) ends each as soon as it starts. */
void ss_mem_hold_commits(ss_backend *b, bool hold);
/* End commit number n (0: the oldest under way) now. False when it is not
 * under way. */
bool ss_mem_release_commit(ss_backend *b, unsigned n);
/* Another broker sets key to value (a new revision r; its version is
 * 1700000000000+r:0:other; the change reaches the feed as etcd's watch
 * brings it). 0 or SS_E_NOMEM. */
int ss_mem_set_behind(ss_backend *b, const char *key, const char *value);
/* Another broker, its clock ahead, deletes key, whose last version had
 * wall clock removed_wall (node "other"): the deletion's trace keeps that
 * version, as etcd's tombstone does. 0 or SS_E_NOMEM. */
int ss_mem_delete_behind(ss_backend *b, const char *key, uint64_t removed_wall);

/* ---- what the backend saw --------------------------------------------- */

/* Commits started so far. */
unsigned ss_mem_commits(const ss_backend *b);
/* Reads so far (pending ones included). */
unsigned ss_mem_reads(const ss_backend *b);
/* The keys prefetch was asked for, in order, separated by spaces. */
const char *ss_mem_prefetched(const ss_backend *b);
/* The committed value of key as a C string (borrowed until the next call
 * on b), or NULL when absent. */
const char *ss_mem_value(ss_backend *b, const char *key);

#endif
