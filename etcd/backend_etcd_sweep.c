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

/* ---- learning ---------------------------------------------------------- */

void ss_etcd__deadline_learn(struct ss_backend_etcd *e, ss_bytes key, int64_t rev, uint64_t deadline, bool own)
{
    uint64_t at = own || deadline == 0 ? deadline : deadline + e->sweep_interval_ms;
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
        ss_etcd__deadline_learn(e, key, rev, rec.expiry_ms, ss_etcd__own_version(e, &rec.version));
    else
        ss_etcd__deadline_learn(e, key, rev, 0, false); /* not a record: no deadline */
}

bool ss_etcd__own_version(const struct ss_backend_etcd *e, const ss_hlc *v)
{
    size_t own = strlen(e->node_id);
    return v->node_len == own && memcmp(v->node, e->node_id, own) == 0;
}

/* ---- reading every record ------------------------------------------------ */

/* etcd counts every key of a Range's interval, past its limit
 * (backend_etcd_span.h): a page read up to the last record would cost as
 * much as the rest of the store, and the whole read n^2 / (2 x page) key
 * visits (220,000 records: over 500 million, minutes of etcd's CPU at
 * every start and every etcd_sweep_full_ms). So each page after the
 * first is read over an interval expected to hold a little more than a
 * page, learnt from the page before, as SCAN's pages are. */

/* a < b, as etcd orders keys. */
static bool ss_etcd__key_before(ss_bytes a, ss_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    return c < 0 || (c == 0 && a.len < b.len);
}

static int ss_etcd__pack_deadline_page(struct ss_backend_etcd *e, ss_buf *out)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__records_end(e, &e->scratch2);
    if (rc != SS_OK)
        return rc;
    const ss_buf *from = e->deadlines_after.len ? &e->deadlines_after : NULL;
    if (from == NULL && (rc = ss_etcd__key(e, &e->scratch, 'k', none)) != SS_OK)
        return rc;
    ss_bytes start = ss_etcd__bytes(from ? from : &e->scratch), end = ss_etcd__bytes(&e->scratch2);
    /* Bounded by the span when that ends before the last record. */
    bool nomem = false;
    if (ss_etcd_span_end(start, e->deadlines_span, &e->deadlines_end, &nomem) &&
        ss_etcd__key_before(ss_etcd__bytes(&e->deadlines_end), end))
        end = ss_etcd__bytes(&e->deadlines_end);
    else if (nomem)
        return SS_E_NOMEM;
    else
        ss_buf_clear(&e->deadlines_end);
    size_t page = SS_ETCD_DEADLINE_PAGE_BYTES / e->max_request_bytes;
    page = page < 1 ? 1 : page > SS_ETCD_DEADLINE_PAGE ? SS_ETCD_DEADLINE_PAGE : page;
    e->deadlines_limit = page;
    return ss_etcd_range_all_pack(out, start, end, (int64_t)page);
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
        /* The first page: to the end, as nothing tells the keys' density. */
        ss_buf_clear(&e->deadlines_after);
        e->deadlines_span = (ss_etcd_span){0, 0};
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

/* Where the page after this one starts (deadlines_after), and its span:
 * right after the last key when the page was full (more keys in its
 * interval), at its bound when it ended there. False when this was the
 * last page; SS_E_NOMEM leaves deadlines_after empty. */
static bool ss_etcd__deadlines_next(struct ss_backend_etcd *e, ss_bytes first, ss_bytes last, size_t n, bool full)
{
    static const uint8_t zero = 0;
    if (full) {
        /* From where this page started; one key alone tells nothing. */
        bool after = e->deadlines_after.len > 0;
        ss_bytes from = after ? ss_etcd__bytes(&e->deadlines_after) : first;
        e->deadlines_span = after || n > 1 ? ss_etcd_span_of_page(from, last) : (ss_etcd_span){0, 0};
        ss_buf_clear(&e->deadlines_after);
        if (ss_buf_append(&e->deadlines_after, last.data, last.len) != SS_OK ||
            ss_buf_append(&e->deadlines_after, &zero, 1) != SS_OK)
            ss_buf_clear(&e->deadlines_after);
        return true;
    }
    if (e->deadlines_end.len == 0)
        return false; /* read to the last record */
    e->deadlines_span = ss_etcd_span_after_bound(e->deadlines_span, n, e->deadlines_limit);
    ss_buf_clear(&e->deadlines_after);
    if (ss_buf_append(&e->deadlines_after, e->deadlines_end.data, e->deadlines_end.len) != SS_OK)
        ss_buf_clear(&e->deadlines_after);
    return true;
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
    } else if (ss_etcd__deadlines_next(e, first, last, n, full)) {
        if (e->deadlines_after.len == 0) {
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
