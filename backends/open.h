/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* open.h - the one place that knows the backends by name (plugin_opt_backend)
 * and maps each to its options and its constructor (core/backend_lmdb.h,
 * etcd/backend_etcd.h). Everything else in the plugin sees only the
 * storage interface (core/backend.h) and this opaque configuration.
 */
#ifndef SS_BACKENDS_OPEN_H
#define SS_BACKENDS_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "../core/backend.h"

/* A backend's name and its options as read so far. */
struct ss_backends_config;

/* What the plugin's own options say that backends use too. */
struct ss_backends_shared {
    const char *node_id;   /* names this broker (etcd's commit marker) */
    uint64_t max_keys;     /* 0: no limit */
    uint64_t max_bytes;    /* 0: not given (LMDB: its default; etcd: no limit) */
    const char *backup_dir; /* NULL: backups off */
};

/* The configuration of the backend called name ("lmdb", "etcd"), its
 * options at their defaults. 0; SS_E_INVAL: no backend has that name
 * (*why: the names there are); SS_E_NOMEM. */
int ss_backends_config_new(const char *name, struct ss_backends_config **out, char *why, size_t why_len);
void ss_backends_config_free(struct ss_backends_config *c);
/* An option the plugin does not know itself. 0: the backend's, set;
 * SS_E_INVAL: its, with a bad value (*why says what is expected);
 * SS_E_BUSY: an option of another backend (*why names it), which this
 * one does not use; SS_E_NOTFOUND: nobody's; SS_E_NOMEM. */
int ss_backends_option(struct ss_backends_config *c, const char *name, const char *value, char *why,
                       size_t why_len);
/* Once every option is read: take what is shared and check that the
 * whole holds. 0 or SS_E_INVAL with *why (a line for the log). */
int ss_backends_check(struct ss_backends_config *c, const struct ss_backends_shared *shared, char *why,
                      size_t why_len);
/* "backend=... <its options>" for the start-up line. */
/* The store's byte limit in force once checked: the option, or LMDB's
 * default when it was left out (on etcd: 0, no limit). */
uint64_t ss_backends_max_bytes(const struct ss_backends_config *c);
void ss_backends_describe(const struct ss_backends_config *c, char *out, size_t len);

/* Create the backend c describes, its log hook set to log/log_ctx
 * (start-up failures are said there, with what to do about them). It is
 * not started yet (backend.h: start). 0, or the failure, already logged. */
int ss_backends_open(const struct ss_backends_config *c, ss_backend_log_fn log, void *log_ctx, ss_backend **out);

#endif
