/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_upload.h - what backend_etcd_upload.c offers the etcd
 * backend's other files: the chunks of large values written under a
 * guard before the Txn, and deleted when it did not commit. */
#ifndef SS_BACKEND_ETCD_UPLOAD_H
#define SS_BACKEND_ETCD_UPLOAD_H

#include "backend_etcd_state.h"

/* Has the batch values that go in chunks? */
bool ss_etcd__uploads(const struct ss_etcd_batch *b);
/* Flight f writes them, one call at a time (a lease for their guards
 * first); then its Txn goes (commit_send). */
void ss_etcd__upload_start(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
void ss_etcd__upload_next(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
void ss_etcd__upload_lease_granted(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__upload_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* Into the commit's Txn t: blob's guard is still there, and goes. */
int ss_etcd__guard_commit(struct ss_backend_etcd *e, ss_etcd_txn *t, const char *blob);

/* Revoke lease (0: none), which ends the guards of its chunks, then
 * delete blob's chunks ("": none); again every second until etcd
 * answers. */
void ss_etcd__blob_release(struct ss_backend_etcd *e, const char *blob, int64_t lease);
void ss_etcd__blob_revoked(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__blob_dropped(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* Deletions that failed, again after a pause. */
void ss_etcd__drop_step(struct ss_backend_etcd *e);
/* At the stop: log the chunks whose deletion is still to come, and
 * those of flights under way (uploading, or their commit not settled). */
void ss_etcd__drops_left(struct ss_backend_etcd *e);

#endif
