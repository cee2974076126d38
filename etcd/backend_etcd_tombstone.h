/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_tombstone.h - what backend_etcd_tombstone.c offers the etcd backend's other
 * files: a deleted key's tombstone. */
#ifndef SS_BACKEND_ETCD_TOMBSTONE_H
#define SS_BACKEND_ETCD_TOMBSTONE_H

#include "backend_etcd_state.h"

/* Is raw (as stored at k/) a tombstone? */
bool ss_etcd__tombstone(ss_bytes raw);

/* When the tombstone of gone goes, if made now: tombstone_ms after the
 * later of now and the removed version's wall clock. */
uint64_t ss_etcd__tombstone_until(const struct ss_backend_etcd *e, const ss_change *gone);

/* The tombstone a deletion leaves (gone: the DELETE change), into out
 * (replaced), with until_ms as its expiry: when it goes, or 0 when it is
 * put on a lease. 0 or SS_E_NOMEM. */
int ss_etcd__tombstone_make(const ss_change *gone, uint64_t until_ms, ss_buf *out);

/* Its length in bytes at most, as made now. */
size_t ss_etcd__tombstone_size(const struct ss_backend_etcd *e, const ss_change *gone);

/* A lease (its id) that etcd keeps at least until until_ms (wall clock),
 * for a tombstone; 0: none (the tombstone carries its end, for the sweep). Leases
 * are asked for ahead from then on, for SS_ETCD_TLEASE_KEEP_MS. */
int64_t ss_etcd__tombstone_lease(struct ss_backend_etcd *e, uint64_t until_ms);

/* From poll: the next lease asked for, when one is wanted. */
void ss_etcd__tombstone_lease_step(struct ss_backend_etcd *e);

/* The reply to the grant of such a lease (SS_OP_TLEASE). */
void ss_etcd__tombstone_lease_granted(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* etcd refused a commit for a lease it no longer has (why: its words):
 * none of the leases held is used again. */
void ss_etcd__tombstone_leases_gone(struct ss_backend_etcd *e, const char *why);

/* If raw is a tombstone of key: the DELETE change it stands for, in *c
 * (borrowing key). */
bool ss_etcd__tombstone_change(ss_bytes raw, ss_bytes key, ss_change *c);

#endif
