/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_lmdb_open.c - opening the store (directory lock, journal, LMDB
 * environment, replay, compaction) and closing it. See store_lmdb.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bigendian.h"
#include "dirlock.h"
#include "errors.h"
#include "journal.h"
#include "store_lmdb.h"

ss_store_options ss_store_options_default(void)
{
    ss_store_options o;
    memset(&o, 0, sizeof o);
    o.max_bytes = SS_STORE_MAX_BYTES_DEFAULT;
    o.sync = SS_SYNC_ALWAYS;
    o.sync_interval_ms = 1000;
    return o;
}

/* Read the fixed meta records, or create them in a new store. */
static int ss_lmdb__load_format(ss_store *s)
{
    MDB_val v;
    int rc = ss_lmdb__meta_get(s, "format", &v);
    if (rc == SS_E_NOTFOUND) {
        MDB_stat st;
        if (mdb_stat(s->txn, s->db_keys, &st) != 0 || st.ms_entries != 0)
            return SS_E_CORRUPT;
        /* A journal is written only once the store exists: one that holds
         * frames beside a data file without a store means that file was
         * lost or emptied. A new, empty store would hide that (and the
         * frames, made under another hash key, would be dropped). */
        struct stat jst;
        if (fstat(s->jfd, &jst) == 0 && jst.st_size > 0) {
            snprintf(s->cause, sizeof s->cause,
                     "the data file holds no store, but the journal holds %lld bytes of one: the data file "
                     "was lost or emptied (restore a backup; or move the journal away to start an empty store)",
                     (long long)jst.st_size);
            errno = 0;
            return SS_E_CORRUPT;
        }
        uint8_t fmt[4];
        ss_put_be(fmt, SS_FORMAT_VERSION, 4);
        if (getrandom(s->hash_key, sizeof s->hash_key, 0) != (ssize_t)sizeof s->hash_key)
            return SS_E_IO;
        if ((rc = ss_lmdb__meta_put(s, "format", fmt, 4)) != SS_OK ||
            (rc = ss_lmdb__meta_put(s, "hashkey", s->hash_key, 16)) != SS_OK)
            return rc;
        return SS_OK;
    }
    if (rc != SS_OK)
        return rc;
    /* Said in so many words: a store of another format (a newer
     * plugin's, say) is not a damaged one; errno holds nothing of it. */
    if (v.mv_size != 4) {
        snprintf(s->cause, sizeof s->cause, "its format mark has %zu bytes, not 4", v.mv_size);
        errno = 0;
        return SS_E_CORRUPT;
    }
    if (ss_get_be(v.mv_data, 4) != SS_FORMAT_VERSION) {
        snprintf(s->cause, sizeof s->cause, "the store is of format %llu, and this plugin reads format %u",
                 (unsigned long long)ss_get_be(v.mv_data, 4), (unsigned)SS_FORMAT_VERSION);
        errno = 0;
        return SS_E_CORRUPT;
    }
    if (ss_lmdb__meta_get(s, "hashkey", &v) != SS_OK || v.mv_size != 16) {
        snprintf(s->cause, sizeof s->cause, "its hash key is missing or not 16 bytes");
        errno = 0;
        return SS_E_CORRUPT;
    }
    memcpy(s->hash_key, v.mv_data, 16);
    return SS_OK;
}

/* A counter of the meta database: 0 if absent. */
static int ss_lmdb__load_counter(ss_store *s, const char *name, size_t size, uint8_t *out)
{
    MDB_val v;
    int rc = ss_lmdb__meta_get(s, name, &v);
    if (rc == SS_E_NOTFOUND) {
        memset(out, 0, size);
        return SS_OK;
    }
    if (rc != SS_OK)
        return rc;
    if (v.mv_size != size)
        return SS_E_CORRUPT;
    memcpy(out, v.mv_data, size);
    return SS_OK;
}

/* Counts and clock as of the open transaction, taken as committed. */
static int ss_lmdb__load_counts(ss_store *s)
{
    uint8_t b[8], c[12];
    int rc;
    MDB_stat st;
    if ((rc = ss_lmdb__load_counter(s, "bytes", 8, b)) != SS_OK ||
        (rc = ss_lmdb__load_counter(s, "clock", 12, c)) != SS_OK)
        return rc;
    if ((rc = mdb_stat(s->txn, s->db_keys, &st)) != 0)
        return ss_lmdb__mdb_err(rc);
    s->keys = st.ms_entries;
    s->bytes = s->committed_bytes = ss_get_be(b, 8);
    s->clock_wall = s->committed_wall = ss_get_be(c, 8);
    s->clock_counter = s->committed_counter = (uint32_t)ss_get_be(c + 8, 4);
    return SS_OK;
}

/* One operation of a frame, again. Each writes a whole value or removes
 * one, so a batch replayed over a file that holds it already comes out
 * the same: a deletion of a key that is gone is no damage. That happens:
 * a checkpoint whose meta page write reported a failure may have reached
 * the disk all the same, and its batch is also in the journal's next
 * frame, written when the checkpoint failed. */
static int ss_lmdb__replay_op(void *ctx, const struct ss_jop *op)
{
    ss_store *s = ctx;
    if (op->db > SS_DB_META)
        return SS_E_CORRUPT;
    MDB_val k = {op->key.len, (void *)op->key.data}, v = {op->value.len, (void *)op->value.data};
    int rc = op->kind == SS_JOP_PUT ? mdb_put(s->txn, ss_lmdb__dbi(s, op->db), &k, &v, 0)
                                    : mdb_del(s->txn, ss_lmdb__dbi(s, op->db), &k, NULL);
    return rc == 0 || (rc == MDB_NOTFOUND && op->kind != SS_JOP_PUT) ? SS_OK : ss_lmdb__mdb_err(rc);
}

void ss_lmdb__drop_txn(ss_store *s)
{
    if (s->txn)
        mdb_txn_abort(s->txn); /* also closes the cursor */
    s->txn = NULL;
    s->cur = NULL;
}

static int ss_lmdb__open_env(ss_store *s);

/* LMDB stops an environment for good once the write of a meta page
 * failed (MDB_PANIC): no transaction begins on it again. What the data
 * file holds is still whole (the pages of the failed commit were written
 * and synced before its meta page, and either meta page is consistent),
 * and the journal holds every batch since the last checkpoint: open the
 * file again, as a restart would. The new environment opens before the
 * old one closes, so that a failure leaves the old one to try again with.
 * Not while a backup reads the old one (it holds checkpoints). */
static int ss_lmdb__reopen_env(ss_store *s)
{
    if (s->ckpt_held)
        return MDB_PANIC;
    MDB_env *old = s->env;
    MDB_dbi keys = s->db_keys, exp = s->db_exp, meta = s->db_meta;
    s->env = NULL;
    int rc = ss_lmdb__open_env(s);
    if (rc != SS_OK) {
        if (s->env)
            mdb_env_close(s->env);
        s->env = old;
        s->db_keys = keys;
        s->db_exp = exp;
        s->db_meta = meta;
        return MDB_PANIC;
    }
    mdb_env_close(old);
    s->reopened++;
    return 0;
}

/* Open the long transaction on the last checkpoint and replay the
 * journal's frames after it, up to limit bytes: the state of the last
 * committed batch. */
int ss_lmdb__reload(ss_store *s, uint64_t limit)
{
    ss_lmdb__drop_txn(s);
    s->next_expiry = 0;
    s->failed = 0;
    int rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
    if (rc == MDB_PANIC && ss_lmdb__reopen_env(s) == 0)
        rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
    if (rc != 0) {
        s->txn = NULL;
        return ss_lmdb__mdb_err(rc);
    }
    uint8_t j[8];
    if ((rc = ss_lmdb__load_counter(s, "journal", 8, j)) == SS_OK) {
        /* The journal's end and last number change only when the replay
         * reached what the caller asked for: a replay that failed (a read
         * error, no memory, a full map) or stopped short of frames that
         * were committed must not make the next frames overwrite them. */
        uint64_t ckpt_seq = ss_get_be(j, 8), end = 0, last = 0;
        rc = ss_journal_replay(s->jfd, limit, s->hash_key, ckpt_seq, ss_lmdb__replay_op, s, &end, &last);
        if (rc == SS_OK && limit != UINT64_MAX && end != limit) {
            snprintf(s->cause, sizeof s->cause,
                     "replaying the journal: it ends at byte %llu, before the %llu bytes committed",
                     (unsigned long long)end, (unsigned long long)limit);
            rc = SS_E_IO;
        }
        if (rc == SS_OK) {
            s->ckpt_seq = ckpt_seq;
            s->jend = end;
            s->jseq = last;
        }
    }
    if (rc == SS_OK)
        rc = ss_lmdb__load_counts(s);
    if (rc == SS_OK && (rc = mdb_cursor_open(s->txn, s->db_keys, &s->cur)) != 0)
        rc = ss_lmdb__mdb_err(rc);
    if (rc != SS_OK)
        ss_lmdb__drop_txn(s);
    return rc;
}

/* Open FILE in the data directory, creating it (0600); *existed tells
 * whether it was there before. -1 on failure. */
/* FILE in the data directory, as a malloc'ed path; NULL without memory. */
static char *ss_lmdb__path(const ss_store *s, const char *file)
{
    size_t n = strlen(s->path) + strlen(file) + 2;
    char *name = malloc(n);
    if (name)
        snprintf(name, n, "%s/%s", s->path, file);
    return name;
}

/* Make the data directory's entries (a new or renamed file) durable. */
static int ss_lmdb__sync_dir(const ss_store *s)
{
    int dfd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    int rc = fsync(dfd);
    close(dfd);
    return rc;
}

/* At most so much of what the replay left out is looked at for frames. */
#define SS_LMDB_DISCARD_SCAN ((size_t)64 << 20)

/* What the replay left out of the journal (bytes after its last good
 * frame that are not all zeros): a frame not written whole (a power loss,
 * a crash in its write), or, when whole frames follow it, damage. Before
 * the open empties the journal, they are copied to journal.discarded (a
 * copy made before is replaced) and described for the owner's log. A
 * failure here loses nothing the store holds: it is said, and the open
 * goes on. */
static void ss_lmdb__keep_discarded(ss_store *s)
{
    s->discarded[0] = '\0';
    s->discarded_damage = false;
    struct stat st;
    if (fstat(s->jfd, &st) != 0 || (uint64_t)st.st_size <= s->jend)
        return;
    uint64_t total = (uint64_t)st.st_size - s->jend;
    size_t n = total > SS_LMDB_DISCARD_SCAN ? SS_LMDB_DISCARD_SCAN : (size_t)total;
    uint8_t *buf = malloc(n);
    size_t got = 0;
    while (buf && got < n) {
        ssize_t r = pread(s->jfd, buf + got, n - got, (off_t)(s->jend + got));
        if (r <= 0 && !(r < 0 && errno == EINTR))
            break;
        if (r > 0)
            got += (size_t)r;
    }
    bool zeros = buf != NULL && got == n && total == n;
    for (size_t i = 0; zeros && i < n; i++)
        zeros = buf[i] == 0;
    if (zeros) { /* room taken ahead, never written */
        free(buf);
        return;
    }
    s->discarded_damage = buf != NULL && ss_journal_frames_follow(buf, got, s->hash_key, s->jseq);
    char *path = ss_lmdb__path(s, "journal.discarded");
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    bool kept = fd >= 0 && buf != NULL;
    for (uint64_t off = 0; kept && off < total;) { /* the first n bytes are in buf; the rest read again */
        size_t chunk = total - off < n ? (size_t)(total - off) : n;
        if (off > 0) {
            ssize_t r = pread(s->jfd, buf, chunk, (off_t)(s->jend + off));
            if (r <= 0) {
                kept = false;
                break;
            }
            chunk = (size_t)r;
        }
        for (size_t w = 0; kept && w < chunk;) {
            ssize_t r = write(fd, buf + w, chunk - w);
            if (r < 0 && errno == EINTR)
                continue;
            kept = r > 0;
            w += r > 0 ? (size_t)r : 0;
        }
        off += chunk;
    }
    kept = kept && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    kept = kept && ss_lmdb__sync_dir(s) == 0;
    snprintf(s->discarded, sizeof s->discarded,
             "the journal's replay stopped after frame %llu, at byte %llu of %llu: %s; the %llu bytes after it %s",
             (unsigned long long)s->jseq, (unsigned long long)s->jend, (unsigned long long)st.st_size,
             s->discarded_damage ? "whole frames follow it (the disk took later frames before it, as a power "
                                   "loss with fsync periodic can leave, or it damaged that one), and the "
                                   "writes of those frames are not in the store"
                                 : "a frame not written whole (a power loss, or a crash during its write)",
             (unsigned long long)total, kept ? "are kept in journal.discarded" : "could not be kept (journal.discarded)");
    free(path);
    free(buf);
}

static int ss_lmdb__open_in_dir(const ss_store *s, const char *file, bool *existed)
{
    char *name = ss_lmdb__path(s, file);
    if (name == NULL)
        return -1;
    *existed = access(name, F_OK) == 0;
    int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    free(name);
    return fd;
}

/* One process per data directory: a second broker on the same files
 * would keep its own counts and clock and corrupt both (dirlock.c). */
static int ss_lmdb__lock_dir(ss_store *s)
{
    char *name = ss_lmdb__path(s, "statestore.lock");
    if (name == NULL)
        return SS_E_NOMEM;
    s->lock_fd = ss_dirlock_take(name, NULL);
    int err = errno;
    free(name);
    if (s->lock_fd < 0)
        return err == EWOULDBLOCK ? SS_E_BUSY : SS_E_IO;
    return SS_OK;
}

/* Open (or create) the journal; a new file's name is made durable too. */
static int ss_lmdb__open_journal(ss_store *s)
{
    bool existed;
    s->jfd = ss_lmdb__open_in_dir(s, "journal", &existed);
    if (s->jfd < 0)
        return SS_E_IO;
    if (!existed && ss_lmdb__sync_dir(s) != 0)
        return SS_E_IO;
    return SS_OK;
}

/* Open the LMDB environment and its databases; a new one gets its format
 * records. */
static int ss_lmdb__open_env(ss_store *s)
{
    const ss_store_options *o = &s->opt;
    int rc = mdb_env_create(&s->env);
    if (rc != 0)
        return ss_lmdb__mdb_err(rc);
    /* MDB_NOLOCK: the directory lock above keeps every other process out,
     * and without LMDB's writer mutex a transaction begun on the broker's
     * thread may be committed on another (checkpoints, see store.h). No
     * MDB_NOSYNC: every LMDB commit is a checkpoint, fully synced. */
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | MDB_NOLOCK;
    if ((rc = mdb_env_set_maxdbs(s->env, 3)) != 0 ||
        (rc = mdb_env_set_mapsize(s->env, (size_t)o->map_size)) != 0 ||
        (rc = mdb_env_open(s->env, s->path, flags, 0600)) != 0)
        return ss_lmdb__mdb_err(rc);
    /* Pages the meta page counts may lie past the end of the data file:
     * legitimately (pages allocated and freed in one transaction are never
     * written), or because the file was cut short. Reading such a page
     * through the map faults (SIGBUS) and kills the broker; zero-filled,
     * a free one is never read, and one in use is found corrupt
     * (MDB_CORRUPTED) instead. */
    MDB_envinfo info;
    MDB_stat st;
    struct stat fst;
    char *data = ss_lmdb__path(s, "data.mdb");
    if (data == NULL)
        return SS_E_NOMEM;
    if (mdb_env_info(s->env, &info) == 0 && mdb_env_stat(s->env, &st) == 0 && stat(data, &fst) == 0 &&
        (uint64_t)fst.st_size < ((uint64_t)info.me_last_pgno + 1) * st.ms_psize &&
        truncate(data, (off_t)(((uint64_t)info.me_last_pgno + 1) * st.ms_psize)) != 0) {
        int err = errno;
        ss_lmdb__cause(s, "extending the data file to its last page", err);
        free(data);
        errno = err;
        return SS_E_IO;
    }
    free(data);
    if (mdb_env_get_maxkeysize(s->env) < (int)SS_EXPKEY_MAX)
        return SS_E_INVAL;
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &s->txn)) != 0) {
        s->txn = NULL;
        return ss_lmdb__mdb_err(rc);
    }
    if ((rc = mdb_dbi_open(s->txn, "keys", MDB_CREATE, &s->db_keys)) != 0 ||
        (rc = mdb_dbi_open(s->txn, "exp", MDB_CREATE, &s->db_exp)) != 0 ||
        (rc = mdb_dbi_open(s->txn, "meta", MDB_CREATE, &s->db_meta)) != 0) {
        ss_lmdb__drop_txn(s);
        if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) {
            errno = 0;
            return SS_E_CORRUPT;
        }
        return ss_lmdb__mdb_err(rc);
    }
    rc = ss_lmdb__load_format(s);
    if (rc == SS_OK) {
        /* The handles and a new store's records are kept by this commit. */
        rc = mdb_txn_commit(s->txn);
        s->txn = NULL;
        rc = rc == 0 ? SS_OK : ss_lmdb__mdb_err(rc);
    } else {
        /* Nothing of it is kept: the close that follows must find no
         * transaction to checkpoint (it would empty the journal). */
        int err = errno;
        ss_lmdb__drop_txn(s);
        errno = err;
    }
    return rc;
}

/* Rewrite the data file without its free pages (LMDB's compacting copy)
 * and put the copy in its place; the cause then gives the sizes. Needs the
 * journal empty (everything in the file) and room for the live data. On
 * failure the old file stays. */
static int ss_lmdb__compact(ss_store *s)
{
    char *tmp = ss_lmdb__path(s, "data.mdb.compact"), *data = ss_lmdb__path(s, "data.mdb");
    int rc = SS_E_NOMEM;
    struct stat before, after;
    if (tmp == NULL || data == NULL)
        goto out;
    rc = SS_E_IO;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        ss_lmdb__cause(s, "compaction: creating the copy", errno);
        goto out;
    }
    int mrc = mdb_env_copyfd2(s->env, fd, MDB_CP_COMPACT);
    if (mrc == 0 && (fdatasync(fd) != 0 || fstat(fd, &after) != 0 || stat(data, &before) != 0))
        mrc = errno;
    close(fd);
    if (mrc != 0) {
        ss_lmdb__cause(s, "compaction: writing the copy", mrc);
        unlink(tmp);
        goto out;
    }
    mdb_env_close(s->env);
    s->env = NULL;
    if (rename(tmp, data) != 0) {
        ss_lmdb__cause(s, "compaction: replacing the data file", errno);
        unlink(tmp);
        rc = ss_lmdb__open_env(s) == SS_OK ? SS_E_IO : SS_E_CORRUPT;
        goto out;
    }
    ss_lmdb__sync_dir(s); /* the rename, durable (a crash before keeps either file, whole) */
    rc = ss_lmdb__open_env(s);
    /* The copy is the data file now: without it open, nothing can go on
     * (the store would run on a closed environment). */
    if (rc != SS_OK && rc != SS_E_CORRUPT) {
        ss_lmdb__cause(s, "compaction: opening the compacted data file", rc == SS_E_NOMEM ? ENOMEM : EIO);
        rc = SS_E_CORRUPT;
    }
    if (rc == SS_OK)
        snprintf(s->cause, sizeof s->cause, "data file compacted from %lld to %lld bytes",
                 (long long)before.st_size, (long long)after.st_size);
out:
    free(tmp);
    free(data);
    return rc;
}

static int ss_lmdb__setup(ss_store *s)
{
    if (mkdir(s->path, 0700) != 0 && errno != EEXIST)
        return SS_E_IO;
    int rc = ss_lmdb__lock_dir(s);
    if (rc != SS_OK)
        return rc;
    if ((rc = ss_lmdb__open_journal(s)) != SS_OK)
        return rc;
    if ((rc = ss_lmdb__open_env(s)) == SS_OK)
        rc = ss_lmdb__reload(s, UINT64_MAX);
    if (rc != SS_OK)
        return rc;
    ss_lmdb__keep_discarded(s);
    /* Start from an empty journal: what the replay found is checkpointed,
     * and a torn tail goes. */
    if (s->jseq != s->ckpt_seq && ss_lmdb__checkpoint_now(s) != SS_OK) {
        /* The data file cannot take the journal's changes now (a full
         * disk, say). The journal keeps them: serve from the replayed
         * transaction, as after any failed checkpoint, and try again
         * later. Only a torn tail is cut (shrinking needs no space). */
        s->ckpt_failures = 1;
        s->ckpt_retry_ms = 0; /* the first tick tries again */
        if ((rc = ss_lmdb__reload(s, UINT64_MAX)) != SS_OK)
            return rc;
        struct stat st;
        if (fstat(s->jfd, &st) != 0 ||
            ((uint64_t)st.st_size > s->jend && ftruncate(s->jfd, (off_t)s->jend) != 0)) {
            ss_lmdb__cause(s, "cutting the journal's torn tail", errno);
            return SS_E_IO;
        }
        return SS_OK;
    }
    ss_lmdb__drop_txn(s);
    struct stat st;
    if (fstat(s->jfd, &st) != 0 ||
        (st.st_size != 0 && (ftruncate(s->jfd, 0) != 0 || fdatasync(s->jfd) != 0))) {
        ss_lmdb__cause(s, "emptying the journal", errno);
        return SS_E_IO;
    }
    s->jend = 0;
    if (s->opt.compact) {
        s->compact_rc = ss_lmdb__compact(s);
        if (s->compact_rc == SS_E_CORRUPT)
            return SS_E_IO; /* no data file open: cannot go on */
    }
    return SS_OK;
}

uint64_t ss_store_map_size(uint64_t map_size, uint64_t max_bytes)
{
    if (max_bytes == 0)
        max_bytes = SS_STORE_MAX_BYTES_DEFAULT;
    if (map_size == 0) {
        /* Pages hold more than the charged bytes (B-tree fill, page
         * rounding of large values, index entries, and the pages a
         * checkpoint replaces): leave ample room so the map never fills
         * before the quota does. Only address space: the file grows as it
         * is used. */
        if (max_bytes > (UINT64_MAX - ((uint64_t)64 << 20)) / 4)
            map_size = UINT64_MAX / 2;
        else
            map_size = 4 * max_bytes + ((uint64_t)64 << 20);
    }
    return map_size > SIZE_MAX ? SIZE_MAX : map_size;
}

int ss_store_open(const ss_store_options *o, ss_store **out)
{
    if (o == NULL || o->path == NULL || o->path[0] == '\0' || o->long_key_hash_bits > 64)
        return SS_E_INVAL;
    ss_store *s = calloc(1, sizeof *s);
    if (s == NULL)
        return SS_E_NOMEM;
    s->lock_fd = -1;
    s->jfd = -1;
    s->opt = *o;
    if (s->opt.max_bytes == 0)
        s->opt.max_bytes = SS_STORE_MAX_BYTES_DEFAULT;
    s->opt.map_size = ss_store_map_size(s->opt.map_size, s->opt.max_bytes);
    if (s->opt.sync_interval_ms == 0)
        s->opt.sync_interval_ms = 1000;
    if (s->opt.checkpoint_interval_ms == 0)
        s->opt.checkpoint_interval_ms = SS_STORE_CHECKPOINT_MS_DEFAULT;
    if (s->opt.journal_max_bytes == 0)
        s->opt.journal_max_bytes = SS_STORE_JOURNAL_MAX_DEFAULT;
    if (s->opt.batch_max_bytes == 0 || s->opt.batch_max_bytes > SS_STORE_BATCH_MAX_DEFAULT)
        s->opt.batch_max_bytes = SS_STORE_BATCH_MAX_DEFAULT;
    unsigned bits = s->opt.long_key_hash_bits ? s->opt.long_key_hash_bits : 64;
    s->opt.long_key_hash_bits = bits;
    s->hash_mask = bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
    s->path = strdup(o->path);
    s->opt.path = s->path;
    if (s->path == NULL) {
        free(s);
        return SS_E_NOMEM;
    }
    errno = 0;
    int rc = ss_lmdb__setup(s);
    if (rc != SS_OK) {
        int err = errno; /* the reason, for the caller's message */
        /* A store found damaged says how (other failures: errno). */
        if (o->open_cause && o->open_cause_len && rc == SS_E_CORRUPT)
            snprintf(o->open_cause, o->open_cause_len, "%s", s->cause);
        ss_store_close(s);
        errno = err;
        return rc;
    }
    *out = s;
    return SS_OK;
}

void ss_store_close(ss_store *s)
{
    if (s == NULL)
        return;
    if (s->batch && !s->committing)
        ss_store_abort(s);
    /* What the journal holds goes into the file, so that the next open
     * has nothing to replay; if that fails (or cannot run: no
     * transaction), the next open replays it, so it is synced here. */
    if (!s->committing) {
        bool no_txn = s->txn == NULL;
        if ((ss_lmdb__checkpoint_now(s) != SS_OK || no_txn) && s->jfd >= 0)
            (void)fdatasync(s->jfd);
    }
    ss_lmdb__drop_txn(s);
    if (s->env)
        mdb_env_close(s->env);
    if (s->jfd >= 0)
        close(s->jfd);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    ss_buf_free(&s->frame);
    ss_buf_free(&s->scratch);
    ss_buf_free(&s->last.key);
    free(s->path);
    free(s);
}
