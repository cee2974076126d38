/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd.h - the state store on an etcd cluster, behind the storage
 * interface (core/backend.h).
 *
 * Layout under the prefix (default "statestore/"):
 *   k/<key>                      the record (core/record.h, no key tail), or
 *                                for a value too large for one request a
 *                                stub that refers to its chunks, or for a
 *                                while after a deletion its tombstone
 *                                (backend_etcd_tombstone.c)
 *   c/<blob id>/<index, 8 hex>   the chunks of such a value
 *                                (backend_etcd_blob.c)
 *   x/<deadline, 16 hex>/<key>   the expiry index: empty values
 *   n/<node id>                  the commit marker of the broker with that
 *                                node id (see below); m/<slot>/<node id>
 *                                the markers of its other flights
 *   l/<node id>                  the claim of the live broker with that node
 *                                id, on a lease it renews
 *   q/usage                      "<keys> <bytes>" of the whole store, kept
 *                                by every Txn that changes them (only when
 *                                a limit is set)
 *
 * A cache of records, each with the mod_revision it was read at, stands
 * between the engine and etcd. A key that is not in it is fetched (a
 * linearizable Range) while the request that wants it waits (read answers
 * SS_E_PENDING). Every batch ends in one Txn that compares the revision of
 * every key its requests looked at, and only if all still hold, writes
 * what they changed (record, expiry index) and this broker's commit
 * marker. So every answer of a batch is true at the moment the Txn
 * commits, whatever other brokers did meanwhile; when a compare fails,
 * the Txn changes nothing, the keys of the batch leave the cache and the
 * batch's requests run again on fresh data (SS_E_CONFLICT). Up to
 * SS_BACKEND_ETCD_FLIGHTS Txns are in flight at once, on disjoint keys
 * (a key in a Txn under way answers its readers SS_E_PENDING), each with
 * a commit marker of its own.
 *
 * A write Txn whose outcome is unknown (lost connection, timeout) is
 * settled before anything is answered: a second Txn replaces the marker
 * on the condition that it is still what it was before. If that succeeds,
 * the first Txn can never commit (its own compare on the marker fails) and
 * the batch runs again; if not, the marker shows whether the first Txn
 * committed (it holds that Txn's id).
 *
 * Threads: every function runs on the owner's thread (the broker's). The
 * gRPC channel has its own I/O thread, which calls the wake hook when
 * calls finish; the owner then calls ss_backend_etcd_poll.
 */
#ifndef SS_BACKEND_ETCD_H
#define SS_BACKEND_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/backend.h"

/* The etcd key of part ('k': key's record, 'x': its expiry index entry
 * at deadline, 'n', 'l', 'q': see above) under prefix, into out
 * (replaced): the one place the layout is spelled. 0 or SS_E_NOMEM. */
int ss_backend_etcd_layout_key(ss_buf *out, const char *prefix, char part, uint64_t deadline, ss_bytes key);

/* Values too large for one request, for tools that write the layout
 * (backend_etcd_blob.c): the key of chunk i of blob (32 hex digits) under
 * prefix; the stub that stands at k/<key> for rec, whose value is in
 * chunks of chunk_bytes (the last one shorter) under blob. 0 or
 * SS_E_NOMEM. */
int ss_backend_etcd_chunk_key(ss_buf *out, const char *prefix, const char *blob, uint32_t i);
/* All the chunks of blob: the keys in [*start, *end) (both replaced). */
int ss_backend_etcd_blob_range(ss_buf *start, ss_buf *end, const char *prefix, const char *blob);
int ss_backend_etcd_stub(ss_buf *out, const ss_record *rec, const char *blob, size_t chunk_bytes);

/* The bytes a Txn spends beside a key's record to name the key (of
 * key_len bytes, under a prefix of prefix_len): a compare, a put or a
 * delete of its record, and up to three operations on its expiry index
 * entry or chunks, framing included, plus room for the marker and the
 * counter. A record is stored only where it fits in a Txn of its own
 * beside them, so that its deletion (which names the key as often) fits
 * too; tools that write the layout apply the same rule. */
size_t ss_backend_etcd_key_overhead(size_t key_len, size_t prefix_len);

enum { SS_ETCD_LOG_ERR, SS_ETCD_LOG_WARNING, SS_ETCD_LOG_NOTICE, SS_ETCD_LOG_INFO };

typedef struct ss_backend_etcd_options {
    const char *endpoints;  /* comma-separated http(s)://host:port */
    const char *ca_file, *cert_file, *key_file; /* TLS (grpc.h) */
    const char *username, *password; /* etcd's authentication; NULL: none */
    const char *prefix;     /* NULL: "statestore/" */
    const char *node_id;    /* names the commit marker; NULL: "StateStore" */
    unsigned call_timeout_ms;   /* one call; 0: 2000 */
    unsigned unavailable_ms;    /* a request waits this long for the cluster; 0: 5000 */
    size_t max_request_bytes;   /* etcd's --max-request-bytes; 0: 1.5 MiB */
    unsigned max_txn_ops;       /* etcd's --max-txn-ops; 0: 128 */
    unsigned sweep_interval_ms; /* how often due keys are looked for; 0: 250 */
    /* how long a deleted key's tombstone keeps the version it removed
     * (backend_etcd_tombstone.c); 0: SS_BACKEND_ETCD_TOMBSTONE_MS */
    uint64_t tombstone_ms;
    unsigned lease_ttl_s;       /* the node id's claim lives this long unrenewed; 0: 3 */
    uint64_t max_keys, max_bytes; /* over the whole store (q/usage); 0: no limit */
    void (*log)(void *ctx, int level, const char *msg); /* may be NULL */
    void *log_ctx;
} ss_backend_etcd_options;

/* Create the backend (no call is made yet). The wake hook of the returned
 * ss_backend may be set before the first poll. 0, SS_E_INVAL (bad
 * endpoints or TLS files; *why says which), SS_E_NOMEM. */
int ss_backend_etcd_new(const ss_backend_etcd_options *o, ss_backend **out, char *why, size_t why_len);
void ss_backend_etcd_free(ss_backend *b);

/* Ask a member for its status, waiting up to the call timeout, and log in
 * when a user name is set: 0 with a line describing the cluster in *what;
 * SS_E_INVAL when etcd refused the user name or password; or the
 * failure with its cause. */
int ss_backend_etcd_ping(ss_backend *b, char *what, size_t what_len);

/* Claim the node id for this broker (l/<node id>, on a lease renewed
 * from poll), waiting up to wait_ms for the claim of a broker that died
 * to lapse. 0; SS_E_BUSY: another live broker holds it (*why says which);
 * SS_E_UNAVAILABLE: the cluster did not answer (poll claims it later). */
int ss_backend_etcd_claim(ss_backend *b, unsigned wait_ms, char *why, size_t why_len);

/* Start watching the records for changes (the change feed: every
 * broker's changes notify observers here), waiting up to wait_ms for etcd
 * to confirm it. 0; SS_E_UNAVAILABLE: not yet (poll goes on trying). */
int ss_backend_etcd_watch_start(ss_backend *b, unsigned wait_ms);

/* Take the results of finished calls (records fetched, a commit), retry
 * what failed, look for due keys. Call at every tick. */
void ss_backend_etcd_poll(ss_backend *b, uint64_t now_ms);

/* Start reading key into the cache, if it is not there, for a request
 * that will run later: requests run in order, so without this a queue of
 * requests on uncached keys would read them one after the other. */
void ss_backend_etcd_prefetch(ss_backend *b, ss_bytes key);

/* Txns in flight at once at most, on disjoint keys (one while a quota is
 * set: every Txn that changes the store's size then compares q/usage). */
#define SS_BACKEND_ETCD_FLIGHTS 2
/* How long a tombstone stays by default, after its deletion or the wall
 * clock of the version it keeps, whichever is later: once it is gone, the
 * next version of the key is greater only if the brokers' clocks are
 * closer than this. */
#define SS_BACKEND_ETCD_TOMBSTONE_MS 60000u

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

/* Reading records in key order for administrative requests (KEYS,
 * INSPECT, EXPORT), one page at a time: start reads up to limit records
 * from `from` (inclusive, or after it; empty: the first); done is false
 * while the read is under way, then calls fn for each record (expiry not
 * applied) until fn returns false, sets *next to the key to go on after
 * (empty at the end) and *rc, and returns true. One read at a time:
 * start answers SS_E_BUSY while one is under way. Without values, a
 * value kept in chunks is not read: fn sees its length alone (rec->value
 * with data NULL). With them, done may return false between two calls
 * of fn while the chunks of the next record are read. */
int ss_backend_etcd_scan_start(ss_backend *b, ss_bytes from, bool inclusive, size_t limit, bool values);
bool ss_backend_etcd_scan_done(ss_backend *b, bool (*fn)(void *ctx, ss_bytes key, const ss_record *rec),
                               void *ctx, ss_buf *next, int *rc);

/* Figures for the metrics. */
typedef struct ss_backend_etcd_stats {
    uint64_t txns, conflicts, unknown_outcomes, fetches, cache_entries;
    uint64_t txns_overlapped; /* sent while another was in flight */
    bool usage_known;          /* with a limit set: keys and bytes below */
    uint64_t keys, bytes;
    bool reachable;
    const char *endpoint;
    /* the watch: the last revision seen, changes seen, restarts of its
     * stream, revisions lost to compaction, changes that could not be
     * read (no previous value) */
    uint64_t watch_revision, watch_events, watch_restarts, watch_lost_revisions, watch_undecodable;
    uint64_t chunks_written; /* of values too large for one request */
    bool nospace;            /* etcd is out of space (its NOSPACE alarm) */
} ss_backend_etcd_stats;
void ss_backend_etcd_stats_get(const ss_backend *b, ss_backend_etcd_stats *s);

#endif
