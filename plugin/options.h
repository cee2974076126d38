/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* options.h - the plugin_opt_* settings: defaults, parsing, the startup
 * log line. */
#ifndef SS_OPTIONS_H
#define SS_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include <mosquitto_broker.h>

#include "../core/store.h"

enum ss_backend_kind { SS_BACKEND_LMDB = 0, SS_BACKEND_ETCD };

struct ss_plugin_options {
    int backend;              /* enum ss_backend_kind */
    char *etcd_endpoints;     /* etcd: comma-separated URLs */
    char *etcd_prefix;
    char *etcd_ca_file, *etcd_cert_file, *etcd_key_file;
    char *etcd_username, *etcd_password; /* etcd's authentication */
    uint64_t etcd_timeout_ms;      /* one call to etcd */
    uint64_t etcd_unavailable_ms;  /* how long a request waits for the cluster */
    uint64_t etcd_max_txn_ops;     /* the cluster's --max-txn-ops */
    uint64_t etcd_max_request_bytes; /* the cluster's --max-request-bytes */
    uint64_t etcd_tombstone_ms;      /* how long a deleted key's last version is kept */
    char *data_dir;
    char *node_id;
    enum ss_sync_policy sync;
    uint64_t sync_interval_ms;
    uint64_t checkpoint_interval_ms; /* journal into the data file at most this often */
    uint64_t journal_max_bytes;      /* ...or when the journal reaches this size */
    uint64_t max_keys;
    uint64_t max_store_bytes;
    uint64_t map_size;
    uint64_t max_key_length;
    uint64_t max_registrations_per_client;
    uint64_t max_registrations;
    uint64_t max_pattern_watches_per_client; /* WATCH PATTERN on the administrative topic */
    uint64_t max_pattern_watches;
    uint64_t dedup_window_ms;
    uint64_t dedup_max_entries;
    uint64_t dedup_max_bytes;
    uint64_t max_queued_bytes; /* requests waiting for a commit on the thread */
    uint64_t max_value_bytes; /* derived from the broker's message_size_limit */
    char *acl_file;           /* key ACL; NULL: everything allowed */
    char *backup_dir;         /* where BACKUP writes; NULL: backups are off */
    bool topic_protection;
    bool compact_on_start; /* rewrite the data file without free pages at start */
    uint64_t test_fail_write_at; /* testing aids: inject the Nth journal write's */
    uint64_t test_fail_sync_at;  /* or fsync's failure (0: never) */
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
/* One notice line with the data directory, the keys and every option. */
void ss_options_log(const struct ss_plugin_options *o, uint64_t keys);

#endif
