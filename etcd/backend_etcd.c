/* backend_etcd.c - the state store on etcd (backend_etcd.h).
 *
 * The cache: one entry per key the engine asked for, in a hash table and
 * a list. An entry is being fetched, waiting to fetch again (the cluster
 * did not answer), failed for good (the cluster stayed unreachable past
 * unavailable_ms: its readers are answered "unavailable" until the batch
 * ends), or known: its record as read and the mod_revision it was read at
 * (0: absent). The open batch "touches" known entries as requests look at
 * them; a touched entry may hold the batch's change (put or delete), and
 * the batch's Txn is built from the touched entries alone.
 */
#include "backend_etcd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "../core/table.h"
#include "grpc.h"
#include "kv.h"

#define SS_ETCD_PREFIX_DEFAULT "statestore/"
#define SS_ETCD_MAX_REQUEST_DEFAULT ((size_t)3 << 19) /* etcd's 1.5 MiB */
/* Room in a request for what is not keys and values (framing, the
 * marker). */
#define SS_ETCD_REQUEST_SLACK ((size_t)16 << 10)
/* After a commit, a cache larger than this is emptied of clean entries. */
#define SS_ETCD_CACHE_ENTRIES 65536u
#define SS_ETCD_CACHE_BYTES ((uint64_t)64 << 20)
/* Due keys taken per look. */
#define SS_ETCD_SWEEP_BATCH 64
/* Pauses before trying a call again. */
#define SS_ETCD_RETRY_MS 100u
#define SS_ETCD_MARKER_RETRY_MS 1000u
/* gRPC's status for a call without a valid token. */
#define SS_ETCD_UNAUTHENTICATED 16

enum ss_entry_state { SS_ENTRY_FETCHING, SS_ENTRY_RETRY, SS_ENTRY_KNOWN, SS_ENTRY_FAILED };
enum ss_entry_change { SS_CHANGE_NONE, SS_CHANGE_PUT, SS_CHANGE_DEL };

struct ss_etcd_entry {
    ss_table_node node;
    struct ss_etcd_entry *prev, *next; /* every entry */
    enum ss_entry_state state;
    ss_buf key;
    /* as read */
    bool found;
    int64_t rev;
    ss_buf stored;
    uint64_t stored_expiry;
    /* the open batch */
    bool touched;
    enum ss_entry_change change;
    ss_buf next_rec;
    uint64_t next_expiry;
    /* fetching */
    struct ss_etcd_op *op;
    uint64_t first_try_ms, retry_at_ms;
    int fail_rc;
};

enum ss_op_kind { SS_OP_FETCH, SS_OP_TXN, SS_OP_FENCE, SS_OP_MARKER, SS_OP_SWEEP, SS_OP_GRANT, SS_OP_CLAIM,
                  SS_OP_KEEPALIVE, SS_OP_REVOKE, SS_OP_AUTH };

/* A call and what it is for. */
struct ss_etcd_op {
    ss_grpc_call call;
    enum ss_op_kind kind;
    struct ss_etcd_entry *entry; /* SS_OP_FETCH; NULL once the entry is gone */
    struct ss_etcd_op *prev, *next; /* calls under way */
};

/* An expiry index entry found due. */
struct ss_etcd_due {
    uint64_t deadline;
    ss_buf key;
};

enum ss_commit_state { SS_COMMIT_IDLE, SS_COMMIT_TXN, SS_COMMIT_RESOLVING, SS_COMMIT_DONE };
enum ss_claim_state { SS_CLAIM_NONE, SS_CLAIM_GRANTING, SS_CLAIM_CLAIMING, SS_CLAIM_HELD };

struct ss_backend_etcd {
    ss_backend base; /* first: the interface's impl points back here */
    ss_grpc *grpc;
    char *prefix, *node_id;
    char *username, *password; /* NULL: no authentication */
    bool auth_needed, auth_asked, auth_refused_logged;
    uint64_t auth_retry_ms;
    unsigned call_timeout_ms, unavailable_ms, max_txn_ops, sweep_interval_ms;
    size_t max_request_bytes;
    void (*log)(void *ctx, int level, const char *msg);
    void *log_ctx;

    ss_table table;
    struct ss_etcd_entry *first, *last;
    size_t entries;
    uint64_t cache_bytes;
    struct ss_etcd_op *ops; /* calls under way */

    /* the open batch */
    struct ss_etcd_entry **touched;
    size_t ntouched, touched_cap;
    size_t batch_bytes, batch_ops;
    ss_buf orphans; /* expiry index keys to delete: u32 length, bytes */
    size_t norphans;
    bool full;
    ss_feed pending; /* changes of the open batch (or of its commit) */

    /* the commit under way */
    enum ss_commit_state commit;
    bool commit_writes;
    int commit_rc;
    int64_t commit_revision;
    char txn_id[300];
    uint64_t resolve_at_ms;

    /* this broker's commit marker */
    bool marker_known, marker_asked;
    int64_t marker_rev;
    uint64_t marker_retry_ms;
    uint64_t incarnation, txn_seq;
    bool unreachable_logged;

    /* this broker's claim on its node id */
    enum ss_claim_state claim;
    int64_t lease_id;
    unsigned lease_ttl_s;
    uint64_t claim_retry_ms, keepalive_ms; /* monotonic */
    bool keepalive_asked, claim_refused_logged;
    char claim_value[64];

    /* the expiry sweep */
    struct ss_etcd_due due[SS_ETCD_SWEEP_BATCH];
    size_t due_len, due_pos;
    bool sweep_asked;
    uint64_t sweep_at_ms; /* wall clock: the next look, or a deadline this
                             broker wrote if that comes first */
    uint64_t due_hint_ms; /* wall clock: the earliest deadline this broker
                             wrote since the last look */
    uint64_t now_ms;      /* wall clock at the last poll */

    ss_buf scratch, scratch2;
    ss_backend_etcd_stats stats;
};

/* ---- small helpers ----------------------------------------------------- */

static uint64_t ss_etcd__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void ss_etcd__log(struct ss_backend_etcd *e, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ss_etcd__log(struct ss_backend_etcd *e, int level, const char *fmt, ...)
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
static int ss_etcd__key(struct ss_backend_etcd *e, ss_buf *out, char part, uint64_t deadline,
                        ss_bytes key)
{
    ss_buf_clear(out);
    char head[24];
    int n = part == 'x' ? snprintf(head, sizeof head, "x/%016llx/", (unsigned long long)deadline)
                        : snprintf(head, sizeof head, "%c/", part);
    int rc = ss_buf_append_str(out, e->prefix);
    if (rc == SS_OK)
        rc = ss_buf_append(out, head, (size_t)n);
    if (rc == SS_OK && key.len)
        rc = ss_buf_append(out, key.data, key.len);
    return rc;
}

static ss_bytes ss_etcd__bytes(const ss_buf *b)
{
    ss_bytes v = {b->data, b->len};
    return v;
}

/* ---- calls ------------------------------------------------------------- */

static struct ss_etcd_op *ss_etcd__op_new(struct ss_backend_etcd *e, enum ss_op_kind kind,
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

static void ss_etcd__op_free(struct ss_etcd_op *op)
{
    ss_grpc_call_clear(&op->call);
    free(op);
}

static void ss_etcd__submit(struct ss_backend_etcd *e, struct ss_etcd_op *op)
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
static bool ss_etcd__refused(const ss_grpc_call *c)
{
    if (c->rc != SS_E_SERVER)
        return false;
    switch (c->status) {
    case 3:  /* INVALID_ARGUMENT: too many operations, too large, duplicate key */
    case 7:  /* PERMISSION_DENIED */
    case 8:  /* RESOURCE_EXHAUSTED: the database is full (quota) */
    case 9:  /* FAILED_PRECONDITION */
    case 11: /* OUT_OF_RANGE */
        return true;
    default:
        return false;
    }
}

static const char *ss_etcd__why(const ss_grpc_call *c)
{
    return c->message[0] ? c->message : ss_strerror(c->rc);
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
    if (x == NULL || ss_buf_append(&x->key, key.data, key.len ? key.len : 0) != SS_OK) {
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

/* A fetch came back. */
static void ss_etcd__fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_entry *x = op->entry;
    if (x == NULL)
        return;
    x->op = NULL;
    uint64_t now = ss_etcd__mono_ms();
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
            x->state = SS_ENTRY_FAILED;
            x->fail_rc = rc;
            return;
        }
        x->found = kv.found;
        x->rev = kv.found ? kv.mod_revision : 0;
        x->stored_expiry = kv.found ? rec.expiry_ms : 0;
        x->state = SS_ENTRY_KNOWN;
        return;
    }
    if (now - x->first_try_ms >= e->unavailable_ms) {
        ss_etcd__log(e, SS_ETCD_LOG_WARNING, "etcd did not answer a read for %u ms (%s): the "
                     "requests that wait for it are answered \"the store is unavailable\"",
                     e->unavailable_ms, ss_etcd__why(&op->call));
        x->state = SS_ENTRY_FAILED;
        x->fail_rc = SS_E_UNAVAILABLE;
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
    /* Per key: a compare; a put or delete, and two index changes. */
    size_t ops = 3, bytes = 2 * x->key.len + 64;
    if (e->ntouched > 0 && (e->batch_ops + ops + 2 > e->max_txn_ops ||
                            e->batch_bytes + bytes + SS_ETCD_REQUEST_SLACK > e->max_request_bytes)) {
        e->full = true;
        return false;
    }
    if (e->ntouched == e->touched_cap) {
        size_t cap = e->touched_cap ? e->touched_cap * 2 : 64;
        struct ss_etcd_entry **t = realloc(e->touched, cap * sizeof *t);
        if (t == NULL)
            return false;
        e->touched = t;
        e->touched_cap = cap;
    }
    e->touched[e->ntouched++] = x;
    e->batch_ops += ops;
    e->batch_bytes += bytes;
    x->touched = true;
    return true;
}

/* The engine's read, and the sweep's. */
static int ss_etcd__get(struct ss_backend_etcd *e, ss_bytes key, ss_record *rec, ss_revision *rev,
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
    if (!ss_etcd__touch(e, x))
        return SS_E_PENDING; /* the next batch */
    if (entry)
        *entry = x;
    *rev = (ss_revision)x->rev;
    const ss_buf *cur = x->change == SS_CHANGE_NONE ? (x->found ? &x->stored : NULL)
                        : x->change == SS_CHANGE_PUT ? &x->next_rec
                                                     : NULL;
    if (cur == NULL)
        return SS_E_NOTFOUND;
    ss_bytes tail;
    return ss_record_decode(cur->data, cur->len, rec, &tail) == SS_OK ? SS_OK : SS_E_CORRUPT;
}

/* ---- the storage interface --------------------------------------------- */

static int ss_etcd__read(void *impl, ss_bytes key, ss_record *rec, ss_revision *rev)
{
    return ss_etcd__get(impl, key, rec, rev, NULL);
}

static struct ss_etcd_entry *ss_etcd__touched(struct ss_backend_etcd *e, ss_bytes key)
{
    struct ss_etcd_entry *x = ss_etcd__find(e, key, NULL);
    return x && x->touched ? x : NULL;
}

static void ss_etcd__record_change(struct ss_backend_etcd *e, const ss_change *c)
{
    if (ss_backend_wants(&e->base, c->key))
        (void)ss_feed_append(&e->pending, c);
}

static int ss_etcd__put(void *impl, ss_bytes key, const ss_record *rec, ss_revision decided_on)
{
    struct ss_backend_etcd *e = impl;
    struct ss_etcd_entry *x = ss_etcd__touched(e, key);
    /* The engine reads a key before writing it: the entry is the batch's,
     * and the Txn compares the revision it was decided on. */
    if (x == NULL || (ss_revision)x->rev != decided_on)
        return SS_E_CONFLICT;
    size_t size = ss_record_size(rec, 0, false);
    if (size + 2 * key.len + SS_ETCD_REQUEST_SLACK > e->max_request_bytes)
        return SS_E_QUOTA; /* no Txn could carry it */
    if (e->ntouched > 1 && e->batch_bytes + size + SS_ETCD_REQUEST_SLACK > e->max_request_bytes) {
        e->full = true;
        return SS_E_CONFLICT; /* the next batch */
    }
    ss_buf_clear(&x->next_rec);
    int rc = ss_buf_reserve(&x->next_rec, size);
    if (rc != SS_OK)
        return rc;
    ss_record_encode(x->next_rec.data, rec, NULL, 0, false);
    x->next_rec.len = size;
    x->change = SS_CHANGE_PUT;
    x->next_expiry = rec->expiry_ms;
    e->batch_bytes += size;
    ss_change c = {.type = SS_CHANGE_SET, .key = key, .value = rec->value, .version = rec->version};
    ss_etcd__record_change(e, &c);
    return SS_OK;
}

static int ss_etcd__del(void *impl, const ss_change *change, ss_revision decided_on)
{
    struct ss_backend_etcd *e = impl;
    struct ss_etcd_entry *x = ss_etcd__touched(e, change->key);
    if (x == NULL || (ss_revision)x->rev != decided_on)
        return SS_E_CONFLICT;
    if (x->change == SS_CHANGE_DEL || (x->change == SS_CHANGE_NONE && !x->found))
        return SS_E_NOTFOUND;
    x->change = SS_CHANGE_DEL;
    ss_etcd__record_change(e, change);
    return SS_OK;
}

static uint64_t ss_etcd__next_expiry(void *impl)
{
    struct ss_backend_etcd *e = impl;
    return e->due_pos < e->due_len ? e->due[e->due_pos].deadline : UINT64_MAX;
}

/* An index entry that no longer matches its record: deleted with the
 * batch (the record's compare keeps that true). */
static void ss_etcd__orphan(struct ss_backend_etcd *e, uint64_t deadline, ss_bytes key)
{
    if (e->batch_ops + 1 > e->max_txn_ops || ss_etcd__key(e, &e->scratch, 'x', deadline, key) != SS_OK)
        return; /* found again by a later look */
    uint32_t n = (uint32_t)e->scratch.len;
    if (ss_buf_append(&e->orphans, &n, sizeof n) != SS_OK ||
        ss_buf_append(&e->orphans, e->scratch.data, n) != SS_OK)
        return;
    e->norphans++;
    e->batch_ops++;
}

static int ss_etcd__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    struct ss_backend_etcd *e = impl;
    while (e->due_pos < e->due_len) {
        struct ss_etcd_due *d = &e->due[e->due_pos];
        if (d->deadline > now_ms)
            return SS_E_NOTFOUND;
        ss_record rec;
        ss_revision rev;
        struct ss_etcd_entry *x = NULL;
        ss_bytes k = ss_etcd__bytes(&d->key);
        int rc = ss_etcd__get(e, k, &rec, &rev, &x);
        if (rc == SS_E_PENDING)
            return SS_E_NOTFOUND; /* fetching it, or the batch is full */
        e->due_pos++;
        if (rc != SS_OK && rc != SS_E_NOTFOUND)
            continue; /* found again by a later look */
        if (rc == SS_E_NOTFOUND || rec.expiry_ms != d->deadline) {
            /* Renewed or deleted since: the index entry is stale, unless
             * this batch's own change of the key writes or deletes it. */
            bool own = (x->found && x->stored_expiry == d->deadline) ||
                       (x->change == SS_CHANGE_PUT && x->next_expiry == d->deadline);
            if (!own)
                ss_etcd__orphan(e, d->deadline, k);
            continue;
        }
        ss_change gone = {.type = SS_CHANGE_DELETE, .key = k, .version = rec.version, .expired = true};
        if ((rc = ss_etcd__del(e, &gone, rev)) != SS_OK)
            return rc;
        ss_buf_clear(key);
        if ((rc = ss_buf_append(key, k.data, k.len)) != SS_OK)
            return rc;
        *version = rec.version;
        return SS_OK;
    }
    return SS_E_NOTFOUND;
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

/* The open batch ends: its entries are no longer touched; kept_changes
 * tells whether their changes were committed (and now are what etcd
 * holds, at revision rev) or not (then the entries leave the cache: what
 * they hold may be stale). */
static void ss_etcd__end_batch(struct ss_backend_etcd *e, bool committed, int64_t rev)
{
    for (size_t i = 0; i < e->ntouched; i++) {
        struct ss_etcd_entry *x = e->touched[i];
        x->touched = false;
        if (!committed) {
            ss_etcd__entry_free(e, x);
            continue;
        }
        if (x->change == SS_CHANGE_PUT) {
            e->cache_bytes -= x->stored.cap;
            ss_buf spare = x->stored;
            x->stored = x->next_rec;
            x->next_rec = spare;
            e->cache_bytes += x->stored.cap;
            x->found = true;
            x->rev = rev;
            x->stored_expiry = x->next_expiry;
            if (x->next_expiry && x->next_expiry < e->due_hint_ms)
                e->due_hint_ms = x->next_expiry; /* its expiry is prompt */
        } else if (x->change == SS_CHANGE_DEL) {
            x->found = false;
            x->rev = 0;
            x->stored_expiry = 0;
        }
        ss_buf_clear(&x->next_rec);
        x->change = SS_CHANGE_NONE;
    }
    e->ntouched = 0;
    e->batch_ops = 1; /* the marker's put */
    e->batch_bytes = 0;
    ss_buf_clear(&e->orphans);
    e->norphans = 0;
    e->full = false;
    /* Entries that failed are fetched again by their next reader; a cache
     * grown too large is emptied of what the next batch does not need. */
    bool shrink = e->entries > SS_ETCD_CACHE_ENTRIES || e->cache_bytes > SS_ETCD_CACHE_BYTES;
    for (struct ss_etcd_entry *x = e->first, *next; x; x = next) {
        next = x->next;
        if (x->state == SS_ENTRY_FAILED || (shrink && x->state == SS_ENTRY_KNOWN))
            ss_etcd__entry_free(e, x);
    }
}

static void ss_etcd__abort(void *impl)
{
    struct ss_backend_etcd *e = impl;
    ss_etcd__end_batch(e, false, 0);
    ss_feed_clear(&e->pending);
}

static void ss_etcd__append(void *ctx, const ss_change *c)
{
    (void)ss_feed_append(ctx, c);
}

static void ss_etcd__settled(void *impl, int rc)
{
    struct ss_backend_etcd *e = impl;
    if (rc == SS_OK)
        ss_feed_each(&e->pending, ss_etcd__append, &e->base.feed);
    ss_feed_clear(&e->pending);
}

/* ---- commits ----------------------------------------------------------- */

static bool ss_etcd__writes(const struct ss_backend_etcd *e)
{
    if (e->norphans)
        return true;
    for (size_t i = 0; i < e->ntouched; i++)
        if (e->touched[i]->change != SS_CHANGE_NONE)
            return true;
    return false;
}

/* Is the index key (deadline, key) written by the change of a touched
 * entry? (A Txn may not name a key twice.) */
static bool ss_etcd__index_written(struct ss_backend_etcd *e, ss_bytes index_key)
{
    size_t plen = strlen(e->prefix) + 2 + 16 + 1;
    if (index_key.len < plen)
        return false;
    ss_bytes key = {index_key.data + plen, index_key.len - plen};
    struct ss_etcd_entry *x = ss_etcd__touched(e, key);
    return x && x->change != SS_CHANGE_NONE;
}

static int ss_etcd__build_entry(struct ss_backend_etcd *e, ss_etcd_txn *t, struct ss_etcd_entry *x)
{
    ss_bytes key = ss_etcd__bytes(&x->key);
    int rc = ss_etcd__key(e, &e->scratch, 'k', 0, key);
    if (rc == SS_OK)
        rc = ss_etcd_txn_expect(t, ss_etcd__bytes(&e->scratch), x->found ? x->rev : 0);
    if (rc != SS_OK || x->change == SS_CHANGE_NONE)
        return rc;
    uint64_t old = x->found ? x->stored_expiry : 0;
    uint64_t now = x->change == SS_CHANGE_PUT ? x->next_expiry : 0;
    rc = x->change == SS_CHANGE_PUT ? ss_etcd_txn_put(t, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(&x->next_rec))
                                    : ss_etcd_txn_delete(t, ss_etcd__bytes(&e->scratch));
    if (rc == SS_OK && old && old != now && (rc = ss_etcd__key(e, &e->scratch, 'x', old, key)) == SS_OK)
        rc = ss_etcd_txn_delete(t, ss_etcd__bytes(&e->scratch));
    ss_bytes empty = {NULL, 0};
    if (rc == SS_OK && now && now != old && (rc = ss_etcd__key(e, &e->scratch, 'x', now, key)) == SS_OK)
        rc = ss_etcd_txn_put(t, ss_etcd__bytes(&e->scratch), empty);
    return rc;
}

/* The open batch as a Txn, in op's request. */
static int ss_etcd__build(struct ss_backend_etcd *e, struct ss_etcd_op *op, bool writes)
{
    ss_etcd_txn t = {0};
    int rc = SS_OK;
    for (size_t i = 0; rc == SS_OK && i < e->ntouched; i++)
        rc = ss_etcd__build_entry(e, &t, e->touched[i]);
    for (size_t off = 0, i = 0; rc == SS_OK && i < e->norphans; i++) {
        uint32_t n;
        memcpy(&n, e->orphans.data + off, sizeof n);
        ss_bytes k = {e->orphans.data + off + sizeof n, n};
        off += sizeof n + n;
        bool twice = false;
        for (size_t j = 0, off2 = 0; j < i; j++) { /* the same stale entry found twice */
            uint32_t n2;
            memcpy(&n2, e->orphans.data + off2, sizeof n2);
            twice = twice || (n2 == n && memcmp(e->orphans.data + off2 + sizeof n2, k.data, n) == 0);
            off2 += sizeof n2 + n2;
        }
        if (!twice && !ss_etcd__index_written(e, k))
            rc = ss_etcd_txn_delete(&t, k);
    }
    if (rc == SS_OK && !writes) {
        /* Compares alone would be answered from the member's own state,
         * which may lag: the marker's Range makes the read linearizable. */
        ss_bytes none = {NULL, 0};
        if ((rc = ss_etcd__key(e, &e->scratch, 'n', 0, none)) == SS_OK &&
            (rc = ss_buf_append_str(&e->scratch, e->node_id)) == SS_OK)
            rc = ss_etcd_txn_get(&t, ss_etcd__bytes(&e->scratch));
    }
    if (rc == SS_OK && writes) {
        snprintf(e->txn_id, sizeof e->txn_id, "%s %016llx %llu", e->node_id,
                 (unsigned long long)e->incarnation, (unsigned long long)++e->txn_seq);
        ss_bytes id = {(const uint8_t *)e->txn_id, strlen(e->txn_id)};
        ss_bytes none = {NULL, 0};
        if ((rc = ss_etcd__key(e, &e->scratch, 'n', 0, none)) == SS_OK &&
            ss_buf_append_str(&e->scratch, e->node_id) == SS_OK &&
            (rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), e->marker_rev)) == SS_OK &&
            (rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), id)) == SS_OK)
            rc = ss_etcd_txn_on_failure_get(&t, ss_etcd__bytes(&e->scratch));
    }
    if (rc == SS_OK)
        rc = ss_etcd_txn_pack(&t, &op->call.request);
    ss_etcd_txn_free(&t);
    return rc;
}

static void ss_etcd__ask_marker(struct ss_backend_etcd *e)
{
    uint64_t now = ss_etcd__mono_ms();
    if (e->marker_known || e->marker_asked || now < e->marker_retry_ms)
        return;
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_MARKER, SS_ETCD_RANGE_METHOD);
    ss_bytes none = {NULL, 0};
    if (op == NULL || ss_etcd__key(e, &e->scratch, 'n', 0, none) != SS_OK ||
        ss_buf_append_str(&e->scratch, e->node_id) != SS_OK ||
        ss_etcd_range_pack(&op->call.request, ss_etcd__bytes(&e->scratch), false) != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return;
    }
    e->marker_asked = true;
    ss_etcd__submit(e, op);
}

int ss_backend_etcd_commit_start(ss_backend *b, uint64_t now_ms)
{
    (void)now_ms;
    struct ss_backend_etcd *e = b->impl;
    if (e->commit != SS_COMMIT_IDLE)
        return SS_E_BUSY;
    if (e->ntouched == 0 && e->norphans == 0) {
        ss_etcd__end_batch(e, true, 0);
        return SS_E_NOTFOUND;
    }
    bool writes = ss_etcd__writes(e);
    if (writes && !e->marker_known) {
        ss_etcd__ask_marker(e);
        return SS_E_PENDING;
    }
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_TXN, SS_ETCD_TXN_METHOD);
    int rc = op ? ss_etcd__build(e, op, writes) : SS_E_NOMEM;
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        ss_etcd__abort(e);
        return rc;
    }
    e->commit = SS_COMMIT_TXN;
    e->commit_writes = writes;
    e->stats.txns++;
    ss_etcd__submit(e, op);
    return SS_OK;
}

/* The commit's outcome is known. */
static void ss_etcd__commit_outcome(struct ss_backend_etcd *e, int rc, int64_t revision)
{
    e->commit = SS_COMMIT_DONE;
    e->commit_rc = rc;
    e->commit_revision = revision;
    if (rc == SS_OK && e->commit_writes)
        e->marker_rev = revision;
    if (rc == SS_E_CONFLICT)
        e->stats.conflicts++;
}

/* The marker as a failed Txn's failure branch read it. */
static void ss_etcd__marker_seen(struct ss_backend_etcd *e, const ss_etcd_kv *kv)
{
    e->marker_rev = kv->found ? kv->mod_revision : 0;
}

static void ss_etcd__send_fence(struct ss_backend_etcd *e)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_FENCE, SS_ETCD_TXN_METHOD);
    ss_etcd_txn t = {0};
    ss_bytes none = {NULL, 0};
    char fence[sizeof e->txn_id + 8];
    snprintf(fence, sizeof fence, "%s fence", e->txn_id);
    ss_bytes id = {(const uint8_t *)fence, strlen(fence)};
    int rc = op ? ss_etcd__key(e, &e->scratch, 'n', 0, none) : SS_E_NOMEM;
    if (rc == SS_OK && (rc = ss_buf_append_str(&e->scratch, e->node_id)) == SS_OK &&
        (rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), e->marker_rev)) == SS_OK &&
        (rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), id)) == SS_OK &&
        (rc = ss_etcd_txn_on_failure_get(&t, ss_etcd__bytes(&e->scratch))) == SS_OK)
        rc = ss_etcd_txn_pack(&t, &op->call.request);
    ss_etcd_txn_free(&t);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        e->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS; /* out of memory: later */
        return;
    }
    e->resolve_at_ms = 0;
    ss_etcd__submit(e, op);
}

static void ss_etcd__txn_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc == SS_OK && ss_etcd_txn_unpack(&c->reply, &r, &kv) == SS_OK) {
        int64_t rev = r.revision;
        bool ok = r.succeeded;
        ss_etcd_reply_free(&r);
        if (!ok && e->commit_writes)
            ss_etcd__marker_seen(e, &kv);
        ss_etcd__commit_outcome(e, ok ? SS_OK : SS_E_CONFLICT, rev);
        return;
    }
    if (c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED) {
        /* Refused before it ran (the token expired): log in again and
         * run the batch again. */
        ss_etcd__commit_outcome(e, SS_E_CONFLICT, 0);
        return;
    }
    if (ss_etcd__refused(c)) {
        ss_etcd__log(e, SS_ETCD_LOG_ERR, "etcd refused a commit: %s", ss_etcd__why(c));
        ss_etcd__commit_outcome(e, c->status == 8 ? SS_E_QUOTA : SS_E_IO, 0);
        return;
    }
    if (!e->commit_writes) { /* only compares: running again is harmless */
        ss_etcd__commit_outcome(e, SS_E_CONFLICT, 0);
        return;
    }
    e->stats.unknown_outcomes++;
    ss_etcd__log(e, SS_ETCD_LOG_WARNING, "the outcome of a commit is unknown (%s): settling it "
                 "through the commit marker before anything is answered", ss_etcd__why(c));
    e->commit = SS_COMMIT_RESOLVING;
    ss_etcd__send_fence(e);
}

static void ss_etcd__fence_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    ss_grpc_call *c = &op->call;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc != SS_OK || ss_etcd_txn_unpack(&c->reply, &r, &kv) != SS_OK) {
        e->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
        return;
    }
    if (r.succeeded) {
        /* The marker moved on from where the commit expected it: that
         * commit can no longer succeed, and did not. */
        e->marker_rev = r.revision;
        ss_etcd_reply_free(&r);
        ss_etcd__log(e, SS_ETCD_LOG_NOTICE, "the commit of unknown outcome did not happen: its "
                     "requests run again");
        e->commit_writes = false;
        ss_etcd__commit_outcome(e, SS_E_CONFLICT, 0);
        return;
    }
    size_t idlen = strlen(e->txn_id);
    bool ours = kv.found && kv.value.len == idlen && memcmp(kv.value.data, e->txn_id, idlen) == 0;
    int64_t rev = kv.found ? kv.mod_revision : 0;
    ss_etcd_reply_free(&r);
    if (ours) {
        ss_etcd__log(e, SS_ETCD_LOG_NOTICE, "the commit of unknown outcome happened");
        ss_etcd__commit_outcome(e, SS_OK, rev);
        return;
    }
    /* Someone else wrote this broker's marker: another broker with the
     * same node id. */
    ss_etcd__log(e, SS_ETCD_LOG_ERR, "the commit marker of node id %s was changed by another "
                 "process: two brokers must not share a node id", e->node_id);
    e->marker_rev = rev;
    e->resolve_at_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
}

bool ss_backend_etcd_commit_done(ss_backend *b, int *rc)
{
    struct ss_backend_etcd *e = b->impl;
    if (e->commit != SS_COMMIT_DONE)
        return false;
    *rc = e->commit_rc;
    e->commit = SS_COMMIT_IDLE;
    if (*rc == SS_OK) {
        ss_etcd__end_batch(e, true, e->commit_revision);
    } else {
        /* Nothing of it is in etcd: its entries leave the cache. */
        ss_etcd__end_batch(e, false, 0);
        if (*rc == SS_E_CONFLICT)
            ss_feed_clear(&e->pending);
    }
    return true;
}

bool ss_backend_etcd_committing(const ss_backend *b)
{
    const struct ss_backend_etcd *e = b->impl;
    return e->commit != SS_COMMIT_IDLE;
}

bool ss_backend_etcd_full(const ss_backend *b)
{
    const struct ss_backend_etcd *e = b->impl;
    return e->full;
}

/* For owners without a pipeline: commit and wait (bounded). */
static int ss_etcd__commit(void *impl, uint64_t now_ms)
{
    struct ss_backend_etcd *e = impl;
    uint64_t end = ss_etcd__mono_ms() + 4u * e->call_timeout_ms + e->unavailable_ms;
    int rc = SS_E_PENDING;
    while (ss_etcd__mono_ms() < end) {
        ss_backend_etcd_poll(&e->base, now_ms);
        if (e->commit == SS_COMMIT_IDLE) {
            rc = ss_backend_etcd_commit_start(&e->base, now_ms);
            if (rc == SS_E_NOTFOUND)
                return SS_OK;
            if (rc != SS_OK && rc != SS_E_PENDING)
                return rc;
        }
        if (ss_backend_etcd_commit_done(&e->base, &rc)) {
            ss_etcd__settled(e, rc);
            return rc == SS_E_CONFLICT ? SS_E_IO : rc;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ss_etcd__log(e, SS_ETCD_LOG_ERR, "a commit did not end in time: its outcome is unknown");
    return SS_E_UNAVAILABLE;
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
};

/* ---- the expiry sweep -------------------------------------------------- */

static void ss_etcd__ask_due(struct ss_backend_etcd *e, uint64_t now_ms)
{
    if (e->sweep_asked || e->due_pos < e->due_len || (now_ms < e->sweep_at_ms && now_ms < e->due_hint_ms))
        return;
    if (e->due_hint_ms <= now_ms)
        e->due_hint_ms = UINT64_MAX; /* this look covers it */
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_SWEEP, SS_ETCD_RANGE_METHOD);
    ss_bytes none = {NULL, 0};
    int rc = op ? ss_etcd__key(e, &e->scratch, 'x', 0, none) : SS_E_NOMEM;
    if (rc == SS_OK) {
        e->scratch.len -= 17; /* "x/" alone: the 0 deadline goes */
        rc = ss_etcd__key(e, &e->scratch2, 'x', now_ms + 1, none);
    }
    /* Serializable: a member that lags only finds keys late; each key is
     * read linearizably before it is deleted. */
    if (rc == SS_OK)
        rc = ss_etcd_range_keys_pack(&op->call.request, ss_etcd__bytes(&e->scratch),
                                     ss_etcd__bytes(&e->scratch2), SS_ETCD_SWEEP_BATCH, true);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return;
    }
    e->sweep_asked = true;
    ss_etcd__submit(e, op);
}

static void ss_etcd__due_found(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->sweep_asked = false;
    e->sweep_at_ms = e->now_ms + e->sweep_interval_ms;
    ss_etcd_reply r;
    size_t n;
    if (op->call.rc != SS_OK || ss_etcd_range_unpack_all(&op->call.reply, &r, &n) != SS_OK)
        return;
    size_t plen = strlen(e->prefix) + 2;
    e->due_len = e->due_pos = 0;
    for (size_t i = 0; i < n && e->due_len < SS_ETCD_SWEEP_BATCH; i++) {
        ss_etcd_kv kv;
        ss_bytes k;
        ss_etcd_range_kv(&r, i, &kv, &k);
        if (k.len < plen + 17 || k.data[plen + 16] != '/')
            continue;
        char hex[17];
        memcpy(hex, k.data + plen, 16);
        hex[16] = '\0';
        char *end;
        uint64_t deadline = strtoull(hex, &end, 16);
        if (*end != '\0')
            continue;
        struct ss_etcd_due *d = &e->due[e->due_len];
        ss_buf_clear(&d->key);
        if (ss_buf_append(&d->key, k.data + plen + 17, k.len - plen - 17) != SS_OK)
            break;
        d->deadline = deadline;
        e->due_len++;
    }
    if (n == SS_ETCD_SWEEP_BATCH)
        e->sweep_at_ms = 0; /* more are due: look again once these are done */
    ss_etcd_reply_free(&r);
}

/* ---- the claim on the node id ------------------------------------------ */

/* scratch = prefix "l/" node id */
static int ss_etcd__claim_key(struct ss_backend_etcd *e)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__key(e, &e->scratch, 'l', 0, none);
    return rc == SS_OK ? ss_buf_append_str(&e->scratch, e->node_id) : rc;
}

/* The claim's Txn for lease id into out: put l/<node id> on the lease if
 * nobody holds it, else read who does. */
static int ss_etcd__claim_pack(struct ss_backend_etcd *e, int64_t lease, ss_buf *out)
{
    ss_etcd_txn t = {0};
    ss_bytes value = {(const uint8_t *)e->claim_value, strlen(e->claim_value)};
    int rc = ss_etcd__claim_key(e);
    if (rc == SS_OK && (rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), 0)) == SS_OK &&
        (rc = ss_etcd_txn_put_leased(&t, ss_etcd__bytes(&e->scratch), value, lease)) == SS_OK &&
        (rc = ss_etcd_txn_on_failure_get(&t, ss_etcd__bytes(&e->scratch))) == SS_OK)
        rc = ss_etcd_txn_pack(&t, out);
    ss_etcd_txn_free(&t);
    return rc;
}

/* A claim's Txn came back: 0 (held), SS_E_BUSY (*holder: the claim of
 * the broker that holds it), or the call's failure. */
static int ss_etcd__claim_result(const ss_grpc_call *c, char *holder, size_t n)
{
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc != SS_OK)
        return c->rc;
    if (ss_etcd_txn_unpack(&c->reply, &r, &kv) != SS_OK)
        return SS_E_PROTOCOL;
    int rc = r.succeeded ? SS_OK : SS_E_BUSY;
    if (!r.succeeded)
        snprintf(holder, n, "%.*s", kv.found ? (int)kv.value.len : 0, kv.found ? (const char *)kv.value.data : "");
    ss_etcd_reply_free(&r);
    return rc;
}

static void ss_etcd__send(struct ss_backend_etcd *e, enum ss_op_kind kind, const char *method,
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

static int ss_etcd__pack_grant(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd_lease_grant_pack(out, e->lease_ttl_s);
}

static int ss_etcd__pack_claim(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd__claim_pack(e, e->lease_id, out);
}

static int ss_etcd__pack_lease(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd_lease_id_pack(out, e->lease_id);
}

int ss_backend_etcd_claim(ss_backend *b, unsigned wait_ms, char *why, size_t why_len)
{
    struct ss_backend_etcd *e = b->impl;
    uint64_t end = ss_etcd__mono_ms() + wait_ms;
    for (;;) {
        ss_grpc_call c;
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_LEASE_GRANT_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        int64_t id = 0, ttl = 0;
        int rc = ss_etcd_lease_grant_pack(&c.request, e->lease_ttl_s);
        if (rc == SS_OK && (rc = ss_grpc_call_wait(e->grpc, &c)) == SS_OK)
            rc = ss_etcd_lease_grant_unpack(&c.reply, &id, &ttl);
        if (rc != SS_OK)
            snprintf(why, why_len, "%s", ss_etcd__why(&c));
        ss_grpc_call_clear(&c);
        if (rc != SS_OK)
            return SS_E_UNAVAILABLE;
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_TXN_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        char holder[64] = "";
        if ((rc = ss_etcd__claim_pack(e, id, &c.request)) == SS_OK) {
            ss_grpc_call_wait(e->grpc, &c);
            rc = ss_etcd__claim_result(&c, holder, sizeof holder);
        }
        if (rc != SS_OK && rc != SS_E_BUSY)
            snprintf(why, why_len, "%s", ss_etcd__why(&c));
        ss_grpc_call_clear(&c);
        if (rc == SS_OK) {
            e->lease_id = id;
            e->claim = SS_CLAIM_HELD;
            e->keepalive_ms = ss_etcd__mono_ms() + (uint64_t)ttl * 1000u / 3u;
            return SS_OK;
        }
        /* The lease just granted is not needed: give it back. */
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_LEASE_REVOKE_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        if (ss_etcd_lease_id_pack(&c.request, id) == SS_OK)
            ss_grpc_call_wait(e->grpc, &c);
        ss_grpc_call_clear(&c);
        if (rc != SS_E_BUSY)
            return SS_E_UNAVAILABLE;
        if (ss_etcd__mono_ms() >= end) {
            snprintf(why, why_len, "node id %s is claimed by another live broker (%s) on this etcd prefix; "
                     "give each broker its own plugin_opt_node_id", e->node_id, holder);
            return SS_E_BUSY;
        }
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* From poll: claim when not held, renew when held. */
static void ss_etcd__claim_step(struct ss_backend_etcd *e)
{
    uint64_t now = ss_etcd__mono_ms();
    if (e->claim == SS_CLAIM_NONE && e->marker_known && now >= e->claim_retry_ms) {
        e->claim = SS_CLAIM_GRANTING;
        ss_etcd__send(e, SS_OP_GRANT, SS_ETCD_LEASE_GRANT_METHOD, ss_etcd__pack_grant);
    } else if (e->claim == SS_CLAIM_HELD && !e->keepalive_asked && now >= e->keepalive_ms) {
        e->keepalive_asked = true;
        ss_etcd__send(e, SS_OP_KEEPALIVE, SS_ETCD_LEASE_KEEPALIVE_METHOD, ss_etcd__pack_lease);
    }
}

static void ss_etcd__claim_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    uint64_t now = ss_etcd__mono_ms();
    const ss_grpc_call *c = &op->call;
    int64_t ttl = 0;
    switch (op->kind) {
    case SS_OP_GRANT:
        if (c->rc == SS_OK && ss_etcd_lease_grant_unpack(&c->reply, &e->lease_id, &ttl) == SS_OK) {
            e->claim = SS_CLAIM_CLAIMING;
            ss_etcd__send(e, SS_OP_CLAIM, SS_ETCD_TXN_METHOD, ss_etcd__pack_claim);
        } else {
            e->claim = SS_CLAIM_NONE;
            e->claim_retry_ms = now + SS_ETCD_MARKER_RETRY_MS;
        }
        break;
    case SS_OP_CLAIM: {
        char holder[64] = "";
        int rc = ss_etcd__claim_result(c, holder, sizeof holder);
        if (rc == SS_OK) {
            e->claim = SS_CLAIM_HELD;
            e->keepalive_ms = now + e->lease_ttl_s * 1000u / 3u;
            if (e->claim_refused_logged)
                ss_etcd__log(e, SS_ETCD_LOG_NOTICE, "node id %s is this broker's again", e->node_id);
            e->claim_refused_logged = false;
            break;
        }
        if (rc == SS_E_BUSY && !e->claim_refused_logged) {
            ss_etcd__log(e, SS_ETCD_LOG_ERR, "node id %s is claimed by another live broker (%s): two brokers "
                         "must not share a node id (plugin_opt_node_id)", e->node_id, holder);
            e->claim_refused_logged = true;
        }
        ss_etcd__send(e, SS_OP_REVOKE, SS_ETCD_LEASE_REVOKE_METHOD, ss_etcd__pack_lease);
        e->claim = SS_CLAIM_NONE;
        e->claim_retry_ms = now + SS_ETCD_MARKER_RETRY_MS;
        break;
    }
    case SS_OP_KEEPALIVE:
        e->keepalive_asked = false;
        if (c->rc != SS_OK || ss_etcd_lease_keepalive_unpack(&c->reply, &ttl) != SS_OK) {
            e->keepalive_ms = now + SS_ETCD_RETRY_MS * 5; /* soon, within the lease */
        } else if (ttl > 0) {
            e->keepalive_ms = now + (uint64_t)ttl * 1000u / 3u;
        } else {
            ss_etcd__log(e, SS_ETCD_LOG_WARNING, "the claim on node id %s lapsed (etcd was out of reach "
                         "for longer than %u s): claiming it again", e->node_id, e->lease_ttl_s);
            e->claim = SS_CLAIM_NONE;
            e->claim_retry_ms = 0;
        }
        break;
    default:
        break; /* a revoke: nothing waits for it */
    }
}

/* ---- authentication ---------------------------------------------------- */

static int ss_etcd__pack_auth(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd_authenticate_pack(out, e->username, e->password);
}

/* A login's reply: the token for every later call. */
static int ss_etcd__logged_in(struct ss_backend_etcd *e, const ss_grpc_call *c)
{
    char token[256];
    if (c->rc != SS_OK)
        return c->rc;
    int rc = ss_etcd_authenticate_unpack(&c->reply, token, sizeof token);
    return rc == SS_OK ? ss_grpc_set_token(e->grpc, token) : rc;
}

static void ss_etcd__auth_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->auth_asked = false;
    if (ss_etcd__logged_in(e, &op->call) == SS_OK) {
        e->auth_needed = false;
        e->auth_refused_logged = false;
        return;
    }
    if (!e->auth_refused_logged)
        ss_etcd__log(e, SS_ETCD_LOG_ERR, "etcd did not accept user %s: %s; trying again every %u ms",
                     e->username, ss_etcd__why(&op->call), SS_ETCD_MARKER_RETRY_MS);
    e->auth_refused_logged = true;
    e->auth_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
}

static void ss_etcd__auth_step(struct ss_backend_etcd *e)
{
    if (e->username && e->auth_needed && !e->auth_asked && ss_etcd__mono_ms() >= e->auth_retry_ms) {
        e->auth_asked = true;
        ss_etcd__send(e, SS_OP_AUTH, SS_ETCD_AUTHENTICATE_METHOD, ss_etcd__pack_auth);
    }
}

/* ---- polling ----------------------------------------------------------- */

static void ss_etcd__marker_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->marker_asked = false;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (op->call.rc == SS_OK && ss_etcd_range_unpack(&op->call.reply, &r, &kv) == SS_OK) {
        e->marker_rev = kv.found ? kv.mod_revision : 0;
        e->marker_known = true;
        ss_etcd_reply_free(&r);
        if (e->unreachable_logged)
            ss_etcd__log(e, SS_ETCD_LOG_NOTICE, "etcd answers again (%s)", ss_grpc_endpoint(e->grpc));
        e->unreachable_logged = false;
        e->stats.reachable = true;
        return;
    }
    if (!e->unreachable_logged)
        ss_etcd__log(e, SS_ETCD_LOG_ERR, "etcd does not answer (%s: %s): trying again every %u ms",
                     ss_grpc_endpoint(e->grpc), ss_etcd__why(&op->call), SS_ETCD_MARKER_RETRY_MS);
    e->unreachable_logged = true;
    e->stats.reachable = false;
    e->marker_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
}

void ss_backend_etcd_poll(ss_backend *b, uint64_t now_ms)
{
    struct ss_backend_etcd *e = b->impl;
    e->now_ms = now_ms;
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
        }
        ss_etcd__op_free(op);
    }
    if (e->commit == SS_COMMIT_RESOLVING && e->resolve_at_ms && ss_etcd__mono_ms() >= e->resolve_at_ms)
        ss_etcd__send_fence(e);
    ss_etcd__auth_step(e);
    ss_etcd__ask_marker(e);
    ss_etcd__claim_step(e);
    if (e->marker_known)
        ss_etcd__ask_due(e, now_ms);
}

/* ---- start and stop ---------------------------------------------------- */

void ss_backend_etcd_stats_get(const ss_backend *b, ss_backend_etcd_stats *s)
{
    const struct ss_backend_etcd *e = b->impl;
    *s = e->stats;
    s->cache_entries = e->entries;
    s->endpoint = ss_grpc_endpoint(e->grpc);
}

int ss_backend_etcd_ping(ss_backend *b, char *what, size_t what_len)
{
    struct ss_backend_etcd *e = b->impl;
    ss_grpc_call c;
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_STATUS_METHOD;
    c.timeout_ms = e->call_timeout_ms;
    int rc = ss_grpc_call_wait(e->grpc, &c);
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
    if (rc != SS_OK || e->username == NULL)
        return rc;
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_AUTHENTICATE_METHOD;
    c.timeout_ms = e->call_timeout_ms;
    if ((rc = ss_etcd_authenticate_pack(&c.request, e->username, e->password)) == SS_OK) {
        ss_grpc_call_wait(e->grpc, &c);
        rc = ss_etcd__logged_in(e, &c);
    }
    if (rc != SS_OK) {
        snprintf(what, what_len, "etcd did not accept user %s: %s", e->username, ss_etcd__why(&c));
        if (c.rc == SS_E_SERVER && c.status == 3) /* INVALID_ARGUMENT: a wrong name or password */
            rc = SS_E_INVAL;
    } else {
        e->auth_needed = false;
    }
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
    e->node_id = strdup(o->node_id ? o->node_id : "StateStore");
    e->call_timeout_ms = o->call_timeout_ms ? o->call_timeout_ms : 2000;
    e->unavailable_ms = o->unavailable_ms ? o->unavailable_ms : 5000;
    e->max_request_bytes = o->max_request_bytes ? o->max_request_bytes : SS_ETCD_MAX_REQUEST_DEFAULT;
    e->max_txn_ops = o->max_txn_ops ? o->max_txn_ops : 128;
    e->sweep_interval_ms = o->sweep_interval_ms ? o->sweep_interval_ms : 250;
    e->lease_ttl_s = o->lease_ttl_s ? o->lease_ttl_s : 3;
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
    e->batch_ops = 1;
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
    free(e->touched);
    ss_buf_free(&e->orphans);
    for (size_t i = 0; i < SS_ETCD_SWEEP_BATCH; i++)
        ss_buf_free(&e->due[i].key);
    ss_feed_free(&e->pending);
    ss_feed_free(&e->base.feed);
    ss_buf_free(&e->scratch);
    ss_buf_free(&e->scratch2);
    free(e->prefix);
    free(e->node_id);
    free(e->username);
    if (e->password) /* not left in freed memory */
        explicit_bzero(e->password, strlen(e->password));
    free(e->password);
    free(e);
}
