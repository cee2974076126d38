/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mem_records.c - the in-memory backend's records, batches and commits'
 * outcomes (mem_backend_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"
#include "mem_backend_internal.h"

ss_bytes ss_mem__bytes(const ss_buf *b)
{
    ss_bytes x = {b->data, b->len};
    return x;
}

ss_bytes ss_mem__str(const char *s)
{
    ss_bytes x = {(const uint8_t *)s, strlen(s)};
    return x;
}

/* Byte order, a prefix first. */
int ss_mem__cmp(ss_bytes a, ss_bytes b)
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

void ss_mem__recs_free(struct ss_mem_recs *rs)
{
    ss_mem__recs_clear(rs);
    free(rs->items);
    memset(rs, 0, sizeof *rs);
}

/* Where key is in rs, or where it would go in a sorted rs (*found false). */
size_t ss_mem__search(const struct ss_mem_recs *rs, ss_bytes key, bool *found)
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
struct ss_mem_rec *ss_mem__write_of(struct ss_mem_recs *rs, ss_bytes key)
{
    for (size_t i = 0; i < rs->len; i++)
        if (ss_mem__cmp(ss_mem__bytes(&rs->items[i].key), key) == 0)
            return &rs->items[i];
    return NULL;
}

struct ss_mem_rec *ss_mem__committed(struct ss_mem *m, ss_bytes key)
{
    bool found;
    size_t i = ss_mem__search(&m->committed, key, &found);
    return found ? &m->committed.items[i] : NULL;
}

/* The record of key in rs, made at position at (an empty one), or NULL
 * when memory ran out. */
struct ss_mem_rec *ss_mem__insert(struct ss_mem_recs *rs, size_t at, ss_bytes key)
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
int ss_mem__assign(struct ss_mem_rec *r, const ss_record *rec, const ss_hlc *removed)
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

void ss_mem__to_record(const struct ss_mem_rec *r, ss_record *rec)
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

void ss_mem__batch_clear(struct ss_mem_batch *b)
{
    ss_mem__recs_clear(&b->writes);
    ss_feed_clear(&b->feed);
}

void ss_mem__batch_free(struct ss_mem_batch *b)
{
    ss_mem__recs_free(&b->writes);
    ss_feed_free(&b->feed);
}

/* Does a commit under way write key? */
bool ss_mem__in_flight(struct ss_mem *m, ss_bytes key)
{
    for (size_t i = 0; i < SS_MEM_FLIGHTS_MAX; i++)
        if (m->flights[i].used && ss_mem__write_of(&m->flights[i].batch.writes, key))
            return true;
    return false;
}

bool ss_mem__pending(const struct ss_mem *m, ss_bytes key)
{
    for (size_t i = 0; i < m->npending; i++)
        if (ss_mem__cmp(ss_mem__bytes(&m->pending[i]), key) == 0)
            return true;
    return false;
}

void ss_mem__pend(struct ss_mem *m, ss_bytes key)
{
    if (m->npending == SS_MEM_PENDING_MAX || ss_mem__pending(m, key))
        return;
    ss_buf *k = &m->pending[m->npending++];
    ss_buf_clear(k);
    (void)ss_buf_append(k, key.data, key.len);
}

/* The open batch's write of key, made if needed, decided on rev. */
int ss_mem__write(struct ss_mem *m, ss_bytes key, ss_revision decided_on, struct ss_mem_rec **out)
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

void ss_mem__record_change(struct ss_mem *m, ss_feed *feed, const ss_change *c)
{
    if (ss_backend_wants(&m->base, c->key))
        (void)ss_feed_append(feed, c);
}

/* Write what batch b holds into the committed records, each with a new
 * revision. */
int ss_mem__apply(struct ss_mem *m, const struct ss_mem_batch *b)
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
bool ss_mem__fresh(struct ss_mem *m, const struct ss_mem_batch *b)
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

void ss_mem__end(struct ss_mem *m, struct ss_mem_flight *f)
{
    f->rc = ss_mem__outcome(m, f->n, &f->batch);
    f->done = true;
    if (m->base.wake)
        m->base.wake(m->base.wake_ctx);
}
