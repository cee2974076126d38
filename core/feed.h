/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* feed.h - the change feed: committed changes to keys, in commit order.
 *
 * Every change a backend commits (a SET, a DELETE, an expiry), whoever
 * made it, is what drives KEYNOTIFY notifications. The feed holds copies:
 * a change outlives the request and the storage memory it came from, until
 * the owner has delivered it. A backend appends; the owner delivers with
 * ss_feed_each and then clears.
 */
#ifndef SS_FEED_H
#define SS_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "hlc.h"

/* SS_CHANGE_TOLD is no change but a mark in the feed: every change of
 * the owner's commits up to `seq` (backend.h: settled) is ahead of it. */
enum ss_change_type { SS_CHANGE_SET = 1, SS_CHANGE_DELETE, SS_CHANGE_TOLD };

/* A change to one key. Pointers are borrowed for the duration of a call. */
typedef struct ss_change {
    enum ss_change_type type;
    ss_bytes key;
    ss_bytes value; /* SET: the new value */
    ss_hlc version; /* SET: the new version; DELETE: the removed value's */
    bool expired;   /* DELETE caused by expiry */
    int64_t rev;    /* its place in the backend's order (etcd's revision; 0: none) */
    uint64_t seq;   /* TOLD: the owner's commit */
} ss_change;

typedef void (*ss_change_fn)(void *ctx, const ss_change *c);

/* Zero-initialise (SS_FEED_INIT) before use. */
typedef struct ss_feed {
    struct ss_feed_entry *items;
    size_t len, cap;
    ss_buf bytes; /* keys and values, back to back */
} ss_feed;

#define SS_FEED_INIT {NULL, 0, 0, SS_BUF_INIT}

/* Append a copy of c. 0 or SS_E_NOMEM (the feed is unchanged). */
int ss_feed_append(ss_feed *f, const ss_change *c);
/* Call fn for every change, oldest first. */
void ss_feed_each(const ss_feed *f, ss_change_fn fn, void *ctx);
/* Forget every change; memory beyond a small reserve is given back, so
 * that one batch of large values does not keep it. */
void ss_feed_clear(ss_feed *f);
size_t ss_feed_len(const ss_feed *f);
void ss_feed_free(ss_feed *f);

#endif
