/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* metrics.h - the store's figures, published under $SYS/broker/statestore/
 * at the broker's sys_interval, retained, as Mosquitto publishes its own
 * (docs/OPERATIONS.md lists every topic and its unit).
 *
 * Counters only grow from the broker's start; latencies are the p50 and p99
 * of the commits of the last interval. The backend adds its own figures
 * (backend.h: figures), whose names the plugin does not know. All of it
 * on the broker's thread.
 */
#ifndef SS_METRICS_H
#define SS_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "../core/latency.h"

#define SS_METRICS_PREFIX "$SYS/broker/statestore/"

/* What a request came to: ok, a condition not met (":-1"), or an error
 * answer (by its status code). */
enum ss_outcome {
    SS_OUTCOME_OK = 0,
    SS_OUTCOME_NOT_MET,
    SS_OUTCOME_ERROR_FIRST, /* + (-status - 1) for the protocol's twelve errors */
    SS_OUTCOME_STORAGE = SS_OUTCOME_ERROR_FIRST + 12,
    SS_OUTCOME_UNAVAILABLE, /* etcd: the cluster did not answer in time */
    SS_OUTCOME_SCAN_FIRST,  /* + (SS_E_PATTERN_EMPTY - status) for SCAN's six refusals */
    SS_OUTCOME_COUNT = SS_OUTCOME_SCAN_FIRST + (SS_E_PATTERN_EMPTY - SS_E_TOKEN_INVALID) + 1
};

/* Verbs by enum ss_cmd_type; 0: a request that did not parse. */
#define SS_METRICS_VERBS (SS_CMD_SCAN + 1)
struct ss_metrics {
    uint64_t requests[SS_METRICS_VERBS][SS_OUTCOME_COUNT];
    uint64_t notifications_sent, notifications_dropped;
    uint64_t resends;        /* requests answered from the resend cache */
    uint64_t commits_failed; /* commits whose requests were answered with an error */
    struct ss_latency commit;
    uint64_t last_publish_ms;
};

/* Count one request: command (0 if it did not parse), the status
 * ss_engine_exec returned, and its answer (":-1" is a condition not met). */
void ss_metrics_request(struct ss_metrics *m, int command, int status, const uint8_t *answer,
                        size_t len);

struct ss_plugin;
/* At the broker's tick: publish when sys_interval has passed (never when
 * it is 0, as Mosquitto does). */
void ss_metrics_tick(struct ss_plugin *p, uint64_t now_ms);
/* Publish now (start, and tests). */
void ss_metrics_publish(struct ss_plugin *p, uint64_t now_ms);


#endif
