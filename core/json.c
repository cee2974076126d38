/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* json.c - bytes written as JSON (json.h). */
#include "json.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"
#include "pattern.h"

/* Length of the UTF-8 sequence at p (1..4), or 0 if it is not valid:
 * checked as strictly as ss_utf8_decode (no overlong forms, no
 * surrogates, nothing above U+10FFFF, no lead byte 0xF5..0xFF), so that
 * the JSON written is always valid UTF-8. */
static size_t ss_json__utf8_len(const uint8_t *p, size_t n)
{
    uint32_t cp;
    return ss_utf8_decode(p, n, &cp);
}

int ss_json_string(ss_buf *b, const uint8_t *p, size_t n)
{
    int rc = ss_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n && rc == SS_OK;) {
        uint8_t ch = p[i];
        size_t l = ss_json__utf8_len(p + i, n - i);
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            rc = ss_buf_append(b, esc, 2);
            i++;
        } else if (ch < 0x20 || ch == 0x7f || l == 0) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            rc = ss_buf_append(b, esc, 6);
            i++;
        } else {
            rc = ss_buf_append(b, p + i, l);
            i += l;
        }
    }
    return rc == SS_OK ? ss_buf_append(b, "\"", 1) : rc;
}

int ss_json_base64(ss_buf *b, const uint8_t *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int rc = ss_buf_reserve(b, (n + 2) / 3 * 4);
    if (rc != SS_OK)
        return rc;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        char q[4] = {t[v >> 18 & 63], t[v >> 12 & 63], i + 1 < n ? t[v >> 6 & 63] : '=',
                     i + 2 < n ? t[v & 63] : '='};
        ss_buf_append(b, q, 4); /* reserved above */
    }
    return SS_OK;
}

static int ss_json__b64_value(uint8_t c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

int ss_json_base64_decode(ss_buf *out, const uint8_t *text, size_t n)
{
    ss_buf_clear(out);
    if (n % 4)
        return SS_E_SYNTAX;
    int rc = ss_buf_reserve(out, n / 4 * 3);
    if (rc != SS_OK)
        return rc;
    for (size_t i = 0; i < n; i += 4) {
        bool last = i + 4 == n;
        int v[4];
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            uint8_t c = text[i + (size_t)j];
            if (c == '=' && last && j >= 2) {
                v[j] = 0;
                pad++;
                continue;
            }
            if (pad)
                return SS_E_SYNTAX; /* data after padding */
            if ((v[j] = ss_json__b64_value(c)) < 0)
                return SS_E_SYNTAX;
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        uint8_t bytes[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
        ss_buf_append(out, bytes, (size_t)(3 - pad)); /* reserved above */
    }
    return SS_OK;
}

/* Four hex digits at p (n bytes left) into *u; false if they are not. */
static bool ss_json__hex4(const uint8_t *p, size_t n, uint32_t *u)
{
    if (n < 4)
        return false;
    *u = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return false;
        *u = *u << 4 | (uint32_t)d;
    }
    return true;
}

static size_t ss_json__utf8_put(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xc0 | cp >> 6);
        out[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xe0 | cp >> 12);
        out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (uint8_t)(0xf0 | cp >> 18);
    out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

int ss_json_unescape(ss_buf *out, const uint8_t *text, size_t n)
{
    ss_buf_clear(out);
    int rc = ss_buf_reserve(out, n + 1); /* never longer than the text */
    for (size_t i = 0; rc == SS_OK && i < n;) {
        uint8_t c = text[i];
        if (c < 0x20) {
            rc = SS_E_SYNTAX;
            break;
        }
        if (c != '\\') {
            out->data[out->len++] = c;
            i++;
            continue;
        }
        if (i + 1 >= n) {
            rc = SS_E_SYNTAX;
            break;
        }
        const char *simple = "\"\"\\\\//b\bf\fn\nr\rt\t";
        const char *hit = text[i + 1] ? strchr(simple, text[i + 1]) : NULL;
        if (hit && (hit - simple) % 2 == 0) {
            out->data[out->len++] = (uint8_t)hit[1];
            i += 2;
            continue;
        }
        uint32_t cp, lo;
        if (text[i + 1] != 'u' || !ss_json__hex4(text + i + 2, n - i - 2, &cp)) {
            rc = SS_E_SYNTAX;
            break;
        }
        i += 6;
        if (cp >= 0xdc00 && cp <= 0xdfff) {
            rc = SS_E_SYNTAX;
            break;
        }
        if (cp >= 0xd800 && cp <= 0xdbff) { /* a high surrogate: its low one follows */
            if (n - i < 6 || text[i] != '\\' || text[i + 1] != 'u' || !ss_json__hex4(text + i + 2, n - i - 2, &lo) ||
                lo < 0xdc00 || lo > 0xdfff) {
                rc = SS_E_SYNTAX;
                break;
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            i += 6;
        }
        /* \uXXXX takes 6 bytes of text, its UTF-8 at most 3; a pair 12 and 4. */
        out->len += ss_json__utf8_put(cp, out->data + out->len);
    }
    if (rc != SS_OK)
        ss_buf_clear(out);
    return rc;
}
