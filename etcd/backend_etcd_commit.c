/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_commit.c - a batch committed in a flight of its own (its
 * Txn is built by backend_etcd_txn.c), its outcome, and the fence that
 * settles an outcome left unknown (backend_etcd_commit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_quota.h"
#include "backend_etcd_session.h"
#include "backend_etcd_tombstone.h"
#include "backend_etcd_txn.h"
#include "backend_etcd_upload.h"
#include "backend_etcd_watch.h"

/* ---- commits ----------------------------------------------------------- */

static void ss_etcd__commit_outcome(struct ss_backend_etcd *e, struct ss_etcd_flight *f, int rc,
                                    int64_t revision);

/* A free flight for the open batch, or NULL. A second Txn goes out
 * while one is in flight only when the open batch is full (etcd's limits
 * on one Txn): otherwise it grows until the first settles, as larger
 * Txns cost etcd less per key (measured: BENCHMARKS.md). While a quota is
 * set, one at a time. */
static struct ss_etcd_flight *ss_etcd__free_flight(struct ss_backend_etcd *e)
{
    struct ss_etcd_flight *free_one = NULL;
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++) {
        struct ss_etcd_flight *f = &e->flights[i];
        if (f->state != SS_COMMIT_IDLE && (ss_etcd__limited(e) || !e->open.full))
            return NULL;
        if (f->state == SS_COMMIT_IDLE && free_one == NULL)
            free_one = f;
    }
    return free_one;
}

int ss_backend_etcd_commit_start(ss_backend *b, uint64_t now_ms, unsigned *slot)
{
    (void)now_ms;
    struct ss_backend_etcd *e = b->impl;
    if (e->open.ntouched == 0) {
        /* Nothing to commit: the batch's changes to the feed, if any, are
         * none either. */
        ss_feed_clear(&e->settled);
        e->settled_revision = 0;
        ss_etcd__batch_reset(&e->open);
        ss_etcd__tidy(e);
        return SS_E_NOTFOUND;
    }
    struct ss_etcd_flight *f = ss_etcd__free_flight(e);
    if (f == NULL)
        return SS_E_BUSY;
    bool writes = ss_etcd__writes(&e->open);
    /* Writes wait for the claim on the node id (being made, or made again
     * after it lapsed), up to unavailable_ms. */
    bool unclaimed = writes && e->claim != SS_CLAIM_HELD;
    if (unclaimed && ss_etcd__mono_ms() - e->claim_lost_ms < e->unavailable_ms)
        return SS_E_PENDING;
    if (writes && !unclaimed && !f->marker_known) {
        ss_etcd__ask_marker(e, f);
        return SS_E_PENDING;
    }
    /* The open batch becomes the flight's; the flight's emptied batch
     * (its memory kept) opens. */
    struct ss_etcd_batch spare = f->b;
    f->b = e->open;
    e->open = spare;
    ss_etcd__batch_reset(&e->open);
    for (size_t i = 0; i < f->b.ntouched; i++) {
        f->b.touched[i]->touched = false;
        f->b.touched[i]->flight = f;
    }
    f->writes = writes;
    f->solo = f->marks = f->unknown = false;
    f->rc = SS_OK;
    f->revision = 0;
    if (unclaimed) {
        /* Nothing of it was sent: its requests are answered unavailable. */
        ss_feed_clear(&f->b.pending);
        ss_etcd__end_flight(e, f, false, false, 0);
        return SS_E_UNAVAILABLE;
    }
    *slot = f->slot;
    if (e->nospace && ss_etcd__puts(&f->b)) {
        /* Its requests ran before etcd said it was full, and it puts:
         * etcd would refuse it whole, its reads and deletions with it.
         * Nothing of it is sent; its requests run again, their puts now
         * refused at once ("quota exceeded"), the rest going through. */
        ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
        return SS_OK;
    }
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        if (&e->flights[i] != f && e->flights[i].state != SS_COMMIT_IDLE) {
            e->stats.txns_overlapped++;
            break;
        }
    if (ss_etcd__uploads(&f->b)) {
        /* Large values first, in chunks; the Txn follows. */
        ss_etcd__upload_start(e, f);
        return SS_OK;
    }
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_TXN, SS_ETCD_TXN_METHOD);
    int rc = op ? ss_etcd__build(e, f, op) : SS_E_NOMEM;
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        ss_feed_clear(&f->b.pending);
        ss_etcd__end_flight(e, f, false, false, 0);
        return rc;
    }
    op->flight = f;
    f->state = SS_COMMIT_TXN;
    e->stats.txns++;
    ss_etcd__submit(e, op);
    return SS_OK;
}

void ss_etcd__commit_send(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_TXN, SS_ETCD_TXN_METHOD);
    int rc = op ? ss_etcd__build(e, f, op) : SS_E_NOMEM;
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        ss_etcd__commit_failed(e, f, rc);
        return;
    }
    op->flight = f;
    f->state = SS_COMMIT_TXN;
    e->stats.txns++;
    ss_etcd__submit(e, op);
}

/* The commit's outcome is known. */
static void ss_etcd__commit_outcome(struct ss_backend_etcd *e, struct ss_etcd_flight *f, int rc,
                                    int64_t revision)
{
    f->state = SS_COMMIT_DONE;
    f->rc = rc;
    f->revision = revision;
    if (rc == SS_OK && f->writes && !f->nospace) {
        f->marker_rev = revision;
        f->committed_seq = f->txn_seq;
    }
    /* Its put of the sentinel, if any. Should the sentinel have gone
     * since, a Txn that counts on it fails once on its compares (the
     * safety is theirs; marked_rev only spares conflicts). */
    if (rc == SS_OK && f->marks && f->writes && revision > e->marked_rev)
        e->marked_rev = revision;
    if (rc == SS_E_CONFLICT && f->solo)
        e->marked_rev = 0; /* it may have failed on the sentinel */
    if (rc == SS_OK && f->writes && !f->nospace && e->nospace_said && !e->nospace) {
        ss_etcd__log(e, SS_LOG_NOTICE, "etcd takes writes again (its NOSPACE alarm is off)");
        e->nospace_said = e->stats.nospace = false;
        /* Other brokers deleted without a marker meanwhile: what was
         * known before is compared again (ss_etcd__read_confirmed). */
        e->watch_gap_rev = revision;
    }
    if (f->nospace && f->writes && ss_etcd__limited(e)) {
        /* Deletions not charged to the counter: the records are counted
         * again, and the count replaces it. */
        e->usage_known = false;
        e->usage_recount = true;
        e->usage_recounts = 0;
    }
    if (rc == SS_E_CONFLICT) {
        e->stats.conflicts++;
        /* Someone else wrote: reads are compared one by one for a while
         * (its run again among them). */
        e->foreign_ms = ss_etcd__mono_ms();
    }
}

void ss_etcd__commit_failed(struct ss_backend_etcd *e, struct ss_etcd_flight *f, int rc)
{
    ss_etcd__commit_outcome(e, f, rc, 0);
}

/* Send op, which settles flight f (built with rc); if it could not be
 * built (out of memory), try again later. */
static void ss_etcd__resolve_submit(struct ss_backend_etcd *e, struct ss_etcd_flight *f, struct ss_etcd_op *op,
                                    int rc)
{
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        f->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    f->resolve_at_ms = 0;
    op->flight = f;
    ss_etcd__submit(e, op);
}

/* What flight f's fence puts in its marker: its lost commit's id, and
 * " fence". */
#define SS_ETCD_FENCE_MAX (sizeof((struct ss_etcd_flight *)0)->txn_id + 8)
static void ss_etcd__fence_text(const struct ss_etcd_flight *f, char out[SS_ETCD_FENCE_MAX])
{
    snprintf(out, SS_ETCD_FENCE_MAX, "%s fence", f->txn_id);
}

void ss_etcd__send_fence(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_FENCE, SS_ETCD_TXN_METHOD);
    char fence[SS_ETCD_FENCE_MAX];
    ss_etcd__fence_text(f, fence);
    ss_bytes id = {(const uint8_t *)fence, strlen(fence)};
    /* The marker replaced if it still holds what it held before the lost
     * commit, and the claim is the one that commit compared. */
    ss_etcd_txn t = {0};
    int rc = op ? ss_etcd__named(e, 'l', e->node_id) : SS_E_NOMEM;
    if (rc == SS_OK)
        rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), e->claim_rev);
    if (rc == SS_OK && (rc = ss_etcd__marker_key(e, f->slot)) == SS_OK &&
        (rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), f->marker_rev)) == SS_OK &&
        (rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), id)) == SS_OK &&
        (rc = ss_etcd_txn_on_failure_get(&t, ss_etcd__bytes(&e->scratch))) == SS_OK)
        rc = ss_etcd_txn_pack(&t, &op->call.request);
    ss_etcd_txn_free(&t);
    ss_etcd__resolve_submit(e, f, op, rc);
}

void ss_etcd__marker_behind(const struct ss_backend_etcd *e, const struct ss_etcd_flight *f, const ss_etcd_kv *kv,
                           char *why, size_t n)
{
    /* A Txn built before etcd's data was last seen going back read the
     * marker of the history that went (that step was taken already); and
     * after it, committed_seq is 0 until the slot commits again. */
    if (f->committed_seq == 0 || f->known_backs != e->stats.revisions_went_back)
        return;
    if (!kv->found) {
        snprintf(why, n, "this broker's commit marker of slot %u is gone (its commit %llu was in etcd)", f->slot,
                 (unsigned long long)f->committed_seq);
        return;
    }
    char mine[300];
    int len = snprintf(mine, sizeof mine, "%s %016llx ", e->node_id, (unsigned long long)e->incarnation);
    uint64_t seq;
    if (len <= 0 || (size_t)len >= sizeof mine || kv->value.len <= (size_t)len ||
        memcmp(kv->value.data, mine, (size_t)len) != 0 ||
        ss_parse_u64(kv->value.data + len, kv->value.len - (size_t)len, UINT64_MAX, &seq) != SS_OK ||
        seq >= f->committed_seq)
        return;
    snprintf(why, n, "etcd holds this broker's commit %llu as its last on slot %u, not %llu", (unsigned long long)seq,
             f->slot, (unsigned long long)f->committed_seq);
}

void ss_etcd__txn_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc == SS_OK && ss_etcd_txn_unpack(&c->reply, &r, &kv) == SS_OK) {
        int64_t rev = r.revision;
        bool ok = r.succeeded;
        char behind[200] = "";
        if (!ok && f->writes && !f->nospace)
            ss_etcd__marker_behind(e, f, &kv, behind, sizeof behind); /* before kv's bytes go */
        ss_etcd_reply_free(&r);
        /* Below a revision seen before: etcd's data went back, and what
         * this broker knew is forgotten before the outcome is taken. A
         * Txn that failed is run again on what is read now; one that
         * succeeded stands (its writes are in etcd). */
        uint64_t backs = e->stats.revisions_went_back;
        ss_etcd__revision_answered(e, f, rev);
        /* The same shown by this broker's own marker, older than its last
         * commit on the slot: once other brokers have written past the
         * revisions it saw, no revision shows it, and its cache (reads
         * confirmed by the markers too) would serve the old data. */
        if (behind[0] && backs == e->stats.revisions_went_back)
            ss_etcd__went_back(e, rev, behind);
        if (!ok && f->writes && !f->nospace) /* the marker as the failure branch read it */
            f->marker_rev = kv.found ? kv.mod_revision : 0;
        /* A failed compare may be the claim's (lapsed while this broker
         * stalled): ask the lease now rather than at its next renewal. */
        if (!ok && f->writes && e->claim == SS_CLAIM_HELD && !e->keepalive_asked)
            e->keepalive_ms = 0;
        ss_etcd__commit_outcome(e, f, ok ? SS_OK : SS_E_CONFLICT, rev);
        return;
    }
    if (c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED) {
        /* Refused before it ran (the token expired): log in again and
         * run the batch again. */
        ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
        return;
    }
    if (ss_etcd__out_of_space(e, c)) {
        if (f->nospace || !f->writes) {
            /* It put nothing (commit_start sees to that): not applied. */
            ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
            return;
        }
        /* "Space exceeded" does not prove the Txn was not applied: etcd
         * applies the Txn that takes its database past the quota, and
         * answers it so all the same (raising the alarm). Either way it
         * is settled now (applied, or refused for good), so a read of its
         * commit marker tells which: applied, it answers as committed;
         * not, its requests run again, their puts refused at once. */
        e->stats.unknown_outcomes++;
        f->state = SS_COMMIT_RESOLVING;
        f->settle_by_read = true;
        ss_etcd__send_settle_read(e, f);
        return;
    }
    if (c->rc == SS_E_SERVER && c->status == SS_ETCD_NOT_FOUND && strstr(c->message, "lease not found")) {
        /* A tombstone's lease is gone: etcd checks a Txn's leases as it
         * applies it, and applies none of it then. */
        ss_etcd__tombstone_leases_gone(e, ss_etcd__why(c));
        ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
        return;
    }
    if (ss_etcd__refused(c)) {
        ss_etcd__log(e, SS_LOG_ERR, "etcd refused a commit: %s", ss_etcd__why(c));
        ss_etcd__commit_outcome(e, f, c->status == 8 ? SS_E_QUOTA : SS_E_IO, 0);
        return;
    }
    if (!f->writes) { /* only compares: running again is harmless */
        ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
        return;
    }
    if (f->nospace) {
        /* No marker settles it (a fence is a put, refused now): the
         * outcome stays unknown, and is answered as such. */
        e->stats.unknown_outcomes++;
        ss_etcd__log(e, SS_LOG_WARNING, "the outcome of a commit made while etcd is out of space "
                     "is unknown (%s): its requests are answered 'unavailable' and may have taken "
                     "effect", ss_etcd__why(c));
        f->unknown = true;
        ss_etcd__commit_outcome(e, f, SS_E_UNAVAILABLE, 0);
        return;
    }
    e->stats.unknown_outcomes++;
    ss_etcd__log(e, SS_LOG_WARNING, "the outcome of a commit is unknown (%s): settling it "
                 "through the commit marker before anything is answered", ss_etcd__why(c));
    f->state = SS_COMMIT_RESOLVING;
    f->marker_rev_before = f->marker_rev;
    f->fence_refused_said = false;
    ss_etcd__send_fence(e, f);
}

/* Does the marker, as read (kv), hold the id of flight f's commit? */
static bool ss_etcd__marker_holds(const struct ss_etcd_flight *f, const ss_etcd_kv *kv)
{
    size_t idlen = strlen(f->txn_id);
    return kv->found && kv->value.len == idlen && memcmp(kv->value.data, f->txn_id, idlen) == 0;
}

void ss_etcd__send_settle_read(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_SETTLE_READ, SS_ETCD_RANGE_METHOD);
    int rc = op ? ss_etcd__marker_key(e, f->slot) : SS_E_NOMEM;
    if (rc == SS_OK)
        rc = ss_etcd_range_pack(&op->call.request, ss_etcd__bytes(&e->scratch), false);
    ss_etcd__resolve_submit(e, f, op, rc);
}

void ss_etcd__settle_read_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (op->call.rc != SS_OK || ss_etcd_range_unpack(&op->call.reply, &r, &kv) != SS_OK) {
        f->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    bool ours = ss_etcd__marker_holds(f, &kv);
    int64_t rev = kv.found ? kv.mod_revision : 0;
    ss_etcd_reply_free(&r);
    f->settle_by_read = false;
    if (ours) {
        ss_etcd__log(e, SS_LOG_NOTICE, "a commit answered \"space exceeded\" was applied (etcd applies "
                     "the one that takes it past its quota): answered as committed");
        ss_etcd__commit_outcome(e, f, SS_OK, rev);
        return;
    }
    f->writes = false; /* nothing of it is in etcd */
    ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
}

static void ss_etcd__fence_answered(struct ss_backend_etcd *e, struct ss_etcd_flight *f, ss_etcd_reply *r_in,
                                    const ss_etcd_kv *kv_in);

void ss_etcd__fence_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc == SS_OK && ss_etcd_txn_unpack(&c->reply, &r, &kv) == SS_OK) {
        ss_etcd__fence_answered(e, f, &r, &kv);
        return;
    }
    if (ss_etcd__out_of_space(e, c)) {
        /* The fence is a put, refused once etcd's NOSPACE alarm is on;
         * so, from then on, is every write it applies, in the order of its
         * log. The lost commit was applied before the alarm, or never will
         * be: a (linearizable) read of the marker settles it. */
        ss_etcd__log(e, SS_LOG_NOTICE, "a fence was refused, etcd being out of space: the commit of "
                     "unknown outcome is settled by reading its marker");
        f->settle_by_read = true;
        ss_etcd__send_settle_read(e, f);
        return;
    }
    /* Tried again until etcd takes it (the outcome stays unknown until
     * then); a refusal is said once per commit, so that an operator
     * learns why its requests wait. */
    if (ss_etcd__refused(c) && !f->fence_refused_said) {
        f->fence_refused_said = true;
        ss_etcd__log(e, SS_LOG_ERR, "etcd refused the fence that settles a commit of unknown outcome "
                     "(%s): tried again every %u ms; its requests wait", ss_etcd__why(c), SS_ETCD_RETRY_MS);
    }
    f->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
}

/* The fence's answer (r, with the marker as its failure branch read it in
 * kv): the commit happened, did not, or stays unknown. */
static void ss_etcd__fence_answered(struct ss_backend_etcd *e, struct ss_etcd_flight *f, ss_etcd_reply *r_in,
                                    const ss_etcd_kv *kv_in)
{
    ss_etcd_reply r = *r_in;
    ss_etcd_kv kv = *kv_in;
    /* A fence of this flight's that etcd applied while its answer was
     * lost (a timeout), found by the fence sent again: as good as this
     * one succeeding. Without this, the marker's own fence was taken for
     * another broker with this node id, and the requests answered
     * "unavailable" though they did not happen. */
    char fence[SS_ETCD_FENCE_MAX];
    ss_etcd__fence_text(f, fence);
    bool fenced = !r.succeeded && kv.found && kv.value.len == strlen(fence) &&
                  memcmp(kv.value.data, fence, kv.value.len) == 0;
    if (r.succeeded || fenced) {
        /* The marker moved on from where the commit expected it: that
         * commit can no longer succeed, and did not. */
        f->marker_rev = r.succeeded ? r.revision : kv.mod_revision;
        ss_etcd_reply_free(&r);
        ss_etcd__log(e, SS_LOG_NOTICE, "the commit of unknown outcome did not happen%s: its "
                     "requests run again", fenced ? " (an earlier fence of it took effect)" : "");
        f->writes = false;
        ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
        return;
    }
    bool ours = ss_etcd__marker_holds(f, &kv);
    int64_t rev = kv.found ? kv.mod_revision : 0;
    int64_t fence_rev = r.revision;
    char behind[200] = "";
    if (!ours)
        ss_etcd__marker_behind(e, f, &kv, behind, sizeof behind);
    ss_etcd_reply_free(&r);
    if (ours) {
        ss_etcd__log(e, SS_LOG_NOTICE, "the commit of unknown outcome happened");
        ss_etcd__commit_outcome(e, f, SS_OK, rev);
        return;
    }
    f->marker_rev = rev;
    if (rev == f->marker_rev_before) {
        /* The marker is as the lost commit found it, so it did not
         * happen; the fence failed on the claim, which has lapsed since,
         * so it never can (it compared that claim). */
        ss_etcd__log(e, SS_LOG_NOTICE, "the commit of unknown outcome did not happen (this "
                     "broker's claim on node id %s lapsed since): its requests run again once the "
                     "node id is claimed again", e->node_id);
        f->writes = false;
        ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
        return;
    }
    f->unknown = true;
    /* etcd's data went back since the lost commit was built (seen now,
     * by the marker, or before): the marker is as restored. Neither it nor
     * the claim, both made again in the new history, can tell whether the
     * lost commit's compares may yet hold there: its outcome stays
     * unknown. */
    bool went_back = f->known_backs != e->stats.revisions_went_back;
    if (behind[0]) {
        ss_etcd__went_back(e, fence_rev, behind);
        went_back = true;
    }
    if (went_back) {
        ss_etcd__log(e, SS_LOG_WARNING, "the outcome of a commit sent before etcd's data went back stays "
                     "unknown: its requests are answered 'unavailable' and may have taken effect");
        ss_etcd__commit_outcome(e, f, SS_E_UNAVAILABLE, 0);
        return;
    }
    /* Another process wrote this broker's marker since: a broker that
     * took over the node id after this one's claim lapsed. What is there
     * says nothing of the lost commit, which may have happened before: its
     * outcome stays unknown, and is answered as such. */
    ss_etcd__log(e, SS_LOG_ERR, "the commit marker of node id %s was changed by another process "
                 "(two brokers must not share a node id): the outcome of a commit stays unknown, "
                 "its requests are answered 'unavailable' and may have taken effect", e->node_id);
    ss_etcd__commit_outcome(e, f, SS_E_UNAVAILABLE, 0);
}

bool ss_backend_etcd_commit_done(ss_backend *b, unsigned slot, int *rc)
{
    struct ss_backend_etcd *e = b->impl;
    struct ss_etcd_flight *f = &e->flights[slot];
    if (f->state != SS_COMMIT_DONE)
        return false;
    *rc = f->rc;
    f->state = SS_COMMIT_IDLE;
    ss_etcd__usage_settled(e, &f->b, *rc, f->revision);
    /* Its changes, for the owner's settle (backend.h: settled). */
    ss_feed spare = e->settled;
    ss_feed_clear(&spare);
    e->settled = f->b.pending;
    f->b.pending = spare;
    e->settled_revision = f->revision;
    if (*rc != SS_OK)
        ss_feed_clear(&e->settled);
    /* Committed: its entries hold what etcd holds. If not, nothing of it
     * is in etcd, or (its outcome unknown) perhaps it is: its entries
     * leave the cache either way. */
    ss_etcd__end_flight(e, f, *rc == SS_OK, *rc != SS_OK && f->unknown, f->revision);
    return true;
}

bool ss_backend_etcd_flight_done(const ss_backend *b, unsigned slot)
{
    const struct ss_backend_etcd *e = b->impl;
    return slot < SS_BACKEND_ETCD_FLIGHTS && e->flights[slot].state == SS_COMMIT_DONE;
}

bool ss_backend_etcd_committing(const ss_backend *b)
{
    const struct ss_backend_etcd *e = b->impl;
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        if (e->flights[i].state != SS_COMMIT_IDLE)
            return true;
    return false;
}

bool ss_backend_etcd_full(const ss_backend *b)
{
    const struct ss_backend_etcd *e = b->impl;
    return e->open.full;
}
