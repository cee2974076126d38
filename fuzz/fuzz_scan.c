/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fuzz_scan.c - libFuzzer target over SCAN's decoding: the request (codec
 * and command table), its pattern (compile and match) and its
 * continuation token.
 *
 * Input: byte 0 = where the pattern ends (mod the rest's length), then the
 * pattern's bytes, then the token's bytes.
 *
 * Checked beyond "no crash": a token statestore makes decodes to its
 * cursor, and the same token with any one byte changed, cut short or with
 * a byte more, or used with another pattern, is refused; a pattern that
 * compiles matches the key made of its literal characters when it has no
 * metacharacter.
 */
#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/command.h"
#include "../core/errors.h"
#include "../core/pattern.h"
#include "../core/scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t fz_key[16] = "0123456789abcdef";

static void fz_token(ss_bytes pattern, ss_bytes token)
{
    ss_buf cursor = SS_BUF_INIT, made = SS_BUF_INIT, again = SS_BUF_INIT;
    int rc = ss_scan_token_decode(fz_key, pattern, token, &cursor);
    if (rc != SS_OK && rc != SS_E_TOKEN_INVALID && rc != SS_E_NOMEM)
        abort();
    /* The input's bytes as a cursor: made into a token, read back. */
    if (token.len && ss_scan_token_encode(fz_key, pattern, token, &made) == SS_OK) {
        ss_bytes t = {made.data, made.len};
        if (ss_scan_token_decode(fz_key, pattern, t, &again) != SS_OK || again.len != token.len ||
            memcmp(again.data, token.data, token.len) != 0)
            abort();
        made.data[made.len - 1] ^= 1;
        if (ss_scan_token_decode(fz_key, pattern, t, &again) != SS_E_TOKEN_INVALID)
            abort();
        made.data[made.len - 1] ^= 1;
        t.len--;
        if (ss_scan_token_decode(fz_key, pattern, t, &again) != SS_E_TOKEN_INVALID)
            abort();
        ss_bytes other = {(const uint8_t *)"other", 5};
        t.len++;
        if ((pattern.len != 5 || memcmp(pattern.data, "other", 5) != 0) &&
            ss_scan_token_decode(fz_key, other, t, &again) != SS_E_TOKEN_INVALID)
            abort();
    }
    ss_buf_free(&cursor);
    ss_buf_free(&made);
    ss_buf_free(&again);
}

static void fz_pattern(ss_bytes pattern, ss_bytes key)
{
    ss_pattern *p;
    if (ss_pattern_compile(pattern.data, pattern.len, &p) != SS_OK)
        return;
    (void)ss_pattern_match(p, key.data, key.len);
    bool literal = memchr(pattern.data, '*', pattern.len) == NULL && memchr(pattern.data, '?', pattern.len) == NULL &&
                   memchr(pattern.data, '[', pattern.len) == NULL;
    if (literal && !ss_pattern_match(p, pattern.data, pattern.len))
        abort();
    ss_pattern_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t rest = size - 1;
    size_t cut = rest ? data[0] % (rest + 1) : 0;
    ss_bytes pattern = {data + 1, cut}, token = {data + 1 + cut, rest - cut};
    fz_pattern(pattern, token);
    fz_token(pattern, token);
    /* The whole input as a request, and SCAN's request of these bytes. */
    ss_request req;
    ss_command cmd;
    size_t used;
    if (ss_codec_decode_request(data, size, NULL, &req, &used) == SS_OK)
        (void)ss_command_parse(&req, &cmd);
    ss_buf b = SS_BUF_INIT;
    ss_bytes argv[] = {{(const uint8_t *)"SCAN", 4}, pattern, token};
    if (ss_codec_put_request(&b, 3, argv) == SS_OK &&
        ss_codec_decode_request(b.data, b.len, NULL, &req, &used) == SS_OK) {
        int rc = ss_command_parse(&req, &cmd);
        if (rc == SS_OK && (cmd.type != SS_CMD_SCAN || cmd.token.len != token.len))
            abort();
    }
    ss_buf_free(&b);
    return 0;
}
