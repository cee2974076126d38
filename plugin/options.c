/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* options.c - the plugin's own plugin_opt_* settings: one table of names
 * (core/option.h), defaults first, then the config lines; an option the
 * plugin does not know is its backend's (backends/open.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../backends/open.h"
#include "../core/command.h"
#include "../core/errors.h"
#include "../core/option.h"
#include "options.h"
#include "plugin.h"

#define SS_OFF(field) offsetof(struct ss_plugin_options, field)

/* In the order of SS_OTHER_TOPICS_*. */
static const char *const ss_other_topics_words[] = {"auto", "allow", "defer", NULL};

static const struct ss_option_spec ss_opt_table[] = {
    {"node_id", SS_OPTION_STRING, SS_OFF(node_id), 0, 0, NULL},
    {"max_keys", SS_OPTION_U64, SS_OFF(max_keys), 0, UINT64_MAX / 2, NULL},
    {"max_store_bytes", SS_OPTION_U64, SS_OFF(max_store_bytes), 4096, (uint64_t)1 << 46, NULL},
    {"max_key_length", SS_OPTION_U64, SS_OFF(max_key_length), 1, 32700, NULL},
    {"max_registrations_per_client", SS_OPTION_U64, SS_OFF(max_registrations_per_client), 0, 100000000, NULL},
    {"max_registrations", SS_OPTION_U64, SS_OFF(max_registrations), 0, 1000000000, NULL},
    {"max_registration_bytes", SS_OPTION_U64, SS_OFF(max_registration_bytes), 0, (uint64_t)1 << 40, NULL},
    {"max_pattern_watches_per_client", SS_OPTION_U64, SS_OFF(max_pattern_watches_per_client), 0, 1000000, NULL},
    {"max_pattern_watches", SS_OPTION_U64, SS_OFF(max_pattern_watches), 0, 100000000, NULL},
    {"max_pattern_watch_work", SS_OPTION_U64, SS_OFF(max_pattern_watch_work), 0, UINT64_MAX / 2, NULL},
    {"dedup_window_ms", SS_OPTION_U64, SS_OFF(dedup_window_ms), 0, 3600000, NULL},
    {"dedup_max_entries", SS_OPTION_U64, SS_OFF(dedup_max_entries), 0, 100000000, NULL},
    {"dedup_max_bytes", SS_OPTION_U64, SS_OFF(dedup_max_bytes), 0, (uint64_t)1 << 40, NULL},
    {"max_queued_bytes", SS_OPTION_U64, SS_OFF(max_queued_bytes), 0, (uint64_t)1 << 40, NULL},
    {"websockets_wake_ms", SS_OPTION_U64, SS_OFF(websockets_wake_ms), 0, 100, NULL},
    {"scan_page_bytes", SS_OPTION_U64, SS_OFF(scan_page_bytes), 256, (uint64_t)1 << 20, NULL},
    {"acl_file", SS_OPTION_STRING, SS_OFF(acl_file), 0, 0, NULL},
    {"backup_dir", SS_OPTION_PATH, SS_OFF(backup_dir), 0, 0, NULL},
    {"topic_protection", SS_OPTION_BOOL, SS_OFF(topic_protection), 0, 0, NULL},
    {"other_topics", SS_OPTION_WORD, SS_OFF(other_topics), 0, 0, ss_other_topics_words},
};
#define SS_OPT_COUNT (sizeof ss_opt_table / sizeof ss_opt_table[0])

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

/* log_level: one of ss_log_levels' names. */
static int ss_options__log_level(struct ss_plugin_options *o, const char *value)
{
    for (size_t i = 0; i < sizeof ss_log_levels / sizeof ss_log_levels[0]; i++) {
        if (strcmp(value, ss_log_levels[i].name) == 0) {
            o->log_level = ss_log_levels[i].mask;
            return MOSQ_ERR_SUCCESS;
        }
    }
    ss_options__bad("log_level", value, "must be error, warning, notice, info or debug");
    return MOSQ_ERR_INVAL;
}

/* One option: the plugin's, or its backend's. */
static int ss_options__one(struct ss_plugin_options *o, const char *name, const char *value)
{
    char why[300];
    if (strcmp(name, "backend") == 0)
        return MOSQ_ERR_SUCCESS; /* read first, below */
    if (strcmp(name, "log_level") == 0)
        return ss_options__log_level(o, value);
    int rc = ss_option_set(ss_opt_table, SS_OPT_COUNT, o, name, value, why, sizeof why);
    /* The node id goes out in every __ts user property: it must be a
     * UTF-8 string MQTT allows (no control characters), or the broker
     * sends answers a client must refuse (it closes its connection). */
    if (rc == SS_OK && strcmp(name, "node_id") == 0 &&
        (strchr(value, ':') || strlen(value) > SS_HLC_NODE_MAX ||
         mosquitto_validate_utf8(value, (int)strlen(value)) != MOSQ_ERR_SUCCESS)) {
        snprintf(why, sizeof why, "must be 1 to 255 bytes of UTF-8 without ':' or control characters");
        rc = SS_E_INVAL;
    }
    if (rc == SS_E_NOTFOUND)
        rc = ss_backends_option(o->backend, name, value, why, sizeof why);
    switch (rc) {
    case SS_OK:
        return MOSQ_ERR_SUCCESS;
    case SS_E_INVAL:
        ss_options__bad(name, value, why);
        return MOSQ_ERR_INVAL;
    case SS_E_BUSY: /* another backend's: a config kept across a switch of backend */
        mosquitto_log_printf(MOSQ_LOG_WARNING, "statestore: plugin_opt_%s is %s: ignored", name, why);
        return MOSQ_ERR_SUCCESS;
    case SS_E_NOTFOUND:
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: unknown option plugin_opt_%s", name);
        return MOSQ_ERR_INVAL;
    default:
        return MOSQ_ERR_NOMEM;
    }
}

int ss_options_parse(struct ss_plugin_options *o, struct mosquitto_opt *opts, int n)
{
    memset(o, 0, sizeof *o);
    o->node_id = strdup(SS_NODE_ID_DEFAULT);
    if (o->node_id == NULL)
        return MOSQ_ERR_NOMEM;
    o->max_key_length = 32000;
    o->max_registrations_per_client = 1000;
    o->max_registrations = 1000000;
    o->max_registration_bytes = (uint64_t)64 << 20;
    o->max_pattern_watches_per_client = 100;
    o->max_pattern_watches = 10000;
    o->max_pattern_watch_work = 20000000;
    o->dedup_window_ms = 10000;
    o->dedup_max_entries = 100000;
    o->dedup_max_bytes = (uint64_t)64 << 20;
    o->max_queued_bytes = (uint64_t)64 << 20;
    o->websockets_wake_ms = 5;
    o->scan_page_bytes = 16384;
    o->log_level = ss_log_levels[2].mask;
    o->topic_protection = true;
    /* The backend first: its options are read by it. */
    const char *backend = "lmdb";
    for (int i = 0; i < n; i++)
        if (strcmp(opts[i].key, "backend") == 0)
            backend = opts[i].value ? opts[i].value : "";
    char why[300];
    int rc = ss_backends_config_new(backend, &o->backend, why, sizeof why);
    if (rc == SS_E_INVAL)
        ss_options__bad("backend", backend, why);
    if (rc != SS_OK)
        return rc == SS_E_NOMEM ? MOSQ_ERR_NOMEM : MOSQ_ERR_INVAL;
    for (int i = 0; i < n; i++) {
        int mrc = ss_options__one(o, opts[i].key, opts[i].value ? opts[i].value : "");
        if (mrc != MOSQ_ERR_SUCCESS)
            return mrc;
    }
    struct ss_backends_shared shared = {o->node_id, o->max_keys, o->max_store_bytes, o->backup_dir};
    if (ss_backends_check(o->backend, &shared, why, sizeof why) != SS_OK) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: %s", why);
        return MOSQ_ERR_INVAL;
    }
    return MOSQ_ERR_SUCCESS;
}

void ss_options_free(struct ss_plugin_options *o)
{
    ss_option_free(ss_opt_table, SS_OPT_COUNT, o);
    ss_backends_config_free(o->backend);
    o->backend = NULL;
}

void ss_options_log(const struct ss_plugin_options *o, uint64_t keys)
{
    const char *level = "custom";
    for (size_t i = 0; i < sizeof ss_log_levels / sizeof ss_log_levels[0]; i++)
        if (ss_log_levels[i].mask == o->log_level)
            level = ss_log_levels[i].name;
    /* Where the data is: the backend's own settings. */
    char where[1024];
    ss_backends_describe(o->backend, where, sizeof where);
    mosquitto_log_printf(
        MOSQ_LOG_NOTICE,
        "statestore: %s keys=%llu node_id=%s "
        "max_keys=%llu max_store_bytes=%llu max_key_length=%llu "
        "max_registrations_per_client=%llu max_registrations=%llu max_registration_bytes=%llu "
        "max_pattern_watches_per_client=%llu "
        "max_pattern_watches=%llu max_pattern_watch_work=%llu dedup_window_ms=%llu "
        "dedup_max_entries=%llu dedup_max_bytes=%llu max_queued_bytes=%llu websockets_wake_ms=%llu scan_page_bytes=%llu log_level=%s "
        "max_value_bytes=%llu "
        "acl_file=%s topic_protection=%s other_topics=%s backup_dir=%s",
        where, (unsigned long long)keys, o->node_id, (unsigned long long)o->max_keys,
        (unsigned long long)ss_backends_max_bytes(o->backend),
        (unsigned long long)o->max_key_length, (unsigned long long)o->max_registrations_per_client,
        (unsigned long long)o->max_registrations, (unsigned long long)o->max_registration_bytes,
        (unsigned long long)o->max_pattern_watches_per_client,
        (unsigned long long)o->max_pattern_watches, (unsigned long long)o->max_pattern_watch_work,
        (unsigned long long)o->dedup_window_ms,
        (unsigned long long)o->dedup_max_entries, (unsigned long long)o->dedup_max_bytes,
        (unsigned long long)o->max_queued_bytes, (unsigned long long)o->websockets_wake_ms,
        (unsigned long long)o->scan_page_bytes, level,
        (unsigned long long)o->max_value_bytes, o->acl_file ? o->acl_file : "(none)",
        o->topic_protection ? "true" : "false", ss_other_topics_words[o->other_topics],
        o->backup_dir ? o->backup_dir : "(none)");
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
