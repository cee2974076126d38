/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_settle.h - what backend_etcd_settle.c offers the etcd
 * backend's other files: settling a commit whose outcome was lost. */
#ifndef SS_BACKEND_ETCD_SETTLE_H
#define SS_BACKEND_ETCD_SETTLE_H

#include "backend_etcd_state.h"

/* The most later writes of other brokers to a witness key that a settle
 * reads back through, one Range each, before it gives up (the outcome
 * stays unknown): a hot lock's key may take hundreds while a broker is
 * cut off for a few seconds. */
#define SS_ETCD_SETTLE_HOPS 1000u

/* Flight f's Txn went out and its outcome is not known. lost: its answer
 * was lost (the Txn may still apply later: a fence first); else etcd
 * answered it "space exceeded" (applied, or refused for good). The
 * flight resolves; ss_etcd__commit_outcome follows. */
void ss_etcd__settle_start(struct ss_backend_etcd *e, struct ss_etcd_flight *f, bool lost);

/* From poll, when f->resolve_at_ms is due: the step tried again. */
void ss_etcd__send_fence(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
void ss_etcd__send_settle_read(struct ss_backend_etcd *e, struct ss_etcd_flight *f);

void ss_etcd__fence_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__settle_read_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);

#endif
