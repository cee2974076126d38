/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_scan.c - SCAN through the engine on LMDB, with a fake clock:
 * answers byte for byte, pages, tokens, expiry and authorization. */
#include <stdio.h>
#include <string.h>

#include "../../core/backend_lmdb.h"
#include "../../core/bigendian.h"
#include "../../core/codec.h"
#include "../../core/engine.h"
#include "../../core/errors.h"
#include "../../core/pattern.h"
#include "../../core/scan.h"
#include "../../core/siphash.h"
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
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT, want = SS_BUF_INIT;
    size_t n = 0, pages = 0;
    do {
        sx_page(&f, "page*", &token, &keys, &n);
        ASSERT_TRUE(f.resp.len <= SS_SCAN_ANSWER_DEFAULT);
        pages++;
        ASSERT_TRUE(pages < 100);
    } while (token.len);
    ASSERT_EQ(n, 2500);
    ASSERT_TRUE(pages >= 3); /* at most SS_SCAN_EXAMINE keys looked at per page */
    for (int i = 0; i < 2500; i++) {
        snprintf(key, sizeof key, "page%05d\n", i);
        ASSERT_EQ(ss_buf_append_str(&want, key), SS_OK);
    }
    ASSERT_MEM(keys.data, keys.len, want.data, want.len); /* each once, in order */
    ss_buf_free(&token);
    ss_buf_free(&keys);
    ss_buf_free(&want);
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
     * the page before it ends there, the next one is refused. */
    sx_set(&f, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", NULL);
    ss_buf_clear(&token);
    sx_page(&f, "b*", &token, &keys, &n);
    ASSERT_EQ(n, 3);
    ASSERT_TRUE(token.len > 0);
    ss_bytes t = {token.data, token.len};
    sx_scan(&f, "b*", &t);
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
