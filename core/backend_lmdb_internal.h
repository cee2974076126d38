/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_lmdb_internal.h - what the LMDB backend's files share: the
 * backend's state. backend_lmdb.c holds the data operations,
 * backend_lmdb_life.c the commits and the store's own upkeep (fsyncs,
 * checkpoints, figures), backend_lmdb_backup.c the copies. */
#ifndef SS_BACKEND_LMDB_INTERNAL_H
#define SS_BACKEND_LMDB_INTERNAL_H

#include <pthread.h>

#include "backend_lmdb.h"
#include "latency.h"
#include "worker.h"

/* The worker's jobs. */
enum { SS_LMDB_JOB_COMMIT, SS_LMDB_JOB_SYNC };

enum ss_lmdb_backup_state { SS_LMDB_BACKUP_IDLE, SS_LMDB_BACKUP_WAIT_CHECKPOINT, SS_LMDB_BACKUP_COPYING,
                            SS_LMDB_BACKUP_DONE };

struct ss_lmdb_backup {
    enum ss_lmdb_backup_state state;
    char *path;
    pthread_t thread;
    pthread_mutex_t mu;
    bool done;   /* under mu: the thread finished */
    int rc, err; /* the copy's result and errno */
    uint64_t bytes;
};

struct ss_backend_lmdb {
    ss_backend base; /* first: the interface's impl points back here */
    ss_store *store;
    bool owned;      /* the store is closed with the backend */
    ss_feed pending; /* changes of the open batch (or the commit under way) */
    /* the lifecycle (backend_lmdb_life.c) */
    struct ss_worker worker;
    bool worker_ready;
    int job;          /* the worker's job while worker.busy */
    unsigned next_id; /* of the next commit */
    bool ckpt;        /* the commit under way is a checkpoint */
    bool was_failing, was_lost; /* before it: checkpoints failing, a sync lost */
    bool wrote;       /* the commit under way writes something */
    uint64_t commit_t0;
    bool outcome_ready; /* a finished commit not collected yet */
    ss_commit_outcome outcome;
    struct ss_latency fsync;
    uint64_t journal_bytes; /* as last seen between commits */
    struct ss_lmdb_backup backup;
    /* the administrative page asked for (page_start) */
    ss_buf page_from;
    bool page_asked, page_inclusive;
    size_t page_limit;
};

/* The feed's side of a settled commit (backend_lmdb.c). */
void ss_backend_lmdb__settled(void *impl, int rc, uint64_t upto);

/* The lifecycle's operations (backend.h says what each does). */
int ss_backend_lmdb__start(void *impl, char *why, size_t why_len);
void ss_backend_lmdb__poll(void *impl, uint64_t now_ms);
bool ss_backend_lmdb__accepting(void *impl);
int ss_backend_lmdb__commit_start(void *impl, uint64_t now_ms, bool holds_answers, unsigned *id);
bool ss_backend_lmdb__commit_collect(void *impl, ss_commit_outcome *out);
int ss_backend_lmdb__commit_wait(void *impl);
void ss_backend_lmdb__prefetch(void *impl, ss_bytes key);
int ss_backend_lmdb__page_start(void *impl, ss_bytes from, bool inclusive, size_t limit, bool values);
bool ss_backend_lmdb__page_done(void *impl, ss_backend_page_fn fn, void *ctx, ss_buf *next, int *rc);
void ss_backend_lmdb__figures(void *impl, uint64_t now_ms, ss_figure_fn fn, void *ctx);
const char *ss_backend_lmdb__cause(void *impl);
/* Stop the worker, completing a job under way (at destroy). */
void ss_backend_lmdb__life_stop(struct ss_backend_lmdb *l);
/* Backups (backend_lmdb_backup.c): start, step at every poll between
 * commits, report, and wait for a copy under way (at destroy). */
int ss_backend_lmdb__backup_start(void *impl, const char *path, char *why, size_t why_len);
void ss_backend_lmdb__backup_step(struct ss_backend_lmdb *l);
bool ss_backend_lmdb__backup_done(void *impl, int *rc, int *err, uint64_t *bytes);
void ss_backend_lmdb__backup_stop(struct ss_backend_lmdb *l);

#endif
