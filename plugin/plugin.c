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

#include "../core/errors.h"
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

uint64_t ss_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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
    ss_backup_free(p->backup); /* a copy under way ends first: it needs the store */
    ss_batch_free(p->batch); /* commits what was executed */
    p->batch = NULL;
    ss_admin_free(p->admin);
    ss_engine_free(p->engine);
    if (p->store)
        ss_backend_lmdb_free(p->backend);
    else
        ss_backend_etcd_free(p->backend); /* its thread ends: no wake-up after this */
    ss_waker_stop(&p->waker);
    ss_store_close(p->store);
    ss_watch_free(p->watch);
    ss_pwatch_free(p->pwatch);
    ss_dedup_free(p->dedup);
    ss_buf_free(&p->topic);
    ss_acl_free(p->acl);
    ss_options_free(&p->opt);
    free(p);
}

/* Is dir the directory top, or inside it (after resolving links)? A
 * directory that does not exist yet is compared as written. */
static bool ss_plugin__inside(const char *dir, const char *top)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(dir, a) == NULL || realpath(top, b) == NULL) {
        snprintf(a, sizeof a, "%s", dir);
        snprintf(b, sizeof b, "%s", top);
    }
    size_t n = strlen(b);
    while (n > 1 && b[n - 1] == '/')
        b[--n] = '\0';
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/* The LMDB store in data_dir, behind the storage interface. */
static int ss_plugin__open_lmdb(struct ss_plugin *p)
{
    ss_store_options so = ss_store_options_default();
    so.path = p->opt.data_dir;
    so.max_keys = p->opt.max_keys;
    so.max_bytes = p->opt.max_store_bytes;
    so.map_size = p->opt.map_size;
    so.sync = p->opt.sync;
    so.sync_interval_ms = (uint32_t)p->opt.sync_interval_ms;
    so.external_sync = true; /* the committer's thread runs the periodic fsync (batch.c) */
    so.checkpoint_interval_ms = (uint32_t)p->opt.checkpoint_interval_ms;
    so.journal_max_bytes = p->opt.journal_max_bytes;
    so.compact = p->opt.compact_on_start;
    so.fail_write_at = p->opt.test_fail_write_at;
    so.fail_sync_at = p->opt.test_fail_sync_at;
    if (so.fail_write_at || so.fail_sync_at)
        mosquitto_log_printf(MOSQ_LOG_WARNING, "statestore: failure injection is on "
                             "(plugin_opt_test_fail_write_at %llu, test_fail_sync_at %llu): "
                             "for tests only", (unsigned long long)so.fail_write_at,
                             (unsigned long long)so.fail_sync_at);
    if (p->opt.backup_dir && access(p->opt.backup_dir, W_OK | X_OK) != 0) {
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_backup_dir %s: %s", p->opt.backup_dir,
                             strerror(errno));
        return SS_E_INVAL;
    }
    if (p->opt.backup_dir && ss_plugin__inside(p->opt.backup_dir, p->opt.data_dir)) {
        /* A backup named "journal" or "data.mdb" would replace live files. */
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_backup_dir %s: must not be the data "
                             "directory or inside it", p->opt.backup_dir);
        return SS_E_INVAL;
    }
    int rc = ss_store_open(&so, &p->store);
    if (rc == SS_E_BUSY) {
        mosquitto_log_printf(MOSQ_LOG_ERR,
                             "statestore: cannot open the store in %s: another process has it open",
                             p->opt.data_dir);
        return rc;
    }
    if (rc != SS_OK) {
        int err = errno;
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: cannot open the store in %s: %s%s%s",
                             p->opt.data_dir, ss_strerror(rc), err ? ": " : "",
                             err ? strerror(err) : "");
        struct stat st;
        if ((err == EACCES || err == EPERM) && stat(p->opt.data_dir, &st) != 0)
            /* It could not be made: its parent is not ours to write in. */
            mosquitto_log_printf(MOSQ_LOG_ERR,
                                 "statestore: %s does not exist and mosquitto (which runs as the "
                                 "user of its 'user' option, default mosquitto, when started as "
                                 "root) may not create it: create it and give it to that user, "
                                 "e.g. install -d -o mosquitto -g mosquitto -m 0750 %s",
                                 p->opt.data_dir, p->opt.data_dir);
        else if (err == EACCES || err == EPERM)
            mosquitto_log_printf(MOSQ_LOG_ERR,
                                 "statestore: started as root, mosquitto runs as the user of its "
                                 "'user' option (default: mosquitto), which must own %s: "
                                 "chown mosquitto: %s",
                                 p->opt.data_dir, p->opt.data_dir);
        else if (err == EROFS)
            mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: %s is on a read-only filesystem",
                                 p->opt.data_dir);
        return rc;
    }
    if (so.compact && ss_store_compaction_result(p->store) == SS_OK)
        mosquitto_log_printf(MOSQ_LOG_NOTICE, "statestore: %s", ss_store_cause(p->store));
    else if (so.compact)
        mosquitto_log_printf(MOSQ_LOG_WARNING, "statestore: the data file was not compacted (%s)",
                             ss_store_cause(p->store));
    if (ss_store_checkpoint_failing(p->store, NULL))
        mosquitto_log_printf(MOSQ_LOG_WARNING,
                             "statestore: the journal's changes could not go into the data file "
                             "at start (%s); serving from the journal, checkpoint tried again "
                             "later", ss_store_cause(p->store));
    return ss_backend_lmdb_new(p->store, &p->backend);
}

static void ss_plugin__etcd_log(void *ctx, int level, const char *msg)
{
    static const int levels[] = {MOSQ_LOG_ERR, MOSQ_LOG_WARNING, MOSQ_LOG_NOTICE, MOSQ_LOG_INFO};
    ss_log(ctx, levels[level >= 0 && level <= SS_ETCD_LOG_INFO ? level : 0], "%s", msg);
}

/* How long a starting broker waits for the claim of a broker that died
 * with its node id: the claim's lease (3 s) and a margin. */
#define SS_ETCD_CLAIM_WAIT_MS 4500u

/* The store on an etcd cluster. An unreachable cluster is no reason to
 * stop the broker: it is said, and tried again (requests wait for it up
 * to etcd_unavailable_ms). */
static int ss_plugin__open_etcd(struct ss_plugin *p)
{
    ss_backend_etcd_options eo = {.endpoints = p->opt.etcd_endpoints,
                                  .ca_file = p->opt.etcd_ca_file,
                                  .cert_file = p->opt.etcd_cert_file,
                                  .key_file = p->opt.etcd_key_file,
                                  .username = p->opt.etcd_username,
                                  .password = p->opt.etcd_password,
                                  .prefix = p->opt.etcd_prefix,
                                  .node_id = p->opt.node_id,
                                  .call_timeout_ms = (unsigned)p->opt.etcd_timeout_ms,
                                  .unavailable_ms = (unsigned)p->opt.etcd_unavailable_ms,
                                  .max_request_bytes = (size_t)p->opt.etcd_max_request_bytes,
                                  .max_txn_ops = (unsigned)p->opt.etcd_max_txn_ops,
                                  .tombstone_ms = p->opt.etcd_tombstone_ms,
                                  .max_keys = p->opt.max_keys,
                                  .max_bytes = p->opt.max_store_bytes,
                                  .log = ss_plugin__etcd_log,
                                  .log_ctx = p};
    char why[300];
    int rc = ss_backend_etcd_new(&eo, &p->backend, why, sizeof why);
    if (rc == SS_E_INVAL)
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_etcd_*: %s", why);
    if (rc != SS_OK)
        return rc;
    if ((rc = ss_waker_start(&p->waker)) != SS_OK)
        return rc;
    p->backend->wake = ss_waker_poke;
    p->backend->wake_ctx = &p->waker;
    rc = ss_backend_etcd_ping(p->backend, why, sizeof why);
    if (rc == SS_E_INVAL) { /* the user name or password */
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: plugin_opt_etcd_username, plugin_opt_etcd_password: %s",
                             why);
        return rc;
    }
    if (rc == SS_OK) {
        mosquitto_log_printf(MOSQ_LOG_NOTICE, "statestore: %s", why);
        /* One live broker per node id: a broker that died leaves its
         * claim until its lease lapses, so wait that long first. */
        rc = ss_backend_etcd_claim(p->backend, SS_ETCD_CLAIM_WAIT_MS, why, sizeof why);
        if (rc == SS_E_BUSY) {
            mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: %s", why);
            return rc;
        }
        if (rc != SS_OK)
            mosquitto_log_printf(MOSQ_LOG_WARNING, "statestore: the node id could not be claimed yet (%s): "
                                 "trying again", why);
        /* Serve once changes made through other brokers are watched, so
         * that an observer registered from the start hears of them. */
        if (ss_backend_etcd_watch_start(p->backend, (unsigned)p->opt.etcd_timeout_ms) != SS_OK)
            mosquitto_log_printf(MOSQ_LOG_WARNING, "statestore: etcd did not start the watch on changes "
                                 "in time: trying again (until then, observers here hear only of "
                                 "changes made through this broker)");
    } else
        mosquitto_log_printf(MOSQ_LOG_ERR, "statestore: etcd does not answer (%s): requests wait for it "
                             "and are answered \"the store is unavailable\" after %llu ms; trying again",
                             why, (unsigned long long)p->opt.etcd_unavailable_ms);
    return SS_OK;
}

static int ss_plugin__open(struct ss_plugin *p)
{
    int rc = p->opt.backend == SS_BACKEND_ETCD ? ss_plugin__open_etcd(p) : ss_plugin__open_lmdb(p);
    if (rc != SS_OK)
        return rc;
    struct ss_broker_conf bc;
    ss_read_broker_conf(&bc);
    uint64_t limit = bc.message_size_limit;
    p->sys_interval_s = bc.sys_interval;
    p->opt.max_value_bytes = limit > SS_NOTIFY_OVERHEAD ? limit - SS_NOTIFY_OVERHEAD : 1;
    p->defer_other_topics = p->opt.other_topics == SS_OTHER_TOPICS_DEFER ||
                            (p->opt.other_topics == SS_OTHER_TOPICS_AUTO &&
                             (bc.has_acl_file || bc.other_plugins > 0));
    if (p->opt.acl_file && (rc = ss_acl_reload(p)) != SS_OK)
        return rc;
    ss_engine_options eo = {.node_id = p->opt.node_id,
                            .max_key_len = (size_t)p->opt.max_key_length,
                            .max_value_len = (size_t)p->opt.max_value_bytes,
                            .on_keynotify = ss_on_keynotify,
                            .keynotify_ctx = p,
                            .on_authorize = ss_authorize,
                            .authorize_ctx = p,
                            /* as a value: room left for the topic and properties */
                            .max_answer = (size_t)p->opt.max_value_bytes};
    /* Only changes of keys someone observes are kept for the feed. */
    p->backend->wanted = ss_notify_wanted;
    p->backend->wanted_ctx = p;
    if ((rc = ss_engine_new(p->backend, &eo, &p->engine)) != SS_OK)
        return rc;
    if ((rc = ss_watch_new(p->opt.max_registrations_per_client, p->opt.max_registrations, &p->watch)) !=
        SS_OK)
        return rc;
    if ((rc = ss_pwatch_new(p->opt.max_pattern_watches_per_client, p->opt.max_pattern_watches, &p->pwatch)) !=
        SS_OK)
        return rc;
    ss_dedup_limits dl = {p->opt.dedup_window_ms, (size_t)p->opt.dedup_max_entries,
                          (size_t)p->opt.dedup_max_bytes};
    if ((rc = ss_dedup_new(&dl, &p->dedup)) != SS_OK)
        return rc;
    if ((rc = ss_admin_new(&p->admin)) != SS_OK || (rc = ss_backup_new(&p->backup)) != SS_OK)
        return rc;
    return ss_batch_new(p, &p->batch);
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
    ss_options_log(&p->opt, p->store ? ss_store_key_count(p->store) : 0);
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
    for (size_t i = 0; i < ss_plugin__callback_count(p); i++)
        mosquitto_callback_unregister(p->id, ss_callbacks[i].event, ss_callbacks[i].fn, NULL);
    ss_plugin__destroy(p);
    return MOSQ_ERR_SUCCESS;
}
