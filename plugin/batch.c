/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* batch.c - the life of a request: run, queue, commit, answer (batch.h).
 *
 * Batches are numbered; the open one is b->seq. An answer or notification
 * that depends on the open batch's commit records that number in the
 * outbox (0: it depends on nothing), so that a failed commit turns exactly
 * those into errors.
 */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/command.h"
#include "../core/errors.h"
#include "../etcd/backend_etcd.h"
#include "admin.h"
#include "backup.h"
#include "committer.h"
#include "notify.h"
#include "outbox.h"
#include "plugin.h"
#include "waker.h"

/* Answer buffer memory kept between requests. */
#define SS_SCRATCH_KEEP ((size_t)64 << 10)
/* Due keys counted for the metrics at most. */
#define SS_DUE_COUNT_CAP 10000u
/* Expired keys deleted per tick at most. */
#define SS_SWEEP_PER_TICK 1000u
/* etcd: queued requests whose keys are read ahead (see ss_batch__prefetch). */
#define SS_PREFETCH_AHEAD 256u

/* A request waiting for the commit under way; owns copies of everything. */
struct ss_queued {
    struct ss_request_props r;
    uint8_t *payload;
    size_t len;
    char *client_id;
    char *username;
    bool gone; /* its client disconnected meanwhile */
};

struct ss_qlist {
    struct ss_queued *items;
    size_t len, cap;
};

/* etcd: a batch whose commit is in flight (etcd/backend_etcd.h). */
struct ss_flight {
    bool used;
    unsigned slot;       /* the backend's flight */
    uint64_t seq;        /* the batch's number */
    struct ss_qlist ran; /* its requests, to run again on a conflict */
    uint64_t dedup_after, dedup_upto; /* its resend cache entries: (after, upto] */
    uint64_t commit_us;  /* when its commit was sent */
};

struct ss_batch {
    struct ss_plugin *p;
    struct ss_committer committer;
    struct ss_outbox outbox;
    struct ss_qlist queue;
    uint64_t queue_bytes; /* payloads and properties held */
    size_t prefetched;    /* etcd: queued requests whose keys were read ahead */
    /* etcd: copies of the requests run in the open batch, to run again if
     * its commit finds that someone else changed their keys. */
    struct ss_qlist ran;
    struct ss_flight flights[SS_BACKEND_ETCD_FLIGHTS];
    uint64_t seq;        /* number of the open batch */
    uint64_t dedup_mark; /* resend cache entries after it belong to the open batch */
    ss_buf scratch;      /* the engine's answer */
};

void ss_request_props_free(struct ss_request_props *r)
{
    free(r->response_topic);
    free(r->corr);
    free(r->ts);
    free(r->ft);
    free(r->prot_ver);
    memset(r, 0, sizeof *r);
}

static ss_bytes ss_batch__str(const char *s)
{
    ss_bytes b = {(const uint8_t *)(s ? s : ""), s ? strlen(s) : 0};
    return b;
}

/* ---- answers ----------------------------------------------------------- */

/* Queue an answer waiting for commit (0: none; final: it waits but holds
 * whatever becomes of the commit, outbox.h): the request's response topic
 * and correlation data are handed over to it, not copied. */
static void ss_batch__push(struct ss_batch *b, struct ss_request_props *r, uint8_t *payload, size_t len,
                           mosquitto_property *props, uint64_t commit, bool final)
{
    char *topic = r->response_topic;
    uint8_t *corr = r->corr;
    uint16_t corr_len = r->corr_len;
    r->response_topic = NULL;
    r->corr = NULL;
    r->corr_len = 0;
    if (ss_outbox_push(&b->outbox, NULL, topic, payload, len, props, corr, corr_len, commit, final) !=
        MOSQ_ERR_SUCCESS)
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: an answer was dropped");
}

static void ss_batch__answer(struct ss_batch *b, struct ss_request_props *r, const ss_bytes *payload,
                             const char *version, uint64_t commit, bool final)
{
    mosquitto_property *props = ss_response_props(r->corr, r->corr_len, "200", version);
    uint8_t *copy = malloc(payload->len);
    if (props == NULL || copy == NULL) {
        mosquitto_property_free_all(&props);
        free(copy);
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: an answer was dropped");
        return;
    }
    memcpy(copy, payload->data, payload->len);
    ss_batch__push(b, r, copy, payload->len, props, commit, final);
}

void ss_batch_refuse(struct ss_batch *b, struct ss_request_props *r, const char *stat,
                     const char *const *extra)
{
    mosquitto_property *props = ss_response_props(r->corr, r->corr_len, stat, NULL);
    for (size_t i = 0; props && extra[i]; i += 2) {
        if (mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, extra[i], extra[i + 1]) !=
            MOSQ_ERR_SUCCESS)
            mosquitto_property_free_all(&props);
    }
    /* The payload is never empty: it repeats the status message. */
    const char *text = "error";
    for (size_t i = 0; extra[i]; i += 2)
        if (strcmp(extra[i], "__stMsg") == 0)
            text = extra[i + 1];
    uint8_t *payload = (uint8_t *)strdup(text);
    if (props == NULL || payload == NULL) {
        mosquitto_property_free_all(&props);
        free(payload);
        return;
    }
    ss_batch__push(b, r, payload, strlen(text), props, 0, false);
}

void ss_batch_notify(struct ss_batch *b, char *client_id, char *topic, uint8_t *payload, size_t len,
                     mosquitto_property *props)
{
    /* From the change feed: committed already, it waits for nothing. */
    if (ss_outbox_push(&b->outbox, client_id, topic, payload, len, props, NULL, 0, 0, false) !=
        MOSQ_ERR_SUCCESS) {
        b->p->metrics.notifications_dropped++;
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: a notification was dropped");
    }
}

/* ---- running a request ------------------------------------------------- */

/* The batch whose fate an answer remembered at dedup mark seq shares: the
 * open one, one in flight, or none (0: committed before). */
static uint64_t ss_batch__remembered_in(const struct ss_batch *b, uint64_t seq)
{
    if (seq > b->dedup_mark)
        return b->seq;
    for (size_t i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++) {
        const struct ss_flight *f = &b->flights[i];
        if (f->used && seq > f->dedup_after && seq <= f->dedup_upto)
            return f->seq;
    }
    return 0;
}

/* The resend cache's identity of a request: client, correlation data and
 * everything else it carried. */
static uint64_t ss_batch__request_id(struct ss_plugin *p, ss_bytes client, ss_bytes corr,
                                     const struct ss_request_from *in, const struct ss_request_props *r)
{
    /* Absent and empty differ. */
    uint8_t flags = (uint8_t)((r->ts != NULL) | (r->ft != NULL) << 1 | (r->prot_ver != NULL) << 2);
    ss_bytes parts[6] = {{in->payload, in->len},       ss_batch__str(r->response_topic),
                         ss_batch__str(r->ts),         ss_batch__str(r->ft),
                         ss_batch__str(r->prot_ver),   {&flags, 1}};
    return ss_dedup_id(p->dedup, client, corr, parts, 6);
}

/* Run one request. False when it must run again later (its read is under
 * way, or the key changed after it was decided): nothing was answered.
 * *held: its answer shares the open batch's fate (command.h); one that
 * does not was answered for good and never runs again. */
static bool ss_batch__execute(struct ss_batch *b, const struct ss_request_from *in, bool gone,
                              struct ss_request_props *r, bool *held)
{
    struct ss_plugin *p = b->p;
    const char *client_id = in->client_id;
    ss_bytes client = ss_batch__str(client_id);
    ss_bytes corr = {r->corr, r->corr_len};
    uint64_t now = ss_wall_ms();
    struct ss_caller who = {client_id, in->username, gone};
    ss_exec x = {.payload = in->payload, .payload_len = in->len, .ts = ss_batch__str(r->ts),
                 .ft = ss_batch__str(r->ft), .now_ms = now, .caller = &who,
                 .response = &b->scratch};
    if (r->ts == NULL)
        x.ts.data = NULL;
    if (r->ft == NULL)
        x.ft.data = NULL;
    /* What is never remembered (GETs, below) never finds an entry either:
     * it skips the cache, half of a typical load. */
    ss_engine_parse(p->engine, &x);
    const ss_command_traits *traits = ss_command_traits_of(x.command);
    bool cached = traits->remembered;
    *held = traits->held;
    uint64_t id = cached ? ss_batch__request_id(p, client, corr, in, r) : 0;
    ss_dedup_answer prior;
    if (cached && ss_dedup_find(p->dedup, client, corr, id, now, &prior)) {
        char version[SS_HLC_TEXT_MAX + 1];
        memcpy(version, prior.version.data, prior.version.len);
        version[prior.version.len] = '\0';
        ss_log(p, MOSQ_LOG_DEBUG, "client %s resent a request: answered again", client_id);
        p->metrics.resends++;
        /* Remembered before the open batch: its request was committed, so
         * its answer is final whatever becomes of this batch (a failed
         * commit must not tell the client that a durable write failed).
         * Remembered in the open batch: it shares that batch's fate. */
        ss_batch__answer(b, r, &prior.payload, prior.version.len ? version : NULL,
                         ss_batch__remembered_in(b, prior.seq), prior.final);
        return true;
    }
    ss_buf_clear(&b->scratch);
    int rc = ss_engine_exec(p->engine, &x);
    if (rc == SS_E_PENDING || rc == SS_E_CONFLICT)
        return false;
    if (rc == SS_E_NOMEM) {
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: a request from %s was not answered", client_id);
        return true;
    }
    ss_metrics_request(&p->metrics, x.command, rc, b->scratch.data, b->scratch.len);
    if (rc == SS_E_QUOTA && in->len > p->opt.max_value_bytes)
        ss_log(p, MOSQ_LOG_WARNING,
               "request from %s refused: a value may have at most %llu bytes so that its "
               "notifications fit the broker's message_size_limit",
               client_id, (unsigned long long)p->opt.max_value_bytes);
    else if (rc == SS_E_QUOTA && x.cmd.key.len > p->opt.max_key_length)
        ss_log(p, MOSQ_LOG_NOTICE, "request from %s refused: a key of %zu bytes is longer than "
               "max_key_length (%llu)", client_id, x.cmd.key.len,
               (unsigned long long)p->opt.max_key_length);
    else if (rc == SS_E_QUOTA)
        ss_log(p, MOSQ_LOG_NOTICE, "request from %s refused: %s", client_id,
               p->store ? ss_store_cause(p->store) : ss_strerror(rc));
    else if (rc != SS_OK)
        ss_log(p, MOSQ_LOG_INFO, "request from %s refused: %s", client_id, ss_strerror(rc));
    char version[SS_HLC_TEXT_MAX + 1] = "";
    if (x.has_version)
        version[ss_hlc_format(&x.version, version)] = '\0';
    ss_bytes answer = {b->scratch.data, b->scratch.len};
    /* Which answers are remembered is the command table's choice
     * (core/command.c). Remembered before answering, as the answer takes
     * over the correlation data. */
    ss_dedup_answer a = {.payload = answer, .version = ss_batch__str(version), .final = !*held};
    if (cached && ss_dedup_put(p->dedup, client, corr, id, now, &a) != SS_OK)
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: a request will not be recognised if resent");
    /* An answer that does not depend on the commit still waits for it, so
     * that a client's answers keep the order of its requests. */
    ss_batch__answer(b, r, &answer, x.has_version ? version : NULL, b->seq, !*held);
    /* The answer was copied. A GET of a huge value grew the buffer to the
     * value's size (rounded up): give that memory back, so that one big
     * read does not keep the broker large for good. */
    if (b->scratch.cap > SS_SCRATCH_KEEP)
        ss_buf_free(&b->scratch);
    return true;
}

/* ---- the queue of requests that wait for a commit under way ---------- */

static char *ss_batch__strdup_or_null(const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *c = strdup(s);
    if (c == NULL)
        *failed = true;
    return c;
}

/* What a queued request holds, roughly: for the queue's bound. */
static uint64_t ss_batch__queued_size(const struct ss_queued *e)
{
    size_t n = sizeof *e + e->len + e->r.corr_len;
    const char *strs[] = {e->client_id, e->username, e->r.response_topic,
                          e->r.ts,        e->r.ft,     e->r.prot_ver};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        n += strs[i] ? strlen(strs[i]) + 1 : 0;
    return n;
}

/* Room for one more item at the end of q (not counted yet), or NULL. */
static struct ss_queued *ss_batch__slot(struct ss_qlist *q, size_t more)
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
static bool ss_batch__hold(struct ss_queued *e, const struct ss_request_from *in, bool gone)
{
    bool failed = false;
    e->payload = malloc(in->len ? in->len : 1);
    e->client_id = ss_batch__strdup_or_null(in->client_id, &failed);
    e->username = ss_batch__strdup_or_null(in->username, &failed);
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

/* Keep a request for the next batch; takes what r holds. */
static void ss_batch__enqueue(struct ss_batch *b, const struct ss_request_from *in,
                              struct ss_request_props *r)
{
    struct ss_queued *e = ss_batch__slot(&b->queue, 1);
    if (e == NULL || !ss_batch__hold(e, in, false)) {
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: a request from %s was not answered",
               in->client_id);
        ss_request_props_free(r);
        return;
    }
    e->r = *r;
    memset(r, 0, sizeof *r); /* now the queue's */
    b->queue.len++;
    b->queue_bytes += ss_batch__queued_size(e);
}

static void ss_batch__queued_free(struct ss_queued *e)
{
    ss_request_props_free(&e->r);
    free(e->payload);
    free(e->client_id);
    free(e->username);
}

static void ss_batch__qlist_clear(struct ss_qlist *q)
{
    for (size_t i = 0; i < q->len; i++)
        ss_batch__queued_free(&q->items[i]);
    q->len = 0;
}

/* A copy of r that owns its own memory. */
static bool ss_batch__props_dup(const struct ss_request_props *r, struct ss_request_props *out)
{
    bool failed = false;
    memset(out, 0, sizeof *out);
    out->response_topic = ss_batch__strdup_or_null(r->response_topic, &failed);
    out->ts = ss_batch__strdup_or_null(r->ts, &failed);
    out->ft = ss_batch__strdup_or_null(r->ft, &failed);
    out->prot_ver = ss_batch__strdup_or_null(r->prot_ver, &failed);
    out->has_corr = r->has_corr;
    if (r->corr_len) {
        if ((out->corr = malloc(r->corr_len)) == NULL)
            failed = true;
        else
            memcpy(out->corr, r->corr, r->corr_len);
        out->corr_len = r->corr_len;
    }
    if (failed)
        ss_request_props_free(out);
    return !failed;
}

/* Run a request in the open batch. On etcd, a copy is kept until the
 * batch's commit settles: if the commit finds data changed by someone
 * else, the request runs again (ss_batch__rerun). */
static bool ss_batch__run(struct ss_batch *b, const struct ss_request_from *in, bool gone,
                          struct ss_request_props *r)
{
    bool held;
    if (b->p->store)
        return ss_batch__execute(b, in, gone, r, &held);
    struct ss_queued *e = ss_batch__slot(&b->ran, 1);
    struct ss_queued copy;
    bool kept = e && ss_batch__hold(&copy, in, gone);
    if (kept && !ss_batch__props_dup(r, &copy.r)) {
        free(copy.payload);
        free(copy.client_id);
        free(copy.username);
        kept = false;
    }
    if (!kept)
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: a request from %s is not kept to run again "
               "on a conflict", in->client_id);
    bool done = ss_batch__execute(b, in, gone, r, &held);
    if (done && kept && held)
        b->ran.items[b->ran.len++] = copy;
    else if (kept)
        ss_batch__queued_free(&copy);
    return done;
}

/* etcd: start reading the keys of the requests queued behind one that
 * waits for its key (up to SS_PREFETCH_AHEAD of them), so that their
 * reads overlap instead of following each other. Each queued request is
 * looked at once: b->prefetched counts those, from the queue's front. */
static void ss_batch__prefetch(struct ss_batch *b, size_t from)
{
    ss_codec_limits lim = ss_codec_limits_default();
    size_t start = b->prefetched > from ? b->prefetched : from;
    size_t end = b->queue.len - from > SS_PREFETCH_AHEAD ? from + SS_PREFETCH_AHEAD : b->queue.len;
    for (size_t i = start; i < end; i++) {
        const struct ss_queued *e = &b->queue.items[i];
        ss_request req;
        ss_command cmd;
        size_t used;
        if (ss_codec_decode_request(e->payload, e->len, &lim, &req, &used) == SS_OK &&
            ss_command_parse(&req, &cmd) == SS_OK && cmd.type != SS_CMD_KEYNOTIFY &&
            cmd.type != SS_CMD_SCAN)
            ss_backend_etcd_prefetch(b->p->backend, cmd.key);
    }
    if (end > b->prefetched)
        b->prefetched = end;
}

/* Run the requests that waited for the last commit, in arrival order. One
 * that must run again (backend.h) stops the run: it and every later one
 * stay queued, in order, so that no request overtakes an earlier one. */
static void ss_batch__run_queue(struct ss_batch *b)
{
    size_t done = 0;
    while (done < b->queue.len) {
        struct ss_queued *e = &b->queue.items[done];
        struct ss_request_from in = {e->payload, e->len, e->client_id, e->username};
        if (!ss_batch__run(b, &in, e->gone, &e->r)) {
            if (b->p->store == NULL)
                ss_batch__prefetch(b, done + 1);
            break;
        }
        b->queue_bytes -= ss_batch__queued_size(e);
        ss_batch__queued_free(e);
        done++;
    }
    if (done == 0)
        return; /* nothing ran (an empty queue has no array at all) */
    memmove(b->queue.items, b->queue.items + done, (b->queue.len - done) * sizeof b->queue.items[0]);
    b->queue.len -= done;
    b->prefetched = b->prefetched > done ? b->prefetched - done : 0;
    if (b->queue.len == 0)
        b->queue_bytes = 0;
}

static void ss_batch__mark_gone(struct ss_qlist *q, const char *client_id)
{
    for (size_t i = 0; i < q->len; i++)
        if (strcmp(q->items[i].client_id, client_id) == 0)
            q->items[i].gone = true;
}

void ss_batch_client_gone(struct ss_batch *b, const char *client_id)
{
    ss_batch__mark_gone(&b->queue, client_id);
    ss_batch__mark_gone(&b->ran, client_id);
    for (size_t i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        ss_batch__mark_gone(&b->flights[i].ran, client_id);
}

/* ---- commits ----------------------------------------------------------- */

/* Log a failed commit with its cause. A checkpoint that fails loses
 * nothing (the journal keeps what it would have written into the data
 * file) and is tried again later: say so, rather than speak of failed
 * requests when there were none. */
static void ss_batch__log_failure(struct ss_batch *b, uint64_t seq, int rc, bool ckpt)
{
    struct ss_plugin *p = b->p;
    /* On etcd (no local store) the backend logged the cause itself. */
    const char *cause = p->store ? ss_store_cause(p->store) : "";
    const char *answers = ss_outbox_count(&b->outbox, seq) ? "; the requests of its batch are answered with an error" : "";
    uint64_t retry;
    if (ckpt && p->store && ss_store_checkpoint_failing(p->store, &retry)) {
        uint64_t now = ss_wall_ms();
        ss_log(p, MOSQ_LOG_ERR,
               "checkpoint failed (%s); the journal keeps every acknowledged write; next try in "
               "%llu ms%s", cause[0] ? cause : ss_strerror(rc),
               (unsigned long long)(retry > now ? retry - now : 0), answers);
    } else {
        ss_log(p, MOSQ_LOG_ERR, "a write to the store failed (%s)%s",
               cause[0] ? cause : ss_strerror(rc), answers);
    }
}

/* Publish what waits for nothing any more: on etcd, the answers of the
 * open batch and of those in flight stay. */
static void ss_batch__flush(struct ss_batch *b)
{
    if (b->outbox.len == 0)
        return;
    if (b->p->store) {
        ss_outbox_flush(&b->outbox, b->p);
        return;
    }
    uint64_t held[SS_BACKEND_ETCD_FLIGHTS + 1];
    size_t n = 0;
    held[n++] = b->seq;
    for (size_t i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        if (b->flights[i].used)
            held[n++] = b->flights[i].seq;
    ss_outbox_flush_except(&b->outbox, b->p, held, n);
}

/* A batch's commit ended with rc (its resend cache entries after mark
 * `after` up to `upto`): publish what waited for it (or its errors). */
static void ss_batch__ended(struct ss_batch *b, uint64_t seq, uint64_t after, uint64_t upto, int rc, bool ckpt)
{
    struct ss_plugin *p = b->p;
    if (rc != SS_OK) {
        if (ss_outbox_count(&b->outbox, seq))
            p->metrics.commits_failed++;
        ss_batch__log_failure(b, seq, rc, ckpt);
        ss_outbox_fail(&b->outbox, seq, rc);
        ss_dedup_forget_range(p->dedup, after, upto);
    }
    /* The change feed: what was committed notifies its observers, after
     * the answers (a writer hears of its write before its observers). */
    p->backend->ops->settled(p->backend->impl, rc);
    ss_backend_deliver(p->backend, ss_notify_change, p);
    ss_batch__flush(b);
    /* Between batches: the store holds what is committed, nothing else. */
    ss_admin_serve(p);
    ss_backup_step(p);
}

/* The open batch's commit ended with rc: publish what waited for it (or
 * its errors), and open the next. */
static void ss_batch__settle(struct ss_batch *b, int rc, bool ckpt)
{
    uint64_t seq = b->seq;
    b->seq++; /* its answers are no longer held back */
    ss_batch__ended(b, seq, b->dedup_mark, UINT64_MAX, rc, ckpt);
    ss_batch__qlist_clear(&b->ran);
    b->dedup_mark = ss_dedup_mark(b->p->dedup);
}

/* etcd: the commit of flight f ended with rc (not a conflict). */
static void ss_batch__settle_flight(struct ss_batch *b, struct ss_flight *f, int rc)
{
    f->used = false; /* its answers are no longer held back */
    ss_batch__ended(b, f->seq, f->dedup_after, f->dedup_upto, rc, false);
    ss_batch__qlist_clear(&f->ran);
}

/* Finish the commit under way, whose run returned rc, and settle. */
static void ss_batch__finish(struct ss_batch *b, int rc)
{
    struct ss_plugin *p = b->p;
    bool ckpt = ss_store_commit_is_checkpoint(p->store);
    bool was_failing = ckpt && ss_store_checkpoint_failing(p->store, NULL);
    bool was_lost = ckpt && ss_store_sync_lost(p->store);
    rc = ss_store_commit_finish(p->store, rc, ss_wall_ms());
    if (was_failing && rc == SS_OK)
        ss_log(p, MOSQ_LOG_NOTICE, "checkpoint succeeded again: the journal is in the data file");
    if (was_lost && rc == SS_OK)
        ss_log(p, MOSQ_LOG_NOTICE, "checkpoint after the failed fsync succeeded: every "
                                   "acknowledged write is on disk again");
    ss_batch__settle(b, rc, ckpt);
}

/* The commit under way on the thread is done (its result rc): publish,
 * then run the queue as the next batch. */
static void ss_batch__committed(struct ss_batch *b, int rc)
{
    ss_metrics_latency(&b->p->metrics.commit, b->committer.job_us);
    ss_batch__finish(b, rc);
    ss_batch__run_queue(b);
}

/* Wait for the commit under way, publish its answers and run the queued
 * requests as the next batch (not handed over yet). */
static void ss_batch__wait(struct ss_batch *b)
{
    int rc;
    if (!b->committer.pending)
        return;
    ss_committer_wait(&b->committer, &rc);
    ss_batch__committed(b, rc);
}

/* Is a commit under way with its batch closed? (On etcd a new batch
 * opens as soon as one goes in flight.) */
static bool ss_batch__busy(const struct ss_batch *b)
{
    return b->committer.pending;
}

void ss_batch_submit(struct ss_batch *b, const struct ss_request_from *from, struct ss_request_props *r)
{
    /* While a commit is under way its batch is closed: wait for the next.
     * A full queue waits for the commit here instead, which also stops the
     * broker reading more (slow disk, flood of requests). */
    if (b->committer.pending && b->queue_bytes >= b->p->opt.max_queued_bytes)
        ss_batch__wait(b);
    /* On etcd the broker's thread never waits for the network: past the
     * bound, a request is refused as the cluster not keeping up. */
    if (b->p->store == NULL && b->queue_bytes >= b->p->opt.max_queued_bytes) {
        ss_buf err = SS_BUF_INIT;
        if (ss_codec_put_error(&err, SS_E_UNAVAILABLE) == SS_OK) {
            ss_bytes answer = {err.data, err.len};
            ss_batch__answer(b, r, &answer, NULL, 0, false);
        }
        ss_buf_free(&err);
        ss_request_props_free(r);
        return;
    }
    if (ss_batch__busy(b) || b->queue.len) {
        ss_batch__enqueue(b, from, r); /* behind the ones waiting: in order */
        return;
    }
    if (ss_batch__run(b, from, false, r))
        ss_request_props_free(r);
    else
        ss_batch__enqueue(b, from, r);
}

/* etcd: the commit of flight f found keys changed by someone else and
 * wrote nothing. Its answers are forgotten and its requests run again,
 * first and in their order, on fresh data. (Later requests on other keys
 * may have run meanwhile; none on its keys, which were in flight.) */
static void ss_batch__rerun(struct ss_batch *b, struct ss_flight *f)
{
    struct ss_plugin *p = b->p;
    f->used = false;
    ss_outbox_drop(&b->outbox, f->seq);
    ss_dedup_forget_range(p->dedup, f->dedup_after, f->dedup_upto);
    struct ss_qlist *ran = &f->ran;
    if (ran->len && ss_batch__slot(&b->queue, ran->len) == NULL) {
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: %zu requests were not answered", ran->len);
        ss_batch__qlist_clear(ran);
    }
    if (ran->len) {
        memmove(b->queue.items + ran->len, b->queue.items, b->queue.len * sizeof b->queue.items[0]);
        memcpy(b->queue.items, ran->items, ran->len * sizeof b->queue.items[0]);
        for (size_t i = 0; i < ran->len; i++)
            b->queue_bytes += ss_batch__queued_size(&ran->items[i]);
        b->queue.len += ran->len;
        b->prefetched = 0;
        ran->len = 0;
    }
}

/* etcd: the open batch went in flight in the backend's slot. */
static void ss_batch__fly(struct ss_batch *b, unsigned slot)
{
    struct ss_flight *f = NULL;
    for (size_t i = 0; i < SS_BACKEND_ETCD_FLIGHTS && f == NULL; i++)
        if (!b->flights[i].used)
            f = &b->flights[i];
    /* The backend has no more flights than these. */
    struct ss_qlist spare = f->ran;
    f->used = true;
    f->slot = slot;
    f->seq = b->seq;
    f->ran = b->ran;
    b->ran = spare;
    b->ran.len = 0;
    f->dedup_after = b->dedup_mark;
    f->dedup_upto = ss_dedup_mark(b->p->dedup);
    f->commit_us = ss_mono_us();
    b->seq++;
    b->dedup_mark = f->dedup_upto;
}

/* The tick on etcd: collect what the cluster answered, settle the
 * commits that ended (oldest first), run what waited, and commit the open
 * batch as one Txn in a flight of its own when one is free
 * (etcd/backend_etcd.h). */
static void ss_batch__tick_etcd(struct ss_batch *b, uint64_t now)
{
    struct ss_plugin *p = b->p;
    ss_backend *be = p->backend;
    ss_waker_seen(&p->waker); /* before looking: a call that ends later wakes us again */
    ss_backend_etcd_poll(be, now);
    int rc;
    for (;;) {
        struct ss_flight *f = NULL;
        for (size_t i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++) {
            struct ss_flight *g = &b->flights[i];
            if (g->used && ss_backend_etcd_flight_done(be, g->slot) && (f == NULL || g->seq < f->seq))
                f = g;
        }
        if (f == NULL || !ss_backend_etcd_commit_done(be, f->slot, &rc))
            break;
        ss_metrics_latency(&p->metrics.commit, ss_mono_us() - f->commit_us);
        if (rc == SS_E_CONFLICT)
            ss_batch__rerun(b, f);
        else
            ss_batch__settle_flight(b, f, rc);
    }
    if (b->queue.len)
        ss_batch__run_queue(b);
    int n = ss_engine_expire(p->engine, now, SS_SWEEP_PER_TICK);
    if (n < 0)
        ss_log(p, MOSQ_LOG_ERR, "expiry sweep failed: %s", ss_strerror(n));
    unsigned slot = 0;
    rc = ss_backend_etcd_commit_start(be, now, &slot);
    if (rc == SS_OK)
        ss_batch__fly(b, slot);
    else if (rc == SS_E_NOTFOUND)
        ss_batch__settle(b, SS_OK, false); /* nothing to write or check */
    else if (rc != SS_E_PENDING && rc != SS_E_BUSY)
        ss_batch__settle(b, rc, false);
    ss_dedup_expire(p->dedup, now);
}

void ss_batch_tick(struct ss_batch *b, uint64_t now)
{
    struct ss_plugin *p = b->p;
    struct ss_committer *c = &b->committer;
    if (p->store == NULL) {
        ss_batch__tick_etcd(b, now);
        return;
    }
    if (c->pending) {
        int rc;
        if (!ss_committer_collect(c, &rc))
            return; /* still writing: its answers wait */
        ss_batch__committed(b, rc);
    } else if (c->syncing) {
        int rc;
        if (ss_committer_collect(c, &rc)) {
            ss_metrics_latency(&p->metrics.fsync, c->job_us);
            ss_store_sync_done(p->store, rc);
            if (rc != SS_OK)
                ss_log(p, MOSQ_LOG_ERR,
                       "%s: writes acknowledged since the last good fsync may not be on disk "
                       "(the kernel may drop what it could not write, so a later fsync proves "
                       "nothing); a checkpoint now writes the whole state into the data file",
                       ss_store_cause(p->store));
        }
    }
    /* Requests to run again (backend.h: a read under way, a conflict). */
    if (!c->pending && b->queue.len)
        ss_batch__run_queue(b);
    int n = ss_engine_expire(p->engine, now, SS_SWEEP_PER_TICK);
    if (n < 0)
        ss_log(p, MOSQ_LOG_ERR, "expiry sweep failed: %s", ss_strerror(n));
    /* A checkpoint waits for the disk: only with the thread idle (not
     * beside a periodic fsync of the journal). With nothing to commit, an
     * empty batch carries it. */
    bool idle = !c->syncing;
    if (idle && !ss_store_in_batch(p->store) && ss_store_checkpoint_due(p->store, now) &&
        ss_store_begin(p->store) != SS_OK)
        idle = false;
    if (ss_store_in_batch(p->store)) {
        /* While checkpoints fail (a full disk), only a batch without
         * requests carries the next try: its failure must not turn the
         * answers of reads and journaled writes into errors. */
        bool may_checkpoint =
            idle && (b->outbox.len == 0 || !ss_store_checkpoint_failing(p->store, NULL));
        int rc = ss_store_commit_prepare(p->store, now, may_checkpoint);
        if (rc != SS_OK) {
            ss_batch__settle(b, rc, false);
        } else if (ss_store_commit_syncs(p->store)) {
            ss_committer_submit(c, SS_JOB_COMMIT);
            /* Done already when it ran here, no thread having started:
             * its answers need not wait for the next iteration. */
            int rc2;
            if (ss_committer_collect(c, &rc2))
                ss_batch__committed(b, rc2);
        } else {
            uint64_t t0 = ss_mono_us();
            int rc2 = ss_store_commit_run(p->store);
            ss_metrics_latency(&p->metrics.commit, ss_mono_us() - t0);
            ss_batch__finish(b, rc2);
        }
    } else {
        ss_batch__settle(b, SS_OK, false); /* answers that needed no batch (KEYNOTIFY) */
    }
    if (p->opt.sync == SS_SYNC_PERIODIC && !c->pending && !c->syncing &&
        ss_store_sync_start(p->store, now))
        ss_committer_submit(c, SS_JOB_SYNC);
    ss_dedup_expire(p->dedup, now);
}

bool ss_batch_committing(const struct ss_batch *b)
{
    return b->committer.pending;
}

uint64_t ss_batch_due_count(struct ss_batch *b, uint64_t now_ms)
{
    /* While a commit runs the store is the committing thread's. */
    if (b->p->store == NULL)
        return 0;
    return b->committer.pending ? 0 : ss_store_due_count(b->p->store, now_ms, SS_DUE_COUNT_CAP);
}

/* ---- start and stop ---------------------------------------------------- */

int ss_batch_new(struct ss_plugin *p, struct ss_batch **out)
{
    struct ss_batch *b = calloc(1, sizeof *b);
    if (b == NULL)
        return SS_E_NOMEM;
    b->p = p;
    b->seq = 1;
    b->dedup_mark = ss_dedup_mark(p->dedup);
    int rc = ss_committer_start(&b->committer, p->store, p->store && p->opt.sync == SS_SYNC_ALWAYS);
    if (rc != SS_OK) {
        free(b);
        return rc;
    }
    *out = b;
    return SS_OK;
}

void ss_batch_free(struct ss_batch *b)
{
    if (b == NULL)
        return;
    struct ss_plugin *p = b->p;
    struct ss_committer *c = &b->committer;
    if (c->pending || c->syncing) {
        /* A job under way completes; a commit's answers can no longer go
         * out. (Closing the store syncs in any case.) */
        int rc = SS_OK;
        bool commit = c->pending;
        ss_committer_stop(c);
        ss_committer_collect(c, &rc);
        if (commit && ss_store_commit_finish(p->store, rc, ss_wall_ms()) != SS_OK)
            ss_log(p, MOSQ_LOG_ERR, "the last commit failed at shutdown: %s", ss_store_cause(p->store));
    }
    ss_committer_destroy(c);
    /* Requests never run were never answered. */
    ss_batch__qlist_clear(&b->queue);
    free(b->queue.items);
    ss_batch__qlist_clear(&b->ran);
    free(b->ran.items);
    for (size_t i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++) {
        ss_batch__qlist_clear(&b->flights[i].ran);
        free(b->flights[i].ran.items);
    }
    if (p->store == NULL) {
        /* etcd: nothing of the open batch was acknowledged; dropping it
         * is what a lost connection would do. A commit under way ends
         * in etcd or not at all, unanswered either way. */
        ss_engine_abort(p->engine);
    } else if (ss_store_in_batch(p->store)) {
        /* What was executed is committed, but its answers are not sent:
         * the broker no longer delivers messages during a plugin's
         * cleanup. A client that resends after reconnecting runs its
         * request again (the resend cache does not outlive the broker:
         * docs/SEMANTICS.md). */
        if (ss_engine_commit(p->engine, ss_wall_ms()) != SS_OK)
            ss_log(p, MOSQ_LOG_ERR, "the last batch could not be committed at shutdown: %s",
                   ss_store_cause(p->store));
    }
    ss_outbox_free(&b->outbox);
    ss_buf_free(&b->scratch);
    free(b);
}
