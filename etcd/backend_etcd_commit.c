/* backend_etcd_commit.c - a batch as one Txn, its outcome, and the fence
 * that settles an outcome left unknown (backend_etcd.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "backend_etcd_internal.h"

/* ---- commits ----------------------------------------------------------- */

static bool ss_etcd__writes(const struct ss_backend_etcd *e)
{
    if (e->norphans)
        return true;
    for (size_t i = 0; i < e->ntouched; i++)
        if (e->touched[i]->change != SS_CHANGE_NONE)
            return true;
    return false;
}

/* Is the index key (deadline, key) written by the change of a touched
 * entry? (A Txn may not name a key twice.) */
static bool ss_etcd__index_written(struct ss_backend_etcd *e, ss_bytes index_key)
{
    size_t plen = strlen(e->prefix) + 2 + 16 + 1;
    if (index_key.len < plen)
        return false;
    ss_bytes key = {index_key.data + plen, index_key.len - plen};
    struct ss_etcd_entry *x = ss_etcd__touched(e, key);
    return x && x->change != SS_CHANGE_NONE;
}

static int ss_etcd__build_entry(struct ss_backend_etcd *e, ss_etcd_txn *t, struct ss_etcd_entry *x)
{
    ss_bytes key = ss_etcd__bytes(&x->key);
    int rc = ss_etcd__key(e, &e->scratch, 'k', 0, key);
    if (rc == SS_OK)
        rc = ss_etcd_txn_expect(t, ss_etcd__bytes(&e->scratch), x->found ? x->rev : 0);
    if (rc != SS_OK || x->change == SS_CHANGE_NONE)
        return rc;
    uint64_t old = x->found ? x->stored_expiry : 0;
    uint64_t now = x->change == SS_CHANGE_PUT ? x->next_expiry : 0;
    const ss_buf *rec = &x->next_rec;
    if (x->change == SS_CHANGE_PUT && x->next_blob[0] != '\0') { /* its chunks are written */
        rc = ss_etcd__stub_make(&x->next_rec, x->next_blob, ss_etcd__chunk_bytes(e), &e->stub);
        rec = &e->stub;
    }
    if (rc == SS_OK)
        rc = x->change == SS_CHANGE_PUT ? ss_etcd_txn_put(t, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(rec))
                                        : ss_etcd_txn_delete(t, ss_etcd__bytes(&e->scratch));
    /* The chunks of the value it replaces go with it. */
    if (rc == SS_OK && x->found && x->blob[0] != '\0')
        rc = ss_etcd__blob_delete(e, t, x->blob);
    if (rc == SS_OK && old && old != now && (rc = ss_etcd__key(e, &e->scratch, 'x', old, key)) == SS_OK)
        rc = ss_etcd_txn_delete(t, ss_etcd__bytes(&e->scratch));
    ss_bytes empty = {NULL, 0};
    if (rc == SS_OK && now && now != old && (rc = ss_etcd__key(e, &e->scratch, 'x', now, key)) == SS_OK)
        rc = ss_etcd_txn_put(t, ss_etcd__bytes(&e->scratch), empty);
    return rc;
}

/* The open batch as a Txn, in op's request. */
static int ss_etcd__build(struct ss_backend_etcd *e, struct ss_etcd_op *op, bool writes)
{
    ss_etcd_txn t = {0};
    int rc = SS_OK;
    for (size_t i = 0; rc == SS_OK && i < e->ntouched; i++)
        rc = ss_etcd__build_entry(e, &t, e->touched[i]);
    for (size_t off = 0, i = 0; rc == SS_OK && i < e->norphans; i++) {
        uint32_t n;
        memcpy(&n, e->orphans.data + off, sizeof n);
        ss_bytes k = {e->orphans.data + off + sizeof n, n};
        off += sizeof n + n;
        bool twice = false;
        for (size_t j = 0, off2 = 0; j < i; j++) { /* the same stale entry found twice */
            uint32_t n2;
            memcpy(&n2, e->orphans.data + off2, sizeof n2);
            twice = twice || (n2 == n && memcmp(e->orphans.data + off2 + sizeof n2, k.data, n) == 0);
            off2 += sizeof n2 + n2;
        }
        if (!twice && !ss_etcd__index_written(e, k))
            rc = ss_etcd_txn_delete(&t, k);
    }
    if (rc == SS_OK && !writes) {
        /* Compares alone would be answered from the member's own state,
         * which may lag: the marker's Range makes the read linearizable. */
        if ((rc = ss_etcd__named(e, 'n', e->node_id)) == SS_OK)
            rc = ss_etcd_txn_get(&t, ss_etcd__bytes(&e->scratch));
    }
    if (rc == SS_OK)
        rc = ss_etcd__build_usage(e, &t);
    if (rc == SS_OK && writes) {
        snprintf(e->txn_id, sizeof e->txn_id, "%s %016llx %llu", e->node_id,
                 (unsigned long long)e->incarnation, (unsigned long long)++e->txn_seq);
        ss_bytes id = {(const uint8_t *)e->txn_id, strlen(e->txn_id)};
        if ((rc = ss_etcd__named(e, 'n', e->node_id)) == SS_OK &&
            (rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), e->marker_rev)) == SS_OK &&
            (rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), id)) == SS_OK)
            rc = ss_etcd_txn_on_failure_get(&t, ss_etcd__bytes(&e->scratch));
    }
    if (rc == SS_OK)
        rc = ss_etcd_txn_pack(&t, &op->call.request);
    ss_etcd_txn_free(&t);
    return rc;
}

int ss_backend_etcd_commit_start(ss_backend *b, uint64_t now_ms)
{
    (void)now_ms;
    struct ss_backend_etcd *e = b->impl;
    if (e->commit != SS_COMMIT_IDLE)
        return SS_E_BUSY;
    if (e->ntouched == 0 && e->norphans == 0) {
        ss_etcd__end_batch(e, true, 0);
        return SS_E_NOTFOUND;
    }
    bool writes = ss_etcd__writes(e);
    if (writes && !e->marker_known) {
        ss_etcd__ask_marker(e);
        return SS_E_PENDING;
    }
    e->commit_writes = writes;
    if (ss_etcd__uploads(e)) {
        /* Large values first, in chunks; the Txn follows. */
        e->commit = SS_COMMIT_UPLOADING;
        e->upload_at = 0;
        e->upload_started_ms = ss_etcd__mono_ms();
        ss_etcd__upload_next(e);
        return SS_OK;
    }
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_TXN, SS_ETCD_TXN_METHOD);
    int rc = op ? ss_etcd__build(e, op, writes) : SS_E_NOMEM;
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        ss_etcd__abort(e);
        return rc;
    }
    e->commit = SS_COMMIT_TXN;
    e->stats.txns++;
    ss_etcd__submit(e, op);
    return SS_OK;
}

void ss_etcd__commit_send(struct ss_backend_etcd *e)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_TXN, SS_ETCD_TXN_METHOD);
    int rc = op ? ss_etcd__build(e, op, e->commit_writes) : SS_E_NOMEM;
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        ss_etcd__commit_failed(e, rc);
        return;
    }
    e->commit = SS_COMMIT_TXN;
    e->stats.txns++;
    ss_etcd__submit(e, op);
}

/* The commit's outcome is known. */
static void ss_etcd__commit_outcome(struct ss_backend_etcd *e, int rc, int64_t revision)
{
    e->commit = SS_COMMIT_DONE;
    e->commit_rc = rc;
    e->commit_revision = revision;
    if (rc == SS_OK && e->commit_writes)
        e->marker_rev = revision;
    if (rc == SS_E_CONFLICT)
        e->stats.conflicts++;
}

void ss_etcd__commit_failed(struct ss_backend_etcd *e, int rc)
{
    ss_etcd__commit_outcome(e, rc, 0);
}

/* The marker as a failed Txn's failure branch read it. */
static void ss_etcd__marker_seen(struct ss_backend_etcd *e, const ss_etcd_kv *kv)
{
    e->marker_rev = kv->found ? kv->mod_revision : 0;
}

void ss_etcd__send_fence(struct ss_backend_etcd *e)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_FENCE, SS_ETCD_TXN_METHOD);
    char fence[sizeof e->txn_id + 8];
    snprintf(fence, sizeof fence, "%s fence", e->txn_id);
    ss_bytes id = {(const uint8_t *)fence, strlen(fence)};
    int rc = op ? ss_etcd__named(e, 'n', e->node_id) : SS_E_NOMEM;
    if (rc == SS_OK)
        rc = ss_etcd_cas_pack(&op->call.request, ss_etcd__bytes(&e->scratch), e->marker_rev, id, 0);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        e->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS; /* out of memory: later */
        return;
    }
    e->resolve_at_ms = 0;
    ss_etcd__submit(e, op);
}

void ss_etcd__txn_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc == SS_OK && ss_etcd_txn_unpack(&c->reply, &r, &kv) == SS_OK) {
        int64_t rev = r.revision;
        bool ok = r.succeeded;
        ss_etcd_reply_free(&r);
        if (!ok && e->commit_writes)
            ss_etcd__marker_seen(e, &kv);
        ss_etcd__commit_outcome(e, ok ? SS_OK : SS_E_CONFLICT, rev);
        return;
    }
    if (c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED) {
        /* Refused before it ran (the token expired): log in again and
         * run the batch again. */
        ss_etcd__commit_outcome(e, SS_E_CONFLICT, 0);
        return;
    }
    if (ss_etcd__refused(c)) {
        ss_etcd__log(e, SS_ETCD_LOG_ERR, "etcd refused a commit: %s", ss_etcd__why(c));
        ss_etcd__commit_outcome(e, c->status == 8 ? SS_E_QUOTA : SS_E_IO, 0);
        return;
    }
    if (!e->commit_writes) { /* only compares: running again is harmless */
        ss_etcd__commit_outcome(e, SS_E_CONFLICT, 0);
        return;
    }
    e->stats.unknown_outcomes++;
    ss_etcd__log(e, SS_ETCD_LOG_WARNING, "the outcome of a commit is unknown (%s): settling it "
                 "through the commit marker before anything is answered", ss_etcd__why(c));
    e->commit = SS_COMMIT_RESOLVING;
    ss_etcd__send_fence(e);
}

void ss_etcd__fence_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc != SS_OK || ss_etcd_txn_unpack(&c->reply, &r, &kv) != SS_OK) {
        e->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    if (r.succeeded) {
        /* The marker moved on from where the commit expected it: that
         * commit can no longer succeed, and did not. */
        e->marker_rev = r.revision;
        ss_etcd_reply_free(&r);
        ss_etcd__log(e, SS_ETCD_LOG_NOTICE, "the commit of unknown outcome did not happen: its "
                     "requests run again");
        e->commit_writes = false;
        ss_etcd__commit_outcome(e, SS_E_CONFLICT, 0);
        return;
    }
    size_t idlen = strlen(e->txn_id);
    bool ours = kv.found && kv.value.len == idlen && memcmp(kv.value.data, e->txn_id, idlen) == 0;
    int64_t rev = kv.found ? kv.mod_revision : 0;
    ss_etcd_reply_free(&r);
    if (ours) {
        ss_etcd__log(e, SS_ETCD_LOG_NOTICE, "the commit of unknown outcome happened");
        ss_etcd__commit_outcome(e, SS_OK, rev);
        return;
    }
    /* Someone else wrote this broker's marker: another broker with the
     * same node id. */
    ss_etcd__log(e, SS_ETCD_LOG_ERR, "the commit marker of node id %s was changed by another "
                 "process: two brokers must not share a node id", e->node_id);
    e->marker_rev = rev;
    e->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
}

bool ss_backend_etcd_commit_done(ss_backend *b, int *rc)
{
    struct ss_backend_etcd *e = b->impl;
    if (e->commit != SS_COMMIT_DONE)
        return false;
    *rc = e->commit_rc;
    e->commit = SS_COMMIT_IDLE;
    ss_etcd__usage_settled(e, *rc, e->commit_revision);
    if (*rc == SS_OK) {
        ss_etcd__end_batch(e, true, e->commit_revision);
    } else {
        /* Nothing of it is in etcd: its entries leave the cache. */
        ss_etcd__end_batch(e, false, 0);
        if (*rc == SS_E_CONFLICT)
            ss_feed_clear(&e->pending);
    }
    return true;
}

bool ss_backend_etcd_committing(const ss_backend *b)
{
    const struct ss_backend_etcd *e = b->impl;
    return e->commit != SS_COMMIT_IDLE;
}

bool ss_backend_etcd_full(const ss_backend *b)
{
    const struct ss_backend_etcd *e = b->impl;
    return e->full;
}

