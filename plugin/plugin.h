/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* plugin.h - the state store inside Mosquitto 2.0: the one object that
 * holds the plugin's state. It is passed to every callback as userdata;
 * there are no globals (the same .so may be loaded twice).
 *
 * Flow: MESSAGE (request.c) checks a request and hands it to the batch
 * (batch.c), which runs it in the engine, keeps its answer and the
 * notifications it causes until the batch commits at the broker's next
 * TICK, and only then publishes them. The modules, each with its header:
 * request, batch (with queue and outbox), waker, notify, protect, options,
 * broker_conf, admin, backup, metrics. Storage is reached only through the
 * storage interface (core/backend.h); backends/open.h makes the backend.
 */
#ifndef SS_PLUGIN_H
#define SS_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>

#include "../core/acl.h"
#include "../core/dedup.h"
#include "../core/backend.h"
#include "../core/engine.h"
#include "../core/protocol.h"
#include "../core/latency.h"
#include "../core/pwatch.h"
#include "../core/watch.h"
#include "metrics.h"
#include "options.h"
#include "waker.h"
#include "wswake.h"

#define SS_TOPIC_LEVELS_MAX 200u /* the broker's TOPIC_HIERARCHY_LIMIT */

struct ss_batch;
struct ss_admin;
struct ss_backup;

/* The client a request comes from, for KEYNOTIFY and authorization. */
struct ss_caller {
    const char *id;
    const char *username; /* NULL when none */
    bool gone;            /* disconnected while its request waited in the queue */
};

struct ss_plugin {
    mosquitto_plugin_id_t *id;
    struct ss_plugin_options opt;
    ss_backend *backend; /* the store, behind the storage interface (backends/open.h) */
    struct ss_waker waker; /* wakes the broker's thread when the backend has results */
    struct ss_wswake wswake; /* turns its loop often while websockets are in use */
    ss_engine *engine;
    ss_watch *watch;
    ss_pwatch *pwatch;   /* pattern watches (WATCH on the administrative topic) */
    ss_dedup *dedup;
    struct ss_batch *batch; /* the request lifecycle (batch.h) */
    struct ss_admin *admin; /* administrative requests (admin.h) */
    struct ss_backup *backup; /* backup.h */
    ss_buf topic;           /* notify.c: the notification topic being built */
    uint64_t refused;       /* requests refused since start, for logs */
    ss_acl *acl;            /* NULL: everything allowed */
    bool defer_other_topics;
    uint64_t sys_interval_s;    /* the broker's sys_interval: $SYS figures */
    struct ss_metrics metrics;
};

/* Print when level is enabled (opt.log_level). */
void ss_log(const struct ss_plugin *p, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
