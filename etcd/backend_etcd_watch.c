/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_watch.c - the change feed from etcd's Watch: every change
 * to a record, whichever broker made it (backend_etcd_state.h).
 *
 * One watch on the records (k/). A deletion's notification carries the
 * version it removed. A deletion writes a tombstone that holds it
 * (backend_etcd_tombstone.c), so the watch reads it there. etcd's own
 * DELETE events (a tombstone whose time is up, or a key deleted by other
 * means) do not say it (asking etcd for every change's previous value
 * cost a third of the throughput): for such a key that has observers
 * here, the key is read from etcd's history (at the revision before),
 * and the changes after it wait behind it, so that the order stays
 * etcd's; a tombstone found there was notified already. The watch resumes after
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
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_session.h"
#include "backend_etcd_sweep.h"
#include "backend_etcd_tombstone.h"
#include "backend_etcd_watch.h"

static void ss_etcd__ask_removed(struct ss_backend_etcd *e, struct ss_etcd_held *h);
static void ss_etcd__ask_blob(struct ss_backend_etcd *e, struct ss_etcd_held *h);

/* The range of the records: prefix "k/" up to prefix "k0". */
static int ss_etcd__records_range(struct ss_backend_etcd *e)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__key(e, &e->scratch, 'k', none);
    return rc == SS_OK ? ss_etcd__records_end(e, &e->scratch2) : rc;
}

void ss_etcd__watch_step(struct ss_backend_etcd *e)
{
    /* Reads of removed versions that failed: again, after a pause. */
    if (e->nheld && ss_etcd__mono_ms() >= e->held_retry_ms)
        for (size_t i = 0; i < e->nheld; i++)
            if (!e->held[i].ready && !e->held[i].asked) {
                if (e->held[i].chunked)
                    ss_etcd__ask_blob(e, &e->held[i]);
                else
                    ss_etcd__ask_removed(e, &e->held[i]);
            }
    if (e->watch != NULL || ss_etcd__mono_ms() < e->watch_retry_ms)
        return;
    if (e->watch_rev == 0 && e->claim == SS_CLAIM_HELD && e->claim_rev > 0) {
        /* The first watch starts after the claim: every commit of this
         * broker comes later (each compares the claim), so each is told
         * by the watch alone, however late etcd confirms the watch. From
         * "now" instead, a commit settled before the confirmation could
         * be told from the commit and then again by the watch. */
        e->watch_rev = e->claim_rev;
        e->watch_from = e->claim_rev;
        e->watch_gap_rev = e->watch_rev; /* changes before it are not told: entries known then are compared */
    }
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_WATCH, SS_ETCD_WATCH_METHOD);
    int rc = op ? ss_etcd__records_range(e) : SS_E_NOMEM;
    /* From the revision after the last one seen (0, the first time
     * without a claim: from now on). */
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

/* Is key's entry in a flight? A change of it that the watch reports may
 * be that flight's own, whose writers must hear their answers first. */
static bool ss_etcd__in_flight(struct ss_backend_etcd *e, ss_bytes key)
{
    struct ss_etcd_entry *x = ss_etcd__entry(e, key);
    return x && x->flight;
}

/* A new held change at the end of the queue, or NULL (out of memory). */
static struct ss_etcd_held *ss_etcd__hold(struct ss_backend_etcd *e, enum ss_change_type type, ss_bytes key,
                                          int64_t rev)
{
    if (e->nheld == e->held_cap) {
        size_t cap = e->held_cap ? 2 * e->held_cap : 16;
        struct ss_etcd_held *h = realloc(e->held, cap * sizeof *h);
        if (h == NULL)
            return NULL;
        e->held = h;
        e->held_cap = cap;
    }
    struct ss_etcd_held *h = &e->held[e->nheld];
    memset(h, 0, sizeof *h);
    if (ss_buf_append(&h->key, key.data, key.len) != SS_OK) {
        ss_buf_free(&h->key);
        return NULL;
    }
    h->type = type;
    h->rev = rev;
    h->ticket = ++e->next_ticket;
    h->wait_flight = ss_etcd__in_flight(e, key);
    e->nheld++;
    return h;
}

/* Read the record a held deletion removed: the key as it was just before
 * the deletion's revision. */
static void ss_etcd__ask_removed(struct ss_backend_etcd *e, struct ss_etcd_held *h)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_REMOVED, SS_ETCD_RANGE_METHOD);
    int rc = op ? ss_etcd__key(e, &e->scratch, 'k', ss_etcd__bytes(&h->key)) : SS_E_NOMEM;
    if (rc == SS_OK)
        rc = ss_etcd_range_at_pack(&op->call.request, ss_etcd__bytes(&e->scratch), h->rev - 1);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return; /* asked again later */
    }
    op->ticket = h->ticket;
    h->asked = true;
    ss_etcd__submit(e, op);
}

/* Read the chunks of a held SET's value, as they were at its revision. */
static void ss_etcd__ask_blob(struct ss_backend_etcd *e, struct ss_etcd_held *h)
{
    /* At the SET's revision; once that is compacted, as they are now: a
     * blob id is never used twice and its chunks never change, so while
     * they are there they hold the value that SET stored. */
    struct ss_etcd_op *op = ss_etcd__blob_read(e, SS_OP_BLOB_HELD, &h->stub, h->latest ? 0 : h->rev);
    if (op == NULL)
        return; /* asked again later */
    op->ticket = h->ticket;
    h->asked = true;
    ss_etcd__submit(e, op);
}

static struct ss_etcd_held *ss_etcd__held_for(struct ss_backend_etcd *e, uint64_t ticket)
{
    for (size_t i = 0; i < e->nheld; i++)
        if (e->held[i].ticket == ticket)
            return &e->held[i];
    return NULL;
}

/* A large value's SET whose chunks etcd no longer has, at its revision
 * (compacted) nor now (replaced since): lost to observers here, as a
 * compacted watch's changes are, and said the same way. */
static void ss_etcd__held_blob_lost(struct ss_backend_etcd *e, struct ss_etcd_held *h)
{
    ss_etcd__log(e, SS_LOG_ERR, "etcd compacted its history before the value of a change this broker was "
                 "told of could be read: revision %lld is lost to observers on this broker (keep more "
                 "history: see CLUSTER.md)", (long long)h->rev);
    e->stats.watch_lost_revisions++;
    h->ready = h->dropped = true;
}

void ss_etcd__held_blob_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_held *h = ss_etcd__held_for(e, op->ticket);
    if (h == NULL)
        return;
    h->asked = false;
    if (op->call.rc != SS_OK) {
        if (ss_etcd__refused(&op->call) && !h->latest) {
            /* Compacted since: the chunks as they are now, if still there. */
            h->latest = true;
            ss_etcd__ask_blob(e, h);
        } else if (ss_etcd__refused(&op->call)) {
            ss_etcd__held_blob_lost(e, h);
        } else {
            e->held_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        }
        return;
    }
    if (ss_etcd__blob_value(&op->call.reply, &h->stub, &h->value) != SS_OK) {
        if (h->latest) {
            ss_etcd__held_blob_lost(e, h); /* replaced or deleted since, and its history compacted */
            return;
        }
        h->dropped = true;
        e->stats.watch_undecodable++;
    }
    h->ready = true;
}

/* A version another broker issued, as the watch brings it: how far
 * ahead of this broker's wall clock it is. A broker's versions follow its
 * wall clock (and stamps of its clients ahead of it, which the protocol
 * allows up to 60 s), so a lead that lasts is a clock ahead; the watch's
 * delay only makes it smaller. */
static void ss_etcd__clock_seen(struct ss_backend_etcd *e, const ss_hlc *v)
{
    if (v->wall == 0 || ss_etcd__own_version(e, v))
        return;
    int64_t ahead = (int64_t)v->wall - (int64_t)e->now_ms;
    if (ahead > e->ahead_ms || e->now_ms - e->ahead_at_ms > SS_ETCD_AHEAD_WINDOW_MS) {
        e->ahead_ms = ahead;
        e->ahead_at_ms = e->now_ms;
        memcpy(e->ahead_node, v->node, v->node_len);
        e->ahead_node[v->node_len] = '\0';
    }
    if (ahead > SS_ETCD_AHEAD_WARN_MS && !e->ahead_logged) {
        e->ahead_logged = true;
        ss_etcd__log(e, SS_LOG_WARNING,
                     "a version from node %.*s is %lld ms ahead of this broker's clock: keep the brokers' clocks "
                     "in sync (NTP); versions still grow, but a tombstone's purge assumes clocks within "
                     "etcd_tombstone_ms (%llu ms) (clients' timestamps ahead of their broker also show here)",
                     (int)v->node_len, v->node, (long long)ahead, (unsigned long long)e->tombstone_ms);
    } else if (e->ahead_logged && e->ahead_ms <= SS_ETCD_AHEAD_WARN_MS / 2) {
        e->ahead_logged = false; /* said again should it happen again */
    }
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
    ss_record rec;
    ss_bytes tail;
    bool decoded = !ev->deleted && ss_record_decode(ev->kv.value.data, ev->kv.value.len, &rec, &tail) == SS_OK;
    if (decoded) /* whether anyone is told or not */
        ss_etcd__clock_seen(e, &rec.version);
    /* A tombstone holds the removed version, whose node wrote the key,
     * not the deleter: who deleted it cannot be told here. The deleter
     * learnt its deadline from its commit; to every other broker, and to
     * whoever wrote the removed version, it is someone else's. */
    bool tomb = decoded && ss_etcd__tombstone(ev->kv.value);
    bool own = decoded && !tomb && ss_etcd__own_version(e, &rec.version);
    if (decoded && !tomb && !own)
        e->foreign_ms = ss_etcd__mono_ms(); /* another broker writes (commit.c: solo) */
    /* Every broker knows every deadline (backend_etcd_sweep.c). */
    ss_etcd__deadline_learn(e, key, rev, decoded ? rec.expiry_ms : 0, own);
    if (!ss_backend_wants(&e->base, key))
        return;
    if (ev->deleted) {
        /* Its notification carries the version it removed: read it. */
        struct ss_etcd_held *h = ss_etcd__hold(e, SS_CHANGE_DELETE, key, rev);
        if (h == NULL)
            e->stats.watch_undecodable++;
        else
            ss_etcd__ask_removed(e, h);
        return;
    }
    if (!decoded) {
        e->stats.watch_undecodable++; /* not a record: nothing true can be said of it */
        return;
    }
    ss_change c;
    if (!ss_etcd__tombstone_change(ev->kv.value, key, &c)) {
        c = (ss_change){.type = SS_CHANGE_SET, .key = key, .value = rec.value, .version = rec.version};
    }
    c.rev = rev;
    struct ss_etcd_stub stub;
    if (c.type == SS_CHANGE_SET && ss_etcd__stub(ev->kv.value, &rec, &stub)) {
        /* Its value is in chunks: read them; later changes wait behind. */
        struct ss_etcd_held *h = ss_etcd__hold(e, SS_CHANGE_SET, key, rev);
        if (h == NULL) {
            e->stats.watch_undecodable++;
            return;
        }
        h->version = rec.version;
        h->chunked = true;
        h->stub = stub;
        ss_etcd__ask_blob(e, h);
        return;
    }
    if (e->nheld == 0 && !ss_etcd__in_flight(e, key)) {
        if (ss_feed_append(&e->watched, &c) != SS_OK)
            e->stats.watch_undecodable++;
        return;
    }
    /* Behind a change still being read, or of a key whose flight has not
     * settled yet. */
    struct ss_etcd_held *h = ss_etcd__hold(e, c.type, key, rev);
    if (h == NULL || ss_buf_append(&h->value, c.value.data, c.value.len) != SS_OK) {
        if (h)
            h->dropped = true;
        e->stats.watch_undecodable++;
    }
    if (h) {
        h->version = c.version;
        h->expired = c.expired;
        h->ready = true;
    }
}

void ss_etcd__removed_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_held *h = ss_etcd__held_for(e, op->ticket);
    if (h == NULL)
        return;
    h->asked = false;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (op->call.rc != SS_OK || ss_etcd_range_unpack(&op->call.reply, &r, &kv) != SS_OK) {
        if (ss_etcd__refused(&op->call)) {
            /* Compacted since: the version is gone. */
            h->ready = h->dropped = true;
            e->stats.watch_undecodable++;
        } else {
            e->held_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        }
        return;
    }
    ss_record rec;
    ss_bytes tail;
    if (kv.found && ss_etcd__tombstone(kv.value)) {
        /* A tombstone's time was up: its deletion was told already. */
        h->dropped = true;
    } else if (kv.found && ss_record_decode(kv.value.data, kv.value.len, &rec, &tail) == SS_OK) {
        h->version = rec.version;
        h->expired = rec.expiry_ms != 0 && rec.expiry_ms <= e->now_ms;
    } else {
        h->dropped = true;
        e->stats.watch_undecodable++;
    }
    h->ready = true;
    ss_etcd_reply_free(&r);
}

/* etcd's revisions start again below what this broker saw. Every
 * revision it holds (the cache's, the watch's, the markers' intervals)
 * names other changes now: the cache is emptied, the watch starts again
 * from rev, reads are compared key by key and the sentinel put again
 * before the markers confirm any, and the deadlines are read again.
 * Changes made between the restored state and rev are not told. */
void ss_etcd__went_back(struct ss_backend_etcd *e, int64_t rev, const char *evidence)
{
    ss_etcd__log(e, SS_LOG_ERR, "%s: its data went back (a snapshot restored, or a member's data replaced); "
                 "everything this broker knew is read again, and changes made since the data went back may "
                 "not have been told to observers on this broker (restart brokers after restoring etcd: "
                 "CLUSTER.md)", evidence);
    e->stats.revisions_went_back++;
    for (struct ss_etcd_entry *x = e->first, *next; x; x = next) {
        next = x->next;
        if (x->touched || x->flight || x->state == SS_ENTRY_FETCHING || x->state == SS_ENTRY_RETRY) {
            x->seen_rev = 0; /* compared, never confirmed by the markers */
            x->stale_rev = INT64_MAX;
        } else {
            ss_etcd__entry_free(e, x);
        }
    }
    e->high_rev = rev;
    e->watch_rev = e->watch_gap_rev = e->watch_caught_rev = rev;
    /* The watch's start in the new history: a commit at or below the
     * old start (a revision of the old history) was taken for one the
     * watch does not tell, and told from the commit too (twice). */
    e->watch_from = rev;
    e->marked_rev = 0;
    for (size_t i = 0; i < e->ntold; i++)
        e->told[i].rev = 0; /* revisions of the old history: wait for none of them */
    /* The markers as restored are older than this broker's last commits:
     * read back again (by a Txn of either slot that fails, the next time
     * or the one after), they would tell of this same step back again,
     * each time emptying the cache and moving the watch on past changes
     * it has not told yet. The next commit on a slot is the new mark. */
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        e->flights[i].committed_seq = 0;
    e->foreign_ms = ss_etcd__mono_ms();
    ss_etcd__deadlines_reread(e);
    if (e->watch)
        ss_grpc_cancel(e->grpc, &e->watch->call); /* started again from rev */
}

void ss_etcd__revision_answered(struct ss_backend_etcd *e, const struct ss_etcd_flight *f, int64_t rev)
{
    if (rev <= 0)
        return;
    /* A Txn is linearizable: its revision is at least that of every
     * change committed before it was sent, those the watch had told
     * included. (Not those told since: answers come late, and another
     * flight's may come first.) */
    if (rev < f->known_rev && f->known_backs == e->stats.revisions_went_back) {
        char evidence[160];
        snprintf(evidence, sizeof evidence, "etcd answered at revision %lld, below revision %lld that this broker "
                 "had seen", (long long)rev, (long long)f->known_rev);
        ss_etcd__went_back(e, rev, evidence);
    } else if (rev > e->high_rev) {
        e->high_rev = rev;
    }
}

/* One message of the watch's stream. */
static void ss_etcd__watch_message(struct ss_backend_etcd *e, ss_bytes msg)
{
    ss_etcd_watch w;
    if (ss_etcd_watch_unpack(msg, &w) != SS_OK) {
        ss_etcd__log(e, SS_LOG_ERR, "etcd sent a watch message that cannot be read: watching again");
        e->watch_broken = true;
        ss_grpc_cancel(e->grpc, &e->watch->call);
        return;
    }
    if (w.created && !w.canceled) {
        ss_etcd__answers(e);
        e->watch_created = true;
        e->watch_caught_rev = w.revision;
        if (e->watch_rev == 0) {
            /* The first watch: changes after this revision come from it. */
            e->watch_rev = w.revision;
            e->watch_from = w.revision;
            e->watch_gap_rev = w.revision; /* as above */
        }
        if (e->watch_logged)
            ss_etcd__log(e, SS_LOG_NOTICE, "watching changes again from revision %lld",
                         (long long)e->watch_rev + 1);
        e->watch_logged = false;
    }
    if (w.canceled) {
        if (w.compact_revision > 0) {
            /* The history after the last revision seen is gone: the
             * changes in between can no longer be known. */
            int64_t lost = w.compact_revision - 1 - e->watch_rev;
            /* Revisions, not changes: those of the plugin's own keys
             * outside k/ (claims, markers) leave the watch's position
             * behind, and count here although no record changed. */
            ss_etcd__log(e, SS_LOG_ERR, "etcd compacted its history past revisions this broker had not "
                         "seen yet: changes of records in revisions %lld to %lld (if any) are lost to "
                         "observers on this broker (keep more history: see CLUSTER.md)",
                         (long long)e->watch_rev + 1, (long long)w.compact_revision - 1);
            if (lost > 0)
                e->stats.watch_lost_revisions += (uint64_t)lost;
            ss_etcd__deadlines_reread(e); /* deadlines written then are read */
            e->watch_rev = w.compact_revision - 1;
            e->watch_gap_rev = e->watch_rev; /* what was known before is compared */
        } else {
            /* Refused (a permission, say): said once, tried every second. */
            if (!e->watch_logged)
                ss_etcd__log(e, SS_LOG_ERR, "etcd ended the watch on changes (%s): watching again",
                             w.cancel_reason[0] ? w.cancel_reason : "no reason given");
            e->watch_logged = true;
            e->watch_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
        }
        ss_grpc_cancel(e->grpc, &e->watch->call);
    }
    int64_t last = 0;
    for (size_t i = 0; i < w.n_events; i++) {
        ss_etcd_event ev;
        ss_etcd_watch_event(&w, i, &ev);
        ss_etcd__watch_event(e, &ev);
        last = ev.kv.mod_revision;
    }
    /* A piece of a message that etcd split: more of the last revision's
     * changes follow, so the watch has not reported all of it yet (a mark
     * waiting for it stays; a restart takes it again from its start,
     * telling a change of it twice rather than none). */
    if (w.fragment && last > 0 && e->watch_rev >= last)
        e->watch_rev = last - 1;
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
    while (e->watch && !e->watch_broken && ss_grpc_next_message(&e->watch_frames, &pos, &msg))
        ss_etcd__watch_message(e, msg);
}

void ss_etcd__watch_ended(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    /* Its last messages first. */
    ss_etcd__watch_read(e);
    e->watch = NULL;
    e->watch_broken = false;
    if (e->watch_retry_ms <= ss_etcd__mono_ms())
        e->watch_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
    e->stats.watch_restarts++;
    if (!e->watch_logged && op->call.rc != SS_OK && e->watch_created) {
        ss_etcd__log(e, SS_LOG_WARNING, "the watch on changes was lost (%s): watching again after "
                     "revision %lld", ss_etcd__why(&op->call), (long long)e->watch_rev);
        e->watch_logged = true;
    }
}

/* A TOLD mark of the owner's commits up to seq (0: none yet, but its
 * revision still counts for the marks after it) waits for the watch to
 * reach rev. */
static void ss_etcd__told_push(struct ss_backend_etcd *e, uint64_t seq, int64_t rev)
{
    struct ss_etcd_told *last = e->ntold ? &e->told[e->ntold - 1] : NULL;
    if (last && (rev <= last->rev || e->ntold == SS_ETCD_TOLD_MAX)) {
        /* One mark does for both: at no later revision it would follow
         * the last one at once (batches with nothing to commit add one
         * each turn of the loop); with the queue full, the last one waits
         * for both, and its STOPs take effect a little later (told a
         * change more), never earlier. */
        if (seq > last->seq)
            last->seq = seq;
        if (rev > last->rev)
            last->rev = rev;
        return;
    }
    e->told[e->ntold++] = (struct ss_etcd_told){seq, rev};
}

/* Every change up to revision upto is in the feed: the marks waiting for
 * no more follow. */
static void ss_etcd__told_upto(struct ss_backend_etcd *e, int64_t upto)
{
    size_t n = 0;
    while (n < e->ntold && e->told[n].rev <= upto && ss_backend_mark_told(&e->base, e->told[n].seq))
        n++;
    if (n) {
        memmove(e->told, e->told + n, (e->ntold - n) * sizeof *e->told);
        e->ntold -= n;
    }
}

/* A change the watch reported goes into the feed, after the marks of the
 * commits that came before it. */
static void ss_etcd__append_watched(void *ctx, const ss_change *c)
{
    struct ss_backend_etcd *e = ctx;
    ss_etcd__told_upto(e, c->rev - 1);
    (void)ss_feed_append(&e->base.feed, c);
}

void ss_etcd__watch_settled(struct ss_backend_etcd *e, int rc, uint64_t upto)
{
    /* A commit's own changes, unless the watch reports them. */
    bool watched = e->watch_from != 0 && e->settled_revision > e->watch_from;
    if (rc == SS_OK && !watched)
        ss_feed_each(&e->settled, ss_etcd__append, &e->base.feed);
    /* Its mark waits for what the watch has reported by now, and for its
     * own changes when the watch reports them: a KEYNOTIFY ... STOP of the
     * batch takes effect after them, at the batch's place in etcd's order. */
    int64_t rev = e->watch_rev;
    if (rc == SS_OK && watched && ss_feed_len(&e->settled) && e->settled_revision > rev)
        rev = e->settled_revision;
    ss_etcd__told_push(e, upto, rev);
    ss_feed_clear(&e->settled);
    e->settled_revision = 0;
    /* What the watch reported, after this commit's answers: first what
     * came while nothing was held, then the held changes that are known
     * and whose keys are not in flight any more, up to the first that is
     * not. */
    ss_feed_each(&e->watched, ss_etcd__append_watched, e);
    ss_feed_clear(&e->watched);
    for (size_t i = 0; i < e->nheld; i++)
        if (e->held[i].wait_flight)
            e->held[i].wait_flight = ss_etcd__in_flight(e, ss_etcd__bytes(&e->held[i].key));
    size_t n = 0;
    for (; n < e->nheld && e->held[n].ready && !e->held[n].wait_flight; n++) {
        struct ss_etcd_held *h = &e->held[n];
        if (!h->dropped) {
            ss_change c = {.type = h->type, .key = ss_etcd__bytes(&h->key), .version = h->version,
                           .expired = h->expired, .rev = h->rev};
            if (h->type == SS_CHANGE_SET)
                c.value = ss_etcd__bytes(&h->value);
            ss_etcd__append_watched(e, &c);
        }
        ss_buf_free(&h->key);
        ss_buf_free(&h->value);
    }
    if (n) {
        memmove(e->held, e->held + n, (e->nheld - n) * sizeof *e->held);
        e->nheld -= n;
    }
    ss_etcd__told_upto(e, e->nheld ? e->held[0].rev - 1 : e->watch_rev);
}

void ss_etcd__watch_free(struct ss_backend_etcd *e)
{
    for (size_t i = 0; i < e->nheld; i++) {
        ss_buf_free(&e->held[i].key);
        ss_buf_free(&e->held[i].value);
    }
    free(e->held);
    ss_feed_free(&e->watched);
    ss_buf_free(&e->watch_frames);
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
