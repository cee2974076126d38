/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mem_hooks.c - what a test does to the in-memory backend, and what it
 * asks of it (mem_backend.h). */
#include <string.h>

#include "../../core/errors.h"
#include "mem_backend_internal.h"

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

void ss_mem_pend_scans(ss_backend *b)
{
    ss_mem__of(b)->pend_scans = true;
}

void ss_mem_release_reads(ss_backend *b)
{
    struct ss_mem *m = ss_mem__of(b);
    m->npending = 0;
    m->pend_read = 0;
    m->pend_scans = false;
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

/* The committed record of key, made (empty) when there is none: for what
 * "another broker" writes. NULL when memory ran out. */
static struct ss_mem_rec *ss_mem__behind(struct ss_mem *m, ss_bytes k)
{
    bool found;
    size_t at = ss_mem__search(&m->committed, k, &found);
    return found ? &m->committed.items[at] : ss_mem__insert(&m->committed, at, k);
}

int ss_mem_set_behind(ss_backend *b, const char *key, const char *value)
{
    struct ss_mem *m = ss_mem__of(b);
    ss_bytes k = ss_mem__str(key);
    struct ss_mem_rec *r = ss_mem__behind(m, k);
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

int ss_mem_delete_behind(ss_backend *b, const char *key, uint64_t removed_wall)
{
    struct ss_mem *m = ss_mem__of(b);
    ss_bytes k = ss_mem__str(key);
    struct ss_mem_rec *r = ss_mem__behind(m, k);
    if (r == NULL)
        return SS_E_NOMEM;
    ss_hlc removed;
    memset(&removed, 0, sizeof removed);
    removed.wall = removed_wall;
    removed.node_len = 5;
    memcpy(removed.node, "other", 5);
    int rc = ss_mem__assign(r, NULL, &removed);
    if (rc != SS_OK)
        return rc;
    r->rev = ++m->rev;
    ss_change c = {.type = SS_CHANGE_DELETE, .key = k, .version = removed};
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
