/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* pwatch.c - pattern watches (pwatch.h).
 *
 * The registrations themselves are an ss_watch of (client, pattern text):
 * it keeps each client's list, the limits and the disconnects. On top of
 * it: compiled patterns by text, each counting its registrations; groups
 * of patterns by their indexed prefix; and clients by id, with their user
 * name. A pattern lives while it has registrations, a group while it has
 * patterns, a client while it has registrations.
 *
 * Two indexes: a pattern with a literal prefix is grouped by it; one
 * without, by its literal suffix (the bytes after its last wildcard:
 * "?/temp" by "/temp"), if it has one; a pattern with neither is in the
 * prefix group of "" (tried on every key). lens[i][n] counts the groups of
 * index i whose bytes number n, so that a key looks up only the lengths in
 * use.
 *
 * A client is told once per change however many of its patterns match:
 * each walk takes a new stamp, and a client already stamped is skipped.
 */
#include "pwatch.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "pattern.h"
#include "table.h"
#include "watch.h"

struct ss_pwgroup;

struct ss_pwclient {
    ss_table_node node;
    uint64_t stamp; /* the last walk that told it */
    char *username;
    size_t len;
    char id[]; /* len bytes and a NUL */
};

struct ss_pwpat {
    ss_table_node node;
    ss_pattern *pat;
    size_t refs; /* registrations */
    struct ss_pwgroup *group;
    struct ss_pwpat *gnext, *gprev;
    size_t len;
    uint8_t text[];
};

enum { SS_PW_PREFIX, SS_PW_SUFFIX };

struct ss_pwgroup {
    ss_table_node node;
    int index; /* SS_PW_PREFIX or SS_PW_SUFFIX */
    struct ss_pwpat *first;
    uint64_t weight; /* its patterns' matching steps per key character */
    size_t len;
    uint8_t prefix[]; /* or suffix */
};

struct ss_pwatch {
    ss_watch *regs;
    ss_table clients, pats, groups[2];
    size_t lens[2][SS_PWATCH_INDEX_MAX + 1];
    uint64_t stamp, tried;
    uint64_t max_work; /* 0: no limit */
    size_t max_key_len;
};

int ss_pwatch_new(size_t max_per_client, size_t max_total, ss_pwatch **out)
{
    ss_pwatch *w = calloc(1, sizeof *w);
    if (w == NULL)
        return SS_E_NOMEM;
    int rc = ss_watch_new(max_per_client, max_total, &w->regs);
    ss_table *tables[] = {&w->clients, &w->pats, &w->groups[0], &w->groups[1]};
    for (size_t i = 0; rc == SS_OK && i < 4; i++)
        rc = ss_table_init(tables[i]);
    if (rc != SS_OK) {
        ss_pwatch_free(w);
        return rc;
    }
    *out = w;
    return SS_OK;
}

/* The node of t whose bytes (at offset off in its struct, length at
 * len_off) equal b. */
static ss_table_node *ss_pwatch__find(const ss_table *t, ss_bytes b, size_t len_off, size_t off)
{
    uint64_t h = ss_table_hash(t, b.data, b.len);
    for (ss_table_node *n = ss_table_find(t, h); n; n = ss_table_next(n, h)) {
        size_t len = *(const size_t *)((const char *)n + len_off);
        const uint8_t *bytes = (const uint8_t *)n + off;
        if (len == b.len && (b.len == 0 || memcmp(bytes, b.data, b.len) == 0))
            return n;
    }
    return NULL;
}

#define SS_PW_FIND(t, type, field, b) \
    ((struct type *)ss_pwatch__find((t), (b), offsetof(struct type, len), offsetof(struct type, field)))

static struct ss_pwclient *ss_pwatch__client(const ss_pwatch *w, ss_bytes client)
{
    return SS_PW_FIND(&w->clients, ss_pwclient, id, client);
}

/* The client's entry, made if new (its user name is the one given first:
 * a client id has one connection at a time, and leaving drops it). */
static struct ss_pwclient *ss_pwatch__client_get(ss_pwatch *w, ss_bytes client, const char *username)
{
    struct ss_pwclient *c = ss_pwatch__client(w, client);
    if (c)
        return c;
    c = calloc(1, sizeof *c + client.len + 1);
    if (c == NULL || (username && (c->username = strdup(username)) == NULL)) {
        free(c);
        return NULL;
    }
    c->len = client.len;
    if (client.len)
        memcpy(c->id, client.data, client.len);
    ss_table_insert(&w->clients, &c->node, ss_table_hash(&w->clients, client.data, client.len));
    return c;
}

static void ss_pwatch__client_release(ss_pwatch *w, struct ss_pwclient *c)
{
    ss_bytes id = {(const uint8_t *)c->id, c->len};
    if (ss_watch_client_count(w->regs, id) == 0) {
        ss_table_remove(&w->clients, &c->node);
        free(c->username);
        free(c);
    }
}

/* The literal bytes at the end of a pattern: those after its last '*',
 * '?', '[' or ']' (a ']' may close a class: stop there too). Every key it
 * matches ends with them: the dialect has no escapes, and a character
 * outside a class is itself. But for a '/' right after "**": the two
 * together may match nothing at all (the pattern "**" "/b" matches "b"),
 * so such a '/' is left out. */
static ss_bytes ss_pwatch__suffix(ss_bytes text)
{
    size_t n = 0;
    while (n < text.len && !strchr("*?[]", text.data[text.len - 1 - n]))
        n++;
    ss_bytes b = {text.data + text.len - n, n};
    if (n && b.data[0] == '/' && text.len - n >= 2 && memcmp(b.data - 2, "**", 2) == 0) {
        b.data++;
        b.len--;
    }
    return b;
}

/* The pattern of text, compiled and put in its group if new. */
static int ss_pwatch__pat_get(ss_pwatch *w, ss_bytes text, struct ss_pwpat **out)
{
    struct ss_pwpat *p = SS_PW_FIND(&w->pats, ss_pwpat, text, text);
    if (p) {
        *out = p;
        return SS_OK;
    }
    ss_pattern *pat;
    int rc = ss_pattern_compile(text.data, text.len, &pat);
    if (rc != SS_OK)
        return rc;
    /* The index, and the bytes it keeps (at most SS_PWATCH_INDEX_MAX: the
     * first of a prefix, the last of a suffix). */
    int index = SS_PW_PREFIX;
    ss_bytes by = ss_pattern_prefix(pat);
    if (by.len > SS_PWATCH_INDEX_MAX)
        by.len = SS_PWATCH_INDEX_MAX;
    if (by.len == 0 && (by = ss_pwatch__suffix(text)).len) {
        index = SS_PW_SUFFIX;
        if (by.len > SS_PWATCH_INDEX_MAX) {
            by.data += by.len - SS_PWATCH_INDEX_MAX;
            by.len = SS_PWATCH_INDEX_MAX;
        }
    }
    ss_table *groups = &w->groups[index];
    struct ss_pwgroup *g = SS_PW_FIND(groups, ss_pwgroup, prefix, by);
    bool new_group = g == NULL;
    if (new_group && (g = calloc(1, sizeof *g + by.len)) != NULL) {
        g->index = index;
        g->len = by.len;
        if (by.len)
            memcpy(g->prefix, by.data, by.len);
    }
    p = g ? calloc(1, sizeof *p + text.len) : NULL;
    if (p == NULL) {
        if (new_group)
            free(g);
        ss_pattern_free(pat);
        return SS_E_NOMEM;
    }
    if (new_group) {
        ss_table_insert(groups, &g->node, ss_table_hash(groups, by.data, by.len));
        w->lens[index][by.len]++;
    }
    p->pat = pat;
    p->len = text.len;
    memcpy(p->text, text.data, text.len);
    p->group = g;
    g->weight += ss_pattern_cost(pat, 0);
    p->gnext = g->first;
    if (g->first)
        g->first->gprev = p;
    g->first = p;
    ss_table_insert(&w->pats, &p->node, ss_table_hash(&w->pats, text.data, text.len));
    *out = p;
    return SS_OK;
}

static void ss_pwatch__pat_release(ss_pwatch *w, struct ss_pwpat *p)
{
    if (p->refs)
        return;
    struct ss_pwgroup *g = p->group;
    if (p->gprev)
        p->gprev->gnext = p->gnext;
    else
        g->first = p->gnext;
    if (p->gnext)
        p->gnext->gprev = p->gprev;
    ss_table_remove(&w->pats, &p->node);
    g->weight -= ss_pattern_cost(p->pat, 0);
    ss_pattern_free(p->pat);
    free(p);
    if (g->first == NULL) {
        w->lens[g->index][g->len]--;
        ss_table_remove(&w->groups[g->index], &g->node);
        free(g);
    }
}

void ss_pwatch_set_work_limit(ss_pwatch *w, uint64_t max_work, size_t max_key_len)
{
    w->max_work = max_work;
    w->max_key_len = max_key_len;
}

uint64_t ss_pwatch_work_bound(const ss_pwatch *w, size_t max_key_len)
{
    /* A key finds at most one group of each index and length: the
     * heaviest of each, summed, is the most a change can try. */
    uint64_t heaviest[2][SS_PWATCH_INDEX_MAX + 1] = {{0}};
    for (int t = 0; t < 2; t++) {
        const ss_table *groups = &w->groups[t];
        for (size_t i = 0; groups->buckets && i <= groups->mask; i++)
            for (const ss_table_node *n = groups->buckets[i]; n; n = n->next) {
                const struct ss_pwgroup *g = (const struct ss_pwgroup *)n;
                if (g->weight > heaviest[t][g->len])
                    heaviest[t][g->len] = g->weight;
            }
    }
    uint64_t per_char = 0;
    for (int t = 0; t < 2; t++)
        for (size_t n = 0; n <= SS_PWATCH_INDEX_MAX; n++)
            per_char += heaviest[t][n];
    return per_char * ((uint64_t)max_key_len + 1);
}

int ss_pwatch_add(ss_pwatch *w, ss_bytes client, const char *username, ss_bytes pattern)
{
    struct ss_pwpat *p;
    int rc = ss_pwatch__pat_get(w, pattern, &p);
    if (rc != SS_OK)
        return rc;
    /* A new pattern: within the work limit, or gone again. */
    if (p->refs == 0 && w->max_work && ss_pwatch_work_bound(w, w->max_key_len) > w->max_work) {
        ss_pwatch__pat_release(w, p);
        return SS_E_LIMIT;
    }
    struct ss_pwclient *c = ss_pwatch__client_get(w, client, username);
    rc = c ? ss_watch_add(w->regs, client, pattern) : SS_E_NOMEM;
    if (rc == 1)
        p->refs++;
    if (c)
        ss_pwatch__client_release(w, c);
    ss_pwatch__pat_release(w, p);
    return rc;
}

/* One fewer registration of the pattern named (a ss_watch_fn). */
static void ss_pwatch__unref(void *ctx, ss_bytes text)
{
    ss_pwatch *w = ctx;
    struct ss_pwpat *p = SS_PW_FIND(&w->pats, ss_pwpat, text, text);
    if (p && p->refs) {
        p->refs--;
        ss_pwatch__pat_release(w, p);
    }
}

int ss_pwatch_remove(ss_pwatch *w, ss_bytes client, ss_bytes pattern)
{
    if (ss_watch_remove(w->regs, client, pattern) == 0)
        return 0;
    ss_pwatch__unref(w, pattern);
    struct ss_pwclient *c = ss_pwatch__client(w, client);
    if (c)
        ss_pwatch__client_release(w, c);
    return 1;
}

size_t ss_pwatch_drop_client(ss_pwatch *w, ss_bytes client)
{
    struct ss_pwclient *c = ss_pwatch__client(w, client);
    if (c == NULL)
        return 0;
    ss_watch_each_of_client(w->regs, client, ss_pwatch__unref, w);
    size_t n = ss_watch_drop_client(w->regs, client);
    ss_pwatch__client_release(w, c);
    return n;
}

struct ss_pwatch_walk {
    ss_pwatch *w;
    uint64_t stamp;
    ss_pwatch_fn fn;
    void *ctx;
};

/* A client of a matching pattern (a ss_watch_client_fn; the pattern's
 * registrations keep no username, its client record does): told unless
 * told already in this walk. */
static void ss_pwatch__tell(void *ctx, ss_bytes client, const char *unused)
{
    (void)unused;
    struct ss_pwatch_walk *k = ctx;
    struct ss_pwclient *c = ss_pwatch__client(k->w, client);
    if (c == NULL || c->stamp == k->stamp)
        return;
    c->stamp = k->stamp;
    ss_bytes id = {(const uint8_t *)c->id, c->len};
    k->fn(k->ctx, id, c->username);
}

/* Walk the patterns that match key: fn for each client not yet told (fn
 * NULL: stop at the first match). True when some pattern matched. */
static bool ss_pwatch__walk(ss_pwatch *w, ss_bytes key, ss_pwatch_fn fn, void *ctx)
{
    if (w->pats.count == 0)
        return false; /* the common case: no lookup at all */
    bool any = false;
    struct ss_pwatch_walk k = {w, ++w->stamp, fn, ctx};
    size_t upto = key.len < SS_PWATCH_INDEX_MAX ? key.len : SS_PWATCH_INDEX_MAX;
    for (size_t at = 0; at <= 2 * upto + 1; at++) { /* prefixes 0..upto, then suffixes */
        int index = at <= upto ? SS_PW_PREFIX : SS_PW_SUFFIX;
        size_t n = index == SS_PW_PREFIX ? at : at - upto - 1;
        if (w->lens[index][n] == 0)
            continue;
        ss_bytes by = {index == SS_PW_PREFIX ? key.data : key.data + key.len - n, n};
        struct ss_pwgroup *g = SS_PW_FIND(&w->groups[index], ss_pwgroup, prefix, by);
        for (struct ss_pwpat *p = g ? g->first : NULL; p; p = p->gnext) {
            w->tried++;
            if (!ss_pattern_match(p->pat, key.data, key.len))
                continue;
            if (fn == NULL)
                return true;
            any = true;
            ss_bytes text = {p->text, p->len};
            ss_watch_each(w->regs, text, ss_pwatch__tell, &k);
        }
    }
    return any;
}

void ss_pwatch_each(ss_pwatch *w, ss_bytes key, ss_pwatch_fn fn, void *ctx)
{
    ss_pwatch__walk(w, key, fn, ctx);
}

bool ss_pwatch_any(ss_pwatch *w, ss_bytes key)
{
    return ss_pwatch__walk(w, key, NULL, NULL);
}

size_t ss_pwatch_count(const ss_pwatch *w)
{
    return ss_watch_count(w->regs);
}

size_t ss_pwatch_client_count(const ss_pwatch *w, ss_bytes client)
{
    return ss_watch_client_count(w->regs, client);
}

size_t ss_pwatch_pattern_count(const ss_pwatch *w)
{
    return w->pats.count;
}

uint64_t ss_pwatch_matches_tried(const ss_pwatch *w)
{
    return w->tried;
}

void ss_pwatch_free(ss_pwatch *w)
{
    if (w == NULL)
        return;
    ss_table *tables[] = {&w->clients, &w->pats, &w->groups[0], &w->groups[1]};
    for (size_t t = 0; t < 4; t++) {
        for (size_t i = 0; tables[t]->buckets && i <= tables[t]->mask; i++) {
            for (ss_table_node *n = tables[t]->buckets[i], *next; n; n = next) {
                next = n->next;
                if (t == 0)
                    free(((struct ss_pwclient *)n)->username);
                if (t == 1)
                    ss_pattern_free(((struct ss_pwpat *)n)->pat);
                free(n);
            }
        }
        ss_table_free(tables[t]);
    }
    ss_watch_free(w->regs);
    free(w);
}
