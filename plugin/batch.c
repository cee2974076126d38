/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* batch.c - the life of a request: run, queue, commit, answer (batch.h).
 *
 * Batches are numbered; the open one is b->seq. An answer or notification
 * that depends on the open batch's commit records that number in the
 * outbox (0: it depends on nothing), so that a failed commit turns exactly
 * those into errors. One request is run by batch_exec.c; the answers it
 * queues are built in batch_answer.c.
 */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/command.h"
#include "../core/errors.h"
#include "admin.h"
#include "backup.h"
#include "batch_internal.h"
#include "notify.h"
#include "outbox.h"
#include "plugin.h"
#include "queue.h"
#include "waker.h"

/* Due keys counted for the metrics at most. */
#define SS_DUE_COUNT_CAP 10000u
/* Expired keys deleted per tick at most. */
#define SS_SWEEP_PER_TICK 1000u
/* Queued requests whose keys are read ahead (see ss_batch__prefetch). */
#define SS_PREFETCH_AHEAD 256u

/* ---- running a request ------------------------------------------------- */

/* Are the answers held at their bound? The outbox's messages (answers
 * waiting for their commit: a GET's holds a copy of its value, up to the
 * broker's message_size_limit, for a request of a few bytes) and the
 * copies kept to run requests again on a conflict count against
 * max_queued_bytes, apart from the queued requests: past it no request
 * runs (each waits in the queue, in order) until a flush gives bytes
 * back. With nothing held it is never full, so that an answer larger
 * than the bound still runs, alone: the queue always moves. */
static bool ss_batch__answers_full(const struct ss_batch *b)
{
    uint64_t held = b->outbox.bytes + b->copy_bytes;
    return held > 0 && held >= b->p->opt.max_queued_bytes;
}

/* Keep a request for the next batch; takes what r holds. */
static void ss_batch__enqueue(struct ss_batch *b, const struct ss_request_from *in,
                              struct ss_request_props *r)
{
    struct ss_queued *e = ss_qlist_reserve(&b->queue, 1);
    if (e == NULL || !ss_queued_hold(e, in, false)) {
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: a request from %s was not answered",
               in->client_id);
        ss_request_props_free(r);
        return;
    }
    e->r = *r;
    memset(r, 0, sizeof *r); /* now the queue's */
    b->queue.len++;
    b->queue_bytes += ss_queued_size(e);
}

/* Run a request in the open batch. On a backend whose commits may
 * conflict, a copy is kept until the batch's commit settles: if the
 * commit finds data changed by someone else, the request runs again
 * (ss_batch__rerun). */
static bool ss_batch__run(struct ss_batch *b, const struct ss_request_from *in, bool gone,
                          struct ss_request_props *r)
{
    bool held;
    if (!b->p->backend->ops->may_conflict)
        return ss_batch__execute(b, in, gone, r, &held);
    struct ss_queued *e = ss_qlist_reserve(&b->ran, 1);
    struct ss_queued copy;
    bool kept = e && ss_queued_hold(&copy, in, gone);
    if (kept && !ss_request_props_dup(r, &copy.r)) {
        free(copy.payload);
        free(copy.client_id);
        free(copy.username);
        kept = false;
    }
    if (!kept)
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: a request from %s is not kept to run again "
               "on a conflict", in->client_id);
    bool done = ss_batch__execute(b, in, gone, r, &held);
    if (done && kept && held) {
        b->ran.items[b->ran.len++] = copy;
        b->copy_bytes += ss_queued_size(&copy);
    } else if (kept)
        ss_queued_free(&copy);
    return done;
}

/* The command of a queued request; false when it does not parse (it is
 * answered with its error when it runs). cmd borrows e's payload. */
static bool ss_batch__command_of(const struct ss_queued *e, ss_command *cmd)
{
    ss_codec_limits lim = ss_codec_limits_default();
    ss_request req;
    size_t used;
    return ss_codec_decode_request(e->payload, e->len, &lim, &req, &used) == SS_OK &&
           ss_command_parse(&req, cmd) == SS_OK;
}

/* Start reading the keys of the requests queued behind one that
 * waits for its key (up to SS_PREFETCH_AHEAD of them), so that their
 * reads overlap instead of following each other. Each queued request is
 * looked at once: b->prefetched counts those, from the queue's front. */
static void ss_batch__prefetch(struct ss_batch *b, size_t from)
{
    size_t start = b->prefetched > from ? b->prefetched : from;
    size_t end = b->queue.len - from > SS_PREFETCH_AHEAD ? from + SS_PREFETCH_AHEAD : b->queue.len;
    for (size_t i = start; i < end; i++) {
        ss_command cmd;
        if (ss_batch__command_of(&b->queue.items[i], &cmd) && cmd.type != SS_CMD_KEYNOTIFY &&
            cmd.type != SS_CMD_SCAN)
            b->p->backend->ops->prefetch(b->p->backend->impl, cmd.key);
    }
    if (end > b->prefetched)
        b->prefetched = end;
}

/* Is e a SCAN? */
static bool ss_batch__is_scan(const struct ss_queued *e)
{
    ss_command cmd;
    return ss_batch__command_of(e, &cmd) && cmd.type == SS_CMD_SCAN;
}

static uint64_t ss_batch__lister_hash(const struct ss_batch *b, const char *id)
{
    return ss_table_hash(&b->listers, (const uint8_t *)id, strlen(id));
}

/* Room for one more listing client after the nlisting in the table: made
 * when a SCAN needs it (a run of the queue without one costs nothing).
 * Growing moves the nodes, so they leave the table while they move. False
 * when it cannot grow (then the listing holds the queue as any waiting
 * request does). */
static bool ss_batch__lister_room(struct ss_batch *b, size_t nlisting)
{
    if (nlisting < b->lister_cap)
        return true;
    size_t cap = b->lister_cap ? b->lister_cap * 2 : 16;
    for (size_t i = 0; i < nlisting; i++)
        ss_table_remove(&b->listers, &b->lister_room[i].node);
    struct ss_batch_lister *room = realloc(b->lister_room, cap * sizeof *room);
    if (room != NULL) {
        b->lister_room = room;
        b->lister_cap = cap;
    }
    for (size_t i = 0; i < nlisting; i++)
        ss_table_insert(&b->listers, &b->lister_room[i].node,
                        ss_batch__lister_hash(b, b->lister_room[i].client_id));
    return room != NULL;
}

static bool ss_batch__listing(const struct ss_batch *b, const char *id)
{
    uint64_t h = ss_batch__lister_hash(b, id);
    for (ss_table_node *n = ss_table_find(&b->listers, h); n; n = ss_table_next(n, h))
        if (strcmp(((struct ss_batch_lister *)(void *)n)->client_id, id) == 0)
            return true;
    return false;
}

/* Run the requests that waited for the last commit, in arrival order. One
 * that must run again (backend.h) stops the run: it and every later one
 * stay queued, in order, so that no request overtakes an earlier one.
 * Except a SCAN whose page is being read (on etcd a Range of up to 1000
 * records, which takes a while): it holds only the later requests of its
 * own client, whose answers keep their order, while the others run. A
 * listing promises nothing of other clients' writes during it
 * (PROTOCOL.md section 9.4), so they need not wait for its pages.
 * The answers held reaching their bound (ss_batch__answers_full) stop the
 * run the same way: the rest runs once a flush freed them. True when
 * that stopped it. */
static bool ss_batch__run_queue(struct ss_batch *b)
{
    size_t nlisting = 0, n = b->queue.len, kept = 0, front = 0, stop = 0;
    bool stopped = false, gaps = false, full = false;
    for (size_t i = 0; i < n; i++) {
        struct ss_queued *e = &b->queue.items[i];
        if (!stopped && ss_batch__answers_full(b)) {
            stopped = full = true;
            stop = kept;
        }
        if (!stopped && (nlisting == 0 || !ss_batch__listing(b, e->client_id))) {
            struct ss_request_from in = {e->payload, e->len, e->client_id, e->username};
            /* Weighed before it runs: its answer takes its response
             * topic and correlation data. */
            uint64_t size = ss_queued_size(e);
            if (ss_batch__run(b, &in, e->gone, &e->r)) {
                b->queue_bytes -= size;
                ss_queued_free(e);
                front += kept == 0;
                gaps |= kept != 0;
                continue;
            }
            if (ss_batch__is_scan(e) && ss_batch__lister_room(b, nlisting)) {
                struct ss_batch_lister *l = &b->lister_room[nlisting++];
                l->client_id = e->client_id;
                ss_table_insert(&b->listers, &l->node, ss_batch__lister_hash(b, e->client_id));
            } else {
                stopped = true;
                stop = kept;
            }
        }
        if (kept != i)
            b->queue.items[kept] = *e;
        kept++;
    }
    for (size_t i = 0; i < nlisting; i++)
        ss_table_remove(&b->listers, &b->lister_room[i].node);
    b->queue.len = kept;
    if (kept == 0)
        b->queue_bytes = 0;
    /* What was read ahead: counted from the front, which moved; after a
     * gap, from the start again (a key being read is not read twice). */
    b->prefetched = gaps ? 0 : b->prefetched > front ? b->prefetched - front : 0;
    /* Held back by a read: the keys behind it are read meanwhile. Not by
     * the bound on answers: reading ahead would only hold more memory. */
    if (stopped && !full)
        ss_batch__prefetch(b, stop + 1);
    return full;
}

void ss_batch_client_gone(struct ss_batch *b, const char *client_id)
{
    b->p->metrics.notifications_dropped += ss_outbox_client_gone(&b->outbox, client_id);
    ss_qlist_mark_gone(&b->queue, client_id);
    ss_qlist_mark_gone(&b->ran, client_id);
    for (size_t i = 0; i < b->nflights; i++)
        ss_qlist_mark_gone(&b->flights[i].ran, client_id);
}

/* ---- commits ----------------------------------------------------------- */

/* Log a failed commit with its cause (unless the backend said it in its
 * own words, as for a checkpoint that failed and costs no write). */
static void ss_batch__log_failure(struct ss_batch *b, uint64_t seq, const ss_commit_outcome *o)
{
    struct ss_plugin *p = b->p;
    bool answers = ss_outbox_count(&b->outbox, seq) != 0;
    const char *cause = p->backend->ops->cause(p->backend->impl);
    if (cause == NULL || cause[0] == '\0')
        cause = ss_strerror(o->rc);
    if (!o->logged)
        ss_log(p, MOSQ_LOG_ERR, "a write to the store failed (%s)%s", cause,
               answers ? "; the requests of its batch are answered with an error" : "");
    else if (answers)
        ss_log(p, MOSQ_LOG_ERR, "the requests of the failed commit are answered with an error");
}

/* Publish what waits for nothing any more: the answers of the open batch
 * and of those in flight stay, and so do those of any batch after the
 * oldest in flight (one with nothing to commit, or whose commit ended
 * first), so that a client's answers keep the order of its requests. */
/* The oldest batch whose changes are not all told yet: the open one, or
 * one in flight. */
static uint64_t ss_batch__oldest(const struct ss_batch *b)
{
    uint64_t from = b->seq;
    for (size_t i = 0; i < b->nflights; i++)
        if (b->flights[i].used && b->flights[i].seq < from)
            from = b->flights[i].seq;
    return from;
}

static void ss_batch__flush(struct ss_batch *b)
{
    if (b->outbox.len == 0)
        return;
    ss_outbox_flush_from(&b->outbox, b->p, ss_batch__oldest(b));
}

uint64_t ss_batch_open_seq(const struct ss_batch *b)
{
    return b->seq;
}

/* A batch's commit ended as o says (its resend cache entries after mark
 * `after` up to `upto`): publish what waited for it (or its errors). */
static void ss_batch__ended(struct ss_batch *b, uint64_t seq, uint64_t after, uint64_t upto,
                            const ss_commit_outcome *o)
{
    struct ss_plugin *p = b->p;
    if (o->rc != SS_OK) {
        if (ss_outbox_count(&b->outbox, seq))
            p->metrics.commits_failed++;
        ss_batch__log_failure(b, seq, o);
        ss_outbox_fail(&b->outbox, seq, o->rc);
        ss_dedup_forget_range(p->dedup, after, upto);
    }
    /* The change feed: what was committed notifies its observers, after
     * the answers (a writer hears of its write before its observers). A
     * KEYNOTIFY ... STOP goes once every change made before it, in its
     * batch or an earlier one, has been told: at the feed's TOLD mark of
     * the batches before the oldest still open or in flight (a batch with
     * nothing to commit settles while an earlier one flies; notify.c). */
    p->backend->ops->settled(p->backend->impl, o->rc, ss_batch__oldest(b) - 1);
    ss_backend_deliver(p->backend, ss_notify_change, p);
    ss_batch__flush(b);
    /* Between batches: the store holds what is committed, nothing else. */
    ss_admin_serve(p);
    ss_backup_step(p);
}

/* Free the copies in q, kept to run their requests again: their batch
 * settled. */
static void ss_batch__drop_copies(struct ss_batch *b, struct ss_qlist *q)
{
    for (size_t i = 0; i < q->len; i++)
        b->copy_bytes -= ss_queued_size(&q->items[i]);
    ss_qlist_clear(q);
    /* None left: none counted, whatever happened in between. A count
     * that stayed above the bound would hold the queue for good. */
    bool any = b->ran.len != 0;
    for (size_t i = 0; i < b->nflights; i++)
        any |= b->flights[i].ran.len != 0;
    if (!any)
        b->copy_bytes = 0;
}

/* The open batch ended without a commit in flight (nothing to commit, or
 * its commit could not start): publish, and open the next. */
static void ss_batch__settle_open(struct ss_batch *b, int rc)
{
    uint64_t seq = b->seq;
    b->seq++; /* its answers are no longer held back */
    ss_commit_outcome o = {.rc = rc};
    ss_batch__ended(b, seq, b->dedup_mark, UINT64_MAX, &o);
    ss_batch__drop_copies(b, &b->ran);
    b->dedup_mark = ss_dedup_mark(b->p->dedup);
}

/* The commit of flight f ended as o says (not a conflict). */
static void ss_batch__settle_flight(struct ss_batch *b, struct ss_flight *f, const ss_commit_outcome *o)
{
    f->used = false; /* its answers are no longer held back */
    ss_batch__ended(b, f->seq, f->dedup_after, f->dedup_upto, o);
    ss_batch__drop_copies(b, &f->ran);
}

/* The commit of flight f found keys changed by someone else and wrote
 * nothing. Its answers are forgotten and its requests run again, first
 * and in their order, on fresh data. (Later requests on other keys may
 * have run meanwhile; none on its keys, which were in flight.) */
static void ss_batch__rerun(struct ss_batch *b, struct ss_flight *f)
{
    struct ss_plugin *p = b->p;
    f->used = false;
    ss_outbox_drop(&b->outbox, f->seq);
    ss_dedup_forget_range(p->dedup, f->dedup_after, f->dedup_upto);
    struct ss_qlist *ran = &f->ran;
    uint64_t bytes = 0;
    for (size_t i = 0; i < ran->len; i++)
        bytes += ss_queued_size(&ran->items[i]);
    size_t n = ran->len;
    /* The copies become the queue's requests: counted there now. */
    b->copy_bytes -= bytes;
    if (ss_qlist_prepend(&b->queue, ran)) {
        b->queue_bytes += bytes;
    } else {
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: %zu requests were not answered", n);
        ss_qlist_clear(ran);
    }
    b->prefetched = 0;
}

/* The open batch went in flight as the backend's commit id; a new batch
 * opens. */
static void ss_batch__fly(struct ss_batch *b, unsigned id)
{
    struct ss_flight *f = NULL;
    for (size_t i = 0; i < b->nflights && f == NULL; i++)
        if (!b->flights[i].used)
            f = &b->flights[i];
    if (f == NULL) { /* the backend has no more flights than it said */
        ss_log(b->p, MOSQ_LOG_ERR, "the backend started more commits than it allows: answers may be lost");
        return;
    }
    struct ss_qlist spare = f->ran;
    f->used = true;
    f->id = id;
    f->seq = b->seq;
    f->ran = b->ran;
    b->ran = spare;
    b->ran.len = 0;
    f->dedup_after = b->dedup_mark;
    f->dedup_upto = ss_dedup_mark(b->p->dedup);
    b->seq++;
    b->dedup_mark = f->dedup_upto;
}

/* Take the commits that ended, oldest first: settle them, or run their
 * requests again on a conflict. */
static void ss_batch__collect(struct ss_batch *b)
{
    ss_backend *be = b->p->backend;
    ss_commit_outcome o;
    while (be->ops->commit_collect(be->impl, &o)) {
        struct ss_flight *f = NULL;
        for (size_t i = 0; i < b->nflights && f == NULL; i++)
            if (b->flights[i].used && b->flights[i].id == o.id)
                f = &b->flights[i];
        if (f == NULL)
            continue; /* not one of ours (cannot happen) */
        ss_latency_add(&b->p->metrics.commit, o.us);
        if (o.rc == SS_E_CONFLICT)
            ss_batch__rerun(b, f);
        else
            ss_batch__settle_flight(b, f, &o);
    }
}

/* Start committing the open batch (a new batch opens). 0: its commit is
 * under way; SS_E_BUSY: not now (every flight taken, or a read the
 * commit needs is under way), the open batch stays open; anything else:
 * it settled at once (nothing to commit, or a failure). */
static int ss_batch__commit_open(struct ss_batch *b, uint64_t now)
{
    ss_backend *be = b->p->backend;
    unsigned id = 0;
    int rc = be->ops->commit_start(be->impl, now, b->outbox.len != 0, &id);
    if (rc == SS_OK)
        ss_batch__fly(b, id);
    else if (rc == SS_E_NOTFOUND)
        ss_batch__settle_open(b, SS_OK); /* nothing to write or check */
    else if (rc != SS_E_BUSY)
        ss_batch__settle_open(b, rc);
    return rc;
}

/* The queue is full (max_queued_bytes): make room on a backend that may
 * block, waiting here for the commit under way, which also stops the
 * broker reading more (slow disk, flood of requests). When the answers
 * held stop the queue even so (they belong to the open batch: on LMDB
 * with fsync periodic a commit is done at once, and the open batch holds
 * its answers until the next tick), the open batch is committed here and
 * then, and its answers go before the queue runs into the next: the
 * queue shrinks by what runs, or nothing would ever stop it growing until
 * the tick. Until the queue is under its bound, or nothing more runs (a
 * read under way). False on a backend that never blocks the broker's
 * thread (etcd): the request is refused, the store is not keeping up. */
static bool ss_batch__make_room(struct ss_batch *b)
{
    ss_backend *be = b->p->backend;
    while (b->queue_bytes >= b->p->opt.max_queued_bytes) {
        if (be->ops->commit_wait(be->impl) != SS_OK)
            return false;
        ss_batch__collect(b);
        if (ss_batch__answers_full(b) && ss_batch__commit_open(b, ss_wall_ms()) == SS_OK &&
            be->ops->commit_wait(be->impl) == SS_OK)
            ss_batch__collect(b);
        size_t before = b->queue.len;
        if (before == 0 || !be->ops->accepting(be->impl))
            break;
        ss_batch__run_queue(b);
        if (b->queue.len == before)
            break; /* held by a read: what comes waits behind it */
    }
    return true;
}

void ss_batch_submit(struct ss_batch *b, const struct ss_request_from *from, struct ss_request_props *r)
{
    ss_backend *be = b->p->backend;
    if (!ss_batch__make_room(b)) {
        ss_buf err = SS_BUF_INIT;
        if (ss_codec_put_error(&err, SS_E_UNAVAILABLE) == SS_OK) {
            ss_bytes answer = {err.data, err.len};
            ss_batch__answer(b, from->client_id, r, &answer, NULL, 0, false);
        }
        ss_buf_free(&err);
        ss_request_props_free(r);
        return;
    }
    /* Answers held at their bound: it waits in the queue too, where the
     * queue's bound above applies to what follows. On etcd this is what
     * stops an open batch that cannot fly yet (every flight taken) from
     * taking requests without end: a GET of a key it holds runs at once,
     * and its answer would wait there for as long as etcd is slow. */
    if (!be->ops->accepting(be->impl) || b->queue.len || ss_batch__answers_full(b)) {
        ss_batch__enqueue(b, from, r); /* behind the ones waiting: in order */
        return;
    }
    if (ss_batch__run(b, from, false, r))
        ss_request_props_free(r);
    else
        ss_batch__enqueue(b, from, r);
}

/* The broker's tick: take what the backend finished, settle the commits
 * that ended (oldest first), run what waited, sweep expired keys, and
 * start committing the open batch. */
void ss_batch_tick(struct ss_batch *b, uint64_t now)
{
    struct ss_plugin *p = b->p;
    ss_backend *be = p->backend;
    ss_waker_seen(&p->waker); /* before looking: what ends later wakes us again */
    be->ops->poll(be->impl, now);
    ss_batch__collect(b);
    if (!be->ops->accepting(be->impl)) {
        ss_batch__flush(b); /* refusals wait for nothing */
        return; /* a commit still runs: its answers, and the queue, wait */
    }
    bool held_back = b->queue.len && ss_batch__run_queue(b);
    int n = ss_engine_expire(p->engine, now, SS_SWEEP_PER_TICK);
    if (n < 0)
        ss_log(p, MOSQ_LOG_ERR, "expiry sweep failed: %s", ss_strerror(n));
    /* An idle broker turns every 100 ms: be woken at the next deadline,
     * so that its DELETE is not up to a turn late. */
    ss_waker_at(&p->waker, be->ops->next_expiry(be->impl), now);
    int rc = ss_batch__commit_open(b, now);
    if (rc == SS_OK) {
        ss_batch__collect(b); /* a commit that did not wait is done */
    } else if (rc == SS_E_BUSY) {
        /* Every flight taken: nothing settles this tick, but what waits
         * for no commit (a refusal, a full queue's "unavailable") goes
         * out now, not when a flight ends. */
        ss_batch__flush(b);
    }
    /* The queue waits for answers held to go, and they went in this tick,
     * after it ran: nothing else may turn the broker's loop soon (a batch
     * of reads commits nothing, so no commit ends to wake it), and an idle
     * loop turns every 100 ms. The queue runs again at the next tick, not
     * now: the broker copies what it was handed into the clients'
     * sessions and sends it at the top of its loop, so one run a tick
     * hands it at most about the bound's worth at a time. */
    if (held_back && b->queue.len && !ss_batch__answers_full(b))
        ss_waker_at(&p->waker, now + 1, now);
    ss_dedup_expire(p->dedup, now);
}

/* ---- start and stop ---------------------------------------------------- */

int ss_batch_new(struct ss_plugin *p, struct ss_batch **out)
{
    struct ss_batch *b = calloc(1, sizeof *b);
    if (b == NULL)
        return SS_E_NOMEM;
    b->p = p;
    b->seq = 1;
    int rc = ss_table_init(&b->listers);
    if (rc != SS_OK) {
        free(b);
        return rc;
    }
    b->dedup_mark = ss_dedup_mark(p->dedup);
    unsigned n = p->backend->ops->max_flights;
    b->nflights = n == 0 ? 1 : n > SS_BATCH_FLIGHTS_MAX ? SS_BATCH_FLIGHTS_MAX : n;
    *out = b;
    return SS_OK;
}

void ss_batch_free(struct ss_batch *b)
{
    if (b == NULL)
        return;
    struct ss_plugin *p = b->p;
    ss_backend *be = p->backend;
    /* Requests never run were never answered. */
    ss_qlist_free(&b->queue);
    ss_qlist_free(&b->ran);
    for (size_t i = 0; i < SS_BATCH_FLIGHTS_MAX; i++)
        ss_qlist_free(&b->flights[i].ran);
    if (be->ops->commit_wait(be->impl) == SS_OK) {
        /* A backend that may block: the commit under way completed, and
         * what was executed since is committed, but its answers are not
         * sent: the broker no longer delivers messages during a plugin's
         * cleanup. A client that resends after reconnecting runs its
         * request again (the resend cache does not outlive the broker:
         * docs/SEMANTICS.md). */
        ss_commit_outcome o;
        while (be->ops->commit_collect(be->impl, &o))
            be->ops->settled(be->impl, o.rc, 0);
        if (ss_engine_commit(p->engine, ss_wall_ms()) != SS_OK) {
            const char *cause = be->ops->cause(be->impl);
            ss_log(p, MOSQ_LOG_ERR, "the last batch could not be committed at shutdown: %s",
                   cause && cause[0] ? cause : "failure");
        }
    } else {
        /* One that never blocks (etcd): nothing of the open batch was
         * acknowledged; dropping it is what a lost connection would do. A
         * commit under way ends in the store or not at all, unanswered
         * either way (the backend logs the chunks of large values that
         * such a commit may leave behind, at its destroy). */
        ss_engine_abort(p->engine);
    }
    ss_outbox_free(&b->outbox);
    ss_buf_free(&b->scratch);
    ss_table_free(&b->listers);
    free(b->lister_room);
    free(b);
}
