/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* options.h - the plugin_opt_* settings: defaults, parsing, the startup
 * log line. */
#ifndef SS_OPTIONS_H
#define SS_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include <mosquitto_broker.h>


struct ss_backends_config;

/* The plugin's own options (plugin_opt_<name>); a backend's options are
 * its own business (backends/open.h), kept in backend. */
struct ss_plugin_options {
    struct ss_backends_config *backend; /* plugin_opt_backend and its options */
    char *node_id;
    uint64_t max_keys;
    uint64_t max_store_bytes; /* 0: not given (the backend decides) */
    uint64_t max_key_length;
    uint64_t max_registrations_per_client;
    uint64_t max_registrations;
    uint64_t max_registration_bytes; /* of the registered keys, each registration counting its key */
    uint64_t max_pattern_watches_per_client; /* WATCH PATTERN on the administrative topic */
    uint64_t max_pattern_watches;
    uint64_t max_pattern_watch_work; /* matching steps one change may cost them (core/pwatch.h) */
    uint64_t dedup_window_ms;
    uint64_t dedup_max_entries;
    uint64_t dedup_max_bytes;
    uint64_t max_queued_bytes; /* requests waiting for a commit under way; and, apart,
                                  answers waiting for their commit (batch.c) */
    uint64_t websockets_wake_ms; /* wswake.h; 0: off */
    uint64_t scan_page_bytes;    /* SCAN: a page of several keys at most */
    uint64_t max_value_bytes; /* derived from the broker's message_size_limit */
    char *acl_file;           /* key ACL; NULL: everything allowed */
    char *backup_dir;         /* where BACKUP writes; NULL: backups are off */
    bool topic_protection;
    int other_topics;         /* SS_OTHER_TOPICS_* */
    int log_level; /* MOSQ_LOG_* bits that are printed */
};

/* What the ACL check answers for topics that are not the state store's:
 * allow them (nothing else decides access), or defer to the acl_file or
 * the other plugins. */
enum { SS_OTHER_TOPICS_AUTO = 0, SS_OTHER_TOPICS_ALLOW, SS_OTHER_TOPICS_DEFER };

/* Defaults, then plugin_opt_* lines. Logs and returns MOSQ_ERR_INVAL
 * naming the option on an unknown option or a bad value. */
int ss_options_parse(struct ss_plugin_options *o, struct mosquitto_opt *opts, int n);
void ss_options_free(struct ss_plugin_options *o);
/* One notice line with the backend's settings, the keys and every option. */
void ss_options_log(const struct ss_plugin_options *o, uint64_t keys);

#endif
