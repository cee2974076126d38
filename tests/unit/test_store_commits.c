/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store_commits.c - the store's batches committed and kept:
 * persistence across a reopen, a commit on another thread, periodic syncs
 * (the store's own and its owner's), the lock on the data directory, and
 * options it cannot open with. */
#include <pthread.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>

#include <lmdb.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"
#include "store_fixture.h"

static void assert_clock(const ss_store *s, uint64_t want_wall, uint32_t want_counter)
{
    uint64_t wall;
    uint32_t counter;
    ss_store_get_clock(s, &wall, &counter);
    ASSERT_EQ(wall, want_wall);
    ASSERT_EQ(counter, want_counter);
}

TEST(store_persistence)
{
    ss_store_options o = ss_store_options_default();
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record a = rec_of(B("alpha"), 1000, 1);
    a.has_ft = true;
    a.ft = a.version;
    a.expiry_ms = 99999;
    ss_record b = rec_of(B("beta"), 1000, 2);
    put(s, B("a"), &a);
    put(s, B("b"), &b);
    ASSERT_EQ(ss_store_set_clock(s, 1000, 2), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 0), SS_OK);
    /* An aborted batch leaves nothing. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record c = rec_of(B("gamma"), 1000, 3);
    put(s, B("c"), &c);
    ASSERT_EQ(ss_store_del(s, B("a")), SS_OK);
    ss_store_set_clock(s, 1000, 3);
    ss_store_abort(s);
    uint64_t bytes = ss_store_byte_count(s);
    ss_store_close(s);

    s = open_store(&o);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ASSERT_EQ(ss_store_byte_count(s), bytes);
    assert_clock(s, 1000, 2);
    ASSERT_EQ(ss_store_next_expiry(s), 99999);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record got;
    ASSERT_EQ(ss_store_get(s, B("a"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "alpha");
    ASSERT_EQ(got.version.counter, 1);
    ASSERT_TRUE(got.has_ft);
    ASSERT_EQ(ss_hlc_compare(&got.ft, &a.version), 0);
    ASSERT_EQ(got.expiry_ms, 99999);
    ASSERT_EQ(ss_store_get(s, B("b"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "beta");
    ASSERT_EQ(ss_store_get(s, B("c"), &got), SS_E_NOTFOUND);
    ss_store_close(s);
}

TEST(store_periodic_sync_and_bad_options)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.sync_interval_ms = 50;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_options_get(s)->sync_interval_ms, 50);
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        ss_record r = rec_of(B("v"), 1, (uint32_t)i);
        put(s, B("k"), &r);
        ASSERT_EQ(ss_store_commit(s, (uint64_t)i * 20), SS_OK);
    }
    ASSERT_EQ(ss_store_flush(s, 1000), SS_OK);
    ss_store_close(s);

    ss_store_options bad = ss_store_options_default();
    ss_store *t = NULL;
    ASSERT_EQ(ss_store_open(&bad, &t), SS_E_INVAL); /* no path */
    bad.path = "/proc/definitely/not/here";
    ASSERT_EQ(ss_store_open(&bad, &t), SS_E_IO);
    ASSERT_TRUE(t == NULL);
}

static void *commit_thread(void *arg)
{
    static int rc;
    rc = ss_store_commit_run(arg);
    return &rc;
}

/* Group commit: a batch prepared on one thread and written on another;
 * the store refuses every use in between, and a failure rolls back. */
TEST(store_commit_on_another_thread)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_ALWAYS;
    ss_store *s = open_store(&o);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_TRUE(!ss_store_batch_dirty(s));
    ss_record r;
    ASSERT_EQ(ss_store_get(s, B("k"), &r), SS_E_NOTFOUND);
    ASSERT_TRUE(!ss_store_batch_dirty(s)); /* a read costs no sync */
    ss_record a = rec_of(B("value"), 2000, 1);
    put(s, B("k"), &a);
    ASSERT_EQ(ss_store_set_clock(s, 2000, 1), SS_OK);
    ASSERT_TRUE(ss_store_batch_dirty(s));
    uint64_t bytes = ss_store_byte_count(s);
    ASSERT_EQ(ss_store_commit_prepare(s, 0, false), SS_OK);
    ASSERT_TRUE(!ss_store_in_batch(s));
    ASSERT_EQ(ss_store_begin(s), SS_E_BUSY);
    ASSERT_EQ(ss_store_get(s, B("k"), &r), SS_E_BUSY);
    ASSERT_EQ(ss_store_put(s, B("x"), &a), SS_E_BUSY);
    ASSERT_EQ(ss_store_commit_prepare(s, 0, false), SS_E_BUSY);
    ASSERT_EQ(ss_store_key_count(s), 1);
    ASSERT_EQ(ss_store_byte_count(s), bytes);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, commit_thread, s), 0);
    void *res;
    pthread_join(t, &res);
    ASSERT_EQ(*(int *)res, SS_OK);
    ASSERT_EQ(ss_store_commit_finish(s, *(int *)res, 0), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("k"), &r), SS_OK);
    ASSERT_MEM(r.value.data, r.value.len, "value", 5);
    /* A commit that failed leaves the counts and clock of the last one. */
    ss_record b = rec_of(B("longer value"), 2000, 2);
    put(s, B("k2"), &b);
    ASSERT_EQ(ss_store_set_clock(s, 2000, 2), SS_OK);
    ASSERT_EQ(ss_store_commit_prepare(s, 0, false), SS_OK);
    ss_store_abort(s); /* no effect while committing */
    ASSERT_EQ(ss_store_commit_run(s), SS_OK);
    ASSERT_EQ(ss_store_commit_finish(s, SS_E_IO, 0), SS_E_IO);
    ASSERT_EQ(ss_store_byte_count(s), bytes);
    assert_clock(s, 2000, 1);
    ss_store_close(s);
}

static void *sync_thread(void *arg)
{
    static int rc;
    rc = ss_store_sync_run(arg);
    return &rc;
}

static void commit_one(ss_store *s, uint32_t n, uint64_t now)
{
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record r = rec_of(B("v"), 1, n);
    put(s, B("k"), &r);
    ASSERT_EQ(ss_store_commit(s, now), SS_OK);
}

/* The periodic sync run by the owner, on another thread, while the store
 * goes on committing: due only when something was committed and the
 * interval has passed; a failed sync is due again. */
TEST(store_external_periodic_sync)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.sync_interval_ms = 50;
    o.external_sync = true;
    o.checkpoint_interval_ms = 1000000; /* a checkpoint would sync everything */
    ss_store *s = open_store(&o);
    ASSERT_TRUE(!ss_store_sync_start(s, 1000)); /* nothing committed */
    commit_one(s, 1, 1000);
    ASSERT_TRUE(ss_store_sync_start(s, 1000));
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, sync_thread, s), 0);
    commit_one(s, 2, 1010); /* while the sync runs */
    void *res;
    pthread_join(t, &res);
    ASSERT_EQ(*(int *)res, SS_OK);
    ss_store_sync_done(s, SS_OK);
    ASSERT_TRUE(!ss_store_sync_start(s, 1040)); /* the interval has not passed */
    ASSERT_TRUE(ss_store_sync_start(s, 1050));  /* the commit during the sync */
    ss_store_sync_done(s, SS_E_IO);
    ASSERT_TRUE(!ss_store_sync_start(s, 1060));
    ASSERT_TRUE(ss_store_sync_start(s, 1100)); /* syncs go on */
    ASSERT_EQ(ss_store_sync_run(s), SS_OK);
    ss_store_sync_done(s, SS_OK);
    ASSERT_TRUE(!ss_store_sync_start(s, 1100)); /* not again in the same millisecond */
    /* ...but after a failure only a checkpoint covers the earlier writes
     * (test_journal_checkpoints.c: store_failed_fsync_needs_a_checkpoint). */
    ASSERT_TRUE(!ss_store_all_synced(s));
    ASSERT_TRUE(ss_store_checkpoint_due(s, 1100));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 1100), SS_OK);
    ASSERT_TRUE(ss_store_all_synced(s));
    ASSERT_TRUE(!ss_store_sync_start(s, 5000)); /* everything is synced */
    ss_store_close(s);
}

/* One process per data directory; the lock goes with the store. */
TEST(store_directory_lock)
{
    ss_store_options o = ss_store_options_default();
    ss_store *s = open_store(&o);
    ss_store *second = NULL;
    ASSERT_EQ(ss_store_open(&o, &second), SS_E_BUSY);
    ASSERT_TRUE(second == NULL);
    ss_store_close(s);
    ASSERT_EQ(ss_store_open(&o, &second), SS_OK);
    ss_store_close(second);
}

/* A store of a format this build does not read (a newer plugin's) is
 * refused, untouched, with a cause that says so: it said "stored record
 * is corrupt" and a stale errno's text ("No such file or directory"). */
TEST(store_of_another_format_is_refused_saying_so)
{
    ss_store_options o = ss_store_options_default();
    ss_store *s = open_store(&o);
    ss_store_close(s);
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_set_maxdbs(env, 3), 0);
    ASSERT_EQ(mdb_env_open(env, test_tmpdir(), MDB_NOLOCK, 0600), 0);
    ASSERT_EQ(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ASSERT_EQ(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    uint8_t two[4] = {0, 0, 0, 2};
    MDB_val k = {6, (void *)"format"}, v = {4, two};
    ASSERT_EQ(mdb_put(txn, meta, &k, &v, 0), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    char cause[256] = "";
    o.open_cause = cause;
    o.open_cause_len = sizeof cause;
    s = NULL;
    errno = ENOENT; /* what a failed look-up may leave behind */
    ASSERT_EQ(ss_store_open(&o, &s), SS_E_CORRUPT);
    ASSERT_TRUE(s == NULL);
    ASSERT_STR(cause, strlen(cause), "the store is of format 2, and this plugin reads format 1");
    ASSERT_EQ(errno, 0);
}

