/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_lmdb.c - the store on LMDB (store.h): basics shared by the
 * backend's files, and the data operations. See store_lmdb.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bigendian.h"
#include "errors.h"
#include "journal.h"
#include "record.h"
#include "siphash.h"
#include "store_lmdb.h"

/* A status code for an LMDB result; a system error stays in errno for the
 * owner's message. */
int ss_lmdb__mdb_err(int rc)
{
    if (rc > 0)
        errno = rc;
    if (rc == MDB_NOTFOUND)
        return SS_E_NOTFOUND;
    if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL)
        return SS_E_QUOTA;
    if (rc == ENOMEM)
        return SS_E_NOMEM;
    return SS_E_IO;
}

/* Say what failed and why, for the owner's log (ss_store_cause). err is
 * an errno value or an LMDB code; 0 for none. */
void ss_lmdb__cause(ss_store *s, const char *what, int err)
{
    if (err == MDB_MAP_FULL)
        snprintf(s->cause, sizeof s->cause, "%s: the LMDB map is full (map_size %llu bytes)", what,
                 (unsigned long long)s->opt.map_size);
    else if (err != 0)
        snprintf(s->cause, sizeof s->cause, "%s: %s", what, mdb_strerror(err));
    else
        snprintf(s->cause, sizeof s->cause, "%s", what);
}

void ss_lmdb__forget(ss_store *s)
{
    s->last.valid = false;
}

/* Record a write failure: the transaction is unusable from here on. */
int ss_lmdb__fail(ss_store *s, int mdb_rc)
{
    if (s->failed == 0)
        ss_lmdb__cause(s, "a write to the open transaction", mdb_rc);
    int rc = ss_lmdb__mdb_err(mdb_rc);
    if (rc == SS_E_NOTFOUND)
        rc = SS_E_IO;
    if (s->failed == 0)
        s->failed = rc;
    return s->failed;
}

MDB_dbi ss_lmdb__dbi(const ss_store *s, uint8_t db)
{
    return db == SS_DB_KEYS ? s->db_keys : db == SS_DB_EXP ? s->db_exp : s->db_meta;
}

/* Record a write already applied to the transaction in the batch's frame. */
int ss_lmdb__log(ss_store *s, uint8_t kind, uint8_t db, const MDB_val *k, const MDB_val *v)
{
    int rc = ss_jframe_op(&s->frame, kind, db, k->mv_data, k->mv_size, v ? v->mv_data : NULL,
                          v ? v->mv_size : 0);
    if (rc != SS_OK && s->failed == 0)
        s->failed = rc;
    return rc;
}

/* The batch's writes: applied to the transaction, then logged. */
int ss_lmdb__put(ss_store *s, uint8_t db, MDB_val *k, MDB_val *v)
{
    int rc = mdb_put(s->txn, ss_lmdb__dbi(s, db), k, v, 0);
    if (rc != 0)
        return ss_lmdb__fail(s, rc);
    return ss_lmdb__log(s, SS_JOP_PUT, db, k, v);
}

/* MDB_NOTFOUND is returned as is (the caller knows what it means). */
int ss_lmdb__del(ss_store *s, uint8_t db, MDB_val *k)
{
    int rc = mdb_del(s->txn, ss_lmdb__dbi(s, db), k, NULL);
    if (rc == MDB_NOTFOUND)
        return SS_E_NOTFOUND;
    if (rc != 0)
        return ss_lmdb__fail(s, rc);
    return ss_lmdb__log(s, SS_JOP_DEL, db, k, NULL);
}

uint64_t ss_lmdb__charge(size_t klen, size_t vlen)
{
    return (uint64_t)klen + vlen + SS_STORE_RECORD_CHARGE;
}

/* ---- key locations ---------------------------------------------------- */

/* ---- public ----------------------------------------------------------- */

static int ss_lmdb__check_batch(const ss_store *s)
{
    if (s->committing || !s->batch)
        return SS_E_BUSY;
    return s->failed;
}

int ss_lmdb__meta_get(ss_store *s, const char *name, MDB_val *v)
{
    MDB_val k = {strlen(name), (void *)name};
    int rc = mdb_get(s->txn, s->db_meta, &k, v);
    return rc == 0 ? SS_OK : ss_lmdb__mdb_err(rc);
}

int ss_lmdb__meta_put(ss_store *s, const char *name, const void *data, size_t len)
{
    MDB_val k = {strlen(name), (void *)name}, v = {len, (void *)data};
    return ss_lmdb__put(s, SS_DB_META, &k, &v);
}

int ss_store_get(ss_store *s, ss_bytes key, ss_record *rec)
{
    ss_lmdb__forget(s);
    int rc = ss_lmdb__check_batch(s);
    if (rc != SS_OK)
        return rc;
    if (key.len == 0 || key.len > SS_STORE_KEY_MAX)
        return SS_E_NOTFOUND;
    struct ss_loc *loc = &s->last.loc;
    if ((rc = ss_lmdb__find(s, key, loc)) != SS_OK)
        return rc;
    ss_buf_clear(&s->last.key);
    s->last.valid = ss_buf_append(&s->last.key, key.data, key.len) == SS_OK;
    if (!loc->found)
        return SS_E_NOTFOUND;
    ss_bytes tail;
    return ss_record_decode(loc->data.mv_data, loc->data.mv_size, rec, &tail);
}

int ss_store_put(ss_store *s, ss_bytes key, const ss_record *rec)
{
    int rc = ss_lmdb__check_batch(s);
    if (rc != SS_OK)
        return rc;
    s->dirty = true;
    if (key.len == 0 || key.len > SS_STORE_KEY_MAX)
        return SS_E_INVAL;
    struct ss_loc loc;
    if (s->last.valid && s->last.key.len == key.len &&
        memcmp(s->last.key.data, key.data, key.len) == 0) {
        loc = s->last.loc; /* found by the get just before */
    } else if ((rc = ss_lmdb__find(s, key, &loc)) != SS_OK) {
        if (rc == SS_E_LIMIT)
            ss_lmdb__cause(s, "65536 long keys share this key's first 480 bytes and hash", 0);
        return rc == SS_E_LIMIT ? SS_E_QUOTA : rc;
    }
    ss_lmdb__forget(s);

    uint64_t new_charge = ss_lmdb__charge(key.len, rec->value.len);
    uint64_t old_charge = 0, old_expiry = 0;
    if (loc.found) {
        ss_record old;
        ss_bytes tail;
        if ((rc = ss_record_decode(loc.data.mv_data, loc.data.mv_size, &old, &tail)) != SS_OK)
            return rc;
        old_charge = ss_lmdb__charge(key.len, old.value.len);
        old_expiry = old.expiry_ms;
    } else if (s->opt.max_keys && s->keys >= s->opt.max_keys) {
        snprintf(s->cause, sizeof s->cause, "max_keys (%llu keys) reached",
                 (unsigned long long)s->opt.max_keys);
        return SS_E_QUOTA;
    }
    /* One batch is one journal frame, and a frame must stay replayable
     * (its length is 32 bits, and replay reads it whole): overwrites, which
     * the quota does not count, could otherwise pile up past that. The
     * record, its index entries and their headers, generously. */
    uint64_t logged = (uint64_t)rec->value.len + key.len + 3 * (SS_EXPKEY_MAX + 64);
    if (s->frame.len + logged > s->opt.batch_max_bytes) {
        snprintf(s->cause, sizeof s->cause,
                 "one batch may journal at most %llu bytes; this write would make it %llu",
                 (unsigned long long)s->opt.batch_max_bytes,
                 (unsigned long long)(s->frame.len + logged));
        return SS_E_QUOTA;
    }
    /* A write that does not grow the store is allowed even over quota,
     * so that a full store can always be shrunk. */
    if (new_charge > old_charge && s->bytes - old_charge + new_charge > s->opt.max_bytes) {
        snprintf(s->cause, sizeof s->cause,
                 "max_store_bytes (%llu) would be exceeded: %llu bytes charged, this write adds %llu",
                 (unsigned long long)s->opt.max_bytes, (unsigned long long)s->bytes,
                 (unsigned long long)(new_charge - old_charge));
        return SS_E_QUOTA;
    }

    if (old_expiry && (rc = ss_lmdb__exp_op(s, old_expiry, loc.lk, loc.lk_len, false)) != SS_OK)
        return rc;
    bool is_long = key.len > SS_STORE_INLINE_KEY_MAX;
    size_t tail_len = is_long ? key.len - SS_STORE_INLINE_KEY_MAX : 0;
    MDB_val k = {loc.lk_len, loc.lk};
    MDB_val v = {ss_record_size(rec, tail_len, is_long), NULL};
    int mrc = mdb_cursor_put(s->cur, &k, &v, MDB_RESERVE);
    if (mrc != 0)
        return ss_lmdb__fail(s, mrc);
    ss_record_encode(v.mv_data, rec, key.data + SS_STORE_INLINE_KEY_MAX, tail_len, is_long);
    if ((rc = ss_lmdb__log(s, SS_JOP_PUT, SS_DB_KEYS, &k, &v)) != SS_OK)
        return rc;
    if (rec->expiry_ms) {
        if ((rc = ss_lmdb__exp_op(s, rec->expiry_ms, loc.lk, loc.lk_len, true)) != SS_OK)
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
    ss_lmdb__forget(s);
    int rc = ss_lmdb__check_batch(s);
    if (rc != SS_OK)
        return rc;
    s->dirty = true;
    if (key.len == 0 || key.len > SS_STORE_KEY_MAX)
        return SS_E_NOTFOUND;
    struct ss_loc loc;
    if ((rc = ss_lmdb__find(s, key, &loc)) != SS_OK)
        return rc;
    if (!loc.found)
        return SS_E_NOTFOUND;
    ss_record old;
    ss_bytes tail;
    if ((rc = ss_record_decode(loc.data.mv_data, loc.data.mv_size, &old, &tail)) != SS_OK)
        return rc;
    return ss_lmdb__remove(s, loc.lk, loc.lk_len, &old, key.len);
}

/* The first expiry index entry, or SS_E_NOTFOUND. */
static int ss_lmdb__exp_first(ss_store *s, MDB_val *k)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(s->txn, s->db_exp, &c);
    if (rc != 0)
        return ss_lmdb__mdb_err(rc);
    MDB_val v;
    rc = mdb_cursor_get(c, k, &v, MDB_FIRST);
    mdb_cursor_close(c);
    if (rc == 0 && k->mv_size < 9)
        return SS_E_CORRUPT;
    return rc == 0 ? SS_OK : ss_lmdb__mdb_err(rc);
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
    int rc = ss_lmdb__exp_first(s, &k);
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
    ss_lmdb__forget(s);
    int rc = ss_lmdb__check_batch(s);
    if (rc != SS_OK)
        return rc;
    s->dirty = true;
    MDB_val ek;
    rc = ss_lmdb__exp_first(s, &ek);
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
        return mrc == MDB_NOTFOUND ? SS_E_CORRUPT : ss_lmdb__mdb_err(mrc);
    ss_record rec;
    ss_bytes tail;
    if ((rc = ss_record_decode(v.mv_data, v.mv_size, &rec, &tail)) != SS_OK)
        return rc;
    size_t prefix = tail.len ? SS_STORE_INLINE_KEY_MAX : lk_len;
    ss_buf_clear(key);
    if (ss_buf_reserve(key, prefix + tail.len) != SS_OK)
        return SS_E_NOMEM;
    ss_buf_append(key, lk, prefix);
    ss_buf_append(key, tail.data, tail.len);
    *version = rec.version;
    return ss_lmdb__remove(s, lk, lk_len, &rec, key->len);
}

uint64_t ss_store_due_count(ss_store *s, uint64_t now_ms, uint64_t cap)
{
    if (s->committing || ss_store_next_expiry(s) > now_ms)
        return 0;
    bool own = s->txn == NULL;
    if (own && mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->txn) != 0) {
        s->txn = NULL;
        return 0;
    }
    uint64_t n = 0;
    MDB_cursor *c;
    if (mdb_cursor_open(s->txn, s->db_exp, &c) == 0) {
        MDB_val k, v;
        int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
        /* Index keys start with the deadline, big endian: in order. */
        while (rc == 0 && n < cap && k.mv_size >= 8 && ss_get_be(k.mv_data, 8) <= now_ms) {
            n++;
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
        mdb_cursor_close(c);
    }
    if (own) {
        mdb_txn_abort(s->txn);
        s->txn = NULL;
    }
    return n;
}

/* a < b in LMDB's order of keys (bytes, a prefix first). */
static bool ss_lmdb__before(ss_bytes a, ss_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    return c < 0 || (c == 0 && a.len < b.len);
}

/* The LMDB key k starts with the n bytes at p. */
static bool ss_lmdb__starts(const MDB_val *k, const uint8_t *p, size_t n)
{
    return k->mv_size >= n && (n == 0 || memcmp(k->mv_data, p, n) == 0);
}

int ss_store_scan(ss_store *s, ss_bytes after, ss_bytes prefix, size_t max_examined, ss_store_scan_fn fn,
                  void *ctx, ss_buf *next)
{
    ss_buf_clear(next);
    if (s->committing)
        return SS_E_BUSY;
    /* After a failed reload the file alone lacks what the journal holds:
     * no answer rather than an untrue one (the next batch reloads). */
    if (s->broken)
        return s->broken;
    bool own = s->txn == NULL;
    if (own && mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->txn) != 0) {
        s->txn = NULL;
        return SS_E_IO;
    }
    MDB_cursor *c;
    int rc = mdb_cursor_open(s->txn, s->db_keys, &c);
    if (rc != 0) {
        rc = ss_lmdb__mdb_err(rc);
        goto out;
    }
    /* Every key with the prefix (cut to SS_STORE_INLINE_KEY_MAX bytes)
     * has an LMDB key with it too: an inline key is its own LMDB key, a
     * long key's LMDB key is its first SS_STORE_INLINE_KEY_MAX bytes, a
     * hash and a slot (store_lmdb.h). The LMDB keys with the cut prefix
     * are one run of LMDB's byte order, from the cut prefix on, and the
     * walk keeps to it. Long keys that share their first bytes come in
     * their hash's order, but within the run; when a longer prefix was
     * cut, the run also holds long keys that share only its first bytes,
     * which the caller's match passes over. */
    size_t plen = prefix.len < SS_STORE_INLINE_KEY_MAX ? prefix.len : SS_STORE_INLINE_KEY_MAX;
    ss_bytes run = {prefix.data, plen};
    /* A cursor before the run (none: the first page) starts at the run's
     * first key, which may be the prefix itself. */
    bool from_run = plen && (after.len == 0 || ss_lmdb__before(after, run));
    ss_bytes from = from_run ? run : after;
    MDB_val k = {from.len, (void *)from.data}, v;
    int mrc = from.len ? mdb_cursor_get(c, &k, &v, MDB_SET_RANGE) : mdb_cursor_get(c, &k, &v, MDB_FIRST);
    /* The cursor names the last key seen: start after it. */
    if (mrc == 0 && !from_run && after.len && k.mv_size == after.len &&
        memcmp(k.mv_data, after.data, after.len) == 0)
        mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    ss_buf key = SS_BUF_INIT;
    size_t seen = 0;
    rc = SS_OK;
    while (mrc == 0 && seen < max_examined) {
        /* Past the run: no key after it can match, and the listing ends
         * here rather than after the rest of the store. */
        if (!ss_lmdb__starts(&k, run.data, run.len)) {
            mrc = MDB_NOTFOUND;
            break;
        }
        seen++;
        ss_record rec;
        ss_bytes tail;
        if ((rc = ss_record_decode(v.mv_data, v.mv_size, &rec, &tail)) != SS_OK)
            break;
        /* A long key: its first bytes are the location key's, the rest in
         * the record (store_lmdb.h). */
        size_t head = tail.len ? SS_STORE_INLINE_KEY_MAX : k.mv_size;
        ss_buf_clear(&key);
        if (ss_buf_append(&key, k.mv_data, head) != SS_OK || ss_buf_append(&key, tail.data, tail.len) != SS_OK) {
            rc = SS_E_NOMEM;
            break;
        }
        ss_bytes whole = {key.data, key.len}, at = {k.mv_data, k.mv_size};
        bool go_on = fn(ctx, whole, at, &rec);
        ss_buf_clear(next);
        if (ss_buf_append(next, k.mv_data, k.mv_size) != SS_OK) {
            rc = SS_E_NOMEM;
            break;
        }
        if (!go_on)
            break;
        mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    if (rc == SS_OK && mrc != 0) {
        ss_buf_clear(next); /* the end */
        if (mrc != MDB_NOTFOUND)
            rc = ss_lmdb__mdb_err(mrc);
    }
    ss_buf_free(&key);
    mdb_cursor_close(c);
out:
    if (own) {
        mdb_txn_abort(s->txn);
        s->txn = NULL;
    }
    return rc;
}

uint64_t ss_store_journal_bytes(const ss_store *s)
{
    return s->jend;
}

uint64_t ss_store_last_checkpoint_ms(const ss_store *s)
{
    return s->ckpt_ok_ms;
}

void ss_store_secret(const ss_store *s, const char *purpose, uint8_t out[16])
{
    /* Two PRF outputs of the purpose under the store's key: the key
     * itself stays inside. */
    for (uint8_t half = 0; half < 2; half++) {
        ss_bytes parts[] = {{(const uint8_t *)purpose, strlen(purpose)}, {&half, 1}};
        ss_put_be(out + 8 * half, ss_siphash_parts(s->hash_key, parts, 2), 8);
    }
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
    int rc = ss_lmdb__check_batch(s);
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

const char *ss_store_cause(const ss_store *s)
{
    return s->cause;
}

const char *ss_store_discarded(const ss_store *s, bool *damage)
{
    *damage = s->discarded_damage;
    return s->discarded;
}

int ss_store_compaction_result(const ss_store *s)
{
    return s->compact_rc;
}

const ss_store_options *ss_store_options_get(const ss_store *s)
{
    return &s->opt;
}
