/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend.h - the storage interface: what the engine needs of a store.
 *
 * The engine (engine.h) holds the protocol's rules and reaches storage only
 * through this table of operations, so that an embedded store (LMDB,
 * backend_lmdb.h) and an engine reached over the network, shared with
 * other brokers, can stand behind it alike. The model:
 *
 * - Reads may complete later. read answers at once when it can (LMDB
 *   always does); otherwise it starts fetching and returns SS_E_PENDING.
 *   The engine has then changed nothing, and the owner runs the request
 *   again once the backend has woken it (wake below).
 * - Writes carry the revision they were decided on: the revision read
 *   returned with the record (0 for an absent key). A backend whose data
 *   others change concurrently commits each write with a compare on that
 *   revision; when the compare fails, put or del (or later, the commit of
 *   that request) reports SS_E_CONFLICT and the owner runs the request
 *   again on fresh data. A single-writer backend decides and writes in one
 *   transaction: every write matches.
 * - Completion per commit unit: the owner numbers what waits for each
 *   commit (plugin/batch.h) so that one unit can fail while another
 *   succeeds.
 * - The change feed: after a commit, the backend's feed holds every change
 *   committed, whoever made it, including expiries. For LMDB it is the
 *   batch's own changes; for a shared engine it is that engine's stream of
 *   changes. Only the feed drives notifications.
 *
 * Everything else a backend needs (journals, checkpoints, map sizes,
 * connections) is its own: its options and its durability control stay
 * behind its own header.
 */
#ifndef SS_BACKEND_H
#define SS_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "feed.h"
#include "hlc.h"

/* Longest key every backend accepts. */
#define SS_STORE_KEY_MAX ((size_t)1 << 20)

/* What a write was decided on (0: the key was absent). */
typedef uint64_t ss_revision;

/* A stored record. value borrows the backend's memory: valid until the
 * next call on the same backend. */
typedef struct ss_record {
    ss_bytes value;
    ss_hlc version;
    bool has_ft;
    ss_hlc ft;
    uint64_t expiry_ms; /* 0: never expires */
} ss_record;

/* One key of a SCAN page, with the cursor that names it (a page started
 * after that cursor begins with the next key) and its record (expiry not
 * applied; a value the backend keeps apart may be absent: data NULL, len
 * its size), all borrowed for the call. Return false to end the page. */
typedef bool (*ss_backend_scan_fn)(void *ctx, ss_bytes key, ss_bytes cursor, const ss_record *rec);

struct ss_backend_ops {
    const char *name;
    /* Look key up: 0 with *rec and *rev, SS_E_NOTFOUND (*rev: the absent
     * key's revision; rec->version: the version its last deletion removed
     * when the backend keeps it, else left as it was), SS_E_PENDING, or a
     * failure (SS_E_IO, SS_E_CORRUPT). Expiry is not applied here. */
    int (*read)(void *impl, ss_bytes key, ss_record *rec, ss_revision *rev);
    /* Insert or replace key (rec->value is copied). SS_E_QUOTA (a limit;
     * nothing changed), SS_E_INVAL, SS_E_CONFLICT, SS_E_IO. */
    int (*put)(void *impl, ss_bytes key, const ss_record *rec, ss_revision decided_on);
    /* Remove change->key (change describes the removal for the feed).
     * 0, SS_E_NOTFOUND, SS_E_CONFLICT, SS_E_IO. */
    int (*del)(void *impl, const ss_change *change, ss_revision decided_on);
    /* A lower bound of the earliest expiry deadline, UINT64_MAX if none. */
    uint64_t (*next_expiry)(void *impl);
    /* Remove the key with the earliest deadline if it is <= now_ms: its
     * key into *key, its version into *version. 0, SS_E_NOTFOUND (nothing
     * due), or a failure. */
    int (*pop_due)(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version);
    /* The last version issued, kept with the data so that versions grow
     * across restarts. */
    int (*save_clock)(void *impl, uint64_t wall, uint32_t counter);
    void (*load_clock)(void *impl, uint64_t *wall, uint32_t *counter);
    /* Commit what was written since the last commit, waiting for it: for
     * owners without a pipeline of their own (tools, tests, shutdown).
     * 0, or the failure (nothing of it remains): SS_E_QUOTA, SS_E_IO. */
    int (*commit)(void *impl, uint64_t now_ms);
    /* Drop what was written since the last commit. */
    void (*abort)(void *impl);
    /* The owner's pipeline settled the last commit with rc: committed
     * changes move to the feed, those of a failed commit are dropped. */
    void (*settled)(void *impl, int rc);
    /* SCAN's page: walk the keys in the backend's order from the first
     * after the cursor `after` (empty: the first), calling fn for each,
     * until fn returns false or max_examined keys (deleted keys a backend
     * keeps a trace of included) were looked at. *next gets the cursor of
     * the last key looked at, opaque bytes of at most SS_STORE_KEY_MAX + 64
     * (empty: the walk reached the end). What the open batch wrote is
     * seen. 0; SS_E_PENDING: the page is being read, nothing was called
     * (run the request again, with the same cursor and bound, once
     * woken); or a failure (SS_E_IO, SS_E_UNAVAILABLE, SS_E_NOMEM). */
    int (*scan)(void *impl, ss_bytes after, size_t max_examined, ss_backend_scan_fn fn, void *ctx,
                ss_buf *next);
    /* 16 bytes kept with the data, the same after a restart and for every
     * broker on the same data, that clients cannot learn: the key of
     * SCAN's continuation tokens. */
    void (*token_key)(void *impl, uint8_t out[16]);
};

/* Should the feed keep a change of key? (Most keys have no observer;
 * copying their values would be wasted.) */
typedef bool (*ss_feed_wanted_fn)(void *ctx, ss_bytes key);
typedef void (*ss_wake_fn)(void *ctx);

typedef struct ss_backend {
    const struct ss_backend_ops *ops;
    void *impl;
    ss_feed feed;               /* committed changes not yet delivered */
    ss_feed_wanted_fn wanted;   /* NULL: every change */
    void *wanted_ctx;
    ss_wake_fn wake;            /* results arrived (any thread); may be NULL */
    void *wake_ctx;
} ss_backend;

/* Call fn for each committed change in the feed, oldest first, then
 * forget them. */
void ss_backend_deliver(ss_backend *b, ss_change_fn fn, void *ctx);
/* True if a change of key should go into the feed. */
bool ss_backend_wants(const ss_backend *b, ss_bytes key);

#endif
