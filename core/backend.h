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
 * - The lifecycle is the owner's and is the same for every backend: run
 *   requests in the open batch, start its commit (commit_start), collect
 *   outcomes (commit_collect), settle, answer. A backend may keep several
 *   commits in flight (etcd) or one, closing the batch meanwhile (LMDB,
 *   whose commits that wait for the disk run on a worker thread of its
 *   own, core/worker.h). Nothing in the owner knows which.
 *
 * Everything else a backend needs (journals, checkpoints, fsyncs, map
 * sizes, connections, claims) is its own, behind this table: its options
 * stay behind its own header, its figures reach the owner as name/value
 * pairs.
 */
#ifndef SS_BACKEND_H
#define SS_BACKEND_H

#include <stdarg.h>
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

/* A record of an administrative page (page_start), borrowed for the
 * call; return false to end the page. */
typedef bool (*ss_backend_page_fn)(void *ctx, ss_bytes key, const ss_record *rec);

/* One of the backend's figures (figures below). */
typedef void (*ss_figure_fn)(void *ctx, const char *name, const char *value);

/* What became of a commit (commit_collect). */
typedef struct ss_commit_outcome {
    unsigned id; /* as commit_start gave it */
    int rc;      /* 0, SS_E_CONFLICT, or the failure */
    uint64_t us; /* from its start to its outcome */
    bool logged; /* the backend logged the failure in its own words (a
                    checkpoint that failed costs no write) */
} ss_commit_outcome;

/* The backend's log, by level (the owner maps them to its own). */
enum { SS_LOG_ERR, SS_LOG_WARNING, SS_LOG_NOTICE, SS_LOG_INFO };
typedef void (*ss_backend_log_fn)(void *ctx, int level, const char *msg);

struct ss_backend;

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
     * changes move to the feed, those of a failed commit are dropped.
     * Every commit the owner numbered up to `upto` has now settled
     * (growing; 0: none): once every change they made, and every change
     * before them, is in the feed, a TOLD mark with upto follows them
     * there (at once, or later for a backend that hears of its own changes
     * from a stream: etcd's watch), so that what waits for a batch's
     * changes to be told (KEYNOTIFY ... STOP) waits for exactly that. */
    void (*settled)(void *impl, int rc, uint64_t upto);
    /* SCAN's page: walk the keys in the backend's order from the first
     * after the cursor `after` (empty: the first), calling fn for each,
     * until fn returns false or max_examined keys (deleted keys a backend
     * keeps a trace of included) were looked at. *next gets the cursor of
     * the last key looked at, opaque bytes of at most SS_STORE_KEY_MAX + 64
     * (empty: the walk reached the end). What the open batch wrote is
     * seen. 0; SS_E_PENDING: the page is being read, nothing was called
     * (run the request again, with the same cursor, prefix and bound,
     * once woken); or a failure (SS_E_IO, SS_E_UNAVAILABLE, SS_E_NOMEM).
     *
     * prefix (empty: none) says that only keys starting with it are
     * wanted: a walk whose cursor is before every such key starts at the
     * first of them, and the walk reaches its end (next empty) once it
     * has passed the last of them, so that listing the keys under
     * sensor/ looks at those keys only, not at the whole store. The walk may
     * still show fn a key without the prefix (the caller matches every
     * key anyway), but it passes over none that has it. */
    int (*scan)(void *impl, ss_bytes after, ss_bytes prefix, size_t max_examined, ss_backend_scan_fn fn,
                void *ctx, ss_buf *next);
    /* The wall-clock time (ms) the records a scan call walks are as of,
     * when they were read earlier than the call (etcd: the page's Range
     * was sent then); 0, or NULL: now. A key is passed over as expired
     * only if it was so then: one renewed since would otherwise be left
     * out of a listing it was in all along. */
    uint64_t (*scan_as_of)(void *impl);
    /* 16 bytes kept with the data, the same after a restart and for every
     * broker on the same data, that clients cannot learn: the key of
     * SCAN's continuation tokens. 0, or SS_E_UNAVAILABLE while the
     * backend has not been able to read it yet. */
    int (*token_key)(void *impl, uint8_t out[16]);

    /* ---- the owner's lifecycle (asynchronous) --------------------------
     * The owner (the plugin) runs requests in the open batch, starts its
     * commit, and answers them when commit_collect reports the outcome;
     * these calls never wait for the disk or the network, except
     * commit_wait, and start at start-up. */

    /* Commits in flight at most (1: the open batch closes while its commit
     * is under way, see accepting). */
    unsigned max_flights;
    /* Commits may fail with SS_E_CONFLICT (others change the same data):
     * the owner then keeps a copy of each request until its commit
     * settles, to run it again. */
    bool may_conflict;
    /* The backend calls wake again and again until its results were
     * taken (an owner need not make one wake-up reliable); else it calls
     * it once per result and the owner must not lose it. */
    bool wake_repeats;
    /* Start serving (after the hooks are set): etcd claims its node id and
     * starts its watch. 0 (also when the backend goes on trying by itself,
     * after logging why); SS_E_INVAL or SS_E_BUSY: it must not serve
     * (*why says why). */
    int (*start)(void *impl, char *why, size_t why_len);
    /* At every tick, first: take what other threads finished, retry what
     * failed, start the backend's own periodic work. */
    void (*poll)(void *impl, uint64_t now_ms);
    /* May requests run in the open batch now? False while a commit of a
     * backend with one flight is under way: they wait in the owner's
     * queue. */
    bool (*accepting)(void *impl);
    /* Start committing the open batch; a new batch opens. holds_answers:
     * the batch carries answers to clients (a backend keeps its own risky
     * work, like a checkpoint that keeps failing, out of such a batch).
     * 0: under way as *id (commit_collect reports it, perhaps at once);
     * SS_E_NOTFOUND: nothing to commit (the owner settles the batch as
     * committed); SS_E_BUSY: not now (every flight taken, or a read the
     * commit needs is under way: try at the next tick); or a failure that
     * dropped the batch (nothing of it remains). */
    int (*commit_start)(void *impl, uint64_t now_ms, bool holds_answers, unsigned *id);
    /* Take one finished commit, oldest first: false when none. The
     * outcome is 0, SS_E_CONFLICT (nothing was written: run the batch's
     * requests again on fresh data), SS_E_UNAVAILABLE (the outcome is
     * unknown: the batch may or may not have taken effect, and its
     * answers say "unavailable", which promises neither), or another
     * failure that nothing of the batch outlived. After a failure the
     * owner forgets the batch's resend entries, so that a resend runs
     * again on the data as it is then. The owner calls settled() next,
     * except on a conflict; a backend whose own changes of unknown outcome
     * may have been committed notifies them from its change stream (etcd's
     * watch, once it runs), not from settled(). */
    bool (*commit_collect)(void *impl, struct ss_commit_outcome *out);
    /* Block until the commit under way has an outcome (the owner's queue
     * is full: waiting stops the broker reading more). 0, or SS_E_BUSY: this
     * backend never blocks its owner (the owner refuses instead). */
    int (*commit_wait)(void *impl);
    /* A queued request will read key: start reading it now, if that is
     * slow, so that the reads of a queue overlap. */
    void (*prefetch)(void *impl, ss_bytes key);
    /* Administrative reads of what is committed (KEYS, EXPORT, INSPECT),
     * one page at a time, between batches: page_start reads up to limit
     * records after the cursor `from` (empty: the first), or from the key
     * `from` itself when inclusive (a page of one, for INSPECT); values:
     * with their values (else a value kept apart may come with data NULL
     * and its length). 0 or SS_E_BUSY (a page is under way). page_done is
     * false while the page is being read; then it calls fn for each record
     * (expiry not applied) until fn returns false, sets *next (the cursor
     * after the last record fn saw, empty at the end) and *rc, and returns
     * true. */
    int (*page_start)(void *impl, ss_bytes from, bool inclusive, size_t limit, bool values);
    bool (*page_done)(void *impl, ss_backend_page_fn fn, void *ctx, ss_buf *next, int *rc);
    /* The backend's figures, each as a name under the owner's figures
     * ("keys", "etcd/txns") and its text, which the owner publishes
     * without knowing them. */
    void (*figures)(void *impl, uint64_t now_ms, ss_figure_fn fn, void *ctx);
    /* Words on the last failure or refusal (a full disk, a quota), for the
     * log; "" when the error's own text says it all. */
    const char *(*cause)(void *impl);
    /* A consistent copy of everything committed into the file path (that
     * must not exist), made while clients go on: 0 when started, or the
     * refusal with *why (SS_E_BUSY: one is under way; SS_E_IO). path NULL
     * only asks whether this backend makes copies: 0, or why not (etcd
     * leaves it to etcd's own snapshots). backup_done is true once the
     * copy ended: *rc, the errno of a failure, the bytes written. */
    int (*backup_start)(void *impl, const char *path, char *why, size_t why_len);
    bool (*backup_done)(void *impl, int *rc, int *err, uint64_t *bytes);
    /* Stop and free everything (a commit under way completes first; the
     * open batch is the owner's to commit or abort before). */
    void (*destroy)(struct ss_backend *b);
};

/* Should the feed keep a change of key? (Most keys have no observer;
 * copying their values would be wasted.) */
typedef bool (*ss_feed_wanted_fn)(void *ctx, ss_bytes key);
typedef void (*ss_wake_fn)(void *ctx);
/* The changes of the owner's commits up to seq were delivered. */
typedef void (*ss_told_fn)(void *ctx, uint64_t seq);

typedef struct ss_backend {
    const struct ss_backend_ops *ops;
    void *impl;
    ss_feed feed;               /* committed changes not yet delivered */
    ss_feed_wanted_fn wanted;   /* NULL: every change */
    void *wanted_ctx;
    ss_told_fn told;            /* the feed's TOLD marks; NULL: ignored */
    void *told_ctx;
    ss_wake_fn wake;            /* results arrived (any thread); may be NULL */
    void *wake_ctx;
    ss_backend_log_fn log;      /* may be NULL */
    void *log_ctx;
} ss_backend;

/* Log through b's hook, printf-style. */
void ss_backend_log(const ss_backend *b, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ss_backend_vlog(const ss_backend *b, int level, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
/* One figure through fn, as a number. */
void ss_figure_u64(ss_figure_fn fn, void *ctx, const char *name, uint64_t value);

/* Call fn for each committed change in the feed, oldest first (and the
 * told hook for each TOLD mark among them), then forget them. */
void ss_backend_deliver(ss_backend *b, ss_change_fn fn, void *ctx);
/* For a backend: a TOLD mark of the owner's commits up to seq (0: none)
 * goes into the feed. False if it could not (out of memory). */
bool ss_backend_mark_told(ss_backend *b, uint64_t seq);
/* True if a change of key should go into the feed. */
bool ss_backend_wants(const ss_backend *b, ss_bytes key);

#endif
