/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* keyset.c - the keys an import has taken so far: a key given twice is
 * refused (on LMDB the later line silently replaced the earlier, on etcd
 * a Txn holding both was refused with etcd's own words). */
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "cli.h"

struct keyset_entry {
    ss_table_node node;
    struct keyset_entry *older;
    size_t len;
    uint8_t key[];
};

int keyset_init(struct keyset *k)
{
    k->newest = NULL;
    return ss_table_init(&k->table);
}

int keyset_add(struct keyset *k, ss_bytes key)
{
    uint64_t h = ss_table_hash(&k->table, key.data, key.len);
    for (ss_table_node *n = ss_table_find(&k->table, h); n; n = ss_table_next(n, h)) {
        const struct keyset_entry *e = (const struct keyset_entry *)n;
        if (e->len == key.len && memcmp(e->key, key.data, key.len) == 0)
            return 1;
    }
    struct keyset_entry *e = malloc(sizeof *e + key.len);
    if (e == NULL)
        return SS_E_NOMEM;
    e->len = key.len;
    memcpy(e->key, key.data, key.len);
    e->older = k->newest;
    k->newest = e;
    ss_table_insert(&k->table, &e->node, h);
    return 0;
}

void keyset_free(struct keyset *k)
{
    for (struct keyset_entry *e = k->newest, *older; e; e = older) {
        older = e->older;
        free(e);
    }
    k->newest = NULL;
    ss_table_free(&k->table);
}
