/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_settle.c - settling a commit whose outcome was lost.
 *
 * A write Txn compares this broker's claim (l/<node id>) at the revision
 * the broker holds it at, and the keys its batch read; then it writes.
 * When its answer is lost (the connection cut, a timeout), the Txn may
 * have applied, or may still apply later from etcd's log. Nothing of its
 * batch is answered until its outcome is known, found in two steps.
 *
 * The fence: a Txn that rewrites the claim (the same value, on the same
 * lease) if it is still at the revision the lost Txn compared. Once the
 * fence has applied, the lost Txn can never apply: it did before, or its
 * compare on the claim fails for good. If the claim has moved on already
 * (another flight's fence, or the claim lapsed), no fence is needed. A
 * commit answered "space exceeded" needs none either: etcd answered it
 * as it applied it, or refused it.
 *
 * The witnesses: the keys the batch wrote, whose new bytes the broker
 * knows. A record's version stamp was issued for that write alone, so a
 * record that holds the batch's bytes is the batch's. A tombstone holds
 * the version it removed, as another broker's deletion of that same
 * version would: it is the batch's only on this broker's own lease. Each
 * key is read as it is now, until one tells: holding the batch's bytes,
 * the Txn applied, at its mod_revision; still at the revision the Txn
 * compared, it did not (a Txn applies whole). A key that another broker
 * wrote since tells nothing by itself; if none tells, the first such key
 * is read back through etcd's history, to the state before each later
 * write in turn, until it does. etcd keeps history until it compacts
 * it; compacted, after SS_ETCD_SETTLE_HOPS writes, or when the bytes are
 * alike but not provably the batch's, the outcome stays unknown: the
 * batch's requests are answered "unavailable".
 *
 * A witness found absent was never written, or was written and then
 * removed without a trace. Only two things remove a key so: a
 * tombstone's end, at least tombstone_ms after the tombstone was put; and
 * a deletion while etcd is out of space. So absent within half of
 * tombstone_ms of the Txn (the half: the lease's clock is etcd's), the
 * Txn did not apply; later, that key tells nothing. The second leaves
 * one window, documented in docs/CLUSTER.md (Failures): after a fence, a deletion
 * while out of space needs an operator to clear etcd's alarm in between
 * (the fence is a put); after "space exceeded", another broker must
 * delete the key the Txn created in the moment before the read.
 *
 * Before this, every write Txn also wrote a commit marker of its own
 * broker; the fence and the witnesses do its work without a put per Txn
 * (docs/CLUSTER.md).
 */
#include <stdio.h>
#include <string.h>

#include "../core/errors.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_settle.h"

/* Does f's batch put a record or a tombstone at its touched entry i? */
static bool ss_etcd__puts_at(const struct ss_etcd_flight *f, size_t i)
{
    enum ss_entry_change c = f->b.touched[i]->change;
    return c == SS_CHANGE_PUT || c == SS_CHANGE_DEL;
}

/* The first touched entry from i on that f's batch puts (ntouched: none). */
static size_t ss_etcd__next_witness(const struct ss_etcd_flight *f, size_t i)
{
    while (i < f->b.ntouched && !ss_etcd__puts_at(f, i))
        i++;
    return i;
}

/* The outcome stays unknown: answered as such. */
static void ss_etcd__settle_unknown(struct ss_backend_etcd *e, struct ss_etcd_flight *f, const char *why)
{
    ss_etcd__log(e, SS_LOG_ERR, "the outcome of a commit stays unknown (%s): its requests are answered "
                 "'unavailable' and may have taken effect", why);
    ss_etcd__commit_outcome(e, f, SS_E_UNAVAILABLE, 0);
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

void ss_etcd__settle_start(struct ss_backend_etcd *e, struct ss_etcd_flight *f, bool lost)
{
    f->state = SS_COMMIT_RESOLVING;
    f->unknown = lost;
    f->witness = ss_etcd__next_witness(f, 0);
    f->walk_at = f->settle_at = 0;
    f->settle_hops = 0;
    f->settle_by_read = !lost;
    if (f->witness == f->b.ntouched)
        ss_etcd__settle_unknown(e, f, "its batch only removes keys, which leaves nothing to read");
    else if (lost)
        ss_etcd__send_fence(e, f);
    else
        ss_etcd__send_settle_read(e, f);
}

void ss_etcd__send_fence(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    if (e->claim != SS_CLAIM_HELD || e->claim_rev != f->claim_compared) {
        /* The claim moved on since the Txn compared it: a fence of
         * another flight, or the claim lapsed (etcd removed the key with
         * its lease). The Txn can no longer apply. */
        f->settle_by_read = true;
        ss_etcd__send_settle_read(e, f);
        return;
    }
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_FENCE, SS_ETCD_TXN_METHOD);
    ss_bytes value = {(const uint8_t *)e->claim_value, strlen(e->claim_value)};
    ss_etcd_txn t = {0};
    int rc = op ? ss_etcd__named(e, 'l', e->node_id) : SS_E_NOMEM;
    ss_bytes claim = ss_etcd__bytes(&e->scratch);
    if (rc == SS_OK && (rc = ss_etcd_txn_expect(&t, claim, f->claim_compared)) == SS_OK &&
        (rc = ss_etcd_txn_put_leased(&t, claim, value, e->lease_id)) == SS_OK &&
        (rc = ss_etcd_txn_on_failure_get(&t, claim)) == SS_OK)
        rc = ss_etcd_txn_pack(&t, &op->call.request);
    ss_etcd_txn_free(&t);
    ss_etcd__resolve_submit(e, f, op, rc);
}

void ss_etcd__fence_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc != SS_OK || ss_etcd_txn_unpack(&c->reply, &r, &kv) != SS_OK) {
        /* Out of reach, or refused (its lease gone: the keep-alive tells,
         * and the next try needs no fence then). */
        if (c->rc == SS_E_SERVER && !e->keepalive_asked)
            e->keepalive_ms = 0;
        f->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    size_t vlen = strlen(e->claim_value);
    bool ours = kv.found && kv.lease == e->lease_id && kv.value.len == vlen &&
                memcmp(kv.value.data, e->claim_value, vlen) == 0;
    if (r.succeeded && e->claim_rev == f->claim_compared) {
        e->claim_rev = r.revision;
    } else if (!r.succeeded && ours && e->claim == SS_CLAIM_HELD && kv.mod_revision > e->claim_rev) {
        /* A fence of this broker whose answer was lost moved it on. */
        e->claim_rev = kv.mod_revision;
    } else if (!r.succeeded && !ours && !e->keepalive_asked) {
        e->keepalive_ms = 0; /* lapsed, or taken over: the lease says which, now */
    }
    ss_etcd_reply_free(&r);
    /* Either way the claim is past the revision the lost Txn compared. */
    f->settle_by_read = true;
    ss_etcd__send_settle_read(e, f);
}

void ss_etcd__send_settle_read(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_SETTLE_READ, SS_ETCD_RANGE_METHOD);
    const struct ss_etcd_entry *x = f->b.touched[f->witness];
    int rc = op ? ss_etcd__key(e, &e->scratch, 'k', ss_etcd__bytes(&x->key)) : SS_E_NOMEM;
    if (rc == SS_OK && f->settle_at != 0)
        rc = ss_etcd_range_at_pack(&op->call.request, ss_etcd__bytes(&e->scratch), f->settle_at);
    else if (rc == SS_OK)
        rc = ss_etcd_range_pack(&op->call.request, ss_etcd__bytes(&e->scratch), false);
    ss_etcd__resolve_submit(e, f, op, rc);
}

/* How the witness told, for the log. */
static const char *ss_etcd__settle_how(const struct ss_etcd_flight *f, char *buf, size_t n)
{
    if (f->settle_hops == 0)
        return "";
    snprintf(buf, n, " (read back past %u later writes of its witness key)", f->settle_hops);
    return buf;
}

static void ss_etcd__settled_applied(struct ss_backend_etcd *e, struct ss_etcd_flight *f, int64_t revision)
{
    char how[96];
    if (f->unknown)
        ss_etcd__log(e, SS_LOG_NOTICE, "the commit of unknown outcome happened%s", ss_etcd__settle_how(f, how, sizeof how));
    else
        ss_etcd__log(e, SS_LOG_NOTICE, "a commit answered \"space exceeded\" was applied (etcd applies "
                     "the one that takes it past its quota): answered as committed");
    ss_etcd__commit_outcome(e, f, SS_OK, revision);
}

static void ss_etcd__settled_not_applied(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    char how[96];
    if (f->unknown)
        ss_etcd__log(e, SS_LOG_NOTICE, "the commit of unknown outcome did not happen%s: its requests run again",
                     ss_etcd__settle_how(f, how, sizeof how));
    f->writes = false; /* nothing of it is in etcd */
    ss_etcd__commit_outcome(e, f, SS_E_CONFLICT, 0);
}

/* The key read tells nothing: the next one, or back through the history
 * of the first that another broker wrote since; else it stays unknown. */
static void ss_etcd__settle_next(struct ss_backend_etcd *e, struct ss_etcd_flight *f, const char *why)
{
    if (f->settle_at == 0 && (f->witness = ss_etcd__next_witness(f, f->witness + 1)) < f->b.ntouched) {
        ss_etcd__send_settle_read(e, f);
    } else if (f->settle_at == 0 && f->walk_at != 0) {
        f->witness = f->walk_witness;
        f->settle_at = f->walk_at;
        f->settle_hops = 1;
        ss_etcd__send_settle_read(e, f);
    } else {
        ss_etcd__settle_unknown(e, f, why);
    }
}

void ss_etcd__settle_read_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    const struct ss_etcd_entry *x = f->b.touched[f->witness];
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (op->call.rc != SS_OK || ss_etcd_range_unpack(&op->call.reply, &r, &kv) != SS_OK) {
        if (ss_etcd__refused(&op->call))
            ss_etcd__settle_unknown(e, f, ss_etcd__why(&op->call)); /* compacted, most likely */
        else
            f->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    /* What the batch put there. */
    const ss_buf *put = &x->next_rec;
    if (x->change == SS_CHANGE_PUT && x->next_blob[0] != '\0') {
        if (ss_etcd__stub_make(&x->next_rec, x->next_blob, ss_etcd__chunk_bytes(e), &e->stub) != SS_OK) {
            ss_etcd_reply_free(&r);
            f->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS; /* out of memory */
            return;
        }
        put = &e->stub;
    }
    bool alike = kv.found && kv.value.len == put->len && memcmp(kv.value.data, put->data, put->len) == 0;
    /* Alike on another lease than the batch's tombstone's: another's. */
    if (alike && x->change == SS_CHANGE_DEL && x->next_lease != 0 && kv.lease != x->next_lease)
        alike = false;
    bool provably = x->change == SS_CHANGE_PUT || x->next_lease != 0;
    int64_t mod = kv.mod_revision;
    ss_etcd_reply_free(&r);
    if (kv.found && mod <= x->rev) {
        ss_etcd__settled_not_applied(e, f); /* as the Txn found it */
    } else if (alike && provably) {
        ss_etcd__settled_applied(e, f, mod);
    } else if (!kv.found && ss_etcd__mono_ms() - f->sent_ms < e->tombstone_ms / 2) {
        ss_etcd__settled_not_applied(e, f); /* no tombstone could have ended yet */
    } else if (!kv.found) {
        ss_etcd__settle_next(e, f, "a key its batch wrote is absent, which a later deletion could explain");
    } else if (alike) {
        ss_etcd__settle_next(e, f, "another broker may have removed the same version of a key");
    } else if (f->settle_at == 0) {
        /* Written by another broker since: what was there before is
         * read only if no other key of the batch tells. */
        if (f->walk_at == 0) {
            f->walk_witness = f->witness;
            f->walk_at = mod - 1;
        }
        ss_etcd__settle_next(e, f, "");
    } else if (++f->settle_hops > SS_ETCD_SETTLE_HOPS) {
        ss_etcd__settle_unknown(e, f, "other brokers wrote a key of its batch too often since");
    } else {
        f->settle_at = mod - 1; /* and before that write? */
        ss_etcd__send_settle_read(e, f);
    }
}
