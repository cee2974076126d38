/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_sweep.c - expiry: the deadlines this broker knows
 * (deadlines.h), how it learns them, and the deletion of due keys, each
 * with a compare on its revision.
 *
 * A broker learns a deadline three ways:
 * - from its own commits, at once: it sweeps the key at the deadline;
 * - from the watch, for every record any broker writes: it sweeps the key
 *   sweep_interval_ms after the deadline, so that the writer, if alive,
 *   comes first and the brokers seldom race each other for a key (a race
 *   costs the loser's batch a conflict), unless the record's version is
 *   of its own node id (written before it restarted);
 * - from a read of every record (a Range over k/ in pages), when it
 *   starts, when its watch lost history to compaction, and every
 *   sweep_full_ms: for the records written before its watch began.
 * The watch starts at the broker's claim, and the read after the watch
 * started, so every record is seen by one or the other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_sweep.h"
#include "backend_etcd_tombstone.h"

/* ---- learning ---------------------------------------------------------- */

void ss_etcd__deadline_learn(struct ss_backend_etcd *e, ss_bytes key, int64_t rev, uint64_t deadline, bool own)
{
    uint64_t at = own || deadline == 0 ? deadline : deadline + e->sweep_interval_ms;
    if (at < deadline) /* saturated, not wrapped to "due now" */
        at = UINT64_MAX;
    if (ss_etcd_deadlines_learn(&e->deadlines, key, rev, deadline, at) != SS_OK) {
        /* Out of memory: the key is found by the next read of every
         * record, which comes soon. */
        e->stats.deadlines_missed++;
        ss_etcd__deadlines_reread(e);
    }
}

void ss_etcd__deadlines_reread(struct ss_backend_etcd *e)
{
    e->deadlines_read_needed = true;
    e->deadlines_restart = true; /* a read under way goes on from the start */
}

void ss_etcd__deadline_learn_raw(struct ss_backend_etcd *e, ss_bytes key, int64_t rev, ss_bytes raw)
{
    ss_record rec;
    ss_bytes tail;
    if (ss_record_decode(raw.data, raw.len, &rec, &tail) == SS_OK)
        ss_etcd__deadline_learn(e, key, rev, rec.expiry_ms,
                                !ss_etcd__tombstone(raw) && ss_etcd__own_version(e, &rec.version));
    else
        ss_etcd__deadline_learn(e, key, rev, 0, false); /* not a record: no deadline */
}

bool ss_etcd__own_version(const struct ss_backend_etcd *e, const ss_hlc *v)
{
    size_t own = strlen(e->node_id);
    return v->node_len == own && memcmp(v->node, e->node_id, own) == 0;
}

/* ---- reading every record ------------------------------------------------ */

/* In pages (backend_etcd_walk.h), each at the latest revision: what
 * changes during the read, the watch reports. */
static int ss_etcd__pack_deadline_page(struct ss_backend_etcd *e, ss_buf *out)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__records_end(e, &e->scratch2);
    if (rc == SS_OK)
        rc = ss_etcd__key(e, &e->scratch, 'k', none);
    if (rc != SS_OK)
        return rc;
    return ss_etcd_walk_pack(&e->deadlines_walk, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(&e->scratch2),
                             e->max_request_bytes, 0, out);
}

void ss_etcd__deadlines_step(struct ss_backend_etcd *e)
{
    uint64_t mono = ss_etcd__mono_ms();
    if (e->sweep_full_ms && e->deadlines_read_done_ms && !e->deadlines_read_needed &&
        mono >= e->deadlines_read_done_ms + e->sweep_full_ms)
        ss_etcd__deadlines_reread(e);
    /* Only once the watch has a start: what the read misses, it reports. */
    if (!e->deadlines_read_needed || e->deadlines_read_asked || e->watch_from == 0 ||
        mono < e->deadlines_retry_ms)
        return;
    if (e->deadlines_restart) {
        ss_etcd_walk_restart(&e->deadlines_walk);
        e->deadlines_restart = false;
    }
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_DEADLINES, SS_ETCD_RANGE_METHOD);
    if (op == NULL || ss_etcd__pack_deadline_page(e, &op->call.request) != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        e->deadlines_retry_ms = mono + SS_ETCD_RETRY_MS;
        return;
    }
    e->deadlines_read_asked = true;
    ss_etcd__submit(e, op);
}

void ss_etcd__deadlines_page(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->deadlines_read_asked = false;
    ss_etcd_reply r;
    size_t n;
    if (op->call.rc != SS_OK || ss_etcd_range_unpack_all(&op->call.reply, &r, &n) != SS_OK) {
        e->deadlines_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    e->stats.deadline_ranges++;
    e->stats.deadline_keys_counted += r.count > 0 ? (uint64_t)r.count : 0;
    size_t plen = e->prefix_len + 2;
    ss_bytes first = {NULL, 0}, last = {NULL, 0};
    for (size_t i = 0; i < n; i++) {
        ss_etcd_kv kv;
        ss_bytes k;
        ss_etcd_range_kv(&r, i, &kv, &k);
        if (i == 0)
            first = k;
        last = k;
        if (k.len < plen)
            continue;
        ss_bytes key = {k.data + plen, k.len - plen};
        ss_etcd__deadline_learn_raw(e, key, kv.mod_revision, kv.value);
    }
    bool full = r.count > (int64_t)n && n > 0;
    if (e->deadlines_restart) {
        /* Asked for again meanwhile: from the start (the next step). */
    } else if (ss_etcd_walk_next(&e->deadlines_walk, first, last, n, full)) {
        if (ss_etcd_walk_lost(&e->deadlines_walk)) {
            ss_etcd__deadlines_reread(e); /* out of memory: from the start again, later */
            e->deadlines_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        }
    } else {
        e->deadlines_read_needed = false;
        e->deadlines_read_done_ms = ss_etcd__mono_ms();
        e->stats.deadline_reads++;
    }
    ss_etcd_reply_free(&r);
}

/* ---- deleting --------------------------------------------------------- */

uint64_t ss_etcd__next_expiry(void *impl)
{
    struct ss_backend_etcd *e = impl;
    const ss_etcd_deadline *d = ss_etcd_deadlines_first(&e->deadlines);
    return d ? d->at : UINT64_MAX;
}

int ss_etcd__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    struct ss_backend_etcd *e = impl;
    ss_etcd_deadline *d;
    uint64_t again = now_ms + e->sweep_interval_ms;
    while ((d = ss_etcd_deadlines_first(&e->deadlines)) != NULL && d->at <= now_ms) {
        ss_record rec;
        ss_revision rev;
        struct ss_etcd_entry *x = NULL;
        ss_bytes k = {d->key, d->key_len};
        int rc = ss_etcd__get(e, k, &rec, &rev, &x);
        if (rc == SS_E_PENDING)
            return SS_E_NOTFOUND; /* fetching it, or the batch is full */
        if (rc != SS_OK && rc != SS_E_NOTFOUND) {
            ss_etcd_deadlines_defer(&e->deadlines, d, again);
            continue;
        }
        if (x->change != SS_CHANGE_NONE) {
            /* The batch changes the key: its commit says what follows
             * (or, failed, the key is looked at again). */
            ss_etcd_deadlines_defer(&e->deadlines, d, again);
            continue;
        }
        /* The deadline etcd holds for the key, as read: the record's, a
         * tombstone's end (0 if its lease removes it), or none. */
        uint64_t held = x->rev ? x->stored_expiry : 0;
        if (held != d->deadline) {
            /* Renewed or deleted since (what was read is as of a later
             * revision than what was learnt: it stands; k points into d,
             * which this may free), or the copy read is older (its
             * batch's compare fails, and the key is read again). */
            if (x->seen_rev >= d->rev)
                ss_etcd__deadline_learn(e, k, x->seen_rev, held, false);
            else
                ss_etcd_deadlines_defer(&e->deadlines, d, again);
            continue;
        }
        if (rc == SS_E_NOTFOUND) {
            /* A tombstone whose time is up: it goes, and no one is told. */
            if (ss_etcd__purge(e, x) != SS_OK)
                return SS_E_NOTFOUND; /* the batch is full: later */
            ss_etcd_deadlines_defer(&e->deadlines, d, again);
            continue;
        }
        ss_change gone = {.type = SS_CHANGE_DELETE, .key = k, .version = rec.version, .expired = true};
        if ((rc = ss_etcd__del(e, &gone, rev)) == SS_E_PENDING || rc == SS_E_CONFLICT)
            return SS_E_NOTFOUND; /* the usage counter is being read, or the batch is full: later */
        if (rc != SS_OK)
            return rc;
        ss_buf_clear(key);
        if ((rc = ss_buf_append(key, k.data, k.len)) != SS_OK)
            return rc;
        *version = rec.version;
        /* Its commit tells the rest (or, failed, it is tried again). */
        ss_etcd_deadlines_defer(&e->deadlines, d, again);
        return SS_OK;
    }
    return SS_E_NOTFOUND;
}
