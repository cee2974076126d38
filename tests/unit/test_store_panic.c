/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store_panic.c - LMDB stops an environment for good once the write
 * of its meta page failed (MDB_PANIC): every later transaction is
 * refused. The store opens its data file again and goes on from the last
 * checkpoint and the journal, as a restart would. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lmdb.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"
#include "store_crash.h"

/* The descriptor LMDB writes its meta pages through: the data file
 * opened for writing with O_DSYNC. -1 if there is none. */
static int meta_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int found = -1;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        char path[300], target[512], info[300], line[128];
        snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n < 9)
            continue;
        target[n] = '\0';
        if (strcmp(target + n - 9, "/data.mdb") != 0)
            continue;
        snprintf(info, sizeof info, "/proc/self/fdinfo/%s", de->d_name);
        FILE *f = fopen(info, "r");
        unsigned long flags = 0;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "flags: %lo", &flags) == 1)
                break;
        if (f)
            fclose(f);
        if (flags & O_DSYNC)
            found = atoi(de->d_name);
    }
    closedir(d);
    return found;
}

/* The child: a, b committed; then LMDB's meta writes fail. */
static int meta_failure_child(ss_store *s)
{
    if (store_crash_put(s, "a", 1) != SS_OK || store_crash_put(s, "b", 2) != SS_OK)
        return 3;
    int fd = meta_fd();
    if (fd < 0 || store_crash_fail_syscall(__NR_pwrite64, fd, EIO) != 0)
        return 4;
    /* The checkpoint that carries "c" fails on the meta page: LMDB stops
     * that environment; "c" goes into the journal instead. */
    ss_store_checkpoint_soon(s);
    if (store_crash_put(s, "c", 3) != SS_OK)
        return 5;
    if (strstr(ss_store_cause(s), "the data file was opened again") == NULL)
        return 6;
    if (store_crash_put(s, "d", 4) != SS_OK)
        return 7;
    /* The data file opened again takes checkpoints (once the failed
     * one's backoff has passed: an hour later here). */
    ss_store_checkpoint_soon(s);
    if (store_crash_put(s, "e", 7200000) != SS_OK || ss_store_journal_bytes(s) != 0)
        return 8;
    if (store_crash_put(s, "f", 7200001) != SS_OK)
        return 9;
    return 0;
}

TEST(store_meta_write_failure_opens_the_data_file_again)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.checkpoint_interval_ms = 3600000;
    o.path = test_tmpdir();
    const char *keys[] = {"a", "b", "c", "d", "e", "f"};
    store_crash_then_check(&o, meta_failure_child, keys, 6);
}

/* The child: x put, then deleted, each its own batch; a crash. */
static int put_then_delete_child(ss_store *s)
{
    if (store_crash_put(s, "x", 1) != SS_OK || ss_store_begin(s) != SS_OK)
        return 3;
    ss_bytes x = {(const uint8_t *)"x", 1};
    if (ss_store_del(s, x) != SS_OK || ss_store_commit(s, 1002) != SS_OK)
        return 4;
    return 0;
}

/* Set the data file's record of the last frame it holds to seq. */
static void set_file_mark(const char *dir, uint64_t seq)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta;
    ASSERT_EQ(mdb_env_create(&env), 0);
    ASSERT_EQ(mdb_env_set_maxdbs(env, 3), 0);
    ASSERT_EQ(mdb_env_open(env, dir, MDB_NOLOCK, 0600), 0);
    ASSERT_EQ(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ASSERT_EQ(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    uint8_t j[8];
    for (int i = 0; i < 8; i++)
        j[i] = (uint8_t)(seq >> (56 - 8 * i));
    MDB_val k = {7, "journal"}, v = {8, j};
    ASSERT_EQ(mdb_put(txn, meta, &k, &v, 0), 0);
    ASSERT_EQ(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

/* A checkpoint whose meta page write reported a failure may have reached
 * the disk all the same (after a power loss, before LMDB's rewrite of the
 * old page did): the file then holds the checkpoint's batch, and so does
 * the journal's frame after the file's mark, written when the checkpoint
 * failed. The open replays that batch over the file; a deletion of a key
 * that is gone then is no damage (it was refused as corrupt, and the store
 * would not open). Made by hand: the journal of two batches (x put, x
 * deleted), the file checkpointed after both, its mark set back to one. */
TEST(store_replay_of_a_batch_the_file_holds_already)
{
    const char *dir = test_tmpdir();
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.checkpoint_interval_ms = 3600000;
    o.path = dir;
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        ss_store *s = NULL;
        _exit(ss_store_open(&o, &s) != SS_OK ? 2 : put_then_delete_child(s)); /* a crash */
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char path[600];
    snprintf(path, sizeof path, "%s/journal", dir);
    uint8_t journal[4096];
    FILE *f = fopen(path, "rb");
    ASSERT_TRUE(f != NULL);
    size_t n = fread(journal, 1, sizeof journal, f);
    fclose(f);
    ASSERT_TRUE(n > 0 && n < sizeof journal);
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK); /* replays both, checkpoints at the close */
    ss_store_close(s);
    f = fopen(path, "wb");
    ASSERT_TRUE(f != NULL && fwrite(journal, 1, n, f) == n);
    fclose(f);
    set_file_mark(dir, 1);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record got;
    ss_bytes x = {(const uint8_t *)"x", 1};
    ASSERT_EQ(ss_store_get(s, x, &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_key_count(s), 0);
    ss_store_abort(s);
    ss_store_close(s);
}
