/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* dedup.c - recent answers by (client, correlation data, identity hash).
 *
 * Entries sit in a hash table and on one list in insertion order, which is
 * also time order: expiry and eviction take from the head, forgetting a
 * failed batch takes from the tail.
 *
 * Memory: since entries go in that order, they are cut from blocks one
 * after the other, and a block is freed once its last entry is gone. One
 * allocation per block, not per answer: an answer lives for the window
 * (seconds), and thousands of such chunks a second, each freed long after
 * the requests around it, fragmented the C library's heap and made the
 * broker's own allocations slower. One emptied block is kept as a spare.
 * An entry larger than SS_DEDUP_SOLO gets an allocation of its own (a
 * client picks the size of its correlation data), so that the room left
 * unused at the end of a block stays below 1/16 of it.
 */
#include "dedup.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "table.h"

#define SS_DEDUP_BLOCK ((size_t)64 << 10)
#define SS_DEDUP_SOLO (SS_DEDUP_BLOCK / 16)

struct ss_dblock {
    struct ss_dblock *next; /* the next newer block */
    size_t cap, used;       /* bytes of data */
    size_t live;            /* entries in it */
    bool solo;              /* one large entry, not on the list of blocks */
    _Alignas(max_align_t) uint8_t data[];
};

struct ss_dentry {
    ss_table_node node;
    struct ss_dentry *next, *prev;
    struct ss_dblock *block;
    uint64_t seq, at_ms;
    bool final;
    size_t client_len, corr_len, payload_len, version_len;
    uint8_t bytes[]; /* client, corr, payload, version */
};

struct ss_dedup {
    ss_dedup_limits lim;
    ss_table table;
    struct ss_dentry *head, *tail;
    struct ss_dblock *oldest, *newest, *spare;
    uint64_t seq;
    size_t bytes;
};

int ss_dedup_new(const ss_dedup_limits *lim, ss_dedup **out)
{
    ss_dedup *d = calloc(1, sizeof *d);
    if (d == NULL)
        return SS_E_NOMEM;
    d->lim = *lim;
    int rc = ss_table_init(&d->table);
    if (rc != SS_OK) {
        free(d);
        return rc;
    }
    *out = d;
    return SS_OK;
}

static size_t ss_dedup__entry_size(const struct ss_dentry *e)
{
    return sizeof *e + e->client_len + e->corr_len + e->payload_len + e->version_len;
}

/* An entry's footprint in its block: its size rounded up so that the
 * next entry is aligned. */
static size_t ss_dedup__footprint(size_t size)
{
    size_t a = _Alignof(max_align_t);
    return (size + a - 1) / a * a;
}

/* Room for an entry of size bytes at the end of the newest block, in a
 * new block, or NULL. */
static struct ss_dentry *ss_dedup__cut(ss_dedup *d, size_t size)
{
    size_t need = ss_dedup__footprint(size);
    struct ss_dblock *b = d->newest;
    if (need > SS_DEDUP_SOLO) {
        b = malloc(sizeof *b + need);
        if (b == NULL)
            return NULL;
        b->cap = b->used = need;
        b->live = 1;
        b->solo = true;
        struct ss_dentry *e = (struct ss_dentry *)b->data;
        e->block = b;
        return e;
    }
    if (b == NULL || b->cap - b->used < need) {
        if (d->spare) {
            b = d->spare;
            d->spare = NULL;
        } else {
            b = malloc(sizeof *b + SS_DEDUP_BLOCK);
            if (b == NULL)
                return NULL;
            b->cap = SS_DEDUP_BLOCK;
            b->solo = false;
        }
        b->used = 0;
        b->live = 0;
        b->next = NULL;
        if (d->newest)
            d->newest->next = b;
        else
            d->oldest = b;
        d->newest = b;
    }
    struct ss_dentry *e = (struct ss_dentry *)(b->data + b->used);
    b->used += need;
    b->live++;
    e->block = b;
    return e;
}

/* An entry leaves its block. Entries leave from either end of the time
 * order, and a failed batch's from the middle (its final answers stay,
 * and with several flights so do a later flight's): an emptied block may
 * be anywhere on the chain. */
static void ss_dedup__release(ss_dedup *d, struct ss_dentry *e)
{
    struct ss_dblock *b = e->block;
    if (b->solo) {
        free(b);
        return;
    }
    if ((uint8_t *)e + ss_dedup__footprint(ss_dedup__entry_size(e)) == b->data + b->used)
        b->used = (size_t)((uint8_t *)e - b->data); /* the newest entry: reuse its room */
    if (--b->live > 0)
        return;
    if (b == d->oldest) {
        d->oldest = b->next;
        if (d->oldest == NULL)
            d->newest = NULL;
    } else {
        struct ss_dblock *p = d->oldest;
        while (p->next != b)
            p = p->next;
        p->next = b->next;
        if (d->newest == b)
            d->newest = p;
    }
    if (d->spare == NULL)
        d->spare = b;
    else
        free(b);
}

static void ss_dedup__drop(ss_dedup *d, struct ss_dentry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        d->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        d->tail = e->prev;
    ss_table_remove(&d->table, &e->node);
    d->bytes -= ss_dedup__entry_size(e);
    ss_dedup__release(d, e);
}

void ss_dedup_free(ss_dedup *d)
{
    if (d == NULL)
        return;
    while (d->head)
        ss_dedup__drop(d, d->head);
    free(d->spare);
    ss_table_free(&d->table);
    free(d);
}

uint64_t ss_dedup_id(const ss_dedup *d, ss_bytes client, ss_bytes corr, const ss_bytes *parts,
                     size_t n)
{
    ss_bytes all[2 + SS_DEDUP_MAX_PARTS] = {client, corr};
    if (n > SS_DEDUP_MAX_PARTS)
        n = SS_DEDUP_MAX_PARTS;
    if (n) /* parts may be NULL when there are none */
        memcpy(all + 2, parts, n * sizeof *parts);
    return ss_table_hash_parts(&d->table, all, 2 + n);
}

int ss_dedup_find(ss_dedup *d, ss_bytes client, ss_bytes corr, uint64_t id, uint64_t now_ms,
                  ss_dedup_answer *out)
{
    for (ss_table_node *n = ss_table_find(&d->table, id); n; n = ss_table_next(n, id)) {
        struct ss_dentry *e = (struct ss_dentry *)n;
        if (e->client_len != client.len || e->corr_len != corr.len ||
            memcmp(e->bytes, client.data, client.len) != 0 ||
            memcmp(e->bytes + client.len, corr.data, corr.len) != 0)
            continue;
        /* Past its window, it may have been run again and remembered
         * again: a newer entry of the same request may follow (a
         * resize reverses the order of a chain). */
        if (now_ms >= e->at_ms && now_ms - e->at_ms >= d->lim.window_ms)
            continue;
        const uint8_t *p = e->bytes + e->client_len + e->corr_len;
        out->payload.data = p;
        out->payload.len = e->payload_len;
        out->version.data = p + e->payload_len;
        out->version.len = e->version_len;
        out->seq = e->seq;
        out->final = e->final;
        return 1;
    }
    return 0;
}

int ss_dedup_put(ss_dedup *d, ss_bytes client, ss_bytes corr, uint64_t id, uint64_t now_ms,
                 const ss_dedup_answer *a)
{
    size_t data = client.len + corr.len + a->payload.len + a->version.len;
    size_t size = sizeof(struct ss_dentry) + data;
    if (size > d->lim.max_bytes || d->lim.max_entries == 0)
        return SS_OK;
    /* Make room: the oldest entries go first. */
    while (d->head && (d->table.count >= d->lim.max_entries || d->bytes + size > d->lim.max_bytes))
        ss_dedup__drop(d, d->head);
    struct ss_dentry *e = ss_dedup__cut(d, size);
    if (e == NULL)
        return SS_E_NOMEM;
    e->seq = ++d->seq;
    e->at_ms = now_ms;
    e->final = a->final;
    e->client_len = client.len;
    e->corr_len = corr.len;
    e->payload_len = a->payload.len;
    e->version_len = a->version.len;
    uint8_t *p = e->bytes;
    const ss_bytes parts[4] = {client, corr, a->payload, a->version};
    for (int i = 0; i < 4; i++) {
        if (parts[i].len)
            memcpy(p, parts[i].data, parts[i].len);
        p += parts[i].len;
    }
    e->next = NULL;
    e->prev = d->tail;
    if (d->tail)
        d->tail->next = e;
    else
        d->head = e;
    d->tail = e;
    d->bytes += ss_dedup__entry_size(e);
    ss_table_insert(&d->table, &e->node, id);
    return SS_OK;
}

void ss_dedup_expire(ss_dedup *d, uint64_t now_ms)
{
    while (d->head && now_ms >= d->head->at_ms && now_ms - d->head->at_ms >= d->lim.window_ms)
        ss_dedup__drop(d, d->head);
}

uint64_t ss_dedup_mark(const ss_dedup *d)
{
    return d->seq;
}

void ss_dedup_forget_since(ss_dedup *d, uint64_t mark)
{
    ss_dedup_forget_range(d, mark, UINT64_MAX);
}

void ss_dedup_forget_range(ss_dedup *d, uint64_t after, uint64_t upto)
{
    /* The list is in the order entries were remembered: from the newest
     * back to the first of the range. */
    for (struct ss_dentry *e = d->tail, *prev; e && e->seq > after; e = prev) {
        prev = e->prev;
        if (e->seq <= upto && !e->final)
            ss_dedup__drop(d, e);
    }
}

size_t ss_dedup_count(const ss_dedup *d)
{
    return d->table.count;
}

size_t ss_dedup_bytes(const ss_dedup *d)
{
    return d->bytes;
}
