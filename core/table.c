/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* table.c - intrusive chained hash table; see table.h. */
#include "table.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "errors.h"
#include "siphash.h"

#define SS_TABLE_MIN 16

int ss_table_init(ss_table *t)
{
    memset(t, 0, sizeof *t);
    if (getrandom(t->key, sizeof t->key, 0) != (ssize_t)sizeof t->key)
        return SS_E_IO;
    t->buckets = calloc(SS_TABLE_MIN, sizeof *t->buckets);
    if (t->buckets == NULL)
        return SS_E_NOMEM;
    t->mask = SS_TABLE_MIN - 1;
    return SS_OK;
}

void ss_table_free(ss_table *t)
{
    free(t->buckets);
    t->buckets = NULL;
    t->count = 0;
}

uint64_t ss_table_hash(const ss_table *t, const uint8_t *data, size_t len)
{
    return ss_siphash13(t->key, data, len);
}

uint64_t ss_table_hash_parts(const ss_table *t, const ss_bytes *parts, size_t n)
{
    return ss_siphash13_parts(t->key, parts, n);
}

uint64_t ss_table_hash2(const ss_table *t, const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen)
{
    ss_bytes parts[2] = {{a, alen}, {b, blen}};
    return ss_table_hash_parts(t, parts, 2);
}

/* Rehash every node into n buckets (a power of two). If the new array
 * cannot be had, the table stays as it is: only its chains' lengths
 * depend on the bucket count. */
static void ss_table__resize(ss_table *t, size_t n)
{
    ss_table_node **nb = calloc(n, sizeof *nb);
    if (nb == NULL)
        return;
    for (size_t i = 0; i <= t->mask; i++) {
        ss_table_node *e = t->buckets[i];
        while (e) {
            ss_table_node *next = e->next;
            size_t j = (size_t)e->hash & (n - 1);
            e->next = nb[j];
            nb[j] = e;
            e = next;
        }
    }
    free(t->buckets);
    t->buckets = nb;
    t->mask = n - 1;
}

void ss_table_insert(ss_table *t, ss_table_node *n, uint64_t h)
{
    if (t->count >= t->mask + 1)
        ss_table__resize(t, (t->mask + 1) * 2);
    n->hash = h;
    size_t i = (size_t)h & t->mask;
    n->next = t->buckets[i];
    t->buckets[i] = n;
    t->count++;
}

void ss_table_remove(ss_table *t, ss_table_node *n)
{
    ss_table_node **p = &t->buckets[(size_t)n->hash & t->mask];
    while (*p && *p != n)
        p = &(*p)->next;
    if (*p) {
        *p = n->next;
        t->count--;
    }
    /* A burst over (a churn of keys, a flood of requests remembered):
     * its room goes back. Halved at one node per 8 buckets, the table is
     * then a quarter full, so a count that goes up and down near one size
     * does not make it grow and shrink in turn (it grows when full). */
    if (t->mask + 1 > SS_TABLE_MIN && t->count < (t->mask + 1) / 8)
        ss_table__resize(t, (t->mask + 1) / 2);
}

ss_table_node *ss_table_find(const ss_table *t, uint64_t h)
{
    ss_table_node *e = t->buckets[(size_t)h & t->mask];
    while (e && e->hash != h)
        e = e->next;
    return e;
}

ss_table_node *ss_table_next(const ss_table_node *n, uint64_t h)
{
    ss_table_node *e = n->next;
    while (e && e->hash != h)
        e = e->next;
    return e;
}
