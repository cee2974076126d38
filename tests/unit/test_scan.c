/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_scan.c - SCAN through the engine on LMDB, with a fake clock:
 * answers byte for byte, pages, tokens, expiry and authorization. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/backend_lmdb.h"
#include "../../core/bigendian.h"
#include "../../core/codec.h"
#include "../../core/engine.h"
#include "../../core/errors.h"
#include "../../core/pattern.h"
#include "../../core/scan.h"
#include "../../core/siphash.h"
#include "../../etcd/backend_etcd_span.h"
#include "../lines.h"
#include "../test.h"

#define T0 1700000000000ull

struct sx {
    ss_store *store;
    ss_backend *be;
    ss_engine *eng;
    uint64_t now;
    ss_buf resp;
    int status;
};

/* Keys starting with "secret" are not for this caller. */
static bool deny_secret(void *ctx, void *caller, enum ss_access access, ss_bytes key, bool quietly)
{
    (void)ctx;
    (void)caller;
    (void)quietly;
    return access != SS_ACCESS_READ || !(key.len >= 6 && memcmp(key.data, "secret", 6) == 0);
}

static void sx_open(struct sx *f, size_t max_answer)
{
    ss_store_options so = ss_store_options_default();
    so.path = test_tmpdir();
    ASSERT_EQ(ss_store_open(&so, &f->store), SS_OK);
    ASSERT_EQ(ss_backend_lmdb_new(f->store, &f->be), SS_OK);
    ss_engine_options eo = {.on_authorize = deny_secret, .max_answer = max_answer};
    ASSERT_EQ(ss_engine_new(f->be, &eo, &f->eng), SS_OK);
}

static void sx_close(struct sx *f)
{
    ASSERT_EQ(ss_engine_commit(f->eng, f->now), SS_OK);
    ss_engine_free(f->eng);
    ss_backend_lmdb_free(f->be);
    ss_store_close(f->store);
}

static void sx_run(struct sx *f, size_t argc, const ss_bytes *argv)
{
    ss_buf req = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&req, argc, argv), SS_OK);
    ss_buf_clear(&f->resp);
    ss_exec x = {.payload = req.data, .payload_len = req.len, .now_ms = f->now, .caller = f,
                 .response = &f->resp, .ts = {(const uint8_t *)"1700000000000:0:n", 17}};
    f->status = ss_engine_exec(f->eng, &x);
    ss_buf_free(&req);
}

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static void sx_set(struct sx *f, const char *key, const char *px)
{
    ss_bytes argv[] = {B("SET"), B(key), B("v"), B("PX"), B(px ? px : "")};
    sx_run(f, px ? 5 : 3, argv);
    ASSERT_EQ(f->status, SS_OK);
}

static void sx_scan(struct sx *f, const char *pattern, const ss_bytes *token)
{
    ss_bytes argv[] = {B("SCAN"), B(pattern), token ? *token : B("")};
    sx_run(f, token ? 3 : 2, argv);
}


/* keys is exactly page00000 .. page<n-1>, a line each, in order. */
static void expect_page_keys(const ss_buf *keys, int n)
{
    ss_buf want = SS_BUF_INIT;
    char key[32];
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof key, "page%05d\n", i);
        ASSERT_EQ(ss_buf_append_str(&want, key), SS_OK);
    }
    ASSERT_MEM(keys->data, keys->len, want.data, want.len);
    ss_buf_free(&want);
}

/* One page's keys appended to keys (one a line), its token into *token
 * (len 0: the last page). */
static void sx_page(struct sx *f, const char *pattern, ss_buf *token, ss_buf *keys, size_t *n)
{
    ss_bytes t = {token->data, token->len};
    sx_scan(f, pattern, token->len ? &t : NULL);
    ASSERT_EQ(f->status, SS_OK);
    const uint8_t *p = f->resp.data, *end = f->resp.data + f->resp.len;
    ASSERT_TRUE(f->resp.len >= 8 && p[0] == '*' && (p[1] == '1' || p[1] == '2'));
    bool more = p[1] == '2';
    p += 4;
    ASSERT_TRUE(*p == '*');
    size_t count = 0;
    for (p++; *p != '\r'; p++)
        count = count * 10 + (size_t)(*p - '0');
    p += 2;
    for (size_t i = 0; i < count; i++) {
        ASSERT_TRUE(*p == '$');
        size_t len = 0;
        for (p++; *p != '\r'; p++)
            len = len * 10 + (size_t)(*p - '0');
        p += 2;
        ASSERT_EQ(ss_buf_append(keys, p, len), SS_OK);
        ASSERT_EQ(ss_buf_append(keys, "\n", 1), SS_OK);
        p += len + 2;
    }
    *n += count;
    ss_buf_clear(token);
    if (more) {
        ASSERT_TRUE(*p == '$');
        size_t len = 0;
        for (p++; *p != '\r'; p++)
            len = len * 10 + (size_t)(*p - '0');
        p += 2;
        ASSERT_EQ(ss_buf_append(token, p, len), SS_OK);
        p += len + 2;
        ASSERT_TRUE(len > 0);
    }
    ASSERT_TRUE(p == end);
}

TEST(scan_answers_byte_exact)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    sx_set(&f, "a1", NULL);
    sx_set(&f, "a2", NULL);
    sx_set(&f, "b1", NULL);
    sx_set(&f, "xa1", NULL);
    sx_scan(&f, "a*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*2\r\n$2\r\na1\r\n$2\r\na2\r\n");
    sx_scan(&f, "zz*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*0\r\n");
    sx_scan(&f, "[ab][12]", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*3\r\n$2\r\na1\r\n$2\r\na2\r\n$2\r\nb1\r\n");
    sx_scan(&f, "a[", NULL);
    ASSERT_BUF(f.resp, "-ERR invalid pattern: a '[' is not closed\r\n");
    sx_scan(&f, "a***", NULL);
    ASSERT_BUF(f.resp, "-ERR invalid pattern: '**' must be a whole path segment and '***' is not a wildcard\r\n");
    sx_scan(&f, "", NULL);
    ASSERT_BUF(f.resp, "-ERR the pattern is empty\r\n");
    sx_scan(&f, "\xff*", NULL);
    ASSERT_BUF(f.resp, "-ERR the pattern is not UTF-8\r\n");
    char longp[SS_PATTERN_MAX + 2];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    sx_scan(&f, longp, NULL);
    ASSERT_BUF(f.resp, "-ERR the pattern is longer than 1024 bytes\r\n");
    ss_bytes junk = B("junk");
    sx_scan(&f, "a*", &junk);
    ASSERT_BUF(f.resp, "-ERR invalid continuation token\r\n");
    ss_bytes argv[] = {B("SCAN")};
    sx_run(&f, 1, argv);
    ASSERT_BUF(f.resp, "-ERR wrong number of arguments\r\n");
    sx_close(&f);
    ss_buf_free(&f.resp);
}

TEST(scan_pages_through_keys_with_decoys)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    char key[32];
    for (int i = 0; i < 2500; i++) {
        snprintf(key, sizeof key, "page%05d", i);
        sx_set(&f, key, NULL);
        snprintf(key, sizeof key, "pagx%05d", i); /* decoys between nothing and everything */
        if (i % 5 == 0)
            sx_set(&f, key, NULL);
    }
    ASSERT_EQ(ss_engine_commit(f.eng, f.now), SS_OK);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    size_t n = 0, pages = 0;
    do {
        sx_page(&f, "page*", &token, &keys, &n);
        ASSERT_TRUE(f.resp.len <= SS_SCAN_ANSWER_DEFAULT);
        pages++;
        ASSERT_TRUE(pages < 100);
    } while (token.len);
    ASSERT_EQ(n, 2500);
    ASSERT_TRUE(pages >= 3); /* at most SS_SCAN_EXAMINE keys looked at per page */
    expect_page_keys(&keys, 2500); /* each once, in order */
    ss_buf_free(&token);
    ss_buf_free(&keys);
    sx_close(&f);
    ss_buf_free(&f.resp);
}

TEST(scan_tokens_refused_when_forged)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    char key[32];
    for (int i = 0; i < 1500; i++) {
        snprintf(key, sizeof key, "k%04d", i);
        sx_set(&f, key, NULL);
    }
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    size_t n = 0;
    sx_page(&f, "k*", &token, &keys, &n);
    ASSERT_TRUE(token.len > SS_SCAN_TOKEN_HEAD);
    ASSERT_EQ(token.data[0], 1);
    /* The cursor is not readable in the token. */
    for (size_t i = 0; i + 2 <= token.len; i++)
        ASSERT_TRUE(memcmp(token.data + i, "k0", 2) != 0);
    /* Every byte altered, the token cut short or lengthened, another
     * pattern: refused. */
    for (size_t i = 0; i < token.len; i++) {
        token.data[i] ^= 0x20;
        ss_bytes t = {token.data, token.len};
        sx_scan(&f, "k*", &t);
        ASSERT_BUF(f.resp, "-ERR invalid continuation token\r\n");
        token.data[i] ^= 0x20;
    }
    for (size_t len = 0; len < token.len; len++) {
        ss_bytes t = {token.data, len};
        sx_scan(&f, "k*", &t);
        ASSERT_BUF(f.resp, "-ERR invalid continuation token\r\n");
    }
    ASSERT_EQ(ss_buf_append(&token, "x", 1), SS_OK);
    ss_bytes t = {token.data, token.len};
    sx_scan(&f, "k*", &t);
    ASSERT_BUF(f.resp, "-ERR invalid continuation token\r\n");
    token.len--;
    t.len--;
    sx_scan(&f, "k?*", &t);
    ASSERT_BUF(f.resp, "-ERR invalid continuation token\r\n");
    /* The token survives a restart: the next page follows on. */
    sx_close(&f);
    sx_open(&f, 0);
    while (token.len)
        sx_page(&f, "k*", &token, &keys, &n);
    ASSERT_EQ(n, 1500);
    ss_buf_free(&token);
    ss_buf_free(&keys);
    sx_close(&f);
    ss_buf_free(&f.resp);
}

TEST(scan_skips_expired_and_unreadable_keys)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    sx_set(&f, "e1", NULL);
    sx_set(&f, "e2", "100");
    sx_set(&f, "e3", NULL);
    sx_set(&f, "secret1", NULL);
    sx_scan(&f, "*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*3\r\n$2\r\ne1\r\n$2\r\ne2\r\n$2\r\ne3\r\n");
    f.now += 100; /* e2's deadline: gone, whether or not it was swept */
    sx_scan(&f, "*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*2\r\n$2\r\ne1\r\n$2\r\ne3\r\n");
    sx_scan(&f, "secret*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*0\r\n");
    sx_close(&f);
    ss_buf_free(&f.resp);
}

TEST(scan_answers_fit_the_bound)
{
    struct sx f = {.now = T0};
    sx_open(&f, 60);
    sx_set(&f, "aaaaaaaaaa1", NULL);
    sx_set(&f, "aaaaaaaaaa2", NULL);
    sx_set(&f, "aaaaaaaaaa3", NULL);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    size_t n = 0, pages = 0;
    do {
        sx_page(&f, "a*", &token, &keys, &n);
        ASSERT_TRUE(f.resp.len <= 60);
        pages++;
    } while (token.len && pages < 10);
    ASSERT_EQ(n, 3);
    ASSERT_STR(keys.data, keys.len, "aaaaaaaaaa1\naaaaaaaaaa2\naaaaaaaaaa3\n");
    /* A key whose answer alone is larger than the bound cannot be sent:
     * the page before it ends there, the next one is refused ([b]* has
     * no literal prefix: its walk looks at the a keys first). */
    sx_set(&f, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", NULL);
    ss_buf_clear(&token);
    sx_page(&f, "[b]*", &token, &keys, &n);
    ASSERT_EQ(n, 3);
    ASSERT_TRUE(token.len > 0);
    ss_bytes t = {token.data, token.len};
    sx_scan(&f, "[b]*", &t);
    ASSERT_BUF(f.resp, "-ERR the quota has been exceeded\r\n");
    /* b*'s walk starts at that key: its first page is refused. */
    sx_scan(&f, "b*", NULL);
    ASSERT_BUF(f.resp, "-ERR the quota has been exceeded\r\n");
    ss_buf_free(&token);
    ss_buf_free(&keys);
    sx_close(&f);
    ss_buf_free(&f.resp);
}

/* A page spends at most SS_SCAN_WORK matching steps: a key whose match
 * would take it past them starts the next page (here one of 5,000 bytes
 * against 1,024 tokens, 5 million steps, after one of 600 bytes: both
 * would fit in the page's answer), unless it is the page's first. */
TEST(scan_page_work_checked_before_a_key)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    static char small[601], big[5001], pattern[1025];
    memset(small, 'a', 600);
    memset(big, 'a', 5000);
    for (int i = 0; i < 512; i++)
        memcpy(pattern + 2 * i, "*a", 2);
    sx_set(&f, small, NULL);
    sx_set(&f, big, NULL);
    ss_pattern *pat;
    ASSERT_EQ(ss_pattern_compile((const uint8_t *)pattern, 1024, &pat), SS_OK);
    ASSERT_TRUE(ss_pattern_cost(pat, 600) < SS_SCAN_WORK);
    ASSERT_TRUE(ss_pattern_cost(pat, 600) + ss_pattern_cost(pat, 5000) > SS_SCAN_WORK);
    ss_pattern_free(pat);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    size_t n = 0;
    sx_page(&f, pattern, &token, &keys, &n);
    ASSERT_EQ(n, 1);
    ASSERT_TRUE(token.len > 0);
    sx_page(&f, pattern, &token, &keys, &n);
    ASSERT_EQ(n, 2);
    while (token.len)
        sx_page(&f, pattern, &token, &keys, &n);
    ASSERT_EQ(n, 2);
    ss_buf_free(&token);
    ss_buf_free(&keys);
    sx_close(&f);
    ss_buf_free(&f.resp);
}

/* The token, built here from PROTOCOL.md 9.4's layout rather than by
 * ss_scan_token_encode: 0x01, the tag (SipHash-2-4 of "T", the format,
 * the pattern's length as 4 bytes big-endian, the pattern and the
 * position), then the position XORed with the keystream (SipHash-2-4 of
 * "K", the tag and the 8-byte block's number as 4 bytes big-endian).
 * Tokens outlive the broker that made them: another broker on the same
 * etcd prefix, or the next release after an upgrade, must take them, so
 * the layout is fixed to the byte. A pattern longer than 255 bytes needs
 * all four bytes of its length. */
static void token_by_layout(const uint8_t key[16], ss_bytes pattern, ss_bytes pos, ss_buf *out)
{
    uint8_t head[6] = {'T', 1};
    ss_put_be(head + 2, pattern.len, 4);
    ss_bytes parts[] = {{head, sizeof head}, pattern, pos};
    uint8_t t[9] = {1};
    ss_put_be(t + 1, ss_siphash_parts(key, parts, 3), 8);
    ASSERT_EQ(ss_buf_append(out, t, sizeof t), SS_OK);
    for (size_t at = 0; at < pos.len; at += 8) {
        uint8_t block[13] = {'K'}, pad[8];
        memcpy(block + 1, t + 1, 8);
        ss_put_be(block + 9, at / 8, 4);
        ss_put_be(pad, ss_siphash(key, block, sizeof block), 8);
        for (size_t i = 0; i < 8 && at + i < pos.len; i++) {
            uint8_t c = pos.data[at + i] ^ pad[i];
            ASSERT_EQ(ss_buf_append(out, &c, 1), SS_OK);
        }
    }
}

TEST(scan_token_layout_as_documented)
{
    uint8_t key[16];
    for (int i = 0; i < 16; i++)
        key[i] = (uint8_t)(0xa0 + i);
    char long_pattern[301];
    memset(long_pattern, 'p', 300);
    long_pattern[299] = '*';
    long_pattern[300] = '\0';
    const char *patterns[] = {"k*", long_pattern};
    const char *positions[] = {"k0", "a position of twenty-eight b"};
    for (int p = 0; p < 2; p++)
        for (int c = 0; c < 2; c++) {
            ss_bytes pattern = B(patterns[p]), pos = B(positions[c]);
            ss_buf want = SS_BUF_INIT, got = SS_BUF_INIT, back = SS_BUF_INIT;
            token_by_layout(key, pattern, pos, &want);
            ASSERT_EQ(ss_scan_token_encode(key, pattern, pos, &got), SS_OK);
            ASSERT_MEM(got.data, got.len, want.data, want.len);
            ss_bytes t = {want.data, want.len};
            ASSERT_EQ(ss_scan_token_decode(key, pattern, t, &back), SS_OK);
            ASSERT_MEM(back.data, back.len, pos.data, pos.len);
            /* The other pattern's token is not this one's. */
            ASSERT_EQ(ss_scan_token_decode(key, B(patterns[1 - p]), t, &back), SS_E_TOKEN_INVALID);
            ss_buf_free(&want);
            ss_buf_free(&got);
            ss_buf_free(&back);
        }
}

/* A backend whose page was read earlier than the walk (etcd: the Range's
 * reply comes later) says as of when: a key is passed over as expired
 * only if it was by then, so a key renewed between the read and the walk
 * is not left out of a listing it was in all along. Never later than now. */
static uint64_t scan_as_of_ms;

static uint64_t fixed_as_of(void *impl)
{
    (void)impl;
    return scan_as_of_ms;
}

TEST(scan_expiry_as_of_the_pages_read)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    sx_set(&f, "e1", NULL);
    sx_set(&f, "e2", "100");
    struct ss_backend_ops ops = *f.be->ops;
    ops.scan_as_of = fixed_as_of;
    const struct ss_backend_ops *real = f.be->ops;
    f.be->ops = &ops;
    f.now = T0 + 150; /* e2 is past its deadline now */
    scan_as_of_ms = T0 + 50; /* but was not when the page was read */
    sx_scan(&f, "*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*2\r\n$2\r\ne1\r\n$2\r\ne2\r\n");
    scan_as_of_ms = T0 + 100; /* gone by then */
    sx_scan(&f, "*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*1\r\n$2\r\ne1\r\n");
    scan_as_of_ms = T0 + 500; /* a time after now counts as now */
    f.now = T0 + 99;
    sx_scan(&f, "*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*2\r\n$2\r\ne1\r\n$2\r\ne2\r\n");
    f.be->ops = real;
    f.now = T0 + 150;
    sx_close(&f);
    ss_buf_free(&f.resp);
}

/* ---- the walk keeps to the pattern's literal prefix ---------------------- */

/* What a backend's walk showed: the keys, one a line, and how many. */
struct walk_seen {
    ss_buf keys;
    size_t n;
};

static bool walk_key(void *ctx, ss_bytes key, ss_bytes cursor, const ss_record *rec)
{
    (void)cursor;
    (void)rec;
    struct walk_seen *w = ctx;
    ASSERT_EQ(ss_buf_append(&w->keys, key.data, key.len), SS_OK);
    ASSERT_EQ(ss_buf_append(&w->keys, "\n", 1), SS_OK);
    w->n++;
    return true;
}

/* The backend's walk from cursor `after` with prefix, max keys at most:
 * what it showed into *w (cleared first), its next cursor into *next. */
static void walk(struct sx *f, ss_bytes after, ss_bytes prefix, size_t max, struct walk_seen *w, ss_buf *next)
{
    ss_buf_clear(&w->keys);
    w->n = 0;
    ASSERT_EQ(f->be->ops->scan(f->be->impl, after, prefix, max, walk_key, w, next), SS_OK);
}

/* A whole walk with prefix, max keys a call: every key it showed, and
 * how many calls it took. */
static size_t walk_all(struct sx *f, ss_bytes prefix, size_t max, ss_buf *keys)
{
    struct walk_seen w = {SS_BUF_INIT, 0};
    ss_buf next = SS_BUF_INIT, after = SS_BUF_INIT;
    size_t calls = 0;
    do {
        walk(f, (ss_bytes){after.data, after.len}, prefix, max, &w, &next);
        ASSERT_EQ(ss_buf_append(keys, w.keys.data, w.keys.len), SS_OK);
        ss_buf_clear(&after);
        ASSERT_EQ(ss_buf_append(&after, next.data, next.len), SS_OK);
        ASSERT_TRUE(++calls < 100000);
    } while (after.len);
    ss_buf_free(&w.keys);
    ss_buf_free(&next);
    ss_buf_free(&after);
    return calls;
}

/* A listing starts at the pattern's literal prefix and ends past its
 * keys: m/'s five keys amid 6,000 others are one page, whatever a token
 * made by an older release says (a cursor before the prefix starts at
 * it, one past it ends the listing). Without a literal prefix (*x) the
 * walk starts at the store's first key, 1,000 keys a page. */
TEST(scan_starts_at_the_prefix_and_ends_past_it)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    char key[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "a%05d", i);
        sx_set(&f, key, NULL);
        snprintf(key, sizeof key, "z%05d", i);
        sx_set(&f, key, NULL);
    }
    const char *near[] = {"m", "m.", "m/", "m/1", "m/2", "m/22", "m/3", "m0", "m00"};
    for (size_t i = 0; i < sizeof near / sizeof near[0]; i++)
        sx_set(&f, near[i], NULL);
    ASSERT_EQ(ss_engine_commit(f.eng, f.now), SS_OK);
    const char *want = "*1\r\n*5\r\n$2\r\nm/\r\n$3\r\nm/1\r\n$3\r\nm/2\r\n$4\r\nm/22\r\n$3\r\nm/3\r\n";
    sx_scan(&f, "m/*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*5\r\n$2\r\nm/\r\n$3\r\nm/1\r\n$3\r\nm/2\r\n$4\r\nm/22\r\n$3\r\nm/3\r\n");
    sx_scan(&f, "m/2*", NULL);
    ASSERT_BUF(f.resp, "*1\r\n*2\r\n$3\r\nm/2\r\n$4\r\nm/22\r\n");

    /* The backend's walk: only the prefix's keys, from it (the cursor
     * before it or none) or from within it, and the end after them. */
    struct walk_seen w = {SS_BUF_INIT, 0};
    ss_buf next = SS_BUF_INIT;
    walk(&f, B(""), B("m/"), 1000, &w, &next);
    ASSERT_BUF(w.keys, "m/\nm/1\nm/2\nm/22\nm/3\n");
    ASSERT_EQ(next.len, 0);
    walk(&f, B("b"), B("m/"), 1000, &w, &next);
    ASSERT_BUF(w.keys, "m/\nm/1\nm/2\nm/22\nm/3\n");
    walk(&f, B("m"), B("m/"), 2, &w, &next);
    ASSERT_BUF(w.keys, "m/\nm/1\n");
    ASSERT_BUF(next, "m/1");
    walk(&f, B("m/1"), B("m/"), 2, &w, &next);
    ASSERT_BUF(w.keys, "m/2\nm/22\n");
    ASSERT_BUF(next, "m/22");
    walk(&f, B("m/22"), B("m/"), 2, &w, &next);
    ASSERT_BUF(w.keys, "m/3\n");
    ASSERT_EQ(next.len, 0);
    walk(&f, B("m/3"), B("m/"), 2, &w, &next);
    ASSERT_EQ(w.n, 0);
    ASSERT_EQ(next.len, 0);
    walk(&f, B("m0"), B("m/"), 1000, &w, &next); /* past them */
    ASSERT_EQ(w.n, 0);
    ASSERT_EQ(next.len, 0);

    /* Tokens of an older release, whose walk went through the store. */
    uint8_t tkey[16];
    ASSERT_EQ(f.be->ops->token_key(f.be->impl, tkey), SS_OK);
    ss_buf token = SS_BUF_INIT;
    ASSERT_EQ(ss_scan_token_encode(tkey, B("m/*"), B("a00001"), &token), SS_OK);
    ss_bytes t = {token.data, token.len};
    sx_scan(&f, "m/*", &t);
    ASSERT_MEM(f.resp.data, f.resp.len, want, strlen(want));
    ss_buf_clear(&token);
    ASSERT_EQ(ss_scan_token_encode(tkey, B("m/*"), B("m/2"), &token), SS_OK);
    t = (ss_bytes){token.data, token.len};
    sx_scan(&f, "m/*", &t);
    ASSERT_BUF(f.resp, "*1\r\n*2\r\n$4\r\nm/22\r\n$3\r\nm/3\r\n");
    ss_buf_clear(&token);
    ASSERT_EQ(ss_scan_token_encode(tkey, B("m/*"), B("m00"), &token), SS_OK);
    t = (ss_bytes){token.data, token.len};
    sx_scan(&f, "m/*", &t);
    ASSERT_BUF(f.resp, "*1\r\n*0\r\n");

    /* No literal prefix: from the store's first key, 1000 a page. */
    ss_buf keys = SS_BUF_INIT;
    size_t n = 0, pages = 0;
    ss_buf_clear(&token);
    do {
        sx_page(&f, "*/2", &token, &keys, &n);
        ASSERT_TRUE(++pages < 100);
    } while (token.len);
    ASSERT_BUF(keys, "m/2\n");
    ASSERT_EQ(pages, 7); /* 6,009 keys */
    walk(&f, B(""), B(""), 1000, &w, &next);
    ASSERT_EQ(w.n, 1000);
    ASSERT_BUF(next, "a00999");
    ss_buf_free(&keys);
    ss_buf_free(&token);
    ss_buf_free(&next);
    ss_buf_free(&w.keys);
    sx_close(&f);
    ss_buf_free(&f.resp);
}

/* A listing of 2,500 keys between 2,000 keys before their prefix and
 * 2,000 after it: each page goes on from its token's cursor within the
 * prefix's keys, 1000 a page, and the third is the last. */
TEST(scan_pages_within_the_prefix)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    char key[32];
    for (int i = 0; i < 2500; i++) {
        snprintf(key, sizeof key, "page%05d", i);
        sx_set(&f, key, NULL);
        if (i >= 2000)
            continue;
        snprintf(key, sizeof key, "pag%05d", i); /* before page */
        sx_set(&f, key, NULL);
        snprintf(key, sizeof key, "pagf%05d", i); /* after it */
        sx_set(&f, key, NULL);
    }
    ASSERT_EQ(ss_engine_commit(f.eng, f.now), SS_OK);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    size_t n = 0;
    size_t per_page[4] = {0};
    int pages = 0;
    do {
        size_t had = n;
        sx_page(&f, "page*", &token, &keys, &n);
        ASSERT_TRUE(pages < 4);
        per_page[pages++] = n - had;
    } while (token.len);
    ASSERT_EQ(pages, 3);
    ASSERT_EQ(per_page[0], 1000);
    ASSERT_EQ(per_page[1], 1000);
    ASSERT_EQ(per_page[2], 500);
    expect_page_keys(&keys, 2500); /* each once, in order */
    ss_buf_free(&token);
    ss_buf_free(&keys);
    sx_close(&f);
    ss_buf_free(&f.resp);
}

/* Long keys (over 480 bytes) are stored under their first 480 bytes and
 * a hash (store_lmdb.h): among those that share the 480 bytes, the order
 * is the hash's. A prefix longer than 480 bytes is walked as its first
 * 480: the walk shows the long keys that share only those too, and the
 * match passes over them; every key with the prefix is listed once,
 * the keys past the 480 bytes' run are not looked at. */
TEST(scan_prefix_and_long_keys)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    char key[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "L%05d", i); /* before L/ */
        sx_set(&f, key, NULL);
        snprintf(key, sizeof key, "M%05d", i); /* after it */
        sx_set(&f, key, NULL);
    }
    static char p[501], k[2600];
    memcpy(p, "L/", 2);
    memset(p + 2, 'x', 498); /* the prefix: 500 bytes */
    ss_buf want = SS_BUF_INIT;
    /* With the prefix: itself, one more byte, 2,000 more. */
    const char *tails[] = {"", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    for (size_t i = 0; i < sizeof tails / sizeof tails[0]; i++) {
        snprintf(k, sizeof k, "%s%s", p, tails[i]);
        sx_set(&f, k, NULL);
        ASSERT_EQ(ss_buf_append_str(&want, k), SS_OK);
        ASSERT_EQ(ss_buf_append_str(&want, "\n"), SS_OK);
    }
    memset(k, 0, sizeof k);
    memcpy(k, p, 500);
    memset(k + 500, 'y', 2000);
    sx_set(&f, k, NULL);
    ASSERT_EQ(ss_buf_append_str(&want, k), SS_OK);
    ASSERT_EQ(ss_buf_append_str(&want, "\n"), SS_OK);
    /* The same 480 bytes, not the prefix: in the run, among them. */
    for (int i = 0; i < 20; i++) {
        memset(k, 0, sizeof k);
        memcpy(k, p, 480 + (size_t)i);
        snprintf(k + 480 + i, 16, "Y%02d", i);
        sx_set(&f, k, NULL);
    }
    memset(k, 0, sizeof k);
    memcpy(k, p, 480); /* the run's first 480 bytes alone: an inline key */
    sx_set(&f, k, NULL);
    memcpy(k, p, 479); /* before the run and after it, long and not */
    memcpy(k + 479, "w", 1);
    sx_set(&f, k, NULL);
    memset(k + 479, 'w', 100);
    sx_set(&f, k, NULL);
    memset(k + 479, 'y', 100);
    sx_set(&f, k, NULL);
    k[480] = '\0';
    sx_set(&f, k, NULL);
    /* K/: five long keys with a short prefix, between two long decoys. */
    ss_buf want_k = SS_BUF_INIT;
    const char *heads[] = {"K.", "K/1", "K/2", "K/3", "K/4", "K/5", "K0"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        memset(k, 0, sizeof k);
        memset(k, 'k', 600);
        memcpy(k, heads[i], strlen(heads[i]));
        sx_set(&f, k, NULL);
        if (k[1] == '/') {
            ASSERT_EQ(ss_buf_append_str(&want_k, k), SS_OK);
            ASSERT_EQ(ss_buf_append_str(&want_k, "\n"), SS_OK);
        }
    }
    ASSERT_EQ(ss_engine_commit(f.eng, f.now), SS_OK);
    test_sort_lines(&want);
    test_sort_lines(&want_k);

    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    size_t n = 0;
    sx_page(&f, "K/*", &token, &keys, &n);
    ASSERT_EQ(token.len, 0); /* one page: the last */
    ASSERT_EQ(n, 5);
    test_sort_lines(&keys);
    ASSERT_MEM(keys.data, keys.len, want_k.data, want_k.len);

    /* The 500 bytes' prefix: its 11 keys, each once. Matching a key of
     * 500 bytes against 501 tokens costs 250,000 steps of the page's 4
     * million, so a few pages, not 6 (3,000 keys before, 3,000 after). */
    char pattern[502];
    snprintf(pattern, sizeof pattern, "%s*", p);
    ss_buf_clear(&keys);
    n = 0;
    int pages = 0;
    do {
        sx_page(&f, pattern, &token, &keys, &n);
        ASSERT_TRUE(++pages < 100);
    } while (token.len);
    ASSERT_EQ(n, 11);
    ASSERT_TRUE(pages <= 3);
    test_sort_lines(&keys);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);

    /* The backend's walk: the run of the prefix's first 480 bytes (the 32
     * keys that start with them), one key a call too, each once. */
    ss_bytes pre = {(const uint8_t *)p, 500};
    ss_buf walked = SS_BUF_INIT;
    ASSERT_EQ(walk_all(&f, pre, 1000, &walked), 1);
    size_t lines = 0;
    for (size_t i = 0; i < walked.len; i++)
        lines += walked.data[i] == '\n';
    ASSERT_EQ(lines, 32);
    ss_buf one = SS_BUF_INIT;
    ASSERT_EQ(walk_all(&f, pre, 1, &one), 33); /* the last call finds the end */
    test_sort_lines(&walked);
    test_sort_lines(&one);
    ASSERT_MEM(one.data, one.len, walked.data, walked.len);
    /* L/ (a prefix within the 480 bytes) holds the run and the keys
     * about it: 36 keys of up to 2,500 bytes, more than one page's 16 KiB,
     * so a page ends within the run (its cursor a long key's 490 bytes)
     * and the next goes on from there: every key once. */
    ss_buf_clear(&keys);
    ss_buf_clear(&token);
    n = 0;
    pages = 0;
    do {
        sx_page(&f, "L/*", &token, &keys, &n);
        ASSERT_TRUE(++pages < 100);
    } while (token.len);
    ASSERT_EQ(n, 36);
    ASSERT_TRUE(pages >= 2);
    test_sort_lines(&keys);
    ss_bytes last = {NULL, 0};
    for (size_t i = 0, at = 0; i < keys.len; i++)
        if (keys.data[i] == '\n') {
            ss_bytes line = {keys.data + at, i - at};
            ASSERT_TRUE(last.data == NULL || test_line_cmp(&last, &line) < 0); /* sorted: a twice would be equal */
            last = line;
            at = i + 1;
        }
    ss_buf_free(&walked);
    ss_buf_free(&one);
    ss_buf_free(&want_k);
    ss_buf_free(&token);
    ss_buf_free(&keys);
    ss_buf_free(&want);
    sx_close(&f);
    ss_buf_free(&f.resp);
}

/* A prefix that ends in 0xff bytes: its keys are still one run, which
 * ends at the first key without it. (A SCAN pattern is UTF-8, which has
 * no 0xff byte, but the walk does not rely on it.) On etcd the Range of
 * a prefix ends at the least string after all of its keys: the prefix
 * without its trailing 0xff bytes, its last byte one more; none when
 * the prefix is 0xff bytes alone (every key after it has it) or empty. */
TEST(scan_prefix_ending_in_ff_bytes)
{
    struct sx f = {.now = T0};
    sx_open(&f, 0);
    const char *keys[] = {"\xfe\xfe", "\xfe\xff", "\xfe\xff\xfe" "9", "\xfe\xff\xff", "\xfe\xff\xff\x01",
                          "\xfe\xff\xff\xff", "\xfe\xff\xff\xff\xff\xff", "\xff", "\xff\xfe", "\xff\xff",
                          "\xff\xff\x01", "\xff\xff\xff"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        sx_set(&f, keys[i], NULL);
    ASSERT_EQ(ss_engine_commit(f.eng, f.now), SS_OK);
    struct walk_seen w = {SS_BUF_INIT, 0};
    ss_buf next = SS_BUF_INIT;
    walk(&f, B(""), B("\xfe\xff\xff"), 1000, &w, &next);
    ASSERT_BUF(w.keys, "\xfe\xff\xff\n\xfe\xff\xff\x01\n\xfe\xff\xff\xff\n\xfe\xff\xff\xff\xff\xff\n");
    ASSERT_EQ(next.len, 0);
    walk(&f, B("\xfe\xff\xff\x01"), B("\xfe\xff\xff"), 1000, &w, &next);
    ASSERT_BUF(w.keys, "\xfe\xff\xff\xff\n\xfe\xff\xff\xff\xff\xff\n");
    ASSERT_EQ(next.len, 0);
    walk(&f, B(""), B("\xff\xff"), 1000, &w, &next);
    ASSERT_BUF(w.keys, "\xff\xff\n\xff\xff\x01\n\xff\xff\xff\n");
    ASSERT_EQ(next.len, 0);
    ss_buf_free(&w.keys);
    ss_buf_free(&next);
    sx_close(&f);
    ss_buf_free(&f.resp);

    struct {
        const char *prefix, *end; /* end NULL: none */
    } cases[] = {
        {"a/", "a0"}, {"a\xff", "b"}, {"a\xff\xff", "b"}, {"ab\xfe\xff", "ab\xff"}, {"\x01", "\x02"},
        {"\xfe\xff\xff", "\xff"}, {"\xff", NULL}, {"\xff\xff\xff", NULL}, {"", NULL},
    };
    ss_buf end = SS_BUF_INIT;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool nomem = true;
        bool has = ss_etcd_prefix_end(B(cases[i].prefix), &end, &nomem);
        ASSERT_TRUE(!nomem);
        ASSERT_EQ(has, cases[i].end != NULL);
        if (has)
            ASSERT_MEM(end.data, end.len, cases[i].end, strlen(cases[i].end));
        else
            ASSERT_EQ(end.len, 0);
    }
    ss_buf_free(&end);
}
