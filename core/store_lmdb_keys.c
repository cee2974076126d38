/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_lmdb_keys.c - where a key lives in the keys database (inline or
 * long, in slots) and its expiry index entries. See store_lmdb.h. */

#include <string.h>

#include "bigendian.h"
#include "errors.h"
#include "record.h"
#include "siphash.h"
#include "store_lmdb.h"

static void ss_lmdb__set_slot(uint8_t *lk, uint32_t slot)
{
    ss_put_be(lk + SS_LKEY_HASHED - 2, slot, 2);
}

int ss_lmdb__find(ss_store *s, ss_bytes key, struct ss_loc *loc)
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
            return ss_lmdb__mdb_err(rc);
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
        ss_lmdb__set_slot(loc->lk, slot);
        k.mv_data = loc->lk;
        k.mv_size = loc->lk_len;
        int rc = mdb_cursor_get(s->cur, &k, &v, MDB_SET_KEY);
        if (rc == MDB_NOTFOUND)
            return SS_OK; /* loc->lk names the first free slot */
        if (rc != 0)
            return ss_lmdb__mdb_err(rc);
        ss_record rec;
        ss_bytes tail;
        if (ss_record_decode(v.mv_data, v.mv_size, &rec, &tail) != SS_OK)
            return SS_E_CORRUPT;
        if (tail.len == want_len && memcmp(tail.data, want, want_len) == 0) {
            loc->found = true;
            loc->data = v;
            return SS_OK;
        }
    }
    return SS_E_LIMIT; /* 65536 colliding long keys: cannot be stored */
}

int ss_lmdb__exp_op(ss_store *s, uint64_t deadline, const uint8_t *lk, size_t lk_len, bool add)
{
    uint8_t ek[SS_EXPKEY_MAX];
    ss_put_be(ek, deadline, 8);
    memcpy(ek + 8, lk, lk_len);
    MDB_val k = {8 + lk_len, ek}, v = {0, NULL};
    int rc = add ? ss_lmdb__put(s, SS_DB_EXP, &k, &v) : ss_lmdb__del(s, SS_DB_EXP, &k);
    return rc == SS_E_NOTFOUND ? SS_E_CORRUPT : rc;
}

/* Remove the record at lk (whose decoded record is old), its index entry,
 * and close the gap in its long-key chain. */
int ss_lmdb__remove(ss_store *s, const uint8_t *lk_in, size_t lk_len, const ss_record *old,
                      size_t old_klen)
{
    uint8_t lk[SS_LKEY_MAX];
    memcpy(lk, lk_in, lk_len);
    uint64_t old_charge = ss_lmdb__charge(old_klen, old->value.len);
    int rc;
    if (old->expiry_ms && (rc = ss_lmdb__exp_op(s, old->expiry_ms, lk, lk_len, false)) != SS_OK)
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
            ss_lmdb__set_slot(probe, j);
            MDB_val pk = {lk_len, probe}, pv;
            int grc = mdb_get(s->txn, s->db_keys, &pk, &pv);
            if (grc == MDB_NOTFOUND)
                break;
            if (grc != 0)
                return ss_lmdb__fail(s, grc);
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
            if (ss_record_decode(mv.mv_data, mv.mv_size, &moved, &tail) != SS_OK)
                return SS_E_CORRUPT;
            if ((rc = ss_lmdb__put(s, SS_DB_KEYS, &k, &mv)) != SS_OK)
                return rc;
            ss_lmdb__set_slot(probe, last);
            MDB_val pk = {lk_len, probe};
            if ((rc = ss_lmdb__del(s, SS_DB_KEYS, &pk)) != SS_OK)
                return rc == SS_E_NOTFOUND ? SS_E_CORRUPT : rc;
            if (moved.expiry_ms) {
                if ((rc = ss_lmdb__exp_op(s, moved.expiry_ms, probe, lk_len, false)) != SS_OK ||
                    (rc = ss_lmdb__exp_op(s, moved.expiry_ms, lk, lk_len, true)) != SS_OK)
                    return rc;
            }
            s->keys--;
            s->bytes -= old_charge;
            return SS_OK;
        }
    }
    if ((rc = ss_lmdb__del(s, SS_DB_KEYS, &k)) != SS_OK)
        return rc == SS_E_NOTFOUND ? SS_E_CORRUPT : rc;
    s->keys--;
    s->bytes -= old_charge;
    return SS_OK;
}
