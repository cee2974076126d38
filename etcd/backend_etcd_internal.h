/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_internal.h - what the etcd backend's files share (not
 * installed; the contract is backend_etcd.h).
 *
 * Files: backend_etcd.c (the cache, the storage interface, polling,
 * start and stop), backend_etcd_commit.c (a batch's Txn, its outcome, the
 * fence that settles an unknown one), backend_etcd_sweep.c (the expiry
 * index: finding due keys, deleting them), backend_etcd_session.c (the
 * commit marker, the claim on the node id, authentication),
 * backend_etcd_quota.c (max_keys and max_bytes over the whole store),
 * backend_etcd_scan.c (pages of records for administrative requests),
 * backend_etcd_watch.c (the change feed from etcd's Watch),
 * backend_etcd_blob.c (values too large for one request, in chunks).
 *
 * The cache: one entry per key the engine asked for, in a hash table and
 * a list. An entry is being fetched, waiting to fetch again (the cluster
 * did not answer), failed for good (the cluster stayed unreachable past
 * unavailable_ms: its readers are answered "unavailable" until the batch
 * ends), or known: its record as read and the mod_revision it was read at
 * (0: absent). The open batch "touches" known entries as requests look at
 * them; a touched entry may hold the batch's change (put or delete), and
 * the batch's Txn is built from the touched entries alone.
 *
 * Flights: when the open batch commits, it moves into a flight (a slot of
 * SS_BACKEND_ETCD_FLIGHTS) with its entries, and a new batch opens. Up
 * to that many Txns are in flight at once, on disjoint keys: an entry in
 * a flight answers its readers "pending" until the flight settles. Each
 * slot has a commit marker of its own (session.c).
 *
 * Everything runs on the owner's thread; the gRPC channel's thread only
 * hands finished calls back (grpc.h).
 */
#ifndef SS_BACKEND_ETCD_INTERNAL_H
#define SS_BACKEND_ETCD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../core/table.h"
#include "backend_etcd.h"
#include "grpc.h"
#include "kv.h"

/* ---- the backend's own calls (backend_etcd*.c), reached by the owner
 * through the table (backend_etcd_life.c) ---- */

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



#define SS_ETCD_PREFIX_DEFAULT "statestore/"
#define SS_ETCD_MAX_REQUEST_DEFAULT ((size_t)3 << 19) /* etcd's 1.5 MiB */
/* Room in a request for what is not keys and values (framing, the
 * marker). */
#define SS_ETCD_REQUEST_SLACK ((size_t)16 << 10)
/* After a commit, a cache larger than this is emptied of clean entries. */
#define SS_ETCD_CACHE_ENTRIES (1u << 20)
#define SS_ETCD_CACHE_BYTES ((uint64_t)64 << 20)
/* Due keys taken per look. */
#define SS_ETCD_SWEEP_BATCH 64
/* Pauses before trying a call again. */
#define SS_ETCD_RETRY_MS 100u
#define SS_ETCD_MARKER_RETRY_MS 1000u
/* A blob id: 32 hex digits (this process's instance, a count). */
#define SS_ETCD_BLOB_ID_LEN 32
/* gRPC's status for a call without a valid token. */
#define SS_ETCD_UNAUTHENTICATED 16

enum ss_entry_state { SS_ENTRY_FETCHING, SS_ENTRY_RETRY, SS_ENTRY_KNOWN, SS_ENTRY_FAILED };
/* A batch's change of a key: a record written, the record replaced by a
 * tombstone (a deletion), or a tombstone whose time is up removed. */
enum ss_entry_change { SS_CHANGE_NONE, SS_CHANGE_PUT, SS_CHANGE_DEL, SS_CHANGE_PURGE };

struct ss_etcd_entry {
    ss_table_node node;
    struct ss_etcd_entry *prev, *next; /* every entry */
    enum ss_entry_state state;
    ss_buf key;
    /* as read: a record (found), a tombstone (rev != 0, not found), or
     * nothing (rev 0) */
    bool found;
    int64_t rev;
    ss_buf stored;            /* the whole record, also when etcd holds it in chunks; or the tombstone */
    uint64_t stored_expiry;   /* its expiry index entry's deadline (0: none) */
    char blob[SS_ETCD_BLOB_ID_LEN + 1]; /* its chunks' blob id ("": none) */
    /* the open batch, or a flight */
    bool touched;
    struct ss_etcd_flight *flight; /* the flight it is in (not touched then) */
    enum ss_entry_change change;
    ss_buf next_rec;          /* PUT: the record; DEL: the tombstone */
    uint64_t next_expiry;
    char next_blob[SS_ETCD_BLOB_ID_LEN + 1]; /* next_rec goes in chunks under it */
    size_t uploaded;                          /* chunks of it written */
    /* fetching */
    struct ss_etcd_op *op;
    uint64_t first_try_ms, retry_at_ms;
    int fail_rc;
};

enum ss_op_kind { SS_OP_FETCH, SS_OP_TXN, SS_OP_FENCE, SS_OP_MARKER, SS_OP_SWEEP, SS_OP_GRANT, SS_OP_CLAIM,
                  SS_OP_KEEPALIVE, SS_OP_REVOKE, SS_OP_AUTH, SS_OP_USAGE, SS_OP_USAGE_SCAN,
                  SS_OP_USAGE_INIT, SS_OP_SCAN, SS_OP_WATCH, SS_OP_REMOVED, SS_OP_UPLOAD, SS_OP_BLOB_DROP,
                  SS_OP_BLOB_FETCH, SS_OP_BLOB_HELD, SS_OP_BLOB_SCAN, SS_OP_PAGE };

/* What a stub says of a value stored in chunks (backend_etcd_blob.c). */
struct ss_etcd_stub {
    char blob[SS_ETCD_BLOB_ID_LEN + 1];
    uint64_t len;
    uint32_t chunks;
};

/* A call and what it is for. */
struct ss_etcd_op {
    ss_grpc_call call;
    enum ss_op_kind kind;
    struct ss_etcd_entry *entry; /* SS_OP_FETCH; NULL once the entry is gone */
    uint64_t ticket;             /* SS_OP_REMOVED: the held change it is for */
    struct ss_etcd_flight *flight; /* a commit's calls: whose */
    char blob[SS_ETCD_BLOB_ID_LEN + 1]; /* SS_OP_BLOB_DROP: the chunks it deletes */
    struct ss_etcd_op *prev, *next; /* calls under way */
};

/* A change the watch reported, held in order until it can go into the
 * feed: a deletion waits for the version it removed (read from etcd's
 * history), and every change after it waits behind it. */
struct ss_etcd_held {
    enum ss_change_type type;
    bool ready;    /* known: may go into the feed */
    bool dropped;  /* nothing true can be said of it: not notified */
    bool asked;    /* the read of the removed version is under way */
    bool expired;
    bool wait_flight; /* its key is in a flight: after that settles */
    ss_buf key, value;
    ss_hlc version;
    int64_t rev;     /* the change's revision */
    bool chunked;    /* a SET whose value is read from its chunks */
    struct ss_etcd_stub stub;
    uint64_t ticket;
};

/* An expiry index entry found due. */
struct ss_etcd_due {
    uint64_t deadline;
    ss_buf key;
};

enum ss_commit_state { SS_COMMIT_IDLE, SS_COMMIT_UPLOADING, SS_COMMIT_TXN, SS_COMMIT_RESOLVING, SS_COMMIT_DONE };

/* A batch: the entries its requests looked at, and what it changes. */
struct ss_etcd_batch {
    struct ss_etcd_entry **touched;
    size_t ntouched, touched_cap;
    size_t bytes, ops;
    ss_buf orphans; /* expiry index keys to delete: u32 length, bytes */
    size_t norphans;
    bool full;
    ss_feed pending; /* its changes */
    /* quotas: a decision rested on q/usage; the change to it */
    bool usage_used, commit_usage;
    int64_t dkeys, dbytes;
};

/* A batch being committed: its chunks of large values, its Txn, the
 * fence that settles an unknown outcome; and the slot's commit marker. */
struct ss_etcd_flight {
    unsigned slot;
    struct ss_etcd_batch b;
    enum ss_commit_state state; /* IDLE: the slot is free */
    bool writes;
    bool nospace; /* built while etcd was out of space: deletions only, no
                     commit marker (etcd refuses every put then) */
    int rc;
    int64_t revision;
    char txn_id[300];
    uint64_t resolve_at_ms;
    size_t upload_at;        /* the touched entry being written */
    uint64_t upload_started_ms, upload_retry_ms; /* monotonic */
    /* the slot's commit marker */
    bool marker_known, marker_asked;
    int64_t marker_rev;
    int64_t marker_rev_before; /* what the commit of unknown outcome compared */
    uint64_t marker_retry_ms;
};
enum ss_claim_state { SS_CLAIM_NONE, SS_CLAIM_GRANTING, SS_CLAIM_CLAIMING, SS_CLAIM_HELD };

struct ss_backend_etcd {
    ss_backend base; /* first: the interface's impl points back here */
    ss_grpc *grpc;
    char *prefix, *node_id;
    size_t prefix_len;
    char *username, *password; /* NULL: no authentication */
    bool auth_needed, auth_asked, auth_refused_logged;
    uint64_t auth_retry_ms;
    unsigned call_timeout_ms, unavailable_ms, max_txn_ops, sweep_interval_ms;
    uint64_t tombstone_ms;
    size_t max_request_bytes;
    void (*log)(void *ctx, int level, const char *msg);
    void *log_ctx;

    ss_table table;
    struct ss_etcd_entry *first, *last;
    size_t entries;
    size_t failed; /* entries SS_ENTRY_FAILED: dropped when the batch ends */
    uint64_t cache_bytes;
    struct ss_etcd_op *ops; /* calls under way */

    struct ss_etcd_batch open;
    struct ss_etcd_flight flights[SS_BACKEND_ETCD_FLIGHTS];
    /* the owner's names of the flights, in the order they started, and
     * when (backend_etcd_life.c) */
    unsigned flight_id[SS_BACKEND_ETCD_FLIGHTS], next_flight_id;
    uint64_t flight_t0_us[SS_BACKEND_ETCD_FLIGHTS];
    ss_feed settled;          /* the changes of the flight that settled last */
    int64_t settled_revision; /* and its revision */

    /* chunks of large values, written before the Txn */
    uint64_t blob_seq;
    ss_buf stub;
    ss_buf drops;            /* blob ids whose deletion is tried again */
    uint64_t drop_retry_ms;  /* monotonic */

    uint64_t incarnation, txn_seq;
    bool unreachable_logged;

    /* this broker's claim on its node id */
    enum ss_claim_state claim;
    int64_t lease_id;
    unsigned lease_ttl_s;
    uint64_t claim_retry_ms, keepalive_ms; /* monotonic */
    bool keepalive_asked, claim_refused_logged;
    char claim_value[64];
    int64_t claim_rev;      /* the revision that created the claim held: every
                               write Txn compares it, so none succeeds for a
                               broker whose claim lapsed */
    uint64_t claim_lost_ms; /* monotonic: since when none is held */

    /* the expiry sweep */
    struct ss_etcd_due due[SS_ETCD_SWEEP_BATCH];
    size_t due_len, due_pos;
    bool sweep_asked;
    uint64_t sweep_at_ms; /* wall clock: the next look, or a deadline this
                             broker wrote if that comes first */
    uint64_t due_hint_ms; /* wall clock: the earliest deadline this broker
                             wrote since the last look */
    uint64_t now_ms;      /* wall clock at the last poll */

    /* etcd out of space (its NOSPACE alarm refuses every put): until
     * nospace_retry_ms (monotonic), writes that put are refused here and
     * deletions leave no tombstone; then a put is tried again */
    bool nospace, nospace_said;
    uint64_t nospace_retry_ms;

    /* quotas over the whole store (q/usage), when a limit is set */
    uint64_t max_keys, max_bytes;
    bool usage_known, usage_asked;
    int64_t usage_rev;
    uint64_t usage_keys, usage_bytes, usage_retry_ms;

    /* a page of records for an administrative request */
    enum { SS_SCAN_IDLE, SS_SCAN_RUNNING, SS_SCAN_DONE } scan;
    size_t scan_limit;
    bool scan_values;
    int scan_rc;
    ss_buf scan_reply;
    size_t scan_pos;      /* the record the walk of the page is at */
    size_t scan_value_at; /* 1 + the record whose chunks are in scan_value */
    ss_buf scan_value;

    /* a page of keys for SCAN (the storage interface's scan) */
    enum { SS_PAGE_IDLE, SS_PAGE_RUNNING, SS_PAGE_DONE } page;
    ss_buf page_after; /* the cursor it is read after */
    size_t page_limit;
    int page_rc;
    ss_buf page_reply;

    /* the watch on the records: the change feed */
    struct ss_etcd_op *watch; /* its stream, while one runs */
    int64_t watch_rev;        /* every change up to this revision was seen (0: none yet) */
    int64_t watch_from;       /* the first watch's start: later commits come through it */
    bool watch_created, watch_logged;
    uint64_t watch_retry_ms;  /* monotonic */
    ss_buf watch_frames;
    ss_feed watched;          /* changes seen, held until the next settle */
    struct ss_etcd_held *held; /* changes behind a deletion whose version is read */
    size_t nheld, held_cap;
    uint64_t next_ticket;
    uint64_t held_retry_ms;   /* monotonic: when failed reads are sent again */

    ss_buf scratch, scratch2;
    ss_backend_etcd_stats stats;
};

/* backend_etcd.c */
uint64_t ss_etcd__mono_ms(void);
void ss_etcd__log(struct ss_backend_etcd *e, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ss_etcd__key(struct ss_backend_etcd *e, ss_buf *out, char part, uint64_t deadline, ss_bytes key);
/* e->scratch = prefix part "/" name: this broker's marker ('n', node id),
 * claim ('l', node id), the usage counter ('q', "usage"). */
int ss_etcd__named(struct ss_backend_etcd *e, char part, const char *name);
ss_bytes ss_etcd__bytes(const ss_buf *b);
struct ss_etcd_op *ss_etcd__op_new(struct ss_backend_etcd *e, enum ss_op_kind kind, const char *method);
void ss_etcd__op_free(struct ss_etcd_op *op);
void ss_etcd__submit(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* Send a call whose request pack() writes (dropped if it cannot be made). */
void ss_etcd__send(struct ss_backend_etcd *e, enum ss_op_kind kind, const char *method,
                   int (*pack)(struct ss_backend_etcd *, ss_buf *));
bool ss_etcd__refused(const ss_grpc_call *c);
/* True when etcd refused c because it is out of space (its NOSPACE
 * alarm), and then enters the mode where nothing is put (backend_etcd.c). */
bool ss_etcd__out_of_space(struct ss_backend_etcd *e, const ss_grpc_call *c);
const char *ss_etcd__why(const ss_grpc_call *c);
int ss_etcd__get(struct ss_backend_etcd *e, ss_bytes key, ss_record *rec, ss_revision *rev,
                 struct ss_etcd_entry **entry);
struct ss_etcd_entry *ss_etcd__touched(struct ss_backend_etcd *e, ss_bytes key);
int ss_etcd__del(void *impl, const ss_change *change, ss_revision decided_on);
/* Flight f's batch ended: committed (its changes are what etcd holds,
 * at revision rev) or not (its entries leave the cache: what they hold
 * may be stale). */
void ss_etcd__end_flight(struct ss_backend_etcd *e, struct ss_etcd_flight *f, bool committed, int64_t rev);
/* Empty batch b (its entries already dealt with). */
void ss_etcd__batch_reset(struct ss_etcd_batch *b);
/* Drop failed entries, and clean ones when the cache is too large. */
void ss_etcd__tidy(struct ss_backend_etcd *e);
/* The cache's entry of key, or NULL. */
struct ss_etcd_entry *ss_etcd__entry(struct ss_backend_etcd *e, ss_bytes key);
void ss_etcd__abort(void *impl);
/* Append a copy of c to the feed ctx (an ss_change_fn). */
void ss_etcd__append(void *ctx, const ss_change *c);
/* A change of key at revision rev was seen: a clean cached copy read
 * before it goes. */
void ss_etcd__seen_change(struct ss_backend_etcd *e, ss_bytes key, int64_t rev);

/* Stage the removal of x's tombstone, whose time is up, in the open
 * batch: 0, or SS_E_CONFLICT (the batch is full, or changes x already). */
int ss_etcd__purge(struct ss_backend_etcd *e, struct ss_etcd_entry *x);

/* backend_etcd_tombstone.c */
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

/* backend_etcd_commit.c */
/* Build and send the open batch's Txn (its chunks are written). */
void ss_etcd__commit_send(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
/* The commit ended before its Txn was sent: nothing of it is stored. */
void ss_etcd__commit_failed(struct ss_backend_etcd *e, struct ss_etcd_flight *f, int rc);
void ss_etcd__txn_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__fence_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__send_fence(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
/* e->scratch = the commit marker of slot: n/<node id> for slot 0,
 * m/<slot>/<node id> for the others. */
int ss_etcd__marker_key(struct ss_backend_etcd *e, unsigned slot);

/* backend_etcd_sweep.c */
uint64_t ss_etcd__next_expiry(void *impl);
int ss_etcd__pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version);
void ss_etcd__ask_due(struct ss_backend_etcd *e, uint64_t now_ms);
void ss_etcd__due_found(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* backend_etcd_quota.c */
bool ss_etcd__limited(const struct ss_backend_etcd *e);
/* Charge a change of a touched entry from what it holds now to found /
 * value_len: SS_E_QUOTA (a limit; nothing charged), SS_E_PENDING (the
 * usage is not known yet), or 0. */
int ss_etcd__charge(struct ss_backend_etcd *e, const struct ss_etcd_entry *x, bool found, size_t value_len);
/* The batch's Txn compares q/usage when a decision of the batch rested on
 * it (a refusal too), and writes it when the batch changed it. */
int ss_etcd__build_usage(struct ss_backend_etcd *e, struct ss_etcd_batch *b, ss_etcd_txn *t);
/* The commit ended: rc 0 applies the batch's change; otherwise the usage
 * is read again. */
void ss_etcd__usage_settled(struct ss_backend_etcd *e, struct ss_etcd_batch *b, int rc, int64_t revision);
void ss_etcd__usage_step(struct ss_backend_etcd *e);
void ss_etcd__usage_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* backend_etcd_scan.c */
void ss_etcd__scan_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* The chunks of a record of the page came back. */
void ss_etcd__scan_blob_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* SCAN's page (the storage interface's scan) and its Range's answer. */
int ss_etcd__page(void *impl, ss_bytes after, size_t max_examined, ss_backend_scan_fn fn, void *ctx, ss_buf *next);
void ss_etcd__page_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* backend_etcd_watch.c */
/* Start the watch when none runs; read what it reported; its stream
 * ended; a commit settled (move the changes seen into the feed). */
void ss_etcd__watch_step(struct ss_backend_etcd *e);
void ss_etcd__watch_read(struct ss_backend_etcd *e);
void ss_etcd__watch_ended(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__watch_settled(struct ss_backend_etcd *e, int rc);
/* The read of a deleted record's last version came back. */
void ss_etcd__removed_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* The chunks of a held change's value came back. */
void ss_etcd__held_blob_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__watch_free(struct ss_backend_etcd *e);

/* backend_etcd_blob.c */
/* The most a chunk holds. */
size_t ss_etcd__chunk_bytes(const struct ss_backend_etcd *e);
/* Is raw (as stored at k/, decoded into rec) a stub? Then *stub. */
bool ss_etcd__stub(ss_bytes raw, const ss_record *rec, struct ss_etcd_stub *stub);
/* The length of the value raw holds or refers to. */
uint64_t ss_etcd__value_len(ss_bytes raw, const ss_record *rec);
/* Bytes of rec's stub. */
size_t ss_etcd__stub_size(const ss_record *rec);
void ss_etcd__blob_new(struct ss_backend_etcd *e, char blob[SS_ETCD_BLOB_ID_LEN + 1]);
/* The stub of the whole record full, its value under blob, into out. */
int ss_etcd__stub_make(const ss_buf *full, const char *blob, size_t chunk_bytes, ss_buf *out);
/* The whole record: stub raw with value, into out. */
int ss_etcd__unstub(ss_bytes raw, ss_bytes value, ss_buf *out);
/* Add the deletion of blob's chunks to t. */
int ss_etcd__blob_delete(struct ss_backend_etcd *e, ss_etcd_txn *t, const char *blob);
/* A call (not sent yet; NULL: out of memory) reading stub's chunks as
 * they were at revision; its reply gives the value (blob_value). */
struct ss_etcd_op *ss_etcd__blob_read(struct ss_backend_etcd *e, enum ss_op_kind kind,
                                      const struct ss_etcd_stub *stub, int64_t revision);
/* The value from such a reply, into out: 0, SS_E_CORRUPT (chunks
 * missing or of the wrong length), SS_E_PROTOCOL, SS_E_NOMEM. */
int ss_etcd__blob_value(const ss_buf *reply, const struct ss_etcd_stub *stub, ss_buf *out);
/* Has the open batch values that go in chunks? Write them, one call at
 * a time; then the Txn goes (commit_send). */
bool ss_etcd__uploads(const struct ss_etcd_batch *b);
void ss_etcd__upload_next(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
void ss_etcd__upload_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* Delete the chunks of a value that was not stored (best effort). */
void ss_etcd__blob_drop(struct ss_backend_etcd *e, const char *blob);
void ss_etcd__blob_dropped(struct ss_backend_etcd *e, struct ss_etcd_op *op);
/* Deletions that failed, again after a pause. */
void ss_etcd__drop_step(struct ss_backend_etcd *e);

/* backend_etcd_session.c */
/* Read the commit marker of f's slot, once. */
void ss_etcd__ask_marker(struct ss_backend_etcd *e, struct ss_etcd_flight *f);
void ss_etcd__marker_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__claim_step(struct ss_backend_etcd *e);
void ss_etcd__claim_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);
int ss_etcd__logged_in(struct ss_backend_etcd *e, const ss_grpc_call *c);
void ss_etcd__auth_step(struct ss_backend_etcd *e);
void ss_etcd__auth_done(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* Shared by the cache (backend_etcd_cache.c), the calls
 * (backend_etcd_calls.c) and the data operations (backend_etcd.c). */
void ss_etcd__unlink_op(struct ss_backend_etcd *e, struct ss_etcd_op *op);
struct ss_etcd_entry *ss_etcd__find(struct ss_backend_etcd *e, ss_bytes key, uint64_t *hash);
void ss_etcd__entry_free(struct ss_backend_etcd *e, struct ss_etcd_entry *x);
void ss_etcd__fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__blob_fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op);
size_t ss_etcd__room(struct ss_backend_etcd *e, const struct ss_etcd_entry *x, size_t payload,
                     size_t *bytes);
void ss_etcd__entries_end(struct ss_backend_etcd *e, struct ss_etcd_batch *b, bool committed, int64_t rev);
void ss_etcd__batch_free(struct ss_etcd_batch *b);

/* The owner's lifecycle (backend.h), backend_etcd_life.c. */
int ss_etcd__start(void *impl, char *why, size_t why_len);
void ss_etcd__poll_op(void *impl, uint64_t now_ms);
bool ss_etcd__accepting(void *impl);
int ss_etcd__commit_start_op(void *impl, uint64_t now_ms, bool holds_answers, unsigned *id);
bool ss_etcd__commit_collect(void *impl, ss_commit_outcome *out);
int ss_etcd__commit_wait(void *impl);
void ss_etcd__prefetch_op(void *impl, ss_bytes key);
int ss_etcd__page_start(void *impl, ss_bytes from, bool inclusive, size_t limit, bool values);
bool ss_etcd__page_done(void *impl, ss_backend_page_fn fn, void *ctx, ss_buf *next, int *rc);
void ss_etcd__figures(void *impl, uint64_t now_ms, ss_figure_fn fn, void *ctx);
const char *ss_etcd__cause(void *impl);
int ss_etcd__backup_start(void *impl, const char *path, char *why, size_t why_len);
bool ss_etcd__backup_done(void *impl, int *rc, int *err, uint64_t *bytes);

#endif
