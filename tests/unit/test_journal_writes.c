/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_journal_writes.c - journal writes that fail, injected or cut short,
 * fail their batch alone, and the bound on what one batch may journal. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"
#include "journal_batches.h"
#include "journaled.h"
#include "store_crash.h"

/* An injected failure of the Nth journal write fails that batch only, and
 * leaves the store as the last good commit left it. */
TEST(store_injected_write_failure_fails_one_batch)
{
    ss_store_options o = journaled();
    o.fail_write_at = 2;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ss_record r = rec_of("v", 1, 0);
    const char *keys[] = {"a", "b", "c"};
    int want[] = {SS_OK, SS_E_IO, SS_OK};
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        ASSERT_EQ(ss_store_put(s, B(keys[i]), &r), SS_OK);
        ASSERT_EQ(ss_store_commit(s, 10 + i), want[i]);
    }
    ASSERT_TRUE(strstr(ss_store_cause(s), "injected") != NULL);
    ss_store_close(s);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ss_record got;
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("b"), &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_get(s, B("c"), &got), SS_OK);
    ss_store_abort(s);
    ss_store_close(s);
}

/* One batch is one journal frame, whose length must stay replayable:
 * overwrites (which the quota does not count) cannot pile up past
 * batch_max_bytes. The put past it is refused and the batch goes on. */
TEST(store_batch_bytes_bounded)
{
    ss_store_options o = journaled();
    o.batch_max_bytes = 16384;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    static char big[3001];
    memset(big, 'o', 3000);
    ss_record r = rec_of(big, 1, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    int ok = 0;
    for (int i = 0; i < 10; i++) {
        int rc = ss_store_put(s, B("same"), &r); /* overwrites: no quota growth */
        if (rc == SS_E_QUOTA)
            break;
        ASSERT_EQ(rc, SS_OK);
        ok++;
    }
    ASSERT_TRUE(ok >= 3 && ok < 10);
    ASSERT_TRUE(strstr(ss_store_cause(s), "one batch may journal at most 16384 bytes") != NULL);
    ss_record small = rec_of("s", 2, 0);
    ASSERT_EQ(ss_store_put(s, B("other"), &small), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 10), SS_OK);
    ASSERT_TRUE(journal_size() <= 16384);
    /* The next batch starts from an empty frame. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("same"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 11), SS_OK);
    ss_store_close(s);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ss_store_close(s);
}

/* A journal write cut short (here by the file size limit; a full disk
 * does the same) fails its batch: the rest of the frame is not written
 * over its beginning, and the journal is cut back to the last good
 * frame. */
TEST(store_short_journal_write_fails_its_batch)
{
    ss_store_options o = journaled();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ss_record r = rec_of("value-0", 0, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("k0"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 10), SS_OK);
    off_t size = journal_size();
    ASSERT_TRUE(size > 0);
    /* Writes past the limit fail with EFBIG (the signal ignored); one
     * that crosses it writes up to it. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)size + 30;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    static char big[1001];
    memset(big, 'z', 1000);
    ss_record b = rec_of(big, 1, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("k1"), &b), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 20), SS_E_IO);
    ASSERT_TRUE(strcmp(ss_store_cause(s), "writing the journal: File too large") == 0);
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
    ASSERT_EQ(journal_size(), size);
    assert_keys(s, 0, 1, 3);
    ss_store_close(s);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    assert_keys(s, 0, 1, 3);
    ss_store_close(s);
}

/* With fsync always, a batch whose journal frame was written whole but
 * failed its fsync: the frame may be on the disk all the same. Cut off
 * durably, the batch failed (SS_E_IO), and a crash leaves it out. When the
 * cut cannot be made (here ftruncate and fdatasync fail), the batch's
 * outcome is unknown and said so (SS_E_UNAVAILABLE): a crash does bring it
 * back from the journal. It was answered as failed, and came back. */
static int unsure_child(ss_store *s)
{
    if (store_crash_put(s, "a", 1) != SS_OK)
        return 2;
    if (store_crash_fail_syscall(SYS_fdatasync, -1, EIO) != 0 || store_crash_fail_syscall(SYS_ftruncate, -1, EIO) != 0)
        return 3;
    if (store_crash_put(s, "b", 2) != SS_E_UNAVAILABLE)
        return 4;
    return strstr(ss_store_cause(s), "cutting the journal after a failed commit") ? 0 : 5;
}

static int failed_child(ss_store *s)
{
    if (store_crash_put(s, "a", 1) != SS_OK)
        return 2;
    return store_crash_put(s, "b", 2) == SS_E_IO ? 0 : 3; /* its fsync fails (injected) */
}

TEST(store_frame_whose_fsync_failed_is_failed_only_once_cut_off)
{
    ss_store_options o = journaled();
    o.sync = SS_SYNC_ALWAYS;
    const char *both[] = {"a", "b"};
    store_crash_then_check(&o, unsure_child, both, 2);

    /* Again in a new directory: the frame cut off, the batch failed. */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/cut", test_tmpdir());
    o.path = dir; /* made by the store */
    o.fail_sync_at = 2;
    const char *one[] = {"a"};
    store_crash_then_check(&o, failed_child, one, 1);
    o.fail_sync_at = 0;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ss_record got;
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("b"), &got), SS_E_NOTFOUND);
    ss_store_abort(s);
    ss_store_close(s);
}
