/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_sweep.h - what backend_etcd_sweep.c offers the etcd backend's other
 * files: the deadlines this broker knows, how it learns them, and the
 * deletion of due keys. */
#ifndef SS_BACKEND_ETCD_SWEEP_H
#define SS_BACKEND_ETCD_SWEEP_H

#include "backend_etcd_state.h"

/* key's deadline as of revision rev (0: none): own, written by this
 * broker's commit (swept at the deadline), or seen (swept
 * sweep_interval_ms later). */
void ss_etcd__deadline_learn(struct ss_backend_etcd *e, ss_bytes key, int64_t rev, uint64_t deadline, bool own);
/* The same from a record or tombstone as etcd holds it (raw; deleted:
 * empty): own if its version is this broker's node id's (written by this
 * broker, or by the one before it with that id: a broker restarted sweeps
 * its own keys at their deadlines). */
void ss_etcd__deadline_learn_raw(struct ss_backend_etcd *e, ss_bytes key, int64_t rev, ss_bytes raw);
/* Is v a version of this broker's node id? */
bool ss_etcd__own_version(const struct ss_backend_etcd *e, const ss_hlc *v);
/* Every record's deadline to be read again, from the start. */
void ss_etcd__deadlines_reread(struct ss_backend_etcd *e);
/* The read of every record's deadline: its next page, and a page read. */
void ss_etcd__deadlines_step(struct ss_backend_etcd *e);
void ss_etcd__deadlines_page(struct ss_backend_etcd *e, struct ss_etcd_op *op);

uint64_t ss_etcd__next_expiry(void *impl);
int ss_etcd__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version);

#endif
