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
 *   n/<node id>                  the commit marker of the broker with that
 *                                node id (see below); m/<slot>/<node id>
 *                                the markers of its other flights
 *   l/<node id>                  the claim of the live broker with that node
 *                                id, on a lease it renews
 *   q/usage                      "<keys> <bytes>" of the whole store, kept
 *                                by every Txn that changes them (only when
 *                                a limit is set)
 *   s/scan-token-key             16 random bytes: the key of SCAN's
 *                                continuation tokens, made by the first
 *                                broker (backend_etcd_scan.c)
 *
 * A cache of records, each with the mod_revision it was read at, stands
 * between the engine and etcd. A key that is not in it is fetched (a
 * linearizable Range) while the request that wants it waits (read answers
 * SS_E_PENDING). Every batch ends in one Txn that compares the revision of
 * every key its requests looked at, and only if all still hold, writes
 * what they changed (records, tombstones) and this broker's commit
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
 * calls finish; the owner then polls (backend.h). Everything the owner
 * does goes through the storage interface's table; this header is for
 * whoever creates the backend and for tools that write the layout.
 */
#ifndef SS_BACKEND_ETCD_H
#define SS_BACKEND_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/backend.h"

/* The etcd key of part ('k': key's record, 'c', 'n', 'l', 'q': see
 * above) under prefix, into out (replaced): the one place the layout is
 * spelled. (Earlier builds also kept an expiry index under x/: see
 * docs/CLUSTER.md.) 0 or SS_E_NOMEM. */
int ss_backend_etcd_layout_key(ss_buf *out, const char *prefix, char part, ss_bytes key);

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
 * delete of its record, and the deletion of the chunks of a value it
 * replaces, framing included, plus room for the marker and the
 * counter. A record is stored only where it fits in a Txn of its own
 * beside them, so that its deletion (which names the key as often) fits
 * too; tools that write the layout apply the same rule. */
size_t ss_backend_etcd_key_overhead(size_t key_len, size_t prefix_len);

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
    /* how long after a deadline another broker's key is swept, when its
     * writer did not; 0: 250 */
    unsigned sweep_interval_ms;
    /* how often every record is read again for its deadline, beside the
     * reads at start and after the watch lost history
     * (backend_etcd_sweep.c); 0: SS_BACKEND_ETCD_SWEEP_FULL_MS */
    uint64_t sweep_full_ms;
    /* how long a deleted key's tombstone keeps the version it removed
     * (backend_etcd_tombstone.c); 0: SS_BACKEND_ETCD_TOMBSTONE_MS */
    uint64_t tombstone_ms;
    unsigned lease_ttl_s;       /* the node id's claim lives this long unrenewed; 0: 3 */
    unsigned status_interval_ms; /* each endpoint's status asked this often; 0: never */
    /* after this long without a sign of another broker writing, a write
     * Txn confirms the keys it only read by one compare on the other
     * brokers' commit markers, not one per key; 0: never */
    uint64_t solo_ms;
    uint64_t max_keys, max_bytes; /* over the whole store (q/usage); 0: no limit */
    ss_backend_log_fn log; /* levels SS_LOG_* (backend.h); may be NULL */
    void *log_ctx;
} ss_backend_etcd_options;

/* The etcd backend's options, each plugin_opt_<name> in the broker's
 * configuration (docs/CLUSTER.md says more):
 *   etcd_endpoints          required: comma-separated http(s)://host:port
 *   etcd_prefix             statestore/: where the layout above lives
 *   etcd_ca_file, etcd_cert_file, etcd_key_file
 *                           TLS: the CA to trust (else the system's), a
 *                           client certificate and its key (together)
 *   etcd_username, etcd_password
 *                           etcd's authentication (a password needs a user)
 *   etcd_timeout_ms         2000 (50 to 600000): one call (the claim's
 *                           renewal and a connection: a third of the
 *                           claim's lease at most, backend_etcd_session.c)
 *   etcd_unavailable_ms     5000 (1 to 3600000): a request waits this long
 *                           for the cluster
 *   etcd_max_txn_ops        128 (9 to 10^6): etcd's --max-txn-ops
 *   etcd_max_request_bytes  1.5 MiB (64 KiB to 2 GiB): etcd's
 *                           --max-request-bytes
 *   etcd_tombstone_ms       60000 (1 s to 7 days): see below
 *   etcd_sweep_full_ms      3600000 (100 to 86400000): how often each
 *                           broker reads every record again for its
 *                           deadline (it reads them at start, and when
 *                           its watch lost history to compaction)
 *   etcd_status_interval_ms 2000 (0: off, or 100 to 3600000): how often
 *                           each endpoint is asked for its status (the
 *                           figures etcd/endpoints/N/...)
 *   etcd_solo_ms            1000 (0: off, or up to 3600000): after this
 *                           long without seeing another broker write, a
 *                           commit confirms what its batch only read by
 *                           one compare on the other brokers' commit
 *                           markers rather than one per key
 * node_id, max_keys and max_bytes are the owner's (shared with the
 * engine and every backend). */
typedef struct ss_backend_etcd_config {
    char *endpoints, *prefix, *ca_file, *cert_file, *key_file, *username, *password;
    uint64_t timeout_ms, unavailable_ms, max_txn_ops, max_request_bytes, tombstone_ms;
    uint64_t status_interval_ms, sweep_full_ms, solo_ms;
    const char *node_id;          /* set by the owner (borrowed) */
    uint64_t max_keys, max_bytes; /* set by the owner; 0: no limit */
} ss_backend_etcd_config;

/* Defaults. */
void ss_backend_etcd_config_init(ss_backend_etcd_config *c);
/* Set option name: 0, SS_E_NOTFOUND (not one of ours), SS_E_INVAL (*why
 * says what is expected), SS_E_NOMEM. */
int ss_backend_etcd_config_set(ss_backend_etcd_config *c, const char *name, const char *value, char *why,
                               size_t why_len);
bool ss_backend_etcd_config_knows(const char *name);
/* What must hold once every option is read: 0, or SS_E_INVAL with *why. */
int ss_backend_etcd_config_check(const ss_backend_etcd_config *c, char *why, size_t why_len);
/* "backend=etcd etcd_endpoints=..." for the start-up line (no password). */
void ss_backend_etcd_config_describe(const ss_backend_etcd_config *c, char *out, size_t len);
/* Free the strings (the password wiped first). */
void ss_backend_etcd_config_free(ss_backend_etcd_config *c);

/* Create the backend (no call is made yet). The wake hook of the returned
 * ss_backend may be set before the first poll. 0, SS_E_INVAL (bad
 * endpoints or TLS files; *why says which), SS_E_NOMEM. */
int ss_backend_etcd_new(const ss_backend_etcd_options *o, ss_backend **out, char *why, size_t why_len);
void ss_backend_etcd_free(ss_backend *b);
/* The constructor's options that c stands for (borrowing c's strings). */
ss_backend_etcd_options ss_backend_etcd_options_of(const ss_backend_etcd_config *c);

/* How long a tombstone stays by default, after its deletion or the wall
 * clock of the version it keeps, whichever is later: once it is gone, the
 * next version of the key is greater only if the brokers' clocks are
 * closer than this. */
#define SS_BACKEND_ETCD_TOMBSTONE_MS 60000u
/* How often each broker reads every record again for its deadline, by
 * default: a safety net; its watch and its read at start tell it every
 * deadline. */
#define SS_BACKEND_ETCD_SWEEP_FULL_MS 3600000u
/* How often each endpoint is asked for its status, by default. */
#define SS_BACKEND_ETCD_STATUS_MS 2000u
/* Quiet from other brokers before reads are confirmed by the markers
 * (CLUSTER.md; 0: never). */
#define SS_BACKEND_ETCD_SOLO_MS 1000u

#endif
