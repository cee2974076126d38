/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_quota.h - what backend_etcd_quota.c offers the etcd backend's other
 * files: max_keys and max_bytes over the whole store. */
#ifndef SS_BACKEND_ETCD_QUOTA_H
#define SS_BACKEND_ETCD_QUOTA_H

#include "backend_etcd_state.h"

bool ss_etcd__limited(const struct ss_backend_etcd *e);

/* Charge a change of a touched entry from what it holds now to found /
 * value_len: SS_E_QUOTA (a limit; nothing charged), SS_E_PENDING (the
 * usage is not known yet), or 0. */
int ss_etcd__charge(struct ss_backend_etcd *e, const struct ss_etcd_entry *x, bool found, size_t value_len);

/* The batch's Txn compares q/usage when a decision of the batch rested on
 * it (a refusal too), and writes it when the batch changed it. */
int ss_etcd__build_usage(struct ss_backend_etcd *e, struct ss_etcd_batch *b, ss_etcd_txn *t);

/* The commit ended: rc 0 applies the batch's change; otherwise the usage
 * is read again. */
void ss_etcd__usage_settled(struct ss_backend_etcd *e, struct ss_etcd_batch *b, int rc, int64_t revision);
void ss_etcd__usage_step(struct ss_backend_etcd *e);
void ss_etcd__usage_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);

#endif
