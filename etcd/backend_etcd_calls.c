/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_calls.c - the backend's calls to etcd: starting them, how
 * their failures read, and the poll that takes their results and hands
 * each to the part of the backend that made it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_quota.h"
#include "backend_etcd_scan.h"
#include "backend_etcd_session.h"
#include "backend_etcd_sweep.h"
#include "backend_etcd_tombstone.h"
#include "backend_etcd_upload.h"
#include "backend_etcd_watch.h"
#include "backend_etcd_probe.h"

/* ---- calls ------------------------------------------------------------- */

struct ss_etcd_op *ss_etcd__op_new(struct ss_backend_etcd *e, enum ss_op_kind kind,
                                          const char *method)
{
    struct ss_etcd_op *op = calloc(1, sizeof *op);
    if (op == NULL)
        return NULL;
    op->kind = kind;
    op->call.method = method;
    op->call.timeout_ms = e->call_timeout_ms;
    op->call.user = op;
    return op;
}

void ss_etcd__op_free(struct ss_etcd_op *op)
{
    ss_grpc_call_clear(&op->call);
    free(op);
}

void ss_etcd__submit(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    op->prev = NULL;
    op->next = e->ops;
    if (e->ops)
        e->ops->prev = op;
    e->ops = op;
    ss_grpc_submit(e->grpc, &op->call);
}

void ss_etcd__unlink_op(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    if (op->prev)
        op->prev->next = op->next;
    else
        e->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
}

/* Failures that prove etcd did not apply a request (it refused it before
 * it went to the log); any other failure leaves a write's fate unknown. */
bool ss_etcd__refused(const ss_grpc_call *c)
{
    if (c->rc != SS_E_SERVER)
        return false;
    switch (c->status) {
    case 8: /* RESOURCE_EXHAUSTED: the database is full (quota), or, for a
             * while, "too many requests" (a member applying far behind
             * what it committed): that one passes, like a timeout. A
             * write answered "space exceeded" may have been applied all
             * the same (the one that crossed the quota): a commit settles
             * that first (ss_etcd__txn_done). */
        return strstr(c->message, "too many requests") == NULL;
    case 3:  /* INVALID_ARGUMENT: too many operations, too large, duplicate key */
    case 7:  /* PERMISSION_DENIED */
    case 9:  /* FAILED_PRECONDITION */
    case 11: /* OUT_OF_RANGE */
        return true;
    default:
        return false;
    }
}

/* How long a broker that met etcd's NOSPACE alarm puts nothing before it
 * tries a put again (the alarm stays until an operator disarms it). */
#define SS_ETCD_NOSPACE_RETRY_MS 5000u

bool ss_etcd__out_of_space(struct ss_backend_etcd *e, const ss_grpc_call *c)
{
    if (c->rc != SS_E_SERVER || c->status != 8 || strstr(c->message, "space exceeded") == NULL)
        return false;
    if (!e->nospace_said)
        ss_etcd__log(e, SS_LOG_ERR, "etcd is out of space (%s: its NOSPACE alarm is raised): "
                     "writes that store anything are answered 'quota exceeded'; reads, deletions and "
                     "expiries go on, deletions without tombstones. Free space in etcd (compact, "
                     "defrag, then etcdctl alarm disarm)", ss_etcd__why(c));
    e->nospace = e->nospace_said = e->stats.nospace = true;
    e->nospace_retry_ms = ss_etcd__mono_ms() + SS_ETCD_NOSPACE_RETRY_MS;
    return true;
}

const char *ss_etcd__why(const ss_grpc_call *c)
{
    return c->message[0] ? c->message : ss_strerror(c->rc);
}

void ss_etcd__send(struct ss_backend_etcd *e, enum ss_op_kind kind, const char *method,
                   int (*pack)(struct ss_backend_etcd *, ss_buf *))
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, kind, method);
    if (op == NULL || pack(e, &op->call.request) != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return;
    }
    ss_etcd__submit(e, op);
}

void ss_backend_etcd_poll(ss_backend *b, uint64_t now_ms)
{
    struct ss_backend_etcd *e = b->impl;
    e->now_ms = now_ms;
    if (e->nospace && ss_etcd__mono_ms() >= e->nospace_retry_ms)
        e->nospace = false; /* try a put again: refused, it comes back */
    ss_etcd__watch_read(e);
    ss_grpc_call *list = ss_grpc_collect(e->grpc);
    while (list) {
        ss_grpc_call *c = list;
        list = c->next;
        struct ss_etcd_op *op = c->user;
        ss_etcd__unlink_op(e, op);
        if (c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED)
            e->auth_needed = true; /* the token expired, or none yet */
        switch (op->kind) {
        case SS_OP_FETCH:
            ss_etcd__fetched(e, op);
            break;
        case SS_OP_TXN:
            ss_etcd__txn_done(e, op);
            break;
        case SS_OP_FENCE:
            ss_etcd__fence_done(e, op);
            break;
        case SS_OP_MARKER:
            ss_etcd__marker_read(e, op);
            break;
        case SS_OP_SETTLE_READ:
            ss_etcd__settle_read_done(e, op);
            break;
        case SS_OP_DEADLINES:
            ss_etcd__deadlines_page(e, op);
            break;
        case SS_OP_TLEASE:
            ss_etcd__tombstone_lease_granted(e, op);
            break;
        case SS_OP_GRANT:
        case SS_OP_CLAIM:
        case SS_OP_KEEPALIVE:
        case SS_OP_REVOKE:
            ss_etcd__claim_done(e, op);
            break;
        case SS_OP_AUTH:
            ss_etcd__auth_done(e, op);
            break;
        case SS_OP_USAGE:
        case SS_OP_USAGE_SCAN:
        case SS_OP_USAGE_INIT:
            ss_etcd__usage_done(e, op);
            break;
        case SS_OP_SCAN:
            ss_etcd__scan_read(e, op);
            break;
        case SS_OP_WATCH:
            ss_etcd__watch_ended(e, op);
            break;
        case SS_OP_REMOVED:
            ss_etcd__removed_read(e, op);
            break;
        case SS_OP_UPLOAD:
            ss_etcd__upload_done(e, op);
            break;
        case SS_OP_UPLOAD_LEASE:
            ss_etcd__upload_lease_granted(e, op);
            break;
        case SS_OP_BLOB_REVOKE:
            ss_etcd__blob_revoked(e, op);
            break;
        case SS_OP_BLOB_DROP:
            ss_etcd__blob_dropped(e, op);
            break;
        case SS_OP_BLOB_FETCH:
            ss_etcd__blob_fetched(e, op);
            break;
        case SS_OP_BLOB_HELD:
            ss_etcd__held_blob_read(e, op);
            break;
        case SS_OP_BLOB_SCAN:
            ss_etcd__scan_blob_read(e, op);
            break;
        case SS_OP_PAGE:
            ss_etcd__page_read(e, op);
            break;
        case SS_OP_TOKEN_KEY:
            ss_etcd__token_key_read(e, op);
            break;
        }
        ss_etcd__op_free(op);
    }
    uint64_t mono = ss_etcd__mono_ms();
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++) {
        struct ss_etcd_flight *f = &e->flights[i];
        if (f->state == SS_COMMIT_RESOLVING && f->resolve_at_ms && mono >= f->resolve_at_ms) {
            if (f->settle_by_read)
                ss_etcd__send_settle_read(e, f);
            else
                ss_etcd__send_fence(e, f);
        }
        if (f->state == SS_COMMIT_UPLOADING && f->upload_retry_ms && mono >= f->upload_retry_ms)
            ss_etcd__upload_next(e, f);
    }
    ss_etcd__drop_step(e);
    ss_etcd__auth_step(e);
    /* The first slot's marker is read at start; the others' when first
     * used. */
    struct ss_etcd_flight *first = &e->flights[0];
    ss_etcd__ask_marker(e, first);
    ss_etcd__claim_step(e);
    ss_etcd__tombstone_lease_step(e);
    if (first->marker_known)
        ss_etcd__usage_step(e);
    ss_etcd__watch_step(e);
    ss_etcd__deadlines_step(e);
    ss_etcd__token_key_step(e);
    ss_etcd__probe_step(e);
}

