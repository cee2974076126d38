/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_tombstone.h - what backend_etcd_tombstone.c offers the etcd backend's other
 * files: a deleted key's tombstone. */
#ifndef SS_BACKEND_ETCD_TOMBSTONE_H
#define SS_BACKEND_ETCD_TOMBSTONE_H

#include "backend_etcd_state.h"

/* Is raw (as stored at k/) a tombstone? */
bool ss_etcd__tombstone(ss_bytes raw);

/* The tombstone a deletion leaves (gone: the DELETE change), into out
 * (replaced); *until_ms: when it goes. 0 or SS_E_NOMEM. */
int ss_etcd__tombstone_make(const struct ss_backend_etcd *e, const ss_change *gone, ss_buf *out, uint64_t *until_ms);

/* Its length in bytes, as made now. */
size_t ss_etcd__tombstone_size(const struct ss_backend_etcd *e, const ss_change *gone);

/* If raw is a tombstone of key: the DELETE change it stands for, in *c
 * (borrowing key). */
bool ss_etcd__tombstone_change(ss_bytes raw, ss_bytes key, ss_change *c);

#endif
