/* client.c - the state store client: requests, answers, notifications,
 * reconnection. See client.h for the contract.
 *
 * Invariant: every pending call completes exactly once - by its answer, by
 * the timeout reaper, or by ss_client_close - and its callback runs without
 * the client's lock held, so callbacks may start new calls.
 */
#include "client.h"

#include "answer.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../core/codec.h"
#include "../core/errors.h"
#include "../core/hlc.h"
#include "../core/protocol.h"
#include "../core/table.h"

#define SS_CORR_LEN 16


struct ss_pending {
    struct ss_pending *next;
    uint8_t corr[SS_CORR_LEN];
    enum ss_answer_kind kind;
    uint64_t deadline_ms;
    ss_result_cb cb;
    void *ud;
};

/* A key registered with KEYNOTIFY, to register again after a reconnect:
 * on a list (for that) and in a table (to find it in O(1)). */
struct ss_watched {
    ss_table_node node;
    struct ss_watched *next;
    size_t len;
    uint8_t key[];
};

struct ss_client {
    struct mosquitto *m;
    bool own; /* we created m and run its thread */
    char *id;
    char *resp_topic;
    char *notify_prefix;
    unsigned timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ss_clock clock;
    struct ss_pending *pending;
    struct ss_watched *watched;
    ss_table watched_index;
    bool connected, subscribed, ever_subscribed, closing;
    int sub_mid;
    int connack_rc;  /* the broker's refusal of the last CONNECT, 0 if none */
    bool sub_refused; /* the broker refused the response topic's SUBSCRIBE */
    ss_notify_cb notify_cb;
    void *notify_ud;
    ss_connection_cb conn_cb;
    void *conn_ud;
    pthread_t reaper;
    bool reaper_running;
    uint64_t notifications;
    int waiters; /* threads inside a blocking call: close waits for them */
};

static uint64_t ss_client__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *ss_client_id(const ss_client *c)
{
    return c->id;
}

void ss_client_set_notify_cb(ss_client *c, ss_notify_cb cb, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->notify_cb = cb;
    c->notify_ud = ud;
    pthread_mutex_unlock(&c->mu);
}

void ss_client_set_connection_cb(ss_client *c, ss_connection_cb cb, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->conn_cb = cb;
    c->conn_ud = ud;
    pthread_mutex_unlock(&c->mu);
}

/* ---- requests --------------------------------------------------------- */

static void ss_client__complete(struct ss_pending *p, ss_client_result *r)
{
    if (p->cb)
        p->cb(p->ud, r);
    ss_client_result_free(r);
    free(p);
}

static void ss_client__fail_pending(struct ss_pending *p, int status)
{
    ss_client_result r;
    memset(&r, 0, sizeof r);
    r.status = status;
    ss_client__complete(p, &r);
}

/* Publish one request; on success the pending entry is queued. */
static int ss_client__send(ss_client *c, enum ss_answer_kind kind, size_t argc, const ss_bytes *argv,
                    const char *fencing_token, ss_result_cb cb, void *ud)
{
    if (fencing_token) {
        ss_hlc check;
        if (ss_hlc_parse((const uint8_t *)fencing_token, strlen(fencing_token), &check) != SS_OK)
            return SS_E_TS_MALFORMED;
    }
    struct ss_pending *p = calloc(1, sizeof *p);
    if (p == NULL)
        return SS_E_NOMEM;
    if (getrandom(p->corr, sizeof p->corr, 0) != (ssize_t)sizeof p->corr) {
        free(p);
        return SS_E_IO;
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
    ss_hlc now = ss_clock_next(&c->clock, ss_client__now_ms(), NULL, NULL);
    ts[ss_hlc_format(&now, ts)] = '\0';
    p->deadline_ms = ss_client__now_ms() + c->timeout_ms;
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
                                          (c->timeout_ms + 999) / 1000);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__srcId", c->id);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__protVer", "1.0");
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    if (rc == MOSQ_ERR_SUCCESS && fencing_token)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ft", fencing_token);
    if (rc == MOSQ_ERR_SUCCESS) {
        p->next = c->pending;
        c->pending = p;
    }
    pthread_mutex_unlock(&c->mu);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_publish_v5(c->m, NULL, SS_REQUEST_TOPIC, (int)payload.len, payload.data, 1,
                                  false, props);
    mosquitto_property_free_all(&props);
    ss_buf_free(&payload);
    if (rc != MOSQ_ERR_SUCCESS) {
        /* Take it back if nobody completed it meanwhile. */
        pthread_mutex_lock(&c->mu);
        struct ss_pending **pp = &c->pending;
        while (*pp && *pp != p)
            pp = &(*pp)->next;
        bool mine = *pp == p;
        if (mine)
            *pp = p->next;
        pthread_mutex_unlock(&c->mu);
        if (mine)
            free(p);
        return rc == MOSQ_ERR_NOMEM ? SS_E_NOMEM : mine ? SS_E_CONNECTION : SS_OK;
    }
    return SS_OK;
}

static ss_bytes ss_client__b(const void *p, size_t n)
{
    ss_bytes b = {(const uint8_t *)p, n};
    return b;
}

static ss_bytes ss_client__w(const char *s)
{
    return ss_client__b(s, strlen(s));
}

int ss_client_set_async(ss_client *c, const void *key, size_t key_len, const void *value,
                        size_t value_len, const ss_set_options *opts, ss_result_cb cb, void *ud)
{
    ss_bytes argv[6] = {ss_client__w("SET"), ss_client__b(key, key_len), ss_client__b(value, value_len)};
    size_t argc = 3;
    char px[24];
    if (opts && opts->condition == SS_SET_NX)
        argv[argc++] = ss_client__w("NX");
    else if (opts && opts->condition == SS_SET_NEX)
        argv[argc++] = ss_client__w("NEX");
    if (opts && opts->px_ms) {
        snprintf(px, sizeof px, "%llu", (unsigned long long)opts->px_ms);
        argv[argc++] = ss_client__w("PX");
        argv[argc++] = ss_client__w(px);
    }
    return ss_client__send(c, SS_ANSWER_SET, argc, argv, opts ? opts->fencing_token : NULL, cb, ud);
}

int ss_client_get_async(ss_client *c, const void *key, size_t key_len, ss_result_cb cb, void *ud)
{
    ss_bytes argv[2] = {ss_client__w("GET"), ss_client__b(key, key_len)};
    return ss_client__send(c, SS_ANSWER_GET, 2, argv, NULL, cb, ud);
}

int ss_client_del_async(ss_client *c, const void *key, size_t key_len, const char *fencing_token,
                        ss_result_cb cb, void *ud)
{
    ss_bytes argv[2] = {ss_client__w("DEL"), ss_client__b(key, key_len)};
    return ss_client__send(c, SS_ANSWER_DEL, 2, argv, fencing_token, cb, ud);
}

int ss_client_vdel_async(ss_client *c, const void *key, size_t key_len, const void *value,
                         size_t value_len, const char *fencing_token, ss_result_cb cb, void *ud)
{
    ss_bytes argv[3] = {ss_client__w("VDEL"), ss_client__b(key, key_len), ss_client__b(value, value_len)};
    return ss_client__send(c, SS_ANSWER_VDEL, 3, argv, fencing_token, cb, ud);
}

/* Remember or forget a key to re-register after a reconnect. */
static void ss_client__track(ss_client *c, const void *key, size_t key_len, bool stop)
{
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
    } else if (!stop && !found) {
        struct ss_watched *w = malloc(sizeof *w + key_len);
        if (w) {
            w->len = key_len;
            memcpy(w->key, key, key_len);
            w->next = c->watched;
            c->watched = w;
            ss_table_insert(&c->watched_index, &w->node, h);
        }
    }
    pthread_mutex_unlock(&c->mu);
}

int ss_client_keynotify_async(ss_client *c, const void *key, size_t key_len, bool stop,
                              ss_result_cb cb, void *ud)
{
    ss_bytes argv[3] = {ss_client__w("KEYNOTIFY"), ss_client__b(key, key_len), ss_client__w("STOP")};
    int rc = ss_client__send(c, SS_ANSWER_KEYNOTIFY, stop ? 3 : 2, argv, NULL, cb, ud);
    if (rc == SS_OK)
        ss_client__track(c, key, key_len, stop);
    return rc;
}

/* ---- blocking calls --------------------------------------------------- */

struct ss_waiter {
    ss_client *c;
    bool done;
    ss_client_result *out;
};

static void ss_client__wake(void *ud, const ss_client_result *r)
{
    struct ss_waiter *w = ud;
    pthread_mutex_lock(&w->c->mu);
    ss_client_result *o = w->out;
    *o = *r;
    /* Take ownership of the allocated parts. */
    ((ss_client_result *)r)->value = NULL;
    ((ss_client_result *)r)->error_text = NULL;
    w->done = true;
    pthread_cond_broadcast(&w->c->cv);
    pthread_mutex_unlock(&w->c->mu);
}

static int ss_client__wait(ss_client *c, struct ss_waiter *w, int rc)
{
    if (rc != SS_OK) {
        w->out->status = rc;
        return rc;
    }
    pthread_mutex_lock(&c->mu);
    c->waiters++;
    while (!w->done)
        pthread_cond_wait(&c->cv, &c->mu);
    c->waiters--;
    if (c->waiters == 0)
        pthread_cond_broadcast(&c->cv); /* a close may be waiting for us */
    pthread_mutex_unlock(&c->mu);
    return w->out->status;
}

#define SS_BLOCKING(c, r, call)                                                         \
    do {                                                                                \
        ss_client_result tmp_;                                                          \
        ss_client_result *out_ = (r) ? (r) : &tmp_;                                     \
        memset(out_, 0, sizeof *out_);                                                  \
        struct ss_waiter w_ = {(c), false, out_};                                       \
        int rc_ = ss_client__wait((c), &w_, (call));                                           \
        if (out_ == &tmp_)                                                              \
            ss_client_result_free(&tmp_);                                               \
        return rc_;                                                                     \
    } while (0)

int ss_client_set(ss_client *c, const void *key, size_t key_len, const void *value,
                  size_t value_len, const ss_set_options *opts, ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_set_async(c, key, key_len, value, value_len, opts, ss_client__wake, &w_));
}

int ss_client_get(ss_client *c, const void *key, size_t key_len, ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_get_async(c, key, key_len, ss_client__wake, &w_));
}

int ss_client_del(ss_client *c, const void *key, size_t key_len, const char *fencing_token,
                  ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_del_async(c, key, key_len, fencing_token, ss_client__wake, &w_));
}

int ss_client_vdel(ss_client *c, const void *key, size_t key_len, const void *value,
                   size_t value_len, const char *fencing_token, ss_client_result *r)
{
    SS_BLOCKING(c, r,
                ss_client_vdel_async(c, key, key_len, value, value_len, fencing_token, ss_client__wake, &w_));
}

int ss_client_keynotify(ss_client *c, const void *key, size_t key_len, bool stop,
                        ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_keynotify_async(c, key, key_len, stop, ss_client__wake, &w_));
}

/* ---- answers and notifications ---------------------------------------- */

/* The user properties we read from answers and notifications. */
struct ss_props_seen {
    const uint8_t *corr;
    uint16_t corr_len;
    char *stat, *ts;
    void *corr_owned;
};

static void ss_client__read_props(const mosquitto_property *props, struct ss_props_seen *s)
{
    memset(s, 0, sizeof *s);
    for (const mosquitto_property *p = props; p; p = mosquitto_property_next(p)) {
        int id = mosquitto_property_identifier(p);
        if (id == MQTT_PROP_CORRELATION_DATA && s->corr_owned == NULL) {
            if (mosquitto_property_read_binary(p, id, &s->corr_owned, &s->corr_len, false))
                s->corr = s->corr_owned;
        } else if (id == MQTT_PROP_USER_PROPERTY) {
            char *name = NULL, *value = NULL;
            if (!mosquitto_property_read_string_pair(p, id, &name, &value, false))
                continue;
            char **slot = strcmp(name, "__stat") == 0 ? &s->stat : strcmp(name, "__ts") == 0 ? &s->ts : NULL;
            if (slot && *slot == NULL) {
                *slot = value;
                value = NULL;
            }
            free(name);
            free(value);
        }
    }
}

static void ss_client__props_free(struct ss_props_seen *s)
{
    free(s->corr_owned);
    free(s->stat);
    free(s->ts);
}

/* Merge a received __ts into the client clock. */
static void ss_client__merge_ts(ss_client *c, const char *ts)
{
    ss_hlc h;
    if (ts == NULL || ss_hlc_parse((const uint8_t *)ts, strlen(ts), &h) != SS_OK)
        return;
    uint64_t now = ss_client__now_ms();
    if (ss_hlc_too_far_ahead(&h, now))
        return; /* never let a wild stamp drag our clock away */
    pthread_mutex_lock(&c->mu);
    ss_clock_restore(&c->clock, h.wall, h.counter);
    pthread_mutex_unlock(&c->mu);
}

static void ss_client__on_answer(ss_client *c, const void *payload, int len, const struct ss_props_seen *s)
{
    if (s->corr == NULL || s->corr_len != SS_CORR_LEN)
        return;
    pthread_mutex_lock(&c->mu);
    struct ss_pending **pp = &c->pending;
    while (*pp && memcmp((*pp)->corr, s->corr, SS_CORR_LEN) != 0)
        pp = &(*pp)->next;
    struct ss_pending *p = *pp;
    if (p)
        *pp = p->next;
    pthread_mutex_unlock(&c->mu);
    if (p == NULL)
        return; /* late answer of a call that timed out */
    ss_client_result r;
    ss_answer_interpret(p->kind, s->stat, s->ts, payload, (size_t)len, &r);
    ss_client__merge_ts(c, s->ts);
    ss_client__complete(p, &r);
}

static int ss_client__unhex(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

static void ss_client__on_notification(ss_client *c, const char *hexkey, const void *payload, int len,
                                const struct ss_props_seen *s)
{
    size_t hn = strlen(hexkey);
    if (hn % 2)
        return;
    uint8_t *key = malloc(hn / 2 + 1);
    if (key == NULL)
        return;
    for (size_t i = 0; i < hn; i += 2) {
        int hi = ss_client__unhex(hexkey[i]), lo = ss_client__unhex(hexkey[i + 1]);
        if (hi < 0 || lo < 0) {
            free(key);
            return;
        }
        key[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    enum ss_notify_kind kind;
    ss_bytes value;
    if (ss_codec_decode_notify(payload, (size_t)len, &kind, &value) == SS_OK) {
        ss_client__merge_ts(c, s->ts);
        ss_notification n = {key, hn / 2, kind == SS_NOTIFY_DELETE, value.data, value.len,
                             s->ts ? s->ts : ""};
        pthread_mutex_lock(&c->mu);
        ss_notify_cb cb = c->notify_cb;
        void *ud = c->notify_ud;
        pthread_mutex_unlock(&c->mu);
        if (cb)
            cb(ud, &n);
        pthread_mutex_lock(&c->mu);
        c->notifications++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
    free(key);
}

bool ss_client_handle_message(ss_client *c, const char *topic, const void *payload, int len,
                              const void *props)
{
    bool answer = strcmp(topic, c->resp_topic) == 0;
    size_t np = strlen(c->notify_prefix);
    bool notification = !answer && strncmp(topic, c->notify_prefix, np) == 0;
    if (!answer && !notification)
        return false;
    struct ss_props_seen s;
    ss_client__read_props(props, &s);
    if (answer)
        ss_client__on_answer(c, payload, len, &s);
    else
        ss_client__on_notification(c, topic + np, payload, len, &s);
    ss_client__props_free(&s);
    return true;
}

uint64_t ss_client_notification_count(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t n = c->notifications;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void ss_client__abstime(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

uint64_t ss_client_wait_notification(ss_client *c, uint64_t seen, unsigned timeout_ms)
{
    struct timespec until;
    ss_client__abstime(&until, timeout_ms);
    pthread_mutex_lock(&c->mu);
    while (c->notifications <= seen && !c->closing)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
            break;
    uint64_t n = c->notifications;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* ---- connection ------------------------------------------------------- */

static void ss_client__on_subscribed(ss_client *c);

static void ss_client__report(ss_client *c, bool connected, bool gap)
{
    pthread_mutex_lock(&c->mu);
    ss_connection_cb cb = c->conn_cb;
    void *ud = c->conn_ud;
    pthread_mutex_unlock(&c->mu);
    if (cb)
        cb(ud, connected, gap);
}

void ss_client_handle_connect(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    c->connected = true;
    c->subscribed = false;
    pthread_mutex_unlock(&c->mu);
    int mid = 0;
    int rc = mosquitto_subscribe_v5(c->m, &mid, c->resp_topic, 1, 0, NULL);
    pthread_mutex_lock(&c->mu);
    c->sub_mid = mid;
    pthread_mutex_unlock(&c->mu);
    /* An attached client does not see the SUBACK (the application owns the
     * callbacks). It need not: the broker handles a client's packets in
     * order, so every request published after this SUBSCRIBE finds the
     * response topic subscribed. */
    if (!c->own && rc == MOSQ_ERR_SUCCESS)
        ss_client__on_subscribed(c);
}

/* The response topic is subscribed: requests may go out. After a
 * reconnect, register the notifications again (the server dropped them). */
static void ss_client__on_subscribed(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool again = c->ever_subscribed;
    c->subscribed = true;
    c->ever_subscribed = true;
    size_t n = 0;
    for (struct ss_watched *w = c->watched; w; w = w->next)
        n++;
    struct ss_watched **copy = n ? calloc(n, sizeof *copy) : NULL;
    size_t i = 0;
    for (struct ss_watched *w = c->watched; w && copy; w = w->next) {
        copy[i] = malloc(sizeof **copy + w->len);
        if (copy[i]) {
            copy[i]->len = w->len;
            memcpy(copy[i]->key, w->key, w->len);
            i++;
        }
    }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    for (size_t j = 0; j < i; j++) {
        ss_bytes argv[2] = {ss_client__w("KEYNOTIFY"), ss_client__b(copy[j]->key, copy[j]->len)};
        ss_client__send(c, SS_ANSWER_KEYNOTIFY, 2, argv, NULL, NULL, NULL);
        free(copy[j]);
    }
    free(copy);
    ss_client__report(c, true, again);
}

static void ss_client__cb_connect(struct mosquitto *m, void *ud, int rc, int flags,
                                  const mosquitto_property *p)
{
    (void)m;
    (void)flags;
    (void)p;
    ss_client *c = ud;
    pthread_mutex_lock(&c->mu);
    c->connack_rc = rc;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (rc == 0)
        ss_client_handle_connect(ud);
}

static void ss_client__cb_subscribe(struct mosquitto *m, void *ud, int mid, int qos_count, const int *granted,
                             const mosquitto_property *p)
{
    (void)m;
    (void)p;
    ss_client *c = ud;
    pthread_mutex_lock(&c->mu);
    bool ours = mid == c->sub_mid;
    if (ours && !(qos_count == 1 && granted[0] <= 2)) {
        c->sub_refused = true;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (ours && qos_count == 1 && granted[0] <= 2)
        ss_client__on_subscribed(c);
}

static void ss_client__cb_disconnect(struct mosquitto *m, void *ud, int rc, const mosquitto_property *p)
{
    (void)m;
    (void)p;
    ss_client *c = ud;
    pthread_mutex_lock(&c->mu);
    /* rc 0: our own mosquitto_disconnect, not a loss worth reporting. */
    bool was = c->subscribed && rc != 0;
    c->connected = false;
    c->subscribed = false;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (was)
        ss_client__report(c, false, false);
}

static void ss_client__cb_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg,
                           const mosquitto_property *props)
{
    (void)m;
    ss_client_handle_message(ud, msg->topic, msg->payload, msg->payloadlen, props);
}

/* Completes calls whose deadline passed, ten times a second. */
static void *ss_client__reaper(void *arg)
{
    ss_client *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        struct timespec ts;
        ss_client__abstime(&ts, 100);
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        uint64_t now = ss_client__now_ms();
        struct ss_pending *due = NULL, **pp = &c->pending;
        while (*pp) {
            struct ss_pending *p = *pp;
            if (p->deadline_ms <= now || c->closing) {
                *pp = p->next;
                p->next = due;
                due = p;
            } else {
                pp = &p->next;
            }
        }
        pthread_mutex_unlock(&c->mu);
        while (due) {
            struct ss_pending *next = due->next;
            ss_client__fail_pending(due, c->closing ? SS_E_CONNECTION : SS_E_TIMEOUT);
            due = next;
        }
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static int ss_client__new(struct mosquitto *m, const char *id, unsigned timeout_ms, ss_client **out)
{
    ss_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return SS_E_NOMEM;
    c->m = m;
    c->timeout_ms = timeout_ms ? timeout_ms : 10000;
    c->id = strdup(id);
    size_t n = strlen(id);
    c->resp_topic = malloc(n + 80);
    c->notify_prefix = malloc(2 * n + 100);
    if (c->id == NULL || c->resp_topic == NULL || c->notify_prefix == NULL) {
        ss_client_close(c);
        return SS_E_NOMEM;
    }
    sprintf(c->resp_topic, "clients/%s/services/statestore/_any_/command/invoke/response", id);
    char *q = c->notify_prefix + sprintf(c->notify_prefix, SS_NOTIFY_PREFIX "/");
    for (size_t i = 0; i < n; i++)
        q += sprintf(q, "%02X", (unsigned char)id[i]);
    strcpy(q, "/command/notify/");
    /* The HLC node id: the client id, without ':' (the stamp separator). */
    char node[SS_HLC_NODE_MAX];
    size_t nn = n < sizeof node ? n : sizeof node;
    for (size_t i = 0; i < nn; i++)
        node[i] = id[i] == ':' ? '_' : id[i];
    if (nn == 0 || ss_clock_init(&c->clock, node, nn) != SS_OK)
        ss_clock_init(&c->clock, "client", 6);
    if (ss_table_init(&c->watched_index) != SS_OK) {
        ss_client_close(c);
        return SS_E_NOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    if (pthread_create(&c->reaper, NULL, ss_client__reaper, c) != 0) {
        ss_client_close(c);
        return SS_E_NOMEM;
    }
    c->reaper_running = true;
    *out = c;
    return SS_OK;
}

int ss_client_attach(struct mosquitto *mosq, const char *client_id, unsigned timeout_ms,
                     ss_client **out)
{
    if (mosq == NULL || client_id == NULL || client_id[0] == '\0')
        return SS_E_INVAL;
    return ss_client__new(mosq, client_id, timeout_ms, out);
}

static int ss_client__mosq_err(int rc)
{
    return rc == MOSQ_ERR_NOMEM ? SS_E_NOMEM : rc == MOSQ_ERR_INVAL ? SS_E_INVAL : SS_E_CONNECTION;
}

/* Write a reason into why (if any) and return status. */
static int ss_client__explain(char *why, size_t n, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int ss_client__explain(char *why, size_t n, int status, const char *fmt, ...)
{
    if (why && n > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* Why mosquitto_connect or mosquitto_tls_set failed, in words. */
static int ss_client__explain_mosq(char *why, size_t n, int mrc, int err, const char *host)
{
    if (mrc == MOSQ_ERR_ERRNO)
        return ss_client__explain(why, n, SS_E_CONNECTION, "%s", strerror(err));
    if (mrc == MOSQ_ERR_EAI)
        return ss_client__explain(why, n, SS_E_CONNECTION, "unknown host %s", host);
    return ss_client__explain(why, n, ss_client__mosq_err(mrc), "%s", mosquitto_strerror(mrc));
}

int ss_client_connect(const ss_client_options *o, ss_client **out)
{
    return ss_client_connect_explain(o, out, NULL, 0);
}

int ss_client_connect_explain(const ss_client_options *o, ss_client **out, char *why, size_t why_len)
{
    ss_client__explain(why, why_len, SS_OK, "%s", "");
    ss_client_options d;
    memset(&d, 0, sizeof d);
    if (o)
        d = *o;
    char idbuf[48];
    if (d.client_id == NULL || d.client_id[0] == '\0') {
        uint8_t r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            return ss_client__explain(why, why_len, SS_E_IO, "no random bytes for a client id");
        int k = snprintf(idbuf, sizeof idbuf, "statestore-");
        for (int i = 0; i < 8; i++)
            k += snprintf(idbuf + k, sizeof idbuf - (size_t)k, "%02x", r[i]);
        d.client_id = idbuf;
    }
    bool tls = d.cafile || d.capath;
    if (d.host == NULL)
        d.host = "localhost";
    if (d.port == 0)
        d.port = tls ? 8883 : 1883;
    if (d.keepalive == 0)
        d.keepalive = 60;
    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new(d.client_id, true, NULL);
    if (m == NULL)
        return ss_client__explain(why, why_len, SS_E_NOMEM, "out of memory");
    ss_client *c;
    int rc = ss_client__new(m, d.client_id, d.timeout_ms, &c);
    if (rc != SS_OK) {
        mosquitto_destroy(m);
        return ss_client__explain(why, why_len, rc, "%s", ss_strerror(rc));
    }
    c->own = true;
    mosquitto_user_data_set(m, c);
    mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_v5_callback_set(m, ss_client__cb_connect);
    mosquitto_subscribe_v5_callback_set(m, ss_client__cb_subscribe);
    mosquitto_disconnect_v5_callback_set(m, ss_client__cb_disconnect);
    mosquitto_message_v5_callback_set(m, ss_client__cb_message);
    mosquitto_reconnect_delay_set(m, 1, 10, true);
    int mrc = MOSQ_ERR_SUCCESS;
    if (d.username)
        mrc = mosquitto_username_pw_set(m, d.username, d.password);
    if (mrc == MOSQ_ERR_SUCCESS && (tls || d.certfile)) {
        mrc = mosquitto_tls_set(m, d.cafile, d.capath, d.certfile, d.keyfile, NULL);
        if (mrc != MOSQ_ERR_SUCCESS) {
            ss_client_close(c);
            return ss_client__explain(why, why_len, SS_E_INVAL,
                               "cannot use the TLS files (missing or unreadable): %s",
                               mosquitto_strerror(mrc));
        }
    }
    int err = 0;
    if (mrc == MOSQ_ERR_SUCCESS) {
        errno = 0;
        mrc = mosquitto_connect_bind_v5(m, d.host, d.port, d.keepalive, NULL, NULL);
        err = errno;
    }
    if (mrc == MOSQ_ERR_SUCCESS)
        mrc = mosquitto_loop_start(m);
    if (mrc != MOSQ_ERR_SUCCESS) {
        ss_client_close(c);
        return ss_client__explain_mosq(why, why_len, mrc, err, d.host);
    }
    /* Wait for the subscription of the response topic. */
    uint64_t end = ss_client__now_ms() + c->timeout_ms;
    pthread_mutex_lock(&c->mu);
    while (!c->subscribed && c->connack_rc == 0 && !c->sub_refused && ss_client__now_ms() < end) {
        struct timespec ts;
        ss_client__abstime(&ts, 20);
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    bool ok = c->subscribed;
    int connack = c->connack_rc;
    bool refused = c->sub_refused;
    pthread_mutex_unlock(&c->mu);
    if (!ok) {
        unsigned ms = c->timeout_ms;
        ss_client_close(c);
        if (connack != 0)
            return ss_client__explain(why, why_len, SS_E_CONNECTION, "the broker refused the connection: %s",
                               mosquitto_reason_string(connack));
        if (refused)
            return ss_client__explain(why, why_len, SS_E_CONNECTION,
                               "the broker refused the subscription to the response topic");
        return ss_client__explain(why, why_len, SS_E_CONNECTION,
                           "no MQTT 5 answer from the broker within %u ms", ms);
    }
    *out = c;
    return SS_OK;
}

void ss_client_close(ss_client *c)
{
    if (c == NULL)
        return;
    if (c->own && c->m) {
        mosquitto_disconnect(c->m);
        mosquitto_loop_stop(c->m, false);
    }
    if (c->reaper_running) {
        pthread_mutex_lock(&c->mu);
        c->closing = true;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->reaper, NULL);
        /* Anything still pending fails now, which wakes the threads
         * blocked in a call; the lock and the client live until the last
         * of them has left. */
        pthread_mutex_lock(&c->mu);
        struct ss_pending *left = c->pending;
        c->pending = NULL;
        pthread_mutex_unlock(&c->mu);
        while (left) {
            struct ss_pending *p = left;
            left = p->next;
            ss_client__fail_pending(p, SS_E_CONNECTION);
        }
        pthread_mutex_lock(&c->mu);
        while (c->waiters > 0)
            pthread_cond_wait(&c->cv, &c->mu);
        pthread_mutex_unlock(&c->mu);
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
    }
    while (c->watched) {
        struct ss_watched *w = c->watched;
        c->watched = w->next;
        free(w);
    }
    ss_table_free(&c->watched_index);
    if (c->own && c->m)
        mosquitto_destroy(c->m);
    free(c->id);
    free(c->resp_topic);
    free(c->notify_prefix);
    free(c);
}
