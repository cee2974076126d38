/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* table.h - an intrusive hash table of nodes embedded in the caller's
 * structs.
 *
 * The table stores only the node and its 64-bit hash; the caller compares
 * its own keys while walking the nodes of one hash with ss_table_find /
 * ss_table_next. It never allocates nodes and never frees them; it owns only
 * its bucket array, which grows when the table is full and shrinks when it
 * is an eighth full (never below 16 buckets). Hashes should come from
 * ss_table_hash (keyed SipHash), so that clients cannot pick colliding
 * keys. */
#ifndef SS_TABLE_H
#define SS_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct ss_table_node {
    struct ss_table_node *next;
    uint64_t hash;
} ss_table_node;

typedef struct ss_table {
    ss_table_node **buckets;
    size_t mask; /* bucket count - 1 (a power of two) */
    size_t count;
    uint8_t key[16]; /* hash key */
} ss_table;

/* 0, SS_E_NOMEM or SS_E_IO (no randomness). */
int ss_table_init(ss_table *t);
void ss_table_free(ss_table *t);

uint64_t ss_table_hash(const ss_table *t, const uint8_t *data, size_t len);
/* Hash of several byte runs taken together, in one pass (lengths included,
 * so "ab"+"c" and "a"+"bc" differ). */
uint64_t ss_table_hash_parts(const ss_table *t, const ss_bytes *parts, size_t n);
/* The same for two runs. */
uint64_t ss_table_hash2(const ss_table *t, const uint8_t *a, size_t alen, const uint8_t *b,
                        size_t blen);

/* Insert n with hash h. Grows the bucket array when needed; if growing
 * fails the node is still inserted (chains get longer). */
void ss_table_insert(ss_table *t, ss_table_node *n, uint64_t h);
/* Unlink n, which must be in t. Shrinks the bucket array when it is
 * mostly empty, so a caller must not go on walking a chain (ss_table_next)
 * after removing a node of it. */
void ss_table_remove(ss_table *t, ss_table_node *n);
/* First / next node with hash h, or NULL. */
ss_table_node *ss_table_find(const ss_table *t, uint64_t h);
ss_table_node *ss_table_next(const ss_table_node *n, uint64_t h);

#endif
