/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_codec.c - byte-exact vectors of PROTOCOL.md for the codec. */
#include <string.h>

#include "../../core/codec.h"
#include "../../core/errors.h"
#include "../test.h"

#define LIT(s) (const uint8_t *)(s), sizeof(s) - 1

/* Decode whole, then every proper prefix must be INCOMPLETE. */
static void check_request(const uint8_t *p, size_t n, size_t argc, const char *const *want)
{
    ss_request req;
    size_t used = 0;
    ASSERT_EQ(ss_codec_decode_request(p, n, NULL, &req, &used), SS_OK);
    ASSERT_EQ(used, n);
    ASSERT_EQ(req.argc, argc);
    for (size_t i = 0; i < argc; i++)
        ASSERT_MEM(req.argv[i].data, req.argv[i].len, want[i], strlen(want[i]));
    for (size_t k = 0; k < n; k++)
        ASSERT_EQ(ss_codec_decode_request(p, k, NULL, &req, &used), SS_E_INCOMPLETE);
    /* Re-encoding gives the same bytes. */
    ss_buf b = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&b, req.argc, req.argv), SS_OK);
    ASSERT_MEM(b.data, b.len, p, n);
    ss_buf_free(&b);
}

TEST(codec_protocol_requests)
{
    const char *set[] = {"SET", "testkey", "testvalue"};
    check_request(LIT("*3\r\n$3\r\nSET\r\n$7\r\ntestkey\r\n$9\r\ntestvalue\r\n"), 3, set);
    const char *setnx[] = {"SET", "key", "value", "NX", "PX", "1000"};
    check_request(LIT("*6\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n$2\r\nNX\r\n$2\r\nPX\r\n$4\r\n1000\r\n"),
                  6, setnx);
    const char *get[] = {"GET", "testkey"};
    check_request(LIT("*2\r\n$3\r\nGET\r\n$7\r\ntestkey\r\n"), 2, get);
    const char *del[] = {"DEL", "testkey"};
    check_request(LIT("*2\r\n$3\r\nDEL\r\n$7\r\ntestkey\r\n"), 2, del);
    const char *vdel[] = {"VDEL", "testkey", "testvalue"};
    check_request(LIT("*3\r\n$4\r\nVDEL\r\n$7\r\ntestkey\r\n$9\r\ntestvalue\r\n"), 3, vdel);
    const char *kn[] = {"KEYNOTIFY", "SOMEKEY"};
    check_request(LIT("*2\r\n$9\r\nKEYNOTIFY\r\n$7\r\nSOMEKEY\r\n"), 2, kn);
    const char *knstop[] = {"KEYNOTIFY", "SOMEKEY", "STOP"};
    check_request(LIT("*3\r\n$9\r\nKEYNOTIFY\r\n$7\r\nSOMEKEY\r\n$4\r\nSTOP\r\n"), 3, knstop);
}

TEST(codec_binary_safe)
{
    static const uint8_t req[] = "*2\r\n$3\r\nGET\r\n$6\r\n\0\r\n\xff\x80$\r\n";
    ss_request r;
    size_t used;
    ASSERT_EQ(ss_codec_decode_request(req, sizeof req - 1, NULL, &r, &used), SS_OK);
    ASSERT_EQ(used, sizeof req - 1);
    ASSERT_STR(r.argv[1].data, r.argv[1].len, "\0\r\n\xff\x80$");
    /* An empty bulk string is a valid argument. */
    ASSERT_EQ(ss_codec_decode_request(LIT("*2\r\n$3\r\nGET\r\n$0\r\n\r\n"), NULL, &r, &used), SS_OK);
    ASSERT_EQ(r.argv[1].len, 0);
    /* Trailing bytes are left to the caller. */
    ASSERT_EQ(ss_codec_decode_request(LIT("*1\r\n$3\r\nGET\r\nxyz"), NULL, &r, &used), SS_OK);
    ASSERT_EQ(used, 13);
}

static void check_syntax(const uint8_t *p, size_t n, const ss_codec_limits *lim)
{
    ss_request r;
    size_t used;
    int rc = ss_codec_decode_request(p, n, lim, &r, &used);
    if (rc != SS_E_SYNTAX)
        test_fail_mem(__FILE__, __LINE__, "not a syntax error", p, n, "", 0);
}

TEST(codec_request_syntax_errors)
{
    check_syntax(LIT("$3\r\nGET\r\n"), NULL);                       /* not an array */
    check_syntax(LIT("*0\r\n"), NULL);                              /* no verb */
    check_syntax(LIT("*-1\r\n"), NULL);                             /* null array */
    check_syntax(LIT("*1\r\n*1\r\n$3\r\nGET\r\n"), NULL);           /* nested array */
    check_syntax(LIT("*1\r\n:1\r\n"), NULL);                        /* integer element */
    check_syntax(LIT("*2\r\n$3\r\nGET\r\n$-1\r\n"), NULL);          /* null bulk */
    check_syntax(LIT("*1\r\n$3x\r\nGET\r\n"), NULL);                /* junk in length */
    check_syntax(LIT("*1\r\n$\r\nGET\r\n"), NULL);                  /* empty length */
    check_syntax(LIT("*1\n$3\r\nGET\r\n"), NULL);                   /* LF without CR */
    check_syntax(LIT("*1\r\r"), NULL);                              /* CR without LF */
    check_syntax(LIT("*1\r\n$3\r\nGETX\r\n"), NULL);                /* length too short */
    check_syntax(LIT("*1\r\n$+3\r\nGET\r\n"), NULL);                /* sign */
    check_syntax(LIT("*17\r\n"), NULL);                             /* too many args */
    check_syntax(LIT("*1\r\n$99999999999999999999\r\n"), NULL);     /* 20 digits */
    check_syntax(LIT("*1\r\n$9999999999999999999\r\n"), NULL);      /* overflows int64 */
    check_syntax(LIT("*1\r\n$9223372036854775807\r\n"), NULL);      /* above max size */
    check_syntax(LIT("*99999999999999999999999\r\n"), NULL);        /* huge count */
    ss_codec_limits small = {3, 32};
    check_syntax(LIT("*4\r\n"), &small);
    check_syntax(LIT("*1\r\n$40\r\n"), &small); /* declared length above max_size */
    check_syntax(LIT("*2\r\n$10\r\n0123456789\r\n$17\r\n"), &small); /* total above max_size */
    /* The headers alone can carry the total past max_size. */
    check_syntax(LIT("*2\r\n$21\r\n012345678901234567890\r\n$1\r\nx\r\n"), &small);
    /* The same request passes under the limits. */
    ss_request r;
    size_t used;
    ASSERT_EQ(ss_codec_decode_request(LIT("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), &small, &r, &used), SS_OK);
}

TEST(codec_prefix_is_incomplete_not_garbage)
{
    /* Digits cut short and a length promising more bytes are incomplete. */
    ss_request r;
    size_t used;
    ASSERT_EQ(ss_codec_decode_request(LIT("*"), NULL, &r, &used), SS_E_INCOMPLETE);
    ASSERT_EQ(ss_codec_decode_request(LIT("*1"), NULL, &r, &used), SS_E_INCOMPLETE);
    ASSERT_EQ(ss_codec_decode_request(LIT("*1\r"), NULL, &r, &used), SS_E_INCOMPLETE);
    ASSERT_EQ(ss_codec_decode_request(LIT("*1\r\n$1000\r\nab"), NULL, &r, &used), SS_E_INCOMPLETE);
    ASSERT_EQ(ss_codec_decode_request(LIT(""), NULL, &r, &used), SS_E_INCOMPLETE);
}

TEST(codec_responses_byte_exact)
{
    ss_buf b = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_ok(&b), SS_OK);
    ASSERT_BUF(b, "+OK\r\n");
    ss_buf_clear(&b);
    ASSERT_EQ(ss_codec_put_int(&b, -1), SS_OK);
    ASSERT_BUF(b, ":-1\r\n");
    ss_buf_clear(&b);
    ss_codec_put_int(&b, 1);
    ss_codec_put_int(&b, 0);
    ASSERT_BUF(b, ":1\r\n:0\r\n");
    ss_buf_clear(&b);
    ss_codec_put_bulk(&b, (const uint8_t *)"testvalue", 9);
    ASSERT_BUF(b, "$9\r\ntestvalue\r\n");
    ss_buf_clear(&b);
    ss_codec_put_bulk(&b, NULL, 0);
    ASSERT_BUF(b, "$0\r\n\r\n");
    ss_buf_clear(&b);
    ss_codec_put_nil(&b);
    ASSERT_BUF(b, "$-1\r\n");
    ss_buf_clear(&b);
    ss_codec_put_int(&b, INT64_MIN);
    ASSERT_BUF(b, ":-9223372036854775808\r\n");
    ss_buf_clear(&b);
    ss_codec_put_notify_set(&b, (const uint8_t *)"v\r\n", 3);
    ASSERT_BUF(b, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$3\r\nv\r\n\r\n");
    ss_buf_clear(&b);
    ss_codec_put_notify_delete(&b);
    ASSERT_BUF(b, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    ss_buf_free(&b);
}

/* Every error text sent on the wire, byte for byte, from the one table. */
TEST(codec_error_texts)
{
    static const struct {
        int code;
        const char *wire;
    } t[] = {
        {SS_E_TS_FUTURE, "-ERR the request timestamp is too far in the future; ensure that the "
                         "client and broker system clocks are synchronized\r\n"},
        {SS_E_FT_REQUIRED, "-ERR a fencing token is required for this request\r\n"},
        {SS_E_FT_FUTURE, "-ERR the request fencing token timestamp is too far in the future; "
                         "ensure that the client and broker system clocks are synchronized\r\n"},
        {SS_E_FT_LOWER, "-ERR the request fencing token is a lower version than the fencing "
                        "token protecting the resource\r\n"},
        {SS_E_QUOTA, "-ERR the quota has been exceeded\r\n"},
        {SS_E_SYNTAX, "-ERR syntax error\r\n"},
        {SS_E_NOT_AUTHORIZED, "-ERR not authorized\r\n"},
        {SS_E_UNKNOWN_COMMAND, "-ERR unknown command\r\n"},
        {SS_E_ARITY, "-ERR wrong number of arguments\r\n"},
        {SS_E_TS_MISSING, "-ERR missing timestamp\r\n"},
        {SS_E_TS_MALFORMED, "-ERR malformed timestamp\r\n"},
        {SS_E_KEY_EMPTY, "-ERR the key length is zero\r\n"},
        /* Ours, not the protocol's: a cluster without quorum (CLUSTER.md). */
        {SS_E_UNAVAILABLE, "-ERR the store is unavailable\r\n"},
        /* Ours too: SCAN's refusals (PROTOCOL.md 9.3). */
        {SS_E_PATTERN_EMPTY, "-ERR the pattern is empty\r\n"},
        {SS_E_PATTERN_LONG, "-ERR the pattern is longer than 1024 bytes\r\n"},
        {SS_E_PATTERN_UTF8, "-ERR the pattern is not UTF-8\r\n"},
        {SS_E_PATTERN_BRACKET, "-ERR invalid pattern: a '[' is not closed\r\n"},
        {SS_E_PATTERN_STARS, "-ERR invalid pattern: '**' must be a whole path segment and '***' is not a "
                             "wildcard\r\n"},
        {SS_E_TOKEN_INVALID, "-ERR invalid continuation token\r\n"},
    };
    int wire = 0;
    for (int code = -1; code >= -60; code--)
        wire += ss_err_is_wire(code);
    ASSERT_EQ(wire, 19);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        ss_buf b = SS_BUF_INIT;
        ASSERT_TRUE(ss_err_is_wire(t[i].code));
        ASSERT_EQ(ss_codec_put_error(&b, t[i].code), SS_OK);
        ASSERT_MEM(b.data, b.len, t[i].wire, strlen(t[i].wire));
        ss_reply r;
        ASSERT_EQ(ss_codec_decode_reply(b.data, b.len, &r), SS_OK);
        ASSERT_EQ(r.kind, SS_REPLY_ERROR);
        ss_buf_free(&b);
    }
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        const char *text = t[i].wire + 5; /* after "-ERR " */
        ASSERT_EQ(ss_err_from_wire(text, strlen(text) - 2), t[i].code);
    }
    ASSERT_EQ(ss_err_from_wire("syntax errors", 13), SS_E_SERVER);
    ASSERT_EQ(ss_err_from_wire("", 0), SS_E_SERVER);
    ASSERT_TRUE(!ss_err_is_wire(SS_E_IO));
    ASSERT_TRUE(!ss_err_is_wire(SS_E_INCOMPLETE));
}

TEST(codec_reply_decode)
{
    ss_reply r;
    ASSERT_EQ(ss_codec_decode_reply(LIT("+OK\r\n"), &r), SS_OK);
    ASSERT_EQ(r.kind, SS_REPLY_SIMPLE);
    ASSERT_STR(r.str.data, r.str.len, "OK");
    ASSERT_EQ(ss_codec_decode_reply(LIT(":-1\r\n"), &r), SS_OK);
    ASSERT_EQ(r.kind, SS_REPLY_INT);
    ASSERT_EQ(r.num, -1);
    ASSERT_EQ(ss_codec_decode_reply(LIT("$-1\r\n"), &r), SS_OK);
    ASSERT_EQ(r.kind, SS_REPLY_NIL);
    ASSERT_EQ(ss_codec_decode_reply(LIT("$0\r\n\r\n"), &r), SS_OK);
    ASSERT_EQ(r.kind, SS_REPLY_BULK);
    ASSERT_EQ(r.str.len, 0);
    ASSERT_EQ(ss_codec_decode_reply(LIT("$3\r\na\r\n\r\n"), &r), SS_OK);
    ASSERT_STR(r.str.data, r.str.len, "a\r\n");
    ASSERT_EQ(ss_codec_decode_reply(LIT("-ERR syntax error\r\n"), &r), SS_OK);
    ASSERT_STR(r.str.data, r.str.len, "ERR syntax error");
    ASSERT_EQ(ss_codec_decode_reply(LIT("$3\r\nab"), &r), SS_E_INCOMPLETE);
    ASSERT_EQ(ss_codec_decode_reply(LIT("+OK\r\nx"), &r), SS_E_SYNTAX);
    ASSERT_EQ(ss_codec_decode_reply(LIT("$-2\r\n"), &r), SS_E_SYNTAX);
    ASSERT_EQ(ss_codec_decode_reply(LIT("*1\r\n"), &r), SS_E_SYNTAX);

    enum ss_notify_kind kind;
    ss_bytes v;
    ASSERT_EQ(ss_codec_decode_notify(LIT("*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nhi\r\n"),
                                     &kind, &v),
              SS_OK);
    ASSERT_EQ(kind, SS_NOTIFY_SET);
    ASSERT_STR(v.data, v.len, "hi");
    ASSERT_EQ(ss_codec_decode_notify(LIT("*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n"), &kind, &v), SS_OK);
    ASSERT_EQ(kind, SS_NOTIFY_DELETE);
    ASSERT_EQ(ss_codec_decode_notify(LIT("*2\r\n$6\r\nNOTIFY\r\n$3\r\nDEL\r\n"), &kind, &v), SS_E_SYNTAX);
}

/* The size limit holds to the byte wherever it falls in a request: the
 * last bulk may end exactly at max_size, not one byte past it. */
TEST(codec_size_limit_to_the_byte)
{
    ss_codec_limits lim = {4, 40};
    ss_request r;
    size_t used;
    /* "*2\r\n$3\r\nSET\r\n$22\r\n": the value starts at byte 18. */
    ASSERT_EQ(ss_codec_decode_request(LIT("*2\r\n$3\r\nSET\r\n$22\r\n0123456789012345678901\r\n"), &lim, &r,
                                      &used),
              SS_OK);
    ASSERT_EQ(r.argv[1].len, 22);
    ASSERT_EQ(ss_codec_decode_request(LIT("*2\r\n$3\r\nSET\r\n$23\r\n01234567890123456789012\r\n"), &lim, &r,
                                      &used),
              SS_E_SYNTAX);
}

/* A notification is NOTIFY and then its kind, each a bulk string; every
 * proper prefix is incomplete, whatever bytes follow it in memory. */
TEST(codec_notify_words_and_prefixes)
{
    enum ss_notify_kind kind;
    ss_bytes v;
    ASSERT_EQ(ss_codec_decode_notify(LIT("*2\r\n$6\r\nNOTIFX\r\n$6\r\nDELETE\r\n"), &kind, &v), SS_E_SYNTAX);
    ASSERT_EQ(ss_codec_decode_notify(LIT("*2\r\n$6\r\nNOTIFY\r\n%6\r\nDELETE\r\n"), &kind, &v), SS_E_SYNTAX);
    static const char whole[] = "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\nhi\r\n";
    uint8_t buf[sizeof whole];
    for (size_t k = 0; k + 1 < sizeof whole; k++) {
        memcpy(buf, whole, k);
        memset(buf + k, 'x', sizeof buf - k);
        ASSERT_EQ(ss_codec_decode_notify(buf, k, &kind, &v), SS_E_INCOMPLETE);
    }
}

/* Pseudo-random argument lists survive encode + decode unchanged. */
TEST(codec_round_trip)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    uint8_t pool[4096];
    for (int round = 0; round < 2000; round++) {
        ss_bytes argv[SS_REQUEST_MAX_ARGS];
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t argc = 1 + (seed >> 33) % SS_REQUEST_MAX_ARGS;
        size_t off = 0;
        for (size_t i = 0; i < argc; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t n = (seed >> 40) % 200;
            for (size_t j = 0; j < n; j++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                pool[off + j] = (uint8_t)(seed >> 56);
            }
            argv[i].data = pool + off;
            argv[i].len = n;
            off += n;
        }
        ss_buf b = SS_BUF_INIT;
        ASSERT_EQ(ss_codec_put_request(&b, argc, argv), SS_OK);
        ss_request r;
        size_t used;
        ASSERT_EQ(ss_codec_decode_request(b.data, b.len, NULL, &r, &used), SS_OK);
        ASSERT_EQ(used, b.len);
        ASSERT_EQ(r.argc, argc);
        for (size_t i = 0; i < argc; i++)
            ASSERT_MEM(r.argv[i].data, r.argv[i].len, argv[i].data, argv[i].len);
        ss_buf_free(&b);
    }
}
