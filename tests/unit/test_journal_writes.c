/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_journal_writes.c - journal writes that fail, injected or cut short,
 * fail their batch alone, and the bound on what one batch may journal. */
#include <signal.h>
#include <string.h>
#include <sys/resource.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"
#include "journal_batches.h"
#include "journaled.h"

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
