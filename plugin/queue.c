/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* queue.c - requests kept for later, with copies of all they carry
 * (queue.h). */
#include "queue.h"

#include <stdlib.h>
#include <string.h>

static char *ss_queue__strdup_or_null(const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *c = strdup(s);
    if (c == NULL)
        *failed = true;
    return c;
}

/* What a queued request holds, roughly: for the queue's bound. */
uint64_t ss_queued_size(const struct ss_queued *e)
{
    size_t n = sizeof *e + e->len + e->r.corr_len;
    const char *strs[] = {e->client_id, e->username, e->r.response_topic,
                          e->r.ts,        e->r.ft,     e->r.prot_ver};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        n += strs[i] ? strlen(strs[i]) + 1 : 0;
    return n;
}

/* Room for one more item at the end of q (not counted yet), or NULL. */
struct ss_queued *ss_qlist_reserve(struct ss_qlist *q, size_t more)
{
    if (q->len + more > q->cap) {
        size_t cap = q->cap ? q->cap : 64;
        while (cap < q->len + more)
            cap *= 2;
        struct ss_queued *items = realloc(q->items, cap * sizeof *items);
        if (items == NULL)
            return NULL;
        q->items = items;
        q->cap = cap;
    }
    return &q->items[q->len];
}

/* Copy what a request came with into e (its properties are r's, taken
 * or copied by the caller). False when memory ran out. */
bool ss_queued_hold(struct ss_queued *e, const struct ss_request_from *in, bool gone)
{
    bool failed = false;
    e->payload = malloc(in->len ? in->len : 1);
    e->client_id = ss_queue__strdup_or_null(in->client_id, &failed);
    e->username = ss_queue__strdup_or_null(in->username, &failed);
    if (failed || e->payload == NULL) {
        free(e->payload);
        free(e->client_id);
        free(e->username);
        return false;
    }
    if (in->len) /* an empty payload may come as NULL */
        memcpy(e->payload, in->payload, in->len);
    e->len = in->len;
    e->gone = gone;
    return true;
}

void ss_queued_free(struct ss_queued *e)
{
    ss_request_props_free(&e->r);
    free(e->payload);
    free(e->client_id);
    free(e->username);
}

void ss_qlist_clear(struct ss_qlist *q)
{
    for (size_t i = 0; i < q->len; i++)
        ss_queued_free(&q->items[i]);
    q->len = 0;
}

/* A copy of r that owns its own memory. */
bool ss_request_props_dup(const struct ss_request_props *r, struct ss_request_props *out)
{
    bool failed = false;
    memset(out, 0, sizeof *out);
    out->response_topic = ss_queue__strdup_or_null(r->response_topic, &failed);
    out->ts = ss_queue__strdup_or_null(r->ts, &failed);
    out->ft = ss_queue__strdup_or_null(r->ft, &failed);
    out->prot_ver = ss_queue__strdup_or_null(r->prot_ver, &failed);
    out->has_corr = r->has_corr;
    if (r->corr) { /* present, perhaps empty: never NULL then */
        if ((out->corr = malloc(r->corr_len ? r->corr_len : 1)) == NULL)
            failed = true;
        else if (r->corr_len)
            memcpy(out->corr, r->corr, r->corr_len);
        out->corr_len = r->corr_len;
    }
    if (failed)
        ss_request_props_free(out);
    return !failed;
}

void ss_qlist_mark_gone(struct ss_qlist *q, const char *client_id)
{
    for (size_t i = 0; i < q->len; i++)
        if (strcmp(q->items[i].client_id, client_id) == 0)
            q->items[i].gone = true;
}

void ss_qlist_free(struct ss_qlist *q)
{
    ss_qlist_clear(q);
    free(q->items);
    q->items = NULL;
    q->cap = 0;
}

bool ss_qlist_prepend(struct ss_qlist *q, struct ss_qlist *from)
{
    if (from->len == 0)
        return true;
    if (ss_qlist_reserve(q, from->len) == NULL)
        return false;
    memmove(q->items + from->len, q->items, q->len * sizeof q->items[0]);
    memcpy(q->items, from->items, from->len * sizeof q->items[0]);
    q->len += from->len;
    from->len = 0;
    return true;
}
