/* store_lmdb.c - the store on LMDB, embedded and durable.
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
 * and the journal's frames (ss__reload), which is what a restart does.
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
 * Record layout (integers big endian):
 *   u8 flags (1 fencing token, 2 expiry, 4 long key)
 *   stamp version: u64 wall, u32 counter, u8 node length, node bytes
 *   [stamp token] [u64 expiry ms] [u32 tail length, key tail]
 *   value bytes to the end
 */
#include "store.h"

#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bigendian.h"
#include "errors.h"
#include "journal.h"
#include "siphash.h"

#define SS_LKEY_HASHED (SS_STORE_INLINE_KEY_MAX + 8 + 2)
#define SS_LKEY_MAX SS_LKEY_HASHED
#define SS_EXPKEY_MAX (8 + SS_LKEY_MAX)
#define SS_FORMAT_VERSION 1u
#define SS_REC_FT 1u
#define SS_REC_EXP 2u
#define SS_REC_LONG 4u
#define SS_FRAME_KEEP ((size_t)1 << 20) /* frame memory kept between batches */

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
    bool dirty;      /* the open batch changed something */
    int failed; /* error that failed the open batch, 0 if none */
    int broken; /* a reload failed: tried again at the next begin */
    ss_buf frame;      /* the open batch's journal frame */
    uint64_t jend;     /* bytes of good frames in the journal file */
    uint64_t jseq;     /* number of the last frame written */
    uint64_t ckpt_seq; /* number of the last frame in LMDB's file */
    uint64_t last_ckpt_ms;
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


static int ss__mdb_err(int rc)
{
    if (rc == MDB_NOTFOUND)
        return SS_E_NOTFOUND;
    if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
        return SS_E_QUOTA;
    if (rc == ENOMEM)
        return SS_E_NOMEM;
    return SS_E_IO;
}

static void ss__forget(ss_store *s)
{
    s->last.valid = false;
}

/* Record a write failure: the transaction is unusable from here on. */
static int ss__fail(ss_store *s, int mdb_rc)
{
    int rc = ss__mdb_err(mdb_rc);
    if (rc == SS_E_NOTFOUND)
        rc = SS_E_IO;
    if (s->failed == 0)
        s->failed = rc;
    return s->failed;
}

/* Databases as numbered in journal frames. */
enum { SS_DB_KEYS = 0, SS_DB_EXP = 1, SS_DB_META = 2 };

static MDB_dbi ss__dbi(const ss_store *s, uint8_t db)
{
    return db == SS_DB_KEYS ? s->db_keys : db == SS_DB_EXP ? s->db_exp : s->db_meta;
}

/* Record a write already applied to the transaction in the batch's frame. */
static int ss__log(ss_store *s, uint8_t kind, uint8_t db, const MDB_val *k, const MDB_val *v)
{
    int rc = ss_jframe_op(&s->frame, kind, db, k->mv_data, k->mv_size, v ? v->mv_data : NULL,
                          v ? v->mv_size : 0);
    if (rc != SS_OK && s->failed == 0)
        s->failed = rc;
    return rc;
}

/* The batch's writes: applied to the transaction, then logged. */
static int ss__put(ss_store *s, uint8_t db, MDB_val *k, MDB_val *v)
{
    int rc = mdb_put(s->txn, ss__dbi(s, db), k, v, 0);
    if (rc != 0)
        return ss__fail(s, rc);
    return ss__log(s, SS_JOP_PUT, db, k, v);
}

/* MDB_NOTFOUND is returned as is (the caller knows what it means). */
static int ss__del(ss_store *s, uint8_t db, MDB_val *k)
{
    int rc = mdb_del(s->txn, ss__dbi(s, db), k, NULL);
    if (rc == MDB_NOTFOUND)
        return SS_E_NOTFOUND;
    if (rc != 0)
        return ss__fail(s, rc);
    return ss__log(s, SS_JOP_DEL, db, k, NULL);
}

static uint64_t ss__charge(size_t klen, size_t vlen)
{
    return (uint64_t)klen + vlen + SS_STORE_RECORD_CHARGE;
}

/* ---- records ---------------------------------------------------------- */

static size_t ss__stamp_size(const ss_hlc *h)
{
    return 8 + 4 + 1 + (size_t)h->node_len;
}

static uint8_t *ss__stamp_put(uint8_t *p, const ss_hlc *h)
{
    ss_put_be(p, h->wall, 8);
    ss_put_be(p + 8, h->counter, 4);
    p[12] = h->node_len;
    memcpy(p + 13, h->node, h->node_len);
    return p + 13 + h->node_len;
}

static int ss__stamp_get(const uint8_t **p, const uint8_t *end, ss_hlc *h)
{
    if (end - *p < 13)
        return SS_E_CORRUPT;
    h->wall = ss_get_be(*p, 8);
    h->counter = (uint32_t)ss_get_be(*p + 8, 4);
    h->node_len = (*p)[12];
    *p += 13;
    if (end - *p < h->node_len)
        return SS_E_CORRUPT;
    memcpy(h->node, *p, h->node_len);
    *p += h->node_len;
    return SS_OK;
}

/* Decode a stored record; *tail gets the long-key tail (empty if inline). */
static int ss__rec_decode(const MDB_val *v, ss_record *rec, ss_bytes *tail)
{
    const uint8_t *p = v->mv_data, *end = p + v->mv_size;
    if (v->mv_size < 1)
        return SS_E_CORRUPT;
    uint8_t flags = *p++;
    if (ss__stamp_get(&p, end, &rec->version) != SS_OK)
        return SS_E_CORRUPT;
    rec->has_ft = (flags & SS_REC_FT) != 0;
    if (rec->has_ft && ss__stamp_get(&p, end, &rec->ft) != SS_OK)
        return SS_E_CORRUPT;
    rec->expiry_ms = 0;
    if (flags & SS_REC_EXP) {
        if (end - p < 8)
            return SS_E_CORRUPT;
        rec->expiry_ms = ss_get_be(p, 8);
        p += 8;
    }
    tail->data = NULL;
    tail->len = 0;
    if (flags & SS_REC_LONG) {
        if (end - p < 4)
            return SS_E_CORRUPT;
        size_t n = (size_t)ss_get_be(p, 4);
        p += 4;
        if ((size_t)(end - p) < n)
            return SS_E_CORRUPT;
        tail->data = p;
        tail->len = n;
        p += n;
    }
    rec->value.data = p;
    rec->value.len = (size_t)(end - p);
    return SS_OK;
}

static size_t ss__rec_size(const ss_record *rec, size_t tail_len, bool is_long)
{
    size_t n = 1 + ss__stamp_size(&rec->version);
    if (rec->has_ft)
        n += ss__stamp_size(&rec->ft);
    if (rec->expiry_ms)
        n += 8;
    if (is_long)
        n += 4 + tail_len;
    return n + rec->value.len;
}

static void ss__rec_encode(uint8_t *p, const ss_record *rec, const uint8_t *tail, size_t tail_len,
                           bool is_long)
{
    uint8_t flags = (uint8_t)((rec->has_ft ? SS_REC_FT : 0) | (rec->expiry_ms ? SS_REC_EXP : 0) |
                              (is_long ? SS_REC_LONG : 0));
    *p++ = flags;
    p = ss__stamp_put(p, &rec->version);
    if (rec->has_ft)
        p = ss__stamp_put(p, &rec->ft);
    if (rec->expiry_ms) {
        ss_put_be(p, rec->expiry_ms, 8);
        p += 8;
    }
    if (is_long) {
        ss_put_be(p, tail_len, 4);
        memcpy(p + 4, tail, tail_len);
        p += 4 + tail_len;
    }
    if (rec->value.len)
        memcpy(p, rec->value.data, rec->value.len);
}

/* ---- key locations ---------------------------------------------------- */

static void ss__set_slot(uint8_t *lk, uint32_t slot)
{
    ss_put_be(lk + SS_LKEY_HASHED - 2, slot, 2);
}

static int ss__find(ss_store *s, ss_bytes key, struct ss_loc *loc)
{
    MDB_val k, v;
    loc->found = false;
    if (key.len <= SS_STORE_INLINE_KEY_MAX) {
        memcpy(loc->lk, key.data, key.len);
        loc->lk_len = key.len;
        k.mv_data = loc->lk;
        k.mv_size = loc->lk_len;
        int rc = mdb_cursor_get(s->cur, &k, &v, MDB_SET_KEY);
        if (rc == MDB_NOTFOUND)
            return SS_OK;
        if (rc != 0)
            return ss__mdb_err(rc);
        loc->found = true;
        loc->data = v;
        return SS_OK;
    }
    uint64_t h = ss_siphash(s->hash_key, key.data, key.len) & s->hash_mask;
    memcpy(loc->lk, key.data, SS_STORE_INLINE_KEY_MAX);
    ss_put_be(loc->lk + SS_STORE_INLINE_KEY_MAX, h, 8);
    loc->lk_len = SS_LKEY_HASHED;
    const uint8_t *want = key.data + SS_STORE_INLINE_KEY_MAX;
    size_t want_len = key.len - SS_STORE_INLINE_KEY_MAX;
    for (uint32_t slot = 0; slot <= 0xffff; slot++) {
        ss__set_slot(loc->lk, slot);
        k.mv_data = loc->lk;
        k.mv_size = loc->lk_len;
        int rc = mdb_cursor_get(s->cur, &k, &v, MDB_SET_KEY);
        if (rc == MDB_NOTFOUND)
            return SS_OK; /* loc->lk names the first free slot */
        if (rc != 0)
            return ss__mdb_err(rc);
        ss_record rec;
        ss_bytes tail;
        if (ss__rec_decode(&v, &rec, &tail) != SS_OK)
            return SS_E_CORRUPT;
        if (tail.len == want_len && memcmp(tail.data, want, want_len) == 0) {
            loc->found = true;
            loc->data = v;
            return SS_OK;
        }
    }
    return SS_E_LIMIT; /* 65536 colliding long keys: cannot be stored */
}

static int ss__exp_op(ss_store *s, uint64_t deadline, const uint8_t *lk, size_t lk_len, bool add)
{
    uint8_t ek[SS_EXPKEY_MAX];
    ss_put_be(ek, deadline, 8);
    memcpy(ek + 8, lk, lk_len);
    MDB_val k = {8 + lk_len, ek}, v = {0, NULL};
    int rc = add ? ss__put(s, SS_DB_EXP, &k, &v) : ss__del(s, SS_DB_EXP, &k);
    return rc == SS_E_NOTFOUND ? SS_E_CORRUPT : rc;
}

/* Remove the record at lk (whose decoded record is old), its index entry,
 * and close the gap in its long-key chain. */
static int ss__remove(ss_store *s, const uint8_t *lk_in, size_t lk_len, const ss_record *old,
                      size_t old_klen)
{
    uint8_t lk[SS_LKEY_MAX];
    memcpy(lk, lk_in, lk_len);
    uint64_t old_charge = ss__charge(old_klen, old->value.len);
    int rc;
    if (old->expiry_ms && (rc = ss__exp_op(s, old->expiry_ms, lk, lk_len, false)) != SS_OK)
        return rc;

    MDB_val k = {lk_len, lk};
    uint32_t last = 0;
    MDB_val lastv = {0, NULL};
    if (lk_len == SS_LKEY_HASHED) {
        /* Find the chain's last slot after this one. */
        uint32_t slot = (uint32_t)ss_get_be(lk + SS_LKEY_HASHED - 2, 2);
        uint8_t probe[SS_LKEY_MAX];
        memcpy(probe, lk, lk_len);
        for (uint32_t j = slot + 1; j <= 0xffff; j++) {
            ss__set_slot(probe, j);
            MDB_val pk = {lk_len, probe}, pv;
            int grc = mdb_get(s->txn, s->db_keys, &pk, &pv);
            if (grc == MDB_NOTFOUND)
                break;
            if (grc != 0)
                return ss__fail(s, grc);
            last = j;
            lastv = pv;
        }
        if (last > slot) {
            /* Move the last slot into the hole: copy its record first, as
             * the writes below may move LMDB's pages. */
            ss_buf_clear(&s->scratch);
            if (ss_buf_append(&s->scratch, lastv.mv_data, lastv.mv_size) != SS_OK)
                return SS_E_NOMEM;
            MDB_val mv = {s->scratch.len, s->scratch.data};
            ss_record moved;
            ss_bytes tail;
            if (ss__rec_decode(&mv, &moved, &tail) != SS_OK)
                return SS_E_CORRUPT;
            if ((rc = ss__put(s, SS_DB_KEYS, &k, &mv)) != SS_OK)
                return rc;
            ss__set_slot(probe, last);
            MDB_val pk = {lk_len, probe};
            if ((rc = ss__del(s, SS_DB_KEYS, &pk)) != SS_OK)
                return rc == SS_E_NOTFOUND ? SS_E_CORRUPT : rc;
            if (moved.expiry_ms) {
                if ((rc = ss__exp_op(s, moved.expiry_ms, probe, lk_len, false)) != SS_OK ||
                    (rc = ss__exp_op(s, moved.expiry_ms, lk, lk_len, true)) != SS_OK)
                    return rc;
            }
            s->keys--;
            s->bytes -= old_charge;
            return SS_OK;
        }
    }
    if ((rc = ss__del(s, SS_DB_KEYS, &k)) != SS_OK)
        return rc == SS_E_NOTFOUND ? SS_E_CORRUPT : rc;
    s->keys--;
    s->bytes -= old_charge;
    return SS_OK;
}

/* ---- public ----------------------------------------------------------- */

ss_store_options ss_store_options_default(void)
{
    ss_store_options o;
    memset(&o, 0, sizeof o);
    o.max_bytes = SS_STORE_MAX_BYTES_DEFAULT;
    o.sync = SS_SYNC_ALWAYS;
    o.sync_interval_ms = 1000;
    return o;
}

static int ss__check_batch(const ss_store *s)
{
    if (s->committing || !s->batch)
        return SS_E_BUSY;
    return s->failed;
}

static int ss__meta_get(ss_store *s, const char *name, MDB_val *v)
{
    MDB_val k = {strlen(name), (void *)name};
    int rc = mdb_get(s->txn, s->db_meta, &k, v);
    return rc == 0 ? SS_OK : ss__mdb_err(rc);
}

static int ss__meta_put(ss_store *s, const char *name, const void *data, size_t len)
{
    MDB_val k = {strlen(name), (void *)name}, v = {len, (void *)data};
    return ss__put(s, SS_DB_META, &k, &v);
}

/* Read the fixed meta records, or create them in a new store. */
static int ss__load_format(ss_store *s)
{
    MDB_val v;
    int rc = ss__meta_get(s, "format", &v);
    if (rc == SS_E_NOTFOUND) {
        MDB_stat st;
        if (mdb_stat(s->txn, s->db_keys, &st) != 0 || st.ms_entries != 0)
            return SS_E_CORRUPT;
        uint8_t fmt[4];
        ss_put_be(fmt, SS_FORMAT_VERSION, 4);
        if (getrandom(s->hash_key, sizeof s->hash_key, 0) != (ssize_t)sizeof s->hash_key)
            return SS_E_IO;
        if ((rc = ss__meta_put(s, "format", fmt, 4)) != SS_OK ||
            (rc = ss__meta_put(s, "hashkey", s->hash_key, 16)) != SS_OK)
            return rc;
        return SS_OK;
    }
    if (rc != SS_OK)
        return rc;
    if (v.mv_size != 4 || ss_get_be(v.mv_data, 4) != SS_FORMAT_VERSION)
        return SS_E_CORRUPT;
    if (ss__meta_get(s, "hashkey", &v) != SS_OK || v.mv_size != 16)
        return SS_E_CORRUPT;
    memcpy(s->hash_key, v.mv_data, 16);
    return SS_OK;
}

/* A counter of the meta database: 0 if absent. */
static int ss__load_counter(ss_store *s, const char *name, size_t size, uint8_t *out)
{
    MDB_val v;
    int rc = ss__meta_get(s, name, &v);
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
static int ss__load_counts(ss_store *s)
{
    uint8_t b[8], c[12];
    int rc;
    MDB_stat st;
    if ((rc = ss__load_counter(s, "bytes", 8, b)) != SS_OK ||
        (rc = ss__load_counter(s, "clock", 12, c)) != SS_OK)
        return rc;
    if ((rc = mdb_stat(s->txn, s->db_keys, &st)) != 0)
        return ss__mdb_err(rc);
    s->keys = st.ms_entries;
    s->bytes = s->committed_bytes = ss_get_be(b, 8);
    s->clock_wall = s->committed_wall = ss_get_be(c, 8);
    s->clock_counter = s->committed_counter = (uint32_t)ss_get_be(c + 8, 4);
    return SS_OK;
}

static int ss__replay_op(void *ctx, const struct ss_jop *op)
{
    ss_store *s = ctx;
    if (op->db > SS_DB_META)
        return SS_E_CORRUPT;
    MDB_val k = {op->key.len, (void *)op->key.data}, v = {op->value.len, (void *)op->value.data};
    int rc = op->kind == SS_JOP_PUT ? mdb_put(s->txn, ss__dbi(s, op->db), &k, &v, 0)
                                    : mdb_del(s->txn, ss__dbi(s, op->db), &k, NULL);
    return rc == 0 ? SS_OK : rc == MDB_NOTFOUND ? SS_E_CORRUPT : ss__mdb_err(rc);
}

static void ss__drop_txn(ss_store *s)
{
    if (s->txn)
        mdb_txn_abort(s->txn); /* also closes the cursor */
    s->txn = NULL;
    s->cur = NULL;
}

/* Open the long transaction on the last checkpoint and replay the
 * journal's frames after it, up to limit bytes: the state of the last
 * committed batch. */
static int ss__reload(ss_store *s, uint64_t limit)
{
    ss__drop_txn(s);
    s->next_expiry = 0;
    s->failed = 0;
    int rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
    if (rc != 0) {
        s->txn = NULL;
        return ss__mdb_err(rc);
    }
    uint8_t j[8];
    if ((rc = ss__load_counter(s, "journal", 8, j)) == SS_OK) {
        s->ckpt_seq = ss_get_be(j, 8);
        rc = ss_journal_replay(s->jfd, limit, s->hash_key, s->ckpt_seq, ss__replay_op, s, &s->jend,
                               &s->jseq);
    }
    if (rc == SS_OK)
        rc = ss__load_counts(s);
    if (rc == SS_OK && (rc = mdb_cursor_open(s->txn, s->db_keys, &s->cur)) != 0)
        rc = ss__mdb_err(rc);
    if (rc != SS_OK)
        ss__drop_txn(s);
    return rc;
}

/* The counters' meta records: charged bytes and the persisted clock.
 * They change with nearly every batch. A batch only logs them in its
 * frame (a replay puts them back into the transaction); a checkpoint puts
 * them into the transaction, and so into the file. That spares every batch
 * two B-tree writes. */
static void ss__counters_encode(const ss_store *s, uint8_t b[8], uint8_t c[12])
{
    ss_put_be(b, s->bytes, 8);
    ss_put_be(c, s->clock_wall, 8);
    ss_put_be(c + 8, s->clock_counter, 4);
}

static int ss__counters_put(ss_store *s)
{
    uint8_t b[8], c[12];
    ss__counters_encode(s, b, c);
    MDB_val kb = {5, "bytes"}, vb = {8, b}, kc = {5, "clock"}, vc = {12, c};
    int rc = mdb_put(s->txn, s->db_meta, &kb, &vb, 0);
    if (rc == 0)
        rc = mdb_put(s->txn, s->db_meta, &kc, &vc, 0);
    return rc == 0 ? SS_OK : ss__fail(s, rc);
}

static int ss__counters_log(ss_store *s)
{
    uint8_t b[8], c[12];
    ss__counters_encode(s, b, c);
    MDB_val kb = {5, "bytes"}, vb = {8, b}, kc = {5, "clock"}, vc = {12, c};
    int rc = SS_OK;
    if (s->bytes != s->committed_bytes)
        rc = ss__log(s, SS_JOP_PUT, SS_DB_META, &kb, &vb);
    if (rc == SS_OK && (s->clock_wall != s->committed_wall || s->clock_counter != s->committed_counter))
        rc = ss__log(s, SS_JOP_PUT, SS_DB_META, &kc, &vc);
    return rc;
}

/* Commit the long transaction with LMDB's full sync, then empty the
 * journal: its frames are all in the file now. A journal that could not be
 * emptied is harmless (its frames are older than the checkpoint and a
 * replay skips them); the next frames follow them. */
static int ss__checkpoint_run(ss_store *s)
{
    int rc = mdb_txn_commit(s->txn); /* also closes the cursor */
    s->txn = NULL;
    s->cur = NULL;
    if (rc != 0) {
        rc = ss__mdb_err(rc);
        return rc == SS_E_NOTFOUND ? SS_E_IO : rc;
    }
    if (ftruncate(s->jfd, 0) == 0)
        s->jend = 0;
    return SS_OK;
}

/* Outside a batch: checkpoint now if anything is not in LMDB's file. */
static int ss__checkpoint_now(ss_store *s)
{
    if (s->txn == NULL || s->batch)
        return SS_OK;
    uint8_t j[8];
    ss_put_be(j, s->jseq, 8);
    int rc = ss__counters_put(s);
    if (rc == SS_OK)
        rc = ss__meta_put(s, "journal", j, 8);
    if (rc == SS_OK)
        rc = ss__checkpoint_run(s);
    if (rc != SS_OK)
        return rc;
    s->ckpt_seq = s->jseq;
    s->synced = s->commits;
    return fdatasync(s->jfd) == 0 ? SS_OK : SS_E_IO;
}

/* Open FILE in the data directory, creating it (0600); *existed tells
 * whether it was there before. -1 on failure. */
static int ss__open_in_dir(const ss_store *s, const char *file, bool *existed)
{
    size_t n = strlen(s->path) + strlen(file) + 2;
    char *name = malloc(n);
    if (name == NULL)
        return -1;
    snprintf(name, n, "%s/%s", s->path, file);
    *existed = access(name, F_OK) == 0;
    int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    free(name);
    return fd;
}

/* One process per data directory: a second broker on the same files
 * would keep its own counts and clock and corrupt both. flock is released
 * by the kernel when the process dies, so a crash leaves no stale lock. */
static int ss__lock_dir(ss_store *s)
{
    bool existed;
    s->lock_fd = ss__open_in_dir(s, "statestore.lock", &existed);
    if (s->lock_fd < 0)
        return SS_E_IO;
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
        return errno == EWOULDBLOCK ? SS_E_BUSY : SS_E_IO;
    return SS_OK;
}

/* Open (or create) the journal; a new file's name is made durable too. */
static int ss__open_journal(ss_store *s)
{
    bool existed;
    s->jfd = ss__open_in_dir(s, "journal", &existed);
    if (s->jfd < 0)
        return SS_E_IO;
    if (!existed) {
        int dfd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return SS_E_IO;
        int rc = fsync(dfd);
        close(dfd);
        if (rc != 0)
            return SS_E_IO;
    }
    return SS_OK;
}

static int ss__setup(ss_store *s)
{
    const ss_store_options *o = &s->opt;
    if (mkdir(s->path, 0700) != 0 && errno != EEXIST)
        return SS_E_IO;
    int rc = ss__lock_dir(s);
    if (rc != SS_OK)
        return rc;
    if ((rc = ss__open_journal(s)) != SS_OK)
        return rc;
    rc = mdb_env_create(&s->env);
    if (rc != 0)
        return ss__mdb_err(rc);
    /* MDB_NOLOCK: the directory lock above keeps every other process out,
     * and without LMDB's writer mutex a transaction begun on the broker's
     * thread may be committed on another (checkpoints, see store.h). No
     * MDB_NOSYNC: every LMDB commit is a checkpoint, fully synced. */
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD | MDB_NOLOCK;
    if ((rc = mdb_env_set_maxdbs(s->env, 3)) != 0 ||
        (rc = mdb_env_set_mapsize(s->env, (size_t)o->map_size)) != 0 ||
        (rc = mdb_env_open(s->env, s->path, flags, 0600)) != 0)
        return ss__mdb_err(rc);
    if (mdb_env_get_maxkeysize(s->env) < (int)SS_EXPKEY_MAX)
        return SS_E_INVAL;
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &s->txn)) != 0) {
        s->txn = NULL;
        return ss__mdb_err(rc);
    }
    if ((rc = mdb_dbi_open(s->txn, "keys", MDB_CREATE, &s->db_keys)) != 0 ||
        (rc = mdb_dbi_open(s->txn, "exp", MDB_CREATE, &s->db_exp)) != 0 ||
        (rc = mdb_dbi_open(s->txn, "meta", MDB_CREATE, &s->db_meta)) != 0) {
        ss__drop_txn(s);
        return ss__mdb_err(rc);
    }
    rc = ss__load_format(s);
    if (rc == SS_OK) {
        /* The handles and a new store's records are kept by this commit. */
        rc = mdb_txn_commit(s->txn);
        s->txn = NULL;
        rc = rc == 0 ? SS_OK : ss__mdb_err(rc);
    }
    if (rc == SS_OK)
        rc = ss__reload(s, UINT64_MAX);
    /* Start from an empty journal: what the replay found is checkpointed,
     * and a torn tail goes. */
    if (rc == SS_OK && s->jseq != s->ckpt_seq)
        rc = ss__checkpoint_now(s);
    ss__drop_txn(s);
    struct stat st;
    if (rc == SS_OK && (fstat(s->jfd, &st) != 0 ||
                        (st.st_size != 0 && (ftruncate(s->jfd, 0) != 0 || fdatasync(s->jfd) != 0))))
        rc = SS_E_IO;
    s->jend = 0;
    return rc;
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
    if (s->opt.map_size == 0) {
        /* Pages hold more than the charged bytes (B-tree fill, page
         * rounding of large values, index entries, and the pages a
         * checkpoint replaces): leave ample room so the map never fills
         * before the quota does. Only address space: the file grows as it
         * is used. */
        if (s->opt.max_bytes > (UINT64_MAX - ((uint64_t)64 << 20)) / 4)
            s->opt.map_size = UINT64_MAX / 2;
        else
            s->opt.map_size = 4 * s->opt.max_bytes + ((uint64_t)64 << 20);
    }
    if (s->opt.map_size > SIZE_MAX)
        s->opt.map_size = SIZE_MAX;
    if (s->opt.sync_interval_ms == 0)
        s->opt.sync_interval_ms = 1000;
    if (s->opt.checkpoint_interval_ms == 0)
        s->opt.checkpoint_interval_ms = SS_STORE_CHECKPOINT_MS_DEFAULT;
    if (s->opt.journal_max_bytes == 0)
        s->opt.journal_max_bytes = SS_STORE_JOURNAL_MAX_DEFAULT;
    unsigned bits = s->opt.long_key_hash_bits ? s->opt.long_key_hash_bits : 64;
    s->opt.long_key_hash_bits = bits;
    s->hash_mask = bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
    s->path = strdup(o->path);
    s->opt.path = s->path;
    if (s->path == NULL) {
        free(s);
        return SS_E_NOMEM;
    }
    int rc = ss__setup(s);
    if (rc != SS_OK) {
        ss_store_close(s);
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
     * has nothing to replay; if that fails, the next open replays. */
    if (!s->committing)
        ss__checkpoint_now(s);
    ss__drop_txn(s);
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

int ss_store_begin(ss_store *s)
{
    ss__forget(s);
    if (s->committing || s->batch)
        return SS_E_BUSY;
    if (s->broken != SS_OK && (s->broken = ss__reload(s, s->jend)) != SS_OK)
        return s->broken;
    if (s->txn == NULL) {
        /* After a checkpoint: the next transaction starts here. */
        int rc = mdb_txn_begin(s->env, NULL, 0, &s->txn);
        if (rc != 0) {
            s->txn = NULL;
            return ss__mdb_err(rc);
        }
        if (mdb_cursor_open(s->txn, s->db_keys, &s->cur) != 0) {
            ss__drop_txn(s);
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
static void ss__rollback(ss_store *s)
{
    s->batch = false;
    if (!s->dirty && ss_jframe_empty(&s->frame) && s->failed == 0) {
        /* Nothing was written: only the clock may have moved. */
        s->clock_wall = s->committed_wall;
        s->clock_counter = s->committed_counter;
        return;
    }
    s->broken = ss__reload(s, s->jend);
}

void ss_store_abort(ss_store *s)
{
    ss__forget(s);
    if (s->committing || !s->batch)
        return;
    ss__rollback(s);
}

/* Size first: a journal at its limit is checkpointed with any batch. The
 * interval only makes a batch that wrote nothing a checkpoint (the tick of
 * an idle moment), so that a client's write never waits for one because
 * time passed: it costs two fsyncs of the data file. */
static bool ss__checkpoint_due(const ss_store *s, uint64_t now_ms, size_t frame_len, bool writes)
{
    if (s->jend == 0 && !writes && s->jseq == s->ckpt_seq)
        return false; /* nothing outside the file */
    if (s->jend + frame_len >= s->opt.journal_max_bytes)
        return true;
    return !writes && (now_ms < s->last_ckpt_ms ||
                       now_ms - s->last_ckpt_ms >= s->opt.checkpoint_interval_ms);
}

bool ss_store_checkpoint_due(const ss_store *s, uint64_t now_ms)
{
    return !s->committing && !s->batch && s->txn != NULL && ss__checkpoint_due(s, now_ms, 0, false);
}

int ss_store_commit_prepare(ss_store *s, uint64_t now_ms, bool may_checkpoint)
{
    ss__forget(s);
    if (s->committing || !s->batch)
        return SS_E_BUSY;
    int rc = s->failed;
    bool counters = s->bytes != s->committed_bytes || s->clock_wall != s->committed_wall ||
                    s->clock_counter != s->committed_counter;
    bool writes = s->dirty || !ss_jframe_empty(&s->frame) || counters;
    s->ckpt = rc == SS_OK && may_checkpoint && ss__checkpoint_due(s, now_ms, s->frame.len, writes);
    if (s->ckpt) {
        /* This batch goes into the file directly, not into the journal. */
        uint8_t j[8];
        ss_put_be(j, s->jseq, 8);
        rc = ss__counters_put(s);
        if (rc == SS_OK)
            rc = ss__meta_put(s, "journal", j, 8);
        s->ckpt = rc == SS_OK;
    } else if (rc == SS_OK && counters) {
        rc = ss__counters_log(s);
    }
    if (rc != SS_OK) {
        ss_store_abort(s);
        return rc;
    }
    if (!s->ckpt && !ss_jframe_empty(&s->frame))
        ss_jframe_seal(&s->frame, s->jseq + 1, s->hash_key);
    s->committing = true;
    return SS_OK;
}

bool ss_store_commit_syncs(const ss_store *s)
{
    return s->committing &&
           (s->ckpt || (s->opt.sync == SS_SYNC_ALWAYS && !ss_jframe_empty(&s->frame)));
}

int ss_store_commit_run(ss_store *s)
{
    /* Touches only the transaction and the journal: the owner keeps off
     * the store until commit_finish (store.h). */
    if (s->ckpt)
        return ss__checkpoint_run(s);
    if (ss_jframe_empty(&s->frame))
        return SS_OK;
    const uint8_t *p = s->frame.data;
    size_t n = s->frame.len;
    uint64_t off = s->jend;
    while (n > 0) {
        ssize_t w = pwrite(s->jfd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return errno == ENOSPC ? SS_E_QUOTA : SS_E_IO;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    if (s->opt.sync == SS_SYNC_ALWAYS && fdatasync(s->jfd) != 0)
        return SS_E_IO;
    return SS_OK;
}

int ss_store_commit_finish(ss_store *s, int rc, uint64_t now_ms)
{
    s->committing = false;
    bool ckpt = s->ckpt;
    s->ckpt = false;
    if (ckpt)
        s->last_ckpt_ms = now_ms; /* after a failure too: not again at once */
    if (rc != SS_OK) {
        /* Cut what the failed write may have left. Should that fail too,
         * the next frame overwrites it from jend, and a replay stops at
         * any remains after it (they fail their check). */
        if (!ckpt && !ss_jframe_empty(&s->frame) && ftruncate(s->jfd, (off_t)s->jend) != 0) {
        }
        s->dirty = true;
        ss__rollback(s);
        return rc;
    }
    s->batch = false;
    s->committed_bytes = s->bytes;
    s->committed_wall = s->clock_wall;
    s->committed_counter = s->clock_counter;
    if (ckpt) {
        s->ckpt_seq = s->jseq;
        s->synced = s->commits; /* the journal is empty or behind the file */
        return SS_OK;
    }
    if (!ss_jframe_empty(&s->frame)) {
        s->jend += s->frame.len;
        s->jseq++;
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
    return fdatasync(s->jfd) == 0 ? SS_OK : SS_E_IO;
}

void ss_store_sync_done(ss_store *s, int rc)
{
    if (rc == SS_OK && s->sync_covers > s->synced)
        s->synced = s->sync_covers;
}

int ss_store_flush(ss_store *s, uint64_t now_ms)
{
    if (s->opt.external_sync || s->committing || s->batch || !ss_store_sync_start(s, now_ms))
        return SS_OK;
    int rc = ss_store_sync_run(s);
    ss_store_sync_done(s, rc);
    return rc;
}

int ss_store_get(ss_store *s, ss_bytes key, ss_record *rec)
{
    ss__forget(s);
    int rc = ss__check_batch(s);
    if (rc != SS_OK)
        return rc;
    if (key.len == 0 || key.len > SS_STORE_KEY_MAX)
        return SS_E_NOTFOUND;
    struct ss_loc *loc = &s->last.loc;
    if ((rc = ss__find(s, key, loc)) != SS_OK)
        return rc;
    ss_buf_clear(&s->last.key);
    s->last.valid = ss_buf_append(&s->last.key, key.data, key.len) == SS_OK;
    if (!loc->found)
        return SS_E_NOTFOUND;
    ss_bytes tail;
    return ss__rec_decode(&loc->data, rec, &tail);
}

int ss_store_put(ss_store *s, ss_bytes key, const ss_record *rec)
{
    int rc = ss__check_batch(s);
    if (rc != SS_OK)
        return rc;
    s->dirty = true;
    if (key.len == 0 || key.len > SS_STORE_KEY_MAX)
        return SS_E_INVAL;
    struct ss_loc loc;
    if (s->last.valid && s->last.key.len == key.len &&
        memcmp(s->last.key.data, key.data, key.len) == 0) {
        loc = s->last.loc; /* found by the get just before */
    } else if ((rc = ss__find(s, key, &loc)) != SS_OK) {
        return rc == SS_E_LIMIT ? SS_E_QUOTA : rc;
    }
    ss__forget(s);

    uint64_t new_charge = ss__charge(key.len, rec->value.len);
    uint64_t old_charge = 0, old_expiry = 0;
    if (loc.found) {
        ss_record old;
        ss_bytes tail;
        if ((rc = ss__rec_decode(&loc.data, &old, &tail)) != SS_OK)
            return rc;
        old_charge = ss__charge(key.len, old.value.len);
        old_expiry = old.expiry_ms;
    } else if (s->opt.max_keys && s->keys >= s->opt.max_keys) {
        return SS_E_QUOTA;
    }
    /* A write that does not grow the store is allowed even over quota,
     * so that a full store can always be shrunk. */
    if (new_charge > old_charge && s->bytes - old_charge + new_charge > s->opt.max_bytes)
        return SS_E_QUOTA;

    if (old_expiry && (rc = ss__exp_op(s, old_expiry, loc.lk, loc.lk_len, false)) != SS_OK)
        return rc;
    bool is_long = key.len > SS_STORE_INLINE_KEY_MAX;
    size_t tail_len = is_long ? key.len - SS_STORE_INLINE_KEY_MAX : 0;
    MDB_val k = {loc.lk_len, loc.lk};
    MDB_val v = {ss__rec_size(rec, tail_len, is_long), NULL};
    int mrc = mdb_cursor_put(s->cur, &k, &v, MDB_RESERVE);
    if (mrc != 0)
        return ss__fail(s, mrc);
    ss__rec_encode(v.mv_data, rec, key.data + SS_STORE_INLINE_KEY_MAX, tail_len, is_long);
    if ((rc = ss__log(s, SS_JOP_PUT, SS_DB_KEYS, &k, &v)) != SS_OK)
        return rc;
    if (rec->expiry_ms) {
        if ((rc = ss__exp_op(s, rec->expiry_ms, loc.lk, loc.lk_len, true)) != SS_OK)
            return rc;
        if (s->next_expiry != 0 && rec->expiry_ms < s->next_expiry)
            s->next_expiry = rec->expiry_ms;
    }
    if (!loc.found)
        s->keys++;
    s->bytes = s->bytes - old_charge + new_charge;
    return SS_OK;
}

int ss_store_del(ss_store *s, ss_bytes key)
{
    ss__forget(s);
    int rc = ss__check_batch(s);
    if (rc != SS_OK)
        return rc;
    s->dirty = true;
    if (key.len == 0 || key.len > SS_STORE_KEY_MAX)
        return SS_E_NOTFOUND;
    struct ss_loc loc;
    if ((rc = ss__find(s, key, &loc)) != SS_OK)
        return rc;
    if (!loc.found)
        return SS_E_NOTFOUND;
    ss_record old;
    ss_bytes tail;
    if ((rc = ss__rec_decode(&loc.data, &old, &tail)) != SS_OK)
        return rc;
    return ss__remove(s, loc.lk, loc.lk_len, &old, key.len);
}

/* The first expiry index entry, or SS_E_NOTFOUND. */
static int ss__exp_first(ss_store *s, MDB_val *k)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(s->txn, s->db_exp, &c);
    if (rc != 0)
        return ss__mdb_err(rc);
    MDB_val v;
    rc = mdb_cursor_get(c, k, &v, MDB_FIRST);
    mdb_cursor_close(c);
    if (rc == 0 && k->mv_size < 9)
        return SS_E_CORRUPT;
    return rc == 0 ? SS_OK : ss__mdb_err(rc);
}

uint64_t ss_store_next_expiry(ss_store *s)
{
    if (s->next_expiry != 0 || s->committing)
        return s->next_expiry; /* 0 while committing: a lower bound too */
    bool own = s->txn == NULL;
    if (own && mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->txn) != 0) {
        s->txn = NULL;
        return 0;
    }
    MDB_val k;
    int rc = ss__exp_first(s, &k);
    if (rc == SS_OK)
        s->next_expiry = ss_get_be(k.mv_data, 8);
    else if (rc == SS_E_NOTFOUND)
        s->next_expiry = UINT64_MAX;
    if (own) {
        mdb_txn_abort(s->txn);
        s->txn = NULL;
    }
    return s->next_expiry;
}

int ss_store_pop_due(ss_store *s, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    ss__forget(s);
    int rc = ss__check_batch(s);
    if (rc != SS_OK)
        return rc;
    s->dirty = true;
    MDB_val ek;
    rc = ss__exp_first(s, &ek);
    if (rc == SS_E_NOTFOUND) {
        s->next_expiry = UINT64_MAX;
        return rc;
    }
    if (rc != SS_OK)
        return rc;
    uint64_t deadline = ss_get_be(ek.mv_data, 8);
    if (deadline > now_ms) {
        s->next_expiry = deadline;
        return SS_E_NOTFOUND;
    }
    uint8_t lk[SS_LKEY_MAX];
    size_t lk_len = ek.mv_size - 8;
    if (lk_len > SS_LKEY_MAX)
        return SS_E_CORRUPT;
    memcpy(lk, (const uint8_t *)ek.mv_data + 8, lk_len);
    MDB_val k = {lk_len, lk}, v;
    int mrc = mdb_get(s->txn, s->db_keys, &k, &v);
    if (mrc != 0)
        return mrc == MDB_NOTFOUND ? SS_E_CORRUPT : ss__mdb_err(mrc);
    ss_record rec;
    ss_bytes tail;
    if ((rc = ss__rec_decode(&v, &rec, &tail)) != SS_OK)
        return rc;
    size_t prefix = tail.len ? SS_STORE_INLINE_KEY_MAX : lk_len;
    ss_buf_clear(key);
    if (ss_buf_reserve(key, prefix + tail.len) != SS_OK)
        return SS_E_NOMEM;
    ss_buf_append(key, lk, prefix);
    ss_buf_append(key, tail.data, tail.len);
    *version = rec.version;
    return ss__remove(s, lk, lk_len, &rec, key->len);
}

uint64_t ss_store_key_count(const ss_store *s)
{
    if (!s->committing && s->txn == NULL) {
        MDB_stat st;
        MDB_txn *t;
        if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t) != 0)
            return 0;
        uint64_t n = mdb_stat(t, s->db_keys, &st) == 0 ? st.ms_entries : 0;
        mdb_txn_abort(t);
        return n;
    }
    return s->keys;
}

uint64_t ss_store_byte_count(const ss_store *s)
{
    return s->committing || s->txn ? s->bytes : s->committed_bytes;
}

int ss_store_set_clock(ss_store *s, uint64_t wall, uint32_t counter)
{
    int rc = ss__check_batch(s);
    if (rc != SS_OK)
        return rc;
    s->clock_wall = wall;
    s->clock_counter = counter;
    return SS_OK;
}

void ss_store_get_clock(const ss_store *s, uint64_t *wall, uint32_t *counter)
{
    *wall = s->clock_wall;
    *counter = s->clock_counter;
}

const ss_store_options *ss_store_options_get(const ss_store *s)
{
    return &s->opt;
}
