/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* feed.c - the change feed (feed.h). */
#include "feed.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

/* Memory kept across batches. */
#define SS_FEED_KEEP_BYTES ((size_t)64 << 10)
#define SS_FEED_KEEP_ITEMS 256u

/* Offsets, not pointers: the byte buffer moves when it grows. */
struct ss_feed_entry {
    enum ss_change_type type;
    bool expired;
    ss_hlc version;
    int64_t rev;
    uint64_t seq;
    size_t key_off, key_len;
    size_t value_off, value_len;
};

int ss_feed_append(ss_feed *f, const ss_change *c)
{
    if (f->len == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct ss_feed_entry *items = realloc(f->items, cap * sizeof *items);
        if (items == NULL)
            return SS_E_NOMEM;
        f->items = items;
        f->cap = cap;
    }
    size_t mark = f->bytes.len;
    struct ss_feed_entry *e = &f->items[f->len];
    e->type = c->type;
    e->expired = c->expired;
    e->version = c->version;
    e->rev = c->rev;
    e->seq = c->seq;
    e->key_off = f->bytes.len;
    e->key_len = c->key.len;
    int rc = ss_buf_append(&f->bytes, c->key.data, c->key.len);
    e->value_off = f->bytes.len;
    e->value_len = c->type == SS_CHANGE_SET ? c->value.len : 0;
    if (rc == SS_OK && e->value_len)
        rc = ss_buf_append(&f->bytes, c->value.data, c->value.len);
    if (rc != SS_OK) {
        f->bytes.len = mark;
        return rc;
    }
    f->len++;
    return SS_OK;
}

void ss_feed_each(const ss_feed *f, ss_change_fn fn, void *ctx)
{
    for (size_t i = 0; i < f->len; i++) {
        const struct ss_feed_entry *e = &f->items[i];
        /* A feed of marks alone has no bytes yet: no pointer arithmetic
         * on NULL (undefined, even by 0). */
        const uint8_t *base = f->bytes.data;
        ss_change c = {.type = e->type,
                       .key = {base ? base + e->key_off : NULL, e->key_len},
                       .value = {base ? base + e->value_off : NULL, e->value_len},
                       .version = e->version,
                       .expired = e->expired,
                       .rev = e->rev,
                       .seq = e->seq};
        fn(ctx, &c);
    }
}

void ss_feed_clear(ss_feed *f)
{
    f->len = 0;
    ss_buf_clear(&f->bytes);
    if (f->bytes.cap > SS_FEED_KEEP_BYTES)
        ss_buf_free(&f->bytes);
    if (f->cap > SS_FEED_KEEP_ITEMS) {
        free(f->items);
        f->items = NULL;
        f->cap = 0;
    }
}

size_t ss_feed_len(const ss_feed *f)
{
    return f->len;
}

void ss_feed_free(ss_feed *f)
{
    free(f->items);
    ss_buf_free(&f->bytes);
    memset(f, 0, sizeof *f);
}
