/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_scan.c - pages of records in key order, for the
 * administrative requests (backend_etcd.h) and for SCAN (the storage
 * interface's scan). A page is one linearizable Range of k/, read on the
 * channel's thread while the broker goes on. The two have a page each,
 * so that neither waits for the other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "../core/scan.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_scan.h"
#include "backend_etcd_span.h"
#include "backend_etcd_tombstone.h"

static int ss_etcd__range_to(struct ss_backend_etcd *e, struct ss_etcd_op *op, ss_bytes from, bool inclusive,
                             const ss_bytes *to, const ss_bytes *below, size_t limit);

/* The span of the next page when this one ends at record i (it started
 * after `key`, empty: from record 0): what held its records up to i, a
 * quarter wider. The next page likely walks as far as this one did,
 * whether its limit or its answer's size ended it. */
static ss_etcd_span ss_etcd__span_upto(const ss_etcd_reply *r, size_t i, ss_bytes key, size_t plen)
{
    ss_etcd_span none = {0, 0};
    if (!key.len && i == 0)
        return none; /* one key: nothing to tell the density by */
    ss_etcd_kv kv;
    ss_bytes first = key, last;
    if (!key.len) {
        ss_etcd_range_kv(r, 0, &kv, &first);
        first.data += plen < first.len ? plen : first.len;
        first.len -= plen < first.len ? plen : first.len;
    }
    ss_etcd_range_kv(r, i, &kv, &last);
    last.data += plen < last.len ? plen : last.len;
    last.len -= plen < last.len ? plen : last.len;
    return ss_etcd_span_of_page(first, last);
}

/* Cursors on etcd (SCAN's and the administrative pages'): the key a page
 * starts after, then the span its Range may reach (backend_etcd_span.h)
 * and a last byte 0xff that says so; empty: from the first key. A cursor
 * without that byte is a key alone, as cursors were before spans: read
 * to the end (a key that ends in 0xff and is 13 bytes or more would be
 * taken for a cursor with a span, at worst listing some keys again). */
#define SS_ETCD_CURSOR_MARK 0xff
#define SS_ETCD_CURSOR_TAIL (SS_ETCD_SPAN_BYTES + 1)
_Static_assert(SS_ETCD_CURSOR_TAIL <= SS_SCAN_CURSOR_EXTRA, "a cursor must fit what SCAN's pages allow for");

static bool ss_etcd__cursor_has_span(ss_bytes cursor)
{
    return cursor.len >= SS_ETCD_CURSOR_TAIL && cursor.data[cursor.len - 1] == SS_ETCD_CURSOR_MARK;
}

static ss_bytes ss_etcd__cursor_key(ss_bytes cursor)
{
    ss_bytes key = {cursor.data, cursor.len - (ss_etcd__cursor_has_span(cursor) ? SS_ETCD_CURSOR_TAIL : 0)};
    return key;
}

static int ss_etcd__cursor_put(ss_buf *out, ss_bytes key, ss_etcd_span s)
{
    uint8_t tail[SS_ETCD_CURSOR_TAIL];
    ss_etcd_span_put(s, tail);
    tail[SS_ETCD_SPAN_BYTES] = SS_ETCD_CURSOR_MARK;
    ss_buf_clear(out);
    int rc = ss_buf_append(out, key.data, key.len);
    return rc == SS_OK ? ss_buf_append(out, tail, sizeof tail) : rc;
}

/* The span a cursor carries: none for the first page, a key alone, or a
 * span no key can have. */
static ss_etcd_span ss_etcd__cursor_span(ss_bytes cursor)
{
    ss_etcd_span s = {0, 0};
    if (ss_etcd__cursor_has_span(cursor))
        s = ss_etcd_span_get(cursor.data + cursor.len - SS_ETCD_CURSOR_TAIL);
    if (s.at > SS_STORE_KEY_MAX)
        s.delta = 0;
    return s;
}

/* The most bytes a page's Range should bring back, and what a record is
 * taken to weigh before any page was read. */
#define SS_ETCD_PAGE_BYTES ((size_t)64 << 20)
#define SS_ETCD_RECORD_BYTES_FIRST 1024u

/* How many of want records a page's Range reads, for its reply to stay
 * within SS_ETCD_PAGE_BYTES as records weigh lately (one at least). */
static size_t ss_etcd__records_for(const struct ss_backend_etcd *e, size_t want)
{
    size_t per = e->record_bytes ? e->record_bytes : SS_ETCD_RECORD_BYTES_FIRST;
    size_t fit = SS_ETCD_PAGE_BYTES / per;
    if (fit == 0)
        fit = 1;
    return want < fit ? want : fit;
}

/* A Range of n records replied reply_len bytes: what a record weighs, up
 * at once, down by halves (a page of large records is not forgotten at
 * the next page of small ones). */
static void ss_etcd__records_seen(struct ss_backend_etcd *e, size_t reply_len, size_t n)
{
    if (n == 0)
        return;
    size_t avg = reply_len / n < 64 ? 64 : reply_len / n;
    size_t was = e->record_bytes ? e->record_bytes : SS_ETCD_RECORD_BYTES_FIRST;
    e->record_bytes = avg > was ? avg : (was + avg) / 2;
}

/* A Range of a page failed (its reply too large, say): records are taken
 * to be as large as they can be until pages say otherwise. */
static void ss_etcd__records_worst(struct ss_backend_etcd *e)
{
    e->record_bytes = e->max_request_bytes ? e->max_request_bytes : ((size_t)3 << 19);
}

/* Read the administrative page from scan_after over scan_span. */
static int ss_etcd__scan_send(struct ss_backend_etcd *e)
{
    ss_bytes key = ss_etcd__bytes(&e->scan_after);
    bool nomem = false;
    if (!ss_etcd_span_end(key, e->scan_span, &e->scan_end, &nomem) && nomem)
        return SS_E_NOMEM;
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_SCAN, SS_ETCD_RANGE_METHOD);
    if (op == NULL)
        return SS_E_NOMEM;
    ss_bytes end = ss_etcd__bytes(&e->scan_end);
    bool one = e->scan_inclusive && e->scan_limit == 1;
    int rc = ss_etcd__range_to(e, op, key, e->scan_inclusive, one ? &key : end.len ? &end : NULL, NULL,
                               e->scan_limit);
    if (rc != SS_OK) {
        ss_etcd__op_free(op);
        return rc;
    }
    e->scan = SS_SCAN_RUNNING;
    e->scan_fresh = true;
    ss_etcd__submit(e, op);
    return SS_OK;
}

/* A bounded Range that found too little (under a quarter of what a page
 * needs) is read again with a span 4 times as wide, up to 6 times, then
 * to the end: an empty stretch of keys costs a few cheap Ranges, and an
 * overshoot at most 4 times a page. */
#define SS_ETCD_PAGE_TRIES 6

static ss_etcd_span ss_etcd__retry_span(ss_etcd_span s, int tries)
{
    if (tries >= SS_ETCD_PAGE_TRIES) {
        s.delta = 0;
        return s;
    }
    return ss_etcd_span_scale(s, 4, 1);
}

int ss_backend_etcd_scan_start(ss_backend *b, ss_bytes from, bool inclusive, size_t limit, bool values)
{
    struct ss_backend_etcd *e = b->impl;
    if (e->scan != SS_SCAN_IDLE)
        return SS_E_BUSY;
    /* From a key itself: INSPECT's page of one, that key alone (a Range
     * to the end would count every key after it). After a cursor: a
     * bounded Range, as SCAN's pages. */
    ss_bytes key = from;
    e->scan_span.at = 0;
    e->scan_span.delta = 0;
    if (!inclusive && from.len) {
        key = ss_etcd__cursor_key(from);
        e->scan_span = ss_etcd__cursor_span(from);
    }
    ss_buf_clear(&e->scan_after);
    if (ss_buf_append(&e->scan_after, key.data, key.len) != SS_OK)
        return SS_E_NOMEM;
    e->scan_limit = ss_etcd__records_for(e, limit); /* fewer, and a cursor, when records are large */
    e->scan_values = values;
    e->scan_inclusive = inclusive;
    e->scan_tries = 0;
    return ss_etcd__scan_send(e);
}

/* A page's Range answered: its reply moves into *into (no copy). */
static int ss_etcd__take_reply(struct ss_etcd_op *op, ss_buf *into)
{
    ss_buf spare = *into;
    *into = op->call.reply;
    op->call.reply = spare;
    ss_buf_clear(&op->call.reply);
    return op->call.rc == SS_OK ? SS_OK : SS_E_UNAVAILABLE;
}

void ss_etcd__scan_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->scan = SS_SCAN_DONE;
    e->scan_rc = ss_etcd__take_reply(op, &e->scan_reply);
    if (e->scan_rc != SS_OK)
        ss_etcd__records_worst(e); /* the next try reads fewer */
}

/* Record i of a page: its key (without the prefix's plen bytes) and
 * record; false for what is no record of ours or a deleted key's
 * tombstone (*key is still set when the name is one of ours). */
static bool ss_etcd__page_entry(const ss_etcd_reply *r, size_t i, size_t plen, ss_bytes *key, ss_record *rec,
                                ss_etcd_kv *kv)
{
    ss_bytes name, tail;
    ss_etcd_range_kv(r, i, kv, &name);
    if (name.len < plen)
        return false;
    key->data = name.data + plen;
    key->len = name.len - plen;
    return ss_record_decode(kv->value.data, kv->value.len, rec, &tail) == SS_OK && !ss_etcd__tombstone(kv->value);
}

void ss_etcd__scan_blob_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    if (e->scan != SS_SCAN_RUNNING)
        return;
    e->scan = SS_SCAN_DONE;
    ss_etcd_reply r;
    size_t n = 0;
    int rc = op->call.rc == SS_OK ? SS_OK : SS_E_UNAVAILABLE;
    if (rc == SS_OK && ss_etcd_range_unpack_all(&e->scan_reply, &r, &n) != SS_OK)
        rc = SS_E_PROTOCOL;
    if (rc != SS_OK) {
        e->scan_rc = rc;
        return;
    }
    ss_etcd_kv kv;
    ss_bytes key, tail;
    ss_record rec;
    struct ss_etcd_stub stub;
    ss_etcd_range_kv(&r, e->scan_pos, &kv, &key);
    if (ss_record_decode(kv.value.data, kv.value.len, &rec, &tail) != SS_OK || !ss_etcd__stub(kv.value, &rec, &stub))
        rc = SS_E_CORRUPT; /* cannot be: the walk found a stub there */
    if (rc == SS_OK)
        rc = ss_etcd__blob_value(&op->call.reply, &stub, &e->scan_value);
    ss_etcd_reply_free(&r);
    if (rc == SS_OK)
        e->scan_value_at = e->scan_pos + 1;
    else
        e->scan_rc = rc;
}

/* The page is walked; the next scan starts afresh. */
static void ss_etcd__scan_end(struct ss_backend_etcd *e)
{
    e->scan = SS_SCAN_IDLE;
    e->scan_pos = 0;
    e->scan_value_at = 0;
    if (e->scan_reply.cap > ((size_t)1 << 20))
        ss_buf_free(&e->scan_reply);
    if (e->scan_value.cap > ((size_t)1 << 20))
        ss_buf_free(&e->scan_value);
}

bool ss_backend_etcd_scan_done(ss_backend *b, bool (*fn)(void *ctx, ss_bytes key, const ss_record *rec),
                               void *ctx, ss_buf *next, int *rc)
{
    struct ss_backend_etcd *e = b->impl;
    if (e->scan != SS_SCAN_DONE)
        return false;
    ss_buf_clear(next);
    *rc = e->scan_rc;
    ss_etcd_reply r;
    size_t n = 0;
    if (*rc == SS_OK && ss_etcd_range_unpack_all(&e->scan_reply, &r, &n) != SS_OK)
        *rc = SS_E_PROTOCOL;
    if (*rc != SS_OK) {
        ss_etcd__scan_end(e);
        return true;
    }
    size_t plen = strlen(e->prefix) + 2;
    bool bounded = e->scan_end.len != 0;
    if (e->scan_fresh) { /* the Range's reply, looked at the first time */
        e->scan_fresh = false;
        ss_etcd__records_seen(e, e->scan_reply.len, n);
        e->page_reads++;
        e->page_counted += r.count > 0 ? (uint64_t)r.count : 0;
        /* An administrative page looks at up to ten records per key it
         * lists: too little is under a quarter of the keys it lists. */
        if (bounded && n < e->scan_limit / 40 + 1) {
            ss_etcd_reply_free(&r);
            e->scan_span = ss_etcd__retry_span(e->scan_span, ++e->scan_tries);
            if ((*rc = ss_etcd__scan_send(e)) == SS_OK)
                return false;
            ss_etcd__scan_end(e);
            return true;
        }
    }
    ss_bytes last = {NULL, 0};
    bool stopped = false;
    size_t last_i = 0;
    for (size_t i = e->scan_pos; i < n && !stopped; i++) {
        ss_etcd_kv kv;
        ss_record rec;
        last_i = i;
        if (!ss_etcd__page_entry(&r, i, plen, &last, &rec, &kv))
            continue; /* not a record of ours, or a deleted key's tombstone: skipped */
        struct ss_etcd_stub stub;
        if (ss_etcd__stub(kv.value, &rec, &stub) && !e->scan_values) {
            rec.value.data = NULL; /* its length alone */
            rec.value.len = (size_t)stub.len;
        } else if (ss_etcd__stub(kv.value, &rec, &stub)) {
            if (e->scan_value_at != i + 1) {
                /* Its value is in chunks: the walk goes on from here
                 * once they are read, as they were when the page was. */
                struct ss_etcd_op *op = ss_etcd__blob_read(e, SS_OP_BLOB_SCAN, &stub, r.revision);
                ss_etcd_reply_free(&r);
                if (op == NULL) {
                    *rc = SS_E_NOMEM;
                    ss_etcd__scan_end(e);
                    return true;
                }
                e->scan_pos = i;
                e->scan = SS_SCAN_RUNNING;
                ss_etcd__submit(e, op);
                return false;
            }
            rec.value = ss_etcd__bytes(&e->scan_value);
        }
        stopped = !fn(ctx, last, &rec);
    }
    /* More may follow when the page was full, the walk stopped early, or
     * the Range ended at its bound; a page from a key (INSPECT) has no
     * next page. */
    if (!e->scan_inclusive && (stopped || n == e->scan_limit) && last.data)
        *rc = ss_etcd__cursor_put(next, last,
                                  ss_etcd__span_upto(&r, last_i, ss_etcd__bytes(&e->scan_after), plen));
    else if (!e->scan_inclusive && bounded)
        *rc = ss_etcd__cursor_put(next, ss_etcd__bytes(&e->scan_end),
                                  ss_etcd_span_after_bound(e->scan_span, n, e->scan_limit));
    ss_etcd_reply_free(&r);
    ss_etcd__scan_end(e);
    return true;
}

/* The Range of up to limit records from `from` (or after it; empty: from
 * the first) to `to` (inclusive), else to just before `below`, else (both
 * NULL) to the last. */
static int ss_etcd__range_to(struct ss_backend_etcd *e, struct ss_etcd_op *op, ss_bytes from, bool inclusive,
                             const ss_bytes *to, const ss_bytes *below, size_t limit)
{
    uint8_t zero = 0;
    int rc = ss_etcd__key(e, &e->scratch, 'k', from);
    if (rc == SS_OK && !inclusive && from.len) /* the first key after it */
        rc = ss_buf_append(&e->scratch, &zero, 1);
    if (rc == SS_OK && to) {
        if ((rc = ss_etcd__key(e, &e->scratch2, 'k', *to)) == SS_OK)
            rc = ss_buf_append(&e->scratch2, &zero, 1); /* `to` included */
    } else if (rc == SS_OK && below) {
        rc = ss_etcd__key(e, &e->scratch2, 'k', *below); /* etcd's range_end is excluded */
    } else if (rc == SS_OK) {
        rc = ss_etcd__records_end(e, &e->scratch2);
    }
    if (rc == SS_OK)
        rc = ss_etcd_range_all_pack(&op->call.request, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(&e->scratch2),
                                    (int64_t)limit);
    return rc;
}

void ss_etcd__page_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->page = SS_PAGE_DONE;
    e->page_rc = ss_etcd__take_reply(op, &e->page_reply);
}

static bool ss_etcd__same(const ss_buf *b, ss_bytes x)
{
    return b->len == x.len && (x.len == 0 || memcmp(b->data, x.data, x.len) == 0);
}

static bool ss_etcd__page_is(const struct ss_backend_etcd *e, ss_bytes after, ss_bytes prefix, size_t limit)
{
    return e->page_limit == limit && ss_etcd__same(&e->page_after, after) && ss_etcd__same(&e->page_prefix, prefix);
}

/* Negative, 0 or positive as a is before, equal to or after b in etcd's
 * order of keys (bytes, a prefix first). */
static int ss_etcd__cmp(ss_bytes a, ss_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    return c ? c : a.len < b.len ? -1 : a.len > b.len;
}

/* Where the page's Range starts: after its cursor's key (empty: at the
 * first key), or at the prefix itself (*at_prefix) when that key is
 * before it, since no key before the prefix can match: a first page
 * starts there, not at the store's first key. */
static ss_bytes ss_etcd__page_from(const struct ss_backend_etcd *e, bool *at_prefix)
{
    ss_bytes after = ss_etcd__bytes(&e->page_after), prefix = ss_etcd__bytes(&e->page_prefix);
    ss_bytes key = after.len ? ss_etcd__cursor_key(after) : after;
    *at_prefix = prefix.len && ss_etcd__cmp(key, prefix) < 0;
    return *at_prefix ? prefix : key;
}

/* Read the page after page_after (or from page_prefix), over page_span:
 * its Range ends at page_end, or (empty: no bound of its own) before
 * page_stop, the end of page_prefix's keys, or at the store's end. */
static int ss_etcd__page_send(struct ss_backend_etcd *e)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_PAGE, SS_ETCD_RANGE_METHOD);
    if (op == NULL)
        return SS_E_NOMEM;
    bool at_prefix;
    ss_bytes key = ss_etcd__page_from(e, &at_prefix);
    bool nomem = false, stop = false;
    if ((!ss_etcd_span_end(key, e->page_span, &e->page_end, &nomem) && nomem) ||
        (!(stop = ss_etcd_prefix_end(ss_etcd__bytes(&e->page_prefix), &e->page_stop, &nomem)) && nomem)) {
        ss_etcd__op_free(op);
        return SS_E_NOMEM;
    }
    /* The Range ends at the span's bound or at the end of the prefix's
     * keys, whichever comes first: etcd then counts none after them, and
     * a page that reaches the prefix's end is the listing's last, as one
     * that reaches the store's end is (page_end empty: no bound of its
     * own to go on from). */
    ss_bytes end = ss_etcd__bytes(&e->page_end), below = ss_etcd__bytes(&e->page_stop);
    if (stop && end.len && ss_etcd__cmp(end, below) >= 0) {
        ss_buf_clear(&e->page_end);
        end.len = 0;
    }
    int rc = ss_etcd__range_to(e, op, key, at_prefix, end.len ? &end : NULL, stop ? &below : NULL, e->page_range);
    if (rc != SS_OK) {
        ss_etcd__op_free(op);
        return rc;
    }
    /* The records it reads are as of a time after this one: a key whose
     * deadline passed before it is gone for good; one due after it lived
     * when the page was asked for (ss_etcd__page_as_of). */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    e->page_sent_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
    e->page = SS_PAGE_RUNNING;
    ss_etcd__submit(e, op);
    return SS_E_PENDING;
}

uint64_t ss_etcd__page_as_of(void *impl)
{
    const struct ss_backend_etcd *e = impl;
    return e->page == SS_PAGE_DONE ? e->page_sent_ms : 0;
}

int ss_etcd__page(void *impl, ss_bytes after, ss_bytes prefix, size_t max_examined, ss_backend_scan_fn fn, void *ctx,
                  ss_buf *next)
{
    struct ss_backend_etcd *e = impl;
    ss_buf_clear(next);
    /* A cursor past every key with the prefix (a token made before pages
     * kept to the prefix's keys): nothing more can match, and there is
     * nothing to read. */
    ss_bytes at = after.len ? ss_etcd__cursor_key(after) : after;
    if (prefix.len && ss_etcd__cmp(at, prefix) > 0 &&
        !(at.len >= prefix.len && memcmp(at.data, prefix.data, prefix.len) == 0))
        return SS_OK;
    /* A page read for another cursor or pattern (a request that went
     * away, or one queued behind this one) is read again when its turn
     * comes. */
    if (e->page == SS_PAGE_DONE && !ss_etcd__page_is(e, after, prefix, max_examined))
        e->page = SS_PAGE_IDLE;
    if (e->page == SS_PAGE_RUNNING)
        return SS_E_PENDING;
    if (e->page == SS_PAGE_IDLE) {
        ss_buf_clear(&e->page_after);
        ss_buf_clear(&e->page_prefix);
        if (ss_buf_append(&e->page_after, after.data, after.len) != SS_OK ||
            ss_buf_append(&e->page_prefix, prefix.data, prefix.len) != SS_OK)
            return SS_E_NOMEM;
        e->page_limit = max_examined;
        e->page_range = ss_etcd__records_for(e, max_examined);
        e->page_shrunk = false;
        e->page_tries = 0;
        /* The first page, or one that starts at the prefix: to the end of
         * the prefix's keys (the store's end without a prefix). */
        bool at_prefix;
        (void)ss_etcd__page_from(e, &at_prefix);
        ss_etcd_span none = {0, 0};
        e->page_span = at_prefix ? none : ss_etcd__cursor_span(after);
        return ss_etcd__page_send(e);
    }
    /* Read: walked once, then forgotten. */
    e->page = SS_PAGE_IDLE;
    int rc = e->page_rc;
    ss_etcd_reply r;
    size_t n = 0;
    if (rc != SS_OK && !e->page_shrunk && e->page_range > 1) {
        /* Perhaps too large a reply: once again, with records taken to
         * be as large as they can be. */
        ss_etcd__records_worst(e);
        e->page_shrunk = true;
        e->page_range = ss_etcd__records_for(e, max_examined);
        return ss_etcd__page_send(e);
    }
    if (rc != SS_OK)
        return rc;
    if (ss_etcd_range_unpack_all(&e->page_reply, &r, &n) != SS_OK)
        return SS_E_PROTOCOL;
    ss_etcd__records_seen(e, e->page_reply.len, n);
    e->page_reads++;
    e->page_counted += r.count > 0 ? (uint64_t)r.count : 0;
    size_t plen = strlen(e->prefix) + 2;
    /* What the page started after, for the span of the next (empty: its
     * first record, as for a first page). */
    bool at_prefix;
    ss_bytes key = ss_etcd__page_from(e, &at_prefix);
    if (at_prefix)
        key.len = 0;
    bool bounded = e->page_end.len != 0;
    if (bounded && n < e->page_range / 4) {
        ss_etcd_reply_free(&r);
        e->page_span = ss_etcd__retry_span(e->page_span, ++e->page_tries);
        return ss_etcd__page_send(e);
    }
    ss_bytes last = {NULL, 0};
    size_t last_i = 0;
    bool stopped = false;
    for (size_t i = 0; i < n && !stopped && rc == SS_OK; i++) {
        ss_etcd_kv kv;
        ss_record rec;
        last_i = i;
        if (!ss_etcd__page_entry(&r, i, plen, &last, &rec, &kv))
            continue; /* not a record of ours, or a deleted key's tombstone */
        struct ss_etcd_stub stub;
        if (ss_etcd__stub(kv.value, &rec, &stub)) {
            rec.value.data = NULL; /* in chunks: its length alone */
            rec.value.len = (size_t)stub.len;
        }
        /* Each key's cursor carries the span its page would have after
         * it, should the walk end there (the answer's size ends it). */
        ss_etcd_span span = ss_etcd__span_upto(&r, i, key, plen);
        if ((rc = ss_etcd__cursor_put(&e->page_cursor, last, span)) == SS_OK)
            stopped = !fn(ctx, last, ss_etcd__bytes(&e->page_cursor), &rec);
    }
    /* More may follow when the page was full, the walk stopped early, or
     * the Range ended at its bound. */
    if (rc == SS_OK && (stopped || n == e->page_range) && last.data)
        rc = ss_etcd__cursor_put(next, last, ss_etcd__span_upto(&r, last_i, key, plen));
    else if (rc == SS_OK && bounded)
        rc = ss_etcd__cursor_put(next, ss_etcd__bytes(&e->page_end),
                                 ss_etcd_span_after_bound(e->page_span, n, e->page_range));
    ss_etcd_reply_free(&r);
    if (e->page_reply.cap > ((size_t)1 << 20))
        ss_buf_free(&e->page_reply);
    return rc;
}

/* ---- the key of SCAN's continuation tokens ---------------------------- */

/* The Txn that makes s/scan-token-key with 16 random bytes unless it is
 * there, in which case the Txn reads it. */
static int ss_etcd__token_key_pack(struct ss_backend_etcd *e, ss_buf *out)
{
    uint8_t *fresh = e->token_fresh; /* kept: the key, should the Txn make it */
    if (getrandom(fresh, sizeof e->token_fresh, 0) != (ssize_t)sizeof e->token_fresh)
        return SS_E_IO;
    int rc = ss_etcd__named(e, 's', "scan-token-key");
    ss_bytes value = {fresh, sizeof e->token_fresh};
    return rc == SS_OK ? ss_etcd_cas_pack(out, ss_etcd__bytes(&e->scratch), 0, value, 0) : rc;
}

/* A plain read of s/scan-token-key: what a broker uses while etcd takes
 * no put (out of space: it refuses a Txn that holds one, even when its
 * compare fails and it would only have read). */
static int ss_etcd__token_key_read_pack(struct ss_backend_etcd *e, ss_buf *out)
{
    int rc = ss_etcd__named(e, 's', "scan-token-key");
    return rc == SS_OK ? ss_etcd_range_pack(out, ss_etcd__bytes(&e->scratch), false) : rc;
}

/* The answer of the Txn (the key it made, or the one that was there) or
 * of the read (the one there, if any: else *absent). */
static bool ss_etcd__token_key_take(struct ss_backend_etcd *e, const ss_grpc_call *c, bool *absent)
{
    ss_etcd_reply r;
    ss_etcd_kv kv;
    bool by_read = strcmp(c->method, SS_ETCD_RANGE_METHOD) == 0;
    *absent = false;
    if (c->rc != SS_OK ||
        (by_read ? ss_etcd_range_unpack(&c->reply, &r, &kv) : ss_etcd_txn_unpack(&c->reply, &r, &kv)) != SS_OK)
        return false;
    if (by_read && !kv.found) {
        *absent = true;
        ss_etcd_reply_free(&r);
        return false;
    }
    bool ok = false;
    if (!by_read && r.succeeded) { /* made by this Txn */
        memcpy(e->token_key, e->token_fresh, sizeof e->token_key);
        ok = true;
    } else if (kv.found && kv.value.len == sizeof e->token_key) {
        memcpy(e->token_key, kv.value.data, sizeof e->token_key);
        ok = true;
    }
    ss_etcd_reply_free(&r);
    if (ok)
        e->token_known = true;
    else if (!e->token_bad_logged) /* the Txn answered, with something else there */
        ss_etcd__log(e, SS_LOG_ERR, "%ss/scan-token-key is not 16 bytes: SCAN is unavailable until it is "
                     "(delete it, and a broker makes a new one)", e->prefix);
    e->token_bad_logged = !ok;
    return ok;
}

void ss_etcd__token_key_load(struct ss_backend_etcd *e)
{
    /* The Txn, then (refused: out of space, say) a read. */
    for (int by_read = 0; by_read < 2 && !e->token_known; by_read++) {
        ss_grpc_call c;
        memset(&c, 0, sizeof c);
        c.method = by_read ? SS_ETCD_RANGE_METHOD : SS_ETCD_TXN_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        bool absent;
        int rc = by_read ? ss_etcd__token_key_read_pack(e, &c.request) : ss_etcd__token_key_pack(e, &c.request);
        if (rc == SS_OK && ss_grpc_call_wait(e->grpc, &c) == SS_OK)
            ss_etcd__token_key_take(e, &c, &absent);
        ss_grpc_call_clear(&c);
    }
}

void ss_etcd__token_key_step(struct ss_backend_etcd *e)
{
    if (e->token_known || e->token_asked || ss_etcd__mono_ms() < e->token_retry_ms)
        return;
    e->token_asked = true;
    if (e->token_by_read)
        ss_etcd__send(e, SS_OP_TOKEN_KEY, SS_ETCD_RANGE_METHOD, ss_etcd__token_key_read_pack);
    else
        ss_etcd__send(e, SS_OP_TOKEN_KEY, SS_ETCD_TXN_METHOD, ss_etcd__token_key_pack);
}

void ss_etcd__token_key_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->token_asked = false;
    bool absent;
    if (ss_etcd__token_key_take(e, &op->call, &absent))
        return;
    /* The Txn failed: a read next (etcd takes no put while out of space);
     * the read found none: the Txn, to make it. */
    e->token_by_read = e->token_by_read ? !absent : true;
    e->token_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
}

int ss_etcd__token_key(void *impl, uint8_t out[16])
{
    struct ss_backend_etcd *e = impl;
    if (!e->token_known)
        return SS_E_UNAVAILABLE;
    memcpy(out, e->token_key, sizeof e->token_key);
    return SS_OK;
}
