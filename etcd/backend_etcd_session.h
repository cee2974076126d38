/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_session.h - what backend_etcd_session.c offers the etcd backend's other
 * files: the commit markers, the claim on the node id, authentication. */
#ifndef SS_BACKEND_ETCD_SESSION_H
#define SS_BACKEND_ETCD_SESSION_H

#include "backend_etcd_state.h"

/* Claim the node id for this broker (l/<node id>, on a lease renewed
 * from poll), waiting up to wait_ms for the claim of a broker that died
 * to lapse. 0; SS_E_BUSY: another live broker holds it (*why says which);
 * SS_E_UNAVAILABLE: the cluster did not answer (poll claims it later). */
int ss_backend_etcd_claim(ss_backend *b, unsigned wait_ms, char *why, size_t why_len);

/* Read the commit marker of f's slot, once. */
void ss_etcd__ask_marker(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
void ss_etcd__marker_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* etcd answered: said once if it was said not to. */
void ss_etcd__answers(struct ss_backend_etcd *e);
void ss_etcd__claim_step(struct ss_backend_etcd *e);
/* How long a call the claim rests on (a renewal of its lease, a log-in
 * while it is held) may wait for its answer at monotonic time now: a
 * third of the lease at most, and not past the lease's end. */
unsigned ss_etcd__claim_timeout_ms(const struct ss_backend_etcd *e, uint64_t now);
void ss_etcd__claim_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
int ss_etcd__logged_in(struct ss_backend_etcd *e, const ss_grpc_call *c);
void ss_etcd__auth_step(struct ss_backend_etcd *e);
void ss_etcd__auth_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);

#endif
