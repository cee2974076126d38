/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_journal.c - the write-ahead journal: frames byte for byte and
 * their replay; the store's replay of them after a crash of the process,
 * and of torn and damaged tails. Checkpoints are in
 * test_journal_checkpoints.c, failed writes in test_journal_writes.c. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/journal.h"
#include "../../core/store.h"
#include "../test.h"
#include "journal_batches.h"
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

/* A data file found empty (lost, or truncated by hand) beside a journal
 * holding frames: the open refuses, says why, and leaves the journal as
 * it was. It used to start an empty store and set the frames aside as a
 * torn tail, without a word of the store that was gone. */
TEST(store_empty_data_file_beside_a_journal_refused)
{
    crash_after_batches(0, 10);
    off_t journal = journal_size();
    ASSERT_TRUE(journal > 0);
    char data[600];
    snprintf(data, sizeof data, "%s/data.mdb", test_tmpdir());
    ASSERT_EQ(truncate(data, 0), 0);
    ss_store_options o = journaled();
    char cause[300] = "";
    o.open_cause = cause;
    o.open_cause_len = sizeof cause;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_E_CORRUPT);
    ASSERT_TRUE(strstr(cause, "the data file holds no store, but the journal holds") != NULL);
    ASSERT_EQ(journal_size(), journal);
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
    /* The torn frame's bytes are kept aside and described: a frame not
     * written whole, nothing after it. */
    bool damage = true;
    const char *said = ss_store_discarded(s, &damage);
    ASSERT_TRUE(!damage);
    char want[200];
    snprintf(want, sizeof want, "the journal's replay stopped after frame 9, at byte %lld of %lld: a frame not "
                                "written whole", (long long)(9 * frame), (long long)(size - 3));
    ASSERT_TRUE(strncmp(said, want, strlen(want)) == 0);
    snprintf(want, sizeof want, "the %lld bytes after it are kept in journal.discarded", (long long)(frame - 3));
    ASSERT_TRUE(strstr(said, want) != NULL);
    char kept[4200];
    snprintf(kept, sizeof kept, "%s/journal.discarded", test_tmpdir());
    struct stat st;
    ASSERT_EQ(stat(kept, &st), 0);
    ASSERT_EQ(st.st_size, frame - 3);
    ss_store_close(s);

    /* The same store again: the journal is numbered on from the last good
     * frame. k9 and k10 are written anew; frame 4 of those gets damaged. */
    crash_after_batches(9, 19);
    damage_journal(4 * frame + SS_JFRAME_HEADER + 2, 0);
    off_t before_open = journal_size();
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    assert_keys(s, 0, 13, 20);
    /* Whole frames follow the damaged one: said, and all of them kept. */
    said = ss_store_discarded(s, &damage);
    ASSERT_TRUE(damage);
    ASSERT_TRUE(strstr(said, "whole frames follow it (the disk took later frames before it") != NULL);
    unsigned long long last = 0, at = 0, of = 0;
    ASSERT_EQ(sscanf(said, "the journal's replay stopped after frame %llu, at byte %llu of %llu", &last, &at, &of), 3);
    ASSERT_EQ(last, 13); /* k9 to k12 after the 9 frames before */
    ASSERT_EQ(of, (unsigned long long)before_open);
    ASSERT_EQ(stat(kept, &st), 0);
    ASSERT_EQ((unsigned long long)st.st_size, of - at);
    ss_store_close(s);
    /* A clean open after a clean close: nothing left out. */
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_discarded(s, &damage)[0], '\0');
    ASSERT_TRUE(!damage);
    ss_store_close(s);
}
