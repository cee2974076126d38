/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_answer.c - what an answer means for the call that asked (the
 * client library's client/answer.c), byte for byte, without a broker. */
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
