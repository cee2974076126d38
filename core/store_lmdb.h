/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_lmdb.h - the LMDB backend's internals, shared by its files:
 *   store_lmdb.c         basics (errors, the batch's writes and their
 *                        journal record) and the data operations
 *   store_lmdb_keys.c    where a key lives: long keys, the expiry index
 *   store_lmdb_open.c    opening: the directory lock, the environment,
 *                        replay, compaction; closing
 *   store_lmdb_commit.c  batches, commits, checkpoints, the journal's
 *                        space and fsyncs
 * Not a public header: store.h is the interface.
 *
 * Durability: a write-ahead journal in front of LMDB. One LMDB write
 * transaction stays open across batches; every write a batch makes is
 * applied to it and also recorded as an operation of the batch's journal
 * frame (journal.h). Committing a batch appends its frame to the journal
 * file with one write (and an fdatasync with SS_SYNC_ALWAYS). Now and then,
 * at a checkpoint, the LMDB transaction is committed with LMDB's full sync
 * and the journal is emptied. Opening the store replays the frames after the
 * last checkpoint.
 *
 * Why: committing LMDB once per batch copies several pages per commit; and
 * with MDB_NOSYNC (the only way to make that cheap) LMDB warns that a power
 * loss can corrupt the file, since the meta page may reach the disk before
 * the pages it points to. Here the LMDB file only changes by fully synced
 * commits, so it is never corrupt; what a power loss can cut is the
 * journal's unsynced tail, which the frames' checks detect. The meta record
 * "journal" holds the number of the last frame a checkpoint covers.
 *
 * A batch that fails cannot be taken out of the open LMDB transaction
 * alone: the transaction is dropped and rebuilt from the last checkpoint
 * and the journal's frames (ss_lmdb__reload), which is what a restart does.
 *
 * Three databases in one environment:
 *   keys: LMDB key -> record   (the records)
 *   exp:  deadline (8 bytes, big endian) + LMDB key -> ""  (expiry index,
 *         so a sweep takes due keys in deadline order without a scan)
 *   meta: format, hash key, charged bytes, persisted clock
 *
 * Long keys. LMDB keys are at most 511 bytes, and an expiry index entry
 * holds 8 more. A key of up to SS_STORE_INLINE_KEY_MAX (480) bytes is its
 * own LMDB key. A longer key is stored under its first 480 bytes + a keyed
 * 64-bit SipHash of the whole key + a 16-bit slot number (490 bytes, so it
 * can never equal an inline key), and the record keeps the rest of the key.
 * Keys whose names collide take consecutive slots 0, 1, 2...; a lookup
 * probes slots until it finds the key or an empty slot, and a removal moves
 * the chain's last slot into the hole so that chains never have gaps.
 *
 * Records are encoded by record.c.
 */
#ifndef SS_STORE_LMDB_H
#define SS_STORE_LMDB_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "store.h"

#define SS_LKEY_HASHED (SS_STORE_INLINE_KEY_MAX + 8 + 2)
#define SS_LKEY_MAX SS_LKEY_HASHED
#define SS_EXPKEY_MAX (8 + SS_LKEY_MAX)
#define SS_FORMAT_VERSION 1u
#define SS_FRAME_KEEP ((size_t)1 << 20) /* frame memory kept between batches */
/* Journal space allocated ahead of its end (beyond the file's size), so
 * that on a full filesystem a batch that does not grow the store (deletes)
 * can still be journaled; see ss_lmdb__journal_room. */
#define SS_JOURNAL_RESERVE ((uint64_t)1 << 20)
/* A failed checkpoint is tried again after checkpoint_interval_ms, twice
 * that after a second failure, and so on up to this. */
#define SS_CKPT_BACKOFF_MAX_MS 60000u

/* Where a key lives (or would live) in the keys database. */
struct ss_loc {
    uint8_t lk[SS_LKEY_MAX];
    size_t lk_len;
    bool found;
    MDB_val data; /* the stored record when found */
};

struct ss_store {
    ss_store_options opt;
    char *path;
    MDB_env *env;
    MDB_dbi db_keys, db_exp, db_meta;
    MDB_txn *txn; /* open across batches until the next checkpoint */
    /* A cursor on the keys database: a put right after a read of the same
     * key finds its place without a new descent. */
    MDB_cursor *cur;
    int lock_fd; /* holds the data directory's exclusive lock; -1 if none */
    int jfd;     /* the journal file */
    bool batch;      /* a batch is open (or committing) */
    bool committing; /* between commit_prepare and commit_finish */
    bool ckpt;       /* the prepared commit is a checkpoint */
    bool ckpt_fell_back; /* ...which failed: the batch went to the journal */
    bool jtail;          /* the commit under way wrote past jend */
    bool jframe_whole;   /* ... and its frame was written whole: should its
                            batch fail after that (its fsync, a fallback's
                            replay), it may be on the disk and come back in a
                            replay unless its cut is synced */
    bool dirty;      /* the open batch changed something */
    int failed; /* error that failed the open batch, 0 if none */
    int broken; /* a reload failed: tried again at the next begin */
    unsigned reopened; /* times the data file was opened again (ss_lmdb__reload) */
    ss_buf frame;      /* the open batch's journal frame */
    uint64_t jend;     /* bytes of good frames in the journal file */
    uint64_t jseq;     /* number of the last frame written */
    uint64_t ckpt_seq; /* number of the last frame in LMDB's file */
    uint64_t last_ckpt_ms;
    uint64_t ckpt_ok_ms;      /* the last checkpoint that succeeded; 0: none since open */
    bool ckpt_asked;          /* ss_store_checkpoint_soon: one is wanted now */
    bool ckpt_held;           /* ss_store_hold_checkpoints: none may commit */
    unsigned ckpt_failures;   /* checkpoints failed in a row */
    uint64_t ckpt_retry_ms;   /* after a failure: no checkpoint before this */
    uint64_t jreserved;       /* journal bytes allocated from offset 0; 0: unknown */
    bool jreserve_unsupported; /* the filesystem cannot allocate ahead */
    bool grows;               /* the prepared batch adds charged bytes */
    char cause[192];          /* what the last failure was, and why */
    int compact_rc;           /* the compaction at open: 0, or why it failed */
    char discarded[512];      /* what the open's replay left out of the journal ("": nothing) */
    bool discarded_damage;    /* and whole frames followed the one it stopped at */
    uint8_t hash_key[16];
    uint64_t hash_mask;
    uint64_t keys, bytes;     /* as of the open transaction */
    uint64_t committed_bytes; /* as of the last commit */
    uint64_t clock_wall, committed_wall;
    uint32_t clock_counter, committed_counter;
    uint64_t next_expiry; /* lower bound of the earliest deadline; 0: unknown */
    uint64_t last_sync_ms;
    uint64_t commits;      /* commits since open */
    uint64_t synced;       /* commits covered by the last sync */
    uint64_t sync_covers;  /* commits the sync under way will cover */
    /* An fsync of the journal failed: the kernel may have dropped the
     * pages it could not write, so a later fsync that succeeds proves
     * nothing about them. Only a checkpoint (the whole state, from memory,
     * into the data file with a full sync) covers them again. */
    bool sync_lost;
    int sync_err;          /* errno of the failed sync_run, for sync_done */
    uint64_t writes_tried, syncs_tried, ckpts_tried; /* for the failure injection options */
    ss_buf scratch;
    /* The location found by the last get, reused by a put of the same key
     * right after it (the engine reads a key, then writes it): one B-tree
     * descent saved. Any other call forgets it. */
    struct {
        bool valid;
        ss_buf key; /* a copy: the caller's bytes may be gone by the put */
        struct ss_loc loc;
    } last;
};

/* Databases as numbered in journal frames. */
enum { SS_DB_KEYS = 0, SS_DB_EXP = 1, SS_DB_META = 2 };

/* Helpers shared by the backend's files; each is described where it is
 * defined. */

/* store_lmdb_keys.c */
int ss_lmdb__exp_op(ss_store *s, uint64_t deadline, const uint8_t *lk, size_t lk_len, bool add);
int ss_lmdb__find(ss_store *s, ss_bytes key, struct ss_loc *loc);
int ss_lmdb__remove(ss_store *s, const uint8_t *lk_in, size_t lk_len, const ss_record *old,
                    size_t old_klen);

/* store_lmdb_open.c */
void ss_lmdb__drop_txn(ss_store *s);
int ss_lmdb__reload(ss_store *s, uint64_t limit);

/* store_lmdb_commit.c */
int ss_lmdb__checkpoint_now(ss_store *s);

/* store_lmdb.c */
void ss_lmdb__cause(ss_store *s, const char *what, int err);
uint64_t ss_lmdb__charge(size_t klen, size_t vlen);
MDB_dbi ss_lmdb__dbi(const ss_store *s, uint8_t db);
int ss_lmdb__del(ss_store *s, uint8_t db, MDB_val *k);
int ss_lmdb__fail(ss_store *s, int mdb_rc);
void ss_lmdb__forget(ss_store *s);
int ss_lmdb__log(ss_store *s, uint8_t kind, uint8_t db, const MDB_val *k, const MDB_val *v);
int ss_lmdb__mdb_err(int rc);
int ss_lmdb__meta_get(ss_store *s, const char *name, MDB_val *v);
int ss_lmdb__meta_put(ss_store *s, const char *name, const void *data, size_t len);
int ss_lmdb__put(ss_store *s, uint8_t db, MDB_val *k, MDB_val *v);

#endif
