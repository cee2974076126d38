/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd.c - the state store on etcd (backend_etcd.h): the cache,
 * the storage interface, polling, start and stop
 * (backend_etcd_internal.h describes the cache). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../core/bigendian.h"
#include "../core/errors.h"
#include "../core/record.h"
#include "../core/siphash.h"
#include "backend_etcd_internal.h"

/* ---- small helpers ----------------------------------------------------- */

uint64_t ss_etcd__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ss_etcd__log(struct ss_backend_etcd *e, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ss_etcd__log(struct ss_backend_etcd *e, int level, const char *fmt, ...)
{
    if (e->log == NULL)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    e->log(e->log_ctx, level, msg);
}

/* out = prefix + part + key (part: "k/", or "x/<deadline>/" when
 * deadline is not 0). */
int ss_backend_etcd_layout_key(ss_buf *out, const char *prefix, char part, uint64_t deadline, ss_bytes key)
{
    ss_buf_clear(out);
    char head[24];
    int n = part == 'x' ? snprintf(head, sizeof head, "x/%016llx/", (unsigned long long)deadline)
                        : snprintf(head, sizeof head, "%c/", part);
    int rc = ss_buf_append_str(out, prefix);
    if (rc == SS_OK)
        rc = ss_buf_append(out, head, (size_t)n);
    if (rc == SS_OK && key.len)
        rc = ss_buf_append(out, key.data, key.len);
    return rc;
}

int ss_etcd__key(struct ss_backend_etcd *e, ss_buf *out, char part, uint64_t deadline, ss_bytes key)
{
    return ss_backend_etcd_layout_key(out, e->prefix, part, deadline, key);
}

int ss_etcd__named(struct ss_backend_etcd *e, char part, const char *name)
{
    ss_bytes n = {(const uint8_t *)name, strlen(name)};
    return ss_etcd__key(e, &e->scratch, part, 0, n);
}

ss_bytes ss_etcd__bytes(const ss_buf *b)
{
    ss_bytes v = {b->data, b->len};
    return v;
}

/* ---- calls ------------------------------------------------------------- */

struct ss_etcd_op *ss_etcd__op_new(struct ss_backend_etcd *e, enum ss_op_kind kind,
                                          const char *method)
{
    struct ss_etcd_op *op = calloc(1, sizeof *op);
    if (op == NULL)
        return NULL;
    op->kind = kind;
    op->call.method = method;
    op->call.timeout_ms = e->call_timeout_ms;
    op->call.user = op;
    return op;
}

void ss_etcd__op_free(struct ss_etcd_op *op)
{
    ss_grpc_call_clear(&op->call);
    free(op);
}

void ss_etcd__submit(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    op->prev = NULL;
    op->next = e->ops;
    if (e->ops)
        e->ops->prev = op;
    e->ops = op;
    ss_grpc_submit(e->grpc, &op->call);
}

static void ss_etcd__unlink_op(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    if (op->prev)
        op->prev->next = op->next;
    else
        e->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
}

/* Failures that prove etcd did not apply a request (it refused it before
 * it went to the log); any other failure leaves a write's fate unknown. */
bool ss_etcd__refused(const ss_grpc_call *c)
{
    if (c->rc != SS_E_SERVER)
        return false;
    switch (c->status) {
    case 8: /* RESOURCE_EXHAUSTED: the database is full (quota), or, for a
             * while, "too many requests" (a member applying far behind
             * what it committed): that one passes, like a timeout. */
        return strstr(c->message, "too many requests") == NULL;
    case 3:  /* INVALID_ARGUMENT: too many operations, too large, duplicate key */
    case 7:  /* PERMISSION_DENIED */
    case 9:  /* FAILED_PRECONDITION */
    case 11: /* OUT_OF_RANGE */
        return true;
    default:
        return false;
    }
}

/* How long a broker that met etcd's NOSPACE alarm puts nothing before it
 * tries a put again (the alarm stays until an operator disarms it). */
#define SS_ETCD_NOSPACE_RETRY_MS 5000u

bool ss_etcd__out_of_space(struct ss_backend_etcd *e, const ss_grpc_call *c)
{
    if (c->rc != SS_E_SERVER || c->status != 8 || strstr(c->message, "space exceeded") == NULL)
        return false;
    if (!e->nospace_said)
        ss_etcd__log(e, SS_LOG_ERR, "etcd is out of space (%s: its NOSPACE alarm is raised): "
                     "writes that store anything are answered 'quota exceeded'; reads, deletions and "
                     "expiries go on, deletions without tombstones. Free space in etcd (compact, "
                     "defrag, then etcdctl alarm disarm)", ss_etcd__why(c));
    e->nospace = e->nospace_said = e->stats.nospace = true;
    e->nospace_retry_ms = ss_etcd__mono_ms() + SS_ETCD_NOSPACE_RETRY_MS;
    return true;
}

const char *ss_etcd__why(const ss_grpc_call *c)
{
    return c->message[0] ? c->message : ss_strerror(c->rc);
}

void ss_etcd__send(struct ss_backend_etcd *e, enum ss_op_kind kind, const char *method,
                   int (*pack)(struct ss_backend_etcd *, ss_buf *))
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, kind, method);
    if (op == NULL || pack(e, &op->call.request) != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return;
    }
    ss_etcd__submit(e, op);
}

/* ---- the cache --------------------------------------------------------- */

static struct ss_etcd_entry *ss_etcd__find(struct ss_backend_etcd *e, ss_bytes key, uint64_t *hash)
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

static void ss_etcd__entry_free(struct ss_backend_etcd *e, struct ss_etcd_entry *x)
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
    int rc = ss_etcd__key(e, &e->scratch, 'k', 0, ss_etcd__bytes(&x->key));
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

/* A fetch came back. */
static void ss_etcd__fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op)
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
        ss_etcd_reply_free(&r);
        e->cache_bytes += x->stored.cap;
        if (rc != SS_OK) {
            ss_etcd__entry_failed(e, x, rc);
            return;
        }
        x->found = kv.found && !ss_etcd__tombstone(ss_etcd__bytes(&x->stored)); /* the reply is freed */
        x->rev = kv.found ? kv.mod_revision : 0;
        x->stored_expiry = kv.found ? rec.expiry_ms : 0;
        x->blob[0] = '\0';
        struct ss_etcd_stub stub;
        if (x->found && ss_etcd__stub(ss_etcd__bytes(&x->stored), &rec, &stub)) {
            /* A stub: its chunks as they were when it was read. */
            struct ss_etcd_op *op2 = ss_etcd__blob_read(e, SS_OP_BLOB_FETCH, &stub, r.revision);
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
static void ss_etcd__blob_fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op)
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
     * Beside them: the marker's and the counter's compares. */
    size_t bytes = 2 * (x->key.len + e->prefix_len) + 64;
    struct ss_etcd_batch *b = &e->open;
    if (b->ntouched > 0 && (b->ntouched + 1 + 2 > e->max_txn_ops ||
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

/* What an operation on x's index entry or chunks adds to a Txn beside
 * its record's compare and put (counted by ss_etcd__touch): the index
 * entry names the key again. */
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
    /* The record's compare and put, up to three index or chunk operations. */
    return 5 * ss_etcd__naming_bytes(key_len, prefix_len) + SS_ETCD_REQUEST_SLACK;
}

/* The operations of x's change (a put or delete of the record, two of
 * the expiry index, and the deletion of the chunks of a value it
 * replaces) and the bytes they add beside payload, the record's: *bytes.
 * The operations, or 0: the batch is full, the change waits for the
 * next. */
static size_t ss_etcd__room(struct ss_backend_etcd *e, const struct ss_etcd_entry *x, size_t payload,
                            size_t *bytes)
{
    size_t ops = x->found && x->blob[0] != '\0' ? 4 : 3;
    *bytes = payload + (ops - 1) * ss_etcd__index_op_bytes(e, x);
    /* A second change of a key waits for the next batch: a Txn writes a
     * key once, and each change must be a revision of its own for every
     * broker's watch to report it (one broker notifies every change).
     * The first key of a batch always fits: ss_etcd__put refuses a key
     * too long for a Txn of its own. */
    if (x->change != SS_CHANGE_NONE || e->open.ops + ops > e->max_txn_ops ||
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

/* ---- the storage interface --------------------------------------------- */

static int ss_etcd__read(void *impl, ss_bytes key, ss_record *rec, ss_revision *rev)
{
    return ss_etcd__get(impl, key, rec, rev, NULL);
}

struct ss_etcd_entry *ss_etcd__entry(struct ss_backend_etcd *e, ss_bytes key)
{
    return ss_etcd__find(e, key, NULL);
}

struct ss_etcd_entry *ss_etcd__touched(struct ss_backend_etcd *e, ss_bytes key)
{
    struct ss_etcd_entry *x = ss_etcd__find(e, key, NULL);
    return x && x->touched ? x : NULL;
}

static void ss_etcd__record_change(struct ss_backend_etcd *e, const ss_change *c)
{
    if (ss_backend_wants(&e->base, c->key))
        (void)ss_feed_append(&e->open.pending, c);
}

static int ss_etcd__put(void *impl, ss_bytes key, const ss_record *rec, ss_revision decided_on)
{
    struct ss_backend_etcd *e = impl;
    struct ss_etcd_entry *x = ss_etcd__touched(e, key);
    /* The engine reads a key before writing it: the entry is the batch's,
     * and the Txn compares the revision it was decided on. */
    if (x == NULL || (ss_revision)x->rev != decided_on)
        return SS_E_CONFLICT;
    /* etcd refuses every put while it is out of space: answered at once,
     * so that the reads and deletions of the batch go through. */
    if (e->nospace)
        return SS_E_QUOTA;
    size_t size = ss_record_size(rec, 0, false);
    /* Beside the record, the compare and the put name the key, and so do
     * up to three index or chunk operations, as its deletion's Txn will
     * (its tombstone is small: the slack covers it). */
    size_t around = ss_backend_etcd_key_overhead(key.len, e->prefix_len);
    /* A value too large for one request goes in chunks (backend_etcd_blob.c):
     * the Txn carries its stub. */
    bool chunked = size + around > e->max_request_bytes;
    size_t in_txn = chunked ? ss_etcd__stub_size(rec) : size;
    if (in_txn + around > e->max_request_bytes)
        return SS_E_QUOTA; /* no Txn could carry it: the key is too long */
    size_t bytes;
    size_t ops = ss_etcd__room(e, x, in_txn, &bytes);
    if (ops == 0)
        return SS_E_CONFLICT; /* the next batch */
    /* Room first (what next_rec holds stays), then the charge, which
     * reads what x holds now: nothing can fail after it. */
    int rc = ss_buf_reserve(&x->next_rec, size);
    if (rc != SS_OK || (rc = ss_etcd__charge(e, x, true, rec->value.len)) != SS_OK) {
        ss_buf_free(&x->next_rec); /* uncounted: not kept */
        return rc;
    }
    ss_buf_clear(&x->next_rec);
    ss_record_encode(x->next_rec.data, rec, NULL, 0, false);
    x->next_rec.len = size;
    e->open.ops += ops;
    x->change = SS_CHANGE_PUT;
    x->next_expiry = rec->expiry_ms;
    x->next_blob[0] = '\0';
    x->uploaded = 0;
    if (chunked)
        ss_etcd__blob_new(e, x->next_blob);
    e->open.bytes += bytes;
    ss_change c = {.type = SS_CHANGE_SET, .key = key, .value = rec->value, .version = rec->version};
    ss_etcd__record_change(e, &c);
    return SS_OK;
}

int ss_etcd__del(void *impl, const ss_change *change, ss_revision decided_on)
{
    struct ss_backend_etcd *e = impl;
    struct ss_etcd_entry *x = ss_etcd__touched(e, change->key);
    if (x == NULL || (ss_revision)x->rev != decided_on)
        return SS_E_CONFLICT;
    if (x->change == SS_CHANGE_DEL || (x->change == SS_CHANGE_NONE && !x->found))
        return SS_E_NOTFOUND;
    if (e->nospace) {
        /* A tombstone is a put, which etcd refuses now: the record goes
         * with nothing in its place (its removed version is not kept for
         * the next writer: CLUSTER.md says what that means). Nor is the
         * usage counter put: it is counted again afterwards. */
        int rc = ss_etcd__purge(e, x);
        if (rc == SS_OK)
            ss_etcd__record_change(e, change);
        return rc;
    }
    size_t bytes;
    size_t ops = ss_etcd__room(e, x, ss_etcd__tombstone_size(e, change), &bytes);
    if (ops == 0)
        return SS_E_CONFLICT; /* the next batch */
    /* The tombstone (next_rec holds nothing of the batch's: room saw to
     * that), then the charge: nothing can fail after it. */
    uint64_t until = 0;
    int rc = ss_etcd__tombstone_make(e, change, &x->next_rec, &until);
    if (rc != SS_OK || (rc = ss_etcd__charge(e, x, false, 0)) != SS_OK) {
        ss_buf_free(&x->next_rec);
        return rc;
    }
    e->open.ops += ops;
    e->open.bytes += bytes;
    x->change = SS_CHANGE_DEL;
    x->next_expiry = until;
    x->next_blob[0] = '\0';
    ss_etcd__record_change(e, change);
    return SS_OK;
}

int ss_etcd__purge(struct ss_backend_etcd *e, struct ss_etcd_entry *x)
{
    size_t bytes;
    size_t ops = ss_etcd__room(e, x, 0, &bytes);
    if (ops == 0)
        return SS_E_CONFLICT;
    e->open.ops += ops;
    e->open.bytes += bytes;
    x->change = SS_CHANGE_PURGE;
    return SS_OK;
}

/* Versions grow across restarts through the wall clock and the merge of
 * every version read (engine.c); nothing is kept per broker. */
static int ss_etcd__save_clock(void *impl, uint64_t wall, uint32_t counter)
{
    (void)impl;
    (void)wall;
    (void)counter;
    return SS_OK;
}

static void ss_etcd__load_clock(void *impl, uint64_t *wall, uint32_t *counter)
{
    (void)impl;
    *wall = 0;
    *counter = 0;
}

/* The entries of batch b leave it: committed (their changes are what
 * etcd holds, at revision rev) or not (they leave the cache: what they
 * hold may be stale). */
static void ss_etcd__entries_end(struct ss_backend_etcd *e, struct ss_etcd_batch *b, bool committed, int64_t rev)
{
    for (size_t i = 0; i < b->ntouched; i++) {
        struct ss_etcd_entry *x = b->touched[i];
        x->touched = false;
        x->flight = NULL;
        if (!committed) {
            /* Chunks written for a value that was not stored (also when
             * none was confirmed: a put that timed out may have been
             * applied all the same). */
            if (x->change == SS_CHANGE_PUT && x->next_blob[0] != '\0')
                ss_etcd__blob_drop(e, x->next_blob);
            ss_etcd__entry_free(e, x);
            continue;
        }
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
            memcpy(x->blob, x->next_blob, sizeof x->blob);
            /* The broker that wrote a deadline (a record's, or a
             * tombstone's end) sweeps at that deadline; the others look
             * later, so they seldom race it for the key (a race costs the
             * loser's batch a conflict). */
            if (x->next_expiry && x->next_expiry < e->due_hint_ms)
                e->due_hint_ms = x->next_expiry;
        } else if (x->change == SS_CHANGE_PURGE) {
            x->found = false;
            x->rev = 0;
            e->cache_bytes -= x->stored.cap;
            ss_buf_free(&x->stored);
            x->stored_expiry = 0;
            x->blob[0] = '\0';
        }
        x->next_blob[0] = '\0';
        x->uploaded = 0;
        /* What next_rec holds now is the record replaced (after the swap
         * above), which the cache's count no longer covers: freed, or a
         * key deleted after a large value would keep it uncounted. */
        ss_buf_free(&x->next_rec);
        x->change = SS_CHANGE_NONE;
    }
}

void ss_etcd__batch_reset(struct ss_etcd_batch *b)
{
    b->ntouched = 0;
    b->dkeys = b->dbytes = 0;
    b->usage_used = b->commit_usage = false;
    b->ops = 4; /* the marker's put, the counter's, the claim's compare, a read-only batch's Range */
    b->bytes = 0;
    ss_buf_clear(&b->orphans);
    b->norphans = 0;
    b->full = false;
    ss_feed_clear(&b->pending);
}

static void ss_etcd__batch_free(struct ss_etcd_batch *b)
{
    free(b->touched);
    ss_buf_free(&b->orphans);
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

void ss_etcd__end_flight(struct ss_backend_etcd *e, struct ss_etcd_flight *f, bool committed, int64_t rev)
{
    ss_etcd__entries_end(e, &f->b, committed, rev);
    ss_etcd__batch_reset(&f->b);
    ss_etcd__tidy(e);
}

void ss_etcd__abort(void *impl)
{
    struct ss_backend_etcd *e = impl;
    ss_etcd__entries_end(e, &e->open, false, 0);
    ss_etcd__batch_reset(&e->open);
    ss_etcd__tidy(e);
}

void ss_etcd__append(void *ctx, const ss_change *c)
{
    (void)ss_feed_append(ctx, c);
}

static void ss_etcd__settled(void *impl, int rc)
{
    ss_etcd__watch_settled(impl, rc);
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
    if (x && x->state == SS_ENTRY_KNOWN && !x->touched && !x->flight && x->rev < rev)
        ss_etcd__entry_free(e, x);
}

/* For owners without a pipeline: commit and wait (bounded). */
static int ss_etcd__commit(void *impl, uint64_t now_ms)
{
    struct ss_backend_etcd *e = impl;
    uint64_t end = ss_etcd__mono_ms() + 4u * e->call_timeout_ms + e->unavailable_ms;
    int rc = SS_E_PENDING;
    bool started = false;
    unsigned slot = 0;
    while (ss_etcd__mono_ms() < end) {
        ss_backend_etcd_poll(&e->base, now_ms);
        if (!started) {
            rc = ss_backend_etcd_commit_start(&e->base, now_ms, &slot);
            if (rc == SS_E_NOTFOUND)
                return SS_OK;
            if (rc == SS_OK)
                started = true;
            else if (rc != SS_E_PENDING && rc != SS_E_BUSY)
                return rc;
        }
        if (started && ss_backend_etcd_commit_done(&e->base, slot, &rc)) {
            ss_etcd__settled(e, rc);
            return rc == SS_E_CONFLICT ? SS_E_IO : rc;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ss_etcd__log(e, SS_LOG_ERR, "a commit did not end in time: its outcome is unknown");
    return SS_E_UNAVAILABLE;
}

/* Every broker on the prefix derives the same key, with nothing to
 * agree on first; clients are not told the prefix, but it is no secret
 * (PROTOCOL.md 9.4). */
static void ss_etcd__token_key(void *impl, uint8_t out[16])
{
    struct ss_backend_etcd *e = impl;
    static const uint8_t zero[16];
    for (uint8_t half = 0; half < 2; half++) {
        ss_bytes parts[] = {{(const uint8_t *)"SCAN continuation tokens", 24},
                            {(const uint8_t *)e->prefix, strlen(e->prefix)},
                            {&half, 1}};
        ss_put_be(out + 8 * half, ss_siphash_parts(zero, parts, 3), 8);
    }
}

static const struct ss_backend_ops ss_backend_etcd_ops = {
    .name = "etcd",
    .read = ss_etcd__read,
    .put = ss_etcd__put,
    .del = ss_etcd__del,
    .next_expiry = ss_etcd__next_expiry,
    .pop_due = ss_etcd__pop_due,
    .save_clock = ss_etcd__save_clock,
    .load_clock = ss_etcd__load_clock,
    .commit = ss_etcd__commit,
    .abort = ss_etcd__abort,
    .settled = ss_etcd__settled,
    .scan = ss_etcd__page,
    .token_key = ss_etcd__token_key,
    .max_flights = SS_BACKEND_ETCD_FLIGHTS,
    .may_conflict = true,
    .wake_repeats = false, /* the channel's thread wakes once per batch of replies */
    .start = ss_etcd__start,
    .poll = ss_etcd__poll_op,
    .accepting = ss_etcd__accepting,
    .commit_start = ss_etcd__commit_start_op,
    .commit_collect = ss_etcd__commit_collect,
    .commit_wait = ss_etcd__commit_wait,
    .prefetch = ss_etcd__prefetch_op,
    .page_start = ss_etcd__page_start,
    .page_done = ss_etcd__page_done,
    .figures = ss_etcd__figures,
    .cause = ss_etcd__cause,
    .backup_start = ss_etcd__backup_start,
    .backup_done = ss_etcd__backup_done,
    .destroy = ss_backend_etcd_free,
};

void ss_backend_etcd_poll(ss_backend *b, uint64_t now_ms)
{
    struct ss_backend_etcd *e = b->impl;
    e->now_ms = now_ms;
    if (e->nospace && ss_etcd__mono_ms() >= e->nospace_retry_ms)
        e->nospace = false; /* try a put again: refused, it comes back */
    ss_etcd__watch_read(e);
    ss_grpc_call *list = ss_grpc_collect(e->grpc);
    while (list) {
        ss_grpc_call *c = list;
        list = c->next;
        struct ss_etcd_op *op = c->user;
        ss_etcd__unlink_op(e, op);
        if (c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED)
            e->auth_needed = true; /* the token expired, or none yet */
        switch (op->kind) {
        case SS_OP_FETCH:
            ss_etcd__fetched(e, op);
            break;
        case SS_OP_TXN:
            ss_etcd__txn_done(e, op);
            break;
        case SS_OP_FENCE:
            ss_etcd__fence_done(e, op);
            break;
        case SS_OP_MARKER:
            ss_etcd__marker_read(e, op);
            break;
        case SS_OP_SWEEP:
            ss_etcd__due_found(e, op);
            break;
        case SS_OP_GRANT:
        case SS_OP_CLAIM:
        case SS_OP_KEEPALIVE:
        case SS_OP_REVOKE:
            ss_etcd__claim_done(e, op);
            break;
        case SS_OP_AUTH:
            ss_etcd__auth_done(e, op);
            break;
        case SS_OP_USAGE:
        case SS_OP_USAGE_SCAN:
        case SS_OP_USAGE_INIT:
            ss_etcd__usage_done(e, op);
            break;
        case SS_OP_SCAN:
            ss_etcd__scan_read(e, op);
            break;
        case SS_OP_WATCH:
            ss_etcd__watch_ended(e, op);
            break;
        case SS_OP_REMOVED:
            ss_etcd__removed_read(e, op);
            break;
        case SS_OP_UPLOAD:
            ss_etcd__upload_done(e, op);
            break;
        case SS_OP_BLOB_DROP:
            ss_etcd__blob_dropped(e, op);
            break;
        case SS_OP_BLOB_FETCH:
            ss_etcd__blob_fetched(e, op);
            break;
        case SS_OP_BLOB_HELD:
            ss_etcd__held_blob_read(e, op);
            break;
        case SS_OP_BLOB_SCAN:
            ss_etcd__scan_blob_read(e, op);
            break;
        case SS_OP_PAGE:
            ss_etcd__page_read(e, op);
            break;
        }
        ss_etcd__op_free(op);
    }
    uint64_t mono = ss_etcd__mono_ms();
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++) {
        struct ss_etcd_flight *f = &e->flights[i];
        if (f->state == SS_COMMIT_RESOLVING && f->resolve_at_ms && mono >= f->resolve_at_ms)
            ss_etcd__send_fence(e, f);
        if (f->state == SS_COMMIT_UPLOADING && f->upload_retry_ms && mono >= f->upload_retry_ms)
            ss_etcd__upload_next(e, f);
    }
    ss_etcd__drop_step(e);
    ss_etcd__auth_step(e);
    /* The first slot's marker is read at start; the others' when first
     * used. */
    struct ss_etcd_flight *first = &e->flights[0];
    ss_etcd__ask_marker(e, first);
    ss_etcd__claim_step(e);
    if (first->marker_known)
        ss_etcd__usage_step(e);
    if (first->marker_known)
        ss_etcd__ask_due(e, now_ms);
    ss_etcd__watch_step(e);
}

/* ---- start and stop ---------------------------------------------------- */

void ss_backend_etcd_stats_get(const ss_backend *b, ss_backend_etcd_stats *s)
{
    const struct ss_backend_etcd *e = b->impl;
    *s = e->stats;
    s->cache_entries = e->entries;
    s->usage_known = ss_etcd__limited(e) && e->usage_known;
    s->keys = e->usage_keys;
    s->bytes = e->usage_bytes;
    s->endpoint = ss_grpc_endpoint(e->grpc);
}

int ss_backend_etcd_ping(ss_backend *b, char *what, size_t what_len)
{
    struct ss_backend_etcd *e = b->impl;
    ss_grpc_call c;
    int rc = SS_OK;
    /* Log in first: etcd 3.6 answers even a status only to a user (3.4
     * answered anyone). */
    if (e->username != NULL) {
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_AUTHENTICATE_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        if ((rc = ss_etcd_authenticate_pack(&c.request, e->username, e->password)) == SS_OK) {
            ss_grpc_call_wait(e->grpc, &c);
            rc = ss_etcd__logged_in(e, &c);
        }
        if (rc != SS_OK && c.rc == SS_E_SERVER && c.status == 3) { /* INVALID_ARGUMENT: a wrong name or password */
            snprintf(what, what_len, "etcd did not accept user %s: %s", e->username, ss_etcd__why(&c));
            rc = SS_E_INVAL;
        } else if (rc != SS_OK) {
            snprintf(what, what_len, "%s: %s", ss_grpc_endpoint(e->grpc), ss_etcd__why(&c));
        } else {
            e->auth_needed = false;
        }
        ss_grpc_call_clear(&c);
        if (rc != SS_OK)
            return rc;
    }
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_STATUS_METHOD;
    c.timeout_ms = e->call_timeout_ms;
    rc = ss_grpc_call_wait(e->grpc, &c);
    uint64_t leader = 0;
    char version[32] = "";
    if (rc == SS_OK)
        rc = ss_etcd_status_unpack(&c.reply, &leader, version, sizeof version);
    if (rc == SS_OK)
        snprintf(what, what_len, "etcd %s at %s, %s", version, ss_grpc_endpoint(e->grpc),
                 leader ? "with a leader" : "without a leader");
    else
        snprintf(what, what_len, "%s: %s", ss_grpc_endpoint(e->grpc), ss_etcd__why(&c));
    ss_grpc_call_clear(&c);
    return rc;
}

static void ss_etcd__wake(void *ctx)
{
    struct ss_backend_etcd *e = ctx;
    if (e->base.wake)
        e->base.wake(e->base.wake_ctx);
}

int ss_backend_etcd_new(const ss_backend_etcd_options *o, ss_backend **out, char *why, size_t why_len)
{
    struct ss_backend_etcd *e = calloc(1, sizeof *e);
    if (e == NULL)
        return SS_E_NOMEM;
    e->base.ops = &ss_backend_etcd_ops;
    e->base.impl = e;
    e->prefix = strdup(o->prefix ? o->prefix : SS_ETCD_PREFIX_DEFAULT);
    e->prefix_len = e->prefix ? strlen(e->prefix) : 0;
    e->node_id = strdup(o->node_id ? o->node_id : "StateStore");
    e->call_timeout_ms = o->call_timeout_ms ? o->call_timeout_ms : 2000;
    e->unavailable_ms = o->unavailable_ms ? o->unavailable_ms : 5000;
    e->max_request_bytes = o->max_request_bytes ? o->max_request_bytes : SS_ETCD_MAX_REQUEST_DEFAULT;
    e->max_txn_ops = o->max_txn_ops ? o->max_txn_ops : 128;
    e->sweep_interval_ms = o->sweep_interval_ms ? o->sweep_interval_ms : 250;
    e->tombstone_ms = o->tombstone_ms ? o->tombstone_ms : SS_BACKEND_ETCD_TOMBSTONE_MS;
    e->lease_ttl_s = o->lease_ttl_s ? o->lease_ttl_s : 3;
    e->claim_lost_ms = ss_etcd__mono_ms(); /* none held yet */
    e->max_keys = o->max_keys;
    e->max_bytes = o->max_bytes;
    e->log = o->log;
    e->log_ctx = o->log_ctx;
    if (o->username) {
        e->username = strdup(o->username);
        e->password = strdup(o->password ? o->password : "");
        e->auth_needed = true;
        if (e->username == NULL || e->password == NULL) {
            ss_backend_etcd_free(&e->base);
            return SS_E_NOMEM;
        }
    }
    ss_etcd__batch_reset(&e->open);
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++) {
        e->flights[i].slot = i;
        ss_etcd__batch_reset(&e->flights[i].b);
    }
    e->due_hint_ms = UINT64_MAX;
    if (getrandom(&e->incarnation, sizeof e->incarnation, 0) != (ssize_t)sizeof e->incarnation)
        e->incarnation = (uint64_t)time(NULL);
    snprintf(e->claim_value, sizeof e->claim_value, "pid %ld, instance %016llx", (long)getpid(),
             (unsigned long long)e->incarnation);
    int rc = e->prefix && e->node_id ? ss_table_init(&e->table) : SS_E_NOMEM;
    if (rc != SS_OK) {
        free(e->prefix);
        free(e->node_id);
        free(e);
        return rc;
    }
    ss_grpc_options go = {.endpoints = o->endpoints, .ca_file = o->ca_file, .cert_file = o->cert_file,
                          .key_file = o->key_file, .connect_timeout_ms = e->call_timeout_ms,
                          .wake = ss_etcd__wake, .wake_ctx = e};
    if ((rc = ss_grpc_new(&go, &e->grpc, why, why_len)) != SS_OK) {
        ss_backend_etcd_free(&e->base);
        return rc;
    }
    *out = &e->base;
    return SS_OK;
}

void ss_backend_etcd_free(ss_backend *b)
{
    if (b == NULL)
        return;
    struct ss_backend_etcd *e = b->impl;
    if (e->grpc && e->claim == SS_CLAIM_HELD) {
        /* A clean stop gives the node id back at once. */
        ss_grpc_call c;
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_LEASE_REVOKE_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        if (ss_etcd_lease_id_pack(&c.request, e->lease_id) == SS_OK)
            ss_grpc_call_wait(e->grpc, &c);
        ss_grpc_call_clear(&c);
    }
    ss_grpc_free(e->grpc); /* no call runs past here */
    while (e->ops) {
        struct ss_etcd_op *op = e->ops;
        ss_etcd__unlink_op(e, op);
        ss_etcd__op_free(op);
    }
    while (e->first)
        ss_etcd__entry_free(e, e->first);
    ss_table_free(&e->table);
    ss_etcd__batch_free(&e->open);
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        ss_etcd__batch_free(&e->flights[i].b);
    ss_feed_free(&e->settled);
    for (size_t i = 0; i < SS_ETCD_SWEEP_BATCH; i++)
        ss_buf_free(&e->due[i].key);
    ss_etcd__watch_free(e);
    ss_feed_free(&e->base.feed);
    ss_buf_free(&e->scratch);
    ss_buf_free(&e->scratch2);
    ss_buf_free(&e->scan_reply);
    ss_buf_free(&e->scan_value);
    ss_buf_free(&e->page_after);
    ss_buf_free(&e->page_reply);
    ss_buf_free(&e->stub);
    ss_buf_free(&e->drops);
    free(e->prefix);
    free(e->node_id);
    free(e->username);
    if (e->password) /* not left in freed memory */
        explicit_bzero(e->password, strlen(e->password));
    free(e->password);
    free(e);
}
