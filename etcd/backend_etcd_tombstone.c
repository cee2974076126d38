/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_tombstone.c - what a deletion leaves at k/<key> for a
 * while: a tombstone, which holds the version the deletion removed.
 *
 * Why: a broker issues a key's next version past the version it reads
 * (core/hlc.h), so versions of a key grow while the key exists. Once the
 * key is deleted, a broker that creates it again reads nothing, and its
 * clock alone decides: in the same millisecond, a lower node id wins
 * less; with clocks apart, or a client's stamp ahead (up to
 * SS_HLC_MAX_SKEW_MS), by more. A lock released through one broker and
 * taken through another would then get a lower fencing token than the
 * one before it. The tombstone keeps the removed version where the next
 * writer reads it (as "absent, last version V": backend.h), and its
 * revision where the writer's Txn compares it, so a deletion and a
 * creation that race are ordered as on one broker.
 *
 * A tombstone is an ordinary record with SS_RECORD_TOMBSTONE in its flags,
 * no fencing token, a value of one byte 'x' when an expiry removed the key
 * (empty otherwise), and as its expiry the moment it goes: tombstone_ms
 * after the later of now and the removed version's wall clock. The expiry
 * index and the sweep remove it then, without a notification; after that,
 * every broker's clock is past the removed version unless the brokers'
 * clocks are further apart than tombstone_ms.
 */
#include <string.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_tombstone.h"

bool ss_etcd__tombstone(ss_bytes raw)
{
    return raw.len > 0 && (raw.data[0] & SS_RECORD_TOMBSTONE) != 0;
}

/* The tombstone of gone as a record (value: one byte 'x' or nothing). */
static void ss_etcd__tombstone_record(const struct ss_backend_etcd *e, const ss_change *gone, ss_record *rec)
{
    static const uint8_t expired = 'x';
    memset(rec, 0, sizeof *rec);
    rec->version = gone->version;
    if (gone->expired) {
        rec->value.data = &expired;
        rec->value.len = 1;
    }
    uint64_t from = e->now_ms > gone->version.wall ? e->now_ms : gone->version.wall;
    rec->expiry_ms = from + e->tombstone_ms;
}

size_t ss_etcd__tombstone_size(const struct ss_backend_etcd *e, const ss_change *gone)
{
    ss_record rec;
    ss_etcd__tombstone_record(e, gone, &rec);
    return ss_record_size(&rec, 0, false);
}

int ss_etcd__tombstone_make(const struct ss_backend_etcd *e, const ss_change *gone, ss_buf *out, uint64_t *until_ms)
{
    ss_record rec;
    ss_etcd__tombstone_record(e, gone, &rec);
    size_t size = ss_record_size(&rec, 0, false);
    ss_buf_clear(out);
    int rc = ss_buf_reserve(out, size);
    if (rc != SS_OK)
        return rc;
    ss_record_encode(out->data, &rec, NULL, 0, false);
    out->data[0] |= SS_RECORD_TOMBSTONE;
    out->len = size;
    *until_ms = rec.expiry_ms;
    return SS_OK;
}

bool ss_etcd__tombstone_change(ss_bytes raw, ss_bytes key, ss_change *c)
{
    ss_record rec;
    ss_bytes tail;
    if (!ss_etcd__tombstone(raw) || ss_record_decode(raw.data, raw.len, &rec, &tail) != SS_OK)
        return false;
    memset(c, 0, sizeof *c);
    c->type = SS_CHANGE_DELETE;
    c->key = key;
    c->version = rec.version;
    c->expired = rec.value.len == 1 && rec.value.data[0] == 'x';
    return true;
}
