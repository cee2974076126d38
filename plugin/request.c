/* request.c - MOSQ_EVT_MESSAGE: check a state store request, run it, and
 * queue its answer until the batch commits.
 *
 * Order of checks (PROTOCOL.md section 1): our topic; MQTT 5; a forbidden
 * response topic disconnects the client; an unusable response topic gets
 * no answer (PUBACK 0x87); QoS 0 and missing correlation data get status
 * 400; a foreign protocol major version gets 505; a resent request gets its
 * first answer; everything else runs in the engine.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "plugin.h"

/* What a request carried, copied out of the broker's structures. */
struct ss_req_props {
    char *response_topic;
    void *corr;
    uint16_t corr_len;
    bool has_corr;
    char *ts, *ft, *prot_ver;
};

/* A request to run: what the engine needs besides the properties. */
struct ss_req_in {
    const uint8_t *payload;
    size_t len;
    const char *client_id;
    const char *username; /* NULL when none */
    bool gone;
};

/* A request waiting for the commit under way; owns copies of everything. */
struct ss_queued {
    struct ss_req_props r;
    uint8_t *payload;
    size_t len;
    char *client_id;
    char *username;
    bool gone;
};

struct ss_reqqueue {
    struct ss_queued *items;
    size_t len, cap;
    uint64_t bytes; /* payloads and properties held */
};

static void ss__props_free(struct ss_req_props *r)
{
    free(r->response_topic);
    free(r->corr);
    free(r->ts);
    free(r->ft);
    free(r->prot_ver);
}

/* Keep the first occurrence of a user property we care about. */
static void ss__user_prop(struct ss_req_props *r, char *name, char *value)
{
    char **slot = NULL;
    if (strcmp(name, "__ts") == 0)
        slot = &r->ts;
    else if (strcmp(name, "__ft") == 0)
        slot = &r->ft;
    else if (strcmp(name, "__protVer") == 0)
        slot = &r->prot_ver;
    free(name);
    if (slot && *slot == NULL)
        *slot = value;
    else
        free(value);
}

static void ss__read_props(const mosquitto_property *props, struct ss_req_props *r)
{
    memset(r, 0, sizeof *r);
    for (const mosquitto_property *pr = props; pr; pr = mosquitto_property_next(pr)) {
        int id = mosquitto_property_identifier(pr);
        if (id == MQTT_PROP_RESPONSE_TOPIC && r->response_topic == NULL) {
            mosquitto_property_read_string(pr, MQTT_PROP_RESPONSE_TOPIC, &r->response_topic, false);
        } else if (id == MQTT_PROP_CORRELATION_DATA && !r->has_corr) {
            if (mosquitto_property_read_binary(pr, MQTT_PROP_CORRELATION_DATA, &r->corr, &r->corr_len,
                                               false))
                r->has_corr = true;
        } else if (id == MQTT_PROP_USER_PROPERTY) {
            char *name = NULL, *value = NULL;
            if (mosquitto_property_read_string_pair(pr, MQTT_PROP_USER_PROPERTY, &name, &value, false))
                ss__user_prop(r, name, value);
        }
    }
}

static bool ss__forbidden_topic(const char *t)
{
    return strcmp(t, SS_REQUEST_TOPIC) == 0 ||
           strncmp(t, SS_NOTIFY_PREFIX, sizeof SS_NOTIFY_PREFIX - 1) == 0;
}

/* What mosquitto_pub_topic_check accepts in the broker (no wildcard, at
 * most SS_TOPIC_LEVELS_MAX slashes, which keeps its topic matching shallow),
 * and not empty: checked here with the C library's scans, which are several
 * times faster than that function's byte loop on every answer. */
static bool ss__usable_topic(const char *t)
{
    size_t n = t ? strlen(t) : 0;
    if (n == 0 || n > SS_TOPIC_MAX || strcspn(t, "+#") != n)
        return false;
    unsigned slashes = 0;
    for (const char *s = memchr(t, '/', n); s; s = memchr(s + 1, '/', n - (size_t)(s + 1 - t)))
        if (++slashes > SS_TOPIC_LEVELS_MAX)
            return false;
    return true;
}

/* Queue an answer: the request's response topic and correlation data are
 * handed over to it, not copied (so r loses them). */
static void ss__push(struct ss_plugin *p, struct ss_req_props *r, uint8_t *payload, size_t len,
                     mosquitto_property *props, bool engine_answer)
{
    char *topic = r->response_topic;
    uint8_t *corr = r->corr;
    uint16_t corr_len = r->corr_len;
    r->response_topic = NULL;
    r->corr = NULL;
    r->corr_len = 0;
    if (ss_outbox_push(&p->outbox, NULL, topic, payload, len, props, corr, corr_len,
                       engine_answer) != MOSQ_ERR_SUCCESS)
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: an answer was dropped");
}

/* Queue a status answer (400, 505) that runs nothing. extra: name/value
 * pairs, NULL-terminated. */
static void ss__status(struct ss_plugin *p, struct ss_req_props *r, const char *stat,
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
    ss__push(p, r, payload, strlen(text), props, false);
}

static ss_bytes ss__str(const char *s)
{
    ss_bytes b = {(const uint8_t *)(s ? s : ""), s ? strlen(s) : 0};
    return b;
}

/* The resend cache's identity of a request: client, correlation data and
 * everything else it carried. */
static uint64_t ss__request_id(struct ss_plugin *p, ss_bytes client, ss_bytes corr,
                               const struct ss_req_in *in, const struct ss_req_props *r)
{
    /* Absent and empty differ. */
    uint8_t flags = (uint8_t)((r->ts != NULL) | (r->ft != NULL) << 1 | (r->prot_ver != NULL) << 2);
    ss_bytes parts[6] = {{in->payload, in->len}, ss__str(r->response_topic), ss__str(r->ts),
                         ss__str(r->ft),         ss__str(r->prot_ver),        {&flags, 1}};
    return ss_dedup_id(p->dedup, client, corr, parts, 6);
}

static void ss__answer(struct ss_plugin *p, struct ss_req_props *r, const ss_bytes *payload,
                       const char *version)
{
    mosquitto_property *props = ss_response_props(r->corr, r->corr_len, "200", version);
    uint8_t *copy = malloc(payload->len);
    if (props == NULL || copy == NULL) {
        mosquitto_property_free_all(&props);
        free(copy);
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: an answer was dropped");
        return;
    }
    memcpy(copy, payload->data, payload->len);
    ss__push(p, r, copy, payload->len, props, true);
}

static void ss__execute(struct ss_plugin *p, const struct ss_req_in *in, struct ss_req_props *r)
{
    const char *client_id = in->client_id;
    ss_bytes client = ss__str(client_id);
    ss_bytes corr = {r->corr, r->corr_len};
    uint64_t now = ss_wall_ms();
    struct ss_caller who = {client_id, in->username, in->gone};
    ss_exec x = {.payload = in->payload, .payload_len = in->len, .ts = ss__str(r->ts),
                 .ft = ss__str(r->ft), .now_ms = now, .caller = &who,
                 .response = &p->scratch};
    if (r->ts == NULL)
        x.ts.data = NULL;
    if (r->ft == NULL)
        x.ft.data = NULL;
    /* GETs are never remembered (below), so a GET never finds an entry:
     * it skips the cache, half of a typical load. */
    ss_engine_parse(p->engine, &x);
    bool cached = x.command != SS_CMD_GET;
    uint64_t id = cached ? ss__request_id(p, client, corr, in, r) : 0;
    ss_dedup_answer prior;
    if (cached && ss_dedup_find(p->dedup, client, corr, id, now, &prior)) {
        char version[SS_HLC_TEXT_MAX + 1];
        memcpy(version, prior.version.data, prior.version.len);
        version[prior.version.len] = '\0';
        ss_log(p, MOSQ_LOG_DEBUG, "client %s resent a request: answered again", client_id);
        ss__answer(p, r, &prior.payload, prior.version.len ? version : NULL);
        return;
    }
    ss_buf_clear(&p->scratch);
    size_t first_event = p->outbox.len;
    int rc = ss_engine_exec(p->engine, &x);
    if (rc == SS_E_NOMEM) {
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: a request from %s was not answered", client_id);
        return;
    }
    if (rc == SS_E_QUOTA && in->len > p->opt.max_value_bytes)
        ss_log(p, MOSQ_LOG_WARNING,
               "request from %s refused: a value may have at most %llu bytes so that its "
               "notifications fit the broker's message_size_limit",
               client_id, (unsigned long long)p->opt.max_value_bytes);
    else if (rc != SS_OK)
        ss_log(p, MOSQ_LOG_INFO, "request from %s refused: %s", client_id, ss_strerror(rc));
    char version[SS_HLC_TEXT_MAX + 1] = "";
    if (x.has_version)
        version[ss_hlc_format(&x.version, version)] = '\0';
    ss_bytes answer = {p->scratch.data, p->scratch.len};
    /* A GET is not remembered: run again, it answers as any later read
     * would. Everything else is (a resent KEYNOTIFY STOP must not turn
     * "+OK" into ":0"), errors included. Remembered before answering, as
     * the answer takes over the correlation data. */
    ss_dedup_answer a = {answer, ss__str(version)};
    if (cached && ss_dedup_put(p->dedup, client, corr, id, now, &a) != SS_OK)
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: a request will not be recognised if resent");
    size_t before = p->outbox.len;
    ss__answer(p, r, &answer, x.has_version ? version : NULL);
    if (p->outbox.len > before)
        ss_outbox_move_last_to(&p->outbox, first_event);
}

static char *ss__strdup_or_null(const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *c = strdup(s);
    if (c == NULL)
        *failed = true;
    return c;
}

/* What a queued request holds, roughly: for the queue's bound. */
static uint64_t ss__queued_size(const struct ss_queued *e)
{
    size_t n = sizeof *e + e->len + e->r.corr_len;
    const char *strs[] = {e->client_id, e->username, e->r.response_topic,
                          e->r.ts,        e->r.ft,     e->r.prot_ver};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        n += strs[i] ? strlen(strs[i]) + 1 : 0;
    return n;
}

/* Keep a request for the next batch; takes the properties. */
static void ss__enqueue(struct ss_plugin *p, const struct ss_req_in *in, struct ss_req_props *r)
{
    struct ss_reqqueue *q = p->queue;
    if (q->len == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        struct ss_queued *items = realloc(q->items, cap * sizeof *items);
        if (items == NULL)
            goto nomem;
        q->items = items;
        q->cap = cap;
    }
    struct ss_queued *e = &q->items[q->len];
    bool failed = false;
    e->payload = malloc(in->len ? in->len : 1);
    e->client_id = ss__strdup_or_null(in->client_id, &failed);
    e->username = ss__strdup_or_null(in->username, &failed);
    if (failed || e->payload == NULL) {
        free(e->payload);
        free(e->client_id);
        free(e->username);
        goto nomem;
    }
    memcpy(e->payload, in->payload, in->len);
    e->len = in->len;
    e->gone = false;
    e->r = *r;
    memset(r, 0, sizeof *r); /* now the queue's */
    q->len++;
    q->bytes += ss__queued_size(e);
    return;
nomem:
    ss_log(p, MOSQ_LOG_WARNING, "out of memory: a request from %s was not answered", in->client_id);
}

static void ss__queued_free(struct ss_queued *e)
{
    ss__props_free(&e->r);
    free(e->payload);
    free(e->client_id);
    free(e->username);
}

int ss_queue_new(struct ss_plugin *p)
{
    p->queue = calloc(1, sizeof *p->queue);
    return p->queue ? SS_OK : SS_E_NOMEM;
}

void ss_queue_run(struct ss_plugin *p)
{
    struct ss_reqqueue *q = p->queue;
    for (size_t i = 0; i < q->len; i++) {
        struct ss_queued *e = &q->items[i];
        struct ss_req_in in = {e->payload, e->len, e->client_id, e->username, e->gone};
        ss__execute(p, &in, &e->r);
        ss__queued_free(e);
    }
    q->len = 0;
    q->bytes = 0;
}

void ss_queue_client_gone(struct ss_plugin *p, const char *client_id)
{
    struct ss_reqqueue *q = p->queue;
    for (size_t i = 0; q && i < q->len; i++)
        if (strcmp(q->items[i].client_id, client_id) == 0)
            q->items[i].gone = true;
}

void ss_queue_free(struct ss_plugin *p)
{
    struct ss_reqqueue *q = p->queue;
    if (q == NULL)
        return;
    /* Shutting down: requests never run were never answered. */
    for (size_t i = 0; i < q->len; i++)
        ss__queued_free(&q->items[i]);
    free(q->items);
    free(q);
    p->queue = NULL;
}

int ss_on_message(int event, void *event_data, void *userdata)
{
    (void)event;
    struct ss_plugin *p = userdata;
    struct mosquitto_evt_message *ed = event_data;
    if (ed->topic == NULL || strcmp(ed->topic, SS_REQUEST_TOPIC) != 0)
        return MOSQ_ERR_SUCCESS;
    ed->retain = false; /* a request is never kept as a retained message */
    const char *client_id = mosquitto_client_id(ed->client);
    if (client_id == NULL)
        client_id = "";
    if (mosquitto_client_protocol_version(ed->client) != 5) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: request over MQTT 3 ignored (MQTT 5 is required)",
               client_id);
        return MOSQ_ERR_ACL_DENIED;
    }
    struct ss_req_props r;
    ss__read_props(ed->properties, &r);
    int ret = MOSQ_ERR_SUCCESS;
    if (r.response_topic && ss__forbidden_topic(r.response_topic)) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: forbidden response topic: disconnected", client_id);
        ret = MOSQ_ERR_PROTOCOL;
    } else if (!ss__usable_topic(r.response_topic)) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: request without a usable response topic ignored",
               client_id);
        ret = MOSQ_ERR_ACL_DENIED;
    } else if (ed->qos == 0) {
        static const char *const extra[] = {"__stMsg", "QoS 1 is required for state store requests",
                                            NULL};
        ss__status(p, &r, "400", extra);
        ret = MOSQ_ERR_ACL_DENIED;
    } else if (!r.has_corr) {
        static const char *const extra[] = {"__propName", "Correlation Data", "__stMsg",
                                            "Correlation Data is missing", NULL};
        ss__status(p, &r, "400", extra);
        ret = MOSQ_ERR_ACL_DENIED;
    } else if (r.prot_ver && strncmp(r.prot_ver, "1.", 2) != 0 && strcmp(r.prot_ver, "1") != 0) {
        const char *const extra[] = {"__supProtMajVer", "1", "__requestProtVer", r.prot_ver,
                                     "__stMsg", "unsupported protocol version", NULL};
        ss__status(p, &r, "505", extra);
        ret = MOSQ_ERR_ACL_DENIED;
    } else {
        struct ss_req_in in = {ed->payload, ed->payloadlen, client_id,
                               mosquitto_client_username(ed->client), false};
        /* While a commit is under way its batch is closed: wait for the
         * next. A full queue waits for the commit here instead, which also
         * stops the broker reading more (slow disk, flood of requests). */
        if (p->committer.pending && p->queue->bytes >= p->opt.max_queued_bytes)
            ss_commit_wait(p);
        if (p->committer.pending)
            ss__enqueue(p, &in, &r);
        else
            ss__execute(p, &in, &r);
    }
    if (ret != MOSQ_ERR_SUCCESS)
        p->refused++;
    ss__props_free(&r);
    return ret;
}
