/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_upload.c - writing the chunks of large values before the
 * batch's Txn, under a guard, and deleting those of a Txn that did not
 * commit (backend_etcd_blob.c has their format).
 *
 * Why a guard. A chunk's put that timed out is not gone: etcd may apply
 * it later, after requests sent after it. A member stopped with the put
 * in its socket reads it when it runs again and handles it on a goroutine
 * of its own, next to whatever came after it. Deleting the chunks of a
 * value that was not stored would then leave that late chunk behind, with
 * nothing to refer to it, for good.
 *
 * So an upload first asks etcd for a lease of its own, and every chunk is
 * written under a guard key, u/<blob id>:
 *   - a Txn of its own puts the guard, on that lease, if the flight's
 *     commit marker and the record are still at the revisions the commit
 *     will compare;
 *   - each chunk's Txn goes only while the guard is there;
 *   - the commit's Txn compares that the guard is there and deletes it.
 * After a commit, no chunk can be written again: the marker changed for
 * good (every commit of the flight changes it), so the guard's Txn
 * fails, and the chunks find no guard. A value that was not stored goes
 * by revoking the lease first. That takes the guard with it, and the
 * guard's Txn can no longer take effect either (its lease is gone, and
 * etcd applies none of a Txn then). From then on no chunk of that blob
 * can be written, so the deletion of its chunks that follows is the last
 * word. After a commit the lease is revoked as well, not to keep it for
 * nothing.
 *
 * The lease lasts a minute, and a second more per MiB to write: should
 * an upload outlast it, the guard is gone, the chunk's Txn or the commit
 * fails on it, and the batch runs again with a new blob and a lease
 * twice as long as before (and so on, up to 64 times).
 * A broker that dies between its chunks and its Txn leaves the chunks
 * behind (the guard goes with the lease): CLUSTER.md says how to find
 * them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_txn.h"
#include "backend_etcd_upload.h"
#include "backend_etcd_watch.h"

/* The guards' lease: a minute, and a second per MiB of chunked records;
 * times upload_ttl_scale, which doubles each time one ended too soon. */
#define SS_ETCD_UPLOAD_TTL_S 60
#define SS_ETCD_UPLOAD_BYTES_PER_S (1u << 20)
#define SS_ETCD_UPLOAD_TTL_SCALE_MAX 64

/* A deletion tried again later: the blob's chunks ("" for none) once
 * lease (0 for none) is revoked. */
struct ss_etcd_drop {
    char blob[SS_ETCD_BLOB_ID_LEN];
    int64_t lease;
};

static void ss_etcd__drop_later(struct ss_backend_etcd *e, const char *blob, int64_t lease);

/* e->scratch = blob's guard key, u/<blob id>. */
static int ss_etcd__guard_key(struct ss_backend_etcd *e, const char *blob)
{
    return ss_etcd__named(e, 'u', blob);
}

/* A call of kind that sends t, which it frees (NULL: rc was a failure,
 * or out of memory). */
static struct ss_etcd_op *ss_etcd__txn_call(struct ss_backend_etcd *e, enum ss_op_kind kind, ss_etcd_txn *t, int rc)
{
    struct ss_etcd_op *op = rc == SS_OK ? ss_etcd__op_new(e, kind, SS_ETCD_TXN_METHOD) : NULL;
    if (op && ss_etcd_txn_pack(t, &op->call.request) != SS_OK) {
        ss_etcd__op_free(op);
        op = NULL;
    }
    ss_etcd_txn_free(t);
    return op;
}

/* ---- writing chunks before the commit ---------------------------------- */

/* The entry of flight f whose value goes in chunks and still has one to
 * write, from the one the upload is at. */
static struct ss_etcd_entry *ss_etcd__uploading(struct ss_backend_etcd *e, struct ss_etcd_flight *f,
                                                ss_bytes *value)
{
    for (; f->upload_at < f->b.ntouched; f->upload_at++) {
        struct ss_etcd_entry *x = f->b.touched[f->upload_at];
        if (x->change != SS_CHANGE_PUT || x->next_blob[0] == '\0')
            continue;
        ss_record rec;
        ss_bytes tail;
        if (ss_record_decode(x->next_rec.data, x->next_rec.len, &rec, &tail) != SS_OK)
            continue; /* cannot be: encoded here */
        if ((uint64_t)x->uploaded * ss_etcd__chunk_bytes(e) < rec.value.len) {
            *value = rec.value;
            return x;
        }
    }
    return NULL;
}

bool ss_etcd__uploads(const struct ss_etcd_batch *b)
{
    for (size_t i = 0; i < b->ntouched; i++)
        if (b->touched[i]->change == SS_CHANGE_PUT && b->touched[i]->next_blob[0] != '\0')
            return true;
    return false;
}

void ss_etcd__upload_start(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    f->state = SS_COMMIT_UPLOADING;
    f->upload_at = 0;
    f->upload_lease = 0;
    f->upload_progress_ms = ss_etcd__mono_ms();
    ss_etcd__upload_next(e, f);
}

/* Ask for the lease of flight f's guards. */
static void ss_etcd__upload_grant(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < f->b.ntouched; i++) {
        const struct ss_etcd_entry *x = f->b.touched[i];
        if (x->change == SS_CHANGE_PUT && x->next_blob[0] != '\0')
            bytes += x->next_rec.len;
    }
    int64_t ttl = (SS_ETCD_UPLOAD_TTL_S + (int64_t)(bytes / SS_ETCD_UPLOAD_BYTES_PER_S)) * e->upload_ttl_scale;
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_UPLOAD_LEASE, SS_ETCD_LEASE_GRANT_METHOD);
    if (op && ss_etcd_lease_grant_pack(&op->call.request, ttl) != SS_OK) {
        ss_etcd__op_free(op);
        op = NULL;
    }
    if (op == NULL) {
        f->upload_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS; /* out of memory: later */
        return;
    }
    op->flight = f;
    ss_etcd__submit(e, op);
}

void ss_etcd__upload_next(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    f->upload_retry_ms = 0;
    if (f->upload_lease == 0) {
        ss_etcd__upload_grant(e, f);
        return;
    }
    ss_bytes value;
    struct ss_etcd_entry *x = ss_etcd__uploading(e, f, &value);
    if (x == NULL) {
        ss_etcd__commit_send(e, f); /* every chunk is there: the Txn */
        return;
    }
    ss_etcd_txn t = {0};
    int rc = SS_OK;
    if (!x->guarded) {
        /* The guard, while the flight's marker and the record are as its
         * commit will compare them. */
        ss_bytes empty = {NULL, 0};
        if ((rc = ss_etcd__marker_key(e, f->slot)) == SS_OK)
            rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), f->marker_rev);
        if (rc == SS_OK && (rc = ss_etcd__key(e, &e->scratch, 'k', ss_etcd__bytes(&x->key))) == SS_OK)
            rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), x->rev);
        if (rc == SS_OK && (rc = ss_etcd__guard_key(e, x->next_blob)) == SS_OK)
            rc = ss_etcd_txn_put_leased(&t, ss_etcd__bytes(&e->scratch), empty, f->upload_lease);
        /* Failed, the marker as it is: a marker moved behind this
         * broker's back (a takeover of its node id) would otherwise fail
         * every guard again, as the commit's failure branch reads it. */
        if (rc == SS_OK && (rc = ss_etcd__marker_key(e, f->slot)) == SS_OK)
            rc = ss_etcd_txn_on_failure_get(&t, ss_etcd__bytes(&e->scratch));
        f->known_backs = e->stats.revisions_went_back; /* for the marker read back */
    } else {
        size_t cb = ss_etcd__chunk_bytes(e);
        size_t off = x->uploaded * cb;
        ss_bytes chunk = {value.data + off, value.len - off < cb ? value.len - off : cb};
        if ((rc = ss_etcd__guard_key(e, x->next_blob)) == SS_OK)
            rc = ss_etcd_txn_expect_present(&t, ss_etcd__bytes(&e->scratch));
        if (rc == SS_OK)
            rc = ss_backend_etcd_chunk_key(&e->scratch, e->prefix, x->next_blob, (uint32_t)x->uploaded);
        if (rc == SS_OK)
            rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), chunk);
    }
    struct ss_etcd_op *op = ss_etcd__txn_call(e, SS_OP_UPLOAD, &t, rc);
    if (op == NULL) {
        f->upload_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS; /* out of memory: later */
        return;
    }
    /* From now on something of it may be in etcd: a failure revokes this. */
    x->upload_lease = f->upload_lease;
    op->flight = f;
    ss_etcd__submit(e, op);
}

/* The guards' lease of an upload ended before the upload did: the next
 * lease is twice as long. */
static void ss_etcd__upload_lease_ended(struct ss_backend_etcd *e)
{
    if (e->upload_ttl_scale < SS_ETCD_UPLOAD_TTL_SCALE_MAX)
        e->upload_ttl_scale *= 2;
    ss_etcd__log(e, SS_LOG_WARNING, "the lease of a large value's chunks ended before they were written: "
                 "its batch runs again, under a lease %u times as long", e->upload_ttl_scale);
}

/* A call of flight f's upload failed (c): the batch ends, or the call is
 * made again shortly. */
static void ss_etcd__upload_failed(struct ss_backend_etcd *e, struct ss_etcd_flight *f, const ss_grpc_call *c)
{
    if (ss_etcd__out_of_space(e, c)) {
        /* Nothing of the batch was stored (its Txn was not sent): it runs
         * again, where the large value is refused and the rest goes on. */
        ss_etcd__commit_failed(e, f, SS_E_CONFLICT);
        return;
    }
    if (c->rc == SS_E_SERVER && c->status == SS_ETCD_NOT_FOUND && strstr(c->message, "lease not found")) {
        /* The guards' lease ended before the upload did: again, anew. */
        ss_etcd__upload_lease_ended(e);
        ss_etcd__commit_failed(e, f, SS_E_CONFLICT);
        return;
    }
    if (ss_etcd__refused(c) && !(c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED)) {
        ss_etcd__log(e, SS_LOG_ERR, "etcd refused a chunk of a large value: %s", ss_etcd__why(c));
        ss_etcd__commit_failed(e, f, c->status == 8 ? SS_E_QUOTA : SS_E_IO);
        return;
    }
    /* A put of a key nobody else writes, a lease asked for: sent again,
     * they do no harm. */
    if (ss_etcd__mono_ms() - f->upload_progress_ms >= e->unavailable_ms) {
        ss_etcd__log(e, SS_LOG_WARNING, "etcd did not take the chunks of a large value for %u ms "
                     "(%s): its batch is answered \"the store is unavailable\"",
                     e->unavailable_ms, ss_etcd__why(c));
        ss_etcd__commit_failed(e, f, SS_E_UNAVAILABLE);
        return;
    }
    f->upload_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
}

void ss_etcd__upload_lease_granted(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    if (f->state != SS_COMMIT_UPLOADING)
        return;
    int64_t id = 0, ttl = 0;
    if (op->call.rc == SS_OK && ss_etcd_lease_grant_unpack(&op->call.reply, &id, &ttl) == SS_OK && id != 0) {
        f->upload_lease = id;
        ss_etcd__upload_next(e, f);
        return;
    }
    ss_etcd__upload_failed(e, f, &op->call);
}

void ss_etcd__upload_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    ss_grpc_call *c = &op->call;
    if (f->state != SS_COMMIT_UPLOADING)
        return;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc == SS_OK && ss_etcd_txn_unpack(&c->reply, &r, &kv) == SS_OK) {
        bool held = r.succeeded;
        int64_t rev = r.revision;
        struct ss_etcd_entry *x = f->b.touched[f->upload_at];
        /* The guard's Txn failed on this broker's own marker, older than
         * its last commit on the slot: etcd's data went back. Taken as
         * the commit's Txn would take it, or the guard would use that
         * evidence up (the commit compares the marker as read here). */
        char behind[200] = "";
        if (!held && !x->guarded)
            ss_etcd__marker_behind(e, f, &kv, behind, sizeof behind);
        ss_etcd_reply_free(&r);
        if (!held) {
            /* The guard's Txn: the record changed (another broker wrote
             * it), and the commit would fail on it, or the marker moved
             * (read by its failure branch). A chunk's: the guard is gone,
             * its lease ended. */
            if (behind[0])
                ss_etcd__went_back(e, rev, behind);
            if (x->guarded)
                ss_etcd__upload_lease_ended(e);
            else
                f->marker_rev = kv.found ? kv.mod_revision : 0;
            ss_etcd__commit_failed(e, f, SS_E_CONFLICT);
            return;
        }
        if (!x->guarded) {
            x->guarded = true;
        } else {
            x->uploaded++;
            e->stats.chunks_written++;
        }
        /* etcd takes the chunks: a failure after this one is given
         * etcd_unavailable_ms from now, not from the upload's start (a
         * value that takes longer to send would fail on one blip). */
        f->upload_progress_ms = ss_etcd__mono_ms();
        ss_etcd__upload_next(e, f);
        return;
    }
    ss_etcd__upload_failed(e, f, c);
}

int ss_etcd__guard_commit(struct ss_backend_etcd *e, ss_etcd_txn *t, const char *blob)
{
    int rc = ss_etcd__guard_key(e, blob);
    if (rc == SS_OK)
        rc = ss_etcd_txn_expect_present(t, ss_etcd__bytes(&e->scratch));
    if (rc == SS_OK)
        rc = ss_etcd_txn_delete(t, ss_etcd__bytes(&e->scratch));
    return rc;
}

/* ---- deleting what a Txn that did not commit left ----------------------- */

/* Delete blob's chunks (one Txn). */
static void ss_etcd__chunks_delete(struct ss_backend_etcd *e, const char *blob)
{
    ss_etcd_txn t = {0};
    struct ss_etcd_op *op = ss_etcd__txn_call(e, SS_OP_BLOB_DROP, &t, ss_etcd__blob_delete(e, &t, blob));
    if (op == NULL) {
        ss_etcd__drop_later(e, blob, 0);
        return;
    }
    snprintf(op->blob, sizeof op->blob, "%s", blob);
    ss_etcd__submit(e, op);
}

void ss_etcd__blob_release(struct ss_backend_etcd *e, const char *blob, int64_t lease)
{
    if (lease == 0) {
        if (blob[0] != '\0')
            ss_etcd__chunks_delete(e, blob);
        return;
    }
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_BLOB_REVOKE, SS_ETCD_LEASE_REVOKE_METHOD);
    if (op && ss_etcd_lease_id_pack(&op->call.request, lease) != SS_OK) {
        ss_etcd__op_free(op);
        op = NULL;
    }
    if (op == NULL) {
        ss_etcd__drop_later(e, blob, lease);
        return;
    }
    snprintf(op->blob, sizeof op->blob, "%s", blob);
    op->lease = lease;
    ss_etcd__submit(e, op);
}

void ss_etcd__blob_revoked(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    const ss_grpc_call *c = &op->call;
    /* Not found: revoked already (another chunked value of the same
     * batch), or ended. Either way the guard is gone. */
    if (c->rc == SS_OK || (c->rc == SS_E_SERVER && c->status == SS_ETCD_NOT_FOUND)) {
        if (op->blob[0] != '\0')
            ss_etcd__chunks_delete(e, op->blob);
        return;
    }
    if (ss_etcd__refused(c) && !(c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED)) {
        /* The chunks go all the same; only a put of one applied late,
         * before the lease ends, could bring it back. */
        ss_etcd__log(e, SS_LOG_WARNING, "etcd refused to revoke the lease of a large value's chunks "
                     "(%s): it ends in its time", ss_etcd__why(c));
        if (op->blob[0] != '\0')
            ss_etcd__chunks_delete(e, op->blob);
        return;
    }
    ss_etcd__drop_later(e, op->blob, op->lease); /* the cluster did not answer: again, until it does */
}

/* Try blob's deletion (and lease's revocation) again later. */
static void ss_etcd__drop_later(struct ss_backend_etcd *e, const char *blob, int64_t lease)
{
    struct ss_etcd_drop d = {.lease = lease};
    size_t n = strlen(blob);
    memcpy(d.blob, blob, n < sizeof d.blob ? n : sizeof d.blob);
    if (ss_buf_append(&e->drops, &d, sizeof d) != SS_OK) {
        ss_etcd__log(e, SS_LOG_WARNING, "out of memory: the chunks c/%s/ of a value that was not "
                     "stored are left behind", blob);
        return;
    }
    if (e->drop_retry_ms == 0)
        e->drop_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
}

void ss_etcd__blob_dropped(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    if (op->call.rc == SS_OK)
        return;
    if (ss_etcd__refused(&op->call) && !(op->call.rc == SS_E_SERVER && op->call.status == SS_ETCD_UNAUTHENTICATED)) {
        ss_etcd__log(e, SS_LOG_WARNING, "etcd refused to delete the chunks c/%s/ of a value that was "
                     "not stored (%s): they are left behind (see CLUSTER.md)", op->blob, ss_etcd__why(&op->call));
        return;
    }
    ss_etcd__drop_later(e, op->blob, 0); /* the cluster did not answer: again, until it does */
}

/* At the stop, the chunks of the large values of flight f that anything
 * was sent for (an upload lease taken): what they become is not seen
 * through, so they are named, as the deletions left are. */
static void ss_etcd__flight_chunks_left(struct ss_backend_etcd *e, const struct ss_etcd_flight *f)
{
    if (f->state == SS_COMMIT_IDLE || (f->state == SS_COMMIT_DONE && f->rc == SS_OK))
        return; /* nothing under way, or stored: the chunks are the value */
    /* Its Txn went out (under way, being settled, or settled as unknown):
     * the value may be stored, and the Txn may even be applied later, for
     * as long as its guard lives. Otherwise it was not stored (still
     * uploading, or failed and not yet cleared away). */
    bool perhaps = f->state == SS_COMMIT_TXN || f->state == SS_COMMIT_RESOLVING ||
                   (f->state == SS_COMMIT_DONE && f->unknown);
    for (size_t i = 0; i < f->b.ntouched; i++) {
        const struct ss_etcd_entry *x = f->b.touched[i];
        if (x->change != SS_CHANGE_PUT || x->next_blob[0] == '\0' || x->upload_lease == 0)
            continue;
        if (perhaps)
            ss_etcd__log(e, SS_LOG_WARNING, "stopped while the commit of a value in chunks c/%s/ was under way: "
                         "unless it was stored, they are left behind (see CLUSTER.md)", x->next_blob);
        else
            ss_etcd__log(e, SS_LOG_WARNING, "stopped before the chunks c/%s/ of a value that was not "
                         "stored were deleted: they are left behind (see CLUSTER.md)", x->next_blob);
    }
}

void ss_etcd__drops_left(struct ss_backend_etcd *e)
{
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        ss_etcd__flight_chunks_left(e, &e->flights[i]);
    for (const struct ss_etcd_op *op = e->ops; op; op = op->next)
        if ((op->kind == SS_OP_BLOB_REVOKE || op->kind == SS_OP_BLOB_DROP) && op->blob[0] != '\0')
            ss_etcd__log(e, SS_LOG_WARNING, "stopped before the chunks c/%s/ of a value that was not "
                         "stored were deleted: they are left behind (see CLUSTER.md)", op->blob);
    for (size_t off = 0; off + sizeof(struct ss_etcd_drop) <= e->drops.len; off += sizeof(struct ss_etcd_drop)) {
        struct ss_etcd_drop d;
        memcpy(&d, e->drops.data + off, sizeof d);
        if (d.blob[0] != '\0')
            ss_etcd__log(e, SS_LOG_WARNING, "stopped before the chunks c/%.*s/ of a value that was not "
                         "stored were deleted: they are left behind (see CLUSTER.md)",
                         (int)sizeof d.blob, d.blob);
    }
}

void ss_etcd__drop_step(struct ss_backend_etcd *e)
{
    if (e->drops.len == 0 || ss_etcd__mono_ms() < e->drop_retry_ms)
        return;
    ss_buf drops = e->drops;
    e->drops = (ss_buf)SS_BUF_INIT;
    e->drop_retry_ms = 0;
    for (size_t off = 0; off + sizeof(struct ss_etcd_drop) <= drops.len; off += sizeof(struct ss_etcd_drop)) {
        struct ss_etcd_drop d;
        memcpy(&d, drops.data + off, sizeof d);
        char blob[SS_ETCD_BLOB_ID_LEN + 1];
        memcpy(blob, d.blob, sizeof d.blob);
        blob[SS_ETCD_BLOB_ID_LEN] = '\0';
        ss_etcd__blob_release(e, blob, d.lease);
    }
    ss_buf_free(&drops);
}
