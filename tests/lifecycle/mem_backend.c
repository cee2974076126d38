/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mem_backend.c - the storage interface's table in memory (mem_backend.h,
 * mem_backend_internal.h): the data operations and the owner's
 * lifecycle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"
#include "mem_backend_internal.h"

/* ---- the data operations ---------------------------------------------- */

static int ss_mem__read(void *impl, ss_bytes key, ss_record *rec, ss_revision *rev)
{
    struct ss_mem *m = impl;
    *rev = 0;
    if (++m->reads == m->pend_read)
        ss_mem__pend(m, key);
    if (ss_mem__pending(m, key) || ss_mem__in_flight(m, key))
        return SS_E_PENDING;
    const struct ss_mem_rec *r = ss_mem__write_of(&m->open.writes, key);
    if (r == NULL)
        r = ss_mem__committed(m, key);
    if (r == NULL)
        return SS_E_NOTFOUND;
    *rev = r->rev;
    ss_mem__to_record(r, rec);
    return r->present ? SS_OK : SS_E_NOTFOUND;
}

static int ss_mem__put(void *impl, ss_bytes key, const ss_record *rec, ss_revision decided_on)
{
    struct ss_mem *m = impl;
    struct ss_mem_rec *w;
    int rc = ss_mem__write(m, key, decided_on, &w);
    if (rc == SS_OK)
        rc = ss_mem__assign(w, rec, NULL);
    if (rc != SS_OK)
        return rc;
    ss_change c = {.type = SS_CHANGE_SET, .key = key, .value = rec->value, .version = rec->version};
    ss_mem__record_change(m, &m->open.feed, &c);
    return SS_OK;
}

static int ss_mem__del(void *impl, const ss_change *change, ss_revision decided_on)
{
    struct ss_mem *m = impl;
    struct ss_mem_rec *w;
    int rc = ss_mem__write(m, change->key, decided_on, &w);
    if (rc == SS_OK)
        rc = ss_mem__assign(w, NULL, &change->version);
    if (rc != SS_OK)
        return rc;
    ss_mem__record_change(m, &m->open.feed, change);
    return SS_OK;
}

/* The committed record due first that no batch has touched since. */
static struct ss_mem_rec *ss_mem__due(struct ss_mem *m)
{
    struct ss_mem_rec *due = NULL;
    for (size_t i = 0; i < m->committed.len; i++) {
        struct ss_mem_rec *r = &m->committed.items[i];
        ss_bytes key = ss_mem__bytes(&r->key);
        if (!r->present || r->expiry_ms == 0 || (due && due->expiry_ms <= r->expiry_ms) ||
            ss_mem__write_of(&m->open.writes, key) || ss_mem__in_flight(m, key))
            continue;
        due = r;
    }
    return due;
}

static uint64_t ss_mem__next_expiry(void *impl)
{
    const struct ss_mem_rec *r = ss_mem__due(impl);
    return r ? r->expiry_ms : UINT64_MAX;
}

static int ss_mem__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    struct ss_mem *m = impl;
    const struct ss_mem_rec *r = ss_mem__due(m);
    if (r == NULL || r->expiry_ms > now_ms)
        return SS_E_NOTFOUND;
    ss_buf_clear(key);
    int rc = ss_buf_append(key, r->key.data, r->key.len);
    if (rc != SS_OK)
        return rc;
    *version = r->version;
    ss_change gone = {.type = SS_CHANGE_DELETE, .key = ss_mem__bytes(key), .version = r->version,
                      .expired = true};
    return ss_mem__del(m, &gone, r->rev);
}

static int ss_mem__save_clock(void *impl, uint64_t wall, uint32_t counter)
{
    struct ss_mem *m = impl;
    m->clock_wall = wall;
    m->clock_counter = counter;
    return SS_OK;
}

static void ss_mem__load_clock(void *impl, uint64_t *wall, uint32_t *counter)
{
    const struct ss_mem *m = impl;
    *wall = m->clock_wall;
    *counter = m->clock_counter;
}

static void ss_mem__append(void *ctx, const ss_change *c)
{
    (void)ss_feed_append(ctx, c);
}

/* For owners without a pipeline: the open batch, checked and applied at
 * once (the commits under way are left to their own end). */
static int ss_mem__commit(void *impl, uint64_t now_ms)
{
    (void)now_ms;
    struct ss_mem *m = impl;
    int rc = ss_mem__fresh(m, &m->open) ? ss_mem__apply(m, &m->open) : SS_E_CONFLICT;
    if (rc == SS_OK)
        ss_feed_each(&m->open.feed, ss_mem__append, &m->base.feed);
    ss_mem__batch_clear(&m->open);
    return rc;
}

static void ss_mem__abort(void *impl)
{
    struct ss_mem *m = impl;
    ss_mem__batch_clear(&m->open);
}

static void ss_mem__settled(void *impl, int rc, uint64_t upto)
{
    struct ss_mem *m = impl;
    if (rc == SS_OK)
        ss_feed_each(&m->settling, ss_mem__append, &m->base.feed);
    ss_feed_clear(&m->settling);
    (void)ss_backend_mark_told(&m->base, upto);
}

/* The record that follows key `after` (inclusive: key itself counts) in
 * the committed records seen through batch `over` (NULL: committed only). */
static const struct ss_mem_rec *ss_mem__next(struct ss_mem *m, ss_bytes after, bool inclusive,
                                             struct ss_mem_recs *over)
{
    bool found;
    size_t i = ss_mem__search(&m->committed, after, &found);
    if (found && !inclusive)
        i++;
    const struct ss_mem_rec *best = i < m->committed.len ? &m->committed.items[i] : NULL;
    for (size_t j = 0; over && j < over->len; j++) {
        const struct ss_mem_rec *w = &over->items[j];
        int c = ss_mem__cmp(ss_mem__bytes(&w->key), after);
        if ((c > 0 || (c == 0 && inclusive)) &&
            (best == NULL || ss_mem__cmp(ss_mem__bytes(&w->key), ss_mem__bytes(&best->key)) <= 0))
            best = w;
    }
    if (best && over) { /* the batch's write of that key wins */
        const struct ss_mem_rec *w = ss_mem__write_of(over, ss_mem__bytes(&best->key));
        best = w ? w : best;
    }
    return best;
}

static int ss_mem__scan(void *impl, ss_bytes after, ss_bytes prefix, size_t max_examined, ss_backend_scan_fn fn,
                        void *ctx, ss_buf *next)
{
    struct ss_mem *m = impl;
    if (m->pend_scans)
        return SS_E_PENDING;
    /* A cursor before the prefix starts at the prefix itself (included);
     * the walk ends at the first key without it (backend.h). */
    bool from_prefix = prefix.len && ss_mem__cmp(after, prefix) < 0;
    ss_buf cursor = SS_BUF_INIT;
    int rc = from_prefix ? ss_buf_append(&cursor, prefix.data, prefix.len)
                         : ss_buf_append(&cursor, after.data, after.len);
    bool more = true;
    for (size_t n = 0; rc == SS_OK && more && n < max_examined; n++) {
        bool inclusive = from_prefix && n == 0;
        const struct ss_mem_rec *r = ss_mem__next(m, ss_mem__bytes(&cursor), inclusive, &m->open.writes);
        if (r != NULL && prefix.len &&
            (r->key.len < prefix.len || memcmp(r->key.data, prefix.data, prefix.len) != 0))
            r = NULL; /* past the prefix's keys */
        if (r == NULL) {
            ss_buf_clear(&cursor); /* the end */
            break;
        }
        ss_buf_clear(&cursor);
        if ((rc = ss_buf_append(&cursor, r->key.data, r->key.len)) != SS_OK)
            break;
        ss_record rec;
        ss_mem__to_record(r, &rec);
        if (r->present)
            more = fn(ctx, ss_mem__bytes(&r->key), ss_mem__bytes(&cursor), &rec);
    }
    ss_buf_clear(next);
    if (rc == SS_OK)
        rc = ss_buf_append(next, cursor.data, cursor.len);
    ss_buf_free(&cursor);
    return rc;
}

static int ss_mem__token_key(void *impl, uint8_t out[16])
{
    (void)impl;
    memcpy(out, "lifecycle tests.", 16);
    return SS_OK;
}

/* ---- the owner's lifecycle ----------------------------------------------- */

static int ss_mem__start(void *impl, char *why, size_t why_len)
{
    (void)impl;
    (void)why;
    (void)why_len;
    return SS_OK;
}

static void ss_mem__poll(void *impl, uint64_t now_ms)
{
    (void)impl;
    (void)now_ms; /* nothing happens by itself */
}

static size_t ss_mem__flights_used(const struct ss_mem *m)
{
    size_t n = 0;
    for (size_t i = 0; i < SS_MEM_FLIGHTS_MAX; i++)
        n += m->flights[i].used;
    return n;
}

static bool ss_mem__accepting(void *impl)
{
    struct ss_mem *m = impl;
    return m->o.max_flights > 1 || ss_mem__flights_used(m) == 0;
}

static int ss_mem__commit_start(void *impl, uint64_t now_ms, bool holds_answers, unsigned *id)
{
    (void)now_ms;
    (void)holds_answers;
    struct ss_mem *m = impl;
    if (m->open.writes.len == 0) {
        ss_feed_clear(&m->open.feed);
        return SS_E_NOTFOUND;
    }
    if (ss_mem__flights_used(m) >= m->o.max_flights)
        return SS_E_BUSY;
    struct ss_mem_flight *f = NULL;
    for (size_t i = 0; i < SS_MEM_FLIGHTS_MAX && f == NULL; i++)
        if (!m->flights[i].used)
            f = &m->flights[i];
    /* The batch moves into the flight; the flight's spare arrays open the
     * next batch. */
    struct ss_mem_batch spare = f->batch;
    f->batch = m->open;
    m->open = spare;
    f->used = true;
    f->done = false;
    f->n = *id = ++m->commits;
    if (!m->hold)
        ss_mem__end(m, f);
    return SS_OK;
}

static bool ss_mem__commit_collect(void *impl, ss_commit_outcome *out)
{
    struct ss_mem *m = impl;
    struct ss_mem_flight *f = NULL;
    for (size_t i = 0; i < SS_MEM_FLIGHTS_MAX; i++)
        if (m->flights[i].used && m->flights[i].done && (f == NULL || m->flights[i].n < f->n))
            f = &m->flights[i];
    if (f == NULL)
        return false;
    memset(out, 0, sizeof *out);
    out->id = f->n;
    out->rc = f->rc;
    /* The owner settles all but a conflict, which it runs again. */
    if (f->rc != SS_E_CONFLICT)
        ss_feed_each(&f->batch.feed, ss_mem__append, &m->settling);
    ss_mem__batch_clear(&f->batch);
    f->used = false;
    return true;
}

static int ss_mem__commit_wait(void *impl)
{
    struct ss_mem *m = impl;
    if (!m->o.blocks)
        return SS_E_BUSY;
    while (ss_mem_release_commit(&m->base, 0))
        ;
    return SS_OK;
}

static void ss_mem__prefetch(void *impl, ss_bytes key)
{
    struct ss_mem *m = impl;
    /* Kept as a C string: its NUL moves to the end. */
    if (m->prefetched.len)
        m->prefetched.len--;
    (void)ss_buf_append(&m->prefetched, key.data, key.len);
    (void)ss_buf_append(&m->prefetched, " ", 2);
}

static int ss_mem__page_start(void *impl, ss_bytes from, bool inclusive, size_t limit, bool values)
{
    (void)values; /* values are never kept apart here */
    struct ss_mem *m = impl;
    if (m->page)
        return SS_E_BUSY;
    ss_buf_clear(&m->page_from);
    int rc = ss_buf_append(&m->page_from, from.data, from.len);
    if (rc != SS_OK)
        return rc;
    m->page = true;
    m->page_inclusive = inclusive;
    m->page_limit = limit;
    return SS_OK;
}

static bool ss_mem__page_done(void *impl, ss_backend_page_fn fn, void *ctx, ss_buf *next, int *rc)
{
    struct ss_mem *m = impl;
    if (!m->page)
        return false;
    m->page = false;
    ss_bytes after = ss_mem__bytes(&m->page_from);
    bool inclusive = m->page_inclusive && after.len > 0;
    const struct ss_mem_rec *last = NULL;
    size_t seen = 0;
    bool more = true;
    while (more && seen < m->page_limit) {
        const struct ss_mem_rec *r = ss_mem__next(m, last ? ss_mem__bytes(&last->key) : after,
                                                  last ? false : inclusive, NULL);
        if (r == NULL)
            break;
        last = r;
        if (!r->present)
            continue;
        ss_record rec;
        ss_mem__to_record(r, &rec);
        more = fn(ctx, ss_mem__bytes(&r->key), &rec);
        seen++;
    }
    bool end = last == NULL || ss_mem__next(m, ss_mem__bytes(&last->key), false, NULL) == NULL;
    ss_buf_clear(next);
    *rc = end ? SS_OK : ss_buf_append(next, last->key.data, last->key.len);
    return true;
}

static void ss_mem__figures(void *impl, uint64_t now_ms, ss_figure_fn fn, void *ctx)
{
    (void)now_ms;
    struct ss_mem *m = impl;
    uint64_t keys = 0;
    for (size_t i = 0; i < m->committed.len; i++)
        keys += m->committed.items[i].present;
    ss_figure_u64(fn, ctx, "keys", keys);
    ss_figure_u64(fn, ctx, "mem/commits", m->commits);
    ss_figure_u64(fn, ctx, "mem/reads", m->reads);
}

static const char *ss_mem__cause(void *impl)
{
    (void)impl;
    return ""; /* the error's own text says it all */
}

static int ss_mem__backup_start(void *impl, const char *path, char *why, size_t why_len)
{
    (void)impl;
    (void)path;
    snprintf(why, why_len, "the in-memory test backend makes no copies");
    return SS_E_INVAL;
}

static bool ss_mem__backup_done(void *impl, int *rc, int *err, uint64_t *bytes)
{
    (void)impl;
    (void)rc;
    (void)err;
    (void)bytes;
    return false; /* none is ever started */
}

static void ss_mem__destroy(ss_backend *b)
{
    struct ss_mem *m = b->impl;
    ss_mem__recs_free(&m->committed);
    ss_mem__batch_free(&m->open);
    for (size_t i = 0; i < SS_MEM_FLIGHTS_MAX; i++)
        ss_mem__batch_free(&m->flights[i].batch);
    ss_feed_free(&m->settling);
    ss_feed_free(&m->base.feed);
    for (size_t i = 0; i < SS_MEM_PENDING_MAX; i++)
        ss_buf_free(&m->pending[i]);
    ss_buf_free(&m->prefetched);
    ss_buf_free(&m->scratch);
    ss_buf_free(&m->page_from);
    free(m);
}

static const struct ss_backend_ops ss_mem_ops = {
    .name = "mem",
    .read = ss_mem__read,
    .put = ss_mem__put,
    .del = ss_mem__del,
    .next_expiry = ss_mem__next_expiry,
    .pop_due = ss_mem__pop_due,
    .save_clock = ss_mem__save_clock,
    .load_clock = ss_mem__load_clock,
    .commit = ss_mem__commit,
    .abort = ss_mem__abort,
    .settled = ss_mem__settled,
    .scan = ss_mem__scan,
    .token_key = ss_mem__token_key,
    .max_flights = 0, /* set per backend: see ss_mem_new */
    .may_conflict = true,
    .wake_repeats = false,
    .start = ss_mem__start,
    .poll = ss_mem__poll,
    .accepting = ss_mem__accepting,
    .commit_start = ss_mem__commit_start,
    .commit_collect = ss_mem__commit_collect,
    .commit_wait = ss_mem__commit_wait,
    .prefetch = ss_mem__prefetch,
    .page_start = ss_mem__page_start,
    .page_done = ss_mem__page_done,
    .figures = ss_mem__figures,
    .cause = ss_mem__cause,
    .backup_start = ss_mem__backup_start,
    .backup_done = ss_mem__backup_done,
    .destroy = ss_mem__destroy,
};

/* The table is shared, but max_flights and may_conflict are each
 * backend's: every backend keeps its own copy of it, behind its state (m
 * first: destroy frees both through it). */
struct ss_mem_with_ops {
    struct ss_mem m;
    struct ss_backend_ops ops;
};

int ss_mem_new(const struct ss_mem_options *o, ss_backend **out)
{
    struct ss_mem_with_ops *w = calloc(1, sizeof *w);
    if (w == NULL)
        return SS_E_NOMEM;
    struct ss_mem *m = &w->m;
    m->o = *o;
    if (m->o.max_flights == 0 || m->o.max_flights > SS_MEM_FLIGHTS_MAX)
        m->o.max_flights = m->o.max_flights ? SS_MEM_FLIGHTS_MAX : 1;
    w->ops = ss_mem_ops;
    w->ops.max_flights = m->o.max_flights;
    w->ops.may_conflict = m->o.may_conflict;
    m->base.ops = &w->ops;
    m->base.impl = m;
    *out = &m->base;
    return SS_OK;
}
