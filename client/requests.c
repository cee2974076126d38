/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* requests.c - sending requests and their pending calls (client.h). */
#include "client_internal.h"

#include <mqtt_protocol.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../core/codec.h"
#include "../core/errors.h"
#include "../core/protocol.h"

void ss_client__complete(struct ss_pending *p, ss_client_result *r)
{
    if (p->cb)
        p->cb(p->ud, r);
    ss_client_result_free(r);
    free(p);
}

void ss_client__fail_pending(struct ss_pending *p, int status)
{
    ss_client__fail_pending_text(p, status, NULL);
}

void ss_client__fail_pending_text(struct ss_pending *p, int status, char *text)
{
    ss_client_result r;
    memset(&r, 0, sizeof r);
    r.status = status;
    r.error_text = text;
    ss_client__complete(p, &r);
}

char *ss_client__refusal_text(ss_client *c, const char *what, int reason)
{
    char detail[160];
    pthread_mutex_lock(&c->mu);
    uint32_t limit = c->max_packet;
    pthread_mutex_unlock(&c->mu);
    if (reason == MQTT_RC_PACKET_TOO_LARGE && limit)
        snprintf(detail, sizeof detail, "packet too large: its limit is %u bytes", limit);
    else if (reason == MQTT_RC_PACKET_TOO_LARGE)
        snprintf(detail, sizeof detail, "packet too large: over its message_size_limit");
    else
        snprintf(detail, sizeof detail, "%s, reason code %d", mosquitto_reason_string(reason), reason);
    char *text = malloc(strlen(what) + sizeof detail + 4);
    if (text)
        sprintf(text, "%s (%s)", what, detail);
    return text;
}

/* A publish on c->m is done (under mu): a new handle may replace the old
 * once none is under way (connect.c). */
static void ss_client__published(ss_client *c)
{
    if (--c->publishing == 0)
        pthread_cond_broadcast(&c->cv);
}

/* Publish one request; on success the pending entry is queued. */
int ss_client__send(ss_client *c, enum ss_answer_kind kind, size_t argc, const ss_bytes *argv,
                    const char *fencing_token, unsigned timeout_ms, ss_result_cb cb, void *ud)
{
    if (fencing_token) {
        /* A version, and a string MQTT carries: a node id that is not
         * UTF-8 (or holds a control character) makes the broker drop the
         * connection, and every call in flight on it with this one. */
        ss_hlc check;
        size_t n = strlen(fencing_token);
        if (ss_hlc_parse((const uint8_t *)fencing_token, n, &check) != SS_OK ||
            mosquitto_validate_utf8(fencing_token, (int)n) != MOSQ_ERR_SUCCESS)
            return SS_E_FT_MALFORMED;
    }
    struct ss_pending *p = calloc(1, sizeof *p);
    if (p == NULL)
        return SS_E_NOMEM;
    if (getrandom(p->corr, sizeof p->corr, 0) != (ssize_t)sizeof p->corr) {
        free(p);
        return SS_E_RANDOM;
    }
    p->kind = kind;
    p->cb = cb;
    p->ud = ud;
    ss_buf payload = SS_BUF_INIT;
    if (ss_codec_put_request(&payload, argc, argv) != SS_OK) {
        ss_buf_free(&payload);
        free(p);
        return SS_E_NOMEM;
    }
    pthread_mutex_lock(&c->mu);
    if (!c->subscribed || c->closing) {
        pthread_mutex_unlock(&c->mu);
        ss_buf_free(&payload);
        free(p);
        return SS_E_CONNECTION;
    }
    char ts[SS_HLC_TEXT_MAX + 1];
    ss_hlc now = ss_clock_next(&c->clock, ss_client__wall_ms(), NULL, NULL);
    ts[ss_hlc_format(&now, ts)] = '\0';
    if (timeout_ms == 0)
        timeout_ms = c->timeout_ms;
    p->deadline_ms = ss_client__now_ms() + timeout_ms;
    mosquitto_property *props = NULL;
    int rc = mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, c->resp_topic);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, p->corr, SS_CORR_LEN);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string(&props, MQTT_PROP_CONTENT_TYPE, "application/octet-stream");
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_byte(&props, MQTT_PROP_PAYLOAD_FORMAT_INDICATOR, 0);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_int32(&props, MQTT_PROP_MESSAGE_EXPIRY_INTERVAL,
                                          (timeout_ms + 999) / 1000);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__srcId", c->id);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__protVer", "1.0");
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    if (rc == MOSQ_ERR_SUCCESS && fencing_token)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ft", fencing_token);
    uint64_t begun = 0;
    bool queued = rc == MOSQ_ERR_SUCCESS; /* p is among the pending calls */
    if (rc == MOSQ_ERR_SUCCESS) {
        p->next = c->pending;
        c->pending = p;
        if (p->deadline_ms < c->reap_at)
            c->reap_at = p->deadline_ms;
        begun = ss_early_begin(&c->early);
        c->publishing++; /* the handle stays until this publish is done (connect.c) */
    }
    struct mosquitto *m = c->m;
    pthread_mutex_unlock(&c->mu);
    int mid = 0;
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_publish_v5(m, &mid, kind == SS_ANSWER_ADMIN ? SS_ADMIN_TOPIC : SS_REQUEST_TOPIC,
                                  (int)payload.len, payload.data, 1, false, props);
    /* Each way below takes the lock once more, and says under it that
     * this publish is done (no lock of its own on every request). */
    mosquitto_property_free_all(&props);
    ss_buf_free(&payload);
    if (rc == MOSQ_ERR_SUCCESS) {
        /* Its packet id, for a PUBACK that refuses it; one that came
         * before this was set is waiting among the early refusals. */
        int refused = 0;
        pthread_mutex_lock(&c->mu);
        ss_client__published(c);
        struct ss_pending **pp = &c->pending;
        while (*pp && *pp != p)
            pp = &(*pp)->next;
        if (*pp == p) {
            p->mid = mid;
            refused = ss_early_take(&c->early, mid, begun);
            if (refused)
                *pp = p->next;
        }
        pthread_mutex_unlock(&c->mu);
        if (refused)
            ss_client__fail_pending_text(p, SS_E_REFUSED,
                                         ss_client__refusal_text(c, ss_strerror(SS_E_REFUSED), refused));
        return SS_OK;
    }
    if (rc != MOSQ_ERR_SUCCESS) {
        /* Take it back if nobody completed it meanwhile (never queued: a
         * property could not be made, and it is ours). */
        bool mine = !queued;
        pthread_mutex_lock(&c->mu);
        if (queued)
            ss_client__published(c);
        struct ss_pending **pp = &c->pending;
        while (queued && *pp && *pp != p)
            pp = &(*pp)->next;
        if (queued && *pp == p) {
            *pp = p->next;
            mine = true;
        }
        pthread_mutex_unlock(&c->mu);
        /* Completed meanwhile (a close, a lost connection): whoever took
         * it called, or calls, its callback; so this call succeeded in
         * handing it over, and a blocking caller waits for that. */
        if (!mine)
            return SS_OK;
        free(p);
        /* Larger than the Maximum Packet Size the broker gave in its
         * CONNACK, or than any MQTT packet (256 MiB): libmosquitto does
         * not send it. Refused, not an unknown outcome: it never left. */
        if (rc == MOSQ_ERR_OVERSIZE_PACKET || rc == MOSQ_ERR_PAYLOAD_SIZE)
            return SS_E_REFUSED;
        return rc == MOSQ_ERR_NOMEM ? SS_E_NOMEM : SS_E_CONNECTION;
    }
    return SS_OK;
}

ss_bytes ss_client__b(const void *p, size_t n)
{
    ss_bytes b = {(const uint8_t *)p, n};
    return b;
}

ss_bytes ss_client__w(const char *s)
{
    return ss_client__b(s, strlen(s));
}

/* Remember or forget a key to re-register after a reconnect: true when
 * this changed the set. */
bool ss_client__track(ss_client *c, const void *key, size_t key_len, bool stop)
{
    bool changed = false;
    pthread_mutex_lock(&c->mu);
    uint64_t h = ss_table_hash(&c->watched_index, key, key_len);
    struct ss_watched *found = NULL;
    for (ss_table_node *n = ss_table_find(&c->watched_index, h); n && !found; n = ss_table_next(n, h)) {
        struct ss_watched *w = (struct ss_watched *)n;
        if (w->len == key_len && memcmp(w->key, key, key_len) == 0)
            found = w;
    }
    if (stop && found) {
        ss_table_remove(&c->watched_index, &found->node);
        struct ss_watched **pp = &c->watched;
        while (*pp != found)
            pp = &(*pp)->next;
        *pp = found->next;
        free(found);
        changed = true;
    } else if (!stop && !found) {
        struct ss_watched *w = malloc(sizeof *w + key_len);
        if (w) {
            w->len = key_len;
            memcpy(w->key, key, key_len);
            w->next = c->watched;
            c->watched = w;
            ss_table_insert(&c->watched_index, &w->node, h);
            changed = true;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return changed;
}

bool ss_client__refused(int status)
{
    /* SS_E_REFUSED: the broker's PUBACK refused it (or it is larger than
     * the broker takes): it never ran, and a resend is refused alike. */
    return status == SS_E_SERVER || status == SS_E_STATUS || status == SS_E_REFUSED || ss_err_is_wire(status);
}

/* A KEYNOTIFY of a key not watched before: the key is remembered before
 * the request goes out (its answer may come before the send returns) and
 * forgotten if the server refuses it, so that a reconnect never registers
 * what the application was told it could not watch. */
struct ss_watch_call {
    ss_client *c;
    ss_result_cb cb;
    void *ud;
    size_t len;
    uint8_t key[];
};

static void ss_client__watch_answered(void *ud, const ss_client_result *r)
{
    struct ss_watch_call *w = ud;
    if (ss_client__refused(r->status))
        ss_client__track(w->c, w->key, w->len, true);
    if (w->cb)
        w->cb(w->ud, r);
    free(w);
}

static int ss_client__watch_send(ss_client *c, size_t argc, const ss_bytes *argv, unsigned timeout_ms,
                                 ss_result_cb cb, void *ud)
{
    const ss_bytes *key = &argv[1];
    struct ss_watch_call *w = malloc(sizeof *w + key->len);
    if (w == NULL)
        return SS_E_NOMEM;
    if (!ss_client__track(c, key->data, key->len, false)) {
        /* Watched already (or no memory to remember it): as before. */
        free(w);
        return ss_client__send(c, SS_ANSWER_KEYNOTIFY, argc, argv, NULL, timeout_ms, cb, ud);
    }
    *w = (struct ss_watch_call){c, cb, ud, key->len};
    memcpy(w->key, key->data, key->len);
    int rc = ss_client__send(c, SS_ANSWER_KEYNOTIFY, argc, argv, NULL, timeout_ms, ss_client__watch_answered, w);
    if (rc != SS_OK) {
        ss_client__track(c, w->key, w->len, true);
        free(w);
    }
    return rc;
}

int ss_client_call_async(ss_client *c, const ss_client_request *q, ss_result_cb cb, void *ud)
{
    ss_bytes argv[6];
    size_t argc = 0;
    char px[24];
    enum ss_answer_kind kind;
    const char *ft = NULL;
    switch (q->op) {
    case SS_REQ_SET:
        kind = SS_ANSWER_SET;
        argv[argc++] = ss_client__w("SET");
        argv[argc++] = ss_client__b(q->key, q->key_len);
        argv[argc++] = ss_client__b(q->value, q->value_len);
        if (q->condition != SS_SET_ALWAYS && q->condition != SS_SET_NX && q->condition != SS_SET_NEX)
            return SS_E_INVAL; /* not a plain SET that would overwrite */
        if (q->condition == SS_SET_NX)
            argv[argc++] = ss_client__w("NX");
        else if (q->condition == SS_SET_NEX)
            argv[argc++] = ss_client__w("NEX");
        if (q->px_ms) {
            snprintf(px, sizeof px, "%llu", (unsigned long long)q->px_ms);
            argv[argc++] = ss_client__w("PX");
            argv[argc++] = ss_client__w(px);
        }
        ft = q->fencing_token;
        break;
    case SS_REQ_GET:
        kind = SS_ANSWER_GET;
        argv[argc++] = ss_client__w("GET");
        argv[argc++] = ss_client__b(q->key, q->key_len);
        break;
    case SS_REQ_DEL:
        kind = SS_ANSWER_DEL;
        argv[argc++] = ss_client__w("DEL");
        argv[argc++] = ss_client__b(q->key, q->key_len);
        ft = q->fencing_token;
        break;
    case SS_REQ_VDEL:
        kind = SS_ANSWER_VDEL;
        argv[argc++] = ss_client__w("VDEL");
        argv[argc++] = ss_client__b(q->key, q->key_len);
        argv[argc++] = ss_client__b(q->value, q->value_len);
        ft = q->fencing_token;
        break;
    case SS_REQ_KEYNOTIFY:
    case SS_REQ_KEYNOTIFY_STOP:
        kind = SS_ANSWER_KEYNOTIFY;
        argv[argc++] = ss_client__w("KEYNOTIFY");
        argv[argc++] = ss_client__b(q->key, q->key_len);
        if (q->op == SS_REQ_KEYNOTIFY_STOP)
            argv[argc++] = ss_client__w("STOP");
        break;
    default:
        return SS_E_INVAL;
    }
    if (q->op == SS_REQ_KEYNOTIFY)
        return ss_client__watch_send(c, argc, argv, q->timeout_ms, cb, ud);
    int rc = ss_client__send(c, kind, argc, argv, ft, q->timeout_ms, cb, ud);
    if (rc == SS_OK && q->op == SS_REQ_KEYNOTIFY_STOP)
        ss_client__track(c, q->key, q->key_len, true);
    return rc;
}

int ss_client_set_async(ss_client *c, const void *key, size_t key_len, const void *value,
                        size_t value_len, const ss_set_options *opts, ss_result_cb cb, void *ud)
{
    ss_client_request q = {.op = SS_REQ_SET, .key = key, .key_len = key_len, .value = value, .value_len = value_len};
    if (opts) {
        q.condition = opts->condition;
        q.px_ms = opts->px_ms;
        q.fencing_token = opts->fencing_token;
    }
    return ss_client_call_async(c, &q, cb, ud);
}

int ss_client_get_async(ss_client *c, const void *key, size_t key_len, ss_result_cb cb, void *ud)
{
    ss_client_request q = {.op = SS_REQ_GET, .key = key, .key_len = key_len};
    return ss_client_call_async(c, &q, cb, ud);
}

int ss_client_del_async(ss_client *c, const void *key, size_t key_len, const char *fencing_token,
                        ss_result_cb cb, void *ud)
{
    ss_client_request q = {.op = SS_REQ_DEL, .key = key, .key_len = key_len, .fencing_token = fencing_token};
    return ss_client_call_async(c, &q, cb, ud);
}

int ss_client_vdel_async(ss_client *c, const void *key, size_t key_len, const void *value,
                         size_t value_len, const char *fencing_token, ss_result_cb cb, void *ud)
{
    ss_client_request q = {.op = SS_REQ_VDEL, .key = key, .key_len = key_len, .value = value,
                    .value_len = value_len, .fencing_token = fencing_token};
    return ss_client_call_async(c, &q, cb, ud);
}

int ss_client_keynotify_async(ss_client *c, const void *key, size_t key_len, bool stop,
                              ss_result_cb cb, void *ud)
{
    ss_client_request q = {.op = stop ? SS_REQ_KEYNOTIFY_STOP : SS_REQ_KEYNOTIFY, .key = key, .key_len = key_len};
    return ss_client_call_async(c, &q, cb, ud);
}

/* The helpers' count of key, found (and made, with add) under c->mu. */
static struct ss_helper_watch *ss_client__helper_find(ss_client *c, const void *key, size_t len, bool add)
{
    for (struct ss_helper_watch *h = c->helper_watches; h; h = h->next)
        if (h->len == len && memcmp(h->key, key, len) == 0)
            return h;
    if (!add)
        return NULL;
    struct ss_helper_watch *h = malloc(sizeof *h + len);
    if (h) {
        h->users = 0;
        h->events = 0;
        h->len = len;
        memcpy(h->key, key, len);
        h->next = c->helper_watches;
        c->helper_watches = h;
    }
    return h;
}

static void ss_client__helper_drop(ss_client *c, struct ss_helper_watch *h)
{
    struct ss_helper_watch **pp = &c->helper_watches;
    while (*pp != h)
        pp = &(*pp)->next;
    *pp = h->next;
    free(h);
}

int ss_client__helper_watch(ss_client *c, const void *key, size_t key_len)
{
    /* Counted before the KEYNOTIFY goes out: a STOP of another helper
     * decided after this sees us and registers the key again. */
    pthread_mutex_lock(&c->mu);
    struct ss_helper_watch *h = ss_client__helper_find(c, key, key_len, true);
    if (h)
        h->users++;
    pthread_mutex_unlock(&c->mu);
    if (h == NULL)
        return SS_E_NOMEM;
    int rc = ss_client_keynotify(c, key, key_len, false, NULL);
    if (rc != SS_OK) {
        pthread_mutex_lock(&c->mu);
        if (--h->users == 0)
            ss_client__helper_drop(c, h);
        pthread_mutex_unlock(&c->mu);
    }
    return rc;
}

void ss_client__helper_unwatch(ss_client *c, const void *key, size_t key_len)
{
    pthread_mutex_lock(&c->mu);
    struct ss_helper_watch *h = ss_client__helper_find(c, key, key_len, false);
    bool last = h == NULL || --h->users == 0;
    if (h && last)
        ss_client__helper_drop(c, h);
    pthread_mutex_unlock(&c->mu);
    if (!last)
        return; /* another helper still waits on it */
    ss_client_keynotify(c, key, key_len, true, NULL);
    /* A helper that started watching meanwhile may have had its
     * registration ended by this STOP: register again, and wake it so
     * that it looks again rather than wait for what it may have missed. */
    pthread_mutex_lock(&c->mu);
    bool again = ss_client__helper_find(c, key, key_len, false) != NULL;
    pthread_mutex_unlock(&c->mu);
    if (again && ss_client_keynotify(c, key, key_len, false, NULL) == SS_OK) {
        pthread_mutex_lock(&c->mu);
        c->gaps++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
}

void ss_client__helper_notified(ss_client *c, const void *key, size_t key_len)
{
    struct ss_helper_watch *h = ss_client__helper_find(c, key, key_len, false);
    if (h)
        h->events++;
}

/* Under c->mu. */
static uint64_t ss_client__key_wakes(ss_client *c, const void *key, size_t key_len)
{
    struct ss_helper_watch *h = ss_client__helper_find(c, key, key_len, false);
    return (h ? h->events : 0) + c->gaps;
}

uint64_t ss_client__wakes(ss_client *c, const void *key, size_t key_len)
{
    pthread_mutex_lock(&c->mu);
    uint64_t n = ss_client__key_wakes(c, key, key_len);
    pthread_mutex_unlock(&c->mu);
    return n;
}

uint64_t ss_client__wait_wakes(ss_client *c, const void *key, size_t key_len, uint64_t seen,
                               unsigned timeout_ms)
{
    /* The helper holds c (ss_client__hold): a close does not free it
     * under us. A close ends the wait (the helper asks ss_client__closed). */
    struct timespec until;
    ss_client__abstime(&until, timeout_ms);
    pthread_mutex_lock(&c->mu);
    while (ss_client__key_wakes(c, key, key_len) <= seen && !c->closing)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
            break;
    uint64_t n = ss_client__key_wakes(c, key, key_len);
    pthread_mutex_unlock(&c->mu);
    return n;
}
