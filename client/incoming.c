/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* incoming.c - answers and notifications arriving from the broker
 * (client.h). */
#include "client_internal.h"

#include <mqtt_protocol.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/errors.h"
#include "../core/hex.h"
#include "../core/protocol.h"

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
    uint64_t now = ss_client__wall_ms();
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

static void ss_client__on_notification(ss_client *c, const char *hexkey, const void *payload, int len,
                                const struct ss_props_seen *s)
{
    ss_buf kb = SS_BUF_INIT;
    if (ss_hex_decode(&kb, hexkey, strlen(hexkey)) != SS_OK) {
        ss_buf_free(&kb);
        return;
    }
    const uint8_t *key = kb.data;
    enum ss_notify_kind kind;
    ss_bytes value;
    if (ss_codec_decode_notify(payload, (size_t)len, &kind, &value) == SS_OK) {
        ss_client__merge_ts(c, s->ts);
        ss_notification n = {key, kb.len, kind == SS_NOTIFY_DELETE, value.data, value.len,
                             s->ts ? s->ts : ""};
        pthread_mutex_lock(&c->mu);
        ss_notify_cb cb = c->notify_cb;
        void *ud = c->notify_ud;
        if (cb)
            ss_client__app_call_begin(c);
        pthread_mutex_unlock(&c->mu);
        if (cb) {
            cb(ud, &n);
            ss_client__app_call_end(c);
        }
        pthread_mutex_lock(&c->mu);
        c->notifications++;
        ss_client__helper_notified(c, kb.data, kb.len);
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
    }
    ss_buf_free(&kb);
}

bool ss_client_handle_message(ss_client *c, const char *topic, const void *payload, int len,
                              const void *props)
{
    bool answer = strcmp(topic, c->resp_topic) == 0;
    size_t np = strlen(c->notify_prefix);
    bool notification = !answer && strncmp(topic, c->notify_prefix, np) == 0;
    if (!answer && !notification)
        return false;
    ss_client__delivering(c);
    struct ss_props_seen s;
    ss_client__read_props(props, &s);
    if (answer)
        ss_client__on_answer(c, payload, len, &s);
    else
        ss_client__on_notification(c, topic + np, payload, len, &s);
    ss_client__props_free(&s);
    return true;
}

static uint64_t ss_client__count(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t n = c->notifications;
    pthread_mutex_unlock(&c->mu);
    return n;
}

uint64_t ss_client_notification_count(ss_client *c)
{
    return ss_client__count(c);
}

uint64_t ss_client_wait_notification(ss_client *c, uint64_t seen, unsigned timeout_ms)
{
    /* On the thread that delivers notifications none can come while it
     * waits: the count as it is. */
    if (ss_client__in_callback_thread(c))
        return ss_client__count(c);
    struct timespec until;
    ss_client__abstime(&until, timeout_ms);
    pthread_mutex_lock(&c->mu);
    bool entered = !c->closing; /* counted: a close waits for us to leave */
    if (entered)
        c->waiters++;
    while (c->notifications <= seen && !c->closing)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
            break;
    uint64_t n = c->notifications;
    if (entered && --c->waiters == 0)
        pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    return n;
}
