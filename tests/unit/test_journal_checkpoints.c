/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_journal_checkpoints.c - the checkpoints that empty the journal into
 * the data file: when they are due, when the file holds everything, which
 * commits wait for the disk, a failed fsync that needs one, and one that
 * fails, leaving its batch and those after it to the journal. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/backend_lmdb.h"
#include "../../core/errors.h"
#include "../../core/latency.h"
#include "../../core/store.h"
#include "../test.h"
#include "journal_batches.h"
#include "journaled.h"

/* Checkpoints: when the interval has passed, and when the journal would
 * pass its size limit; each leaves an empty journal and the data in the
 * file. */
TEST(store_checkpoint_by_time_and_by_size)
{
    ss_store_options o = journaled();
    o.checkpoint_interval_ms = 100;
    o.journal_max_bytes = 4096;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_TRUE(!ss_store_checkpoint_due(s, 100000)); /* nothing to checkpoint */
    ss_record r = rec_of("v", 1, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 50), SS_OK); /* 50 ms after open: journal */
    ASSERT_TRUE(journal_size() > 0);
    ASSERT_TRUE(!ss_store_checkpoint_due(s, 99));
    ASSERT_TRUE(ss_store_checkpoint_due(s, 100));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 100), SS_OK); /* an empty batch carries it */
    ASSERT_EQ(journal_size(), 0);
    ASSERT_TRUE(!ss_store_checkpoint_due(s, 100000));
    /* A batch that writes is not made to wait for a checkpoint by time. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("c"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 5000), SS_OK);
    ASSERT_TRUE(journal_size() > 0);
    ASSERT_TRUE(ss_store_checkpoint_due(s, 5000));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 5000), SS_OK);
    ASSERT_EQ(journal_size(), 0);

    static char big[1001];
    memset(big, 'x', 1000);
    ss_record b = rec_of(big, 2, 0);
    int frames = 0;
    off_t before = 0;
    for (int i = 0; i < 10; i++) {
        char k[16];
        snprintf(k, sizeof k, "b%d", i);
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        ASSERT_EQ(ss_store_put(s, B(k), &b), SS_OK);
        ASSERT_EQ(ss_store_commit(s, 5010), SS_OK);
        off_t now = journal_size();
        ASSERT_TRUE(now < 4096);
        if (now < before)
            break;
        before = now;
        frames++;
    }
    ASSERT_EQ(frames, 3); /* the fourth would have reached 4096 bytes */
    ss_store_close(s);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 6);
    ss_store_close(s);
}

/* A failed fsync of the journal is not papered over by a later one that
 * succeeds (after an fsync error the kernel may have dropped the pages it
 * could not write): the writes since the last good sync count as not on
 * disk until a checkpoint, due at once, has written the whole state into
 * the data file. */
TEST(store_failed_fsync_needs_a_checkpoint)
{
    ss_store_options o = journaled();
    o.external_sync = true;
    o.sync_interval_ms = 10;
    o.fail_sync_at = 1;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ss_record r = rec_of("v", 1, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 1000), SS_OK);
    ASSERT_TRUE(!ss_store_all_synced(s));
    ASSERT_TRUE(!ss_store_checkpoint_due(s, 1000));
    ASSERT_TRUE(ss_store_sync_start(s, 1000));
    int rc = ss_store_sync_run(s); /* the injected failure */
    ASSERT_EQ(rc, SS_E_IO);
    ss_store_sync_done(s, rc);
    ASSERT_TRUE(ss_store_sync_lost(s));
    ASSERT_TRUE(strstr(ss_store_cause(s), "fsync of the journal: Input/output error") != NULL);
    /* Due at once, though the interval is an hour. */
    ASSERT_TRUE(ss_store_checkpoint_due(s, 1001));
    /* A later sync that succeeds proves nothing about the lost pages. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("b"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit_prepare(s, 1001, false), SS_OK); /* no checkpoint here */
    ASSERT_EQ(ss_store_commit_finish(s, ss_store_commit_run(s), 1001), SS_OK);
    ASSERT_TRUE(ss_store_sync_start(s, 1020));
    rc = ss_store_sync_run(s);
    ASSERT_EQ(rc, SS_OK);
    ss_store_sync_done(s, rc);
    ASSERT_TRUE(!ss_store_all_synced(s));
    ASSERT_TRUE(ss_store_sync_lost(s));
    /* The checkpoint covers everything. */
    ASSERT_TRUE(ss_store_checkpoint_due(s, 1021));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 1021), SS_OK);
    ASSERT_EQ(journal_size(), 0);
    ASSERT_TRUE(!ss_store_sync_lost(s));
    ASSERT_TRUE(ss_store_all_synced(s));
    ss_store_close(s);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 2);
    ss_store_close(s);
}

/* Batches of one 1000-byte record "<prefix><i>", committed at now_ms,
 * until one carries a checkpoint; returns its index. Each commit succeeds,
 * the checkpoint's failure (injected) included: the batch that carried it
 * goes into the journal, which grows. */
static int write_until_a_checkpoint(ss_store *s, const char *prefix, uint64_t now_ms)
{
    static char big[1001];
    memset(big, 'y', 1000);
    ss_record r = rec_of(big, 1, 0);
    for (int i = 0; i < 10; i++) {
        char k[16];
        snprintf(k, sizeof k, "%s%d", prefix, i);
        off_t before = journal_size();
        ASSERT_EQ(ss_store_begin(s), SS_OK);
        ASSERT_EQ(ss_store_put(s, B(k), &r), SS_OK);
        ASSERT_EQ(ss_store_commit_prepare(s, now_ms, true), SS_OK);
        bool ckpt = ss_store_commit_is_checkpoint(s);
        ASSERT_EQ(ss_store_commit_finish(s, ss_store_commit_run(s), now_ms), SS_OK);
        ASSERT_TRUE(journal_size() > before);
        if (ckpt)
            return i;
    }
    ASSERT_TRUE(false);
    return -1;
}

/* Records "<prefix>0".."<prefix><n-1>" of 1000 bytes are there. */
static void assert_big(ss_store *s, const char *prefix, int n)
{
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    for (int i = 0; i < n; i++) {
        char k[16];
        snprintf(k, sizeof k, "%s%d", prefix, i);
        ss_record got;
        ASSERT_EQ(ss_store_get(s, B(k), &got), SS_OK);
        ASSERT_EQ(got.value.len, 1000);
    }
    ss_store_abort(s);
}

/* A checkpoint that fails (as on a full disk) does not fail the batch
 * that carried it: the batch goes into the journal, its writes are
 * readable at once and after a crash, the checkpoint's failure is
 * reported and tried again later, and then succeeds. A failing checkpoint
 * of a batch that wrote nothing writes nothing to the journal. Before, the
 * batch failed with the checkpoint: a DEL on a full disk was answered
 * with the quota error. */
TEST(store_failed_checkpoint_leaves_its_batch_to_the_journal)
{
    ss_store_options o = journaled();
    o.checkpoint_interval_ms = 100;
    o.journal_max_bytes = 4096;
    o.fail_checkpoint_at = 1;
    o.fail_checkpoints = 2;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ss_record small = rec_of("v", 1, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &small), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 10), SS_OK);
    off_t after_a = journal_size();
    /* An idle checkpoint fails: its empty batch leaves the journal as it
     * was. */
    ASSERT_TRUE(ss_store_checkpoint_due(s, 200));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 200), SS_E_QUOTA);
    ASSERT_EQ(journal_size(), after_a);
    ASSERT_TRUE(ss_store_checkpoint_failing(s, NULL));
    /* Writes until one carries the next (failing) checkpoint. */
    int carried = write_until_a_checkpoint(s, "c", 1000);
    ASSERT_TRUE(carried >= 2); /* the journal reached its limit first */
    ASSERT_TRUE(ss_store_checkpoint_failing(s, NULL));
    ASSERT_TRUE(strstr(ss_store_cause(s), "checkpoint (an injected failure)") != NULL);
    ASSERT_EQ(ss_store_key_count(s), carried + 2);
    assert_big(s, "c", carried + 1);
    /* Not again before its backoff (200 ms after the second failure); then
     * an empty batch carries it, and it succeeds. */
    ASSERT_TRUE(!ss_store_checkpoint_due(s, 1100));
    ASSERT_TRUE(ss_store_checkpoint_due(s, 1200));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 1200), SS_OK);
    ASSERT_EQ(journal_size(), 0);
    ASSERT_TRUE(!ss_store_checkpoint_failing(s, NULL));
    ss_store_close(s);

    /* A crash right after a batch that carried a failed checkpoint: the
     * journal's replay brings it back with the rest. */
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        ss_store_options oc = o;
        oc.fail_checkpoints = 1;
        ss_store *sc = NULL;
        if (ss_store_open(&oc, &sc) != SS_OK)
            _exit(100);
        _exit(write_until_a_checkpoint(sc, "d", 10)); /* no close: a crash */
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) < 100);
    int crashed = WEXITSTATUS(status);
    ASSERT_TRUE(crashed >= 2);
    o.fail_checkpoint_at = 0;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), carried + 2 + crashed + 1);
    assert_big(s, "c", carried + 1);
    assert_big(s, "d", crashed + 1);
    ss_store_close(s);
}

/* The data file holds everything (what a backup waits for) only outside a
 * batch, with the journal empty and no frame after the last checkpoint:
 * after the replay at open (which checkpoints what it replayed), after an
 * aborted batch and after an idle checkpoint, not after a journaled
 * commit. */
TEST(store_file_current_after_replay_and_checkpoints)
{
    crash_after_batches(0, 5);
    ss_store_options o = journaled();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(journal_size(), 0);
    ASSERT_TRUE(ss_store_file_current(s));
    ASSERT_TRUE(!ss_store_checkpoint_due(s, 100000000)); /* nothing outside the file */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_TRUE(!ss_store_file_current(s)); /* a batch is open */
    ss_store_abort(s);
    ASSERT_TRUE(ss_store_file_current(s));
    ss_record r = rec_of("v", 1, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 10), SS_OK); /* into the journal */
    ASSERT_TRUE(journal_size() > 0);
    ASSERT_TRUE(!ss_store_file_current(s));
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 7200000), SS_OK); /* idle, two hours on: a checkpoint */
    ASSERT_EQ(journal_size(), 0);
    ASSERT_TRUE(ss_store_file_current(s));
    ss_store_close(s);
}

/* A commit waits for the disk (the plugin runs it on its committing
 * thread) when it carries a checkpoint, or with fsync always when it
 * writes a frame; not for a frame with the periodic fsync, nor for an
 * empty batch. */
TEST(store_commit_syncs_only_when_it_waits_for_the_disk)
{
    ss_store_options o = journaled(); /* the periodic fsync */
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ss_record r = rec_of("v", 1, 0);
    ASSERT_TRUE(!ss_store_commit_syncs(s)); /* no commit under way */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit_prepare(s, 10, true), SS_OK);
    ASSERT_TRUE(!ss_store_commit_is_checkpoint(s));
    ASSERT_TRUE(!ss_store_commit_syncs(s));
    ASSERT_EQ(ss_store_commit_finish(s, ss_store_commit_run(s), 10), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit_prepare(s, 7200000, true), SS_OK);
    ASSERT_TRUE(ss_store_commit_is_checkpoint(s));
    ASSERT_TRUE(ss_store_commit_syncs(s));
    ASSERT_EQ(ss_store_commit_finish(s, ss_store_commit_run(s), 7200000), SS_OK);
    ASSERT_TRUE(!ss_store_commit_is_checkpoint(s));
    ASSERT_TRUE(!ss_store_commit_syncs(s));
    ss_store_close(s);

    o.sync = SS_SYNC_ALWAYS;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("b"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit_prepare(s, 7200010, true), SS_OK);
    ASSERT_TRUE(!ss_store_commit_is_checkpoint(s));
    ASSERT_TRUE(ss_store_commit_syncs(s)); /* the frame's fsync */
    ASSERT_EQ(ss_store_commit_finish(s, ss_store_commit_run(s), 7200010), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit_prepare(s, 7200011, false), SS_OK);
    ASSERT_TRUE(!ss_store_commit_syncs(s)); /* nothing written, nothing to sync */
    ASSERT_EQ(ss_store_commit_finish(s, ss_store_commit_run(s), 7200011), SS_OK);
    ss_store_close(s);
}

/* A batch whose checkpoint failed goes into the journal; the batches after
 * it follow its frame, not overwrite it: after a crash both are there. The
 * cause given is the checkpoint's alone (the journal took the batch). */
TEST(store_batches_follow_one_whose_checkpoint_failed)
{
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        ss_store_options o = journaled();
        o.fail_checkpoint_at = 1;
        ss_store *s = NULL;
        ss_record r = rec_of("value-0", 0, 0);
        if (ss_store_open(&o, &s) != SS_OK || ss_store_begin(s) != SS_OK || ss_store_put(s, B("k0"), &r) != SS_OK)
            _exit(2);
        ss_store_checkpoint_soon(s);
        if (ss_store_commit_prepare(s, 10, true) != SS_OK || !ss_store_commit_is_checkpoint(s) ||
            ss_store_commit_finish(s, ss_store_commit_run(s), 10) != SS_OK)
            _exit(3);
        if (strcmp(ss_store_cause(s), "checkpoint (an injected failure): No space left on device") != 0)
            _exit(4);
        r = rec_of("value-1", 1, 0);
        if (ss_store_begin(s) != SS_OK || ss_store_put(s, B("k1"), &r) != SS_OK ||
            ss_store_commit_prepare(s, 20, true) != SS_OK || ss_store_commit_is_checkpoint(s) ||
            ss_store_commit_finish(s, ss_store_commit_run(s), 20) != SS_OK)
            _exit(5);
        _exit(0); /* no close: a crash */
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    ss_store_options o = journaled();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    assert_keys(s, 0, 2, 4);
    ss_store_close(s);
}

/* The first checkpoint that fails may be carried by a batch of reads (no
 * checkpoint has failed yet, so nothing keeps it from a batch with
 * answers): it wrote nothing, so nothing of it is lost, and its answers
 * stand. Only the log says that the checkpoint failed. */
TEST(lmdb_failed_checkpoint_keeps_the_answers_of_a_batch_of_reads)
{
    ss_store_options o = journaled();
    o.checkpoint_interval_ms = 100;
    o.fail_checkpoint_at = 1;
    o.fail_checkpoints = 1;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ss_record small = rec_of("v", 1, 0);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &small), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 10), SS_OK);
    ss_backend *be;
    ASSERT_EQ(ss_backend_lmdb_new(s, &be), SS_OK);
    uint64_t now = ss_wall_ms() + 1000; /* past the interval */
    ss_record rec;
    ss_revision rev;
    ASSERT_EQ(be->ops->read(be->impl, B("a"), &rec, &rev), SS_OK);
    unsigned id;
    ASSERT_EQ(be->ops->commit_start(be->impl, now, true, &id), SS_OK);
    ss_commit_outcome out;
    ASSERT_TRUE(be->ops->commit_collect(be->impl, &out));
    ASSERT_EQ(out.id, id);
    ASSERT_EQ(out.rc, SS_OK);
    ASSERT_TRUE(out.logged);
    ASSERT_TRUE(ss_store_checkpoint_failing(s, NULL));
    /* The store goes on: a write, and the next checkpoint succeeds. */
    ASSERT_EQ(be->ops->put(be->impl, B("b"), &small, rev), SS_OK);
    ASSERT_EQ(be->ops->commit_start(be->impl, now + 10000, false, &id), SS_OK);
    ASSERT_TRUE(be->ops->commit_collect(be->impl, &out));
    ASSERT_EQ(out.rc, SS_OK);
    ss_backend_lmdb_free(be);
    ss_store_close(s);
}
