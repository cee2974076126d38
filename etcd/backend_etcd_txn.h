/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_txn.h - what backend_etcd_txn.c offers the commit: a
 * flight's batch as one Txn. */
#ifndef SS_BACKEND_ETCD_TXN_H
#define SS_BACKEND_ETCD_TXN_H

#include "backend_etcd_state.h"

/* Does batch b change any key (a put, a deletion or a purge)? */
bool ss_etcd__writes(const struct ss_etcd_batch *b);

/* Does batch b put anything (a record or a tombstone)? Out of space,
 * deletions purge and puts are refused at once, so only a batch whose
 * requests ran before etcd said it was full can. */
bool ss_etcd__puts(const struct ss_etcd_batch *b);

/* Flight f's batch as a Txn, packed into op's request. */
int ss_etcd__build(struct ss_backend_etcd *e, struct ss_etcd_flight *f, struct ss_etcd_op *op);

/* e->scratch = the commit marker of slot: n/<node id> for slot 0,
 * m/<slot>/<node id> for the others. */
int ss_etcd__marker_key(struct ss_backend_etcd *e, unsigned slot);

#endif
