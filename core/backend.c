/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend.c - what every backend shares (backend.h). */
#include "backend.h"

void ss_backend_deliver(ss_backend *b, ss_change_fn fn, void *ctx)
{
    ss_feed_each(&b->feed, fn, ctx);
    ss_feed_clear(&b->feed);
}

bool ss_backend_wants(const ss_backend *b, ss_bytes key)
{
    return b->wanted == NULL || b->wanted(b->wanted_ctx, key);
}
