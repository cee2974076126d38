/* backend_etcd_watch.c - the change feed from etcd's Watch: every change
 * to a record, whichever broker made it (backend_etcd_internal.h).
 *
 * One watch on the records (k/), with each change's previous value, so
 * that a deletion carries the version it removed. The watch resumes after
 * the last revision it delivered when its stream is lost (a member
 * stopped, a connection cut), so no change is skipped; only a history
 * compacted past that revision is lost, and that is logged with the
 * revisions it covers.
 *
 * Order: a writer hears its answer before any notification its write
 * causes. The watch may report a Txn before the Txn's own reply arrives,
 * so what the watch reports is held until the owner settles a commit (at
 * every tick without one under way, and after each one), and goes into
 * the feed after that commit's answers.
 *
 * Before the first watch has started (a broker's first moments, or a
 * cluster unreachable since start), a commit's own changes go into the
 * feed as they did without a watch; once it has, every change comes from
 * the watch and from nowhere else, so none is notified twice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_internal.h"

/* The range of the records: prefix "k/" up to prefix "k0". */
static int ss_etcd__records_range(struct ss_backend_etcd *e)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__key(e, &e->scratch, 'k', 0, none);
    if (rc == SS_OK)
        rc = ss_etcd__key(e, &e->scratch2, 'k', 0, none);
    if (rc == SS_OK)
        e->scratch2.data[e->scratch2.len - 1] = '/' + 1;
    return rc;
}

void ss_etcd__watch_step(struct ss_backend_etcd *e)
{
    if (e->watch != NULL || ss_etcd__mono_ms() < e->watch_retry_ms)
        return;
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_WATCH, SS_ETCD_WATCH_METHOD);
    int rc = op ? ss_etcd__records_range(e) : SS_E_NOMEM;
    /* From the revision after the last one seen (0, the first time: from
     * now on). */
    if (rc == SS_OK)
        rc = ss_etcd_watch_pack(&op->call.request, ss_etcd__bytes(&e->scratch),
                                ss_etcd__bytes(&e->scratch2), e->watch_rev ? e->watch_rev + 1 : 0);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        e->watch_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    op->call.stream = true;
    e->watch = op;
    e->watch_created = false;
    ss_etcd__submit(e, op);
}

/* One change the watch reported. */
static void ss_etcd__watch_event(struct ss_backend_etcd *e, const ss_etcd_event *ev)
{
    int64_t rev = ev->kv.mod_revision;
    if (rev > e->watch_rev)
        e->watch_rev = rev;
    size_t plen = strlen(e->prefix);
    if (ev->key.len < plen + 2 || memcmp(ev->key.data, e->prefix, plen) != 0 ||
        memcmp(ev->key.data + plen, "k/", 2) != 0)
        return;
    ss_bytes key = {ev->key.data + plen + 2, ev->key.len - plen - 2};
    e->stats.watch_events++;
    /* A copy cached from before this change is stale: the next request
     * that wants the key reads it again (rather than fail its compare). */
    ss_etcd__seen_change(e, key, rev);
    if (!ss_backend_wants(&e->base, key))
        return;
    const ss_etcd_kv *state = ev->deleted ? &ev->prev : &ev->kv;
    ss_record rec;
    ss_bytes tail;
    if (!state->found || ss_record_decode(state->value.data, state->value.len, &rec, &tail) != SS_OK) {
        /* No previous value (etcd had compacted it) or not a record:
         * nothing true can be said of this change. */
        e->stats.watch_undecodable++;
        return;
    }
    ss_change c = {.key = key, .version = rec.version};
    if (ev->deleted) {
        c.type = SS_CHANGE_DELETE;
        c.expired = rec.expiry_ms != 0 && rec.expiry_ms <= e->now_ms;
    } else {
        c.type = SS_CHANGE_SET;
        c.value = rec.value;
    }
    if (ss_feed_append(&e->watched, &c) != SS_OK)
        e->stats.watch_undecodable++;
}

/* One message of the watch's stream. */
static void ss_etcd__watch_message(struct ss_backend_etcd *e, ss_bytes msg)
{
    ss_etcd_watch w;
    if (ss_etcd_watch_unpack(msg, &w) != SS_OK) {
        ss_etcd__log(e, SS_ETCD_LOG_ERR, "etcd sent a watch message that cannot be read: watching again");
        ss_grpc_cancel(e->grpc, &e->watch->call);
        return;
    }
    if (w.created) {
        e->watch_created = true;
        if (e->watch_rev == 0) {
            /* The first watch: changes after this revision come from it. */
            e->watch_rev = w.revision;
            e->watch_from = w.revision;
        }
        if (e->watch_logged)
            ss_etcd__log(e, SS_ETCD_LOG_NOTICE, "watching changes again from revision %lld",
                         (long long)e->watch_rev + 1);
        e->watch_logged = false;
    }
    if (w.canceled) {
        if (w.compact_revision > 0) {
            /* The history after the last revision seen is gone: the
             * changes in between can no longer be known. */
            int64_t lost = w.compact_revision - 1 - e->watch_rev;
            ss_etcd__log(e, SS_ETCD_LOG_ERR, "etcd compacted its history past the changes this broker "
                         "had not seen yet: revisions %lld to %lld are lost to observers on this "
                         "broker (keep more history: see CLUSTER.md)",
                         (long long)e->watch_rev + 1, (long long)w.compact_revision - 1);
            if (lost > 0)
                e->stats.watch_lost_revisions += (uint64_t)lost;
            e->watch_rev = w.compact_revision - 1;
        } else {
            ss_etcd__log(e, SS_ETCD_LOG_ERR, "etcd ended the watch on changes (%s): watching again",
                         w.cancel_reason[0] ? w.cancel_reason : "no reason given");
            e->watch_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
        }
        ss_grpc_cancel(e->grpc, &e->watch->call);
    }
    for (size_t i = 0; i < w.n_events; i++) {
        ss_etcd_event ev;
        ss_etcd_watch_event(&w, i, &ev);
        ss_etcd__watch_event(e, &ev);
    }
    /* A progress report: every change up to its revision was sent. */
    if (!w.created && !w.canceled && w.n_events == 0 && w.revision > e->watch_rev)
        e->watch_rev = w.revision;
    e->stats.watch_revision = (uint64_t)e->watch_rev;
    ss_etcd_watch_free(&w);
}

void ss_etcd__watch_read(struct ss_backend_etcd *e)
{
    if (e->watch == NULL)
        return;
    ss_buf_clear(&e->watch_frames);
    if (ss_grpc_stream_take(e->grpc, &e->watch->call, &e->watch_frames) != SS_OK)
        return; /* out of memory: the messages wait for the next poll */
    size_t pos = 0;
    ss_bytes msg;
    while (e->watch && ss_grpc_next_message(&e->watch_frames, &pos, &msg))
        ss_etcd__watch_message(e, msg);
}

void ss_etcd__watch_ended(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    /* Its last messages first. */
    ss_etcd__watch_read(e);
    e->watch = NULL;
    if (e->watch_retry_ms <= ss_etcd__mono_ms())
        e->watch_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
    e->stats.watch_restarts++;
    if (!e->watch_logged && op->call.rc != SS_OK && e->watch_created) {
        ss_etcd__log(e, SS_ETCD_LOG_WARNING, "the watch on changes was lost (%s): watching again after "
                     "revision %lld", ss_etcd__why(&op->call), (long long)e->watch_rev);
        e->watch_logged = true;
    }
}

void ss_etcd__watch_settled(struct ss_backend_etcd *e, int rc)
{
    /* A commit's own changes, unless the watch reports them. */
    bool watched = e->watch_from != 0 && e->commit_revision > e->watch_from;
    if (rc == SS_OK && !watched)
        ss_feed_each(&e->pending, ss_etcd__append, &e->base.feed);
    ss_feed_clear(&e->pending);
    /* What the watch reported, after this commit's answers. */
    ss_feed_each(&e->watched, ss_etcd__append, &e->base.feed);
    ss_feed_clear(&e->watched);
}

int ss_backend_etcd_watch_start(ss_backend *b, unsigned wait_ms)
{
    struct ss_backend_etcd *e = b->impl;
    uint64_t end = ss_etcd__mono_ms() + wait_ms;
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        ss_backend_etcd_poll(b, (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u);
        if (e->watch_created)
            return SS_OK;
        if (ss_etcd__mono_ms() >= end)
            return SS_E_UNAVAILABLE;
        struct timespec pause = {0, 2 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}
