/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_table.c - the intrusive hash table (core/table.h): every node
 * found while it grows and shrinks, and its bucket array following the
 * count both ways. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"
#include "../../core/table.h"
#include "../test.h"

struct tnode {
    ss_table_node node;
    int id;
};

static uint64_t thash(const ss_table *t, int id)
{
    return ss_table_hash(t, (const uint8_t *)&id, sizeof id);
}

static struct tnode *tfind(const ss_table *t, int id)
{
    uint64_t h = thash(t, id);
    for (ss_table_node *n = ss_table_find(t, h); n; n = ss_table_next(n, h))
        if (((struct tnode *)n)->id == id)
            return (struct tnode *)n;
    return NULL;
}

TEST(table_grows_and_shrinks_with_its_count)
{
    enum { N = 10000 };
    ss_table t;
    ASSERT_EQ(ss_table_init(&t), SS_OK);
    ASSERT_EQ(t.mask + 1, 16);
    struct tnode *nodes = calloc(N, sizeof *nodes);
    ASSERT_TRUE(nodes != NULL);
    for (int i = 0; i < N; i++) {
        nodes[i].id = i;
        ss_table_insert(&t, &nodes[i].node, thash(&t, i));
    }
    ASSERT_EQ(t.count, N);
    ASSERT_EQ(t.mask + 1, 16384); /* grown when full: 16 -> 16384 */
    /* Down to 100: halved each time it was an eighth full. */
    for (int i = 100; i < N; i++)
        ss_table_remove(&t, &nodes[i].node);
    ASSERT_EQ(t.count, 100);
    ASSERT_EQ(t.mask + 1, 512);
    for (int i = 0; i < N; i++)
        ASSERT_TRUE(tfind(&t, i) == (i < 100 ? &nodes[i] : NULL));
    /* Up and down across one size: it does not move. From 512 buckets it
     * grows at 512 nodes and shrinks below 64. */
    for (int round = 0; round < 3; round++) {
        for (int i = 100; i < 500; i++)
            ss_table_insert(&t, &nodes[i].node, thash(&t, i));
        ASSERT_EQ(t.mask + 1, 512);
        for (int i = 100; i < 500; i++)
            ss_table_remove(&t, &nodes[i].node);
        ASSERT_EQ(t.mask + 1, 512);
    }
    /* Empty: never below its first size, and it takes nodes again. */
    for (int i = 0; i < 100; i++)
        ss_table_remove(&t, &nodes[i].node);
    ASSERT_EQ(t.count, 0);
    ASSERT_EQ(t.mask + 1, 16);
    ss_table_insert(&t, &nodes[7].node, thash(&t, 7));
    ASSERT_TRUE(tfind(&t, 7) == &nodes[7]);
    ASSERT_TRUE(tfind(&t, 8) == NULL);
    ss_table_free(&t);
    free(nodes);
}
