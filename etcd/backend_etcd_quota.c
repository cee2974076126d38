/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_quota.c - max_keys and max_bytes over the whole store.
 *
 * Exact counts, in one key (q/usage: "<keys> <bytes>", bytes charged as on
 * LMDB: key, value and 64 per key). Every Txn that changes them compares
 * the counter's revision and writes its new value, so the limits hold
 * whichever brokers write. The price: with limits set, the write batches
 * of different brokers all touch that key, so they commit one after the
 * other (a batch that lost the race runs again). Without a limit the key
 * is neither read nor written (docs/CLUSTER.md).
 *
 * The first broker that needs the counter and finds none (or one it
 * cannot read) counts the records, in pages all read at one revision
 * (backend_etcd_walk.h: never the whole store in one reply), and creates
 * it, if still absent (or replaces the one it could not read).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "../core/hex.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_quota.h"
#include "backend_etcd_tombstone.h"

#define SS_ETCD_KEY_CHARGE 64u
/* Counts of the store that may lose the race with other brokers' writes,
 * one after the other, before the counter is taken as it is. */
#define SS_ETCD_RECOUNT_TRIES 3u

bool ss_etcd__limited(const struct ss_backend_etcd *e)
{
    return e->max_keys != 0 || e->max_bytes != 0;
}

/* What x holds now (the batch's change, else what was read): found, and
 * the charge. */
static uint64_t ss_etcd__held(const struct ss_etcd_entry *x, bool *found)
{
    const ss_buf *cur = x->change == SS_CHANGE_PUT ? &x->next_rec
                        : x->change == SS_CHANGE_DEL ? NULL
                        : x->found                   ? &x->stored
                                                     : NULL;
    ss_record rec;
    ss_bytes tail;
    *found = cur != NULL;
    if (cur == NULL || ss_record_decode(cur->data, cur->len, &rec, &tail) != SS_OK)
        return 0;
    return x->key.len + rec.value.len + SS_ETCD_KEY_CHARGE;
}

int ss_etcd__charge(struct ss_backend_etcd *e, const struct ss_etcd_entry *x, bool found, size_t value_len)
{
    if (!ss_etcd__limited(e))
        return SS_OK;
    /* The count as read, with nothing in flight that may move it (a
     * decision on it now would fail its compare when that commits). */
    if (!e->usage_known || ss_backend_etcd_committing(&e->base))
        return SS_E_PENDING; /* poll reads it; the flight settles */
    /* Allowed or refused, the answer rests on the count as read: the
     * batch's Txn checks that it still holds (a refusal too). */
    struct ss_etcd_batch *b = &e->open;
    b->usage_used = true;
    bool had;
    uint64_t before = ss_etcd__held(x, &had);
    uint64_t after = found ? x->key.len + value_len + SS_ETCD_KEY_CHARGE : 0;
    int64_t dk = (int64_t)found - (int64_t)had, db = (int64_t)after - (int64_t)before;
    int64_t keys = (int64_t)e->usage_keys + b->dkeys + dk, bytes = (int64_t)e->usage_bytes + b->dbytes + db;
    /* Only growth is refused: a store over a limit lowered since may
     * still shrink. */
    if ((dk > 0 && e->max_keys && keys > (int64_t)e->max_keys) ||
        (db > 0 && e->max_bytes && bytes > (int64_t)e->max_bytes))
        return SS_E_QUOTA;
    b->dkeys += dk;
    b->dbytes += db;
    return SS_OK;
}

int ss_etcd__build_usage(struct ss_backend_etcd *e, struct ss_etcd_batch *b, ss_etcd_txn *t)
{
    b->commit_usage = false;
    if (!b->usage_used)
        return SS_OK;
    int rc = ss_etcd__named(e, 'q', "usage");
    if (rc == SS_OK)
        rc = ss_etcd_txn_expect(t, ss_etcd__bytes(&e->scratch), e->usage_rev);
    if (rc != SS_OK || (b->dkeys == 0 && b->dbytes == 0))
        return rc;
    char text[48];
    int n = snprintf(text, sizeof text, "%" PRId64 " %" PRId64, (int64_t)e->usage_keys + b->dkeys,
                     (int64_t)e->usage_bytes + b->dbytes);
    ss_bytes value = {(const uint8_t *)text, (size_t)n};
    rc = ss_etcd_txn_put(t, ss_etcd__bytes(&e->scratch), value);
    b->commit_usage = rc == SS_OK;
    return rc;
}

void ss_etcd__usage_settled(struct ss_backend_etcd *e, struct ss_etcd_batch *b, int rc, int64_t revision)
{
    if (rc == SS_OK && b->commit_usage) {
        e->usage_keys = (uint64_t)((int64_t)e->usage_keys + b->dkeys);
        e->usage_bytes = (uint64_t)((int64_t)e->usage_bytes + b->dbytes);
        e->usage_rev = revision;
    } else if (rc != SS_OK && ss_etcd__limited(e)) {
        e->usage_known = false; /* another broker may have moved it */
    }
    b->commit_usage = b->usage_used = false;
    b->dkeys = b->dbytes = 0;
}

/* A counter that is not "<keys> <bytes>" (put there by hand, or by a
 * broker that counts differently): it is only a count of the records,
 * so the records are counted again and the count replaces it, at that
 * revision only. Until then writes wait, as for a counter not read yet. */
static void ss_etcd__usage_unreadable(struct ss_backend_etcd *e, ss_bytes v, int64_t rev)
{
    char text[40];
    ss_hex_loggable(v.data, v.len, text, sizeof text);
    ss_etcd__log(e, SS_LOG_ERR, "%sq/usage holds \"%s\", not \"<keys> <bytes>\": counting the store again "
                 "to replace it", e->prefix, text);
    e->usage_bad_rev = rev;
}

/* "<keys> <bytes>", exactly: what ss_etcd__build_usage writes (two
 * unsigned decimals within 63 bits, one space between). */
static bool ss_etcd__usage_parse(struct ss_backend_etcd *e, ss_bytes v, int64_t rev)
{
    const uint8_t *space = v.len ? memchr(v.data, ' ', v.len) : NULL;
    uint64_t k, b;
    if (space == NULL ||
        ss_parse_u64(v.data, (size_t)(space - v.data), INT64_MAX, &k) != SS_OK ||
        ss_parse_u64(space + 1, v.len - (size_t)(space - v.data) - 1, INT64_MAX, &b) != SS_OK)
        return false;
    e->usage_keys = k;
    e->usage_bytes = b;
    e->usage_rev = rev;
    e->usage_known = true;
    return true;
}

static int ss_etcd__pack_usage(struct ss_backend_etcd *e, ss_buf *out)
{
    int rc = ss_etcd__named(e, 'q', "usage");
    return rc == SS_OK ? ss_etcd_range_pack(out, ss_etcd__bytes(&e->scratch), false) : rc;
}

/* The count's next page: every page at the revision of the first, so that
 * the pages add up to the store as it was at one moment. */
static int ss_etcd__pack_count_page(struct ss_backend_etcd *e, ss_buf *out)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__key(e, &e->scratch, 'k', none);
    if (rc == SS_OK)
        rc = ss_etcd__records_end(e, &e->scratch2);
    if (rc != SS_OK)
        return rc;
    return ss_etcd_walk_pack(&e->usage_walk, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(&e->scratch2),
                             e->max_request_bytes, e->usage_count_rev, out);
}

/* No counter (or an unreadable one): count the records, page by page. */
static void ss_etcd__usage_count(struct ss_backend_etcd *e)
{
    ss_etcd_walk_restart(&e->usage_walk);
    e->usage_count_rev = 0;
    e->usage_count_keys = e->usage_count_bytes = 0;
    ss_etcd__send(e, SS_OP_USAGE_SCAN, SS_ETCD_RANGE_METHOD, ss_etcd__pack_count_page);
}

/* The count or the counter could not be had: try again later (a count
 * from its start), and say why once. */
static void ss_etcd__usage_later(struct ss_backend_etcd *e, const ss_grpc_call *c, uint64_t pause_ms)
{
    e->usage_asked = false;
    e->usage_retry_ms = ss_etcd__mono_ms() + pause_ms;
    if (c != NULL && !e->usage_failed_logged) {
        ss_etcd__log(e, SS_LOG_ERR, "the store's usage (for max_keys or max_store_bytes) could not be read or "
                     "counted (%s): writes wait for it; trying again every %llu ms", ss_etcd__why(c),
                     (unsigned long long)pause_ms);
        e->usage_failed_logged = true;
    }
}

void ss_etcd__usage_step(struct ss_backend_etcd *e)
{
    /* While etcd is out of space (as this broker saw it last) the counter
     * is used as it is, too high by the deletions made meanwhile: only
     * growth is refused, and no put, a count's replacement neither, is
     * taken then. Once it takes writes again, the count replaces it. */
    if (e->usage_recount && !e->nospace_said && e->usage_known && !ss_backend_etcd_committing(&e->base))
        e->usage_known = false;
    if (!ss_etcd__limited(e) || e->usage_known || e->usage_asked || ss_etcd__mono_ms() < e->usage_retry_ms)
        return;
    e->usage_asked = true;
    ss_etcd__send(e, SS_OP_USAGE, SS_ETCD_RANGE_METHOD, ss_etcd__pack_usage);
}

/* A page of the count came back: add it up; after the last page, create
 * the counter unless someone did meanwhile. */
static void ss_etcd__usage_counted(struct ss_backend_etcd *e, const ss_grpc_call *c)
{
    ss_etcd_reply r;
    size_t n;
    if (c->rc != SS_OK || ss_etcd_range_unpack_all(&c->reply, &r, &n) != SS_OK) {
        ss_etcd__usage_later(e, c, SS_ETCD_MARKER_RETRY_MS); /* a count is costly: not every 100 ms */
        return;
    }
    e->stats.usage_ranges++;
    if (e->usage_count_rev == 0)
        e->usage_count_rev = r.revision;
    ss_bytes first = {NULL, 0}, last = {NULL, 0};
    for (size_t i = 0; i < n; i++) {
        ss_etcd_kv kv;
        ss_bytes key;
        ss_record rec;
        ss_bytes tail;
        ss_etcd_range_kv(&r, i, &kv, &key);
        if (i == 0)
            first = key;
        last = key;
        /* Under the prefix and "k/", as asked (an answer that is not is
         * counted as nothing rather than wrap around). */
        size_t klen = key.len >= e->prefix_len + 2 ? key.len - e->prefix_len - 2 : 0;
        if (key.len >= e->prefix_len + 2 && ss_record_decode(kv.value.data, kv.value.len, &rec, &tail) == SS_OK && !ss_etcd__tombstone(kv.value)) {
            e->usage_count_keys++;
            e->usage_count_bytes += klen + ss_etcd__value_len(kv.value, &rec) + SS_ETCD_KEY_CHARGE;
        }
    }
    bool more = ss_etcd_walk_next(&e->usage_walk, first, last, n, r.count > (int64_t)n && n > 0);
    ss_etcd_reply_free(&r);
    if (more && ss_etcd_walk_lost(&e->usage_walk)) {
        ss_etcd__usage_later(e, NULL, SS_ETCD_RETRY_MS); /* out of memory: the count again, later */
        return;
    }
    if (more) {
        ss_etcd__send(e, SS_OP_USAGE_SCAN, SS_ETCD_RANGE_METHOD, ss_etcd__pack_count_page);
        return;
    }
    uint64_t keys = e->usage_count_keys, bytes = e->usage_count_bytes;
    char text[48];
    int len = snprintf(text, sizeof text, "%" PRIu64 " %" PRIu64, keys, bytes);
    ss_bytes value = {(const uint8_t *)text, (size_t)len};
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_USAGE_INIT, SS_ETCD_TXN_METHOD);
    int rc = op ? ss_etcd__named(e, 'q', "usage") : SS_E_NOMEM;
    if (rc == SS_OK) /* unless another broker created (or replaced) it meanwhile */
        rc = ss_etcd_cas_pack(&op->call.request, ss_etcd__bytes(&e->scratch), e->usage_bad_rev, value, 0);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        ss_etcd__usage_later(e, NULL, SS_ETCD_RETRY_MS);
        return;
    }
    ss_etcd__log(e, SS_LOG_NOTICE, "the store's usage counted: %" PRIu64 " keys, %" PRIu64 " bytes", keys,
                 bytes);
    ss_etcd__submit(e, op);
}

void ss_etcd__usage_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    const ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (op->kind == SS_OP_USAGE_SCAN) {
        ss_etcd__usage_counted(e, c);
        return;
    }
    bool ok = false;
    if (op->kind == SS_OP_USAGE && c->rc == SS_OK && ss_etcd_range_unpack(&c->reply, &r, &kv) == SS_OK) {
        if (!kv.found) { /* no counter yet: count */
            e->usage_bad_rev = 0;
            ss_etcd_reply_free(&r);
            ss_etcd__usage_count(e);
            return;
        }
        if (e->usage_recount && !e->nospace_said) { /* too high: count, and replace it at this revision */
            ss_etcd__log(e, SS_LOG_NOTICE, "counting the store's usage again: deletions made while etcd was "
                         "out of space were not charged to %sq/usage", e->prefix);
            e->usage_bad_rev = kv.mod_revision;
            ss_etcd_reply_free(&r);
            ss_etcd__usage_count(e);
            return;
        }
        ok = ss_etcd__usage_parse(e, kv.value, kv.mod_revision);
        if (!ok) { /* count again, and replace what is there */
            ss_etcd__usage_unreadable(e, kv.value, kv.mod_revision);
            ss_etcd_reply_free(&r);
            ss_etcd__usage_count(e);
            return;
        }
        ss_etcd_reply_free(&r);
    } else if (op->kind == SS_OP_USAGE_INIT && c->rc == SS_OK && ss_etcd_txn_unpack(&c->reply, &r, &kv) == SS_OK) {
        if (r.succeeded) { /* created: read it back */
            e->usage_recount = false;
            ss_etcd_reply_free(&r);
            ss_etcd__send(e, SS_OP_USAGE, SS_ETCD_RANGE_METHOD, ss_etcd__pack_usage);
            return;
        }
        /* Another broker wrote the counter meanwhile: taken as it is,
         * unless it is to be replaced by a count (then counted again; but
         * not for ever: while other brokers keep changing the counter, a
         * count may never land, and meanwhile this broker's writes that
         * grow the store wait). */
        bool replace = e->usage_recount && !e->nospace_said;
        if (replace && kv.found && ++e->usage_recounts >= SS_ETCD_RECOUNT_TRIES) {
            ss_etcd__log(e, SS_LOG_WARNING, "the store's usage could not be counted again while other brokers "
                         "changed it (%u tries): %sq/usage stays too high by the deletions made while etcd was "
                         "out of space; delete it to have it counted anew", SS_ETCD_RECOUNT_TRIES, e->prefix);
            e->usage_recount = replace = false;
        }
        ok = kv.found && !replace && ss_etcd__usage_parse(e, kv.value, kv.mod_revision);
        if (kv.found && !ok && !replace) /* another unreadable one: the next try replaces it */
            ss_etcd__usage_unreadable(e, kv.value, kv.mod_revision);
        ss_etcd_reply_free(&r);
    }
    if (ok) {
        e->usage_bad_rev = 0;
        e->usage_failed_logged = false;
        e->usage_asked = false;
    } else {
        ss_etcd__usage_later(e, c->rc != SS_OK ? c : NULL, SS_ETCD_RETRY_MS);
    }
}
