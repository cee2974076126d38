/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* deadlines.h - the deadlines of the keys of an etcd store, as one broker
 * knows them: a hash table by key and a min-heap by when the broker means
 * to sweep each.
 *
 * Why in memory: every broker's watch reports every record written, with
 * its deadline, and a broker reads every record once when it starts. So
 * each broker knows every deadline without an expiry index in etcd, which
 * cost two more key versions in etcd's history per record with a
 * deadline (the entry's put, and its deletion) and the sweep's Ranges.
 *
 * What it holds is a hint, never an answer: a deadline is learnt with the
 * etcd revision it was seen at, and a later revision wins, so the watch
 * (in revision order) and the start-up read (pages read at any time)
 * agree; an entry made stale by a change not seen yet is checked against
 * the record, read linearizably, before anything is deleted. It may hold
 * too much; what it lacks (until the read at start is done, or a
 * deadline it had no memory for) the next read of every record brings:
 * every deadline in etcd comes from that read or the watch after it.
 *
 * Memory: one allocation per key with a deadline (about 64 bytes plus the
 * key), a heap slot and a share of the hash table's buckets. The heap and
 * the table shrink as keys go, so a churn of many keys leaves nothing
 * behind once its deadlines have passed. */
#ifndef SS_ETCD_DEADLINES_H
#define SS_ETCD_DEADLINES_H

#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../core/table.h"

typedef struct ss_etcd_deadline {
    ss_table_node node;
    uint64_t deadline; /* wall clock, ms */
    uint64_t at;       /* wall clock, ms: when this broker sweeps it */
    int64_t rev;       /* the etcd revision it was learnt at */
    size_t slot;       /* its place in the heap */
    size_t key_len;
    uint8_t key[];
} ss_etcd_deadline;

typedef struct ss_etcd_deadlines {
    ss_table table;
    ss_etcd_deadline **heap; /* by at, the earliest first */
    size_t n, cap;
} ss_etcd_deadlines;

/* 0, SS_E_NOMEM or SS_E_IO (no randomness for the table's hash). */
int ss_etcd_deadlines_init(ss_etcd_deadlines *d);
void ss_etcd_deadlines_free(ss_etcd_deadlines *d);

/* key's deadline as of etcd revision rev (0: it has none), swept at at.
 * Ignored if what is known of key is from a later revision, or is the
 * same deadline from the same revision, to be swept no later (a broker's
 * own commit, then the watch's report of it). 0 or SS_E_NOMEM (nothing
 * changed then). */
int ss_etcd_deadlines_learn(ss_etcd_deadlines *d, ss_bytes key, int64_t rev, uint64_t deadline, uint64_t at);

/* The entry swept first, or NULL. */
ss_etcd_deadline *ss_etcd_deadlines_first(const ss_etcd_deadlines *d);
/* Sweep x at at instead (its deadline and revision stay). */
void ss_etcd_deadlines_defer(ss_etcd_deadlines *d, ss_etcd_deadline *x, uint64_t at);
/* Forget x (freed). */
void ss_etcd_deadlines_drop(ss_etcd_deadlines *d, ss_etcd_deadline *x);
/* The entry of key, or NULL. */
ss_etcd_deadline *ss_etcd_deadlines_find(const ss_etcd_deadlines *d, ss_bytes key);

#endif
