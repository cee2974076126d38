/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fuzz_answer.c - libFuzzer target over the client library's reading of
 * answers (client/answer.h): what a server, ours or not, sends back is
 * untrusted input to every program linked with the library.
 *
 * Input: byte 0 = the kind of call (bits 0-2, mod 7) and which __stat the answer
 * carries (bits 3-4: none, "200", "400", the rest of the input's first
 * line); byte 1 = whether a __ts comes with it (its bytes: up to the
 * first newline of the rest); the rest is the payload.
 *
 * Checked beyond "no crash": a status other than "200" is SS_E_STATUS
 * whatever the payload; a result is one of the codes the header lists,
 * with a value only where one belongs, NUL-terminated and no longer than
 * the payload; the version is the __ts, cut to fit, always terminated (none for an
 * administrative answer); a
 * SCAN page read back from its own canonical encoding is the same page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../client/answer.h"
#include "../core/codec.h"
#include "../core/errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The page and token as the server writes them: *2 (or *1) of an array of
 * bulk strings and the token. */
static void fz_encode_page(const ss_client_page *page, bool has_token, const ss_buf *token,
                           ss_buf *out)
{
    char head[48];
    int n = snprintf(head, sizeof head, "*%d\r\n*%zu\r\n", has_token ? 2 : 1, page->count);
    if (ss_buf_append(out, head, (size_t)n) != SS_OK)
        abort();
    for (size_t i = 0; i < page->count; i++)
        if (ss_codec_put_bulk(out, page->keys[i], page->lens[i]) != SS_OK)
            abort();
    if (has_token && ss_codec_put_bulk(out, token->data, token->len) != SS_OK)
        abort();
}

static void fz_scan(const uint8_t *p, size_t len)
{
    ss_client_page page, again;
    ss_buf token = SS_BUF_INIT, token2 = SS_BUF_INIT, canon = SS_BUF_INIT;
    bool has_token, has_token2;
    int rc = ss_answer_scan(p, len, &page, &has_token, &token);
    if (rc != SS_OK) {
        if (rc != SS_E_PROTOCOL || page.count != 0 || page.keys != NULL || has_token ||
            token.len != 0)
            abort();
        ss_buf_free(&token);
        return;
    }
    for (size_t i = 0; i < page.count; i++)
        if (page.lens[i] > len || page.keys[i][page.lens[i]] != 0)
            abort();
    fz_encode_page(&page, has_token, &token, &canon);
    if (canon.len > len)
        abort(); /* the canonical form is never longer than what was read */
    if (ss_answer_scan(canon.data, canon.len, &again, &has_token2, &token2) != SS_OK ||
        again.count != page.count || has_token2 != has_token || token2.len != token.len ||
        (token.len && memcmp(token.data, token2.data, token.len) != 0))
        abort();
    for (size_t i = 0; i < page.count; i++)
        if (again.lens[i] != page.lens[i] ||
            (page.lens[i] && memcmp(again.keys[i], page.keys[i], page.lens[i]) != 0))
            abort();
    ss_client_page_free(&again);
    ss_client_page_free(&page);
    ss_buf_free(&token);
    ss_buf_free(&token2);
    ss_buf_free(&canon);
}

/* The bytes before the first newline of [p, p+n) as a string (owned). */
static char *fz_line(const uint8_t *p, size_t n, size_t *used)
{
    const uint8_t *nl = memchr(p, '\n', n);
    size_t k = nl ? (size_t)(nl - p) : n;
    char *s = malloc(k + 1);
    if (s == NULL)
        abort();
    memcpy(s, p, k);
    s[k] = 0;
    *used = nl ? k + 1 : k;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    enum ss_answer_kind kind = (enum ss_answer_kind)((data[0] & 7) % 7 + 1);
    unsigned stat_choice = (data[0] >> 3) & 3;
    bool with_ts = data[1] & 1;
    const uint8_t *p = data + 2;
    size_t len = size - 2, used;
    char *stat = NULL, *ts = NULL;
    if (stat_choice == 1)
        stat = strdup("200");
    else if (stat_choice == 2)
        stat = strdup("400");
    else if (stat_choice == 3) {
        stat = fz_line(p, len, &used);
        p += used;
        len -= used;
    }
    if (stat_choice && stat == NULL)
        abort();
    if (with_ts) {
        ts = fz_line(p, len, &used);
        p += used;
        len -= used;
    }
    /* An exact-size copy, so that a read past the payload is seen. */
    uint8_t *payload = malloc(len ? len : 1);
    if (payload == NULL)
        abort();
    memcpy(payload, p, len);

    ss_client_result r;
    ss_answer_interpret(kind, stat, ts, payload, len, &r);
    bool ok200 = stat && strcmp(stat, "200") == 0;
    if (kind != SS_ANSWER_ADMIN && !ok200 && r.status != SS_E_STATUS)
        abort();
    if (r.status > 0 || (r.status < 0 && strcmp(ss_errname(r.status), "UNKNOWN") == 0))
        abort();
    if (r.value && (r.value_len > len || r.value[r.value_len] != 0 || !r.found))
        abort();
    if (r.value == NULL && r.value_len != 0)
        abort();
    if (r.status == SS_OK && kind == SS_ANSWER_DEL && (r.count < -1 || r.count > 1))
        abort();
    if (memchr(r.version, 0, sizeof r.version) == NULL)
        abort();
    if (kind != SS_ANSWER_ADMIN && ts && strncmp(r.version, ts, sizeof r.version - 1) != 0)
        abort();
    if ((kind == SS_ANSWER_ADMIN || !ts) && r.version[0] != 0)
        abort(); /* an administrative answer has no version */
    if (r.status == SS_OK && kind == SS_ANSWER_SCAN)
        fz_scan(r.value, r.value_len);
    ss_client_result_free(&r);
    fz_scan(payload, len);

    free(payload);
    free(stat);
    free(ts);
    return 0;
}
