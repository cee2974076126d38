/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mem_backend.c - the storage interface in memory, with its hooks
 * (mem_backend.h).
 *
 * What is committed is a sorted array of records, deleted keys included
 * (their revision and the version their deletion removed stay, as etcd's
 * tombstones do). A batch is an array of writes, each with the revision
 * it was decided on; committing it compares those with the committed
 * revisions, like etcd's Txn, and applies it whole or not at all. A key
 * that a commit under way writes is pending for reads until that commit
 * is collected, as in the etcd backend: no request decides on a write
 * whose outcome is not known yet.
 */
#include "mem_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"

/* Commits in flight at most (the owner allows four). */
#define SS_MEM_FLIGHTS_MAX 4u
/* Commits whose end a test may choose (later ones are checked). */
#define SS_MEM_ENDS_MAX 64u
/* The clock of the other broker of ss_mem_set_behind (Nov 2023). */
#define SS_MEM_BEHIND_WALL 1700000000000ull
/* Keys whose reads may be pending at once. */
#define SS_MEM_PENDING_MAX 16u

/* A committed record, or a write of a batch (rev: what it was decided on). */
struct ss_mem_rec {
    ss_buf key, value;
    ss_hlc version; /* deleted: the version the deletion removed */
    bool has_ft;
    ss_hlc ft;
    uint64_t expiry_ms;
    bool present;
    ss_revision rev;
};

struct ss_mem_recs {
    struct ss_mem_rec *items;
    size_t len, cap;
};

struct ss_mem_batch {
    struct ss_mem_recs writes;
    ss_feed feed; /* its changes, for the feed once committed */
};

struct ss_mem_flight {
    bool used, done;
    unsigned n; /* the commit's number, its id */
    int rc;
    struct ss_mem_batch batch;
};

struct ss_mem {
    ss_backend base;
    struct ss_mem_options o;
    struct ss_mem_recs committed; /* sorted by key */
    ss_revision rev;              /* the last revision given */
    struct ss_mem_batch open;
    struct ss_mem_flight flights[SS_MEM_FLIGHTS_MAX];
    ss_feed settling; /* the changes of the commit collected last */
    unsigned commits, reads;
    enum ss_mem_end ends[SS_MEM_ENDS_MAX + 1];
    bool hold;
    ss_buf pending[SS_MEM_PENDING_MAX];
    size_t npending;
    unsigned pend_read; /* 0: none */
    ss_buf prefetched;
    ss_buf scratch;
    uint64_t clock_wall;
    uint32_t clock_counter;
    /* The administrative page asked for (page_start). */
    bool page;
    ss_buf page_from;
    bool page_inclusive;
    size_t page_limit;
};

/* ---- records ------------------------------------------------------------ */

static ss_bytes ss_mem__bytes(const ss_buf *b)
{
    ss_bytes x = {b->data, b->len};
    return x;
}

static ss_bytes ss_mem__str(const char *s)
{
    ss_bytes x = {(const uint8_t *)s, strlen(s)};
    return x;
}

/* Byte order, a prefix first. */
static int ss_mem__cmp(ss_bytes a, ss_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    return c ? c : a.len < b.len ? -1 : a.len > b.len;
}

static void ss_mem__rec_free(struct ss_mem_rec *r)
{
    ss_buf_free(&r->key);
    ss_buf_free(&r->value);
}

static void ss_mem__recs_clear(struct ss_mem_recs *rs)
{
    for (size_t i = 0; i < rs->len; i++)
        ss_mem__rec_free(&rs->items[i]);
    rs->len = 0;
}

static void ss_mem__recs_free(struct ss_mem_recs *rs)
{
    ss_mem__recs_clear(rs);
    free(rs->items);
    memset(rs, 0, sizeof *rs);
}

/* Where key is in rs, or where it would go in a sorted rs (*found false). */
static size_t ss_mem__search(const struct ss_mem_recs *rs, ss_bytes key, bool *found)
{
    size_t lo = 0, hi = rs->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = ss_mem__cmp(ss_mem__bytes(&rs->items[mid].key), key);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* A batch's writes are few and kept in the order they were made. */
static struct ss_mem_rec *ss_mem__write_of(struct ss_mem_recs *rs, ss_bytes key)
{
    for (size_t i = 0; i < rs->len; i++)
        if (ss_mem__cmp(ss_mem__bytes(&rs->items[i].key), key) == 0)
            return &rs->items[i];
    return NULL;
}

static struct ss_mem_rec *ss_mem__committed(struct ss_mem *m, ss_bytes key)
{
    bool found;
    size_t i = ss_mem__search(&m->committed, key, &found);
    return found ? &m->committed.items[i] : NULL;
}

/* The record of key in rs, made at position at (an empty one), or NULL
 * when memory ran out. */
static struct ss_mem_rec *ss_mem__insert(struct ss_mem_recs *rs, size_t at, ss_bytes key)
{
    if (rs->len == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 16;
        struct ss_mem_rec *p = realloc(rs->items, cap * sizeof *p);
        if (p == NULL)
            return NULL;
        rs->items = p;
        rs->cap = cap;
    }
    struct ss_mem_rec r;
    memset(&r, 0, sizeof r);
    if (ss_buf_append(&r.key, key.data, key.len) != SS_OK)
        return NULL;
    memmove(rs->items + at + 1, rs->items + at, (rs->len - at) * sizeof *rs->items);
    rs->items[at] = r;
    rs->len++;
    return &rs->items[at];
}

/* Give r the record rec (present) or the deletion of version. */
static int ss_mem__assign(struct ss_mem_rec *r, const ss_record *rec, const ss_hlc *removed)
{
    ss_buf_clear(&r->value);
    r->present = rec != NULL;
    if (rec == NULL) {
        r->version = *removed;
        r->has_ft = false;
        r->expiry_ms = 0;
        return SS_OK;
    }
    r->version = rec->version;
    r->has_ft = rec->has_ft;
    r->ft = rec->ft;
    r->expiry_ms = rec->expiry_ms;
    return ss_buf_append(&r->value, rec->value.data, rec->value.len);
}

static void ss_mem__to_record(const struct ss_mem_rec *r, ss_record *rec)
{
    if (!r->present) {
        rec->version = r->version; /* the version its deletion removed */
        return;
    }
    memset(rec, 0, sizeof *rec);
    rec->value = ss_mem__bytes(&r->value);
    rec->version = r->version;
    rec->has_ft = r->has_ft;
    rec->ft = r->ft;
    rec->expiry_ms = r->expiry_ms;
}

/* ---- batches -------------------------------------------------------------- */

static void ss_mem__batch_clear(struct ss_mem_batch *b)
{
    ss_mem__recs_clear(&b->writes);
    ss_feed_clear(&b->feed);
}

static void ss_mem__batch_free(struct ss_mem_batch *b)
{
    ss_mem__recs_free(&b->writes);
    ss_feed_free(&b->feed);
}

/* Does a commit under way write key? */
static bool ss_mem__in_flight(struct ss_mem *m, ss_bytes key)
{
    for (size_t i = 0; i < SS_MEM_FLIGHTS_MAX; i++)
        if (m->flights[i].used && ss_mem__write_of(&m->flights[i].batch.writes, key))
            return true;
    return false;
}

static bool ss_mem__pending(const struct ss_mem *m, ss_bytes key)
{
    for (size_t i = 0; i < m->npending; i++)
        if (ss_mem__cmp(ss_mem__bytes(&m->pending[i]), key) == 0)
            return true;
    return false;
}

static void ss_mem__pend(struct ss_mem *m, ss_bytes key)
{
    if (m->npending == SS_MEM_PENDING_MAX || ss_mem__pending(m, key))
        return;
    ss_buf *k = &m->pending[m->npending++];
    ss_buf_clear(k);
    (void)ss_buf_append(k, key.data, key.len);
}

/* The open batch's write of key, made if needed, decided on rev. */
static int ss_mem__write(struct ss_mem *m, ss_bytes key, ss_revision decided_on, struct ss_mem_rec **out)
{
    struct ss_mem_rec *w = ss_mem__write_of(&m->open.writes, key);
    if (w && w->rev != decided_on)
        return SS_E_CONFLICT; /* decided on something else than the batch's read */
    if (w == NULL && (w = ss_mem__insert(&m->open.writes, m->open.writes.len, key)) == NULL)
        return SS_E_NOMEM;
    w->rev = decided_on;
    *out = w;
    return SS_OK;
}

static void ss_mem__record_change(struct ss_mem *m, ss_feed *feed, const ss_change *c)
{
    if (ss_backend_wants(&m->base, c->key))
        (void)ss_feed_append(feed, c);
}

/* Write what batch b holds into the committed records, each with a new
 * revision. */
static int ss_mem__apply(struct ss_mem *m, const struct ss_mem_batch *b)
{
    for (size_t i = 0; i < b->writes.len; i++) {
        const struct ss_mem_rec *w = &b->writes.items[i];
        ss_bytes key = ss_mem__bytes(&w->key);
        bool found;
        size_t at = ss_mem__search(&m->committed, key, &found);
        struct ss_mem_rec *c = found ? &m->committed.items[at] : ss_mem__insert(&m->committed, at, key);
        if (c == NULL)
            return SS_E_NOMEM;
        ss_record rec;
        ss_mem__to_record(w, &rec);
        int rc = ss_mem__assign(c, w->present ? &rec : NULL, &w->version);
        if (rc != SS_OK)
            return rc;
        c->rev = ++m->rev;
    }
    return SS_OK;
}

/* Did every write of b decide on the revision that is committed now? */
static bool ss_mem__fresh(struct ss_mem *m, const struct ss_mem_batch *b)
{
    for (size_t i = 0; i < b->writes.len; i++) {
        const struct ss_mem_rec *w = &b->writes.items[i];
        const struct ss_mem_rec *c = ss_mem__committed(m, ss_mem__bytes(&w->key));
        if ((c ? c->rev : 0) != w->rev)
            return false;
    }
    return true;
}

/* The outcome of commit n of batch b, which is applied when it happened. */
static int ss_mem__outcome(struct ss_mem *m, unsigned n, const struct ss_mem_batch *b)
{
    enum ss_mem_end end = n <= SS_MEM_ENDS_MAX ? m->ends[n] : SS_MEM_END_CHECKED;
    switch (end) {
    case SS_MEM_END_CONFLICT:
        return SS_E_CONFLICT;
    case SS_MEM_END_FAIL:
        return SS_E_IO;
    case SS_MEM_END_UNKNOWN: {
        int rc = ss_mem__apply(m, b);
        return rc != SS_OK ? rc : SS_E_UNAVAILABLE;
    }
    case SS_MEM_END_CHECKED:
        break;
    }
    if (!ss_mem__fresh(m, b))
        return SS_E_CONFLICT;
    return ss_mem__apply(m, b);
}

static void ss_mem__end(struct ss_mem *m, struct ss_mem_flight *f)
{
    f->rc = ss_mem__outcome(m, f->n, &f->batch);
    f->done = true;
    if (m->base.wake)
        m->base.wake(m->base.wake_ctx);
}

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

static void ss_mem__settled(void *impl, int rc)
{
    struct ss_mem *m = impl;
    if (rc == SS_OK)
        ss_feed_each(&m->settling, ss_mem__append, &m->base.feed);
    ss_feed_clear(&m->settling);
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

static int ss_mem__scan(void *impl, ss_bytes after, size_t max_examined, ss_backend_scan_fn fn, void *ctx,
                        ss_buf *next)
{
    struct ss_mem *m = impl;
    ss_buf cursor = SS_BUF_INIT;
    int rc = ss_buf_append(&cursor, after.data, after.len);
    bool more = true;
    for (size_t n = 0; rc == SS_OK && more && n < max_examined; n++) {
        const struct ss_mem_rec *r = ss_mem__next(m, ss_mem__bytes(&cursor), false, &m->open.writes);
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

static void ss_mem__token_key(void *impl, uint8_t out[16])
{
    (void)impl;
    memcpy(out, "lifecycle tests.", 16);
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

/* ---- hooks ----------------------------------------------------------------- */

static struct ss_mem *ss_mem__of(const ss_backend *b)
{
    return b->impl;
}

void ss_mem_pend_key(ss_backend *b, const char *key)
{
    ss_mem__pend(ss_mem__of(b), ss_mem__str(key));
}

void ss_mem_pend_read(ss_backend *b, unsigned n)
{
    ss_mem__of(b)->pend_read = n;
}

void ss_mem_release_reads(ss_backend *b)
{
    struct ss_mem *m = ss_mem__of(b);
    m->npending = 0;
    m->pend_read = 0;
    if (b->wake)
        b->wake(b->wake_ctx);
}

void ss_mem_commit_ends(ss_backend *b, unsigned n, enum ss_mem_end end)
{
    if (n >= 1 && n <= SS_MEM_ENDS_MAX)
        ss_mem__of(b)->ends[n] = end;
}

void ss_mem_hold_commits(ss_backend *b, bool hold)
{
    ss_mem__of(b)->hold = hold;
}

bool ss_mem_release_commit(ss_backend *b, unsigned n)
{
    struct ss_mem *m = ss_mem__of(b);
    struct ss_mem_flight *f = NULL;
    for (size_t i = 0; i < SS_MEM_FLIGHTS_MAX; i++) {
        struct ss_mem_flight *g = &m->flights[i];
        if (g->used && !g->done && (n ? g->n == n : f == NULL || g->n < f->n))
            f = g;
    }
    if (f == NULL)
        return false;
    ss_mem__end(m, f);
    return true;
}

int ss_mem_set_behind(ss_backend *b, const char *key, const char *value)
{
    struct ss_mem *m = ss_mem__of(b);
    ss_bytes k = ss_mem__str(key);
    bool found;
    size_t at = ss_mem__search(&m->committed, k, &found);
    struct ss_mem_rec *r = found ? &m->committed.items[at] : ss_mem__insert(&m->committed, at, k);
    if (r == NULL)
        return SS_E_NOMEM;
    ss_record rec;
    memset(&rec, 0, sizeof rec);
    rec.value = ss_mem__str(value);
    /* Written long ago, by its revision: the same in every run. */
    rec.version.wall = SS_MEM_BEHIND_WALL + m->rev + 1;
    rec.version.node_len = 5;
    memcpy(rec.version.node, "other", 5);
    int rc = ss_mem__assign(r, &rec, NULL);
    if (rc != SS_OK)
        return rc;
    r->rev = ++m->rev;
    ss_change c = {.type = SS_CHANGE_SET, .key = k, .value = rec.value, .version = rec.version};
    ss_mem__record_change(m, &m->base.feed, &c);
    return SS_OK;
}

unsigned ss_mem_commits(const ss_backend *b)
{
    return ss_mem__of(b)->commits;
}

unsigned ss_mem_reads(const ss_backend *b)
{
    return ss_mem__of(b)->reads;
}

const char *ss_mem_prefetched(const ss_backend *b)
{
    const struct ss_mem *m = ss_mem__of(b);
    return m->prefetched.len ? (const char *)m->prefetched.data : "";
}

const char *ss_mem_value(ss_backend *b, const char *key)
{
    struct ss_mem *m = ss_mem__of(b);
    const struct ss_mem_rec *r = ss_mem__committed(m, ss_mem__str(key));
    if (r == NULL || !r->present)
        return NULL;
    ss_buf_clear(&m->scratch);
    if (ss_buf_append(&m->scratch, r->value.data, r->value.len) != SS_OK ||
        ss_buf_append(&m->scratch, "", 1) != SS_OK)
        return NULL;
    return (const char *)m->scratch.data;
}
