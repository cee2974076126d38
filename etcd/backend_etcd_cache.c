/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_cache.c - the cache of records between the engine and etcd
 * (backend_etcd_state.h describes it): entries, their fetches, what a
 * Txn has room for, and how a batch's entries leave it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/hex.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_sweep.h"
#include "backend_etcd_tombstone.h"
#include "backend_etcd_upload.h"

/* ---- the cache --------------------------------------------------------- */

struct ss_etcd_entry *ss_etcd__find(struct ss_backend_etcd *e, ss_bytes key, uint64_t *hash)
{
    uint64_t h = ss_table_hash(&e->table, key.data, key.len);
    if (hash)
        *hash = h;
    for (ss_table_node *n = ss_table_find(&e->table, h); n; n = ss_table_next(n, h)) {
        struct ss_etcd_entry *x = (struct ss_etcd_entry *)n;
        if (x->key.len == key.len && (key.len == 0 || memcmp(x->key.data, key.data, key.len) == 0))
            return x;
    }
    return NULL;
}

void ss_etcd__entry_free(struct ss_backend_etcd *e, struct ss_etcd_entry *x)
{
    if (x->op)
        x->op->entry = NULL; /* its answer is dropped when it comes */
    if (x->state == SS_ENTRY_FAILED)
        e->failed--;
    ss_table_remove(&e->table, &x->node);
    if (x->prev)
        x->prev->next = x->next;
    else
        e->first = x->next;
    if (x->next)
        x->next->prev = x->prev;
    else
        e->last = x->prev;
    e->entries--;
    e->cache_bytes -= x->stored.cap + x->key.cap;
    ss_buf_free(&x->key);
    ss_buf_free(&x->stored);
    ss_buf_free(&x->next_rec);
    free(x);
}

/* Send (again) the linearizable Range that fetches x. */
static int ss_etcd__fetch(struct ss_backend_etcd *e, struct ss_etcd_entry *x)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_FETCH, SS_ETCD_RANGE_METHOD);
    if (op == NULL)
        return SS_E_NOMEM;
    int rc = ss_etcd__key(e, &e->scratch, 'k', ss_etcd__bytes(&x->key));
    if (rc == SS_OK)
        rc = ss_etcd_range_pack(&op->call.request, ss_etcd__bytes(&e->scratch), false);
    if (rc != SS_OK) {
        ss_etcd__op_free(op);
        return rc;
    }
    op->entry = x;
    x->op = op;
    x->state = SS_ENTRY_FETCHING;
    e->stats.fetches++;
    ss_etcd__submit(e, op);
    return SS_OK;
}

static int ss_etcd__entry_new(struct ss_backend_etcd *e, ss_bytes key, uint64_t hash)
{
    struct ss_etcd_entry *x = calloc(1, sizeof *x);
    if (x == NULL || ss_buf_append(&x->key, key.data, key.len) != SS_OK) {
        free(x);
        return SS_E_NOMEM;
    }
    x->first_try_ms = ss_etcd__mono_ms();
    int rc = ss_etcd__fetch(e, x);
    if (rc != SS_OK) {
        ss_buf_free(&x->key);
        free(x);
        return rc;
    }
    ss_table_insert(&e->table, &x->node, hash);
    x->prev = e->last;
    if (e->last)
        e->last->next = x;
    else
        e->first = x;
    e->last = x;
    e->entries++;
    e->cache_bytes += x->key.cap;
    return SS_OK;
}

static void ss_etcd__fetch_failed(struct ss_backend_etcd *e, struct ss_etcd_entry *x, const ss_grpc_call *c);

/* x cannot be read: its readers are answered rc until the batch ends. */
static void ss_etcd__entry_failed(struct ss_backend_etcd *e, struct ss_etcd_entry *x, int rc)
{
    x->state = SS_ENTRY_FAILED;
    x->fail_rc = rc;
    e->failed++;
}

#define SS_ETCD_UNREADABLE_LOG_MS 10000

/* x's record cannot be read (written by hand under k/): its requests
 * answer "storage error" until it is deleted or replaced in etcd. Said in
 * the log at most every 10 s, with how many more were found since, so
 * that a busy key does not flood it. */
static void ss_etcd__unreadable(struct ss_backend_etcd *e, const struct ss_etcd_entry *x)
{
    uint64_t now = ss_etcd__mono_ms();
    if (e->unreadable_logged_ms != 0 && now - e->unreadable_logged_ms < SS_ETCD_UNREADABLE_LOG_MS) {
        e->unreadable_unlogged++;
        return;
    }
    char key[100], more[80] = "";
    ss_hex_loggable(x->key.data, x->key.len, key, sizeof key);
    if (e->unreadable_unlogged)
        snprintf(more, sizeof more, " (and %" PRIu64 " such reads since the last of these lines)",
                 e->unreadable_unlogged);
    ss_etcd__log(e, SS_LOG_ERR, "%sk/%s holds no record of the state store: its requests answer \"storage "
                 "error\" until it is deleted in etcd%s", e->prefix, key, more);
    e->unreadable_logged_ms = now;
    e->unreadable_unlogged = 0;
}

/* A fetch came back. */
void ss_etcd__fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_entry *x = op->entry;
    if (x == NULL)
        return;
    x->op = NULL;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (op->call.rc == SS_OK && ss_etcd_range_unpack(&op->call.reply, &r, &kv) == SS_OK) {
        ss_record rec;
        ss_bytes tail;
        e->cache_bytes -= x->stored.cap;
        ss_buf_clear(&x->stored);
        int rc = SS_OK;
        if (kv.found && (rc = ss_buf_append(&x->stored, kv.value.data, kv.value.len)) == SS_OK &&
            ss_record_decode(x->stored.data, x->stored.len, &rec, &tail) != SS_OK)
            rc = SS_E_CORRUPT;
        int64_t read_at = r.revision; /* the reply is freed next */
        ss_etcd_reply_free(&r);
        e->cache_bytes += x->stored.cap;
        if (rc != SS_OK) {
            if (rc == SS_E_CORRUPT)
                ss_etcd__unreadable(e, x);
            ss_etcd__entry_failed(e, x, rc);
            return;
        }
        x->found = kv.found && !ss_etcd__tombstone(ss_etcd__bytes(&x->stored)); /* the reply is freed */
        x->rev = kv.found ? kv.mod_revision : 0;
        x->seen_rev = read_at;
        if (x->stale_rev <= x->seen_rev)
            x->stale_rev = 0; /* the change told while it was read is in what was read */
        x->stored_expiry = kv.found ? rec.expiry_ms : 0;
        x->blob[0] = '\0';
        struct ss_etcd_stub stub;
        if (x->found && ss_etcd__stub(ss_etcd__bytes(&x->stored), &rec, &stub)) {
            /* A stub: its chunks as they were when it was read. */
            struct ss_etcd_op *op2 = ss_etcd__blob_read(e, SS_OP_BLOB_FETCH, &stub, read_at);
            if (op2 == NULL) {
                ss_etcd__entry_failed(e, x, SS_E_NOMEM);
                return;
            }
            op2->entry = x;
            x->op = op2;
            ss_etcd__submit(e, op2);
            return;
        }
        x->state = SS_ENTRY_KNOWN;
        return;
    }
    ss_etcd__fetch_failed(e, x, &op->call);
}

/* The chunks of a fetched stub came back. */
void ss_etcd__blob_fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_entry *x = op->entry;
    if (x == NULL)
        return;
    x->op = NULL;
    ss_record rec;
    ss_bytes tail;
    struct ss_etcd_stub stub;
    if (ss_record_decode(x->stored.data, x->stored.len, &rec, &tail) != SS_OK ||
        !ss_etcd__stub(ss_etcd__bytes(&x->stored), &rec, &stub))
        return; /* cannot be: fetched checked it */
    if (op->call.rc != SS_OK) {
        ss_etcd__fetch_failed(e, x, &op->call);
        return;
    }
    ss_buf value = SS_BUF_INIT, full = SS_BUF_INIT;
    int rc = ss_etcd__blob_value(&op->call.reply, &stub, &value);
    if (rc == SS_OK)
        rc = ss_etcd__unstub(ss_etcd__bytes(&x->stored), ss_etcd__bytes(&value), &full);
    ss_buf_free(&value);
    if (rc != SS_OK) {
        if (rc == SS_E_CORRUPT)
            ss_etcd__log(e, SS_LOG_ERR, "the chunks %s/ of a stored value are missing or do not add "
                         "up to its length", stub.blob);
        ss_buf_free(&full);
        ss_etcd__entry_failed(e, x, rc);
        return;
    }
    e->cache_bytes -= x->stored.cap;
    ss_buf_free(&x->stored);
    x->stored = full;
    e->cache_bytes += x->stored.cap;
    memcpy(x->blob, stub.blob, sizeof x->blob);
    x->state = SS_ENTRY_KNOWN;
}

/* A read of x failed: again after a pause, or, past unavailable_ms, its
 * readers are answered that the store is unavailable. */
static void ss_etcd__fetch_failed(struct ss_backend_etcd *e, struct ss_etcd_entry *x, const ss_grpc_call *c)
{
    uint64_t now = ss_etcd__mono_ms();
    if (now - x->first_try_ms >= e->unavailable_ms) {
        ss_etcd__log(e, SS_LOG_WARNING, "etcd did not answer a read for %u ms (%s): the "
                     "requests that wait for it are answered \"the store is unavailable\"",
                     e->unavailable_ms, ss_etcd__why(c));
        ss_etcd__entry_failed(e, x, SS_E_UNAVAILABLE);
        return;
    }
    x->state = SS_ENTRY_RETRY;
    x->retry_at_ms = now + SS_ETCD_RETRY_MS;
}

/* Make x part of the open batch (its revision is compared by the Txn).
 * False when the batch cannot take another key. */
static bool ss_etcd__touch(struct ss_backend_etcd *e, struct ss_etcd_entry *x)
{
    if (x->touched)
        return true;
    /* Per key a compare (etcd counts compares and operations apart; the
     * operations of a change are counted when it is made: ss_etcd__room).
     * Beside them: SS_ETCD_OTHER_COMPARES. */
    size_t bytes = 2 * (x->key.len + e->prefix_len) + 64;
    struct ss_etcd_batch *b = &e->open;
    if (b->ntouched > 0 && (b->ntouched + b->guards + 1 + SS_ETCD_OTHER_COMPARES > e->max_txn_ops ||
                            b->bytes + bytes + SS_ETCD_REQUEST_SLACK > e->max_request_bytes)) {
        b->full = true;
        return false;
    }
    if (b->ntouched == b->touched_cap) {
        size_t cap = b->touched_cap ? b->touched_cap * 2 : 64;
        struct ss_etcd_entry **t = realloc(b->touched, cap * sizeof *t);
        if (t == NULL)
            return false;
        b->touched = t;
        b->touched_cap = cap;
    }
    b->touched[b->ntouched++] = x;
    b->bytes += bytes;
    x->touched = true;
    return true;
}

/* What an operation on x's chunks adds to a Txn beside its record's
 * compare and put (counted by ss_etcd__touch): it names the key again. */
static size_t ss_etcd__naming_bytes(size_t key_len, size_t prefix_len)
{
    return key_len + prefix_len + 64;
}

static size_t ss_etcd__index_op_bytes(const struct ss_backend_etcd *e, const struct ss_etcd_entry *x)
{
    return ss_etcd__naming_bytes(x->key.len, e->prefix_len);
}

size_t ss_backend_etcd_key_overhead(size_t key_len, size_t prefix_len)
{
    /* The record's compare and put, and the deletion of its chunks. */
    return 3 * ss_etcd__naming_bytes(key_len, prefix_len) + SS_ETCD_REQUEST_SLACK;
}

/* The operations of x's change (a put or delete of the record, the
 * deletion of the chunks of a value it replaces, and for a value put in
 * chunks the deletion of their guard, which it also compares) and the
 * bytes they add beside payload, the record's: *bytes.
 * The operations, or 0: the batch is full, the change waits for the
 * next. */
size_t ss_etcd__room(struct ss_backend_etcd *e, const struct ss_etcd_entry *x, size_t payload, bool chunked,
                     size_t *bytes)
{
    size_t ops = x->found && x->blob[0] != '\0' ? 2 : 1;
    *bytes = payload + (ops - 1) * ss_etcd__index_op_bytes(e, x);
    if (chunked) {
        ops++;
        *bytes += 2 * ss_etcd__naming_bytes(SS_ETCD_BLOB_ID_LEN, e->prefix_len);
    }
    /* A chunked value's guard is compared too (etcd counts compares
     * against the same limit). */
    bool compares_full = chunked && e->open.ntouched + e->open.guards + 1 + SS_ETCD_OTHER_COMPARES > e->max_txn_ops;
    /* A second change of a key waits for the next batch: a Txn writes a
     * key once, and each change must be a revision of its own for every
     * broker's watch to report it (one broker notifies every change).
     * The first key of a batch always fits: ss_etcd__put refuses a key
     * too long for a Txn of its own. */
    if (x->change != SS_CHANGE_NONE || e->open.ops + ops > e->max_txn_ops || compares_full ||
        (e->open.ntouched > 1 && e->open.bytes + *bytes + SS_ETCD_REQUEST_SLACK > e->max_request_bytes)) {
        e->open.full = true;
        return 0;
    }
    return ops;
}

/* The engine's read, and the sweep's. */
int ss_etcd__get(struct ss_backend_etcd *e, ss_bytes key, ss_record *rec, ss_revision *rev,
                        struct ss_etcd_entry **entry)
{
    uint64_t hash;
    struct ss_etcd_entry *x = ss_etcd__find(e, key, &hash);
    *rev = 0;
    if (x == NULL) {
        int rc = ss_etcd__entry_new(e, key, hash);
        return rc == SS_OK ? SS_E_PENDING : rc;
    }
    switch (x->state) {
    case SS_ENTRY_FETCHING:
        return SS_E_PENDING;
    case SS_ENTRY_RETRY:
        if (ss_etcd__mono_ms() >= x->retry_at_ms && ss_etcd__fetch(e, x) != SS_OK)
            return SS_E_NOMEM;
        return SS_E_PENDING;
    case SS_ENTRY_FAILED:
        return x->fail_rc;
    case SS_ENTRY_KNOWN:
        break;
    }
    if (x->flight)
        return SS_E_PENDING; /* its batch commits: after that */
    if (!ss_etcd__touch(e, x))
        return SS_E_PENDING; /* the next batch */
    if (entry)
        *entry = x;
    *rev = (ss_revision)x->rev;
    /* The record, or the tombstone (absent, and the version its deletion
     * removed, which the next version of the key must exceed). */
    const ss_buf *cur = x->change == SS_CHANGE_NONE    ? (x->rev ? &x->stored : NULL)
                        : x->change == SS_CHANGE_PURGE ? NULL
                                                       : &x->next_rec;
    if (cur == NULL)
        return SS_E_NOTFOUND;
    ss_bytes tail;
    if (ss_record_decode(cur->data, cur->len, rec, &tail) != SS_OK)
        return SS_E_CORRUPT;
    if (!ss_etcd__tombstone(ss_etcd__bytes(cur)))
        return SS_OK;
    ss_hlc removed = rec->version;
    memset(rec, 0, sizeof *rec);
    rec->version = removed;
    return SS_E_NOTFOUND;
}

/* The entries of batch b leave it: committed (their changes are what
 * etcd holds, at revision rev) or not (they leave the cache: what they
 * hold may be stale); unknown: perhaps committed. */
void ss_etcd__entries_end(struct ss_backend_etcd *e, struct ss_etcd_batch *b, bool committed, bool unknown,
                          int64_t rev)
{
    int64_t revoked = 0; /* a batch's chunked values share their guards' lease */
    for (size_t i = 0; i < b->ntouched; i++) {
        struct ss_etcd_entry *x = b->touched[i];
        x->touched = false;
        x->flight = NULL;
        if (!committed) {
            /* Chunks written for a value that was not stored (also when
             * none was confirmed: a put that timed out may be applied all
             * the same, which the guard's revocation first rules out). */
            if (x->change == SS_CHANGE_PUT && x->next_blob[0] != '\0' && x->upload_lease != 0 && !unknown)
                ss_etcd__blob_release(e, x->next_blob, x->upload_lease);
            /* Perhaps stored: its stub may name these chunks. The guard's
             * lease goes (the chunks have no lease of their own), the
             * chunks stay. */
            if (x->change == SS_CHANGE_PUT && x->next_blob[0] != '\0' && x->upload_lease != 0 && unknown) {
                ss_etcd__log(e, SS_LOG_WARNING, "the chunks c/%s/ of a value whose commit has an unknown "
                             "outcome are kept: the value may be stored (if not, they are left behind: "
                             "see CLUSTER.md)", x->next_blob);
                if (x->upload_lease != revoked) {
                    ss_etcd__blob_release(e, "", x->upload_lease);
                    revoked = x->upload_lease;
                }
            }
            ss_etcd__entry_free(e, x);
            continue;
        }
        /* Stored: its guard went with the commit; its lease is not kept
         * for nothing (a late put of the guard fails on the commit marker
         * all the same: backend_etcd_upload.c). */
        if (x->upload_lease != 0 && x->upload_lease != revoked) {
            ss_etcd__blob_release(e, "", x->upload_lease);
            revoked = x->upload_lease;
        }
        x->upload_lease = 0;
        if (x->change == SS_CHANGE_PUT || x->change == SS_CHANGE_DEL) {
            /* The record, or the tombstone, is what etcd holds. */
            e->cache_bytes -= x->stored.cap;
            ss_buf spare = x->stored;
            x->stored = x->next_rec;
            x->next_rec = spare;
            e->cache_bytes += x->stored.cap;
            x->found = x->change == SS_CHANGE_PUT;
            x->rev = rev;
            x->stored_expiry = x->next_expiry;
            if (x->change == SS_CHANGE_DEL && x->next_lease)
                e->stats.tombstones_leased++;
            memcpy(x->blob, x->next_blob, sizeof x->blob);
            /* The broker that wrote a deadline (a record's, or a
             * tombstone's end) sweeps at that deadline; the others
             * later (backend_etcd_sweep.c). */
            ss_etcd__deadline_learn(e, ss_etcd__bytes(&x->key), rev, x->next_expiry, true);
        } else if (x->change == SS_CHANGE_PURGE) {
            ss_etcd__deadline_learn(e, ss_etcd__bytes(&x->key), rev, 0, true);
            x->found = false;
            x->rev = 0;
            e->cache_bytes -= x->stored.cap;
            ss_buf_free(&x->stored);
            x->stored_expiry = 0;
            x->blob[0] = '\0';
        }
        /* The Txn's compare on it held: as of its revision, etcd holds
         * what the entry does. */
        if (rev > x->seen_rev)
            x->seen_rev = rev;
        x->next_blob[0] = '\0';
        x->uploaded = 0;
        x->guarded = false;
        /* What next_rec holds now is the record replaced (after the swap
         * above), which the cache's count no longer covers: freed, or a
         * key deleted after a large value would keep it uncounted. */
        ss_buf_free(&x->next_rec);
        x->change = SS_CHANGE_NONE;
        x->next_lease = 0;
        /* Changed after what it now holds (told while it could not go):
         * read again when next wanted. */
        if (x->stale_rev > x->rev)
            ss_etcd__entry_free(e, x);
        else
            x->stale_rev = 0;
    }
}

void ss_etcd__batch_reset(struct ss_etcd_batch *b)
{
    b->ntouched = 0;
    b->dkeys = b->dbytes = 0;
    b->usage_used = b->commit_usage = false;
    /* the marker's put, the counter's and the sentinel's; or, out of
     * space or in a read-only batch, the marker's Range and the
     * sentinel's deletion; and one to spare */
    b->ops = 4;
    b->guards = 0;
    b->bytes = 0;
    b->full = false;
    ss_feed_clear(&b->pending);
}

void ss_etcd__batch_free(struct ss_etcd_batch *b)
{
    free(b->touched);
    ss_feed_free(&b->pending);
}

void ss_etcd__tidy(struct ss_backend_etcd *e)
{
    /* Entries that failed are fetched again by their next reader; a cache
     * grown too large is emptied of what no batch needs. Otherwise
     * nothing to walk: this runs at every tick. */
    bool shrink = e->entries > SS_ETCD_CACHE_ENTRIES || e->cache_bytes > SS_ETCD_CACHE_BYTES;
    if (!shrink && e->failed == 0)
        return;
    for (struct ss_etcd_entry *x = e->first, *next; x; x = next) {
        next = x->next;
        if (x->touched || x->flight)
            continue;
        if (x->state == SS_ENTRY_FAILED || (shrink && x->state == SS_ENTRY_KNOWN))
            ss_etcd__entry_free(e, x);
    }
}

void ss_etcd__end_flight(struct ss_backend_etcd *e, struct ss_etcd_flight *f, bool committed, bool unknown,
                         int64_t rev)
{
    ss_etcd__entries_end(e, &f->b, committed, unknown, rev);
    ss_etcd__batch_reset(&f->b);
    ss_etcd__tidy(e);
}

void ss_backend_etcd_prefetch(ss_backend *b, ss_bytes key)
{
    struct ss_backend_etcd *e = b->impl;
    uint64_t hash;
    if (key.len == 0 || key.len > SS_STORE_KEY_MAX || ss_etcd__find(e, key, &hash) != NULL)
        return;
    /* A failure here is met again when the request itself reads the key. */
    (void)ss_etcd__entry_new(e, key, hash);
}

void ss_etcd__seen_change(struct ss_backend_etcd *e, ss_bytes key, int64_t rev)
{
    struct ss_etcd_entry *x = ss_etcd__find(e, key, NULL);
    if (x == NULL || x->rev >= rev)
        return;
    if (x->state == SS_ENTRY_KNOWN && !x->touched && !x->flight)
        ss_etcd__entry_free(e, x);
    else if (rev > x->stale_rev)
        x->stale_rev = rev; /* compared if read (commit.c), dropped when it can go */
}

