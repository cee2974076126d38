/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend.c - what every backend shares (backend.h). */
#include "backend.h"

#include <stdarg.h>
#include <stdio.h>

#include "errors.h"

struct ss_backend__delivery {
    ss_backend *b;
    ss_change_fn fn;
    void *ctx;
};

static void ss_backend__deliver_one(void *ctx, const ss_change *c)
{
    struct ss_backend__delivery *d = ctx;
    if (c->type != SS_CHANGE_TOLD)
        d->fn(d->ctx, c);
    else if (d->b->told)
        d->b->told(d->b->told_ctx, c->seq);
}

void ss_backend_deliver(ss_backend *b, ss_change_fn fn, void *ctx)
{
    struct ss_backend__delivery d = {b, fn, ctx};
    ss_feed_each(&b->feed, ss_backend__deliver_one, &d);
    ss_feed_clear(&b->feed);
}

bool ss_backend_mark_told(ss_backend *b, uint64_t seq)
{
    ss_change mark = {.type = SS_CHANGE_TOLD, .seq = seq};
    return seq == 0 || ss_feed_append(&b->feed, &mark) == SS_OK;
}

bool ss_backend_wants(const ss_backend *b, ss_bytes key)
{
    return b->wanted == NULL || b->wanted(b->wanted_ctx, key);
}

void ss_backend_vlog(const ss_backend *b, int level, const char *fmt, va_list ap)
{
    if (b->log == NULL)
        return;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    b->log(b->log_ctx, level, msg);
}

void ss_backend_log(const ss_backend *b, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ss_backend_vlog(b, level, fmt, ap);
    va_end(ap);
}

void ss_figure_u64(ss_figure_fn fn, void *ctx, const char *name, uint64_t value)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    fn(ctx, name, text);
}
