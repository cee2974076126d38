/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_journal.c - the write-ahead journal: frames byte for byte, replay
 * after a crash of the process, torn and damaged tails, checkpoints. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/journal.h"
#include "../../core/store.h"
#include "../test.h"
#include "journaled.h"

static const uint8_t jkey[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

struct seen {
    char text[4096];
    size_t len;
};

/* Each operation as "kind/db/key=value;" */
static int collect(void *ctx, const struct ss_jop *op)
{
    struct seen *s = ctx;
    int n = snprintf(s->text + s->len, sizeof s->text - s->len, "%u/%u/%.*s=%.*s;", op->kind,
                     op->db, (int)op->key.len, (const char *)op->key.data, (int)op->value.len,
                     (const char *)op->value.data);
    s->len += (size_t)n;
    return SS_OK;
}

static int journal_file(const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ASSERT_TRUE(fd >= 0);
    return fd;
}

static void write_frame(int fd, ss_buf *f, uint64_t seq)
{
    ss_jframe_seal(f, seq, jkey);
    ASSERT_EQ(write(fd, f->data, f->len), (long long)f->len);
}

static uint64_t replay(int fd, uint64_t limit, const uint8_t *key, uint64_t after, struct seen *s,
                       uint64_t *last)
{
    uint64_t end = 0;
    memset(s, 0, sizeof *s);
    ASSERT_EQ(ss_journal_replay(fd, limit, key, after, collect, s, &end, last), SS_OK);
    return end;
}

TEST(journal_frames_byte_exact_and_replayed)
{
    ss_buf f = SS_BUF_INIT;
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_TRUE(ss_jframe_empty(&f));
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 0, "ab", 2, "xyz", 3), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_DEL, 1, "k", 1, NULL, 0), SS_OK);
    ASSERT_TRUE(!ss_jframe_empty(&f));
    ss_jframe_seal(&f, 7, jkey);
    /* Header: length 18, sequence 7, then the check; then the operations. */
    static const uint8_t head[12] = {0, 0, 0, 18, 0, 0, 0, 0, 0, 0, 0, 7};
    ASSERT_MEM(f.data, 12, head, 12);
    static const uint8_t ops[18] = {1, 0, 0, 2, 0, 0, 0, 3, 'a', 'b', 'x', 'y', 'z', 2, 1, 0, 1, 'k'};
    ASSERT_EQ(f.len, SS_JFRAME_HEADER + 18);
    ASSERT_MEM(f.data + SS_JFRAME_HEADER, 18, ops, 18);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 0, "k", 70000, "", 0), SS_E_INVAL);

    int fd = journal_file("j1");
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 2, "m", 1, "1", 1), SS_OK);
    write_frame(fd, &f, 1);
    uint64_t one = (uint64_t)f.len;
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 0, "a", 1, "", 0), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_DEL, 1, "b", 1, NULL, 0), SS_OK);
    write_frame(fd, &f, 2);
    uint64_t two = one + f.len;

    struct seen s;
    uint64_t last;
    ASSERT_EQ(replay(fd, UINT64_MAX, jkey, 0, &s, &last), two);
    ASSERT_STR(s.text, s.len, "1/2/m=1;1/0/a=;2/1/b=;");
    ASSERT_EQ(last, 2);
    /* Frames the checkpoint covers are skipped. */
    ASSERT_EQ(replay(fd, UINT64_MAX, jkey, 1, &s, &last), two);
    ASSERT_STR(s.text, s.len, "1/0/a=;2/1/b=;");
    /* A limit inside the second frame: only the first. */
    ASSERT_EQ(replay(fd, two - 1, jkey, 0, &s, &last), one);
    ASSERT_STR(s.text, s.len, "1/2/m=1;");
    ASSERT_EQ(last, 1);
    /* Another store's key: nothing. */
    uint8_t other[16] = {0};
    ASSERT_EQ(replay(fd, UINT64_MAX, other, 0, &s, &last), 0);
    ASSERT_EQ(s.len, 0);
    ASSERT_EQ(last, 0);
    /* A first frame newer than the checkpoint's next: a gap, nothing. */
    ASSERT_EQ(replay(fd, UINT64_MAX, jkey, 5, &s, &last), two);
    ASSERT_EQ(s.len, 0);
    /* A frame that does not follow its predecessor ends the journal. */
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 0, "z", 1, "9", 1), SS_OK);
    write_frame(fd, &f, 4);
    ASSERT_EQ(replay(fd, UINT64_MAX, jkey, 0, &s, &last), two);
    ASSERT_EQ(last, 2);
    close(fd);

    /* A frame whose check holds but whose contents do not decode is an
     * error, not a tail. */
    fd = journal_file("j2");
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    static const uint8_t junk[3] = {9, 0, 0};
    ASSERT_EQ(ss_buf_append(&f, junk, sizeof junk), SS_OK);
    write_frame(fd, &f, 1);
    uint64_t end;
    memset(&s, 0, sizeof s);
    ASSERT_EQ(ss_journal_replay(fd, UINT64_MAX, jkey, 0, collect, &s, &end, &last), SS_E_CORRUPT);
    close(fd);
    ss_buf_free(&f);
}

/* The check covers the header as well as the payload; replay refuses
 * what no writer makes (an empty key) and reports what it cannot read. */
TEST(journal_check_covers_the_header)
{
    ss_buf f = SS_BUF_INIT;
    int fd = journal_file("j3");
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 0, "a", 1, "1", 1), SS_OK);
    write_frame(fd, &f, 11);
    uint64_t one = (uint64_t)f.len;
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 0, "b", 1, "2", 1), SS_OK);
    write_frame(fd, &f, 12);
    struct seen s;
    uint64_t last;
    ASSERT_EQ(replay(fd, UINT64_MAX, jkey, 10, &s, &last), one + f.len);
    ASSERT_STR(s.text, s.len, "1/0/a=1;1/0/b=2;");
    /* The first frame's number damaged (11 to 3, an old frame's): its
     * check fails, and nothing is taken from it or after it. */
    uint8_t three = 3;
    ASSERT_EQ(pwrite(fd, &three, 1, 11), 1);
    ASSERT_EQ(replay(fd, UINT64_MAX, jkey, 10, &s, &last), 0);
    ASSERT_EQ(s.len, 0);
    ASSERT_EQ(last, 10);
    close(fd);

    fd = journal_file("j4");
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_DEL, 0, "", 0, NULL, 0), SS_OK);
    write_frame(fd, &f, 1);
    uint64_t end;
    memset(&s, 0, sizeof s);
    ASSERT_EQ(ss_journal_replay(fd, UINT64_MAX, jkey, 0, collect, &s, &end, &last), SS_E_CORRUPT);
    ASSERT_EQ(s.len, 0);
    close(fd);

    /* A descriptor that cannot be read (a directory's) is an I/O error. */
    fd = open(test_tmpdir(), O_RDONLY | O_DIRECTORY);
    ASSERT_TRUE(fd >= 0);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    ASSERT_TRUE(st.st_size >= SS_JFRAME_HEADER); /* so that a read is tried */
    ASSERT_EQ(ss_journal_replay(fd, UINT64_MAX, jkey, 0, collect, &s, &end, &last), SS_E_IO);
    close(fd);
    ss_buf_free(&f);
}

/* A deletion's operation has no value: one given with it is not copied
 * (its room was never reserved: 100,000 bytes written there would run far
 * past the frame's 64-byte buffer), and the frame is the same as without. */
TEST(journal_delete_carries_no_value)
{
    static uint8_t value[100000];
    memset(value, 'v', sizeof value);
    ss_buf f = SS_BUF_INIT;
    ASSERT_EQ(ss_jframe_reset(&f), SS_OK);
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_DEL, 3, "k", 1, value, sizeof value), SS_OK);
    ASSERT_EQ(f.len, SS_JFRAME_HEADER + 5);
    static const uint8_t del[5] = {2, 3, 0, 1, 'k'};
    ASSERT_MEM(f.data + SS_JFRAME_HEADER, f.len - SS_JFRAME_HEADER, del, sizeof del);
    /* The next operation follows at once. */
    ASSERT_EQ(ss_jframe_op(&f, SS_JOP_PUT, 0, "a", 1, "b", 1), SS_OK);
    static const uint8_t both[15] = {2, 3, 0, 1, 'k', 1, 0, 0, 1, 0, 0, 0, 1, 'a', 'b'};
    ASSERT_MEM(f.data + SS_JFRAME_HEADER, f.len - SS_JFRAME_HEADER, both, sizeof both);
    int fd = journal_file("j5");
    write_frame(fd, &f, 1);
    struct seen s;
    uint64_t last;
    ASSERT_EQ(replay(fd, UINT64_MAX, jkey, 0, &s, &last), f.len);
    ASSERT_STR(s.text, s.len, "2/3/k=;1/0/a=b;");
    close(fd);
    ss_buf_free(&f);
}

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static ss_record rec_of(const char *value, uint32_t counter, uint64_t expiry)
{
    ss_record r;
    memset(&r, 0, sizeof r);
    r.value = B(value);
    r.version.wall = 5000;
    r.version.counter = counter;
    r.version.node_len = 1;
    r.version.node[0] = 'N';
    r.expiry_ms = expiry;
    return r;
}

/* Put "k<i>" = "value-<i>" in batches of one, committed at time 1 (no
 * checkpoint), optionally checkpoint after them (an empty batch an hour
 * later), then end the process without closing the store: a crash. */
static void crash_after_batches_then(int from, int to, bool checkpoint)
{
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        ss_store_options o = journaled();
        ss_store *s = NULL;
        if (ss_store_open(&o, &s) != SS_OK)
            _exit(2);
        for (int i = from; i < to; i++) {
            char k[16], v[32];
            snprintf(k, sizeof k, "k%d", i);
            snprintf(v, sizeof v, "value-%d", i);
            ss_record r = rec_of(v, (uint32_t)i, 0);
            if (ss_store_begin(s) != SS_OK || ss_store_put(s, B(k), &r) != SS_OK ||
                ss_store_set_clock(s, 5000, (uint32_t)i) != SS_OK || ss_store_commit(s, 1) != SS_OK)
                _exit(3);
        }
        if (checkpoint && (ss_store_begin(s) != SS_OK || ss_store_commit(s, 7200000) != SS_OK))
            _exit(4);
        _exit(0);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void crash_after_batches(int from, int to)
{
    crash_after_batches_then(from, to, false);
}

/* Keys k<from>..k<to-1> are there with their values, and nothing else. */
static void assert_keys(ss_store *s, int from, int to, int upto)
{
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    for (int i = 0; i < upto; i++) {
        char k[16], v[32];
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "value-%d", i);
        ss_record got;
        int rc = ss_store_get(s, B(k), &got);
        if (i >= from && i < to) {
            ASSERT_EQ(rc, SS_OK);
            ASSERT_MEM(got.value.data, got.value.len, v, strlen(v));
            ASSERT_EQ(got.version.counter, i);
        } else {
            ASSERT_EQ(rc, SS_E_NOTFOUND);
        }
    }
    ss_store_abort(s);
    ASSERT_EQ(ss_store_key_count(s), (long long)(to - from));
}

static uint64_t charge_of(int from, int to)
{
    uint64_t n = 0;
    for (int i = from; i < to; i++) {
        char k[16], v[32];
        n += (uint64_t)snprintf(k, sizeof k, "k%d", i) + (uint64_t)snprintf(v, sizeof v, "value-%d", i) +
             SS_STORE_RECORD_CHARGE;
    }
    return n;
}

/* The charged bytes and the clock after the batches of k0..k<n-1>. */
static void assert_counters(ss_store *s, int n)
{
    ASSERT_EQ(ss_store_byte_count(s), (long long)charge_of(0, n));
    uint64_t wall;
    uint32_t counter;
    ss_store_get_clock(s, &wall, &counter);
    ASSERT_EQ(wall, 5000);
    ASSERT_EQ(counter, n - 1);
}

TEST(store_journal_replayed_after_crash)
{
    crash_after_batches(0, 40);
    ASSERT_TRUE(journal_size() > 0); /* nothing was checkpointed */
    ss_store_options o = journaled();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(journal_size(), 0); /* replayed into the file at open */
    assert_keys(s, 0, 40, 60);
    assert_counters(s, 40);
    /* An expiring key, a delete, and a second crash on top. */
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_record e = rec_of("soon", 100, 777);
    ASSERT_EQ(ss_store_put(s, B("exp"), &e), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 1), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_del(s, B("exp")), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("exp"), &e), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 1), SS_OK);
    ss_store_close(s);
    crash_after_batches(40, 60);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ss_buf key = SS_BUF_INIT;
    ss_hlc version;
    ASSERT_EQ(ss_store_pop_due(s, 776, &key, &version), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_pop_due(s, 777, &key, &version), SS_OK);
    ASSERT_BUF(key, "exp");
    ASSERT_EQ(ss_store_commit(s, 1), SS_OK);
    assert_keys(s, 0, 60, 70);
    ASSERT_EQ(ss_store_byte_count(s), (long long)charge_of(0, 60));
    ss_buf_free(&key);
    ss_store_close(s);
}

/* The charged bytes and the clock change with every batch but go into
 * the file only at a checkpoint (the batches log them in the journal):
 * after a checkpoint that emptied the journal, and a crash, they are there. */
TEST(store_counters_kept_by_a_checkpoint)
{
    crash_after_batches_then(0, 30, true);
    ASSERT_EQ(journal_size(), 0); /* all of it is in the file */
    ss_store_options o = journaled();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    assert_keys(s, 0, 30, 40);
    assert_counters(s, 30);
    ss_store_close(s);
}

static void damage_journal(off_t at, int truncate_to_it)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/journal", test_tmpdir());
    int fd = open(path, O_RDWR);
    ASSERT_TRUE(fd >= 0);
    if (truncate_to_it) {
        ASSERT_EQ(ftruncate(fd, at), 0);
    } else {
        uint8_t b;
        ASSERT_EQ(pread(fd, &b, 1, at), 1);
        b ^= 0x20;
        ASSERT_EQ(pwrite(fd, &b, 1, at), 1);
    }
    close(fd);
}

/* What a power loss can leave: a torn last frame, or a damaged one. The
 * frames before it are replayed; it and what follows are not; the store
 * goes on from there. */
TEST(store_journal_torn_or_damaged_tail)
{
    crash_after_batches(0, 10); /* k0..k9: ten frames of the same size */
    off_t size = journal_size();
    ASSERT_EQ(size % 10, 0);
    off_t frame = size / 10;
    damage_journal(size - 3, 1);
    ss_store_options o = journaled();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(journal_size(), 0);
    assert_keys(s, 0, 9, 12);
    ASSERT_EQ(ss_store_byte_count(s), (long long)charge_of(0, 9));
    ss_store_close(s);

    /* The same store again: the journal is numbered on from the last good
     * frame. k9 and k10 are written anew; frame 4 of those gets damaged. */
    crash_after_batches(9, 19);
    damage_journal(4 * frame + SS_JFRAME_HEADER + 2, 0);
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    assert_keys(s, 0, 13, 20);
    ss_store_close(s);
}

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
