/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* scan.c - SCAN's pages, tokens and answers (scan.h). */
#include "scan.h"

#include <string.h>

#include "bigendian.h"
#include "codec.h"
#include "errors.h"
#include "pattern.h"
#include "siphash.h"

/* The tag of (pattern, cursor): what makes a token ours and unaltered. */
static uint64_t ss_scan__tag(const uint8_t key[16], ss_bytes pattern, const uint8_t *cursor, size_t n)
{
    uint8_t head[6] = {'T', SS_SCAN_TOKEN_VERSION};
    ss_put_be(head + 2, pattern.len, 4);
    ss_bytes parts[] = {{head, sizeof head}, pattern, {cursor, n}};
    return ss_siphash_parts(key, parts, 3);
}

/* XOR n bytes at p with the stream of the tag (counter mode on SipHash). */
static void ss_scan__stream(const uint8_t key[16], const uint8_t tag[8], uint8_t *p, size_t n)
{
    uint8_t block[13] = {'K'};
    memcpy(block + 1, tag, 8);
    for (size_t at = 0; at < n; at += 8) {
        ss_put_be(block + 9, at / 8, 4);
        uint8_t pad[8];
        ss_put_be(pad, ss_siphash(key, block, sizeof block), 8);
        for (size_t i = 0; i < 8 && at + i < n; i++)
            p[at + i] ^= pad[i];
    }
}

int ss_scan_token_encode(const uint8_t key[16], ss_bytes pattern, ss_bytes cursor, ss_buf *out)
{
    int rc = ss_buf_reserve(out, SS_SCAN_TOKEN_HEAD + cursor.len);
    if (rc != SS_OK)
        return rc;
    uint8_t *t = out->data + out->len;
    t[0] = SS_SCAN_TOKEN_VERSION;
    ss_put_be(t + 1, ss_scan__tag(key, pattern, cursor.data, cursor.len), 8);
    memcpy(t + SS_SCAN_TOKEN_HEAD, cursor.data, cursor.len);
    ss_scan__stream(key, t + 1, t + SS_SCAN_TOKEN_HEAD, cursor.len);
    out->len += SS_SCAN_TOKEN_HEAD + cursor.len;
    return SS_OK;
}

int ss_scan_token_decode(const uint8_t key[16], ss_bytes pattern, ss_bytes token, ss_buf *cursor)
{
    ss_buf_clear(cursor);
    /* A token always names a key: its cursor is never empty. */
    if (token.len <= SS_SCAN_TOKEN_HEAD || token.len > SS_SCAN_TOKEN_HEAD + SS_STORE_KEY_MAX + 64 ||
        token.data[0] != SS_SCAN_TOKEN_VERSION)
        return SS_E_TOKEN_INVALID;
    size_t n = token.len - SS_SCAN_TOKEN_HEAD;
    if (ss_buf_append(cursor, token.data + SS_SCAN_TOKEN_HEAD, n) != SS_OK)
        return SS_E_NOMEM;
    ss_scan__stream(key, token.data + 1, cursor->data, n);
    /* Compared in full whatever differs first: the time says nothing. */
    uint64_t want = ss_scan__tag(key, pattern, cursor->data, n);
    uint64_t got = ss_get_be(token.data + 1, 8);
    if ((want ^ got) != 0) {
        ss_buf_clear(cursor);
        return SS_E_TOKEN_INVALID;
    }
    return SS_OK;
}

/* Bytes of "$<n>\r\n<n bytes>\r\n". */
static size_t ss_scan__bulk_size(size_t n)
{
    char digits[20];
    return 1 + ss_u64_format(n, digits) + 2 + n + 2;
}

struct ss_scan_walk {
    const ss_scan_request *q;
    ss_pattern *pat;
    size_t limit_one, limit_more; /* answer bytes: while empty, and with keys */
    ss_buf keys;   /* the answer's keys, as bulk strings */
    size_t n;      /* how many */
    ss_buf cursor; /* of the last key looked at (empty: none yet) */
    uint64_t work;
    uint64_t now_ms; /* the time the walked records are as of (backend.h: scan_as_of) */
    bool stopped; /* the page ended before the walk did */
    int rc;
};

/* The answer's size with n keys in keys_bytes and a token of the cursor. */
static size_t ss_scan__answer_size(size_t n, size_t keys_bytes, size_t cursor_len)
{
    char digits[20];
    return 4 + 1 + ss_u64_format(n, digits) + 2 + keys_bytes + ss_scan__bulk_size(SS_SCAN_TOKEN_HEAD + cursor_len);
}

size_t ss_scan_longest_key(size_t max_answer)
{
    size_t n = max_answer / 2;
    while (n > 0 && ss_scan__answer_size(1, ss_scan__bulk_size(n), n + SS_SCAN_CURSOR_EXTRA) > max_answer)
        n--;
    return n;
}

static bool ss_scan__visit(void *ctx, ss_bytes key, ss_bytes cursor, const ss_record *rec)
{
    struct ss_scan_walk *w = ctx;
    const ss_scan_request *q = w->q;
    bool expired = rec->expiry_ms && rec->expiry_ms <= w->now_ms;
    /* Matching costs up to (tokens + 1) x (key length + 1) steps: a key
     * that would take the page past its budget starts the next page,
     * unless it is the page's first (a page always moves on). */
    uint64_t cost = expired ? 0 : ss_pattern_cost(w->pat, key.len);
    if (w->cursor.len && w->work + cost > SS_SCAN_WORK) {
        w->stopped = true;
        return false;
    }
    bool listed = !expired && ss_pattern_match(w->pat, key.data, key.len) &&
                  (q->may_read == NULL || q->may_read(q->may_read_ctx, q->caller, key));
    size_t entry = listed ? ss_scan__bulk_size(key.len) : 0;
    size_t need = ss_scan__answer_size(w->n + listed, w->keys.len + entry, cursor.len);
    if (need > (w->n ? w->limit_more : w->limit_one)) {
        /* The page ends before this key, which the next page starts
         * with; a key too large for any answer is refused. */
        w->stopped = true;
        if (w->cursor.len == 0)
            w->rc = SS_E_QUOTA;
        return false;
    }
    if (listed && (w->rc = ss_codec_put_bulk(&w->keys, key.data, key.len)) != SS_OK)
        return false;
    w->n += listed;
    ss_buf_clear(&w->cursor);
    if ((w->rc = ss_buf_append(&w->cursor, cursor.data, cursor.len)) != SS_OK)
        return false;
    w->work += cost;
    if (w->work >= SS_SCAN_WORK) {
        w->stopped = true;
        return false;
    }
    return true;
}

static int ss_scan__answer(const uint8_t tkey[16], const struct ss_scan_walk *w, ss_bytes cursor, ss_buf *out)
{
    int rc = ss_buf_append_str(out, cursor.len ? "*2\r\n*" : "*1\r\n*");
    if (rc == SS_OK)
        rc = ss_buf_append_u64(out, w->n);
    if (rc == SS_OK)
        rc = ss_buf_append_str(out, "\r\n");
    if (rc == SS_OK)
        rc = ss_buf_append(out, w->keys.data, w->keys.len);
    if (rc != SS_OK || cursor.len == 0)
        return rc;
    ss_buf token = SS_BUF_INIT;
    rc = ss_scan_token_encode(tkey, w->q->pattern, cursor, &token);
    if (rc == SS_OK)
        rc = ss_codec_put_bulk(out, token.data, token.len);
    ss_buf_free(&token);
    return rc;
}

int ss_scan_page(ss_backend *be, const ss_scan_request *q, ss_buf *response)
{
    if (be->ops->scan == NULL || be->ops->token_key == NULL)
        return SS_E_UNKNOWN_COMMAND;
    struct ss_scan_walk w = {.q = q, .keys = SS_BUF_INIT, .cursor = SS_BUF_INIT};
    int rc = ss_pattern_compile(q->pattern.data, q->pattern.len, &w.pat);
    if (rc != SS_OK)
        return rc;
    uint8_t tkey[16];
    rc = be->ops->token_key(be->impl, tkey);
    ss_buf after = SS_BUF_INIT, next = SS_BUF_INIT;
    if (rc == SS_OK && q->token.data)
        rc = ss_scan_token_decode(tkey, q->pattern, q->token, &after);
    /* A page of several keys stays small; one key alone may take what
     * the answer can hold. */
    w.limit_one = q->max_answer ? q->max_answer : SIZE_MAX;
    size_t page = q->page_bytes ? q->page_bytes : SS_SCAN_ANSWER_DEFAULT;
    w.limit_more = w.limit_one < page ? w.limit_one : page;
    if (rc == SS_OK) {
        uint64_t as_of = be->ops->scan_as_of ? be->ops->scan_as_of(be->impl) : 0;
        w.now_ms = as_of && as_of < q->now_ms ? as_of : q->now_ms;
        ss_bytes from = {after.data, after.len};
        /* Every key the pattern matches starts with its literal prefix:
         * the backend starts the walk there and ends it past them, so
         * listing the keys under sensor/ in a large store looks at those
         * keys only, in as few pages as they need. */
        rc = be->ops->scan(be->impl, from, ss_pattern_prefix(w.pat), SS_SCAN_EXAMINE, ss_scan__visit, &w, &next);
    }
    if (rc == SS_OK)
        rc = w.rc;
    if (rc == SS_OK) {
        /* Where the next page starts: after the last key of this one when
         * it ended early; else after the last key the backend looked at
         * (it may have passed over traces of deleted keys), unless that
         * is the end. */
        ss_bytes cursor = {w.cursor.data, w.cursor.len};
        if (!w.stopped) {
            cursor.data = next.data;
            cursor.len = next.len;
            if (cursor.len && w.cursor.len &&
                ss_scan__answer_size(w.n, w.keys.len, cursor.len) > (w.n ? w.limit_more : w.limit_one)) {
                cursor.data = w.cursor.data;
                cursor.len = w.cursor.len;
            }
        }
        size_t mark = response->len;
        if ((rc = ss_scan__answer(tkey, &w, cursor, response)) != SS_OK)
            response->len = mark;
    }
    ss_pattern_free(w.pat);
    ss_buf_free(&w.keys);
    ss_buf_free(&w.cursor);
    ss_buf_free(&after);
    ss_buf_free(&next);
    return rc;
}
