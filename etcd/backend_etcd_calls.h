/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_calls.h - what backend_etcd_calls.c offers the etcd backend's other
 * files: calls to etcd: starting them, how their failures read, and the poll. */
#ifndef SS_BACKEND_ETCD_CALLS_H
#define SS_BACKEND_ETCD_CALLS_H

#include "backend_etcd_state.h"

/* Take the results of finished calls (records fetched, a commit), retry
 * what failed, look for due keys. Call at every tick. */
void ss_backend_etcd_poll(ss_backend *b, uint64_t now_ms);
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

/* Shared by the cache (backend_etcd_cache.c), the calls
 * (backend_etcd_calls.c) and the data operations (backend_etcd.c). */
void ss_etcd__unlink_op(struct ss_backend_etcd *e, struct ss_etcd_op *op);

#endif
