/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* deadlines.c - the keys' deadlines a broker knows: see deadlines.h. */
#include "deadlines.h"

#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"

int ss_etcd_deadlines_init(ss_etcd_deadlines *d)
{
    memset(d, 0, sizeof *d);
    return ss_table_init(&d->table);
}

void ss_etcd_deadlines_free(ss_etcd_deadlines *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->heap[i]);
    free(d->heap);
    ss_table_free(&d->table);
    memset(d, 0, sizeof *d);
}

/* ---- the heap ----------------------------------------------------------- */

static void ss_etcd_deadlines__place(ss_etcd_deadlines *d, size_t i, ss_etcd_deadline *x)
{
    d->heap[i] = x;
    x->slot = i;
}

static void ss_etcd_deadlines__up(ss_etcd_deadlines *d, size_t i)
{
    ss_etcd_deadline *x = d->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (d->heap[parent]->at <= x->at)
            break;
        ss_etcd_deadlines__place(d, i, d->heap[parent]);
        i = parent;
    }
    ss_etcd_deadlines__place(d, i, x);
}

static void ss_etcd_deadlines__down(ss_etcd_deadlines *d, size_t i)
{
    ss_etcd_deadline *x = d->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= d->n)
            break;
        if (child + 1 < d->n && d->heap[child + 1]->at < d->heap[child]->at)
            child++;
        if (x->at <= d->heap[child]->at)
            break;
        ss_etcd_deadlines__place(d, i, d->heap[child]);
        i = child;
    }
    ss_etcd_deadlines__place(d, i, x);
}

/* x's at changed: back to its place. */
static void ss_etcd_deadlines__fix(ss_etcd_deadlines *d, ss_etcd_deadline *x)
{
    size_t i = x->slot;
    ss_etcd_deadlines__up(d, i);
    if (x->slot == i)
        ss_etcd_deadlines__down(d, i);
}

/* ---- entries ------------------------------------------------------------- */

ss_etcd_deadline *ss_etcd_deadlines_find(const ss_etcd_deadlines *d, ss_bytes key)
{
    uint64_t h = ss_table_hash(&d->table, key.data, key.len);
    for (ss_table_node *n = ss_table_find(&d->table, h); n; n = ss_table_next(n, h)) {
        ss_etcd_deadline *x = (ss_etcd_deadline *)n;
        if (x->key_len == key.len && (key.len == 0 || memcmp(x->key, key.data, key.len) == 0))
            return x;
    }
    return NULL;
}

ss_etcd_deadline *ss_etcd_deadlines_first(const ss_etcd_deadlines *d)
{
    return d->n ? d->heap[0] : NULL;
}

void ss_etcd_deadlines_defer(ss_etcd_deadlines *d, ss_etcd_deadline *x, uint64_t at)
{
    x->at = at;
    ss_etcd_deadlines__fix(d, x);
}

void ss_etcd_deadlines_drop(ss_etcd_deadlines *d, ss_etcd_deadline *x)
{
    size_t i = x->slot;
    ss_table_remove(&d->table, &x->node);
    d->n--;
    if (i < d->n) {
        ss_etcd_deadlines__place(d, i, d->heap[d->n]);
        ss_etcd_deadlines__fix(d, d->heap[i]);
    }
    free(x);
    /* A burst of deadlines over: its room goes, half of it each time a
     * quarter is in use (so that a count going up and down near one size
     * does not move the array each time), down to 64 slots. */
    if (d->cap > 64 && d->n < d->cap / 4) {
        ss_etcd_deadline **heap = realloc(d->heap, d->cap / 2 * sizeof *heap);
        if (heap != NULL) { /* if not, the larger array serves as well */
            d->heap = heap;
            d->cap /= 2;
        }
    }
}

int ss_etcd_deadlines_learn(ss_etcd_deadlines *d, ss_bytes key, int64_t rev, uint64_t deadline, uint64_t at)
{
    ss_etcd_deadline *x = ss_etcd_deadlines_find(d, key);
    if (x) {
        if (x->rev > rev)
            return SS_OK; /* known from later */
        if (x->rev == rev && x->deadline == deadline && x->at <= at)
            return SS_OK; /* the same news again (a commit, then its watch event): the earlier sweep stands */
        if (deadline == 0) {
            ss_etcd_deadlines_drop(d, x);
            return SS_OK;
        }
        x->rev = rev;
        x->deadline = deadline;
        ss_etcd_deadlines_defer(d, x, at);
        return SS_OK;
    }
    if (deadline == 0)
        return SS_OK;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        ss_etcd_deadline **heap = realloc(d->heap, cap * sizeof *heap);
        if (heap == NULL)
            return SS_E_NOMEM;
        d->heap = heap;
        d->cap = cap;
    }
    x = malloc(sizeof *x + key.len);
    if (x == NULL)
        return SS_E_NOMEM;
    x->deadline = deadline;
    x->at = at;
    x->rev = rev;
    x->key_len = key.len;
    if (key.len)
        memcpy(x->key, key.data, key.len);
    ss_table_insert(&d->table, &x->node, ss_table_hash(&d->table, key.data, key.len));
    ss_etcd_deadlines__place(d, d->n++, x);
    ss_etcd_deadlines__up(d, x->slot);
    return SS_OK;
}
