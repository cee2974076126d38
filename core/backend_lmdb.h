/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_lmdb.h - the embedded LMDB store (store.h) behind the storage
 * interface (backend.h).
 *
 * A single writer: reads complete at once, every write matches the
 * revision it was decided on (revisions are all 0), and the feed is the
 * batch's own changes, moved there when the owner settles a successful
 * commit. A batch opens on the first read or write after a commit.
 */
#ifndef SS_BACKEND_LMDB_H
#define SS_BACKEND_LMDB_H

#include "backend.h"
#include "store.h"

/* A backend on store (borrowed: it must outlive the backend). 0 or
 * SS_E_NOMEM. */
int ss_backend_lmdb_new(ss_store *store, ss_backend **out);
/* Free the backend (not the store). NULL: no-op. */
void ss_backend_lmdb_free(ss_backend *b);

#endif
