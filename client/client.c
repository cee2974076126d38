/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* client.c - the state store client: connection, reconnection and
 * re-registration, the timeout reaper, close (client_internal.h lists the
 * other files). See client.h for the contract.
 */
#include "client_internal.h"

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

/* Deadlines, pauses and a lease's time run on the monotonic clock: a
 * step of the wall clock (NTP, an operator) must neither keep a holder
 * believing in a lease it lost nor time out every call at once. The wall
 * clock is for versions (HLC stamps) only. */
uint64_t ss_client__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t ss_client__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int ss_client__cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) != 0)
        return SS_E_NOMEM;
    int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 && pthread_cond_init(cv, &a) == 0 ? SS_OK
                                                                                                 : SS_E_NOMEM;
    pthread_condattr_destroy(&a);
    return rc;
}

const char *ss_client_id(const ss_client *c)
{
    return c->id;
}

void ss_client__app_call_begin(ss_client *c)
{
    c->app_calls++;
    c->app_thread = pthread_self();
}

void ss_client__app_call_end(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    if (--c->app_calls == 0)
        pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* After a callback was replaced (under c->mu): a call of the old one
 * under way on another thread ends before the setter returns, so that
 * what it uses may be freed then; not when this is that very call. */
static void ss_client__app_calls_wait(ss_client *c)
{
    while (c->app_calls > 0 && !pthread_equal(c->app_thread, pthread_self()))
        pthread_cond_wait(&c->cv, &c->mu);
}

void ss_client_set_notify_cb(ss_client *c, ss_notify_cb cb, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->notify_cb = cb;
    c->notify_ud = ud;
    ss_client__app_calls_wait(c);
    pthread_mutex_unlock(&c->mu);
}

void ss_client_set_connection_cb(ss_client *c, ss_connection_cb cb, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->conn_cb = cb;
    c->conn_ud = ud;
    ss_client__app_calls_wait(c);
    pthread_mutex_unlock(&c->mu);
}

void ss_client_set_rewatch_cb(ss_client *c, ss_rewatch_cb cb, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->rewatch_cb = cb;
    c->rewatch_ud = ud;
    ss_client__app_calls_wait(c);
    pthread_mutex_unlock(&c->mu);
}

void ss_client__abstime(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

void ss_client__delivering(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    c->net_thread = pthread_self();
    c->net_thread_known = true;
    pthread_mutex_unlock(&c->mu);
}

bool ss_client__in_callback_thread(ss_client *c)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&c->mu);
    /* An event-loop client: nothing would deliver the answer while the
     * loop's thread waits, and no other thread may use it. */
    bool in = c->evloop || (c->net_thread_known && pthread_equal(c->net_thread, self)) ||
              (c->reaper_running && pthread_equal(c->reaper, self));
    pthread_mutex_unlock(&c->mu);
    return in;
}

/* ---- connection ------------------------------------------------------- */

static void ss_client__on_subscribed(ss_client *c);

static void ss_client__report(ss_client *c, bool connected, bool gap)
{
    pthread_mutex_lock(&c->mu);
    ss_connection_cb cb = c->conn_cb;
    void *ud = c->conn_ud;
    if (cb)
        ss_client__app_call_begin(c);
    pthread_mutex_unlock(&c->mu);
    if (cb) {
        cb(ud, connected, gap);
        ss_client__app_call_end(c);
    }
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

struct ss_rewatch {
    ss_client *c;
    struct ss_watched *w;
};

static void ss_client__tell_rewatch(ss_client *c, const struct ss_watched *w, const ss_client_result *r)
{
    pthread_mutex_lock(&c->mu);
    ss_rewatch_cb cb = c->closing ? NULL : c->rewatch_cb; /* closing: nothing to tell */
    void *ud = c->rewatch_ud;
    if (cb)
        ss_client__app_call_begin(c);
    pthread_mutex_unlock(&c->mu);
    if (cb) {
        cb(ud, w->key, w->len, r);
        ss_client__app_call_end(c);
    }
}

static void ss_client__rewatched(void *ud, const ss_client_result *r)
{
    struct ss_rewatch *rw = ud;
    ss_client *c = rw->c;
    if (r->status != SS_OK) {
        /* Refused by the server: watching on would be a silent lie. Lost
         * or timed out: the next reconnect registers it again. */
        if (ss_client__refused(r->status))
            ss_client__track(c, rw->w->key, rw->w->len, true);
        ss_client__tell_rewatch(c, rw->w, r);
    }
    free(rw->w);
    free(rw);
}

/* Register one watched key again; w (a copy) is freed here or by the
 * answer's callback. A call that cannot start is reported like a lost
 * connection: the next reconnect tries it again. */
static void ss_client__rewatch(ss_client *c, struct ss_watched *w)
{
    struct ss_rewatch *rw = malloc(sizeof *rw);
    int rc = SS_E_NOMEM;
    if (rw) {
        rw->c = c;
        rw->w = w;
        ss_bytes argv[2] = {ss_client__w("KEYNOTIFY"), ss_client__b(w->key, w->len)};
        rc = ss_client__send(c, SS_ANSWER_KEYNOTIFY, 2, argv, NULL, 0, ss_client__rewatched, rw);
        if (rc == SS_OK)
            return;
        free(rw);
    }
    if (ss_client__refused(rc)) /* too large for the broker now: final */
        ss_client__track(c, w->key, w->len, true);
    ss_client_result r = {.status = rc};
    ss_client__tell_rewatch(c, w, &r);
    free(w);
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
    for (size_t j = 0; j < i; j++)
        ss_client__rewatch(c, copy[j]);
    free(copy);
    if (again) {
        /* After the re-registrations went out: a helper that looks again
         * now is registered for what happens after its look. */
        pthread_mutex_lock(&c->mu);
        c->gaps++;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
    ss_client__report(c, true, again);
}

static void ss_client__cb_connect(struct mosquitto *m, void *ud, int rc, int flags,
                                  const mosquitto_property *p)
{
    (void)m;
    (void)flags;
    ss_client *c = ud;
    ss_client__delivering(c);
    uint32_t max_packet = 0;
    mosquitto_property_read_int32(p, MQTT_PROP_MAXIMUM_PACKET_SIZE, &max_packet, false);
    pthread_mutex_lock(&c->mu);
    c->connack_rc = rc;
    c->max_packet = max_packet;
    if (rc == 0)
        c->backoff_next_ms = 0;
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
    if (c->app_sub_mid != 0 && mid == c->app_sub_mid) {
        c->app_sub_result = qos_count == 1 ? granted[0] : 128;
        pthread_cond_broadcast(&c->cv);
    }
    bool ours = mid == c->sub_mid;
    if (ours && !(qos_count == 1 && granted[0] <= 2)) {
        c->sub_refused = true;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (ours && qos_count == 1 && granted[0] <= 2)
        ss_client__on_subscribed(c);
}

/* The connection is gone: every call in flight fails at once with
 * SS_E_CONNECTION (reason: the broker's DISCONNECT reason code, 0 if it
 * sent none). Their answers cannot come: the session starts clean, so
 * neither the requests nor the response topic's subscription outlive the
 * connection. A request may have reached the store before, so the text
 * says that a write's outcome is unknown (CLIENT.md). */
static void ss_client__lost(ss_client *c, bool report, int reason)
{
    pthread_mutex_lock(&c->mu);
    bool was = c->subscribed && report;
    if (reason != 0)
        c->lost_rc = reason; /* a first connection that ends before its answer says why */
    c->connected = false;
    c->subscribed = false;
    struct ss_pending *left = c->pending;
    c->pending = NULL;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    while (left) {
        struct ss_pending *p = left;
        left = p->next;
        char *text = NULL;
        if (reason >= 0x80)
            text = ss_client__refusal_text(c, "the broker disconnected this client before the answer "
                                              "came; a write may have taken effect", reason);
        else
            text = strdup("the connection was lost before the answer came; a write may have taken effect");
        ss_client__fail_pending_text(p, SS_E_CONNECTION, text);
    }
    if (was)
        ss_client__report(c, false, false);
}

void ss_client_handle_disconnect(ss_client *c)
{
    ss_client__lost(c, true, 0);
}

static void ss_client__cb_disconnect(struct mosquitto *m, void *ud, int rc, const mosquitto_property *p)
{
    (void)m;
    (void)p;
    /* rc 0: our own mosquitto_disconnect, not a loss worth reporting; from
     * 0x80 on, the reason code of the broker's DISCONNECT (libmosquitto's
     * own errors are small numbers). */
    ss_client__lost(ud, rc != 0, rc);
}

/* A PUBACK: one with a reason code from 0x80 on refused the request (too
 * large, not authorized, quota...): its call fails at once with the
 * reason, instead of waiting for an answer that cannot come. */
static void ss_client__cb_publish(struct mosquitto *m, void *ud, int mid, int reason, const mosquitto_property *p)
{
    (void)m;
    (void)p;
    if (reason < 0x80)
        return;
    ss_client *c = ud;
    pthread_mutex_lock(&c->mu);
    struct ss_pending **pp = &c->pending, *found = NULL;
    while (*pp && (*pp)->mid != mid)
        pp = &(*pp)->next;
    if (*pp) {
        found = *pp;
        *pp = found->next;
    } else {
        /* Its call has not learnt its packet id yet (ss_client__send). */
        ss_early_note(&c->early, mid, reason);
    }
    pthread_mutex_unlock(&c->mu);
    if (found)
        ss_client__fail_pending_text(found, SS_E_REFUSED,
                                     ss_client__refusal_text(c, ss_strerror(SS_E_REFUSED), reason));
}

static void ss_client__cb_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg,
                           const mosquitto_property *props)
{
    (void)m;
    ss_client *c = ud;
    if (ss_client_handle_message(c, msg->topic, msg->payload, msg->payloadlen, props))
        return;
    pthread_mutex_lock(&c->mu);
    ss_message_cb cb = c->message_cb;
    void *cb_ud = c->message_ud;
    if (cb)
        ss_client__app_call_begin(c);
    pthread_mutex_unlock(&c->mu);
    if (cb == NULL)
        return;
    cb(cb_ud, msg->topic, msg->payload, msg->payloadlen, msg->retain);
    ss_client__app_call_end(c);
}

void ss_client_set_message_cb(ss_client *c, ss_message_cb cb, void *ud)
{
    pthread_mutex_lock(&c->mu);
    c->message_cb = cb;
    c->message_ud = ud;
    ss_client__app_calls_wait(c);
    pthread_mutex_unlock(&c->mu);
}

int ss_client_subscribe(ss_client *c, const char *filter, int qos)
{
    if (filter == NULL || qos < 0 || qos > 1 || !c->own)
        return SS_E_INVAL;
    if (ss_client__in_callback_thread(c))
        return SS_E_IN_CALLBACK;
    /* Held across the SUBSCRIBE: its answer, on the network thread, waits
     * until the packet id is known here. */
    pthread_mutex_lock(&c->mu);
    if (c->closing) {
        pthread_mutex_unlock(&c->mu);
        return SS_E_CONNECTION;
    }
    /* Counted from here: a close waits for this thread to leave, even
     * while it waits for another's SUBSCRIBE. One SUBSCRIBE at a time:
     * its answer has one place (app_sub_mid, app_sub_result). */
    c->waiters++;
    while (c->app_sub_busy && !c->closing)
        pthread_cond_wait(&c->cv, &c->mu);
    int rc = MOSQ_ERR_NO_CONN;
    int mid = 0;
    if (!c->closing) {
        c->app_sub_busy = true;
        c->app_sub_result = -1;
        rc = mosquitto_subscribe_v5(c->m, &mid, filter, qos, 0, NULL);
        if (rc != MOSQ_ERR_SUCCESS)
            c->app_sub_busy = false;
    }
    if (rc != MOSQ_ERR_SUCCESS) {
        c->waiters--;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        return rc == MOSQ_ERR_INVAL || rc == MOSQ_ERR_MALFORMED_UTF8 ? SS_E_INVAL : SS_E_CONNECTION;
    }
    c->app_sub_mid = mid;
    struct timespec ts;
    ss_client__abstime(&ts, c->timeout_ms);
    while (c->app_sub_result == -1 && !c->closing && c->connected)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) == ETIMEDOUT)
            break;
    int granted = c->app_sub_result;
    bool lost = !c->connected || c->closing;
    c->app_sub_mid = 0;
    c->app_sub_busy = false;
    c->waiters--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (granted == -1)
        return lost ? SS_E_CONNECTION : SS_E_TIMEOUT;
    return granted <= 2 ? SS_OK : SS_E_STATUS;
}

int ss_client__new(struct mosquitto *m, bool own, const char *id, unsigned timeout_ms, ss_client **out)
{
    ss_client *c = calloc(1, sizeof *c);
    if (c == NULL)
        return SS_E_NOMEM;
    c->m = m;
    c->own = own;
    c->reap_at = UINT64_MAX;
    c->backoff_first_ms = SS_CLIENT_BACKOFF_FIRST_MS;
    c->backoff_max_ms = SS_CLIENT_BACKOFF_MAX_MS;
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
    if (ss_client__cond_init(&c->cv) != SS_OK) {
        ss_client_close(c);
        return SS_E_NOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->ready = true;
    *out = c;
    return SS_OK;
}

int ss_client_attach(struct mosquitto *mosq, const char *client_id, unsigned timeout_ms,
                     ss_client **out)
{
    if (mosq == NULL || client_id == NULL || client_id[0] == '\0' || strpbrk(client_id, "+#"))
        return SS_E_INVAL; /* a wildcard cannot name a response topic */
    ss_client *c;
    int rc = ss_client__new(mosq, false, client_id, timeout_ms, &c);
    if (rc == SS_OK && (rc = ss_client__threads_start(c)) != SS_OK)
        ss_client_close(c);
    if (rc == SS_OK)
        *out = c;
    return rc;
}

void ss_client__callbacks_set(ss_client *c, struct mosquitto *m)
{
    (void)c;
    mosquitto_connect_v5_callback_set(m, ss_client__cb_connect);
    mosquitto_subscribe_v5_callback_set(m, ss_client__cb_subscribe);
    mosquitto_disconnect_v5_callback_set(m, ss_client__cb_disconnect);
    mosquitto_message_v5_callback_set(m, ss_client__cb_message);
    mosquitto_publish_v5_callback_set(m, ss_client__cb_publish);
}

/* Free c and all it holds (its threads stopped, if it had any). */
static void ss_client__free(ss_client *c)
{
    if (c->ready) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
    }
    while (c->watched) {
        struct ss_watched *w = c->watched;
        c->watched = w->next;
        free(w);
    }
    while (c->helper_watches) {
        struct ss_helper_watch *h = c->helper_watches;
        c->helper_watches = h->next;
        free(h);
    }
    ss_table_free(&c->watched_index);
    if (c->own && c->m)
        mosquitto_destroy(c->m);
    ss_client__conf_free(&c->conf);
    free(c->id);
    free(c->resp_topic);
    free(c->notify_prefix);
    free(c);
}

void ss_client_close(ss_client *c)
{
    if (c == NULL)
        return;
    if (c->ready) {
        ss_client__threads_stop(c);
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
        /* A keeper, participant or lease wait still on it: shut down, and
         * freed by the last of them (their calls fail from now on). */
        bool later = c->holds > 0;
        c->orphaned = later;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        if (later)
            return;
    }
    ss_client__free(c);
}

int ss_client__hold(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool closing = c->closing;
    if (!closing)
        c->holds++;
    pthread_mutex_unlock(&c->mu);
    return closing ? SS_E_CONNECTION : SS_OK;
}

void ss_client__release(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool last = --c->holds == 0 && c->orphaned;
    pthread_mutex_unlock(&c->mu);
    if (last)
        ss_client__free(c);
}

bool ss_client__closed(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool closing = c->closing;
    pthread_mutex_unlock(&c->mu);
    return closing;
}
