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

/* The LMDB backend's options, each plugin_opt_<name> in the broker's
 * configuration (docs/CONFIGURATION.md says more):
 *   data_dir                /var/lib/statestore; an absolute path
 *   fsync                   periodic (at most every fsync_interval_ms) or
 *                           always (before every answer)
 *   fsync_interval_ms       1000 (1 to 3600000)
 *   checkpoint_interval_ms  1000 (1 to 3600000): the journal into the data
 *                           file at most this often...
 *   journal_max_bytes       4 MiB (4096 to 2^40): ...or when it reaches this
 *   map_size                0: 4 * max_bytes + 64 MiB (LMDB's map)
 *   compact_on_start        false: rewrite the data file without its free
 *                           pages at start
 *   test_fail_write_at, test_fail_sync_at
 *                           0: for tests, the Nth journal write or fsync
 *                           fails
 * max_keys and max_bytes are the owner's (shared by every backend). */
#define SS_BACKEND_LMDB_DATA_DIR_DEFAULT "/var/lib/statestore"

typedef struct ss_backend_lmdb_config {
    char *data_dir;
    int sync; /* enum ss_sync_policy */
    uint64_t sync_interval_ms, checkpoint_interval_ms, journal_max_bytes, map_size;
    bool compact_on_start;
    uint64_t test_fail_write_at, test_fail_sync_at;
    uint64_t max_keys, max_bytes; /* set by the owner; 0 keys: no limit */
} ss_backend_lmdb_config;

/* Defaults. 0 or SS_E_NOMEM. */
int ss_backend_lmdb_config_init(ss_backend_lmdb_config *c);
/* Set option name: 0, SS_E_NOTFOUND (not one of ours), SS_E_INVAL (*why
 * says what is expected), SS_E_NOMEM. */
int ss_backend_lmdb_config_set(ss_backend_lmdb_config *c, const char *name, const char *value, char *why,
                               size_t why_len);
bool ss_backend_lmdb_config_knows(const char *name);
/* "backend=lmdb data_dir=... fsync=..." for the start-up line. */
void ss_backend_lmdb_config_describe(const ss_backend_lmdb_config *c, char *out, size_t len);
void ss_backend_lmdb_config_free(ss_backend_lmdb_config *c);
/* The store's options that c stands for (borrowing c's strings). */
ss_store_options ss_backend_lmdb_store_options(const ss_backend_lmdb_config *c);

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
