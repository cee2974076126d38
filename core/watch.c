/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* watch.c - KEYNOTIFY registrations.
 *
 * Three hash tables: clients by id, keys by bytes, and entries by
 * (client, key). Each entry is on its client's list and on its key's list,
 * so a notification walks only that key's observers and a disconnect only
 * that client's registrations. A client or key object lives exactly as long
 * as it has entries.
 */
#include "watch.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "table.h"

struct ss_wentry;

struct ss_wname { /* a client or a key */
    ss_table_node node;
    struct ss_wentry *first;
    size_t count;
    size_t stopping; /* a client's: of count, stopped and not settled */
    char *user; /* a client's username (ss_watch_set_user), or NULL */
    size_t len;
    uint8_t bytes[];
};

struct ss_wentry {
    ss_table_node node;
    struct ss_wname *client, *key;
    struct ss_wentry *cnext, *cprev, *knext, *kprev;
    /* Stopped (ss_watch_stop) but still told of changes made before the
     * stop, until ss_watch_settle: on the stopping list while stop_seq. */
    uint64_t stop_seq;
    struct ss_wentry *snext, *sprev;
};

struct ss_watch {
    struct ss_wentry *stopping;
    ss_table clients, keys, entries;
    size_t max_per_client, max_total, total;
    size_t max_bytes, bytes; /* of the keys, counted per registration */
    /* Of total and bytes, the stopped registrations not settled: they
     * count toward no limit, since the client was told they are gone. */
    size_t stopping_total, stopping_bytes;
    ss_watch_limit refused; /* the limit of the last refusal */
};

int ss_watch_new(size_t max_per_client, size_t max_total, ss_watch **out)
{
    ss_watch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return SS_E_NOMEM;
    int rc = ss_table_init(&w->clients);
    if (rc == SS_OK)
        rc = ss_table_init(&w->keys);
    if (rc == SS_OK)
        rc = ss_table_init(&w->entries);
    if (rc != SS_OK) {
        ss_watch_free(w);
        return rc;
    }
    w->max_per_client = max_per_client;
    w->max_total = max_total;
    *out = w;
    return SS_OK;
}

void ss_watch_set_max_bytes(ss_watch *w, size_t max_bytes)
{
    w->max_bytes = max_bytes;
}

static struct ss_wname *ss_watch__name_find(const ss_table *t, ss_bytes b, uint64_t h)
{
    for (ss_table_node *n = ss_table_find(t, h); n; n = ss_table_next(n, h)) {
        struct ss_wname *x = (struct ss_wname *)n;
        if (x->len == b.len && (b.len == 0 || memcmp(x->bytes, b.data, b.len) == 0))
            return x;
    }
    return NULL;
}

static struct ss_wname *ss_watch__name_get(ss_table *t, ss_bytes b)
{
    uint64_t h = ss_table_hash(t, b.data, b.len);
    struct ss_wname *x = ss_watch__name_find(t, b, h);
    if (x)
        return x;
    x = calloc(1, sizeof *x + b.len + 1); /* NUL-terminated, for ss_watch_client_fn */
    if (x == NULL)
        return NULL;
    x->len = b.len;
    if (b.len)
        memcpy(x->bytes, b.data, b.len);
    ss_table_insert(t, &x->node, h);
    return x;
}

static void ss_watch__name_release(ss_table *t, struct ss_wname *x)
{
    if (x->first == NULL) {
        ss_table_remove(t, &x->node);
        free(x->user);
        free(x);
    }
}

static uint64_t ss_watch__entry_hash(const ss_watch *w, const struct ss_wname *c, const struct ss_wname *k)
{
    return ss_table_hash2(&w->entries, c->bytes, c->len, k->bytes, k->len);
}

static struct ss_wentry *ss_watch__entry_find(const ss_watch *w, const struct ss_wname *c,
                                        const struct ss_wname *k)
{
    uint64_t h = ss_watch__entry_hash(w, c, k);
    for (ss_table_node *n = ss_table_find(&w->entries, h); n; n = ss_table_next(n, h)) {
        struct ss_wentry *e = (struct ss_wentry *)n;
        if (e->client == c && e->key == k)
            return e;
    }
    return NULL;
}

static void ss_watch__unstop(ss_watch *w, struct ss_wentry *e)
{
    if (e->sprev)
        e->sprev->snext = e->snext;
    else
        w->stopping = e->snext;
    if (e->snext)
        e->snext->sprev = e->sprev;
    e->snext = e->sprev = NULL;
    e->stop_seq = 0;
    e->client->stopping--;
    w->stopping_total--;
    w->stopping_bytes -= e->key->len;
}

int ss_watch_add(ss_watch *w, ss_bytes client, ss_bytes key)
{
    struct ss_wname *c = ss_watch__name_get(&w->clients, client);
    if (c == NULL)
        return SS_E_NOMEM;
    struct ss_wname *k = ss_watch__name_get(&w->keys, key);
    if (k == NULL) {
        ss_watch__name_release(&w->clients, c);
        return SS_E_NOMEM;
    }
    struct ss_wentry *found = ss_watch__entry_find(w, c, k);
    if (found && !found->stop_seq)
        return 0;
    int rc = SS_OK;
    struct ss_wentry *e = NULL;
    size_t bytes = w->bytes - w->stopping_bytes;
    /* Stopped registrations wait until the changes before their STOP are
     * told (on etcd, by the watch, which may lag or be down): they count
     * too, up to as many again (the !found tests), so that registering
     * and stopping in a loop cannot grow them without bound meanwhile. */
    if ((w->max_per_client && c->count - c->stopping >= w->max_per_client) ||
        (!found && w->max_per_client && c->count >= 2 * w->max_per_client))
        w->refused = SS_WATCH_LIMIT_PER_CLIENT;
    else if ((w->max_total && w->total - w->stopping_total >= w->max_total) ||
             (!found && w->max_total && w->total >= 2 * w->max_total))
        w->refused = SS_WATCH_LIMIT_TOTAL;
    else if ((w->max_bytes && (key.len > w->max_bytes || bytes > w->max_bytes - key.len)) ||
             (!found && w->max_bytes && w->bytes > 2 * w->max_bytes - key.len))
        w->refused = SS_WATCH_LIMIT_BYTES;
    else
        w->refused = SS_WATCH_LIMIT_NONE;
    if (w->refused != SS_WATCH_LIMIT_NONE)
        rc = SS_E_QUOTA;
    else if (found) {
        ss_watch__unstop(w, found); /* stopped, then asked for again */
        return 1;
    } else if ((e = calloc(1, sizeof *e)) == NULL)
        rc = SS_E_NOMEM;
    if (rc != SS_OK && found)
        return rc; /* the names are the stopped registration's */
    if (rc != SS_OK) {
        ss_watch__name_release(&w->keys, k);
        ss_watch__name_release(&w->clients, c);
        return rc;
    }
    e->client = c;
    e->key = k;
    e->cnext = c->first;
    if (c->first)
        c->first->cprev = e;
    c->first = e;
    c->count++;
    e->knext = k->first;
    if (k->first)
        k->first->kprev = e;
    k->first = e;
    k->count++;
    ss_table_insert(&w->entries, &e->node, ss_watch__entry_hash(w, c, k));
    w->total++;
    w->bytes += key.len;
    return 1;
}

ss_watch_limit ss_watch_refused(const ss_watch *w)
{
    return w->refused;
}

static void ss_watch__entry_unlink(ss_watch *w, struct ss_wentry *e)
{
    struct ss_wname *c = e->client, *k = e->key;
    if (e->stop_seq)
        ss_watch__unstop(w, e);
    if (e->cprev)
        e->cprev->cnext = e->cnext;
    else
        c->first = e->cnext;
    if (e->cnext)
        e->cnext->cprev = e->cprev;
    if (e->kprev)
        e->kprev->knext = e->knext;
    else
        k->first = e->knext;
    if (e->knext)
        e->knext->kprev = e->kprev;
    c->count--;
    k->count--;
    ss_table_remove(&w->entries, &e->node);
    w->total--;
    w->bytes -= k->len;
    free(e);
    ss_watch__name_release(&w->keys, k);
}

int ss_watch_remove(ss_watch *w, ss_bytes client, ss_bytes key)
{
    uint64_t ch = ss_table_hash(&w->clients, client.data, client.len);
    struct ss_wname *c = ss_watch__name_find(&w->clients, client, ch);
    struct ss_wname *k = ss_watch__name_find(&w->keys, key, ss_table_hash(&w->keys, key.data, key.len));
    if (c == NULL || k == NULL)
        return 0;
    struct ss_wentry *e = ss_watch__entry_find(w, c, k);
    if (e == NULL)
        return 0;
    ss_watch__entry_unlink(w, e);
    ss_watch__name_release(&w->clients, c);
    return 1;
}

int ss_watch_stop(ss_watch *w, ss_bytes client, ss_bytes key, uint64_t seq)
{
    struct ss_wname *c = ss_watch__name_find(&w->clients, client, ss_table_hash(&w->clients, client.data, client.len));
    struct ss_wname *k = ss_watch__name_find(&w->keys, key, ss_table_hash(&w->keys, key.data, key.len));
    struct ss_wentry *e = c && k ? ss_watch__entry_find(w, c, k) : NULL;
    if (e == NULL || e->stop_seq)
        return 0;
    e->stop_seq = seq ? seq : 1;
    c->stopping++;
    w->stopping_total++;
    w->stopping_bytes += k->len;
    e->snext = w->stopping;
    if (w->stopping)
        w->stopping->sprev = e;
    w->stopping = e;
    return 1;
}

size_t ss_watch_settle(ss_watch *w, uint64_t before)
{
    size_t n = 0;
    struct ss_wentry *e = w->stopping;
    while (e) {
        struct ss_wentry *next = e->snext;
        if (e->stop_seq < before) {
            struct ss_wname *c = e->client;
            ss_watch__entry_unlink(w, e);
            ss_watch__name_release(&w->clients, c);
            n++;
        }
        e = next;
    }
    return n;
}

int ss_watch_set_user(ss_watch *w, ss_bytes client, const char *username)
{
    struct ss_wname *c = ss_watch__name_find(&w->clients, client, ss_table_hash(&w->clients, client.data, client.len));
    if (c == NULL)
        return SS_E_INVAL;
    char *copy = NULL;
    if (username && (copy = strdup(username)) == NULL)
        return SS_E_NOMEM; /* the one kept stays */
    free(c->user);
    c->user = copy;
    return SS_OK;
}

void ss_watch_each_of_client(const ss_watch *w, ss_bytes client, ss_watch_fn fn, void *ctx)
{
    uint64_t ch = ss_table_hash(&w->clients, client.data, client.len);
    struct ss_wname *c = ss_watch__name_find(&w->clients, client, ch);
    for (struct ss_wentry *e = c ? c->first : NULL; e; e = e->cnext) {
        ss_bytes key = {e->key->bytes, e->key->len};
        fn(ctx, key);
    }
}

size_t ss_watch_drop_client(ss_watch *w, ss_bytes client)
{
    uint64_t ch = ss_table_hash(&w->clients, client.data, client.len);
    struct ss_wname *c = ss_watch__name_find(&w->clients, client, ch);
    if (c == NULL)
        return 0;
    size_t n = 0;
    while (c->first) {
        ss_watch__entry_unlink(w, c->first);
        n++;
    }
    ss_watch__name_release(&w->clients, c);
    return n;
}

void ss_watch_each(const ss_watch *w, ss_bytes key, ss_watch_client_fn fn, void *ctx)
{
    if (w->total == 0)
        return; /* the common case: no need to hash the key */
    struct ss_wname *k = ss_watch__name_find(&w->keys, key, ss_table_hash(&w->keys, key.data, key.len));
    if (k == NULL)
        return;
    for (struct ss_wentry *e = k->first; e; e = e->knext) {
        ss_bytes id = {e->client->bytes, e->client->len};
        fn(ctx, id, e->client->user);
    }
}

bool ss_watch_has(const ss_watch *w, ss_bytes client, ss_bytes key)
{
    if (w->total == 0)
        return false;
    struct ss_wname *c = ss_watch__name_find(&w->clients, client, ss_table_hash(&w->clients, client.data, client.len));
    struct ss_wname *k = c ? ss_watch__name_find(&w->keys, key, ss_table_hash(&w->keys, key.data, key.len)) : NULL;
    return k != NULL && ss_watch__entry_find(w, c, k) != NULL;
}

size_t ss_watch_count(const ss_watch *w)
{
    return w->total;
}

size_t ss_watch_client_count(const ss_watch *w, ss_bytes client)
{
    uint64_t ch = ss_table_hash(&w->clients, client.data, client.len);
    struct ss_wname *c = ss_watch__name_find(&w->clients, client, ch);
    return c ? c->count : 0;
}

/* Free every node of t: entries, or names (what they hold too). */
static void ss_watch__free_nodes(ss_table *t, bool names)
{
    for (size_t i = 0; t->buckets && i <= t->mask; i++) {
        ss_table_node *n = t->buckets[i];
        while (n) {
            ss_table_node *next = n->next;
            if (names)
                free(((struct ss_wname *)n)->user);
            free(n);
            n = next;
        }
    }
    ss_table_free(t);
}

void ss_watch_free(ss_watch *w)
{
    if (w == NULL)
        return;
    ss_watch__free_nodes(&w->entries, false);
    ss_watch__free_nodes(&w->clients, true);
    ss_watch__free_nodes(&w->keys, true);
    free(w);
}
