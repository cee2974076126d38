/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* hex.c - bytes as hexadecimal text (hex.h). */
#include "hex.h"

#include <string.h>

#include "errors.h"

int ss_hex_append(ss_buf *b, const uint8_t *p, size_t n, bool upper)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    int rc = ss_buf_reserve(b, 2 * n);
    for (size_t i = 0; rc == SS_OK && i < n; i++) {
        b->data[b->len++] = (uint8_t)digits[p[i] >> 4];
        b->data[b->len++] = (uint8_t)digits[p[i] & 15];
    }
    return rc;
}

int ss_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ss_hex_decode(ss_buf *out, const char *text, size_t n)
{
    ss_buf_clear(out);
    if (n % 2)
        return SS_E_SYNTAX;
    /* One byte more, so that a caller may NUL-terminate. */
    int rc = ss_buf_reserve(out, n / 2 + 1);
    for (size_t i = 0; rc == SS_OK && i < n; i += 2) {
        int hi = ss_hex_digit(text[i]), lo = ss_hex_digit(text[i + 1]);
        if (hi < 0 || lo < 0) {
            ss_buf_clear(out);
            return SS_E_SYNTAX;
        }
        out->data[out->len++] = (uint8_t)(hi << 4 | lo);
    }
    return rc;
}

/* The text of one byte in a log line (hex.h), into one; its length. */
static size_t ss_hex__loggable_byte(uint8_t c, char one[4])
{
    static const char digits[] = "0123456789abcdef";
    if (c == '\\') {
        one[0] = one[1] = '\\';
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        one[0] = (char)c;
        return 1;
    }
    one[0] = '\\';
    one[1] = 'x';
    one[2] = digits[c >> 4];
    one[3] = digits[c & 15];
    return 4;
}

void ss_hex_loggable(const uint8_t *p, size_t n, char *out, size_t cap)
{
    char one[4];
    size_t total = 0;
    for (size_t i = 0; i < n && total < cap; i++)
        total += ss_hex__loggable_byte(p[i], one);
    /* All of it, or what fits beside "..." and the NUL. */
    size_t room = total < cap ? cap - 1 : cap - 4, o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = ss_hex__loggable_byte(p[i], one);
        if (o + len > room)
            break;
        memcpy(out + o, one, len);
        o += len;
    }
    if (total >= cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

int ss_hex_field_append(ss_buf *b, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    int rc = SS_OK;
    for (size_t i = 0; rc == SS_OK && i < n; i++) {
        uint8_t c = p[i];
        if (c > ' ' && c != '\\' && c != 0x7f) {
            rc = ss_buf_append(b, &c, 1);
            continue;
        }
        char esc[4] = {'\\', 'x', digits[c >> 4], digits[c & 15]};
        rc = ss_buf_append(b, esc, sizeof esc);
    }
    return rc;
}

int ss_hex_field_decode(ss_buf *out, const char *text, size_t n)
{
    ss_buf_clear(out);
    int rc = ss_buf_reserve(out, n + 1);
    for (size_t i = 0; rc == SS_OK && i < n; i++) {
        if (text[i] != '\\') {
            out->data[out->len++] = (uint8_t)text[i];
            continue;
        }
        if (n - i < 4 || text[i + 1] != 'x' || ss_hex_digit(text[i + 2]) < 0 || ss_hex_digit(text[i + 3]) < 0) {
            ss_buf_clear(out);
            return SS_E_SYNTAX;
        }
        out->data[out->len++] = (uint8_t)(ss_hex_digit(text[i + 2]) << 4 | ss_hex_digit(text[i + 3]));
        i += 3;
    }
    return rc;
}
