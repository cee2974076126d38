/* plugin.c - the Mosquitto 2.0 plugin entry points: options, the core's
 * objects, callback registration, and cleanup. */
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "plugin.h"

#define SS_EXPORT __attribute__((visibility("default")))

SS_EXPORT int mosquitto_plugin_version(int supported_version_count, const int *supported_versions);
SS_EXPORT int mosquitto_plugin_init(mosquitto_plugin_id_t *identifier, void **userdata,
                                    struct mosquitto_opt *options, int option_count);
SS_EXPORT int mosquitto_plugin_cleanup(void *userdata, struct mosquitto_opt *options,
                                       int option_count);

struct ss_callback {
    int event;
    MOSQ_FUNC_generic_callback fn;
};

static const struct ss_callback ss_callbacks[] = {
    {MOSQ_EVT_MESSAGE, ss_on_message},
    {MOSQ_EVT_TICK, ss_on_tick},
    {MOSQ_EVT_DISCONNECT, ss_on_disconnect},
    {MOSQ_EVT_RELOAD, ss_on_reload},
    {MOSQ_EVT_ACL_CHECK, ss_on_acl_check}, /* last: only with topic protection */
};

static size_t ss__callback_count(const struct ss_plugin *p)
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

static void ss__destroy(struct ss_plugin *p)
{
    if (p->committer.pending || p->committer.syncing) {
        /* A job under way completes; a commit's answers can no longer go
         * out. (Closing the store syncs in any case.) */
        int rc = SS_OK;
        bool commit = p->committer.pending;
        ss_committer_stop(&p->committer);
        ss_committer_collect(&p->committer, &rc);
        if (commit && ss_store_commit_finish(p->store, rc, ss_wall_ms()) != SS_OK)
            ss_log(p, MOSQ_LOG_ERR, "the last commit failed at shutdown");
    }
    ss_committer_destroy(&p->committer);
    ss_queue_free(p);
    if (p->engine && ss_store_in_batch(p->store)) {
        /* Shutting down: what was executed is committed, then sent. */
        if (ss_engine_commit(p->engine, ss_wall_ms()) != SS_OK)
            ss_outbox_fail(&p->outbox, SS_E_IO);
    }
    ss_outbox_free(&p->outbox);
    ss_engine_free(p->engine);
    ss_store_close(p->store);
    ss_watch_free(p->watch);
    ss_dedup_free(p->dedup);
    ss_buf_free(&p->scratch);
    ss_buf_free(&p->topic);
    ss_acl_free(p->acl);
    ss_options_free(&p->opt);
    free(p);
}

static int ss__open(struct ss_plugin *p)
{
    ss_store_options so = ss_store_options_default();
    so.path = p->opt.data_dir;
    so.max_keys = p->opt.max_keys;
    so.max_bytes = p->opt.max_store_bytes;
    so.map_size = p->opt.map_size;
    so.sync = p->opt.sync;
    so.sync_interval_ms = (uint32_t)p->opt.sync_interval_ms;
    so.external_sync = true; /* the committer's thread runs the periodic fsync (tick.c) */
    so.checkpoint_interval_ms = (uint32_t)p->opt.checkpoint_interval_ms;
    so.journal_max_bytes = p->opt.journal_max_bytes;
    int rc = ss_store_open(&so, &p->store);
    if (rc == SS_E_BUSY) {
        mosquitto_log_printf(MOSQ_LOG_ERR,
                             "statestore: cannot open the store in %s: another process has it open",
                             p->opt.data_dir);
        return rc;
    }
    if (rc != SS_OK) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: cannot open the store in %s: %s",
                             p->opt.data_dir, ss_strerror(rc));
        return rc;
    }
    struct ss_broker_conf bc;
    ss_read_broker_conf(&bc);
    uint64_t limit = bc.message_size_limit;
    p->opt.max_value_bytes = limit > SS_NOTIFY_OVERHEAD ? limit - SS_NOTIFY_OVERHEAD : 1;
    p->defer_other_topics = p->opt.other_topics == SS_OTHER_TOPICS_DEFER ||
                            (p->opt.other_topics == SS_OTHER_TOPICS_AUTO &&
                             (bc.has_acl_file || bc.other_plugins > 0));
    if (p->opt.acl_file && (rc = ss_acl_reload(p)) != SS_OK)
        return rc;
    ss_engine_options eo = {.node_id = p->opt.node_id,
                            .max_key_len = (size_t)p->opt.max_key_length,
                            .max_value_len = (size_t)p->opt.max_value_bytes,
                            .on_event = ss_on_engine_event,
                            .event_ctx = p,
                            .on_keynotify = ss_on_keynotify,
                            .keynotify_ctx = p,
                            .on_authorize = ss_authorize,
                            .authorize_ctx = p};
    if ((rc = ss_engine_new(p->store, &eo, &p->engine)) != SS_OK)
        return rc;
    if ((rc = ss_watch_new(p->opt.max_registrations_per_client, p->opt.max_registrations, &p->watch)) !=
        SS_OK)
        return rc;
    ss_dedup_limits dl = {p->opt.dedup_window_ms, (size_t)p->opt.dedup_max_entries,
                          (size_t)p->opt.dedup_max_bytes};
    if ((rc = ss_dedup_new(&dl, &p->dedup)) != SS_OK || (rc = ss_queue_new(p)) != SS_OK)
        return rc;
    return ss_committer_start(&p->committer, p->store, p->opt.sync == SS_SYNC_ALWAYS);
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
        ss__destroy(p);
        return rc;
    }
    if (ss__open(p) != SS_OK) {
        ss__destroy(p);
        return MOSQ_ERR_UNKNOWN;
    }
    for (size_t i = 0; i < ss__callback_count(p); i++) {
        rc = mosquitto_callback_register(identifier, ss_callbacks[i].event, ss_callbacks[i].fn, NULL, p);
        if (rc != MOSQ_ERR_SUCCESS) {
            for (size_t j = 0; j < i; j++)
                mosquitto_callback_unregister(identifier, ss_callbacks[j].event, ss_callbacks[j].fn, NULL);
            ss__destroy(p);
            return rc;
        }
    }
    ss_options_log(&p->opt, ss_store_key_count(p->store));
    if (p->opt.topic_protection)
        ss_log(p, MOSQ_LOG_NOTICE, "topic protection on; other topics are %s",
               p->defer_other_topics ? "left to the acl_file and other plugins" : "allowed");
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
    for (size_t i = 0; i < ss__callback_count(p); i++)
        mosquitto_callback_unregister(p->id, ss_callbacks[i].event, ss_callbacks[i].fn, NULL);
    ss__destroy(p);
    return MOSQ_ERR_SUCCESS;
}
