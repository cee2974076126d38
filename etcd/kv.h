/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* kv.h - etcd's KV messages, packed and unpacked (Range, Txn, Watch).
 *
 * The etcd backend writes with one shape only: a Txn whose compares are
 * each key's revision as the request read it (mod_revision == r, or
 * create_revision == 0 for a key that was absent), that no key of a
 * range changed after a revision (mod_revision < r over [key, end)), or
 * that a key is there (create_revision > 0), and whose operations are
 * puts and deletes. Reads are Ranges of one key (linearizable unless
 * asked otherwise). Everything here is pure: bytes in, bytes out.
 */
#ifndef SS_ETCD_KV_H
#define SS_ETCD_KV_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/buf.h"

#define SS_ETCD_RANGE_METHOD "/etcdserverpb.KV/Range"
#define SS_ETCD_TXN_METHOD "/etcdserverpb.KV/Txn"
#define SS_ETCD_STATUS_METHOD "/etcdserverpb.Maintenance/Status"
#define SS_ETCD_AUTHENTICATE_METHOD "/etcdserverpb.Auth/Authenticate"
#define SS_ETCD_LEASE_GRANT_METHOD "/etcdserverpb.Lease/LeaseGrant"
#define SS_ETCD_LEASE_KEEPALIVE_METHOD "/etcdserverpb.Lease/LeaseKeepAlive"
#define SS_ETCD_LEASE_REVOKE_METHOD "/etcdserverpb.Lease/LeaseRevoke"
#define SS_ETCD_WATCH_METHOD "/etcdserverpb.Watch/Watch"

/* A Range of one key into out (replaced). 0 or SS_E_NOMEM. */
int ss_etcd_range_pack(ss_buf *out, ss_bytes key, bool serializable);
/* A Range of one key as it was at revision (history etcd has not
 * compacted yet). 0 or SS_E_NOMEM. */
int ss_etcd_range_at_pack(ss_buf *out, ss_bytes key, int64_t revision);
/* A Range of the keys in [key, end), in key order, at most limit of them
 * (0: all), keys only (no values). 0 or SS_E_NOMEM. */
int ss_etcd_range_keys_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t limit, bool serializable);

/* One key's state in a reply: found or not, and its revisions. value
 * borrows the unpacked reply (see ss_etcd_reply). */
typedef struct ss_etcd_kv {
    bool found;
    ss_bytes value;
    int64_t mod_revision;
    int64_t create_revision;
} ss_etcd_kv;

/* An unpacked reply; free with ss_etcd_reply_free. */
typedef struct ss_etcd_reply {
    void *msg;         /* the protobuf-c message */
    int64_t revision;  /* the store's revision when it answered */
    bool succeeded;    /* Txn: the compares held */
    int64_t count;     /* Range: the keys in its interval, as etcd counted them (past its limit) */
} ss_etcd_reply;

/* Unpack a Range reply of one key. 0 or SS_E_PROTOCOL. */
int ss_etcd_range_unpack(const ss_buf *reply, ss_etcd_reply *r, ss_etcd_kv *kv);
/* A Range of the keys in [key, end) with their values, at most limit (0:
 * all), linearizable. 0 or SS_E_NOMEM. */
int ss_etcd_range_all_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t limit);
/* The same at revision (0: the latest). */
int ss_etcd_range_all_at_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t limit, int64_t revision);
/* Unpack a Range reply of any number of keys: *n of them, each filled by
 * ss_etcd_range_kv. 0 or SS_E_PROTOCOL. */
int ss_etcd_range_unpack_all(const ss_buf *reply, ss_etcd_reply *r, size_t *n);
void ss_etcd_range_kv(const ss_etcd_reply *r, size_t i, ss_etcd_kv *kv, ss_bytes *key);
/* Unpack a Txn reply. 0 or SS_E_PROTOCOL. When the compares failed and
 * the Txn asked for a key on failure (ss_etcd_txn_on_failure_get), *kv
 * is that key's state (kv may be NULL). */
int ss_etcd_txn_unpack(const ss_buf *reply, ss_etcd_reply *r, ss_etcd_kv *kv);
void ss_etcd_reply_free(ss_etcd_reply *r);

/* A Txn being built: compares and operations, copies of every key and
 * value. Zero-initialise. */
typedef struct ss_etcd_txn {
    struct ss_etcd_txn_item *items;
    size_t len, cap;
    ss_buf bytes;
} ss_etcd_txn;

/* The key must still be at revision rev (0: absent). */
int ss_etcd_txn_expect(ss_etcd_txn *t, ss_bytes key, int64_t rev);
/* Every key in [key, end) was last changed before revision rev (none
 * there holds too). */
int ss_etcd_txn_expect_below(ss_etcd_txn *t, ss_bytes key, ss_bytes end, int64_t rev);
/* The key is there (whatever its revisions). */
int ss_etcd_txn_expect_present(ss_etcd_txn *t, ss_bytes key);
int ss_etcd_txn_put(ss_etcd_txn *t, ss_bytes key, ss_bytes value);
/* A put attached to a lease: the key goes when the lease ends. */
int ss_etcd_txn_put_leased(ss_etcd_txn *t, ss_bytes key, ss_bytes value, int64_t lease);
int ss_etcd_txn_delete(ss_etcd_txn *t, ss_bytes key);
/* Delete every key in [key, end) (one operation). */
int ss_etcd_txn_delete_range(ss_etcd_txn *t, ss_bytes key, ss_bytes end);
/* Read key when the expectations hold. A Txn of compares alone is
 * served from whichever member answers, possibly behind the others (etcd
 * treats it as serializable); a Range in it makes etcd confirm with a
 * quorum that the member is current first. */
int ss_etcd_txn_get(ss_etcd_txn *t, ss_bytes key);
/* When an expectation fails, read key instead (its state comes back in
 * the reply: ss_etcd_txn_unpack). At most one per Txn. */
int ss_etcd_txn_on_failure_get(ss_etcd_txn *t, ss_bytes key);
/* Pack into out (replaced): if every expectation holds, every operation.
 * 0 or SS_E_NOMEM. */
int ss_etcd_txn_pack(const ss_etcd_txn *t, ss_buf *out);
/* The Txn of a compare-and-set, into out: put value at key (on lease; 0:
 * none) if key is still at revision rev (0: absent), else read key (its
 * state comes back with ss_etcd_txn_unpack). 0 or SS_E_NOMEM. */
int ss_etcd_cas_pack(ss_buf *out, ss_bytes key, int64_t rev, ss_bytes value, int64_t lease);
/* Operations and compares so far (etcd limits both, --max-txn-ops). */
size_t ss_etcd_txn_ops(const ss_etcd_txn *t);
void ss_etcd_txn_clear(ss_etcd_txn *t);
void ss_etcd_txn_free(ss_etcd_txn *t);

/* Unpack a Maintenance Status reply: the member's leader id (0: none)
 * and version. 0 or SS_E_PROTOCOL. */
int ss_etcd_status_unpack(const ss_buf *reply, uint64_t *leader, char *version, size_t version_len);
/* The id of the member that answered a Status (0 if the reply has none). */
uint64_t ss_etcd_status_member(const ss_buf *reply);
/* What a Status reply says of the member that answered: what etcdctl
 * endpoint status shows. */
typedef struct ss_etcd_status {
    uint64_t member, leader; /* ids; leader 0: it knows none */
    char version[32];
    uint64_t db_size, raft_term, raft_index;
    bool learner;
    size_t nerrors;          /* its alarms and health errors */
    char error[128];         /* the first of them, or "" */
} ss_etcd_status;
/* 0 or SS_E_PROTOCOL. */
int ss_etcd_status_read(const ss_buf *reply, ss_etcd_status *out);

/* Authenticate as name with password; the reply's token into token
 * (token_len bytes with its NUL). 0, SS_E_NOMEM, SS_E_PROTOCOL, SS_E_INVAL
 * for a reply without a token, or SS_E_LIMIT for one that does not fit. */
int ss_etcd_authenticate_pack(ss_buf *out, const char *name, const char *password);
int ss_etcd_authenticate_unpack(const ss_buf *reply, char *token, size_t token_len);

/* Leases: a grant of ttl seconds (*id, *ttl from the reply); one
 * keep-alive (a stream of one message each way; *ttl 0: the lease is
 * gone); a revoke. 0, SS_E_NOMEM or SS_E_PROTOCOL. */
int ss_etcd_lease_grant_pack(ss_buf *out, int64_t ttl);
int ss_etcd_lease_grant_unpack(const ss_buf *reply, int64_t *id, int64_t *ttl);
int ss_etcd_lease_id_pack(ss_buf *out, int64_t id); /* keep-alive and revoke */
int ss_etcd_lease_keepalive_unpack(const ss_buf *reply, int64_t *ttl);

/* Watch: the create request of a watch on the keys in [key, end) from
 * start_revision (0: from now), with progress reports on a quiet range
 * (without previous values: etcd reads one for every change it reports,
 * which cost a third of the throughput measured). 0 or SS_E_NOMEM. */
int ss_etcd_watch_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t start_revision);
/* One message of a watch's reply stream; free with ss_etcd_watch_free. */
typedef struct ss_etcd_watch {
    void *msg;
    int64_t revision;         /* the store's revision when it was sent */
    bool created, canceled;
    int64_t compact_revision; /* canceled: history before it is gone */
    const char *cancel_reason;
    size_t n_events;
    bool fragment;            /* more events of the last revision follow */
} ss_etcd_watch;
/* One change: the key, its new state (kv; for a deletion, found with
 * the deletion's mod_revision and no value). Borrows w. */
typedef struct ss_etcd_event {
    bool deleted;
    ss_bytes key;
    ss_etcd_kv kv;
} ss_etcd_event;
/* 0 or SS_E_PROTOCOL. */
int ss_etcd_watch_unpack(ss_bytes msg, ss_etcd_watch *w);
void ss_etcd_watch_event(const ss_etcd_watch *w, size_t i, ss_etcd_event *ev);
void ss_etcd_watch_free(ss_etcd_watch *w);

#endif
