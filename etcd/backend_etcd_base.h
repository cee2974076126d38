/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_base.h - what backend_etcd.c offers the etcd backend's other
 * files: the data operations of the storage interface, small helpers, start and stop. */
#ifndef SS_BACKEND_ETCD_BASE_H
#define SS_BACKEND_ETCD_BASE_H

#include "backend_etcd_state.h"

/* Ask a member for its status, waiting up to the call timeout, and log in
 * when a user name is set: 0 with a line describing the cluster in *what;
 * SS_E_INVAL when etcd refused the user name or password; or the
 * failure with its cause. */
int ss_backend_etcd_ping(ss_backend *b, char *what, size_t what_len);
void ss_backend_etcd_stats_get(const ss_backend *b, ss_backend_etcd_stats *s);
uint64_t ss_etcd__mono_ms(void);
void ss_etcd__log(struct ss_backend_etcd *e, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int ss_etcd__key(struct ss_backend_etcd *e, ss_buf *out, char part, ss_bytes key);

/* out = the end of the records' range: prefix "k0", which follows every
 * "k/..." key; the range from prefix "k/" (ss_etcd__key with no key) to it
 * holds every record and nothing else. */
int ss_etcd__records_end(struct ss_backend_etcd *e, ss_buf *out);

/* e->scratch = prefix part "/" name: this broker's marker ('n', node id),
 * claim ('l', node id), the usage counter ('q', "usage"). */
int ss_etcd__named(struct ss_backend_etcd *e, char part, const char *name);
ss_bytes ss_etcd__bytes(const ss_buf *b);
struct ss_etcd_entry *ss_etcd__touched(struct ss_backend_etcd *e, ss_bytes key);
int ss_etcd__del(void *impl, const ss_change *change, ss_revision decided_on);

/* The cache's entry of key, or NULL. */
struct ss_etcd_entry *ss_etcd__entry(struct ss_backend_etcd *e, ss_bytes key);
void ss_etcd__abort(void *impl);

/* Append a copy of c to the feed ctx (an ss_change_fn). */
void ss_etcd__append(void *ctx, const ss_change *c);

/* Stage the removal of x's tombstone, whose time is up, in the open
 * batch: 0, or SS_E_CONFLICT (the batch is full, or changes x already). */
int ss_etcd__purge(struct ss_backend_etcd *e, struct ss_etcd_entry *x);

#endif
