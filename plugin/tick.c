/* tick.c - MOSQ_EVT_TICK, once per broker loop iteration: expire due keys
 * (a bounded number), commit the batch, then publish what waited for it.
 * Kept O(1) when nothing is due and nothing is pending: the broker ticks
 * more than 100 000 times a second under load.
 *
 * A commit that waits for the disk (every commit with fsync=always, and a
 * checkpoint in either mode) is handed to the committer's thread and the
 * tick returns; a later tick (the committer wakes the broker) collects the
 * result, publishes, runs the requests that queued up meanwhile, and hands
 * over the next batch. Other commits (fsync=periodic) write their journal
 * frame here, and the periodic fsync is handed to the committer's thread. */
#include <time.h>

#include "../core/errors.h"
#include "plugin.h"

uint64_t ss_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A commit ended with rc: publish what waited for it (or its errors). */
static void ss__settle(struct ss_plugin *p, int rc)
{
    if (rc != SS_OK) {
        ss_log(p, MOSQ_LOG_ERR, "commit failed, the batch's requests are answered with an error: %s",
               ss_strerror(rc));
        ss_outbox_fail(&p->outbox, rc);
        ss_dedup_forget_since(p->dedup, p->dedup_mark);
    }
    if (p->outbox.len)
        ss_outbox_flush(p);
    p->dedup_mark = ss_dedup_mark(p->dedup);
}

/* The commit under way is done (its result rc): publish, run the queue. */
static void ss__committed(struct ss_plugin *p, int rc)
{
    ss__settle(p, ss_store_commit_finish(p->store, rc, ss_wall_ms()));
    ss_queue_run(p);
}

void ss_commit_wait(struct ss_plugin *p)
{
    int rc;
    if (!p->committer.pending)
        return;
    ss_committer_wait(&p->committer, &rc);
    ss__committed(p, rc);
}

int ss_on_tick(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)event_data;
    struct ss_plugin *p = userdata;
    uint64_t now = ss_wall_ms();
    if (p->committer.pending) {
        int rc;
        if (!ss_committer_collect(&p->committer, &rc))
            return MOSQ_ERR_SUCCESS; /* still writing: its answers wait */
        ss__committed(p, rc);
    } else if (p->committer.syncing) {
        int rc;
        if (ss_committer_collect(&p->committer, &rc)) {
            ss_store_sync_done(p->store, rc);
            if (rc != SS_OK)
                ss_log(p, MOSQ_LOG_ERR, "periodic fsync failed (tried again in %llu ms): %s",
                       (unsigned long long)p->opt.sync_interval_ms, ss_strerror(rc));
        }
    }
    int n = ss_engine_expire(p->engine, now, SS_SWEEP_PER_TICK);
    if (n < 0)
        ss_log(p, MOSQ_LOG_ERR, "expiry sweep failed: %s", ss_strerror(n));
    /* A checkpoint waits for the disk: only with the thread idle (not
     * beside a periodic fsync of the journal). With nothing to commit, an
     * empty batch carries it. */
    bool idle = !p->committer.syncing;
    if (idle && !ss_store_in_batch(p->store) && ss_store_checkpoint_due(p->store, now) &&
        ss_store_begin(p->store) != SS_OK)
        idle = false;
    if (ss_store_in_batch(p->store)) {
        int rc = ss_store_commit_prepare(p->store, now, idle);
        if (rc != SS_OK)
            ss__settle(p, rc);
        else if (ss_store_commit_syncs(p->store)) {
            ss_committer_submit(&p->committer, SS_JOB_COMMIT);
            /* Done already when it ran here, no thread having started:
             * its answers need not wait for the next iteration. */
            int rc2;
            if (ss_committer_collect(&p->committer, &rc2))
                ss__committed(p, rc2);
        } else
            ss__settle(p, ss_store_commit_finish(p->store, ss_store_commit_run(p->store), now));
    } else {
        ss__settle(p, SS_OK); /* answers that needed no batch (KEYNOTIFY) */
    }
    if (p->opt.sync == SS_SYNC_PERIODIC && !p->committer.pending && !p->committer.syncing &&
        ss_store_sync_start(p->store, now))
        ss_committer_submit(&p->committer, SS_JOB_SYNC);
    ss_dedup_expire(p->dedup, now);
    return MOSQ_ERR_SUCCESS;
}
