/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_walk.c - reading every record in pages (backend_etcd_walk.h). */
#include "backend_etcd_walk.h"

#include <string.h>

#include "../core/errors.h"
#include "kv.h"

/* a < b, as etcd orders keys. */
static bool ss_etcd_walk__before(ss_bytes a, ss_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    return c < 0 || (c == 0 && a.len < b.len);
}

static ss_bytes ss_etcd_walk__bytes(const ss_buf *b)
{
    ss_bytes v = {b->data, b->len};
    return v;
}

void ss_etcd_walk_restart(struct ss_etcd_walk *w)
{
    ss_buf_clear(&w->after);
    w->span = (ss_etcd_span){0, 0}; /* the first page: to the end, as nothing tells the keys' density */
}

void ss_etcd_walk_free(struct ss_etcd_walk *w)
{
    ss_buf_free(&w->after);
    ss_buf_free(&w->end);
}

int ss_etcd_walk_pack(struct ss_etcd_walk *w, ss_bytes first, ss_bytes records_end, size_t max_request_bytes,
                      int64_t revision, ss_buf *out)
{
    ss_bytes start = w->after.len ? ss_etcd_walk__bytes(&w->after) : first, end = records_end;
    /* Bounded by the span when that ends before the last record. */
    bool nomem = false;
    if (ss_etcd_span_end(start, w->span, &w->end, &nomem) &&
        ss_etcd_walk__before(ss_etcd_walk__bytes(&w->end), end))
        end = ss_etcd_walk__bytes(&w->end);
    else if (nomem)
        return SS_E_NOMEM;
    else
        ss_buf_clear(&w->end);
    size_t page = SS_ETCD_WALK_PAGE_BYTES / (max_request_bytes ? max_request_bytes : 1);
    page = page < 1 ? 1 : page > SS_ETCD_WALK_PAGE ? SS_ETCD_WALK_PAGE : page;
    w->limit = page;
    return ss_etcd_range_all_at_pack(out, start, end, (int64_t)page, revision);
}

bool ss_etcd_walk_next(struct ss_etcd_walk *w, ss_bytes first, ss_bytes last, size_t n, bool full)
{
    static const uint8_t zero = 0;
    if (full) {
        /* From where this page started; one key alone tells nothing. */
        bool after = w->after.len > 0;
        ss_bytes from = after ? ss_etcd_walk__bytes(&w->after) : first;
        w->span = after || n > 1 ? ss_etcd_span_of_page(from, last) : (ss_etcd_span){0, 0};
        ss_buf_clear(&w->after);
        if (ss_buf_append(&w->after, last.data, last.len) != SS_OK || ss_buf_append(&w->after, &zero, 1) != SS_OK)
            ss_buf_clear(&w->after);
        return true;
    }
    if (w->end.len == 0)
        return false; /* read to the last record */
    w->span = ss_etcd_span_after_bound(w->span, n, w->limit);
    ss_buf_clear(&w->after);
    if (ss_buf_append(&w->after, w->end.data, w->end.len) != SS_OK)
        ss_buf_clear(&w->after);
    return true;
}

bool ss_etcd_walk_lost(const struct ss_etcd_walk *w)
{
    return w->after.len == 0;
}
