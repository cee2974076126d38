/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* plugin.c - the Mosquitto 2.0 plugin entry points: options, the core's
 * objects, callback registration, and cleanup. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../backends/open.h"
#include "../core/errors.h"
#include "../core/scan.h"
#include "admin.h"
#include "backup.h"
#include "batch.h"
#include "broker_conf.h"
#include "notify.h"
#include "plugin.h"
#include "protect.h"
#include "request.h"
#include "waker.h"

#define SS_EXPORT __attribute__((visibility("default")))

SS_EXPORT int mosquitto_plugin_version(int supported_version_count, const int *supported_versions);
SS_EXPORT int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata,
                                    struct mosquitto_opt *options, int option_count);
SS_EXPORT int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options,
                                       int option_count);

/* MOSQ_EVT_TICK, once per broker loop iteration: the batch commits and
 * publishes (batch.h). Kept O(1) when nothing is due and nothing is
 * pending: the broker ticks more than 100 000 times a second under load. */
static int ss_plugin__on_tick(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)event_data;
    struct ss_plugin *p = userdata;
    uint64_t now = ss_wall_ms();
    ss_batch_tick(p->batch, now);
    ss_metrics_tick(p, now);
    if (p->wswake.looking && !ss_wswake_tick(&p->wswake))
        ss_log(p, MOSQ_LOG_WARNING, "websockets_wake_ms: the websockets listeners of the configuration "
                                    "were not found among the broker's sockets; the broker serves them at "
                                    "its own pace");
    return MOSQ_ERR_SUCCESS;
}

struct ss_callback {
    int event;
    MOSQ_FUNC_generic_callback fn;
};

static const struct ss_callback ss_callbacks[] = {
    {MOSQ_EVT_MESSAGE, ss_on_message},
    {MOSQ_EVT_TICK, ss_plugin__on_tick},
    {MOSQ_EVT_DISCONNECT, ss_on_disconnect},
    {MOSQ_EVT_RELOAD, ss_on_reload},
    {MOSQ_EVT_ACL_CHECK, ss_on_acl_check}, /* last: only with topic protection */
};

static size_t ss_plugin__callback_count(const struct ss_plugin *p)
{
    size_t n = sizeof ss_callbacks / sizeof ss_callbacks[0];
    return p->opt.topic_protection ? n : n - 1;
}

int mosquitto_plugin_version(int supported_version_count, const int *supported_versions)
{
    for (int i = 0; i < supported_version_count; i++)
        if (supported_versions[i] == 5)
            return 5;
    return -1;
}

static void ss_plugin__destroy(struct ss_plugin *p)
{
    ss_waker_quiet(&p->waker); /* no tick comes any more to see a wake-up */
    ss_backup_free(p->backup); /* a copy under way ends first: it needs the store */
    ss_batch_free(p->batch); /* commits what was executed */
    p->batch = NULL;
    ss_admin_free(p->admin);
    ss_engine_free(p->engine);
    if (p->backend) /* its threads end: no wake-up after this */
        p->backend->ops->destroy(p->backend);
    ss_wswake_stop(&p->wswake); /* before the wake signal's handler goes */
    ss_waker_stop(&p->waker);
    ss_watch_free(p->watch);
    ss_pwatch_free(p->pwatch);
    ss_dedup_free(p->dedup);
    ss_buf_free(&p->topic);
    ss_acl_free(p->acl);
    ss_options_free(&p->opt);
    free(p);
}

static void ss_plugin__backend_log(void *ctx, int level, const char *msg)
{
    static const int levels[] = {MOSQ_LOG_ERR, MOSQ_LOG_WARNING, MOSQ_LOG_NOTICE, MOSQ_LOG_INFO};
    ss_log(ctx, levels[level >= 0 && level <= SS_LOG_INFO ? level : 0], "%s", msg);
}

/* The backend plugin_opt_backend names, started: its wake-ups reach the
 * broker's thread (waker.h). */
static int ss_plugin__open_backend(struct ss_plugin *p)
{
    int rc = ss_backends_open(p->opt.backend, ss_plugin__backend_log, p, &p->backend);
    if (rc != SS_OK)
        return rc;
    ss_backend *be = p->backend;
    if ((rc = ss_waker_start(&p->waker, !be->ops->wake_repeats)) != SS_OK)
        return rc;
    be->wake = ss_waker_poke;
    be->wake_ctx = &p->waker;
    char why[400] = "";
    if ((rc = be->ops->start(be->impl, why, sizeof why)) != SS_OK)
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: %s", why);
    return rc;
}

static int ss_plugin__open(struct ss_plugin *p)
{
    int rc = ss_plugin__open_backend(p);
    if (rc != SS_OK)
        return rc;
    struct ss_broker_conf bc;
    ss_read_broker_conf(&bc);
    /* Mosquitto 2.0 never delivers the tick event to a plugin loaded per
     * listener: no batch would ever commit, and every request would go
     * unanswered (docs/CONFIGURATION.md). */
    if (bc.per_listener_settings) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: the broker's configuration has per_listener_settings true, "
                             "under which Mosquitto 2.0 never gives the plugin the tick its commits run in: "
                             "remove it (docs/CONFIGURATION.md)");
        return SS_E_INVAL;
    }
    uint64_t limit = bc.message_size_limit;
    p->sys_interval_s = bc.sys_interval;
    p->opt.max_value_bytes = limit > SS_NOTIFY_OVERHEAD ? limit - SS_NOTIFY_OVERHEAD : 1;
    /* A key SCAN could never list would stop every listing at it. */
    size_t listable = ss_scan_longest_key((size_t)p->opt.max_value_bytes);
    if (listable < p->opt.max_key_length) {
        ss_log(p, MOSQ_LOG_WARNING, "max_key_length lowered from %llu to %zu bytes: a longer key would not fit "
               "in a SCAN answer under the broker's message_size_limit (%llu)",
               (unsigned long long)p->opt.max_key_length, listable, (unsigned long long)limit);
        p->opt.max_key_length = listable ? listable : 1;
    }
    ss_other_topics_decide(p, &bc, true);
    /* The broker puts a listener's mount_point before every topic its
     * clients use: their requests never reach the store's topic. */
    if (bc.mount_points > 0)
        ss_log(p, MOSQ_LOG_WARNING, "the broker's configuration has a mount_point: the state store does not "
               "serve the clients of such a listener (their requests' topic gets its prefix)");
    if (p->opt.acl_file && (rc = ss_acl_reload(p)) != SS_OK)
        return rc;
    if ((rc = ss_wswake_start(&p->wswake, bc.ws_ports, bc.ws_nports, (unsigned)p->opt.websockets_wake_ms)) !=
        SS_OK)
        return rc;
    ss_engine_options eo = {.node_id = p->opt.node_id,
                            .max_key_len = (size_t)p->opt.max_key_length,
                            .max_value_len = (size_t)p->opt.max_value_bytes,
                            .on_keynotify = ss_on_keynotify,
                            .keynotify_ctx = p,
                            .on_authorize = ss_authorize,
                            .authorize_ctx = p,
                            /* as a value: room left for the topic and properties */
                            .max_answer = (size_t)p->opt.max_value_bytes,
                            .scan_page_bytes = (size_t)p->opt.scan_page_bytes};
    ss_notify_attach(p);
    if ((rc = ss_engine_new(p->backend, &eo, &p->engine)) != SS_OK)
        return rc;
    if ((rc = ss_watch_new(p->opt.max_registrations_per_client, p->opt.max_registrations, &p->watch)) !=
        SS_OK)
        return rc;
    ss_watch_set_max_bytes(p->watch, (size_t)p->opt.max_registration_bytes);
    if ((rc = ss_pwatch_new(p->opt.max_pattern_watches_per_client, p->opt.max_pattern_watches, &p->pwatch)) !=
        SS_OK)
        return rc;
    ss_pwatch_set_work_limit(p->pwatch, p->opt.max_pattern_watch_work, (size_t)p->opt.max_key_length);
    ss_dedup_limits dl = {p->opt.dedup_window_ms, (size_t)p->opt.dedup_max_entries,
                          (size_t)p->opt.dedup_max_bytes};
    if ((rc = ss_dedup_new(&dl, &p->dedup)) != SS_OK)
        return rc;
    if ((rc = ss_admin_new(&p->admin)) != SS_OK || (rc = ss_backup_new(&p->backup)) != SS_OK)
        return rc;
    return ss_batch_new(p, &p->batch);
}

/* The backend's "keys" figure, for the start-up line (0 when it has none). */
static void ss_plugin__keys_figure(void *ctx, const char *name, const char *value)
{
    if (strcmp(name, "keys") == 0)
        *(uint64_t *)ctx = strtoull(value, NULL, 10);
}

static uint64_t ss_plugin__key_count(struct ss_plugin *p)
{
    uint64_t keys = 0;
    p->backend->ops->figures(p->backend->impl, ss_wall_ms(), ss_plugin__keys_figure, &keys);
    return keys;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata,
                          struct mosquitto_opt *options, int option_count)
{
    struct ss_plugin *p = calloc(1, sizeof *p);
    if (p == NULL)
        return MOSQ_ERR_NOMEM;
    p->id = identifier;
    int rc = ss_options_parse(&p->opt, options, option_count);
    if (rc != MOSQ_ERR_SUCCESS) {
        ss_plugin__destroy(p);
        return rc;
    }
    if (ss_plugin__open(p) != SS_OK) {
        ss_plugin__destroy(p);
        return MOSQ_ERR_UNKNOWN;
    }
    for (size_t i = 0; i < ss_plugin__callback_count(p); i++) {
        rc = mosquitto_callback_register(identifier, ss_callbacks[i].event, ss_callbacks[i].fn, NULL, p);
        if (rc != MOSQ_ERR_SUCCESS) {
            for (size_t j = 0; j < i; j++)
                mosquitto_callback_unregister(identifier, ss_callbacks[j].event, ss_callbacks[j].fn, NULL);
            ss_plugin__destroy(p);
            return rc;
        }
    }
    ss_options_log(&p->opt, ss_plugin__key_count(p));
    *userdata = p;
    return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options, int option_count)
{
    (void)options;
    (void)option_count;
    struct ss_plugin *p = userdata;
    if (p == NULL)
        return MOSQ_ERR_SUCCESS;
    for (size_t i = 0; i < ss_plugin__callback_count(p); i++)
        mosquitto_callback_unregister(p->id, ss_callbacks[i].event, ss_callbacks[i].fn, NULL);
    ss_plugin__destroy(p);
    return MOSQ_ERR_SUCCESS;
}
