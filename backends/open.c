/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* open.c - plugin_opt_backend to a constructor (open.h). */
#include "open.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/backend_lmdb.h"
#include "../core/errors.h"
#include "../etcd/backend_etcd.h"

static void ss_open__say(ss_backend_log_fn log, void *ctx, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void ss_open__say(ss_backend_log_fn log, void *ctx, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log(ctx, level, msg);
}

/* Is dir the directory top, or inside it (after resolving links)? A
 * directory that does not exist yet is compared as written. */
static bool ss_open__inside(const char *dir, const char *top)
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

/* Why the store could not be opened, and what to do about it. */
static void ss_open__lmdb_failed(const char *dir, int rc, int err, ss_backend_log_fn log, void *ctx)
{
    if (rc == SS_E_BUSY) {
        ss_open__say(log, ctx, SS_LOG_ERR, "cannot open the store in %s: another process has it open", dir);
        return;
    }
    ss_open__say(log, ctx, SS_LOG_ERR, "cannot open the store in %s: %s%s%s", dir, ss_strerror(rc),
                 err ? ": " : "", err ? strerror(err) : "");
    struct stat st;
    if ((err == EACCES || err == EPERM) && stat(dir, &st) != 0)
        /* It could not be made: its parent is not ours to write in. */
        ss_open__say(log, ctx, SS_LOG_ERR,
                     "%s does not exist and mosquitto (which runs as the user of its 'user' option, "
                     "default mosquitto, when started as root) may not create it: create it and give it "
                     "to that user, e.g. install -d -o mosquitto -g mosquitto -m 0750 %s", dir, dir);
    else if (err == EACCES || err == EPERM)
        ss_open__say(log, ctx, SS_LOG_ERR,
                     "started as root, mosquitto runs as the user of its 'user' option (default: "
                     "mosquitto), which must own %s: chown mosquitto: %s", dir, dir);
    else if (err == EROFS)
        ss_open__say(log, ctx, SS_LOG_ERR, "%s is on a read-only filesystem", dir);
}

/* The LMDB store in data_dir. */
static int ss_open__lmdb(const struct ss_plugin_options *o, ss_backend_log_fn log, void *ctx, ss_backend **out)
{
    ss_store_options so = ss_store_options_default();
    so.path = o->data_dir;
    so.max_keys = o->max_keys;
    so.max_bytes = o->max_store_bytes;
    so.map_size = o->map_size;
    so.sync = o->sync;
    so.sync_interval_ms = (uint32_t)o->sync_interval_ms;
    so.external_sync = true; /* the backend's worker runs the periodic fsync */
    so.checkpoint_interval_ms = (uint32_t)o->checkpoint_interval_ms;
    so.journal_max_bytes = o->journal_max_bytes;
    so.compact = o->compact_on_start;
    so.fail_write_at = o->test_fail_write_at;
    so.fail_sync_at = o->test_fail_sync_at;
    if (so.fail_write_at || so.fail_sync_at)
        ss_open__say(log, ctx, SS_LOG_WARNING, "failure injection is on (plugin_opt_test_fail_write_at %llu, "
                     "test_fail_sync_at %llu): for tests only", (unsigned long long)so.fail_write_at,
                     (unsigned long long)so.fail_sync_at);
    if (o->backup_dir && access(o->backup_dir, W_OK | X_OK) != 0) {
        ss_open__say(log, ctx, SS_LOG_ERR, "plugin_opt_backup_dir %s: %s", o->backup_dir, strerror(errno));
        return SS_E_INVAL;
    }
    if (o->backup_dir && ss_open__inside(o->backup_dir, o->data_dir)) {
        /* A backup named "journal" or "data.mdb" would replace live files. */
        ss_open__say(log, ctx, SS_LOG_ERR, "plugin_opt_backup_dir %s: must not be the data directory or "
                     "inside it", o->backup_dir);
        return SS_E_INVAL;
    }
    errno = 0;
    int rc = ss_backend_lmdb_open(&so, out);
    if (rc != SS_OK) {
        ss_open__lmdb_failed(o->data_dir, rc, errno, log, ctx);
        return rc;
    }
    (*out)->log = log;
    (*out)->log_ctx = ctx;
    ss_store *store = ss_backend_lmdb_store(*out);
    if (so.compact && ss_store_compaction_result(store) == SS_OK)
        ss_open__say(log, ctx, SS_LOG_NOTICE, "%s", ss_store_cause(store));
    else if (so.compact)
        ss_open__say(log, ctx, SS_LOG_WARNING, "the data file was not compacted (%s)", ss_store_cause(store));
    return SS_OK;
}

/* The store on an etcd cluster. */
static int ss_open__etcd(const struct ss_plugin_options *o, ss_backend_log_fn log, void *ctx, ss_backend **out)
{
    ss_backend_etcd_options eo = {.endpoints = o->etcd_endpoints,
                                  .ca_file = o->etcd_ca_file,
                                  .cert_file = o->etcd_cert_file,
                                  .key_file = o->etcd_key_file,
                                  .username = o->etcd_username,
                                  .password = o->etcd_password,
                                  .prefix = o->etcd_prefix,
                                  .node_id = o->node_id,
                                  .call_timeout_ms = (unsigned)o->etcd_timeout_ms,
                                  .unavailable_ms = (unsigned)o->etcd_unavailable_ms,
                                  .max_request_bytes = (size_t)o->etcd_max_request_bytes,
                                  .max_txn_ops = (unsigned)o->etcd_max_txn_ops,
                                  .tombstone_ms = o->etcd_tombstone_ms,
                                  .max_keys = o->max_keys,
                                  .max_bytes = o->max_store_bytes,
                                  .log = log,
                                  .log_ctx = ctx};
    char why[300];
    int rc = ss_backend_etcd_new(&eo, out, why, sizeof why);
    if (rc == SS_E_INVAL)
        ss_open__say(log, ctx, SS_LOG_ERR, "plugin_opt_etcd_*: %s", why);
    if (rc == SS_OK) {
        (*out)->log = log;
        (*out)->log_ctx = ctx;
    }
    return rc;
}

int ss_backends_open(const struct ss_plugin_options *o, ss_backend_log_fn log, void *log_ctx, ss_backend **out)
{
    *out = NULL;
    return o->backend == SS_BACKEND_ETCD ? ss_open__etcd(o, log, log_ctx, out) : ss_open__lmdb(o, log, log_ctx, out);
}
