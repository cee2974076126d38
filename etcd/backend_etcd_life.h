/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_life.h - what backend_etcd_life.c offers the etcd backend's other
 * files: the owner's lifecycle (core/backend.h). */
#ifndef SS_BACKEND_ETCD_LIFE_H
#define SS_BACKEND_ETCD_LIFE_H

#include "backend_etcd_state.h"

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
