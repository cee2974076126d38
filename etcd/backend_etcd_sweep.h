/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_sweep.h - what backend_etcd_sweep.c offers the etcd backend's other
 * files: the expiry index: finding due keys, deleting them. */
#ifndef SS_BACKEND_ETCD_SWEEP_H
#define SS_BACKEND_ETCD_SWEEP_H

#include "backend_etcd_state.h"

uint64_t ss_etcd__next_expiry(void *impl);
int ss_etcd__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version);
void ss_etcd__ask_due(struct ss_backend_etcd *e, uint64_t now_ms);
void ss_etcd__due_found(struct ss_backend_etcd *e, struct ss_etcd_op *op);

#endif
