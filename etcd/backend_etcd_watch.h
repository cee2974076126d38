/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_watch.h - what backend_etcd_watch.c offers the etcd backend's other
 * files: the change feed from etcd's Watch. */
#ifndef SS_BACKEND_ETCD_WATCH_H
#define SS_BACKEND_ETCD_WATCH_H

#include "backend_etcd_state.h"

/* Start watching the records for changes (the change feed: every
 * broker's changes notify observers here), waiting up to wait_ms for etcd
 * to confirm it. 0; SS_E_UNAVAILABLE: not yet (poll goes on trying). */
int ss_backend_etcd_watch_start(ss_backend *b, unsigned wait_ms);

/* Start the watch when none runs; read what it reported; its stream
 * ended; a commit settled (move the changes seen into the feed). */
void ss_etcd__watch_step(struct ss_backend_etcd *e);
void ss_etcd__watch_read(struct ss_backend_etcd *e);
void ss_etcd__watch_ended(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* A commit settled with rc, and with it every commit of the owner up to
 * upto (0: none): its own changes go into the feed (unless the watch
 * reports them), then what the watch reported, with upto's TOLD mark once
 * the watch has reported every change up to the commit's revision (and up
 * to what it had reported then). */
void ss_etcd__watch_settled(struct ss_backend_etcd *e, int rc, uint64_t upto);

/* The read of a deleted record's last version came back. */
void ss_etcd__removed_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* The chunks of a held change's value came back. */
void ss_etcd__held_blob_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__watch_free(struct ss_backend_etcd *e);
/* Flight f's Txn answered at revision rev: if that is below what this
 * broker knew when it built the Txn, etcd's data went back (a snapshot
 * restored, a lone member's data replaced), and everything known by
 * revision is forgotten. */
void ss_etcd__revision_answered(struct ss_backend_etcd *e, const struct ss_etcd_flight *f, int64_t rev);
/* etcd's data went back, as evidence (a clause for the log) shows; rev
 * is a revision of the new history: everything known by revision is
 * forgotten, and the watch starts again from rev. */
void ss_etcd__went_back(struct ss_backend_etcd *e, int64_t rev, const char *evidence);

#endif
