/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* open.h - the one place that maps the broker's plugin_opt_backend to a
 * backend's constructor (core/backend_lmdb.h, etcd/backend_etcd.h).
 * Everything else in the plugin sees only the storage interface
 * (core/backend.h). */
#ifndef SS_BACKENDS_OPEN_H
#define SS_BACKENDS_OPEN_H

#include "../core/backend.h"
#include "../plugin/options.h"

/* Create the backend that o names, its log hook set to log/log_ctx
 * (start-up failures are said there, with what to do about them). It is
 * not started yet (backend.h: start). 0, or the failure, already logged. */
int ss_backends_open(const struct ss_plugin_options *o, ss_backend_log_fn log, void *log_ctx, ss_backend **out);

#endif
