/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store_quotas.c - the store's quotas: of keys, of bytes, and of the
 * LMDB map, whose filling undoes the whole batch, or fails a checkpoint,
 * with the quota error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"
#include "store_fixture.h"

TEST(store_quota_keys)
{
    ss_store_options o = ss_store_options_default();
    o.max_keys = 3;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(B("v"), 1, 0);
    put(s, B("k1"), &r);
    put(s, B("k2"), &r);
    put(s, B("k3"), &r);
    ASSERT_EQ(ss_store_put(s, B("k4"), &r), SS_E_QUOTA);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("k4"), &got), SS_E_NOTFOUND);
    put(s, B("k3"), &r); /* replacing is not a new key */
    ASSERT_EQ(ss_store_del(s, B("k1")), SS_OK);
    put(s, B("k4"), &r);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 3);
    ss_store_close(s);
}

TEST(store_quota_bytes)
{
    ss_store_options o = ss_store_options_default();
    o.max_bytes = 10000;
    ss_store *s = open_store(&o);
    static uint8_t big[4000];
    memset(big, 'x', sizeof big);
    ss_bytes bigv = {big, sizeof big};
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(bigv, 1, 0);
    put(s, B("a"), &r); /* 4065 charged */
    put(s, B("b"), &r); /* 8130 */
    uint64_t before = ss_store_byte_count(s);
    ASSERT_EQ(before, 2 * (1 + 4000 + SS_STORE_RECORD_CHARGE));
    ASSERT_EQ(ss_store_put(s, B("c"), &r), SS_E_QUOTA);
    ASSERT_EQ(ss_store_byte_count(s), before);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("c"), &got), SS_E_NOTFOUND);
    /* A smaller value fits; growing an existing key over the limit does not. */
    ss_record small = rec_of(B("s"), 2, 0);
    put(s, B("c"), &small);
    ss_bytes bigger = {big, 2000};
    ss_record grow = rec_of(bigger, 3, 0);
    ASSERT_EQ(ss_store_put(s, B("c"), &grow), SS_E_QUOTA);
    ASSERT_EQ(ss_store_get(s, B("c"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "s");
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_store_close(s);

    /* Lowering the quota below the data: shrinking writes still work. */
    o.max_bytes = 100;
    s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    put(s, B("a"), &small);
    ASSERT_EQ(ss_store_del(s, B("b")), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("new"), &small), SS_E_QUOTA);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_store_close(s);
}

/* If the LMDB map itself fills up, the whole batch is undone and the store
 * stays usable: nothing half-applied, no poisoned transaction. */
TEST(store_map_full_rolls_back_batch)
{
    ss_store_options o = ss_store_options_default();
    o.map_size = 1 << 20; /* 1 MiB map, far below the byte quota */
    o.max_bytes = (uint64_t)1 << 30;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record keep = rec_of(B("kept"), 1, 0);
    put(s, B("keep"), &keep);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);

    static uint8_t val[3000];
    memset(val, 'v', sizeof val);
    ss_bytes v = {val, sizeof val};
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    int rc = SS_OK, n = 0;
    while (rc == SS_OK && n < 10000) {
        char key[32];
        snprintf(key, sizeof key, "key%05d", n++);
        ss_record r = rec_of(v, 2, (uint32_t)n);
        rc = ss_store_put(s, B(key), &r);
    }
    ASSERT_EQ(rc, SS_E_QUOTA);
    ASSERT_TRUE(n > 10);
    /* The owner's log says what failed: the first failure, kept. */
    static const char cause[] = "a write to the open transaction: the LMDB map is full (map_size 1048576 bytes)";
    ASSERT_STR(ss_store_cause(s), strlen(ss_store_cause(s)), cause);
    /* The failed batch refuses further work and its commit fails. */
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("keep"), &got), SS_E_QUOTA);
    ASSERT_EQ(ss_store_commit(s, 0), SS_E_QUOTA);
    ASSERT_STR(ss_store_cause(s), strlen(ss_store_cause(s)), cause);
    ASSERT_EQ(ss_store_key_count(s), 1);
    /* The store goes on. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("key00000"), &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_get(s, B("keep"), &got), SS_OK);
    ss_record after = rec_of(B("after"), 3, 0);
    put(s, B("after"), &after);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    ss_store_close(s);

    s = open_store(&o);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ASSERT_EQ(ss_store_byte_count(s), 2 * SS_STORE_RECORD_CHARGE + 4 + 4 + 5 + 5);
    ss_store_close(s);
}

/* A checkpoint whose LMDB commit finds the map full (the commit itself
 * needs pages: the databases' roots, the free list) is the quota error,
 * as a write to a full map is, and says so. One value a page larger each
 * time, on a fresh store of a 256-page map: the batch goes into the
 * journal, then an idle checkpoint tries to put it into the file. Going a
 * page at a time, one size leaves room for the checkpoint's own records
 * but not for the commit. */
TEST(store_checkpoint_on_a_full_map_is_the_quota_error)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE); /* LMDB's page */
    size_t map = 256 * page;
    uint8_t *val = malloc(map);
    ASSERT_TRUE(val != NULL);
    memset(val, 'm', map);
    char what[256];
    snprintf(what, sizeof what,
             "checkpoint (writing the journal's changes into the data file): "
             "the LMDB map is full (map_size %zu bytes)",
             map);
    int seen = 0;
    for (size_t pages = 192; pages < 256; pages++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%zu", test_tmpdir(), pages);
        ss_store_options o = ss_store_options_default();
        o.path = dir;
        o.sync = SS_SYNC_PERIODIC;
        o.checkpoint_interval_ms = 3600000;
        o.map_size = map;
        o.max_bytes = (uint64_t)1 << 30;
        ss_store *s = NULL;
        ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
        ss_record r = rec_of((ss_bytes){val, pages * page}, 1, 0);
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        int rc = ss_store_put(s, B("k"), &r);
        if (rc == SS_OK)
            rc = ss_store_commit(s, 10);
        if (rc != SS_OK) { /* the batch itself no longer fits */
            ASSERT_EQ(rc, SS_E_QUOTA);
            ss_store_close(s);
            break;
        }
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        rc = ss_store_commit(s, 7200000); /* idle, two hours on: a checkpoint */
        if (strcmp(ss_store_cause(s), what) == 0) {
            ASSERT_EQ(rc, SS_E_QUOTA);
            ASSERT_TRUE(ss_store_checkpoint_failing(s, NULL));
            seen++;
        } else if (rc != SS_OK) {
            ASSERT_EQ(rc, SS_E_QUOTA); /* its own records did not fit */
        }
        ss_store_close(s);
    }
    ASSERT_TRUE(seen >= 1);
    free(val);
}
