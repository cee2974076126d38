/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_lmdb.c - the LMDB store behind the storage interface
 * (backend_lmdb.h). */
#include <stdlib.h>

#include "backend_lmdb_internal.h"
#include "errors.h"

static int ss_backend_lmdb__batch(struct ss_backend_lmdb *l)
{
    return ss_store_in_batch(l->store) ? SS_OK : ss_store_begin(l->store);
}

/* A change of the open batch, for the feed once committed. A change that
 * cannot be kept (out of memory) is logged by nobody: the write stands,
 * its notification is lost, as with any notification out of memory. */
static void ss_backend_lmdb__record(struct ss_backend_lmdb *l, const ss_change *c)
{
    if (ss_backend_wants(&l->base, c->key))
        (void)ss_feed_append(&l->pending, c);
}

static int ss_backend_lmdb__read(void *impl, ss_bytes key, ss_record *rec, ss_revision *rev)
{
    struct ss_backend_lmdb *l = impl;
    *rev = 0;
    int rc = ss_backend_lmdb__batch(l);
    return rc != SS_OK ? rc : ss_store_get(l->store, key, rec);
}

static int ss_backend_lmdb__put(void *impl, ss_bytes key, const ss_record *rec, ss_revision decided_on)
{
    (void)decided_on; /* decided in this transaction: it matches */
    struct ss_backend_lmdb *l = impl;
    int rc = ss_backend_lmdb__batch(l);
    if (rc == SS_OK)
        rc = ss_store_put(l->store, key, rec);
    if (rc == SS_OK) {
        ss_change c = {.type = SS_CHANGE_SET, .key = key, .value = rec->value, .version = rec->version};
        ss_backend_lmdb__record(l, &c);
    }
    return rc;
}

static int ss_backend_lmdb__del(void *impl, const ss_change *change, ss_revision decided_on)
{
    (void)decided_on;
    struct ss_backend_lmdb *l = impl;
    int rc = ss_backend_lmdb__batch(l);
    if (rc == SS_OK)
        rc = ss_store_del(l->store, change->key);
    if (rc == SS_OK)
        ss_backend_lmdb__record(l, change);
    return rc;
}

static uint64_t ss_backend_lmdb__next_expiry(void *impl)
{
    struct ss_backend_lmdb *l = impl;
    return ss_store_next_expiry(l->store);
}

static int ss_backend_lmdb__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    struct ss_backend_lmdb *l = impl;
    int rc = ss_backend_lmdb__batch(l);
    if (rc == SS_OK)
        rc = ss_store_pop_due(l->store, now_ms, key, version);
    if (rc == SS_OK) {
        ss_change c = {.type = SS_CHANGE_DELETE, .key = {key->data, key->len}, .version = *version,
                       .expired = true};
        ss_backend_lmdb__record(l, &c);
    }
    return rc;
}

static int ss_backend_lmdb__save_clock(void *impl, uint64_t wall, uint32_t counter)
{
    struct ss_backend_lmdb *l = impl;
    int rc = ss_backend_lmdb__batch(l);
    return rc != SS_OK ? rc : ss_store_set_clock(l->store, wall, counter);
}

static void ss_backend_lmdb__load_clock(void *impl, uint64_t *wall, uint32_t *counter)
{
    struct ss_backend_lmdb *l = impl;
    ss_store_get_clock(l->store, wall, counter);
}

static void ss_backend_lmdb__append(void *ctx, const ss_change *c)
{
    (void)ss_feed_append(ctx, c);
}

/* Committed: the batch's changes join the feed (in one move when the feed
 * was delivered, as it usually is); failed: they never happened. */
void ss_backend_lmdb__settled(void *impl, int rc, uint64_t upto)
{
    struct ss_backend_lmdb *l = impl;
    if (rc == SS_OK && ss_feed_len(&l->pending)) {
        if (ss_feed_len(&l->base.feed) == 0) {
            ss_feed spare = l->base.feed;
            l->base.feed = l->pending;
            l->pending = spare;
        } else {
            ss_feed_each(&l->pending, ss_backend_lmdb__append, &l->base.feed);
        }
    }
    ss_feed_clear(&l->pending);
    (void)ss_backend_mark_told(&l->base, upto); /* lost with memory: a later mark covers it */
}

static int ss_backend_lmdb__commit(void *impl, uint64_t now_ms)
{
    struct ss_backend_lmdb *l = impl;
    int rc = ss_store_in_batch(l->store) ? ss_store_commit(l->store, now_ms)
                                         : ss_store_flush(l->store, now_ms);
    ss_backend_lmdb__settled(l, rc, 0);
    return rc;
}

static void ss_backend_lmdb__abort(void *impl)
{
    struct ss_backend_lmdb *l = impl;
    ss_store_abort(l->store);
    ss_feed_clear(&l->pending);
}

/* In the batch, so that the page sees its writes as GET does. */
static int ss_backend_lmdb__scan(void *impl, ss_bytes after, ss_bytes prefix, size_t max_examined,
                                 ss_backend_scan_fn fn, void *ctx, ss_buf *next)
{
    struct ss_backend_lmdb *l = impl;
    int rc = ss_backend_lmdb__batch(l);
    return rc != SS_OK ? rc : ss_store_scan(l->store, after, prefix, max_examined, fn, ctx, next);
}

static int ss_backend_lmdb__token_key(void *impl, uint8_t out[16])
{
    struct ss_backend_lmdb *l = impl;
    ss_store_secret(l->store, "SCAN continuation tokens", out);
    return SS_OK;
}

static const struct ss_backend_ops ss_backend_lmdb_ops = {
    .name = "lmdb",
    .read = ss_backend_lmdb__read,
    .put = ss_backend_lmdb__put,
    .del = ss_backend_lmdb__del,
    .next_expiry = ss_backend_lmdb__next_expiry,
    .pop_due = ss_backend_lmdb__pop_due,
    .save_clock = ss_backend_lmdb__save_clock,
    .load_clock = ss_backend_lmdb__load_clock,
    .commit = ss_backend_lmdb__commit,
    .abort = ss_backend_lmdb__abort,
    .settled = ss_backend_lmdb__settled,
    .scan = ss_backend_lmdb__scan,
    .token_key = ss_backend_lmdb__token_key,
    .max_flights = 1,
    .may_conflict = false,
    .wake_repeats = true, /* the worker repeats it until collected */
    .start = ss_backend_lmdb__start,
    .poll = ss_backend_lmdb__poll,
    .accepting = ss_backend_lmdb__accepting,
    .commit_start = ss_backend_lmdb__commit_start,
    .commit_collect = ss_backend_lmdb__commit_collect,
    .commit_wait = ss_backend_lmdb__commit_wait,
    .prefetch = ss_backend_lmdb__prefetch,
    .page_start = ss_backend_lmdb__page_start,
    .page_done = ss_backend_lmdb__page_done,
    .figures = ss_backend_lmdb__figures,
    .cause = ss_backend_lmdb__cause,
    .backup_start = ss_backend_lmdb__backup_start,
    .backup_done = ss_backend_lmdb__backup_done,
    .destroy = ss_backend_lmdb_free,
};

int ss_backend_lmdb_new(ss_store *store, ss_backend **out)
{
    struct ss_backend_lmdb *l = calloc(1, sizeof *l);
    if (l == NULL)
        return SS_E_NOMEM;
    l->base.ops = &ss_backend_lmdb_ops;
    l->base.impl = l;
    l->store = store;
    pthread_mutex_init(&l->backup.mu, NULL);
    *out = &l->base;
    return SS_OK;
}

int ss_backend_lmdb_open(const ss_store_options *o, ss_backend **out)
{
    ss_store *store;
    int rc = ss_store_open(o, &store);
    if (rc != SS_OK)
        return rc;
    if ((rc = ss_backend_lmdb_new(store, out)) != SS_OK) {
        ss_store_close(store);
        return rc;
    }
    ((struct ss_backend_lmdb *)(*out)->impl)->owned = true;
    return SS_OK;
}

ss_store *ss_backend_lmdb_store(ss_backend *b)
{
    struct ss_backend_lmdb *l = b->impl;
    return l->store;
}

void ss_backend_lmdb_free(ss_backend *b)
{
    if (b == NULL)
        return;
    struct ss_backend_lmdb *l = b->impl;
    ss_backend_lmdb__backup_stop(l); /* a copy under way ends first: it reads the store */
    ss_backend_lmdb__life_stop(l);
    if (l->owned)
        ss_store_close(l->store);
    pthread_mutex_destroy(&l->backup.mu);
    ss_buf_free(&l->page_from);
    ss_feed_free(&l->pending);
    ss_feed_free(&l->base.feed);
    free(l);
}
