/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* queue.h - requests kept for later (batch.c): those that wait for a
 * commit under way or for a read, and the copies of those run in a batch
 * whose commit may conflict. Each owns copies of everything its request
 * carried. Broker's thread only.
 */
#ifndef SS_QUEUE_H
#define SS_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"

/* A request waiting for the commit under way; owns copies of everything. */
struct ss_queued {
    struct ss_request_props r;
    uint8_t *payload;
    size_t len;
    char *client_id;
    char *username;
    bool gone; /* its client disconnected meanwhile */
};

struct ss_qlist {
    struct ss_queued *items;
    size_t len, cap;
};

/* What a kept request holds, roughly: for the queue's bound. */
uint64_t ss_queued_size(const struct ss_queued *e);
/* Room for more items at the end of q (not counted yet): the first, or
 * NULL when memory ran out. */
struct ss_queued *ss_qlist_reserve(struct ss_qlist *q, size_t more);
/* Copy what a request came with into e (its properties are the caller's
 * to take or copy). False when memory ran out (e holds nothing). */
bool ss_queued_hold(struct ss_queued *e, const struct ss_request_from *in, bool gone);
void ss_queued_free(struct ss_queued *e);
/* Free every item (q stays usable), or everything. */
void ss_qlist_clear(struct ss_qlist *q);
void ss_qlist_free(struct ss_qlist *q);
/* Move every item of from to the front of q, in order. False when memory
 * ran out (nothing moved). */
bool ss_qlist_prepend(struct ss_qlist *q, struct ss_qlist *from);
/* Its client disconnected: a KEYNOTIFY among them registers nothing. */
void ss_qlist_mark_gone(struct ss_qlist *q, const char *client_id);
/* A copy of r that owns its own memory. False when memory ran out. */
bool ss_request_props_dup(const struct ss_request_props *r, struct ss_request_props *out);

#endif
