/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* notify.c - KEYNOTIFY registrations and the notifications they cause.
 *
 * Notifications go straight into the registered client's session
 * (mosquitto_broker_publish with its client id): no subscription is needed,
 * as the .NET SDK expects. Registrations are dropped when the client
 * disconnects, whatever its session settings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "notify.h"

#include "../core/codec.h"
#include "../core/errors.h"
#include "../core/hex.h"
#include "batch.h"
#include "plugin.h"

/* The notification topic of (client, key) as a C string in p->topic. */
static int ss_notify__topic(struct ss_plugin *p, ss_bytes client, ss_bytes key)
{
    ss_buf *t = &p->topic;
    ss_buf_clear(t);
    int rc = ss_buf_append_str(t, SS_NOTIFY_PREFIX "/");
    if (rc == SS_OK)
        rc = ss_hex_append(t, client.data, client.len, true);
    if (rc == SS_OK)
        rc = ss_buf_append_str(t, "/command/notify/");
    if (rc == SS_OK)
        rc = ss_hex_append(t, key.data, key.len, true);
    if (rc == SS_OK)
        rc = ss_buf_append(t, "", 1);
    if (rc != SS_OK)
        return rc;
    return t->len - 1 <= SS_TOPIC_MAX ? SS_OK : SS_E_QUOTA;
}

struct ss_notify_fanout {
    struct ss_plugin *p;
    const ss_change *ev;
    char version[SS_HLC_TEXT_MAX + 1]; /* formatted for the first watcher */
};

static void ss_notify__one(void *ctx, ss_bytes client)
{
    struct ss_notify_fanout *f = ctx;
    struct ss_plugin *p = f->p;
    if (f->version[0] == '\0')
        f->version[ss_hlc_format(&f->ev->version, f->version)] = '\0';
    if (ss_notify__topic(p, client, f->ev->key) != SS_OK)
        return;
    char *id = strndup((const char *)client.data, client.len);
    char *topic = strdup((const char *)p->topic.data);
    ss_buf payload = SS_BUF_INIT;
    int rc = f->ev->type == SS_CHANGE_SET
                 ? ss_codec_put_notify_set(&payload, f->ev->value.data, f->ev->value.len)
                 : ss_codec_put_notify_delete(&payload);
    mosquitto_property *props = NULL;
    if (rc == SS_OK && id != NULL && topic != NULL &&
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", f->version) ==
            MOSQ_ERR_SUCCESS) {
        /* The batch owns all of it from here, even when it fails. */
        ss_batch_notify(p->batch, id, topic, payload.data, payload.len, props);
        return;
    }
    free(id);
    free(topic);
    ss_buf_free(&payload);
    mosquitto_property_free_all(&props);
    p->metrics.notifications_dropped++;
    ss_log(p, MOSQ_LOG_WARNING, "out of memory: a notification was dropped");
}

/* A client whose pattern matches the changed key: told unless its
 * KEYNOTIFY of the key told it already, and only of a key it may read. */
static void ss_notify__pattern(void *ctx, ss_bytes client, const char *username)
{
    struct ss_notify_fanout *f = ctx;
    struct ss_plugin *p = f->p;
    if (ss_watch_has(p->watch, client, f->ev->key))
        return;
    if (p->acl && !ss_acl_allows(p->acl, (const char *)client.data, username, SS_ACCESS_READ, f->ev->key))
        return;
    ss_notify__one(ctx, client);
}

/* A client registered for the changed key (KEYNOTIFY): told only while
 * it may read the key (the key ACL may have been reloaded since). */
static void ss_notify__registered(void *ctx, ss_bytes client, const char *username)
{
    struct ss_notify_fanout *f = ctx;
    struct ss_plugin *p = f->p;
    if (p->acl && !ss_acl_allows(p->acl, (const char *)client.data, username, SS_ACCESS_READ, f->ev->key))
        return;
    ss_notify__one(ctx, client);
}

void ss_notify_change(void *ctx, const ss_change *c)
{
    /* Most writes have no watcher: the version is formatted only for one. */
    struct ss_notify_fanout f = {.p = ctx, .ev = c, .version = ""};
    ss_watch_each(f.p->watch, c->key, ss_notify__registered, &f);
    ss_pwatch_each(f.p->pwatch, c->key, ss_notify__pattern, &f);
}

static void ss_notify__any(void *ctx, ss_bytes client, const char *username)
{
    (void)client;
    (void)username;
    *(bool *)ctx = true;
}

/* The feed's TOLD mark: every change made up to batch seq was told, so
 * the KEYNOTIFY ... STOPs of those batches take effect. */
static void ss_notify__told(void *ctx, uint64_t seq)
{
    struct ss_plugin *p = ctx;
    ss_watch_settle(p->watch, seq + 1);
}

/* The feed's filter: does anyone observe key? */
static bool ss_notify__wanted(void *ctx, ss_bytes key)
{
    struct ss_plugin *p = ctx;
    bool any = false;
    ss_watch_each(p->watch, key, ss_notify__any, &any);
    return any || (p->pwatch && ss_pwatch_any(p->pwatch, key));
}

void ss_notify_attach(struct ss_plugin *p)
{
    p->backend->wanted = ss_notify__wanted;
    p->backend->wanted_ctx = p;
    p->backend->told = ss_notify__told;
    p->backend->told_ctx = p;
}

/* The option that sets a limit of the registrations, for the log. */
static const char *ss_notify__limit_name(ss_watch_limit limit)
{
    switch (limit) {
    case SS_WATCH_LIMIT_PER_CLIENT:
        return "max_registrations_per_client";
    case SS_WATCH_LIMIT_TOTAL:
        return "max_registrations";
    case SS_WATCH_LIMIT_BYTES:
        return "max_registration_bytes";
    default:
        return "none";
    }
}

int ss_on_keynotify(void *ctx, void *caller, ss_bytes key, bool stop)
{
    struct ss_plugin *p = ctx;
    const struct ss_caller *who = caller;
    const char *id = who->id;
    ss_bytes client = {(const uint8_t *)id, strlen(id)};
    /* Changes made before the STOP (earlier in its batch, or in batches
     * still committing) are told when their commit ends, which may be
     * after this: the registration stays until then. */
    if (stop)
        return ss_watch_stop(p->watch, client, key, ss_batch_open_seq(p->batch));
    /* Received before its client disconnected, run after: as if it had
     * registered and the disconnect had dropped the registration. */
    if (who->gone)
        return 1;
    /* A key whose notification topic would not fit cannot be observed. */
    int rc = ss_notify__topic(p, client, key);
    if (rc == SS_E_QUOTA)
        ss_log(p, MOSQ_LOG_NOTICE, "request from %s refused: a KEYNOTIFY's notification topic would be %zu "
               "bytes (the client id and the key of %zu bytes, in hex), longer than MQTT allows (%u)",
               id, p->topic.len - 1, key.len, SS_TOPIC_MAX);
    if (rc != SS_OK)
        return rc;
    rc = ss_watch_add(p->watch, client, key);
    if (rc == SS_E_QUOTA)
        ss_log(p, MOSQ_LOG_WARNING, "client %s reached a KEYNOTIFY limit: %s", id,
               ss_notify__limit_name(ss_watch_refused(p->watch)));
    if (rc < 0)
        return rc;
    /* Its username, against which each notification is checked: the key
     * ACL may be reloaded while it observes. */
    if (ss_watch_set_user(p->watch, client, who->username) != SS_OK) {
        if (rc == 1)
            ss_watch_remove(p->watch, client, key);
        return SS_E_NOMEM;
    }
    return 1;
}

size_t ss_notify_on_watch(struct ss_plugin *p, const char *client_id, const char *username, const ss_request *q,
                          char *text, size_t cap)
{
    bool stop = q->argc == 3 && q->argv[2].len == 4 && memcmp(q->argv[2].data, "STOP", 4) == 0;
    if (q->argc != 2 && !stop)
        return (size_t)snprintf(text, cap, "error usage: WATCH PATTERN [STOP]\n");
    ss_bytes client = {(const uint8_t *)client_id, strlen(client_id)};
    if (stop)
        return (size_t)snprintf(text, cap, "%s\n", ss_pwatch_remove(p->pwatch, client, q->argv[1]) ? "ok" : "absent");
    int rc = ss_pwatch_add(p->pwatch, client, username, q->argv[1]);
    if (rc >= 0)
        return (size_t)snprintf(text, cap, "ok\n");
    if (rc == SS_E_LIMIT) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: a pattern watch refused: with it, matching one change "
               "could take more than max_pattern_watch_work steps", client_id);
        return (size_t)snprintf(text, cap, "error matching this pattern could make a change cost more than "
                                           "max_pattern_watch_work\n");
    }
    if (rc != SS_E_QUOTA)
        return (size_t)snprintf(text, cap, "error %s\n", ss_strerror(rc));
    bool mine = p->opt.max_pattern_watches_per_client &&
                ss_pwatch_client_count(p->pwatch, client) >= p->opt.max_pattern_watches_per_client;
    ss_log(p, MOSQ_LOG_WARNING, "client %s reached the %s", client_id,
           mine ? "pattern watches' limit per client" : "pattern watches' limit");
    return (size_t)snprintf(text, cap, "error %s\n",
                            mine ? "too many pattern watches for this client (max_pattern_watches_per_client)"
                                 : "too many pattern watches on this broker (max_pattern_watches)");
}

int ss_on_disconnect(int event, void *event_data, void *userdata)
{
    (void)event;
    struct ss_plugin *p = userdata;
    struct mosquitto_evt_disconnect *ed = event_data;
    const char *id = mosquitto_client_id(ed->client);
    if (id == NULL)
        return MOSQ_ERR_SUCCESS;
    ss_bytes client = {(const uint8_t *)id, strlen(id)};
    ss_batch_client_gone(p->batch, id);
    size_t n = ss_watch_drop_client(p->watch, client) + ss_pwatch_drop_client(p->pwatch, client);
    if (n)
        ss_log(p, MOSQ_LOG_DEBUG, "client %s disconnected: %zu registrations dropped", id, n);
    return MOSQ_ERR_SUCCESS;
}

