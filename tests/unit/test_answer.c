/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_answer.c - what an answer means for the call that asked (the
 * client library's client/answer.c), byte for byte, without a broker. */
#include <stdio.h>
#include <string.h>

#include "../../client/answer.h"
#include "../../core/errors.h"
#include "../test.h"

static ss_client_result answer(enum ss_answer_kind kind, const char *stat, const char *ts,
                               const char *payload)
{
    ss_client_result r;
    ss_answer_interpret(kind, stat, ts, (const uint8_t *)payload, strlen(payload), &r);
    return r;
}

TEST(answer_success_shapes)
{
    ss_client_result r = answer(SS_ANSWER_SET, "200", "1700000000000:0:StateStore", "+OK\r\n");
    ASSERT_EQ(r.status, SS_OK);
    ASSERT_TRUE(r.applied);
    ASSERT_STR(r.version, strlen(r.version), "1700000000000:0:StateStore");
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_SET, "200", "5:1:n", ":-1\r\n"); /* NX or NEX not met */
    ASSERT_EQ(r.status, SS_OK);
    ASSERT_TRUE(!r.applied);
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_GET, "200", "5:1:n", "$5\r\nhello\r\n");
    ASSERT_EQ(r.status, SS_OK);
    ASSERT_TRUE(r.found);
    ASSERT_MEM(r.value, r.value_len, "hello", 5);
    ASSERT_EQ(r.value[5], 0); /* terminated for convenience */
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_GET, "200", NULL, "$-1\r\n");
    ASSERT_EQ(r.status, SS_OK);
    ASSERT_TRUE(!r.found);
    ASSERT_TRUE(r.value == NULL);
    ASSERT_EQ(r.version[0], '\0'); /* a miss carries no version */
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_GET, "200", "5:1:n", "$0\r\n\r\n"); /* an empty value is found */
    ASSERT_TRUE(r.found);
    ASSERT_EQ(r.value_len, 0);
    ss_client_result_free(&r);
    const char *counts[] = {":1\r\n", ":0\r\n", ":-1\r\n"};
    for (int i = 0; i < 3; i++) {
        r = answer(i == 2 ? SS_ANSWER_VDEL : SS_ANSWER_DEL, "200", NULL, counts[i]);
        ASSERT_EQ(r.status, SS_OK);
        ASSERT_EQ(r.count, 1 - i);
        ASSERT_EQ(r.applied, i == 0);
        ss_client_result_free(&r);
    }
    r = answer(SS_ANSWER_KEYNOTIFY, "200", NULL, "+OK\r\n");
    ASSERT_TRUE(r.status == SS_OK && r.applied);
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_KEYNOTIFY, "200", NULL, ":0\r\n"); /* STOP of nothing */
    ASSERT_TRUE(r.status == SS_OK && !r.applied);
    ss_client_result_free(&r);
}

TEST(answer_errors_and_wrong_shapes)
{
    /* A known error text maps to its code; the text is kept. */
    ss_client_result r = answer(SS_ANSWER_SET, "200", NULL, "-ERR the quota has been exceeded\r\n");
    ASSERT_EQ(r.status, SS_E_QUOTA);
    ASSERT_STR(r.error_text, strlen(r.error_text), "the quota has been exceeded");
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_DEL, "200", NULL,
               "-ERR the request fencing token is a lower version than the fencing token "
               "protecting the resource\r\n");
    ASSERT_EQ(r.status, SS_E_FT_LOWER);
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_GET, "200", NULL, "-ERR something brand new\r\n");
    ASSERT_EQ(r.status, SS_E_SERVER);
    ASSERT_STR(r.error_text, strlen(r.error_text), "something brand new");
    ss_client_result_free(&r);
    /* Not 200, or no __stat at all: a transport failure, whatever the payload. */
    r = answer(SS_ANSWER_SET, "400", NULL, "+OK\r\n");
    ASSERT_EQ(r.status, SS_E_STATUS);
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_SET, NULL, NULL, "+OK\r\n");
    ASSERT_EQ(r.status, SS_E_STATUS);
    ss_client_result_free(&r);
    /* Answers of the wrong kind, or no answer at all. */
    const struct {
        enum ss_answer_kind kind;
        const char *payload;
    } wrong[] = {
        {SS_ANSWER_SET, "$2\r\nOK\r\n"}, {SS_ANSWER_SET, ":1\r\n"},  {SS_ANSWER_SET, "+NO\r\n"},
        {SS_ANSWER_GET, "+OK\r\n"},      {SS_ANSWER_GET, ":1\r\n"},  {SS_ANSWER_DEL, ":2\r\n"},
        {SS_ANSWER_DEL, "+OK\r\n"},      {SS_ANSWER_VDEL, ":-2\r\n"}, {SS_ANSWER_KEYNOTIFY, ":1\r\n"},
        {SS_ANSWER_GET, "garbage"},      {SS_ANSWER_GET, "$5\r\nhel"}, {SS_ANSWER_SET, ""},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        r = answer(wrong[i].kind, "200", NULL, wrong[i].payload);
        ASSERT_EQ(r.status, SS_E_PROTOCOL);
        ss_client_result_free(&r);
    }
}

/* A SCAN page read with the payload's length (payloads hold NUL bytes). */
static int scan_page(const char *payload, size_t len, ss_client_page *page, bool *has_token,
                     ss_buf *token)
{
    return ss_answer_scan((const uint8_t *)payload, len, page, has_token, token);
}
#define SCAN_PAGE(lit, page, has, tok) scan_page((lit), sizeof(lit) - 1, (page), (has), (tok))

TEST(answer_scan_pages)
{
    ss_client_page page;
    bool has = true;
    ss_buf tok = SS_BUF_INIT;
    /* The last page: keys, no token. */
    ASSERT_EQ(SCAN_PAGE("*1\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n", &page, &has, &tok), SS_OK);
    ASSERT_EQ(page.count, 2);
    ASSERT_STR(page.keys[0], page.lens[0], "key1");
    ASSERT_STR(page.keys[1], page.lens[1], "key2");
    ASSERT_EQ(page.keys[1][4], 0); /* terminated for convenience */
    ASSERT_TRUE(!has);
    ASSERT_EQ(tok.len, 0);
    ss_client_page_free(&page);
    /* More may follow: the token's bytes, binary, kept whole. */
    ASSERT_EQ(SCAN_PAGE("*2\r\n*1\r\n$3\r\n\xc3\xa9\x00\r\n$3\r\n\x00\xffx\r\n", &page, &has, &tok),
              SS_OK);
    ASSERT_EQ(page.count, 1);
    ASSERT_STR(page.keys[0], page.lens[0], "\xc3\xa9\x00");
    ASSERT_TRUE(has);
    ASSERT_BUF(tok, "\x00\xffx");
    ss_client_page_free(&page);
    /* A page with no key and a token; an empty token is a token. */
    ASSERT_EQ(SCAN_PAGE("*2\r\n*0\r\n$0\r\n\r\n", &page, &has, &tok), SS_OK);
    ASSERT_EQ(page.count, 0);
    ASSERT_TRUE(has);
    ASSERT_EQ(tok.len, 0);
    /* Nothing (more) matches; an empty key is a key. */
    ASSERT_EQ(SCAN_PAGE("*1\r\n*0\r\n", &page, &has, &tok), SS_OK);
    ASSERT_TRUE(page.count == 0 && !has);
    ASSERT_EQ(SCAN_PAGE("*1\r\n*1\r\n$0\r\n\r\n", &page, &has, &tok), SS_OK);
    ASSERT_TRUE(page.count == 1 && page.lens[0] == 0 && !has);
    ss_client_page_free(&page);
    /* The SCAN kind keeps a page whole for the pager, and reads errors as
     * every kind does. */
    ss_client_result r = answer(SS_ANSWER_SCAN, "200", NULL, "*1\r\n*0\r\n");
    ASSERT_EQ(r.status, SS_OK);
    ASSERT_STR(r.value, r.value_len, "*1\r\n*0\r\n");
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_SCAN, "200", NULL, "-ERR invalid continuation token\r\n");
    ASSERT_EQ(r.status, SS_E_TOKEN_INVALID);
    ASSERT_STR(r.error_text, strlen(r.error_text), "invalid continuation token");
    ss_client_result_free(&r);
    r = answer(SS_ANSWER_SCAN, "500", NULL, "*1\r\n*0\r\n");
    ASSERT_EQ(r.status, SS_E_STATUS);
    ss_client_result_free(&r);
    ss_buf_free(&tok);
}

TEST(answer_scan_malformed)
{
    /* What the SDK's reader refuses, and more: each is SS_E_PROTOCOL and
     * leaves no page and no token. */
    static const char *const bad[] = {
        "*0\r\n",                                                          /* no element */
        "*3\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$4\r\n1;1;\r\n$5\r\nextra\r\n", /* three */
        "*1\r\n*a\r\n",                              /* count not numeric */
        "*1\r\n$0\r\n\r\n",                          /* keys not an array */
        "*1\r\n*1\r\n$4\r\nkey\r\n",                 /* a key's length wrong */
        "*2\r\n*0\r\n",                              /* the token missing */
        "*1\r\n*0\r\ntrailing",                      /* trailing bytes */
        "*1\r\n*-1\r\n",                             /* a null array */
        "*1\r\n*1\r\n$-1\r\n",                       /* a null key */
        "*1\r\n*1\r\n+key\r\n",                      /* a key not a bulk string */
        "*2\r\n*0\r\n:1\r\n",                        /* a token not a bulk string */
        "*1\r\n*2\r\n$1\r\na\r\n",                   /* fewer keys than counted */
        "*1\r\n*999999999999999999\r\n",             /* a count no payload holds */
        "*1\r\n*9999999999999999999\r\n",            /* a count past int64 */
        "*1\r\n*1\r\n$1\r\naXY",                     /* no CR LF after a key */
        "*1\r\n*0\n",                                /* LF alone */
        "*+1\r\n*0\r\n",                             /* a sign */
        "",
        "*",
    };
    ss_buf tok = SS_BUF_INIT;
    ss_buf_append(&tok, "old", 3);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ss_client_page page;
        bool has = true;
        int rc = scan_page(bad[i], strlen(bad[i]), &page, &has, &tok);
        if (rc != SS_E_PROTOCOL)
            fprintf(stderr, "  accepted: \"%s\"\n", bad[i]);
        ASSERT_EQ(rc, SS_E_PROTOCOL);
        ASSERT_TRUE(page.count == 0 && page.keys == NULL && !has && tok.len == 0);
    }
    /* Every prefix of a good page is refused too. */
    static const char good[] = "*2\r\n*2\r\n$4\r\nkey1\r\n$4\r\nkey2\r\n$3\r\n\x00\xffx\r\n";
    for (size_t n = 0; n < sizeof good - 1; n++) {
        ss_client_page page;
        bool has;
        ASSERT_EQ(scan_page(good, n, &page, &has, &tok), SS_E_PROTOCOL);
    }
    ss_buf_free(&tok);
}
