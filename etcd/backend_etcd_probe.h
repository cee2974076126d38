/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_probe.h - what backend_etcd_probe.c offers the etcd
 * backend's other files: each endpoint's status (health, leader, raft
 * figures), asked of every endpoint in turn, for the figures. */
#ifndef SS_BACKEND_ETCD_PROBE_H
#define SS_BACKEND_ETCD_PROBE_H

#include "backend_etcd_state.h"

/* One channel per endpoint of o->endpoints, when o->status_interval_ms
 * is set. 0, SS_E_NOMEM, or the channel's error with *why. */
int ss_etcd__probes_new(struct ss_backend_etcd *e, const ss_backend_etcd_options *o, char *why,
                        size_t why_len);
void ss_etcd__probes_free(struct ss_backend_etcd *e);
/* From poll: take the answers, and ask again when the interval is up. */
void ss_etcd__probe_step(struct ss_backend_etcd *e);
/* The figures etcd/endpoint_count, etcd/endpoints_healthy,
 * etcd/endpoints_unhealthy, etcd/leader and etcd/endpoints/N/... (N from
 * 1, in the configured order); docs/OPERATIONS.md lists them. */
void ss_etcd__probe_figures(const struct ss_backend_etcd *e, ss_figure_fn fn, void *ctx);

#endif
