/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* open.c - the backends by name: their options and constructors (open.h). */
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

/* A map smaller than this cannot hold an empty store's pages. */
#define SS_OPEN_MAP_MIN (1u << 20)

/* Why the store could not be opened, and what to do about it. */
static void ss_open__lmdb_failed(const char *dir, int rc, int err, const char *cause, ss_backend_log_fn log,
                                 void *ctx)
{
    if (rc == SS_E_BUSY) {
        ss_open__say(log, ctx, SS_LOG_ERR, "cannot open the store in %s: another process has it open", dir);
        return;
    }
    if (cause[0]) /* the store's own account */
        ss_open__say(log, ctx, SS_LOG_ERR, "cannot open the store in %s: %s: %s", dir, ss_strerror(rc), cause);
    else
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

enum ss_backends_kind { SS_BACKENDS_LMDB, SS_BACKENDS_ETCD };

struct ss_backends_config {
    enum ss_backends_kind kind;
    ss_backend_lmdb_config lmdb;
    ss_backend_etcd_config etcd;
    const char *backup_dir; /* the plugin's, borrowed */
};

static const char *const ss_backends_names[] = {"lmdb", "etcd"};

int ss_backends_config_new(const char *name, struct ss_backends_config **out, char *why, size_t why_len)
{
    *out = NULL;
    int kind = -1;
    for (int i = 0; i < 2; i++)
        if (strcmp(name, ss_backends_names[i]) == 0)
            kind = i;
    if (kind < 0) {
        snprintf(why, why_len, "must be lmdb or etcd");
        return SS_E_INVAL;
    }
    struct ss_backends_config *c = calloc(1, sizeof *c);
    if (c == NULL)
        return SS_E_NOMEM;
    c->kind = (enum ss_backends_kind)kind;
    ss_backend_etcd_config_init(&c->etcd);
    if (ss_backend_lmdb_config_init(&c->lmdb) != SS_OK) {
        ss_backends_config_free(c);
        return SS_E_NOMEM;
    }
    *out = c;
    return SS_OK;
}

void ss_backends_config_free(struct ss_backends_config *c)
{
    if (c == NULL)
        return;
    ss_backend_lmdb_config_free(&c->lmdb);
    ss_backend_etcd_config_free(&c->etcd);
    free(c);
}

int ss_backends_option(struct ss_backends_config *c, const char *name, const char *value, char *why,
                       size_t why_len)
{
    bool lmdb = ss_backend_lmdb_config_knows(name), etcd = ss_backend_etcd_config_knows(name);
    if (!lmdb && !etcd)
        return SS_E_NOTFOUND;
    if (c->kind == SS_BACKENDS_LMDB && lmdb)
        return ss_backend_lmdb_config_set(&c->lmdb, name, value, why, why_len);
    if (c->kind == SS_BACKENDS_ETCD && etcd)
        return ss_backend_etcd_config_set(&c->etcd, name, value, why, why_len);
    snprintf(why, why_len, "an option of the %s backend", lmdb ? "lmdb" : "etcd");
    return SS_E_BUSY;
}

int ss_backends_check(struct ss_backends_config *c, const struct ss_backends_shared *shared, char *why,
                      size_t why_len)
{
    c->backup_dir = shared->backup_dir;
    if (c->kind == SS_BACKENDS_ETCD) {
        c->etcd.node_id = shared->node_id;
        c->etcd.max_keys = shared->max_keys;
        c->etcd.max_bytes = shared->max_bytes; /* on etcd a limit costs contention: only when given */
        if (shared->backup_dir) {
            snprintf(why, why_len, "plugin_opt_backup_dir: not available with the etcd backend (etcdctl "
                     "snapshot save backs up the cluster)");
            return SS_E_INVAL;
        }
        return ss_backend_etcd_config_check(&c->etcd, why, why_len);
    }
    c->lmdb.max_keys = shared->max_keys;
    if (shared->max_bytes)
        c->lmdb.max_bytes = shared->max_bytes;
    if (c->lmdb.map_size != 0 && c->lmdb.map_size < SS_OPEN_MAP_MIN) {
        snprintf(why, why_len, "plugin_opt_map_size: must be 0 (computed) or at least %u bytes",
                 SS_OPEN_MAP_MIN);
        return SS_E_INVAL;
    }
    return SS_OK;
}

uint64_t ss_backends_max_bytes(const struct ss_backends_config *c)
{
    return c->kind == SS_BACKENDS_ETCD ? c->etcd.max_bytes : c->lmdb.max_bytes;
}

void ss_backends_describe(const struct ss_backends_config *c, char *out, size_t len)
{
    if (c->kind == SS_BACKENDS_ETCD)
        ss_backend_etcd_config_describe(&c->etcd, out, len);
    else
        ss_backend_lmdb_config_describe(&c->lmdb, out, len);
}

/* The LMDB store in data_dir. */
static int ss_open__lmdb(const struct ss_backends_config *c, ss_backend_log_fn log, void *ctx, ss_backend **out)
{
    const ss_backend_lmdb_config *l = &c->lmdb;
    ss_store_options so = ss_backend_lmdb_store_options(l);
    if (so.fail_write_at || so.fail_sync_at)
        ss_open__say(log, ctx, SS_LOG_WARNING, "failure injection is on (plugin_opt_test_fail_write_at %llu, "
                     "test_fail_sync_at %llu): for tests only", (unsigned long long)so.fail_write_at,
                     (unsigned long long)so.fail_sync_at);
    if (c->backup_dir && access(c->backup_dir, W_OK | X_OK) != 0) {
        ss_open__say(log, ctx, SS_LOG_ERR, "plugin_opt_backup_dir %s: %s", c->backup_dir, strerror(errno));
        return SS_E_INVAL;
    }
    if (c->backup_dir && ss_open__inside(c->backup_dir, l->data_dir)) {
        /* A backup named "journal" or "data.mdb" would replace live files. */
        ss_open__say(log, ctx, SS_LOG_ERR, "plugin_opt_backup_dir %s: must not be the data directory or "
                     "inside it", c->backup_dir);
        return SS_E_INVAL;
    }
    char cause[300] = "";
    so.open_cause = cause;
    so.open_cause_len = sizeof cause;
    errno = 0;
    int rc = ss_backend_lmdb_open(&so, out);
    if (rc != SS_OK) {
        int err = errno;
        /* The map could not be made (too large for the address space or
         * the memory limits) or cannot hold the store: say which option. */
        if (rc == SS_E_NOMEM || rc == SS_E_QUOTA) {
            ss_open__say(log, ctx, SS_LOG_ERR, "cannot open the store in %s: the LMDB map of %llu bytes "
                         "(plugin_opt_map_size; 0 or left out: 4 x max_store_bytes + 64 MiB) %s", l->data_dir,
                         (unsigned long long)ss_store_map_size(l->map_size, l->max_bytes),
                         rc == SS_E_NOMEM ? "could not be mapped" : "is too small for the store");
            return rc;
        }
        ss_open__lmdb_failed(l->data_dir, rc, err, cause, log, ctx);
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
static int ss_open__etcd(const struct ss_backends_config *c, ss_backend_log_fn log, void *ctx, ss_backend **out)
{
    ss_backend_etcd_options eo = ss_backend_etcd_options_of(&c->etcd);
    eo.log = log;
    eo.log_ctx = ctx;
    char why[300];
    int rc = ss_backend_etcd_new(&eo, out, why, sizeof why);
    if (rc == SS_E_INVAL)
        ss_open__say(log, ctx, SS_LOG_ERR, "plugin_opt_etcd_*: %s", why);
    return rc; /* its log hook is eo's */
}

int ss_backends_open(const struct ss_backends_config *c, ss_backend_log_fn log, void *log_ctx, ss_backend **out)
{
    *out = NULL;
    return c->kind == SS_BACKENDS_ETCD ? ss_open__etcd(c, log, log_ctx, out) : ss_open__lmdb(c, log, log_ctx, out);
}
