/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* json.c - bytes written as JSON (json.h). */
#include "json.h"

#include <stdbool.h>
#include <stdio.h>

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
