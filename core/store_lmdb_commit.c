/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_lmdb_commit.c - batches and commits: the journal frame's write,
 * checkpoints and their backoff, the journal's reserve, the periodic
 * fsync. See store_lmdb.h. */
#define _GNU_SOURCE /* fallocate */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "bigendian.h"
#include "errors.h"
#include "journal.h"
#include "store_lmdb.h"

/* The counters' meta records: charged bytes and the persisted clock.
 * They change with nearly every batch. A batch only logs them in its
 * frame (a replay puts them back into the transaction); a checkpoint puts
 * them into the transaction, and so into the file. That spares every batch
 * two B-tree writes. */
static void ss_lmdb__counters_encode(const ss_store *s, uint8_t b[8], uint8_t c[12])
{
    ss_put_be(b, s->bytes, 8);
    ss_put_be(c, s->clock_wall, 8);
    ss_put_be(c + 8, s->clock_counter, 4);
}

static int ss_lmdb__counters_put(ss_store *s)
{
    uint8_t b[8], c[12];
    ss_lmdb__counters_encode(s, b, c);
    MDB_val kb = {5, "bytes"}, vb = {8, b}, kc = {5, "clock"}, vc = {12, c};
    int rc = mdb_put(s->txn, s->db_meta, &kb, &vb, 0);
    if (rc == 0)
        rc = mdb_put(s->txn, s->db_meta, &kc, &vc, 0);
    return rc == 0 ? SS_OK : ss_lmdb__fail(s, rc);
}

/* The number of the last frame in the file: put into the checkpoint's
 * transaction only. Not logged: a frame never carries it (a batch whose
 * checkpoint failed goes into the journal without it). */
static int ss_lmdb__journal_mark(ss_store *s)
{
    uint8_t j[8];
    ss_put_be(j, s->jseq, 8);
    MDB_val k = {7, "journal"}, v = {8, j};
    int rc = mdb_put(s->txn, s->db_meta, &k, &v, 0);
    return rc == 0 ? SS_OK : ss_lmdb__fail(s, rc);
}

static int ss_lmdb__counters_log(ss_store *s)
{
    uint8_t b[8], c[12];
    ss_lmdb__counters_encode(s, b, c);
    MDB_val kb = {5, "bytes"}, vb = {8, b}, kc = {5, "clock"}, vc = {12, c};
    int rc = SS_OK;
    if (s->bytes != s->committed_bytes)
        rc = ss_lmdb__log(s, SS_JOP_PUT, SS_DB_META, &kb, &vb);
    if (rc == SS_OK && (s->clock_wall != s->committed_wall || s->clock_counter != s->committed_counter))
        rc = ss_lmdb__log(s, SS_JOP_PUT, SS_DB_META, &kc, &vc);
    return rc;
}

/* Failure injection (testing aids, store.h): true when this journal write
 * or fsync is the one to fail. */
static bool ss_lmdb__inject(uint64_t *tried, uint64_t at)
{
    return at != 0 && ++*tried == at;
}

/* Make sure n more bytes of journal have their space. The journal keeps
 * SS_JOURNAL_RESERVE bytes allocated beyond what it holds (fallocate with
 * KEEP_SIZE: the file's size does not change, so a replay never reads
 * it). When the filesystem is full and that reserve cannot be renewed, a
 * batch that grows the store is refused with SS_E_QUOTA, but one that
 * does not (deletes, smaller values) may use the reserve: a full store
 * can still be shrunk, and the disk's owner gets time to make room. */
static int ss_lmdb__journal_room(ss_store *s, size_t n, bool grows)
{
    if (s->jreserve_unsupported || s->jend + n + SS_JOURNAL_RESERVE <= s->jreserved)
        return SS_OK;
    uint64_t want = n + 2 * SS_JOURNAL_RESERVE;
    if (fallocate(s->jfd, FALLOC_FL_KEEP_SIZE, (off_t)s->jend, (off_t)want) == 0) {
        s->jreserved = s->jend + want;
        return SS_OK;
    }
    int err = errno;
    if (err == EOPNOTSUPP || err == ENOSYS) {
        s->jreserve_unsupported = true; /* appends take their chance */
        return SS_OK;
    }
    if ((err == ENOSPC || err == EDQUOT) && grows) {
        ss_lmdb__cause(s, "reserving journal space (a write that grows the store is refused; "
                          "deletes go on)", err);
        return SS_E_QUOTA;
    }
    return SS_OK; /* a delete uses the reserve; the write itself tells */
}

/* A checkpoint's LMDB commit failed with rc. LMDB reports a short write
 * as EIO, and a short write is what a full filesystem gives: so when the
 * filesystem has less room than the journal's changes need, say that it
 * is full, and answer as for a full journal (SS_E_QUOTA). */
static int ss_lmdb__checkpoint_failed(ss_store *s, int rc)
{
    const char *what = "checkpoint (writing the journal's changes into the data file)";
    struct statvfs fs;
    if ((rc == EIO || rc == ENOSPC || rc == EDQUOT) && fstatvfs(s->jfd, &fs) == 0) {
        uint64_t room = (uint64_t)fs.f_bavail * fs.f_frsize;
        if (room < s->jend + SS_JOURNAL_RESERVE) {
            snprintf(s->cause, sizeof s->cause,
                     "%s: %s (%llu KiB free on the data directory's filesystem)", what,
                     strerror(ENOSPC), (unsigned long long)(room >> 10));
            return SS_E_QUOTA;
        }
    }
    ss_lmdb__cause(s, what, rc);
    rc = ss_lmdb__mdb_err(rc);
    return rc == SS_E_NOTFOUND ? SS_E_IO : rc;
}

/* Commit the long transaction with LMDB's full sync, then empty the
 * journal: its frames are all in the file now. A journal that could not be
 * emptied is harmless (its frames are older than the checkpoint and a
 * replay skips them); the next frames follow them. */
static int ss_lmdb__checkpoint_run(ss_store *s)
{
    uint64_t n = ++s->ckpts_tried, at = s->opt.fail_checkpoint_at;
    if (at != 0 && n >= at && n - at < (s->opt.fail_checkpoints ? s->opt.fail_checkpoints : 1)) {
        ss_lmdb__drop_txn(s);
        ss_lmdb__cause(s, "checkpoint (an injected failure)", ENOSPC);
        return SS_E_QUOTA;
    }
    int rc = mdb_txn_commit(s->txn); /* also closes the cursor */
    s->txn = NULL;
    s->cur = NULL;
    if (rc != 0)
        return ss_lmdb__checkpoint_failed(s, rc);
    /* Truncating also frees the space allocated ahead: take the reserve
     * again at once, before anyone else can fill what was freed. */
    if (ftruncate(s->jfd, 0) == 0) {
        s->jend = 0;
        s->jreserved = 0;
        ss_lmdb__journal_room(s, 0, false);
    }
    return SS_OK;
}

/* Outside a batch: checkpoint now if anything is not in LMDB's file. */
int ss_lmdb__checkpoint_now(ss_store *s)
{
    if (s->txn == NULL || s->batch)
        return SS_OK;
    int rc = ss_lmdb__counters_put(s);
    if (rc == SS_OK)
        rc = ss_lmdb__journal_mark(s);
    if (rc == SS_OK)
        rc = ss_lmdb__checkpoint_run(s);
    if (rc != SS_OK)
        return rc;
    s->ckpt_seq = s->jseq;
    s->synced = s->commits;
    if (fdatasync(s->jfd) != 0) {
        ss_lmdb__cause(s, "syncing the journal after a checkpoint", errno);
        return SS_E_IO;
    }
    return SS_OK;
}

int ss_store_checkpoint_now(ss_store *s)
{
    if (s->batch || s->committing)
        return SS_E_BUSY;
    return ss_lmdb__checkpoint_now(s);
}

int ss_store_begin(ss_store *s)
{
    ss_lmdb__forget(s);
    if (s->committing || s->batch)
        return SS_E_BUSY;
    if (s->broken != SS_OK && (s->broken = ss_lmdb__reload(s, s->jend)) != SS_OK)
        return s->broken;
    if (s->txn == NULL) {
        /* After a checkpoint: the next transaction starts here. */
        int rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
        if (rc == MDB_PANIC) {
            /* A checkpoint outside a batch (at open) failed on a meta
             * page: the reload opens the data file again. */
            s->txn = NULL;
            if ((s->broken = ss_lmdb__reload(s, s->jend)) != SS_OK)
                return s->broken;
        } else if (rc != 0) {
            s->txn = NULL;
            return ss_lmdb__mdb_err(rc);
        } else if (mdb_cursor_open(s->txn, s->db_keys, &s->cur) != 0) {
            ss_lmdb__drop_txn(s);
            return SS_E_IO;
        }
    }
    /* A batch with a huge value grew the frame: do not keep that memory. */
    if (s->frame.cap > SS_FRAME_KEEP)
        ss_buf_free(&s->frame);
    if (ss_jframe_reset(&s->frame) != SS_OK)
        return SS_E_NOMEM;
    s->batch = true;
    s->failed = 0;
    s->dirty = false;
    return SS_OK;
}

bool ss_store_in_batch(const ss_store *s)
{
    return s->batch && !s->committing;
}

bool ss_store_batch_dirty(const ss_store *s)
{
    return ss_store_in_batch(s) &&
           (s->dirty || s->bytes != s->committed_bytes || s->clock_wall != s->committed_wall ||
            s->clock_counter != s->committed_counter);
}

/* Back to the state of the last committed batch. */
static void ss_lmdb__rollback(ss_store *s)
{
    s->batch = false;
    if (!s->dirty && ss_jframe_empty(&s->frame) && s->failed == 0) {
        /* Nothing was written: only the clock may have moved. */
        s->clock_wall = s->committed_wall;
        s->clock_counter = s->committed_counter;
        return;
    }
    s->broken = ss_lmdb__reload(s, s->jend);
}

void ss_store_abort(ss_store *s)
{
    ss_lmdb__forget(s);
    if (s->committing || !s->batch)
        return;
    ss_lmdb__rollback(s);
}

/* Size first: a journal at its limit is checkpointed with any batch. The
 * interval only makes a batch that wrote nothing a checkpoint (the tick of
 * an idle moment), so that a client's write never waits for one because
 * time passed: it costs two fsyncs of the data file. */
static bool ss_lmdb__checkpoint_due(const ss_store *s, uint64_t now_ms, size_t frame_len, bool writes)
{
    if (s->ckpt_held)
        return false; /* a copy of the file is being made */
    if (s->jend == 0 && !writes && s->jseq == s->ckpt_seq)
        return false; /* nothing outside the file */
    if (s->ckpt_asked && (!s->ckpt_failures || now_ms >= s->ckpt_retry_ms))
        return true;
    /* After a failure, not before its backoff: meanwhile batches go on
     * into the journal, past its size limit if need be. */
    if (s->ckpt_failures && now_ms < s->ckpt_retry_ms)
        return false;
    /* After a failed fsync, at the first moment without writes. */
    if (s->sync_lost && !writes)
        return true;
    if (s->jend + frame_len >= s->opt.journal_max_bytes)
        return true;
    return !writes && (now_ms < s->last_ckpt_ms ||
                       now_ms - s->last_ckpt_ms >= s->opt.checkpoint_interval_ms);
}

void ss_store_checkpoint_soon(ss_store *s)
{
    s->ckpt_asked = true;
}

void ss_store_hold_checkpoints(ss_store *s, bool hold)
{
    s->ckpt_held = hold;
}

bool ss_store_file_current(const ss_store *s)
{
    return !s->committing && !s->batch && s->jend == 0 && s->jseq == s->ckpt_seq;
}

int ss_store_copy_fd(ss_store *s, int fd)
{
    /* A read transaction of its own sees the last checkpoint: the open
     * write transaction changes no page of that snapshot until it commits
     * (it only uses pages free before it), and the owner commits none
     * meanwhile. */
    int rc = mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT);
    if (rc != 0) {
        errno = rc > 0 ? rc : EIO;
        return SS_E_IO;
    }
    return SS_OK;
}

bool ss_store_checkpoint_due(const ss_store *s, uint64_t now_ms)
{
    return !s->committing && !s->batch && s->txn != NULL && ss_lmdb__checkpoint_due(s, now_ms, 0, false);
}

int ss_store_commit_prepare(ss_store *s, uint64_t now_ms, bool may_checkpoint)
{
    ss_lmdb__forget(s);
    if (s->committing || !s->batch)
        return SS_E_BUSY;
    int rc = s->failed;
    bool counters = s->bytes != s->committed_bytes || s->clock_wall != s->committed_wall ||
                    s->clock_counter != s->committed_counter;
    bool writes = s->dirty || !ss_jframe_empty(&s->frame) || counters;
    s->ckpt = rc == SS_OK && may_checkpoint && ss_lmdb__checkpoint_due(s, now_ms, s->frame.len, writes);
    /* The frame carries the counters even when the batch goes into the
     * file directly: should that checkpoint fail, the batch goes into the
     * journal instead (ss_lmdb__checkpoint_fallback). */
    if (rc == SS_OK && counters)
        rc = ss_lmdb__counters_log(s);
    if (rc == SS_OK && s->ckpt) {
        rc = ss_lmdb__counters_put(s);
        if (rc == SS_OK)
            rc = ss_lmdb__journal_mark(s);
        s->ckpt = rc == SS_OK;
    }
    if (rc != SS_OK) {
        ss_store_abort(s);
        return rc;
    }
    if (!s->ckpt && !ss_jframe_empty(&s->frame))
        ss_jframe_seal(&s->frame, s->jseq + 1, s->hash_key);
    s->grows = s->bytes > s->committed_bytes;
    s->committing = true;
    return SS_OK;
}

bool ss_store_commit_syncs(const ss_store *s)
{
    return s->committing &&
           (s->ckpt || (s->opt.sync == SS_SYNC_ALWAYS && !ss_jframe_empty(&s->frame)));
}

/* Append the sealed frame of the batch to the journal (and sync it with
 * fsync always). */
static int ss_lmdb__frame_write(ss_store *s)
{
    const uint8_t *p = s->frame.data;
    size_t n = s->frame.len;
    uint64_t off = s->jend;
    if (ss_lmdb__inject(&s->writes_tried, s->opt.fail_write_at)) {
        ss_lmdb__cause(s, "writing the journal (an injected failure)", EIO);
        return SS_E_IO;
    }
    int rc = ss_lmdb__journal_room(s, n, s->grows);
    if (rc != SS_OK)
        return rc;
    s->jtail = true; /* from here, bytes may lie past jend until the commit is done */
    while (n > 0) {
        ssize_t w = pwrite(s->jfd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int err = w < 0 ? errno : ENOSPC;
            ss_lmdb__cause(s, "writing the journal", err);
            return err == ENOSPC || err == EDQUOT ? SS_E_QUOTA : SS_E_IO;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    s->jframe_whole = true;
    if (s->opt.sync == SS_SYNC_ALWAYS) {
        int err = ss_lmdb__inject(&s->syncs_tried, s->opt.fail_sync_at) ? EIO
                  : fdatasync(s->jfd) == 0                         ? 0
                                                                   : errno;
        if (err != 0) {
            /* The frame is cut off again and its batch fails: nothing
             * that was acknowledged depends on this fsync. It may be on
             * the disk all the same (ss_store_commit_finish). */
            ss_lmdb__cause(s, "fsync of the journal", err);
            return SS_E_IO;
        }
    }
    return SS_OK;
}

/* A checkpoint that failed (a full disk, most often) must not fail the
 * batch that carried it: its answers would turn into errors for a write
 * that the journal can still take (a delete on a full disk uses the
 * journal's reserve). The transaction was lost with the failed commit, so
 * it is rebuilt as a restart would: the last checkpoint, the journal, and
 * now this batch's frame, written to the journal first. On the owner's
 * thread, in commit_finish, as a rollback's reload is: the owner reads
 * the counts while a commit runs. */
static int ss_lmdb__checkpoint_fallback(ss_store *s)
{
    char cause[sizeof s->cause];
    memcpy(cause, s->cause, sizeof cause);
    uint64_t jend = s->jend, jseq = s->jseq;
    unsigned reopened = s->reopened;
    /* A failure from here cuts the journal back to jend (commit_finish). */
    s->ckpt_fell_back = true;
    ss_jframe_seal(&s->frame, jseq + 1, s->hash_key);
    int rc = ss_lmdb__frame_write(s);
    if (rc == SS_OK && (rc = ss_lmdb__reload(s, jend + s->frame.len)) == SS_OK &&
        (s->jend != jend + s->frame.len || s->jseq != jseq + 1))
        rc = SS_E_IO; /* the replay did not take the frame: not committed */
    if (rc != SS_OK) {
        char journal[sizeof s->cause];
        memcpy(journal, s->cause, sizeof journal);
        snprintf(s->cause, sizeof s->cause, "%.60s; the batch could not go into the journal either: %.60s",
                 cause, rc == SS_E_IO && journal[0] == '\0' ? "its replay failed" : journal);
        s->jend = jend;
        s->jseq = jseq;
        return rc;
    }
    /* What the owner logs. */
    if (s->reopened != reopened)
        snprintf(s->cause, sizeof s->cause, "%.120s; LMDB stopped after it: the data file was opened again", cause);
    else
        memcpy(s->cause, cause, sizeof cause);
    return SS_OK;
}

int ss_store_commit_run(ss_store *s)
{
    /* Touches only the transaction and the journal: the owner keeps off
     * the store until commit_finish (store.h). */
    if (s->ckpt)
        return ss_lmdb__checkpoint_run(s);
    if (ss_jframe_empty(&s->frame))
        return SS_OK;
    return ss_lmdb__frame_write(s);
}

int ss_store_commit_finish(ss_store *s, int rc, uint64_t now_ms)
{
    s->committing = false;
    bool ckpt = s->ckpt;
    s->ckpt = false;
    s->ckpt_fell_back = false;
    if (ckpt) {
        s->last_ckpt_ms = now_ms; /* after a failure too: not again at once */
        if (rc == SS_OK) {
            s->ckpt_failures = 0;
            s->ckpt_ok_ms = now_ms;
            s->ckpt_asked = false;
        } else {
            uint64_t wait = s->opt.checkpoint_interval_ms;
            for (unsigned i = 0; i < s->ckpt_failures && wait < SS_CKPT_BACKOFF_MAX_MS; i++)
                wait *= 2;
            if (wait > SS_CKPT_BACKOFF_MAX_MS)
                wait = SS_CKPT_BACKOFF_MAX_MS;
            s->ckpt_failures++;
            s->ckpt_retry_ms = now_ms + wait;
            if (!ss_jframe_empty(&s->frame))
                rc = ss_lmdb__checkpoint_fallback(s);
        }
    }
    /* A checkpoint that failed and left its batch to the journal counts
     * as a journaled commit from here. */
    bool journaled = !ckpt || s->ckpt_fell_back;
    if (rc != SS_OK) {
        /* Cut what the failed write may have left. Should that fail too,
         * the next frame overwrites it from jend, and a replay stops at
         * the remains of a torn write after it (they fail their check);
         * a whole frame is another matter (below). Only when it wrote: a
         * truncation may also free the space allocated ahead (ext4 does,
         * at the same size), which must then be taken again. */
        bool cut = journaled && s->jtail && ftruncate(s->jfd, (off_t)s->jend) == 0;
        /* A whole frame (its fsync failed, or a fallback's replay did)
         * may be on the disk, and a replay after a crash would take it:
         * its batch failed only once the cut is on the disk. Otherwise its
         * outcome is unknown, and answered so ("unavailable": it may have
         * taken effect), never as a failure that a restart could
         * contradict. */
        if (journaled && s->jtail && s->jframe_whole && !(cut && fdatasync(s->jfd) == 0)) {
            ss_lmdb__cause(s, "cutting the journal after a failed commit (its batch may have been written)",
                           errno);
            rc = SS_E_UNAVAILABLE;
        }
        if (journaled && s->jtail)
            s->jreserved = 0;
        s->jtail = false;
        s->jframe_whole = false;
        s->dirty = true;
        ss_lmdb__rollback(s);
        return rc;
    }
    s->jtail = false;
    s->jframe_whole = false;
    s->batch = false;
    s->committed_bytes = s->bytes;
    s->committed_wall = s->clock_wall;
    s->committed_counter = s->clock_counter;
    if (!journaled) {
        s->ckpt_seq = s->jseq;
        s->synced = s->commits; /* the journal is empty or behind the file */
        s->sync_lost = false;
        return SS_OK;
    }
    if (!ss_jframe_empty(&s->frame)) {
        if (!s->ckpt_fell_back) { /* the fallback's replay counted its frame */
            s->jend += s->frame.len;
            s->jseq++;
        }
        s->commits++;
        if (s->opt.sync == SS_SYNC_ALWAYS)
            s->synced = s->commits;
    }
    if (s->opt.sync == SS_SYNC_PERIODIC && !s->opt.external_sync)
        return ss_store_flush(s, now_ms);
    return SS_OK;
}

int ss_store_commit(ss_store *s, uint64_t now_ms)
{
    int rc = ss_store_commit_prepare(s, now_ms, true);
    if (rc != SS_OK)
        return rc;
    return ss_store_commit_finish(s, ss_store_commit_run(s), now_ms);
}

bool ss_store_sync_start(ss_store *s, uint64_t now_ms)
{
    if (s->synced == s->commits)
        return false;
    if (now_ms >= s->last_sync_ms && now_ms - s->last_sync_ms < s->opt.sync_interval_ms)
        return false;
    s->last_sync_ms = now_ms;
    s->sync_covers = s->commits; /* commits after this may or may not be covered */
    return true;
}

int ss_store_sync_run(ss_store *s)
{
    /* fdatasync of the journal: safe beside batches and their commits on
     * the owner's thread (a frame written while it runs is covered by the
     * next one). Not beside a checkpoint: the owner runs one at a time. */
    if (ss_lmdb__inject(&s->syncs_tried, s->opt.fail_sync_at)) {
        s->sync_err = EIO;
        return SS_E_IO;
    }
    if (fdatasync(s->jfd) == 0)
        return SS_OK;
    s->sync_err = errno; /* the owner words it in sync_done: no race on cause */
    return SS_E_IO;
}

void ss_store_sync_done(ss_store *s, int rc)
{
    if (rc != SS_OK) {
        ss_lmdb__cause(s, "fsync of the journal", s->sync_err);
        s->sync_lost = true;
        return;
    }
    if (!s->sync_lost && s->sync_covers > s->synced)
        s->synced = s->sync_covers;
}

bool ss_store_sync_lost(const ss_store *s)
{
    return s->sync_lost;
}

bool ss_store_all_synced(const ss_store *s)
{
    return !s->sync_lost && s->synced == s->commits;
}

int ss_store_flush(ss_store *s, uint64_t now_ms)
{
    if (s->opt.external_sync || s->committing || s->batch || !ss_store_sync_start(s, now_ms))
        return SS_OK;
    int rc = ss_store_sync_run(s);
    ss_store_sync_done(s, rc);
    return rc;
}

bool ss_store_checkpoint_failing(const ss_store *s, uint64_t *retry_ms)
{
    if (retry_ms)
        *retry_ms = s->ckpt_retry_ms;
    return s->ckpt_failures > 0;
}

bool ss_store_commit_is_checkpoint(const ss_store *s)
{
    return s->committing && s->ckpt;
}
