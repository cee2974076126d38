/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd.c - the state store on etcd (backend_etcd.h): the storage
 * interface's data operations, start and stop. The cache is in
 * backend_etcd_cache.c, the calls and the poll in backend_etcd_calls.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_life.h"
#include "backend_etcd_probe.h"
#include "backend_etcd_quota.h"
#include "backend_etcd_scan.h"
#include "backend_etcd_session.h"
#include "backend_etcd_sweep.h"
#include "backend_etcd_tombstone.h"
#include "backend_etcd_upload.h"
#include "backend_etcd_watch.h"

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
    va_list ap;
    va_start(ap, fmt);
    ss_backend_vlog(&e->base, level, fmt, ap);
    va_end(ap);
}

/* out = prefix + part + "/" + key. */
int ss_backend_etcd_layout_key(ss_buf *out, const char *prefix, char part, ss_bytes key)
{
    ss_buf_clear(out);
    const char head[2] = {part, '/'};
    int rc = ss_buf_append_str(out, prefix);
    if (rc == SS_OK)
        rc = ss_buf_append(out, head, sizeof head);
    if (rc == SS_OK && key.len)
        rc = ss_buf_append(out, key.data, key.len);
    return rc;
}

int ss_etcd__key(struct ss_backend_etcd *e, ss_buf *out, char part, ss_bytes key)
{
    return ss_backend_etcd_layout_key(out, e->prefix, part, key);
}

int ss_etcd__records_end(struct ss_backend_etcd *e, ss_buf *out)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__key(e, out, 'k', none);
    if (rc == SS_OK)
        out->data[out->len - 1] = '/' + 1;
    return rc;
}

int ss_etcd__named(struct ss_backend_etcd *e, char part, const char *name)
{
    ss_bytes n = {(const uint8_t *)name, strlen(name)};
    return ss_etcd__key(e, &e->scratch, part, n);
}

ss_bytes ss_etcd__bytes(const ss_buf *b)
{
    ss_bytes v = {b->data, b->len};
    return v;
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
    /* Beside the record, the compare and the put name the key, and so
     * does the deletion of the chunks of a value it replaces, as its
     * deletion's Txn will (its tombstone is small: the slack covers it). */
    size_t around = ss_backend_etcd_key_overhead(key.len, e->prefix_len);
    /* A value too large for one request goes in chunks (backend_etcd_blob.c):
     * the Txn carries its stub. */
    bool chunked = size + around > e->max_request_bytes;
    size_t in_txn = chunked ? ss_etcd__stub_size(rec) : size;
    if (in_txn + around > e->max_request_bytes)
        return SS_E_QUOTA; /* no Txn could carry it: the key is too long */
    size_t bytes;
    size_t ops = ss_etcd__room(e, x, in_txn, chunked, &bytes);
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
    e->open.guards += chunked;
    x->change = SS_CHANGE_PUT;
    x->next_expiry = rec->expiry_ms;
    x->next_lease = 0; /* a put without one takes the key off a tombstone's */
    x->next_blob[0] = '\0';
    x->uploaded = 0;
    x->guarded = false;
    x->upload_lease = 0;
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
    size_t ops = ss_etcd__room(e, x, ss_etcd__tombstone_size(e, change), false, &bytes);
    if (ops == 0)
        return SS_E_CONFLICT; /* the next batch */
    /* The tombstone (next_rec holds nothing of the batch's: room saw to
     * that), on a lease if one lasts long enough, then the charge:
     * nothing can fail after it. */
    uint64_t until = ss_etcd__tombstone_until(e, change);
    int64_t lease = ss_etcd__tombstone_lease(e, until);
    int rc = ss_etcd__tombstone_make(change, lease ? 0 : until, &x->next_rec);
    if (rc != SS_OK || (rc = ss_etcd__charge(e, x, false, 0)) != SS_OK) {
        ss_buf_free(&x->next_rec);
        return rc;
    }
    e->open.ops += ops;
    e->open.bytes += bytes;
    x->change = SS_CHANGE_DEL;
    x->next_expiry = lease ? 0 : until;
    x->next_lease = lease;
    x->next_blob[0] = '\0';
    ss_etcd__record_change(e, change);
    return SS_OK;
}

int ss_etcd__purge(struct ss_backend_etcd *e, struct ss_etcd_entry *x)
{
    size_t bytes;
    size_t ops = ss_etcd__room(e, x, 0, false, &bytes);
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

void ss_etcd__abort(void *impl)
{
    struct ss_backend_etcd *e = impl;
    ss_etcd__entries_end(e, &e->open, false, false, 0);
    ss_etcd__batch_reset(&e->open);
    ss_etcd__tidy(e);
}

void ss_etcd__append(void *ctx, const ss_change *c)
{
    (void)ss_feed_append(ctx, c);
}

static void ss_etcd__settled(void *impl, int rc, uint64_t upto)
{
    ss_etcd__watch_settled(impl, rc, upto);
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
            ss_etcd__settled(e, rc, 0);
            return rc == SS_E_CONFLICT ? SS_E_IO : rc;
        }
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ss_etcd__log(e, SS_LOG_ERR, "a commit did not end in time: its outcome is unknown");
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
    .scan = ss_etcd__page,
    .scan_as_of = ss_etcd__page_as_of,
    .token_key = ss_etcd__token_key, /* backend_etcd_scan.c */
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

/* ---- start and stop ---------------------------------------------------- */

void ss_backend_etcd_stats_get(const ss_backend *b, ss_backend_etcd_stats *s)
{
    const struct ss_backend_etcd *e = b->impl;
    *s = e->stats;
    s->cache_entries = e->entries;
    s->deadlines = e->deadlines.n;
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
        } else if (rc == SS_E_LIMIT) {
            snprintf(what, what_len, "%s: %s", ss_grpc_endpoint(e->grpc), SS_ETCD_TOKEN_TOO_LONG);
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
    e->sweep_full_ms = o->sweep_full_ms ? o->sweep_full_ms : SS_BACKEND_ETCD_SWEEP_FULL_MS;
    e->tombstone_ms = o->tombstone_ms ? o->tombstone_ms : SS_BACKEND_ETCD_TOMBSTONE_MS;
    e->lease_ttl_s = o->lease_ttl_s ? o->lease_ttl_s : 3;
    e->claim_lost_ms = ss_etcd__mono_ms(); /* none held yet */
    /* Reads are confirmed by the markers once the watch has shown no
     * other broker writing for solo_ms. */
    e->solo_ms = o->solo_ms;
    e->foreign_ms = ss_etcd__mono_ms();
    e->max_keys = o->max_keys;
    e->max_bytes = o->max_bytes;
    e->base.log = o->log;
    e->base.log_ctx = o->log_ctx;
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
    e->deadlines_read_needed = true; /* once the watch has a start */
    e->upload_ttl_scale = 1;
    if (getrandom(&e->incarnation, sizeof e->incarnation, 0) != (ssize_t)sizeof e->incarnation)
        e->incarnation = (uint64_t)time(NULL);
    snprintf(e->claim_value, sizeof e->claim_value, "pid %ld, instance %016llx", (long)getpid(),
             (unsigned long long)e->incarnation);
    int rc = e->prefix && e->node_id ? ss_table_init(&e->table) : SS_E_NOMEM;
    if (rc == SS_OK && (rc = ss_etcd_deadlines_init(&e->deadlines)) != SS_OK)
        ss_table_free(&e->table);
    if (rc != SS_OK) {
        free(e->prefix);
        free(e->node_id);
        free(e);
        return rc;
    }
    /* A connection is made while calls wait for it, the claim's renewal
     * among them: a member that takes a connection and then hangs (a TLS
     * handshake with a frozen process, a frozen machine) is left within
     * the renewal's own bound, so that the next endpoint is tried while
     * the lease lasts (backend_etcd_session.c). */
    unsigned connect_ms = e->lease_ttl_s * 1000u / 3u;
    if (connect_ms > e->call_timeout_ms)
        connect_ms = e->call_timeout_ms;
    ss_grpc_options go = {.endpoints = o->endpoints, .ca_file = o->ca_file, .cert_file = o->cert_file,
                          .key_file = o->key_file, .connect_timeout_ms = connect_ms,
                          .wake = ss_etcd__wake, .wake_ctx = e};
    if ((rc = ss_grpc_new(&go, &e->grpc, why, why_len)) != SS_OK ||
        (rc = ss_etcd__probes_new(e, o, why, why_len)) != SS_OK) {
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
    ss_etcd__probes_free(e);
    ss_etcd__drops_left(e);
    while (e->ops) {
        struct ss_etcd_op *op = e->ops;
        ss_etcd__unlink_op(e, op);
        /* A fetch under way at the stop: its entry, freed below, must not
         * reach the call through its back pointer. */
        if (op->entry)
            op->entry->op = NULL;
        ss_etcd__op_free(op);
    }
    while (e->first)
        ss_etcd__entry_free(e, e->first);
    ss_table_free(&e->table);
    ss_etcd__batch_free(&e->open);
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        ss_etcd__batch_free(&e->flights[i].b);
    ss_feed_free(&e->settled);
    ss_etcd_deadlines_free(&e->deadlines);
    ss_etcd_walk_free(&e->deadlines_walk);
    ss_etcd_walk_free(&e->usage_walk);
    ss_etcd__watch_free(e);
    ss_feed_free(&e->base.feed);
    ss_buf_free(&e->scratch);
    ss_buf_free(&e->scratch2);
    ss_buf_free(&e->scan_reply);
    ss_buf_free(&e->scan_value);
    ss_buf_free(&e->page_after);
    ss_buf_free(&e->page_prefix);
    ss_buf_free(&e->page_stop);
    ss_buf_free(&e->page_reply);
    ss_buf_free(&e->page_end);
    ss_buf_free(&e->scan_end);
    ss_buf_free(&e->scan_after);
    ss_buf_free(&e->page_cursor);
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
