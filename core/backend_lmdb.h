/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_lmdb.h - the embedded LMDB store (store.h) behind the storage
 * interface (backend.h).
 *
 * A single writer: reads complete at once, every write matches the
 * revision it was decided on (revisions are all 0), and the feed is the
 * batch's own changes, moved there when the owner settles a successful
 * commit. A batch opens on the first read or write after a commit. One
 * commit at a time (backend_lmdb_life.c).
 */
#ifndef SS_BACKEND_LMDB_H
#define SS_BACKEND_LMDB_H

#include "backend.h"
#include "store.h"

/* A backend on store (borrowed: it must outlive the backend), for tools
 * and tests: commits run on the caller's thread unless start() was
 * called. 0 or SS_E_NOMEM. */
int ss_backend_lmdb_new(ss_store *store, ss_backend **out);
/* A backend on the store it opens with o (ss_store_open's errors) and
 * closes when freed: the broker's. Its start() starts the worker that
 * takes the commits that wait for the disk (resident with fsync=always)
 * and, with o->external_sync, the periodic fsync. */
int ss_backend_lmdb_open(const ss_store_options *o, ss_backend **out);
/* The store behind b, for what only LMDB has (open-time reports). */
ss_store *ss_backend_lmdb_store(ss_backend *b);
/* Free the backend, and the store when it opened it. NULL: no-op. */
void ss_backend_lmdb_free(ss_backend *b);

#endif
