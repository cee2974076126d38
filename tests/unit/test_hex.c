/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_hex.c - bytes as hex text (core/hex.h): both cases, the decoder's
 * refusals, and keys made safe for a log line, cut to fit. */
#include <string.h>

#include "../../core/errors.h"
#include "../../core/hex.h"
#include "../../core/json.h"
#include "../test.h"

#define LOGGABLE(in, inlen, cap, want)                                                  \
    do {                                                                                \
        char out_[(cap)];                                                               \
        memset(out_, '#', sizeof out_);                                                 \
        ss_hex_loggable((const uint8_t *)(in), (inlen), out_, sizeof out_);             \
        ASSERT_MEM(out_, strlen(out_) + 1, want, sizeof(want));                         \
    } while (0)

TEST(hex_both_ways)
{
    ss_buf b = SS_BUF_INIT;
    const uint8_t bytes[] = {0x00, 0x9f, 0xa0, 0xff, 0x5a};
    ASSERT_EQ(ss_hex_append(&b, bytes, sizeof bytes, true), SS_OK);
    ASSERT_BUF(b, "009FA0FF5A");
    ASSERT_EQ(ss_hex_append(&b, bytes, 2, false), SS_OK);
    ASSERT_BUF(b, "009FA0FF5A009f");
    ss_buf d = SS_BUF_INIT;
    ASSERT_EQ(ss_hex_decode(&d, "009fA0Ff5a", 10), SS_OK);
    ASSERT_MEM(d.data, d.len, bytes, sizeof bytes);
    /* An odd count, or a character that is not a digit (on either side
     * of the alphabet's ranges), leaves nothing. */
    ASSERT_EQ(ss_hex_decode(&d, "009", 3), SS_E_SYNTAX);
    ASSERT_EQ(d.len, 0);
    const char *bad[] = {"0g", "g0", "/0", ":0", "@0", "G0", "`0", "0 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(ss_hex_decode(&d, bad[i], 2), SS_E_SYNTAX);
        ASSERT_EQ(d.len, 0);
    }
    ASSERT_EQ(ss_hex_decode(&d, "", 0), SS_OK);
    ASSERT_EQ(d.len, 0);
    ASSERT_EQ(ss_hex_digit('9'), 9);
    ASSERT_EQ(ss_hex_digit('a'), 10);
    ASSERT_EQ(ss_hex_digit('F'), 15);
    ASSERT_EQ(ss_hex_digit('f' + 1), -1);
    ASSERT_EQ(ss_hex_digit('A' - 1), -1);
    ss_buf_free(&b);
    ss_buf_free(&d);
}

TEST(hex_loggable_escapes_and_cuts)
{
    /* Printable ASCII as itself; a backslash doubled; the rest in hex,
     * the ends of the printable range included. */
    LOGGABLE("lock/a b~", 9, 64, "lock/a b~");
    LOGGABLE("a\\b", 3, 64, "a\\\\b");
    LOGGABLE("\n\x1b[2J\x7f\x1f\x80\xff", 9, 64, "\\x0a\\x1b[2J\\x7f\\x1f\\x80\\xff");
    LOGGABLE("\0z", 2, 64, "\\x00z");
    LOGGABLE("", 0, 8, "");
    /* Exactly filled: no cut. 7 characters and the NUL in 8. */
    LOGGABLE("abcdefg", 7, 8, "abcdefg");
    /* One more: cut after whole bytes, "..." within cap. */
    LOGGABLE("abcdefgh", 8, 8, "abcd...");
    /* An escape is never split: "\x01" does not fit after "ab". */
    LOGGABLE("ab\x01zz", 5, 8, "ab...");
    LOGGABLE("\x01\x02", 2, 8, "\\x01...");
    LOGGABLE("\x01\x02", 2, 9, "\\x01\\x02");
    /* A key of 32000 bytes fits in a short line. */
    static char big[32000];
    memset(big, 'k', sizeof big);
    char out[80];
    ss_hex_loggable((const uint8_t *)big, sizeof big, out, sizeof out);
    ASSERT_EQ(strlen(out), 79);
    ASSERT_MEM(out + 76, 3, "...", 3);
}

/* JSON strings (core/json.h): valid UTF-8 as it is, anything else as
 * U+00XX, so that the text written is always valid UTF-8 (RFC 8259):
 * lead bytes 0xF5..0xFF, overlong forms, surrogates and code points
 * above U+10FFFF are not UTF-8. */
TEST(json_string_is_always_valid_utf8)
{
    ss_buf b = SS_BUF_INIT;
    ASSERT_EQ(ss_json_string(&b, (const uint8_t *)"a\"\\\x01\xc3\xa9\xf0\x9f\x98\x80", 10), SS_OK);
    ASSERT_BUF(b, "\"a\\\"\\\\\\u0001\xc3\xa9\xf0\x9f\x98\x80\"");
    ss_buf_clear(&b);
    /* 0xF8 lead, a surrogate (ED A0 80), overlong E0 80 80, F4 90 80 80 */
    ASSERT_EQ(ss_json_string(&b, (const uint8_t *)"\xf8\x80\x80\xed\xa0\x80\xe0\x80\x80\xf4\x90\x80\x80", 13),
              SS_OK);
    ASSERT_BUF(b, "\"\\u00f8\\u0080\\u0080\\u00ed\\u00a0\\u0080\\u00e0\\u0080\\u0080"
                  "\\u00f4\\u0090\\u0080\\u0080\"");
    ss_buf_free(&b);
}

/* A field of an administrative answer (a version, a token): no space or
 * line break left, a backslash escaped too, and back to the same bytes;
 * a broken escape refused. */
TEST(hex_field_escapes_and_back)
{
    ss_buf b = SS_BUF_INIT, d = SS_BUF_INIT;
    const char in[] = "1:0:my node\\\"x\"\n\x7f\x01\xc3\xa9~";
    ASSERT_EQ(ss_hex_field_append(&b, (const uint8_t *)in, sizeof in - 1), SS_OK);
    ASSERT_BUF(b, "1:0:my\\x20node\\x5c\"x\"\\x0a\\x7f\\x01\xc3\xa9~");
    ASSERT_EQ(ss_hex_field_decode(&d, (const char *)b.data, b.len), SS_OK);
    ASSERT_MEM(d.data, d.len, in, sizeof in - 1);
    const char *bad[] = {"a\\", "a\\x", "a\\x2", "a\\x2g", "a\\y20", "\\X20"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(ss_hex_field_decode(&d, bad[i], strlen(bad[i])), SS_E_SYNTAX);
        ASSERT_EQ(d.len, 0);
    }
    ASSERT_EQ(ss_hex_field_decode(&d, "\\x5C\\x41", 8), SS_OK);
    ASSERT_MEM(d.data, d.len, "\\A", 2);
    ss_buf_free(&b);
    ss_buf_free(&d);
}

/* A JSON string's escapes (what an import reads): every short escape,
 * \uXXXX and surrogate pairs into UTF-8, and back from what
 * ss_json_string writes; lone surrogates, unknown escapes, raw controls
 * and a cut escape refused. */
TEST(json_unescape_reads_what_json_writes)
{
    ss_buf b = SS_BUF_INIT, d = SS_BUF_INIT;
    const char s[] = "\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20AC\\ud83d\\ude00/";
    ASSERT_EQ(ss_json_unescape(&d, (const uint8_t *)s, sizeof s - 1), SS_OK);
    ASSERT_MEM(d.data, d.len, "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/", 19);
    const char in[] = "1:0:a \"b\\\x01\xc3\xa9";
    ASSERT_EQ(ss_json_string(&b, (const uint8_t *)in, sizeof in - 1), SS_OK);
    ASSERT_EQ(ss_json_unescape(&d, b.data + 1, b.len - 2), SS_OK);
    ASSERT_MEM(d.data, d.len, in, sizeof in - 1);
    const char *bad[] = {"\\", "\\x", "\\u12", "\\u12g4", "\\ud83d", "\\ud83dx", "\\ud83d\\u0041", "\\ude00", "a\nb",
                         "\\U0041"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_EQ(ss_json_unescape(&d, (const uint8_t *)bad[i], strlen(bad[i])), SS_E_SYNTAX);
        ASSERT_EQ(d.len, 0);
    }
    ss_buf_free(&b);
    ss_buf_free(&d);
}
