/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_scan.h - what backend_etcd_scan.c offers the etcd backend's other
 * files: pages of records, for administrative requests and SCAN. */
#ifndef SS_BACKEND_ETCD_SCAN_H
#define SS_BACKEND_ETCD_SCAN_H

#include "backend_etcd_state.h"

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
void ss_etcd__scan_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* The chunks of a record of the page came back. */
void ss_etcd__scan_blob_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* SCAN's page (the storage interface's scan) and its Range's answer. */
int ss_etcd__page(void *impl, ss_bytes after, ss_bytes prefix, size_t max_examined, ss_backend_scan_fn fn, void *ctx,
                  ss_buf *next);
/* The time the page read is as of (backend.h: scan_as_of). */
uint64_t ss_etcd__page_as_of(void *impl);
void ss_etcd__page_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);

/* The key of SCAN's continuation tokens (the storage interface's
 * token_key): kept in etcd, the same for every broker on the prefix and
 * after restarts. Read (or made, by the first broker) at start, and from
 * poll until known: SS_E_UNAVAILABLE until then. */
int ss_etcd__token_key(void *impl, uint8_t out[16]);
/* At start: read or make it, waiting at most the call timeout. */
void ss_etcd__token_key_load(struct ss_backend_etcd *e);
void ss_etcd__token_key_step(struct ss_backend_etcd *e);
void ss_etcd__token_key_read(struct ss_backend_etcd *e, struct ss_etcd_op *op);

#endif
