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
 * no fencing token and a value of one byte 'x' when an expiry removed the
 * key (empty otherwise). It goes tombstone_ms after the later of now and
 * the removed version's wall clock, without a notification; after that,
 * every broker's clock is past the removed version unless the brokers'
 * clocks are further apart than tombstone_ms.
 *
 * How it goes: on an etcd lease. etcd deletes the keys of a lease when it
 * ends, so a tombstone put on a lease that lasts long enough needs no
 * sweep to remove it: per deletion, one key version fewer in etcd's
 * history (the sweep's deletion is etcd's own) and no compare in a
 * sweep's Txn. A broker grants a lease of
 * tombstone_ms plus a window (a tenth of it, at least 2 s) and puts
 * on it every tombstone it writes during that window, then the next one,
 * granted ahead (for a minute after a deletion); so a tombstone lasts
 * from tombstone_ms to that plus the window. A later put of the key without a lease (a SET) takes
 * it off the lease. etcd keeps a lease at least its TTL from the grant
 * (longer when its leader changes), so the broker counts from when it
 * asked. A tombstone that no lease covers (none granted yet, or a removed
 * version's clock far ahead) has, as its expiry, the moment it goes, and
 * the sweep removes it then (backend_etcd_sweep.c). A Txn whose lease is gone
 * all the same (revoked by hand) is refused whole by etcd: its requests
 * run again, without that lease.
 */
#include <string.h>
#include <time.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_tombstone.h"

bool ss_etcd__tombstone(ss_bytes raw)
{
    return raw.len > 0 && (raw.data[0] & SS_RECORD_TOMBSTONE) != 0;
}

uint64_t ss_etcd__tombstone_until(const struct ss_backend_etcd *e, const ss_change *gone)
{
    uint64_t from = e->now_ms > gone->version.wall ? e->now_ms : gone->version.wall;
    return from + e->tombstone_ms;
}

/* The tombstone of gone as a record (value: one byte 'x' or nothing),
 * with an expiry of until_ms (0: its lease removes it). */
static void ss_etcd__tombstone_record(const ss_change *gone, uint64_t until_ms, ss_record *rec)
{
    static const uint8_t expired = 'x';
    memset(rec, 0, sizeof *rec);
    rec->version = gone->version;
    if (gone->expired) {
        rec->value.data = &expired;
        rec->value.len = 1;
    }
    rec->expiry_ms = until_ms;
}

size_t ss_etcd__tombstone_size(const struct ss_backend_etcd *e, const ss_change *gone)
{
    ss_record rec;
    ss_etcd__tombstone_record(gone, ss_etcd__tombstone_until(e, gone), &rec);
    return ss_record_size(&rec, 0, false);
}

int ss_etcd__tombstone_make(const ss_change *gone, uint64_t until_ms, ss_buf *out)
{
    ss_record rec;
    ss_etcd__tombstone_record(gone, until_ms, &rec);
    size_t size = ss_record_size(&rec, 0, false);
    ss_buf_clear(out);
    int rc = ss_buf_reserve(out, size);
    if (rc != SS_OK)
        return rc;
    ss_record_encode(out->data, &rec, NULL, 0, false);
    out->data[0] |= SS_RECORD_TOMBSTONE;
    out->len = size;
    return SS_OK;
}

/* ---- the leases that remove tombstones ---------------------------------- */

/* Milliseconds on a clock that goes on while the host is suspended (the
 * monotonic clock stops then, etcd's leases do not): a lease's end is
 * never taken for later than it is. */
static uint64_t ss_etcd__boot_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* How long a lease takes tombstones: a tenth of their time, at least 2 s
 * (etcd counts a lease's time in whole seconds, and the next lease is
 * asked for half a window ahead). */
static uint64_t ss_etcd__lease_window_ms(const struct ss_backend_etcd *e)
{
    uint64_t w = e->tombstone_ms / 10;
    return w < 2000 ? 2000 : w;
}

static int ss_etcd__pack_tlease(struct ss_backend_etcd *e, ss_buf *out)
{
    uint64_t ms = e->tombstone_ms + ss_etcd__lease_window_ms(e);
    return ss_etcd_lease_grant_pack(out, (int64_t)((ms + 999) / 1000));
}

void ss_etcd__tombstone_lease_step(struct ss_backend_etcd *e)
{
    uint64_t now = ss_etcd__boot_ms();
    /* Until a while after the last deletion, the next lease is asked for
     * when the newest has less than half its window left, so that one is
     * there when the deletions go on; an idle broker asks for none. */
    const struct ss_etcd_tlease *newest = &e->tleases[SS_ETCD_TLEASES - 1];
    if (now < e->tlease_wanted_ms && !e->tlease_asked && now >= e->tlease_retry_ms &&
        (newest->id == 0 || newest->ends_ms < now + e->tombstone_ms + ss_etcd__lease_window_ms(e) / 2)) {
        struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_TLEASE, SS_ETCD_LEASE_GRANT_METHOD);
        if (op == NULL || ss_etcd__pack_tlease(e, &op->call.request) != SS_OK) {
            if (op)
                ss_etcd__op_free(op);
            e->tlease_retry_ms = now + SS_ETCD_MARKER_RETRY_MS; /* out of memory: later */
            return;
        }
        e->tlease_asked = true;
        e->tlease_asked_ms = now;
        ss_etcd__submit(e, op);
    }
}

int64_t ss_etcd__tombstone_lease(struct ss_backend_etcd *e, uint64_t until_ms)
{
    uint64_t now = ss_etcd__boot_ms();
    uint64_t need = until_ms > e->now_ms ? until_ms - e->now_ms : 0;
    e->tlease_wanted_ms = now + SS_ETCD_TLEASE_KEEP_MS;
    ss_etcd__tombstone_lease_step(e);
    /* The one that ends first of those that last long enough. */
    for (unsigned i = 0; i < SS_ETCD_TLEASES; i++)
        if (e->tleases[i].id != 0 && e->tleases[i].ends_ms >= now + need)
            return e->tleases[i].id;
    return 0;
}

void ss_etcd__tombstone_lease_granted(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    int64_t id = 0, ttl = 0;
    e->tlease_asked = false;
    if (op->call.rc != SS_OK || ss_etcd_lease_grant_unpack(&op->call.reply, &id, &ttl) != SS_OK || id == 0) {
        /* Tombstones carry their ends, for the sweep, meanwhile. */
        e->tlease_retry_ms = ss_etcd__boot_ms() + SS_ETCD_MARKER_RETRY_MS;
        return;
    }
    memmove(&e->tleases[0], &e->tleases[1], (SS_ETCD_TLEASES - 1) * sizeof e->tleases[0]);
    e->tleases[SS_ETCD_TLEASES - 1].id = id;
    /* etcd keeps it at least ttl from when it granted it, which came after
     * the request went out. */
    e->tleases[SS_ETCD_TLEASES - 1].ends_ms = e->tlease_asked_ms + (uint64_t)ttl * 1000u;
    e->stats.tombstone_leases++;
}

void ss_etcd__tombstone_leases_gone(struct ss_backend_etcd *e, const char *why)
{
    ss_etcd__log(e, SS_LOG_WARNING, "etcd refused a commit (%s): a lease for tombstones was gone before "
                 "its time (revoked by hand, or the commit reached etcd later than the lease's margin); "
                 "the commit runs again, its tombstones on a new lease", why);
    memset(e->tleases, 0, sizeof e->tleases);
    e->stats.lease_refusals++;
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
