/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_cache.h - what backend_etcd_cache.c offers the etcd backend's other
 * files: the cache of records: entries, their fetches, room in a Txn, the end of a batch. */
#ifndef SS_BACKEND_ETCD_CACHE_H
#define SS_BACKEND_ETCD_CACHE_H

#include "backend_etcd_state.h"

/* Start reading key into the cache, if it is not there, for a request
 * that will run later: requests run in order, so without this a queue of
 * requests on uncached keys would read them one after the other. */
void ss_backend_etcd_prefetch(ss_backend *b, ss_bytes key);
int ss_etcd__get(struct ss_backend_etcd *e, ss_bytes key, ss_record *rec, ss_revision *rev,
                 struct ss_etcd_entry **entry);

/* Flight f's batch ended: committed (its changes are what etcd holds,
 * at revision rev) or not (its entries leave the cache: what they hold
 * may be stale). unknown: not known to be committed, but it may have
 * been (the chunks of its large values stay). */
void ss_etcd__end_flight(struct ss_backend_etcd *e, struct ss_etcd_flight *f, bool committed, bool unknown,
                         int64_t rev);

/* Empty batch b (its entries already dealt with). */
void ss_etcd__batch_reset(struct ss_etcd_batch *b);

/* Drop failed entries, and clean ones when the cache is too large. */
void ss_etcd__tidy(struct ss_backend_etcd *e);

/* A change of key at revision rev was seen: a clean cached copy read
 * before it goes. */
void ss_etcd__seen_change(struct ss_backend_etcd *e, ss_bytes key, int64_t rev);
struct ss_etcd_entry *ss_etcd__find(struct ss_backend_etcd *e, ss_bytes key, uint64_t *hash);
void ss_etcd__entry_free(struct ss_backend_etcd *e, struct ss_etcd_entry *x);
void ss_etcd__fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op);
void ss_etcd__blob_fetched(struct ss_backend_etcd *e, struct ss_etcd_op *op);
size_t ss_etcd__room(struct ss_backend_etcd *e, const struct ss_etcd_entry *x, size_t payload, bool chunked,
                     size_t *bytes);
void ss_etcd__entries_end(struct ss_backend_etcd *e, struct ss_etcd_batch *b, bool committed, bool unknown,
                          int64_t rev);
void ss_etcd__batch_free(struct ss_etcd_batch *b);

#endif
