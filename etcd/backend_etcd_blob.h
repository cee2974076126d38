/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_blob.h - what backend_etcd_blob.c offers the etcd backend's other
 * files: values too large for one request, in chunks. */
#ifndef SS_BACKEND_ETCD_BLOB_H
#define SS_BACKEND_ETCD_BLOB_H

#include "backend_etcd_state.h"

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

#endif
