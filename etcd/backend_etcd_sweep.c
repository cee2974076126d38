/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_sweep.c - the expiry index: looking for due keys and
 * deleting them, in deadline order, each with a compare on its revision. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_sweep.h"

/* ---- looking ---------------------------------------------------------- */

void ss_etcd__ask_due(struct ss_backend_etcd *e, uint64_t now_ms)
{
    if (e->sweep_asked || e->due_pos < e->due_len || (now_ms < e->sweep_at_ms && now_ms < e->due_hint_ms))
        return;
    if (e->due_hint_ms <= now_ms)
        e->due_hint_ms = UINT64_MAX; /* this look covers it */
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_SWEEP, SS_ETCD_RANGE_METHOD);
    ss_bytes none = {NULL, 0};
    bool full = e->sweep_from_ms == 0 || now_ms >= e->sweep_full_at_ms;
    int rc = op ? ss_etcd__key(e, &e->scratch, 'x', full ? 0 : e->sweep_from_ms, none) : SS_E_NOMEM;
    if (rc == SS_OK) {
        if (full)
            e->scratch.len -= 17; /* "x/" alone: the 0 deadline goes */
        rc = ss_etcd__key(e, &e->scratch2, 'x', now_ms + 1, none);
    }
    /* Serializable: a member that lags only finds keys late; each key is
     * read linearizably before it is deleted. */
    if (rc == SS_OK)
        rc = ss_etcd_range_keys_pack(&op->call.request, ss_etcd__bytes(&e->scratch),
                                     ss_etcd__bytes(&e->scratch2), SS_ETCD_SWEEP_BATCH, true);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return;
    }
    e->sweep_asked = true;
    e->sweep_full = full;
    e->sweep_asked_ms = now_ms;
    ss_etcd__submit(e, op);
}

void ss_etcd__due_found(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->sweep_asked = false;
    e->sweep_at_ms = e->now_ms + e->sweep_interval_ms;
    ss_etcd_reply r;
    size_t n;
    if (op->call.rc != SS_OK || ss_etcd_range_unpack_all(&op->call.reply, &r, &n) != SS_OK)
        return;
    e->stats.sweep_looks++;
    if (e->sweep_full) {
        e->stats.sweep_full_looks++;
        e->sweep_full_at_ms = e->sweep_asked_ms + e->sweep_full_ms;
    }
    /* The next look: from a little before this one, or from the first
     * key it found (it may not be deleted yet: a conflict, a full batch). */
    uint64_t from = e->sweep_asked_ms > SS_ETCD_SWEEP_BACK_MS ? e->sweep_asked_ms - SS_ETCD_SWEEP_BACK_MS : 1;
    size_t plen = strlen(e->prefix) + 2;
    e->due_len = e->due_pos = 0;
    for (size_t i = 0; i < n && e->due_len < SS_ETCD_SWEEP_BATCH; i++) {
        ss_etcd_kv kv;
        ss_bytes k;
        ss_etcd_range_kv(&r, i, &kv, &k);
        if (k.len < plen + 17 || k.data[plen + 16] != '/')
            continue;
        char hex[17];
        memcpy(hex, k.data + plen, 16);
        hex[16] = '\0';
        char *end;
        uint64_t deadline = strtoull(hex, &end, 16);
        if (*end != '\0')
            continue;
        struct ss_etcd_due *d = &e->due[e->due_len];
        ss_buf_clear(&d->key);
        if (ss_buf_append(&d->key, k.data + plen + 17, k.len - plen - 17) != SS_OK)
            break;
        d->deadline = deadline;
        if (deadline < from)
            from = deadline ? deadline : 1;
        e->due_len++;
    }
    e->sweep_from_ms = from;
    if (n == SS_ETCD_SWEEP_BATCH)
        e->sweep_at_ms = 0; /* more are due: look again once these are done */
    ss_etcd_reply_free(&r);
}

/* ---- deleting --------------------------------------------------------- */

uint64_t ss_etcd__next_expiry(void *impl)
{
    struct ss_backend_etcd *e = impl;
    return e->due_pos < e->due_len ? e->due[e->due_pos].deadline : UINT64_MAX;
}

/* An index entry that no longer matches its record: deleted with the
 * batch (the record's compare keeps that true). */
static void ss_etcd__orphan(struct ss_backend_etcd *e, uint64_t deadline, ss_bytes key)
{
    if (e->open.ops + 1 > e->max_txn_ops || ss_etcd__key(e, &e->scratch, 'x', deadline, key) != SS_OK ||
        e->open.bytes + e->scratch.len + 64 + SS_ETCD_REQUEST_SLACK > e->max_request_bytes)
        return; /* found again by a later look */
    uint32_t n = (uint32_t)e->scratch.len;
    if (ss_buf_append(&e->open.orphans, &n, sizeof n) != SS_OK ||
        ss_buf_append(&e->open.orphans, e->scratch.data, n) != SS_OK)
        return;
    e->open.norphans++;
    e->open.ops++;
    e->open.bytes += n + 64;
}

int ss_etcd__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    struct ss_backend_etcd *e = impl;
    while (e->due_pos < e->due_len) {
        struct ss_etcd_due *d = &e->due[e->due_pos];
        if (d->deadline > now_ms)
            return SS_E_NOTFOUND;
        ss_record rec;
        ss_revision rev;
        struct ss_etcd_entry *x = NULL;
        ss_bytes k = ss_etcd__bytes(&d->key);
        int rc = ss_etcd__get(e, k, &rec, &rev, &x);
        if (rc == SS_E_PENDING)
            return SS_E_NOTFOUND; /* fetching it, or the batch is full */
        e->due_pos++;
        if (rc != SS_OK && rc != SS_E_NOTFOUND)
            continue; /* found again by a later look */
        if (rc == SS_E_NOTFOUND && x && x->rev && x->change == SS_CHANGE_NONE && x->stored_expiry == d->deadline) {
            /* A tombstone whose time is up: it goes, and no one is told. */
            if (ss_etcd__purge(e, x) != SS_OK) {
                e->due_pos--; /* the batch is full: later */
                return SS_E_NOTFOUND;
            }
            continue;
        }
        if (rc == SS_E_NOTFOUND || rec.expiry_ms != d->deadline) {
            /* Renewed or deleted since: the index entry is stale, unless
             * the key's record or tombstone has it, or this batch's own
             * change of the key writes or deletes it. */
            bool own = (x->rev && x->stored_expiry == d->deadline) ||
                       (x->change != SS_CHANGE_NONE && x->next_expiry == d->deadline);
            if (!own)
                ss_etcd__orphan(e, d->deadline, k);
            continue;
        }
        ss_change gone = {.type = SS_CHANGE_DELETE, .key = k, .version = rec.version, .expired = true};
        if ((rc = ss_etcd__del(e, &gone, rev)) == SS_E_PENDING || rc == SS_E_CONFLICT) {
            e->due_pos--; /* the usage counter is being read, or the batch is full: later */
            return SS_E_NOTFOUND;
        }
        if (rc != SS_OK)
            return rc;
        ss_buf_clear(key);
        if ((rc = ss_buf_append(key, k.data, k.len)) != SS_OK)
            return rc;
        *version = rec.version;
        return SS_OK;
    }
    return SS_E_NOTFOUND;
}

