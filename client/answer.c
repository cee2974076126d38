/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* answer.c - what an answer means: the status, the payload and the
 * version of a state store answer turned into a call's result (answer.h).
 * Pure: no I/O, no client state. */
#include "answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/errors.h"

/* The payload, once __stat said 200. */
static void ss_answer__payload(enum ss_answer_kind kind, const uint8_t *payload, size_t len,
                               ss_client_result *r)
{
    ss_reply rep;
    if (ss_codec_decode_reply(payload, len, &rep) != SS_OK) {
        r->status = SS_E_PROTOCOL;
        return;
    }
    if (rep.kind == SS_REPLY_ERROR) {
        const char *t = (const char *)rep.str.data;
        size_t n = rep.str.len;
        if (n >= 4 && memcmp(t, "ERR ", 4) == 0) {
            t += 4;
            n -= 4;
        }
        r->error_text = strndup(t, n);
        r->status = ss_err_from_wire(t, n);
        return;
    }
    bool ok = false;
    switch (kind) {
    case SS_ANSWER_SET:
        ok = (rep.kind == SS_REPLY_SIMPLE && rep.str.len == 2 && memcmp(rep.str.data, "OK", 2) == 0) ||
             (rep.kind == SS_REPLY_INT && rep.num == -1);
        r->applied = rep.kind == SS_REPLY_SIMPLE;
        break;
    case SS_ANSWER_GET:
        ok = rep.kind == SS_REPLY_BULK || rep.kind == SS_REPLY_NIL;
        if (rep.kind == SS_REPLY_BULK) {
            r->found = true;
            r->value = malloc(rep.str.len + 1);
            if (r->value == NULL) {
                r->status = SS_E_NOMEM;
                return;
            }
            if (rep.str.len)
                memcpy(r->value, rep.str.data, rep.str.len);
            r->value[rep.str.len] = 0;
            r->value_len = rep.str.len;
        }
        break;
    case SS_ANSWER_DEL:
    case SS_ANSWER_VDEL:
        ok = rep.kind == SS_REPLY_INT && rep.num >= -1 && rep.num <= 1;
        r->count = rep.num;
        r->applied = rep.num == 1;
        break;
    case SS_ANSWER_KEYNOTIFY:
        ok = rep.kind == SS_REPLY_SIMPLE || (rep.kind == SS_REPLY_INT && rep.num == 0);
        r->applied = rep.kind == SS_REPLY_SIMPLE;
        break;
    case SS_ANSWER_ADMIN:
    case SS_ANSWER_SCAN:
        break; /* handled before: see ss_answer_interpret */
    }
    if (!ok)
        r->status = SS_E_PROTOCOL;
}

void ss_client_result_free(ss_client_result *r)
{
    if (r == NULL)
        return;
    free(r->value);
    free(r->error_text);
    memset(r, 0, sizeof *r);
}

/* The whole payload into r->value, NUL-terminated. */
static void ss_answer__keep(const uint8_t *payload, size_t len, ss_client_result *r)
{
    r->value = malloc(len + 1);
    if (r->value == NULL) {
        r->status = SS_E_NOMEM;
        return;
    }
    memcpy(r->value, payload, len);
    r->value[len] = 0;
    r->value_len = len;
    r->found = true;
}

/* An administrative answer: lines of text (plugin/admin.h); one that
 * starts with "error " is the server's refusal. */
static void ss_answer__admin(const uint8_t *payload, size_t len, ss_client_result *r)
{
    if (len >= 6 && memcmp(payload, "error ", 6) == 0) {
        size_t n = len - 6;
        while (n && (payload[6 + n - 1] == '\n'))
            n--;
        r->error_text = strndup((const char *)payload + 6, n);
        r->status = r->error_text ? SS_E_SERVER : SS_E_NOMEM;
        return;
    }
    ss_answer__keep(payload, len, r);
}

/* A header "<kind><digits>\r\n" at *pos: its number, or -1 when the bytes
 * are not one (no sign; 18 digits at most, so that it fits an int64_t). */
static int64_t ss_answer__header(const uint8_t *p, size_t len, size_t *pos, uint8_t kind)
{
    size_t i = *pos;
    if (i >= len || p[i] != kind)
        return -1;
    i++;
    int64_t n = 0;
    size_t digits = 0;
    while (i < len && p[i] >= '0' && p[i] <= '9' && digits < 18) {
        n = n * 10 + (p[i] - '0');
        i++;
        digits++;
    }
    if (digits == 0 || len - i < 2 || p[i] != '\r' || p[i + 1] != '\n')
        return -1;
    *pos = i + 2;
    return n;
}

/* A bulk string at *pos, borrowed into *out; false when it is not one. */
static bool ss_answer__bulk(const uint8_t *p, size_t len, size_t *pos, ss_bytes *out)
{
    int64_t n = ss_answer__header(p, len, pos, '$');
    if (n < 0 || (uint64_t)n > len - *pos || len - *pos - (size_t)n < 2 ||
        p[*pos + (size_t)n] != '\r' || p[*pos + (size_t)n + 1] != '\n')
        return false;
    out->data = p + *pos;
    out->len = (size_t)n;
    *pos += (size_t)n + 2;
    return true;
}

void ss_client_page_free(ss_client_page *page)
{
    if (page == NULL)
        return;
    for (size_t i = 0; i < page->count; i++)
        free(page->keys[i]);
    free(page->keys);
    free(page->lens);
    free(page->error_text);
    memset(page, 0, sizeof *page);
}

int ss_answer_scan(const uint8_t *payload, size_t len, ss_client_page *page, bool *has_token,
                   ss_buf *token)
{
    memset(page, 0, sizeof *page);
    *has_token = false;
    ss_buf_clear(token);
    size_t pos = 0;
    int64_t elements = ss_answer__header(payload, len, &pos, '*');
    int64_t count = ss_answer__header(payload, len, &pos, '*');
    /* Each key takes 6 bytes at least ("$0\r\n\r\n"): a count above what
     * the payload can hold is refused before anything is allocated. */
    if (elements < 1 || elements > 2 || count < 0 || (uint64_t)count > (len - pos) / 6)
        return SS_E_PROTOCOL;
    if (count > 0) {
        page->keys = calloc((size_t)count, sizeof *page->keys);
        page->lens = calloc((size_t)count, sizeof *page->lens);
        if (page->keys == NULL || page->lens == NULL) {
            ss_client_page_free(page);
            return SS_E_NOMEM;
        }
    }
    int rc = SS_OK;
    for (int64_t i = 0; i < count && rc == SS_OK; i++) {
        ss_bytes key;
        if (!ss_answer__bulk(payload, len, &pos, &key)) {
            rc = SS_E_PROTOCOL;
            break;
        }
        uint8_t *copy = malloc(key.len + 1);
        if (copy == NULL) {
            rc = SS_E_NOMEM;
            break;
        }
        if (key.len)
            memcpy(copy, key.data, key.len);
        copy[key.len] = 0;
        page->keys[page->count] = copy;
        page->lens[page->count] = key.len;
        page->count++;
    }
    ss_bytes tok;
    if (rc == SS_OK && elements == 2) {
        if (!ss_answer__bulk(payload, len, &pos, &tok))
            rc = SS_E_PROTOCOL;
        else if (ss_buf_append(token, tok.data, tok.len) != SS_OK)
            rc = SS_E_NOMEM;
        else
            *has_token = true;
    }
    if (rc == SS_OK && pos != len)
        rc = SS_E_PROTOCOL; /* trailing bytes */
    if (rc != SS_OK) {
        ss_client_page_free(page);
        ss_buf_clear(token);
        *has_token = false;
    }
    return rc;
}

void ss_answer_interpret(enum ss_answer_kind kind, const char *stat, const char *ts,
                         const uint8_t *payload, size_t len, ss_client_result *r)
{
    memset(r, 0, sizeof *r);
    if (kind == SS_ANSWER_ADMIN) {
        ss_answer__admin(payload, len, r);
        return;
    }
    /* A status other than 200 is a transport failure, not a state store
     * answer, whatever the payload says (as the SDKs read it). */
    if (stat == NULL || strcmp(stat, "200") != 0)
        r->status = SS_E_STATUS;
    else if (kind == SS_ANSWER_SCAN && (len == 0 || payload[0] != '-'))
        ss_answer__keep(payload, len, r); /* a page: ss_answer_scan reads it */
    else
        ss_answer__payload(kind, payload, len, r);
    if (ts)
        snprintf(r->version, sizeof r->version, "%s", ts);
}
