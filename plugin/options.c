/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* options.c - the plugin_opt_* settings: one table of names, each with
 * its parser and where it goes; defaults first, then the config lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "../etcd/backend_etcd.h"
#include "options.h"
#include "plugin.h"

enum ss_opt_kind { SS_OPT_STRING, SS_OPT_U64, SS_OPT_SYNC, SS_OPT_LOG, SS_OPT_BOOL, SS_OPT_OTHER, SS_OPT_BACKEND };

struct ss_opt_spec {
    const char *name;
    enum ss_opt_kind kind;
    size_t offset;
    uint64_t min, max; /* SS_OPT_U64 */
};

/* Where Debian keeps the state of services. */
#define SS_DATA_DIR_DEFAULT "/var/lib/statestore"

#define SS_OFF(field) offsetof(struct ss_plugin_options, field)

static const struct ss_opt_spec ss_opt_table[] = {
    {"backend", SS_OPT_BACKEND, SS_OFF(backend), 0, 0},
    {"etcd_endpoints", SS_OPT_STRING, SS_OFF(etcd_endpoints), 0, 0},
    {"etcd_prefix", SS_OPT_STRING, SS_OFF(etcd_prefix), 0, 0},
    {"etcd_ca_file", SS_OPT_STRING, SS_OFF(etcd_ca_file), 0, 0},
    {"etcd_cert_file", SS_OPT_STRING, SS_OFF(etcd_cert_file), 0, 0},
    {"etcd_key_file", SS_OPT_STRING, SS_OFF(etcd_key_file), 0, 0},
    {"etcd_username", SS_OPT_STRING, SS_OFF(etcd_username), 0, 0},
    {"etcd_password", SS_OPT_STRING, SS_OFF(etcd_password), 0, 0},
    {"etcd_timeout_ms", SS_OPT_U64, SS_OFF(etcd_timeout_ms), 50, 600000},
    {"etcd_unavailable_ms", SS_OPT_U64, SS_OFF(etcd_unavailable_ms), 1, 3600000},
    {"etcd_max_txn_ops", SS_OPT_U64, SS_OFF(etcd_max_txn_ops), 8, 1000000},
    {"etcd_max_request_bytes", SS_OPT_U64, SS_OFF(etcd_max_request_bytes), (uint64_t)64 << 10, (uint64_t)1 << 31},
    {"etcd_tombstone_ms", SS_OPT_U64, SS_OFF(etcd_tombstone_ms), 1000, (uint64_t)7 * 24 * 3600 * 1000},
    {"data_dir", SS_OPT_STRING, SS_OFF(data_dir), 0, 0},
    {"node_id", SS_OPT_STRING, SS_OFF(node_id), 0, 0},
    {"fsync", SS_OPT_SYNC, SS_OFF(sync), 0, 0},
    {"fsync_interval_ms", SS_OPT_U64, SS_OFF(sync_interval_ms), 1, 3600000},
    {"checkpoint_interval_ms", SS_OPT_U64, SS_OFF(checkpoint_interval_ms), 1, 3600000},
    {"journal_max_bytes", SS_OPT_U64, SS_OFF(journal_max_bytes), 4096, (uint64_t)1 << 40},
    {"max_keys", SS_OPT_U64, SS_OFF(max_keys), 0, UINT64_MAX / 2},
    {"max_store_bytes", SS_OPT_U64, SS_OFF(max_store_bytes), 4096, (uint64_t)1 << 46},
    {"map_size", SS_OPT_U64, SS_OFF(map_size), 0, (uint64_t)1 << 48},
    {"max_key_length", SS_OPT_U64, SS_OFF(max_key_length), 1, 32700},
    {"max_registrations_per_client", SS_OPT_U64, SS_OFF(max_registrations_per_client), 0, 100000000},
    {"max_registrations", SS_OPT_U64, SS_OFF(max_registrations), 0, 1000000000},
    {"max_pattern_watches_per_client", SS_OPT_U64, SS_OFF(max_pattern_watches_per_client), 0, 1000000},
    {"max_pattern_watches", SS_OPT_U64, SS_OFF(max_pattern_watches), 0, 100000000},
    {"dedup_window_ms", SS_OPT_U64, SS_OFF(dedup_window_ms), 0, 3600000},
    {"dedup_max_entries", SS_OPT_U64, SS_OFF(dedup_max_entries), 0, 100000000},
    {"dedup_max_bytes", SS_OPT_U64, SS_OFF(dedup_max_bytes), 0, (uint64_t)1 << 40},
    {"max_queued_bytes", SS_OPT_U64, SS_OFF(max_queued_bytes), 0, (uint64_t)1 << 40},
    {"log_level", SS_OPT_LOG, SS_OFF(log_level), 0, 0},
    {"acl_file", SS_OPT_STRING, SS_OFF(acl_file), 0, 0},
    {"backup_dir", SS_OPT_STRING, SS_OFF(backup_dir), 0, 0},
    {"topic_protection", SS_OPT_BOOL, SS_OFF(topic_protection), 0, 0},
    {"compact_on_start", SS_OPT_BOOL, SS_OFF(compact_on_start), 0, 0},
    {"test_fail_write_at", SS_OPT_U64, SS_OFF(test_fail_write_at), 0, UINT64_MAX / 2},
    {"test_fail_sync_at", SS_OPT_U64, SS_OFF(test_fail_sync_at), 0, UINT64_MAX / 2},
    {"other_topics", SS_OPT_OTHER, SS_OFF(other_topics), 0, 0},
};

static const struct {
    const char *name;
    int mask;
} ss_log_levels[] = {
    {"error", MOSQ_LOG_ERR},
    {"warning", MOSQ_LOG_ERR | MOSQ_LOG_WARNING},
    {"notice", MOSQ_LOG_ERR | MOSQ_LOG_WARNING | MOSQ_LOG_NOTICE},
    {"info", MOSQ_LOG_ERR | MOSQ_LOG_WARNING | MOSQ_LOG_NOTICE | MOSQ_LOG_INFO},
    {"debug", MOSQ_LOG_ERR | MOSQ_LOG_WARNING | MOSQ_LOG_NOTICE | MOSQ_LOG_INFO | MOSQ_LOG_DEBUG},
};

static void ss_options__bad(const char *name, const char *value, const char *why)
{
    mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_%s: invalid value \"%s\": %s", name,
                         value, why);
}

static int ss_options__set(struct ss_plugin_options *o, const struct ss_opt_spec *s, const char *value)
{
    char *field = (char *)o + s->offset;
    switch (s->kind) {
    case SS_OPT_STRING: {
        if (value[0] == '\0') {
            ss_options__bad(s->name, value, "must not be empty");
            return MOSQ_ERR_INVAL;
        }
        /* A relative directory would follow wherever the broker happened
         * to be started (a daemon runs from /): the data would seem lost. */
        if ((strcmp(s->name, "data_dir") == 0 || strcmp(s->name, "backup_dir") == 0) && value[0] != '/') {
            ss_options__bad(s->name, value, "must be an absolute path (a relative one would depend on "
                                    "the directory the broker was started from)");
            return MOSQ_ERR_INVAL;
        }
        if (strcmp(s->name, "node_id") == 0 && (strchr(value, ':') || strlen(value) > SS_HLC_NODE_MAX)) {
            ss_options__bad(s->name, value, "must be 1 to 255 bytes without ':'");
            return MOSQ_ERR_INVAL;
        }
        char *copy = strdup(value);
        if (copy == NULL)
            return MOSQ_ERR_NOMEM;
        free(*(char **)field);
        *(char **)field = copy;
        return MOSQ_ERR_SUCCESS;
    }
    case SS_OPT_U64: {
        uint64_t v;
        if (ss_parse_u64((const uint8_t *)value, strlen(value), s->max, &v) != SS_OK || v < s->min) {
            char why[96];
            snprintf(why, sizeof why, "must be an integer from %llu to %llu",
                     (unsigned long long)s->min, (unsigned long long)s->max);
            ss_options__bad(s->name, value, why);
            return MOSQ_ERR_INVAL;
        }
        *(uint64_t *)field = v;
        return MOSQ_ERR_SUCCESS;
    }
    case SS_OPT_SYNC:
        if (strcmp(value, "always") == 0)
            o->sync = SS_SYNC_ALWAYS;
        else if (strcmp(value, "periodic") == 0)
            o->sync = SS_SYNC_PERIODIC;
        else {
            ss_options__bad(s->name, value, "must be \"always\" or \"periodic\"");
            return MOSQ_ERR_INVAL;
        }
        return MOSQ_ERR_SUCCESS;
    case SS_OPT_BOOL:
        if (strcmp(value, "true") == 0)
            *(bool *)field = true;
        else if (strcmp(value, "false") == 0)
            *(bool *)field = false;
        else {
            ss_options__bad(s->name, value, "must be true or false");
            return MOSQ_ERR_INVAL;
        }
        return MOSQ_ERR_SUCCESS;
    case SS_OPT_OTHER:
        if (strcmp(value, "auto") == 0)
            o->other_topics = SS_OTHER_TOPICS_AUTO;
        else if (strcmp(value, "allow") == 0)
            o->other_topics = SS_OTHER_TOPICS_ALLOW;
        else if (strcmp(value, "defer") == 0)
            o->other_topics = SS_OTHER_TOPICS_DEFER;
        else {
            ss_options__bad(s->name, value, "must be auto, allow or defer");
            return MOSQ_ERR_INVAL;
        }
        return MOSQ_ERR_SUCCESS;
    case SS_OPT_BACKEND:
        if (strcmp(value, "lmdb") == 0)
            o->backend = SS_BACKEND_LMDB;
        else if (strcmp(value, "etcd") == 0)
            o->backend = SS_BACKEND_ETCD;
        else {
            ss_options__bad(s->name, value, "must be lmdb or etcd");
            return MOSQ_ERR_INVAL;
        }
        return MOSQ_ERR_SUCCESS;
    case SS_OPT_LOG:
        for (size_t i = 0; i < sizeof ss_log_levels / sizeof ss_log_levels[0]; i++) {
            if (strcmp(value, ss_log_levels[i].name) == 0) {
                o->log_level = ss_log_levels[i].mask;
                return MOSQ_ERR_SUCCESS;
            }
        }
        ss_options__bad(s->name, value, "must be error, warning, notice, info or debug");
        return MOSQ_ERR_INVAL;
    }
    return MOSQ_ERR_INVAL;
}

int ss_options_parse(struct ss_plugin_options *o, struct mosquitto_opt *opts, int n)
{
    memset(o, 0, sizeof *o);
    o->data_dir = strdup(SS_DATA_DIR_DEFAULT);
    o->node_id = strdup(SS_NODE_ID_DEFAULT);
    if (o->data_dir == NULL || o->node_id == NULL)
        return MOSQ_ERR_NOMEM;
    o->sync = SS_SYNC_PERIODIC;
    o->sync_interval_ms = 1000;
    o->checkpoint_interval_ms = SS_STORE_CHECKPOINT_MS_DEFAULT;
    o->journal_max_bytes = SS_STORE_JOURNAL_MAX_DEFAULT;
    o->max_store_bytes = SS_STORE_MAX_BYTES_DEFAULT;
    o->max_key_length = 32000;
    o->max_registrations_per_client = 1000;
    o->max_registrations = 1000000;
    o->max_pattern_watches_per_client = 100;
    o->max_pattern_watches = 10000;
    o->dedup_window_ms = 10000;
    o->dedup_max_entries = 100000;
    o->dedup_max_bytes = (uint64_t)64 << 20;
    o->max_queued_bytes = (uint64_t)64 << 20;
    o->log_level = ss_log_levels[2].mask;
    o->topic_protection = true;
    o->etcd_timeout_ms = 2000;
    o->etcd_unavailable_ms = 5000;
    o->etcd_max_txn_ops = 128;
    o->etcd_max_request_bytes = (uint64_t)3 << 19;
    o->etcd_tombstone_ms = SS_BACKEND_ETCD_TOMBSTONE_MS;
    for (int i = 0; i < n; i++) {
        const struct ss_opt_spec *spec = NULL;
        for (size_t j = 0; j < sizeof ss_opt_table / sizeof ss_opt_table[0]; j++)
            if (strcmp(opts[i].key, ss_opt_table[j].name) == 0)
                spec = &ss_opt_table[j];
        if (spec == NULL) {
            mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: unknown option plugin_opt_%s", opts[i].key);
            return MOSQ_ERR_INVAL;
        }
        int rc = ss_options__set(o, spec, opts[i].value ? opts[i].value : "");
        if (rc != MOSQ_ERR_SUCCESS)
            return rc;
    }
    /* On etcd the limits cost contention between brokers (CLUSTER.md):
     * max_store_bytes applies only when given, as max_keys does. */
    bool bytes_given = false;
    for (int i = 0; i < n; i++)
        bytes_given = bytes_given || strcmp(opts[i].key, "max_store_bytes") == 0;
    if (o->backend == SS_BACKEND_ETCD && !bytes_given)
        o->max_store_bytes = 0;
    if (o->backend == SS_BACKEND_ETCD && o->etcd_endpoints == NULL) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_backend etcd needs plugin_opt_etcd_endpoints "
                             "(comma-separated URLs, e.g. http://127.0.0.1:2379)");
        return MOSQ_ERR_INVAL;
    }
    if (o->backend == SS_BACKEND_ETCD && o->backup_dir) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_backup_dir: not available with the etcd "
                             "backend (etcdctl snapshot save backs up the cluster)");
        return MOSQ_ERR_INVAL;
    }
    if (o->etcd_password && o->etcd_username == NULL) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_etcd_password needs plugin_opt_etcd_username");
        return MOSQ_ERR_INVAL;
    }
    if ((o->etcd_cert_file == NULL) != (o->etcd_key_file == NULL)) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_etcd_cert_file and plugin_opt_etcd_key_file "
                             "go together");
        return MOSQ_ERR_INVAL;
    }
    return MOSQ_ERR_SUCCESS;
}

void ss_options_free(struct ss_plugin_options *o)
{
    free(o->data_dir);
    free(o->node_id);
    free(o->acl_file);
    free(o->backup_dir);
    free(o->etcd_endpoints);
    free(o->etcd_prefix);
    free(o->etcd_ca_file);
    free(o->etcd_cert_file);
    free(o->etcd_key_file);
    free(o->etcd_username);
    if (o->etcd_password)
        explicit_bzero(o->etcd_password, strlen(o->etcd_password));
    free(o->etcd_password);
    o->etcd_username = o->etcd_password = NULL;
    o->etcd_endpoints = o->etcd_prefix = NULL;
    o->etcd_ca_file = o->etcd_cert_file = o->etcd_key_file = NULL;
    o->data_dir = NULL;
    o->node_id = NULL;
    o->acl_file = NULL;
    o->backup_dir = NULL;
}

void ss_options_log(const struct ss_plugin_options *o, uint64_t keys)
{
    const char *level = "custom";
    for (size_t i = 0; i < sizeof ss_log_levels / sizeof ss_log_levels[0]; i++)
        if (ss_log_levels[i].mask == o->log_level)
            level = ss_log_levels[i].name;
    /* Where the data is: the backend's own settings. */
    char where[1024];
    if (o->backend == SS_BACKEND_ETCD)
        snprintf(where, sizeof where, "backend=etcd etcd_endpoints=%s etcd_prefix=%s etcd_tls=%s etcd_username=%s "
                 "etcd_timeout_ms=%llu etcd_unavailable_ms=%llu etcd_max_txn_ops=%llu "
                 "etcd_max_request_bytes=%llu etcd_tombstone_ms=%llu", o->etcd_endpoints,
                 o->etcd_prefix ? o->etcd_prefix : "statestore/",
                 o->etcd_ca_file || o->etcd_cert_file ? "files" : "system",
                 o->etcd_username ? o->etcd_username : "(none)",
                 (unsigned long long)o->etcd_timeout_ms, (unsigned long long)o->etcd_unavailable_ms,
                 (unsigned long long)o->etcd_max_txn_ops, (unsigned long long)o->etcd_max_request_bytes,
                 (unsigned long long)o->etcd_tombstone_ms);
    else
        snprintf(where, sizeof where, "backend=lmdb data_dir=%s keys=%llu fsync=%s fsync_interval_ms=%llu "
                 "checkpoint_interval_ms=%llu journal_max_bytes=%llu", o->data_dir, (unsigned long long)keys,
                 o->sync == SS_SYNC_ALWAYS ? "always" : "periodic", (unsigned long long)o->sync_interval_ms,
                 (unsigned long long)o->checkpoint_interval_ms, (unsigned long long)o->journal_max_bytes);
    mosquitto_log_printf(
        MOSQ_LOG_NOTICE,
        "statestore: %s node_id=%s "
        "max_keys=%llu max_store_bytes=%llu max_key_length=%llu "
        "max_registrations_per_client=%llu max_registrations=%llu max_pattern_watches_per_client=%llu "
        "max_pattern_watches=%llu dedup_window_ms=%llu "
        "dedup_max_entries=%llu dedup_max_bytes=%llu max_queued_bytes=%llu log_level=%s "
        "max_value_bytes=%llu "
        "acl_file=%s topic_protection=%s other_topics=%s compact_on_start=%s backup_dir=%s",
        where, o->node_id, (unsigned long long)o->max_keys, (unsigned long long)o->max_store_bytes,
        (unsigned long long)o->max_key_length, (unsigned long long)o->max_registrations_per_client,
        (unsigned long long)o->max_registrations, (unsigned long long)o->max_pattern_watches_per_client,
        (unsigned long long)o->max_pattern_watches, (unsigned long long)o->dedup_window_ms,
        (unsigned long long)o->dedup_max_entries, (unsigned long long)o->dedup_max_bytes,
        (unsigned long long)o->max_queued_bytes, level,
        (unsigned long long)o->max_value_bytes, o->acl_file ? o->acl_file : "(none)",
        o->topic_protection ? "true" : "false",
        o->other_topics == SS_OTHER_TOPICS_ALLOW ? "allow"
        : o->other_topics == SS_OTHER_TOPICS_DEFER ? "defer" : "auto",
        o->compact_on_start ? "true" : "false", o->backup_dir ? o->backup_dir : "(none)");
}

void ss_log(const struct ss_plugin *p, int level, const char *fmt, ...)
{
    if (!(p->opt.log_level & level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mosquitto_log_printf(level, "statestore: %s", msg);
}
