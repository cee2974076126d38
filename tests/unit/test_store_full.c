/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store_full.c - the store on a full filesystem: a small tmpfs of the
 * test's own (in a private mount namespace), filled up after the store
 * opened. The journal's reserve keeps deletes going; a write that grows
 * the store, and a checkpoint, get the quota answer and say why. */
#define _GNU_SOURCE /* unshare */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../private_fs.h"
#include "../test.h"
#include "store_crash.h"

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

#define BIG ((size_t)200 << 10)

/* The store in dir, journaled (64 MiB at most), with no checkpoint but
 * those the test asks for. */
static ss_store_options options_in(const char *dir)
{
    ss_store_options o = ss_store_options_default();
    o.path = dir;
    o.sync = SS_SYNC_PERIODIC;
    o.checkpoint_interval_ms = 3600000;
    o.journal_max_bytes = (uint64_t)64 << 20;
    return o;
}

/* Open the store with o and commit a first frame (a small record), which
 * takes the journal's reserve (2 MiB beyond it); *r is that record, to
 * reuse. */
static ss_store *open_with_first_frame(const ss_store_options *o, ss_record *r)
{
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(o, &s), SS_OK);
    memset(r, 0, sizeof *r);
    r->value = B("small");
    r->version.wall = 1;
    r->version.node_len = 1;
    r->version.node[0] = 'N';
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("first"), r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 5), SS_OK);
    return s;
}

/* Batches of one 200 KiB value (keys k0, k1...) until one is refused,
 * which must be with the quota error: the reserve takes some, then one
 * needs it renewed. Returns how many were committed. */
static int commit_until_refused(ss_store *s, ss_record *r, char fill)
{
    static char value[BIG + 1];
    memset(value, fill, BIG);
    r->value = (ss_bytes){(const uint8_t *)value, BIG};
    int ok = 0, rc = SS_OK;
    for (int i = 0; i < 20 && rc == SS_OK; i++) {
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        ASSERT_EQ(ss_store_put(s, B(k), r), SS_OK);
        rc = ss_store_commit(s, 10 + (uint64_t)i);
        if (rc == SS_OK)
            ok++;
    }
    ASSERT_EQ(rc, SS_E_QUOTA);
    return ok;
}

/* Once the journal's reserve cannot be renewed, a write that grows the
 * store is refused with the quota error and its cause (the reserve's,
 * not the write's: the write never ran); a delete goes on in the reserve.
 * A checkpoint the full filesystem fails is the quota error too, with the
 * room left. */
TEST(store_full_filesystem_refuses_growth_and_checkpoints)
{
    char dir[4200], filler[4300];
    snprintf(dir, sizeof dir, "%s/fs", test_tmpdir());
    snprintf(filler, sizeof filler, "%s/filler", dir);
    private_tmpfs(dir, "16m", 0);
    ss_store_options o = options_in(dir);
    ss_record r;
    ss_store *s = open_with_first_frame(&o, &r);
    fill_filesystem(filler);
    int ok = commit_until_refused(s, &r, 'f');
    ASSERT_TRUE(ok >= 2 && ok < 10);
    ASSERT_TRUE(strcmp(ss_store_cause(s), "reserving journal space (a write that grows the store is "
                                          "refused; deletes go on): No space left on device") == 0);
    ASSERT_EQ(ss_store_key_count(s), ok + 1);
    /* A delete goes into the reserve. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_del(s, B("k0")), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 100), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), ok);
    /* An idle checkpoint, two hours on: the file cannot take the
     * journal's pages. */
    ASSERT_TRUE(ss_store_checkpoint_due(s, 7200000));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 7200000), SS_E_QUOTA);
    const char *cause = ss_store_cause(s);
    static const char what[] = "checkpoint (writing the journal's changes into the data file): "
                               "No space left on device (";
    ASSERT_STR(cause, strlen(what), what);
    ASSERT_TRUE(strstr(cause, " KiB free on the data directory's filesystem)") != NULL);
    ASSERT_TRUE(ss_store_checkpoint_failing(s, NULL));
    /* A checkpoint that fails for another reason than the disk (the file
     * size limit here: no page past the first 4 KiB can be written) says
     * so, full disk or not, and is an I/O error. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    ASSERT_TRUE(ss_store_checkpoint_due(s, 72000000)); /* its backoff is over */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 72000000), SS_E_IO);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
    ASSERT_TRUE(strcmp(ss_store_cause(s), "checkpoint (writing the journal's changes into the data "
                                          "file): File too large") == 0);
    ss_store_close(s);

    /* With room again, nothing acknowledged is lost. */
    ASSERT_EQ(unlink(filler), 0);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), ok);
    ss_record got;
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("k0"), &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_get(s, B("first"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "small");
    char last[16];
    snprintf(last, sizeof last, "k%d", ok - 1);
    ASSERT_EQ(ss_store_get(s, B(last), &got), SS_OK);
    ASSERT_EQ(got.value.len, BIG);
    snprintf(last, sizeof last, "k%d", ok);
    ASSERT_EQ(ss_store_get(s, B(last), &got), SS_E_NOTFOUND); /* the refused one */
    ss_store_abort(s);
    ss_store_close(s);
}

/* From here, fallocate fails with err in this process (a seccomp filter:
 * the test's own process, which the runner forked for it). */
static void fallocate_fails_with(int err)
{
    ASSERT_EQ(store_crash_fail_syscall(__NR_fallocate, -1, err), 0);
}

/* A disk quota is a full disk too: when the journal's reserve cannot be
 * renewed because the user's quota is spent (EDQUOT, injected), a write
 * that grows the store gets the quota answer and says why; a delete goes
 * on. */
TEST(store_disk_quota_refuses_growth_as_a_full_disk)
{
    ss_store_options o = options_in(test_tmpdir());
    ss_record r;
    ss_store *s = open_with_first_frame(&o, &r);
    fallocate_fails_with(EDQUOT);
    int ok = commit_until_refused(s, &r, 'q');
    ASSERT_TRUE(ok >= 2 && ok < 10); /* the reserve's room, then none */
    ASSERT_TRUE(strcmp(ss_store_cause(s), "reserving journal space (a write that grows the store is "
                                          "refused; deletes go on): Disk quota exceeded") == 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_del(s, B("k0")), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 100), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), ok);
    ss_store_close(s);
}

/* The child: a, b, c committed; d's journal write fails (injected), and
 * from then on every pread fails: the rollback's replay with it. */
static int failed_replay_child(ss_store *s)
{
    const char *keys[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++) {
        if (i == 3 && store_crash_fail_syscall(__NR_pread64, -1, EIO) != 0)
            return 3;
        int rc = store_crash_put(s, keys[i], (uint64_t)i + 1);
        if ((i < 3 && rc != SS_OK) || (i == 3 && rc == SS_OK))
            return 10 + i; /* a, b, c commit; d's write fails; e may */
    }
    return 0;
}

/* A rollback rebuilds the transaction by replaying the journal up to its
 * end. When that replay fails (here a read error: every pread fails from
 * the failed batch on; a full map or no memory do the same), the
 * journal's end must stay where the committed frames end. It once moved
 * back to where the replay stopped: the next batch was then replayed from
 * the data file alone, and its frame written over the committed ones, so
 * that batches already answered OK were lost for good. In a child that
 * then ends without closing (a crash); the store is opened again after. */
TEST(store_failed_replay_keeps_committed_frames)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.fail_write_at = 4;
    o.path = test_tmpdir();
    const char *committed[] = {"a", "b", "c"};
    store_crash_then_check(&o, failed_replay_child, committed, 3);
}
