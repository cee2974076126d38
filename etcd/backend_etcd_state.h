/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_state.h - the etcd backend's state, which all its files
 * share (not installed; the contract is backend_etcd.h). What each file
 * offers the others is in a narrow header of its own, named after it
 * (backend_etcd_base.h for backend_etcd.c).
 *
 * Files: backend_etcd.c (the storage interface's data operations, start
 * and stop), backend_etcd_cache.c (the cache), backend_etcd_calls.c (calls
 * and the poll), backend_etcd_life.c (the owner's lifecycle),
 * backend_etcd_options.c (the options), backend_etcd_txn.c (a batch as
 * one Txn), backend_etcd_commit.c (a batch committed in a flight, its
 * outcome, the fence that settles an unknown one), backend_etcd_sweep.c
 * (the deadlines this broker knows, deleting due keys),
 * backend_etcd_session.c (the commit marker, the claim on the node id,
 * authentication),
 * backend_etcd_quota.c (max_keys and max_bytes over the whole store),
 * backend_etcd_scan.c (pages of records for administrative requests),
 * backend_etcd_watch.c (the change feed from etcd's Watch),
 * backend_etcd_blob.c (values too large for one request, in chunks),
 * backend_etcd_upload.c (writing those chunks under a guard),
 * backend_etcd_tombstone.c (the version a deletion removed, and the
 * leases that remove its tombstone),
 * backend_etcd_probe.c (each endpoint's status, for the figures).
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
#ifndef SS_BACKEND_ETCD_STATE_H
#define SS_BACKEND_ETCD_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../core/hlc.h"
#include "../core/table.h"
#include "backend_etcd.h"
#include "backend_etcd_span.h"
#include "backend_etcd_walk.h"
#include "deadlines.h"
#include "grpc.h"
#include "kv.h"

/* Txns in flight at once at most, on disjoint keys (one while a quota is
 * set: every Txn that changes the store's size then compares q/usage). */
#define SS_BACKEND_ETCD_FLIGHTS 2
/* Commits whose changes the watch has yet to report, told apart. */
#define SS_ETCD_TOLD_MAX 32
/* The compares of a Txn beside its keys': the marker's, the claim's and
 * the counter's; a Txn that confirms its reads by the markers
 * (backend_etcd_txn.c: ss_etcd__build_solo) has the intervals between
 * this broker's markers and the sentinel's two besides, but leaves one
 * key uncompared at least: the larger of 3 and 8 - 1. */
#define SS_ETCD_OTHER_COMPARES (3 + (SS_BACKEND_ETCD_FLIGHTS + 1) + 2 - 1)

/* Figures for the metrics. */
typedef struct ss_backend_etcd_stats {
    uint64_t txns, conflicts, unknown_outcomes, fetches, cache_entries;
    uint64_t txns_overlapped; /* sent while another was in flight */
    uint64_t txns_solo;       /* their reads confirmed by the other brokers' markers (below) */
    bool usage_known;          /* with a limit set: keys and bytes below */
    uint64_t keys, bytes;
    bool reachable;
    const char *endpoint;
    /* the watch: the last revision seen, changes seen, restarts of its
     * stream, revisions lost to compaction, changes that could not be
     * read (no previous value) */
    uint64_t watch_revision, watch_events, watch_restarts, watch_lost_revisions, watch_undecodable;
    uint64_t revisions_went_back; /* times etcd answered below a revision seen before */
    uint64_t chunks_written; /* of values too large for one request */
    uint64_t deadlines;       /* keys whose deadline this broker knows */
    uint64_t deadline_reads;  /* reads of every record's deadline done */
    /* their Ranges, and the keys etcd counted for them (its work: it
     * counts every key of a Range's interval, past the limit) */
    uint64_t deadline_ranges, deadline_keys_counted;
    uint64_t usage_ranges; /* pages read to count the store's usage */
    uint64_t deadlines_missed; /* deadlines not kept for want of memory (read again) */
    uint64_t tombstone_leases, tombstones_leased; /* leases granted for tombstones; tombstones put on one */
    uint64_t lease_refusals;                      /* commits refused for such a lease gone */
    bool nospace;            /* etcd is out of space (its NOSPACE alarm) */
} ss_backend_etcd_stats;

#define SS_ETCD_PREFIX_DEFAULT "statestore/"
#define SS_ETCD_MAX_REQUEST_DEFAULT ((size_t)3 << 19) /* etcd's 1.5 MiB */
/* Room in a request for what is not keys and values (framing, the
 * marker). */
#define SS_ETCD_REQUEST_SLACK ((size_t)16 << 10)
/* After a commit, a cache larger than this is emptied of clean entries. */
#define SS_ETCD_CACHE_ENTRIES (1u << 20)
#define SS_ETCD_CACHE_BYTES ((uint64_t)64 << 20)
/* Pauses before trying a call again. */
#define SS_ETCD_RETRY_MS 100u
#define SS_ETCD_MARKER_RETRY_MS 1000u
/* A blob id: 32 hex digits (this process's instance, a count). */
#define SS_ETCD_BLOB_ID_LEN 32
/* gRPC's status for a call without a valid token. */
#define SS_ETCD_UNAUTHENTICATED 16
/* gRPC's status for a lease etcd does not have (among others). */
#define SS_ETCD_NOT_FOUND 5

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
    int64_t seen_rev;         /* the store's revision at which it was known to be so: its read's,
                                 or the commit's whose compare on it held */
    int64_t stale_rev;        /* the watch told of a change at this revision while the entry
                                 could not go (touched, in a flight, being read): 0 if none */
    ss_buf stored;            /* the whole record, also when etcd holds it in chunks; or the tombstone */
    uint64_t stored_expiry;   /* its deadline, or the tombstone's end (0: none) */
    char blob[SS_ETCD_BLOB_ID_LEN + 1]; /* its chunks' blob id ("": none) */
    /* the open batch, or a flight */
    bool touched;
    struct ss_etcd_flight *flight; /* the flight it is in (not touched then) */
    enum ss_entry_change change;
    ss_buf next_rec;          /* PUT: the record; DEL: the tombstone */
    uint64_t next_expiry;
    int64_t next_lease;       /* DEL: the tombstone's lease (0: none, it ends at next_expiry) */
    char next_blob[SS_ETCD_BLOB_ID_LEN + 1]; /* next_rec goes in chunks under it */
    bool guarded;                             /* its guard written (backend_etcd_upload.c) */
    size_t uploaded;                          /* chunks of it written */
    int64_t upload_lease; /* the lease of next_blob's guard u/<blob id>, once its first chunk was sent
                             (0: nothing of it was sent) */
    /* fetching */
    struct ss_etcd_op *op;
    uint64_t first_try_ms, retry_at_ms;
    int fail_rc;
};

enum ss_op_kind { SS_OP_FETCH, SS_OP_TXN, SS_OP_FENCE, SS_OP_MARKER, SS_OP_GRANT, SS_OP_CLAIM,
                  SS_OP_KEEPALIVE, SS_OP_REVOKE, SS_OP_AUTH, SS_OP_USAGE, SS_OP_USAGE_SCAN,
                  SS_OP_USAGE_INIT, SS_OP_SCAN, SS_OP_WATCH, SS_OP_REMOVED, SS_OP_UPLOAD, SS_OP_BLOB_DROP,
                  SS_OP_BLOB_FETCH, SS_OP_BLOB_HELD, SS_OP_BLOB_SCAN, SS_OP_PAGE, SS_OP_TOKEN_KEY,
                  SS_OP_SETTLE_READ, SS_OP_TLEASE, SS_OP_DEADLINES, SS_OP_UPLOAD_LEASE, SS_OP_BLOB_REVOKE };

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
    char blob[SS_ETCD_BLOB_ID_LEN + 1]; /* SS_OP_BLOB_DROP, _REVOKE: the chunks it deletes ("": none) */
    int64_t lease;                      /* SS_OP_BLOB_REVOKE: the guard's lease it ends */
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
    bool latest;     /* its chunks read as they are now: history at rev compacted */
    struct ss_etcd_stub stub;
    uint64_t ticket;
};

/* A lease for tombstones (backend_etcd_tombstone.c): etcd keeps it at
 * least until ends_ms (CLOCK_BOOTTIME). */
struct ss_etcd_tlease {
    int64_t id; /* 0: none */
    uint64_t ends_ms;
};
#define SS_ETCD_TLEASES 2
/* Leases for tombstones are granted ahead for this long after a deletion. */
#define SS_ETCD_TLEASE_KEEP_MS 60000u

enum ss_commit_state { SS_COMMIT_IDLE, SS_COMMIT_UPLOADING, SS_COMMIT_TXN, SS_COMMIT_RESOLVING, SS_COMMIT_DONE };

/* A batch: the entries its requests looked at, and what it changes. */
struct ss_etcd_batch {
    struct ss_etcd_entry **touched;
    size_t ntouched, touched_cap;
    size_t bytes, ops;
    size_t guards;   /* the compares on the guards of its chunked values, beside one per key */
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
    bool solo;    /* its reads confirmed by the markers (backend_etcd_txn.c) */
    bool marks;   /* it puts the sentinel s/marked */
    bool unknown; /* its Txn went out and may have applied: its outcome
                     stays unknown (answered unavailable) */
    int rc;
    int64_t revision;
    /* The highest revision this broker knew when the Txn was built, and
     * how many times etcd's data had gone back by then (also when the
     * guard of a large value's chunks was sent): the Txn's own revision
     * cannot be lower in the same history, and the marker it reads back
     * tells of a step back only if none was seen since. */
    int64_t known_rev;
    uint64_t known_backs;
    char txn_id[300];
    uint64_t txn_seq;       /* the sequence number in txn_id */
    uint64_t committed_seq; /* of this process's last commit on the slot (0: none, or none
                               since etcd's data was seen going back) */
    uint64_t resolve_at_ms;
    bool settle_by_read; /* resolving: the commit can no longer happen later,
                            so a read of the marker settles it */
    bool fence_refused_said; /* resolving: etcd's refusal of the fence was logged */
    size_t upload_at;        /* the touched entry being written */
    uint64_t upload_progress_ms, upload_retry_ms; /* monotonic: its start or last chunk taken; a retry */
    int64_t upload_lease;    /* the lease of its guards (0: not granted yet) */
    /* the slot's commit marker */
    bool marker_known, marker_asked;
    int64_t marker_rev;
    int64_t marker_rev_before; /* what the commit of unknown outcome compared */
    uint64_t marker_retry_ms;
};
enum ss_claim_state { SS_CLAIM_NONE, SS_CLAIM_GRANTING, SS_CLAIM_CLAIMING, SS_CLAIM_HELD };

#define SS_ETCD_AHEAD_WARN_MS 1000
#define SS_ETCD_AHEAD_WINDOW_MS 60000

struct ss_backend_etcd {
    ss_backend base; /* first: the interface's impl points back here */
    ss_grpc *grpc;
    char *prefix, *node_id;
    size_t prefix_len;
    char *username, *password; /* NULL: no authentication */
    bool auth_needed, auth_asked, auth_refused_logged;
    uint64_t auth_retry_ms;
    unsigned call_timeout_ms, unavailable_ms, max_txn_ops, sweep_interval_ms;
    uint64_t sweep_full_ms;
    uint64_t tombstone_ms;
    size_t max_request_bytes;

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
    ss_buf drops;            /* struct ss_etcd_drop: deletions tried again */
    uint64_t drop_retry_ms;  /* monotonic */
    unsigned upload_ttl_scale; /* the guards' lease is this many times its length */

    uint64_t incarnation, txn_seq;
    /* Reads confirmed at once (backend_etcd_txn.c): after solo_ms
     * (0: never) without a sign of another broker writing (foreign_ms,
     * monotonic: a change of its through the watch, or a conflict), a
     * write Txn confirms the keys it only read by one compare, that no
     * other broker's commit marker changed after the watch's revision,
     * rather than by one compare per key. Entries known from before
     * watch_gap_rev (the watch lost history up to it) are compared. */
    uint64_t solo_ms, foreign_ms;
    int64_t watch_gap_rev;
    /* The store's revision when the watch was last (re)started: until
     * the watch has reached it, reads are compared one by one (a broker
     * out of space deletes without a marker, and the watch alone tells of
     * that; backend_etcd_txn.c). */
    int64_t watch_caught_rev;
    /* The revision of this broker's commit that put the sentinel s/marked
     * (0: it may be gone). A broker out of space deletes it with whatever
     * it deletes without a marker, so a Txn that confirms its reads by the
     * markers also compares that it is there, and goes only once the
     * watch has passed the sentinel's put (backend_etcd_txn.c). */
    int64_t marked_rev;
    bool unreachable_logged;

    /* this broker's claim on its node id */
    enum ss_claim_state claim;
    int64_t lease_id;
    unsigned lease_ttl_s;
    uint64_t claim_retry_ms, keepalive_ms; /* monotonic */
    /* monotonic: when the lease's grant or renewal under way was sent,
     * and the end of the lease as last granted or renewed (etcd counts
     * its TTL from when it handled the call, after it was sent: the lease
     * lasts at least that long, a leader change only extends it) */
    uint64_t lease_asked_ms, lease_end_ms;
    bool keepalive_asked, claim_refused_logged;
    bool claim_lapsed;      /* held, then lapsed: say so when it is held again */
    char claim_value[64];
    int64_t claim_rev;      /* the revision that created the claim held: every
                               write Txn compares it, so none succeeds for a
                               broker whose claim lapsed */
    uint64_t claim_lost_ms; /* monotonic: since when none is held */

    /* expiry (backend_etcd_sweep.c): every deadline this broker knows,
     * and the read of every record's that fills it in */
    ss_etcd_deadlines deadlines;
    bool deadlines_read_needed, deadlines_read_asked;
    bool deadlines_restart;          /* the next page is the first */
    struct ss_etcd_walk deadlines_walk; /* where the read is (backend_etcd_walk.h) */
    uint64_t deadlines_retry_ms;     /* monotonic */
    uint64_t deadlines_read_done_ms; /* monotonic: the last read ended (0: none yet) */
    uint64_t now_ms;      /* wall clock at the last poll */

    /* the two newest leases for tombstones, the older first */
    struct ss_etcd_tlease tleases[SS_ETCD_TLEASES];
    bool tlease_asked;
    uint64_t tlease_asked_ms, tlease_retry_ms, tlease_wanted_ms; /* CLOCK_BOOTTIME */

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
    /* the revision of a counter that is not "<keys> <bytes>" (put there
     * by hand), or that deletions made while etcd was out of space left
     * too high: counted again and replaced (0: none) */
    int64_t usage_bad_rev;
    bool usage_recount; /* such deletions were made: the counter read next is replaced by a count */
    unsigned usage_recounts; /* counts of it that lost the race with other brokers' writes */
    /* a count of the records under way: where it is, the revision its
     * pages are read at (0: before the first), what it found so far */
    struct ss_etcd_walk usage_walk;
    int64_t usage_count_rev;
    uint64_t usage_count_keys, usage_count_bytes;
    bool usage_failed_logged; /* since the counter was last read */

    /* records under k/ that are not records (put there by hand): when
     * the last was logged (monotonic), and how many since then were not */
    uint64_t unreadable_logged_ms, unreadable_unlogged;

    /* a page of records for an administrative request */
    enum { SS_SCAN_IDLE, SS_SCAN_RUNNING, SS_SCAN_DONE } scan;
    size_t scan_limit;
    bool scan_values, scan_inclusive;
    bool scan_fresh;        /* its Range's reply is not looked at yet */
    int scan_tries;         /* Ranges read for it: a sparse one is read again */
    ss_etcd_span scan_span; /* how far its Range reaches (backend_etcd_span.h) */
    ss_buf scan_after;      /* the key it starts after (or from) */
    ss_buf scan_end;        /* the last key it may reach (empty: no bound) */
    int scan_rc;
    ss_buf scan_reply;
    size_t scan_pos;      /* the record the walk of the page is at */
    size_t scan_value_at; /* 1 + the record whose chunks are in scan_value */
    ss_buf scan_value;

    /* a page of keys for SCAN (the storage interface's scan) */
    enum { SS_PAGE_IDLE, SS_PAGE_RUNNING, SS_PAGE_DONE } page;
    ss_buf page_after; /* the cursor it is read after */
    ss_buf page_prefix; /* the literal prefix of the keys it is for (empty: any) */
    ss_buf page_stop;   /* the end of those keys, excluded (empty: none) */
    size_t page_limit;      /* the records asked for */
    size_t page_range;      /* the records its Range reads: fewer when records are large */
    uint64_t page_sent_ms;  /* wall clock when its Range was sent */
    bool page_shrunk;       /* its Range failed once, and was read again with fewer */
    /* A record's bytes in a Range's reply, as pages found them lately:
     * the Ranges of pages read no more records than SS_ETCD_PAGE_BYTES
     * hold (values come with them: a record kept whole may be 1.5 MiB). */
    size_t record_bytes;
    ss_etcd_span page_span; /* how far its Range reaches (backend_etcd_span.h) */
    ss_buf page_end;        /* the last key it may reach (empty: no bound) */
    int page_tries;         /* Ranges read for it: a sparse one is read again */
    ss_buf page_cursor;     /* each key's cursor, as the walk passes it */
    /* Clocks: the most another broker's versions were ahead of this one's
     * wall clock when the watch brought them, over the last minute
     * (SS_ETCD_AHEAD_WINDOW_MS; backend_etcd_watch.c); logged once past
     * SS_ETCD_AHEAD_WARN_MS (clocks a second apart are worth setting
     * right). */
    int64_t ahead_ms;
    uint64_t ahead_at_ms; /* wall clock when ahead_ms was seen */
    char ahead_node[SS_HLC_NODE_MAX + 1];
    bool ahead_logged;
    uint64_t page_reads, page_counted; /* Ranges read for pages (both kinds); the keys etcd counted for them */
    int page_rc;
    ss_buf page_reply;

    /* the watch on the records: the change feed */
    struct ss_etcd_op *watch; /* its stream, while one runs */
    /* It sent a message that cannot be read, and is cancelled: the
     * messages after it are not taken (their revisions would pass over
     * the unread one's changes); the next watch starts after the last
     * revision taken. */
    bool watch_broken;
    int64_t watch_rev;        /* every change up to this revision was seen (0: none yet) */
    int64_t high_rev;         /* the highest revision a Txn's answer gave */
    int64_t watch_from;       /* the first watch's start: later commits come through it */
    bool watch_created, watch_logged;
    uint64_t watch_retry_ms;  /* monotonic */
    ss_buf watch_frames;
    ss_feed watched;          /* changes seen, held until the next settle */
    struct ss_etcd_held *held; /* changes behind a deletion whose version is read */
    size_t nheld, held_cap;
    uint64_t next_ticket;
    uint64_t held_retry_ms;   /* monotonic: when failed reads are sent again */
    /* The owner's commits settled whose TOLD marks (backend.h: settled)
     * wait for the watch to have reported every change up to rev, oldest
     * first; when full, the last one takes the next in. */
    struct ss_etcd_told {
        uint64_t seq;
        int64_t rev;
    } told[SS_ETCD_TOLD_MAX];
    size_t ntold;

    /* the key of SCAN's continuation tokens: 16 random bytes kept at
     * s/scan-token-key, made by the first broker that needs it */
    bool token_known, token_asked, token_bad_logged;
    bool token_by_read; /* the next try reads it (the Txn failed: etcd out of space, say) */
    uint8_t token_key[16], token_fresh[16];
    uint64_t token_retry_ms; /* monotonic */

    /* each endpoint's status (backend_etcd_probe.c) */
    struct ss_etcd_probe *probes;
    size_t nprobes;
    unsigned probe_interval_ms;
    uint64_t probe_next_ms; /* monotonic */

    ss_buf scratch, scratch2;
    ss_backend_etcd_stats stats;
};

#endif
