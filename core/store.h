/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store.h - the embedded store: LMDB with a write-ahead journal.
 *
 * Records by key, an expiry index, batches, kept durably in one data
 * directory (store_lmdb.h and its files). The engine reaches it through
 * the storage interface (backend.h, adapter in backend_lmdb.h); what is
 * here besides the data operations (journal, checkpoints, syncs, map
 * size, long-key hashing) is this backend's own, driven by its owner.
 *
 * Every read and write happens inside a batch (one write transaction):
 * ss_store_begin, any number of get/put/del/pop_due, then ss_store_commit
 * (durable per the sync policy) or ss_store_abort (nothing happened). After
 * any storage failure inside a batch the batch is failed: every further call
 * returns the same error and ss_store_commit aborts and returns it, so a
 * batch is applied entirely or not at all.
 */
#ifndef SS_STORE_H
#define SS_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "buf.h"
#include "hlc.h"

typedef struct ss_store ss_store;

enum ss_sync_policy {
    SS_SYNC_ALWAYS = 0, /* fsync at every commit: survives power loss */
    SS_SYNC_PERIODIC,   /* fsync at most every sync_interval_ms; commits still
                           reach the OS, so a process crash loses nothing,
                           and a power loss at most the last interval */
};

/* Bytes charged per key on top of its key and value bytes (record header,
 * version, index entries) when counting against max_bytes. */
#define SS_STORE_RECORD_CHARGE 64u
/* Keys longer than this are stored under a hashed name (see store_lmdb.h). */
#define SS_STORE_INLINE_KEY_MAX 480u

typedef struct ss_store_options {
    const char *path;           /* data directory; created (0700) if missing */
    uint64_t max_keys;          /* 0: no limit */
    uint64_t max_bytes;         /* keys + values + SS_STORE_RECORD_CHARGE per key; 0: default 1 GiB */
    uint64_t map_size;          /* LMDB map size; 0: 4 * max_bytes + 64 MiB */
    enum ss_sync_policy sync;
    uint32_t sync_interval_ms;  /* SS_SYNC_PERIODIC: 0 means 1000 */
    bool external_sync;         /* SS_SYNC_PERIODIC: the owner runs the periodic
                                   sync (ss_store_sync_start...), not the commit */
    uint32_t checkpoint_interval_ms; /* journal into the file at most this often,
                                        by a batch that wrote nothing;
                                        0: SS_STORE_CHECKPOINT_MS_DEFAULT */
    uint64_t journal_max_bytes; /* ...and by any batch when the journal would
                                   grow past this; 0: SS_STORE_JOURNAL_MAX_DEFAULT */
    bool compact;               /* at open, rewrite the data file without its free
                                   pages (needs room for the live data) */
    unsigned long_key_hash_bits; /* testing aid: 1..64 bits of the long-key hash kept; 0: 64 */
    uint64_t batch_max_bytes;   /* journal bytes one batch may write; a put past it
                                   is refused with SS_E_QUOTA (the batch goes on);
                                   0 or more than the default: SS_STORE_BATCH_MAX_DEFAULT */
    uint64_t fail_write_at;     /* testing aid: the Nth journal write fails (EIO); 0: none */
    uint64_t fail_sync_at;      /* testing aid: the Nth fsync of the journal fails; 0: none */
    uint64_t fail_checkpoint_at; /* testing aid: the Nth checkpoint fails (as on a
                                    full disk), and the fail_checkpoints - 1
                                    after it (0: 1); 0: none */
    uint64_t fail_checkpoints;
    /* out, optional: when ss_store_open finds the store damaged
     * (SS_E_CORRUPT), how, if it can tell ("" if not) */
    char *open_cause;
    size_t open_cause_len;
} ss_store_options;

#define SS_STORE_MAX_BYTES_DEFAULT ((uint64_t)1 << 30)
#define SS_STORE_CHECKPOINT_MS_DEFAULT 1000u
#define SS_STORE_JOURNAL_MAX_DEFAULT ((uint64_t)4 << 20)
/* A journal frame's length is 32 bits and a replay reads a frame whole:
 * 1 GiB keeps every frame replayable with room to spare. */
#define SS_STORE_BATCH_MAX_DEFAULT ((uint64_t)1 << 30)

/* Options with every field at its default (path NULL). */
ss_store_options ss_store_options_default(void);

/* The LMDB map size a store opened with map_size and max_bytes uses:
 * map_size when set, else 4 * max_bytes + 64 MiB (max_bytes 0: the
 * default), at most SIZE_MAX. */
uint64_t ss_store_map_size(uint64_t map_size, uint64_t max_bytes);

/* Open or create the store in o->path. On success *out is owned by the
 * caller and freed by ss_store_close. Errors: SS_E_INVAL (bad options),
 * SS_E_IO (directory or LMDB failure; the system's reason in errno, or 0), SS_E_CORRUPT
 * (not a statestore directory of this format), SS_E_BUSY (another process
 * has the directory open), SS_E_NOMEM. */
int ss_store_open(const ss_store_options *o, ss_store **out);

/* Abort any open batch, sync, and free everything. NULL is a no-op. */
void ss_store_close(ss_store *s);

/* Start a batch. SS_E_BUSY if one is open or committing, SS_E_IO. */
int ss_store_begin(ss_store *s);
/* True while a batch is open (and not committing). */
bool ss_store_in_batch(const ss_store *s);
/* True if the open batch wrote anything: committing it costs a sync. */
bool ss_store_batch_dirty(const ss_store *s);
/* Commit the batch; now_ms drives the periodic sync and checkpoints (a
 * checkpoint, when due, runs inside this call). On failure nothing of the
 * batch remains: SS_E_QUOTA (the map or the disk filled up), SS_E_IO;
 * ss_store_cause says which. SS_E_UNAVAILABLE: nothing of the batch
 * remains in this store, but its journal frame, written whole, failed its
 * fsync and could not be cut off durably: a restart after a crash may
 * replay it (the outcome is unknown, and must be answered so). A failed checkpoint is tried again after
 * checkpoint_interval_ms, then after twice as long each time, up to 60 s;
 * meanwhile batches go into the journal. A batch that carried a failed
 * checkpoint goes into the journal too (ss_store_checkpoint_failing then
 * says the checkpoint failed; the commit's result is the journal's). A journal append that would
 * grow the store on a full filesystem fails with SS_E_QUOTA; one that
 * does not (deletes) uses space kept in reserve for it. If the checkpoint
 * at open fails, the store opens anyway and serves from the journal. */
int ss_store_commit(ss_store *s, uint64_t now_ms);
/* The same commit in three steps, so that the slow middle one can run on
 * another thread while the owner goes on with other work (group commit):
 *   prepare - owner's thread; closes the batch. With may_checkpoint, the
 *             commit is a checkpoint if one is due. On failure the batch
 *             is aborted and the error returned.
 *   run     - any thread; returns the commit's result.
 *   finish  - owner's thread, after run has returned (with the memory
 *             ordering of a mutex handoff); pass run's result; returns it
 *             (or the periodic sync's failure).
 * Between prepare and finish the owner must not call the store at all,
 * except ss_store_in_batch (false), ss_store_commit_syncs,
 * ss_store_key_count, ss_store_byte_count and ss_store_next_expiry. */
int ss_store_commit_prepare(ss_store *s, uint64_t now_ms, bool may_checkpoint);
int ss_store_commit_run(ss_store *s);
int ss_store_commit_finish(ss_store *s, int rc, uint64_t now_ms);
/* After prepare: true if run waits for the disk (a checkpoint, or a frame
 * with SS_SYNC_ALWAYS), so that it belongs on another thread; otherwise
 * run only hands a few bytes to the operating system. */
bool ss_store_commit_syncs(const ss_store *s);
/* Outside a batch: true if a checkpoint is due (the interval passed or the
 * journal is large) and there is something to checkpoint. The owner then
 * opens a batch and commits it at once with may_checkpoint. A batch that
 * writes is made a checkpoint only when the journal is at its size limit. */
bool ss_store_checkpoint_due(const ss_store *s, uint64_t now_ms);
/* Backups. checkpoint_soon makes a checkpoint due at the next chance,
 * even during writes. file_current: between batches and commits, true when
 * the data file holds every commit (nothing in the journal).
 * hold_checkpoints: while held, no checkpoint is due, whatever asks for
 * one (commits go into the journal). copy_fd writes a compacted copy of
 * the data file as of the last checkpoint to fd, from any thread, while
 * the owner goes on with batches and commits, provided checkpoints are
 * held until it returns (the pages it reads may be reused after the next
 * checkpoint). 0, or SS_E_IO with errno. */
void ss_store_checkpoint_soon(ss_store *s);
void ss_store_hold_checkpoints(ss_store *s, bool hold);
bool ss_store_file_current(const ss_store *s);
int ss_store_copy_fd(ss_store *s, int fd);
/* Outside a batch: write what the journal holds into the data file now,
 * with LMDB's full sync, as ss_store_close does (whatever the interval,
 * a failure's backoff or a hold), so that the owner learns whether the
 * file holds every commit before it closes the store. 0 (also when there
 * was nothing to write), or the failure (SS_E_QUOTA: the disk or the map
 * is full; SS_E_IO), ss_store_cause saying why; after a failure, only
 * ss_store_cause and ss_store_close. */
int ss_store_checkpoint_now(ss_store *s);
/* Drop the batch. A batch that wrote something is undone by rebuilding the
 * state of the last commit from the file and the journal: costs up to a
 * replay of journal_max_bytes. */
void ss_store_abort(ss_store *s);
/* Outside a batch: fsync if the periodic interval has passed since the
 * last sync and something is unsynced (with external_sync: nothing, the
 * owner syncs). 0 or SS_E_IO. */
int ss_store_flush(ss_store *s, uint64_t now_ms);
/* The periodic sync in three steps, so that the fsync can run on another
 * thread without stalling the owner (options.external_sync):
 *   sync_start - owner's thread: true if a sync is due now (something was
 *                committed since the last one and the interval has passed);
 *                the sync then covers every commit so far.
 *   sync_run   - any thread, even while the owner runs batches and
 *                commits: 0 or SS_E_IO.
 *   sync_done  - owner's thread, with run's result (see sync_lost). */
bool ss_store_sync_start(ss_store *s, uint64_t now_ms);
int ss_store_sync_run(ss_store *s);
void ss_store_sync_done(ss_store *s, int rc);
/* A failed fsync (periodic or sync_run) is not tried again as if nothing
 * happened: after an fsync error the kernel may have dropped the pages it
 * could not write, and a later fsync would succeed without them (the
 * lesson PostgreSQL learnt in 2018). The store marks the writes since the
 * last good sync as lost to the disk (sync_lost) and makes a checkpoint
 * due at once: it writes the whole state, held in memory, into the data
 * file with a full sync; only that clears the mark. Until then
 * ss_store_all_synced is false. */
bool ss_store_sync_lost(const ss_store *s);
/* True when every commit is known to be on disk. */
bool ss_store_all_synced(const ss_store *s);

/* Look up key in the open batch. 0 and *rec, SS_E_NOTFOUND, or a failure
 * (SS_E_IO, SS_E_CORRUPT). Expiry is not applied here. */
int ss_store_get(ss_store *s, ss_bytes key, ss_record *rec);

/* Insert or replace key with *rec (rec->value is copied). Keeps the expiry
 * index in step. SS_E_QUOTA (max_keys, max_bytes or batch_max_bytes would be exceeded; the
 * store is unchanged), SS_E_INVAL (key empty or longer than SS_STORE_KEY_MAX),
 * SS_E_IO. */
int ss_store_put(ss_store *s, ss_bytes key, const ss_record *rec);

/* Remove key. 0, SS_E_NOTFOUND, SS_E_IO. */
int ss_store_del(ss_store *s, ss_bytes key);

/* A lower bound of the earliest expiry deadline in the store, or
 * UINT64_MAX if no key expires. O(1) except the first call after an abort. */
uint64_t ss_store_next_expiry(ss_store *s);

/* Remove the key with the earliest deadline if that deadline is <= now_ms:
 * its key is copied into *key (replacing the contents) and its version into
 * *version. 0, SS_E_NOTFOUND (nothing due), or a failure. */
int ss_store_pop_due(ss_store *s, uint64_t now_ms, ss_buf *key, ss_hlc *version);

/* Outside a commit: how many keys have a deadline <= now_ms (counted up
 * to cap; 0 while a commit is under way). */
uint64_t ss_store_due_count(ss_store *s, uint64_t now_ms, uint64_t cap);
/* Outside a commit (in a batch, its writes are seen): walk the keys in the store's order from
 * the first one after the cursor `after` (empty: from the start), calling
 * fn for each, until fn returns false or max_examined keys were seen. key,
 * the cursor that names it (to go on after it) and rec borrow the store's
 * memory during the call only; expiry is not
 * applied. *next gets the cursor to go on from (empty when the walk
 * reached the end): an opaque byte string. 0, SS_E_BUSY, or a failure.
 * prefix (empty: none): only keys that start with it are wanted. The walk
 * starts at the first of them when `after` is before it, and ends (next
 * empty) once past the last; a prefix of more than
 * SS_STORE_INLINE_KEY_MAX bytes is walked as its first that many, so
 * keys that share only those (long keys, stored by them) are seen too. */
typedef bool (*ss_store_scan_fn)(void *ctx, ss_bytes key, ss_bytes cursor, const ss_record *rec);
int ss_store_scan(ss_store *s, ss_bytes after, ss_bytes prefix, size_t max_examined, ss_store_scan_fn fn,
                  void *ctx, ss_buf *next);
/* Bytes in the journal (what the next checkpoint writes into the data
 * file), and when the last checkpoint since open succeeded (the now_ms of
 * its commit; 0: none). */
uint64_t ss_store_journal_bytes(const ss_store *s);
uint64_t ss_store_last_checkpoint_ms(const ss_store *s);
/* 16 bytes derived from the store's own random key (made when the store
 * was created, kept in it): the same across restarts, never written out
 * as they are. For keys of data given to clients (SCAN's tokens). */
void ss_store_secret(const ss_store *s, const char *purpose, uint8_t out[16]);

/* Keys and charged bytes as of the open batch (or the last commit). */
uint64_t ss_store_key_count(const ss_store *s);
uint64_t ss_store_byte_count(const ss_store *s);

/* The clock stamp persisted with the data: the engine saves the last stamp
 * it issued so versions keep growing across restarts. set needs a batch. */
int ss_store_set_clock(ss_store *s, uint64_t wall, uint32_t counter);
void ss_store_get_clock(const ss_store *s, uint64_t *wall, uint32_t *counter);

/* What the last failure was and why, in words ("writing the journal: No
 * space left on device", "max_keys (1000 keys) reached"), for the owner's
 * log; "" before any. Valid until the next call on s. */
const char *ss_store_cause(const ss_store *s);
/* True while checkpoints fail (the journal then keeps growing and holds
 * everything since the last good one); *retry_ms: when the next is tried. */
bool ss_store_checkpoint_failing(const ss_store *s, uint64_t *retry_ms);
/* What the open's replay of the journal left out, for the owner's log ("":
 * nothing): bytes after its last good frame, kept in journal.discarded in
 * the data directory before the journal was emptied. *damage: whole
 * frames followed the one it stopped at (written out of order before a
 * power loss, or a damaged disk: what they held is not in the store). */
const char *ss_store_discarded(const ss_store *s, bool *damage);
/* After an open with options.compact: 0 if the data file was compacted
 * (ss_store_cause then gives the sizes), else why not (SS_E_IO: the old
 * file is kept and used; ss_store_cause says why). */
int ss_store_compaction_result(const ss_store *s);
/* Between commit_prepare and commit_finish: true if this commit is a
 * checkpoint. */
bool ss_store_commit_is_checkpoint(const ss_store *s);

/* Effective options after defaults were applied. */
const ss_store_options *ss_store_options_get(const ss_store *s);

#endif
