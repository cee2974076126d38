/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_commit.h - what backend_etcd_commit.c offers the etcd backend's other
 * files: a batch's Txn, its outcome, the fence that settles an unknown one. */
#ifndef SS_BACKEND_ETCD_COMMIT_H
#define SS_BACKEND_ETCD_COMMIT_H

#include "backend_etcd_state.h"

/* The open batch reached etcd's limits on one Txn: commit it now. */
bool ss_backend_etcd_full(const ss_backend *b);

/* Start committing the open batch in a flight of its own; a new batch
 * opens. 0: its Txn is under way in flight *slot (see commit_done);
 * SS_E_NOTFOUND: there was nothing to commit (settle at once);
 * SS_E_BUSY: every flight is taken (try at the next tick); SS_E_PENDING:
 * not yet possible (try at the next tick); or a failure (SS_E_NOMEM)
 * that drops the batch. */
int ss_backend_etcd_commit_start(ss_backend *b, uint64_t now_ms, unsigned *slot);

/* True once the commit in flight slot has an outcome, with *rc: 0, or
 * SS_E_CONFLICT (nothing was written: run the batch's requests again),
 * or a failure that nothing of the batch outlived (SS_E_QUOTA, SS_E_IO,
 * SS_E_UNAVAILABLE: the chunks of a large value could not be written).
 * The slot is free again. Call the backend's settled() next. */
bool ss_backend_etcd_commit_done(ss_backend *b, unsigned slot, int *rc);

/* Has the commit in flight slot an outcome (commit_done would return
 * true)? */
bool ss_backend_etcd_flight_done(const ss_backend *b, unsigned slot);

/* Is any commit in flight? */
bool ss_backend_etcd_committing(const ss_backend *b);

/* Build and send the open batch's Txn (its chunks are written). */
void ss_etcd__commit_send(struct ss_backend_etcd *e, struct ss_etcd_flight *f);

/* The commit ended before its Txn was sent: nothing of it is stored. */
void ss_etcd__commit_failed(struct ss_backend_etcd *e, struct ss_etcd_flight *f, int rc);
void ss_etcd__txn_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__fence_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__send_fence(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
/* A commit answered "space exceeded" (applied, or refused for good): a
 * read of its marker settles it. */
void ss_etcd__send_settle_read(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
void ss_etcd__settle_read_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* Is the marker that a failed Txn of flight f read back (kv) older than
 * this process's last commit on the slot? Its own text with a lower
 * sequence number, or none where it wrote one: etcd's data went back (a
 * marker is only ever replaced, by the next commit). Says so in why (n
 * bytes; the caller's ss_etcd__went_back), or leaves it empty. Only for a
 * Txn built since the last time etcd's data was seen going back (its
 * known_backs): one restore is noticed once. A marker of another process
 * (a broker that took the node id over) says nothing of it. Read before
 * kv's bytes go. */
void ss_etcd__marker_behind(const struct ss_backend_etcd *e, const struct ss_etcd_flight *f, const ss_etcd_kv *kv,
                           char *why, size_t n);

#endif
