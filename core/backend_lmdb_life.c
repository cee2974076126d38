/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_lmdb_life.c - the LMDB backend's commits and the store's own
 * upkeep: the worker that takes the commits that wait for the disk, the
 * periodic fsync of the journal, checkpoints, administrative pages and
 * figures (backend.h's lifecycle, for backend_lmdb.h).
 *
 * One commit at a time: while it runs on the worker, the store is the
 * worker's and the open batch is closed (accepting is false). A commit that
 * only hands its frame to the operating system (fsync=periodic) runs at
 * once on the owner's thread; its outcome is ready before commit_start
 * returns.
 */
#include <stdio.h>
#include <string.h>

#include "backend_lmdb_internal.h"
#include "errors.h"

/* Keys past their deadline counted for the figures at most. */
#define SS_LMDB_DUE_COUNT_CAP 10000u
/* The worker thread's name, as /proc/PID/task/N/comm shows it. */
#define SS_LMDB_WORKER_NAME "ss-committer"

static bool ss_lmdb__committing(const struct ss_backend_lmdb *l)
{
    return l->worker.busy && l->job == SS_LMDB_JOB_COMMIT;
}

static int ss_lmdb__run_job(void *ctx, int job)
{
    struct ss_backend_lmdb *l = ctx;
    return job == SS_LMDB_JOB_SYNC ? ss_store_sync_run(l->store) : ss_store_commit_run(l->store);
}

/* The worker's wake-up is the owner's (set after construction). */
static void ss_lmdb__wake(void *ctx)
{
    struct ss_backend_lmdb *l = ctx;
    if (l->base.wake)
        l->base.wake(l->base.wake_ctx);
}

int ss_backend_lmdb__start(void *impl, char *why, size_t why_len)
{
    struct ss_backend_lmdb *l = impl;
    bool always = ss_store_options_get(l->store)->sync == SS_SYNC_ALWAYS;
    int rc = ss_worker_start(&l->worker, SS_LMDB_WORKER_NAME, always, ss_lmdb__run_job, l);
    if (rc != SS_OK) {
        snprintf(why, why_len, "cannot start the committing thread");
        return rc;
    }
    l->worker.wake = ss_lmdb__wake;
    l->worker.wake_ctx = l;
    l->worker_ready = true;
    bool damage;
    const char *discarded = ss_store_discarded(l->store, &damage);
    if (discarded[0] != '\0')
        ss_backend_log(&l->base, SS_LOG_WARNING, "%s%s", discarded,
                       damage ? ": look at the disk if the broker had not lost power" : "");
    if (ss_store_checkpoint_failing(l->store, NULL))
        ss_backend_log(&l->base, SS_LOG_WARNING,
                       "the journal's changes could not go into the data file at start (%s); serving "
                       "from the journal, checkpoint tried again later", ss_store_cause(l->store));
    return SS_OK;
}

void ss_backend_lmdb__life_stop(struct ss_backend_lmdb *l)
{
    if (!l->worker_ready)
        return;
    /* A job under way completes; a commit's answers can no longer go out.
     * (Closing the store checkpoints, or else syncs the journal.) */
    bool commit = ss_lmdb__committing(l);
    bool busy = l->worker.busy;
    ss_worker_stop(&l->worker);
    int rc = SS_OK;
    if (busy)
        ss_worker_collect(&l->worker, &rc);
    if (commit && ss_store_commit_finish(l->store, rc, ss_wall_ms()) != SS_OK)
        ss_backend_log(&l->base, SS_LOG_ERR, "the last commit failed at shutdown: %s", ss_store_cause(l->store));
    ss_worker_destroy(&l->worker);
    l->worker_ready = false;
}

/* The commit under way ended with rc (its run's result): finish it in the
 * store, say what changed for checkpoints, and keep the outcome. */
static void ss_lmdb__finished(struct ss_backend_lmdb *l, int rc, uint64_t us)
{
    rc = ss_store_commit_finish(l->store, rc, ss_wall_ms());
    /* The checkpoint's own outcome: a batch that carried a failed one
     * went into the journal and may have succeeded all the same. */
    uint64_t retry;
    bool ckpt_failed = l->ckpt && ss_store_checkpoint_failing(l->store, &retry);
    /* The first failure may come with a batch of reads (nothing kept it
     * from one): it wrote nothing, lost nothing, and its answers stand. */
    if (ckpt_failed && rc != SS_OK && !l->wrote)
        rc = SS_OK;
    if (l->was_failing && l->ckpt && !ckpt_failed)
        ss_backend_log(&l->base, SS_LOG_NOTICE, "checkpoint succeeded again: the journal is in the data file");
    if (l->was_lost && l->ckpt && !ckpt_failed)
        ss_backend_log(&l->base, SS_LOG_NOTICE, "checkpoint after the failed fsync succeeded: every "
                                                "acknowledged write is on disk again");
    l->outcome.logged = false;
    if (ckpt_failed) {
        /* A checkpoint that fails loses nothing (the journal keeps what it
         * would have written) and is tried again later: say so. Its batch
         * went into the journal; if even that failed, its requests fail,
         * and this line is their failure's too. */
        uint64_t now = ss_wall_ms();
        unsigned long long next = retry > now ? retry - now : 0;
        if (rc == SS_OK)
            ss_backend_log(&l->base, SS_LOG_ERR,
                           "checkpoint failed (%s); the journal keeps every acknowledged write; next try in "
                           "%llu ms", ss_store_cause(l->store), next);
        else
            ss_backend_log(&l->base, SS_LOG_ERR,
                           "checkpoint failed (%s): the batch's requests fail; the journal keeps every "
                           "acknowledged write; next try in %llu ms", ss_store_cause(l->store), next);
        l->outcome.logged = true;
    }
    l->outcome.rc = rc;
    l->outcome.us = us;
    l->outcome_ready = true;
    l->journal_bytes = ss_store_journal_bytes(l->store);
    /* Right after a checkpoint, before the next batch opens, the data
     * file holds everything: the moment a backup waits for. Under a
     * steady load there is no other (poll comes while a batch is open). */
    if (l->ckpt && rc == SS_OK)
        ss_backend_lmdb__backup_step(l);
}

/* The periodic fsync of the journal, when due and the worker is idle. */
static void ss_lmdb__maybe_sync(struct ss_backend_lmdb *l, uint64_t now_ms)
{
    if (!l->worker_ready || l->worker.busy || ss_store_options_get(l->store)->sync != SS_SYNC_PERIODIC)
        return;
    if (ss_store_sync_start(l->store, now_ms)) {
        l->job = SS_LMDB_JOB_SYNC;
        ss_worker_submit(&l->worker, SS_LMDB_JOB_SYNC, false); /* nothing waits for it */
    }
}

void ss_backend_lmdb__poll(void *impl, uint64_t now_ms)
{
    (void)now_ms;
    struct ss_backend_lmdb *l = impl;
    int rc;
    if (l->worker_ready && l->worker.busy && l->job == SS_LMDB_JOB_SYNC && ss_worker_collect(&l->worker, &rc)) {
        ss_latency_add(&l->fsync, l->worker.job_us);
        ss_store_sync_done(l->store, rc);
        if (rc != SS_OK)
            ss_backend_log(&l->base, SS_LOG_ERR,
                           "%s: writes acknowledged since the last good fsync may not be on disk (the "
                           "kernel may drop what it could not write, so a later fsync proves nothing); "
                           "a checkpoint now writes the whole state into the data file",
                           ss_store_cause(l->store));
    }
    if (!ss_lmdb__committing(l))
        ss_backend_lmdb__backup_step(l);
}

bool ss_backend_lmdb__accepting(void *impl)
{
    struct ss_backend_lmdb *l = impl;
    return !ss_lmdb__committing(l) && !l->outcome_ready;
}

int ss_backend_lmdb__commit_start(void *impl, uint64_t now_ms, bool holds_answers, unsigned *id)
{
    struct ss_backend_lmdb *l = impl;
    if (ss_lmdb__committing(l) || l->outcome_ready)
        return SS_E_BUSY;
    /* A checkpoint waits for the disk: only with the worker idle (not
     * beside a periodic fsync of the journal). With nothing to commit, an
     * empty batch carries it. */
    bool idle = !l->worker.busy;
    if (idle && !ss_store_in_batch(l->store) && ss_store_checkpoint_due(l->store, now_ms) &&
        ss_store_begin(l->store) != SS_OK)
        idle = false;
    if (!ss_store_in_batch(l->store)) {
        ss_lmdb__maybe_sync(l, now_ms);
        return SS_E_NOTFOUND;
    }
    /* While checkpoints fail (a full disk), only a batch without answers
     * carries the next try: its failure must not turn the answers of
     * reads and journaled writes into errors. */
    bool may_checkpoint = idle && (!holds_answers || !ss_store_checkpoint_failing(l->store, NULL));
    l->wrote = ss_store_batch_dirty(l->store);
    int rc = ss_store_commit_prepare(l->store, now_ms, may_checkpoint);
    if (rc != SS_OK)
        return rc;
    l->ckpt = ss_store_commit_is_checkpoint(l->store);
    l->was_failing = l->ckpt && ss_store_checkpoint_failing(l->store, NULL);
    l->was_lost = l->ckpt && ss_store_sync_lost(l->store);
    l->outcome.id = *id = ++l->next_id;
    if (ss_store_commit_syncs(l->store) && l->worker_ready) {
        l->job = SS_LMDB_JOB_COMMIT;
        ss_worker_submit(&l->worker, SS_LMDB_JOB_COMMIT, true);
        /* Done already when it ran here, no thread having started. */
        int rc2;
        if (ss_worker_collect(&l->worker, &rc2))
            ss_lmdb__finished(l, rc2, l->worker.job_us);
    } else {
        uint64_t t0 = ss_mono_us();
        int rc2 = ss_store_commit_run(l->store);
        ss_lmdb__finished(l, rc2, ss_mono_us() - t0);
        ss_lmdb__maybe_sync(l, now_ms);
    }
    return SS_OK;
}

bool ss_backend_lmdb__commit_collect(void *impl, ss_commit_outcome *out)
{
    struct ss_backend_lmdb *l = impl;
    int rc;
    if (!l->outcome_ready && ss_lmdb__committing(l) && ss_worker_collect(&l->worker, &rc))
        ss_lmdb__finished(l, rc, l->worker.job_us);
    if (!l->outcome_ready)
        return false;
    *out = l->outcome;
    l->outcome_ready = false;
    return true;
}

int ss_backend_lmdb__commit_wait(void *impl)
{
    struct ss_backend_lmdb *l = impl;
    int rc;
    if (!l->outcome_ready && ss_lmdb__committing(l)) {
        ss_worker_wait(&l->worker, &rc);
        ss_lmdb__finished(l, rc, l->worker.job_us);
    }
    return SS_OK;
}

void ss_backend_lmdb__prefetch(void *impl, ss_bytes key)
{
    (void)impl; /* reads are at hand */
    (void)key;
}

int ss_backend_lmdb__page_start(void *impl, ss_bytes from, bool inclusive, size_t limit, bool values)
{
    (void)values; /* values are never kept apart */
    struct ss_backend_lmdb *l = impl;
    if (l->page_asked)
        return SS_E_BUSY;
    ss_buf_clear(&l->page_from);
    int rc = ss_buf_append(&l->page_from, from.data, from.len);
    if (rc != SS_OK)
        return rc;
    l->page_asked = true;
    l->page_inclusive = inclusive;
    l->page_limit = limit;
    return SS_OK;
}

/* The owner's visitor, under the store's walk (whose own cursor names the
 * last key seen). */
struct ss_lmdb_visit {
    ss_backend_page_fn fn;
    void *ctx;
};

static bool ss_lmdb__visit(void *ctx, ss_bytes key, ss_bytes cursor, const ss_record *rec)
{
    (void)cursor;
    struct ss_lmdb_visit *v = ctx;
    return v->fn(v->ctx, key, rec);
}

/* Pages are read at once, in the owner's call. A page of one key (INSPECT)
 * is a batch of its own that writes nothing: it reads what is
 * committed. */
bool ss_backend_lmdb__page_done(void *impl, ss_backend_page_fn fn, void *ctx, ss_buf *next, int *rc)
{
    struct ss_backend_lmdb *l = impl;
    ss_bytes from = {l->page_from.data, l->page_from.len};
    l->page_asked = false;
    ss_buf_clear(next);
    if (!l->page_inclusive) {
        struct ss_lmdb_visit v = {fn, ctx};
        ss_bytes every = {NULL, 0}; /* an administrative page: no prefix */
        *rc = ss_store_scan(l->store, from, every, l->page_limit, ss_lmdb__visit, &v, next);
        return true;
    }
    if ((*rc = ss_store_begin(l->store)) != SS_OK)
        return true;
    ss_record rec;
    *rc = ss_store_get(l->store, from, &rec);
    if (*rc == SS_OK)
        (void)fn(ctx, from, &rec);
    else if (*rc == SS_E_NOTFOUND)
        *rc = SS_OK;
    ss_store_abort(l->store);
    return true;
}

void ss_backend_lmdb__figures(void *impl, uint64_t now_ms, ss_figure_fn fn, void *ctx)
{
    struct ss_backend_lmdb *l = impl;
    const ss_store_options *o = ss_store_options_get(l->store);
    ss_figure_u64(fn, ctx, "keys", ss_store_key_count(l->store));
    ss_figure_u64(fn, ctx, "bytes", ss_store_byte_count(l->store));
    ss_figure_u64(fn, ctx, "limits/max_keys", o->max_keys);
    ss_figure_u64(fn, ctx, "limits/max_bytes", o->max_bytes);
    /* While a commit runs, the store is the worker's: the journal's size
     * is the one seen last, and the backlog is not counted. */
    bool committing = ss_lmdb__committing(l);
    if (!committing)
        l->journal_bytes = ss_store_journal_bytes(l->store);
    ss_figure_u64(fn, ctx, "journal/bytes", l->journal_bytes);
    ss_figure_u64(fn, ctx, "checkpoint/last", ss_store_last_checkpoint_ms(l->store) / 1000);
    ss_figure_u64(fn, ctx, "expiry/backlog",
                  committing ? 0 : ss_store_due_count(l->store, now_ms, SS_LMDB_DUE_COUNT_CAP));
    uint64_t p50, p99;
    ss_latency_take(&l->fsync, &p50, &p99);
    ss_figure_u64(fn, ctx, "fsync/p50_us", p50);
    ss_figure_u64(fn, ctx, "fsync/p99_us", p99);
}

const char *ss_backend_lmdb__cause(void *impl)
{
    struct ss_backend_lmdb *l = impl;
    return ss_store_cause(l->store);
}
