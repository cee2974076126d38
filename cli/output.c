/* output.c - printing results: plain text, JSON, escapes, errors. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../core/errors.h"
#include "cli.h"

void out_escaped(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\')
            fputs("\\\\", stdout);
        else if (p[i] > 0x20 && p[i] < 0x7f)
            putchar(p[i]);
        else
            printf("\\x%02x", p[i]);
    }
}

/* Length of the UTF-8 sequence at p (1..4), or 0 if it is not valid. */
static size_t utf8_len(const uint8_t *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] < 0xe0 ? 2 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

void out_json_string(const uint8_t *p, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n;) {
        uint8_t ch = p[i];
        size_t l = utf8_len(p + i, n - i);
        if (ch == '"' || ch == '\\') {
            printf("\\%c", ch);
            i++;
        } else if (ch < 0x20 || ch == 0x7f || l == 0) {
            /* Bytes that are not valid UTF-8 are shown as U+00XX; the
             * exact bytes are in the base64 field. */
            printf("\\u%04x", ch);
            i++;
        } else {
            fwrite(p + i, 1, l, stdout);
            i += l;
        }
    }
    putchar('"');
}

void out_base64(const uint8_t *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        putchar(t[v >> 18 & 63]);
        putchar(t[v >> 12 & 63]);
        putchar(i + 1 < n ? t[v >> 6 & 63] : '=');
        putchar(i + 2 < n ? t[v & 63] : '=');
    }
}

void out_verror(const char *fmt, va_list ap)
{
    fputs("statestore: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void out_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    out_verror(fmt, ap);
    va_end(ap);
}

int exit_for(int status)
{
    if (status == SS_OK)
        return SS_EXIT_OK;
    if (status == SS_E_TIMEOUT || status == SS_E_CONNECTION)
        return SS_EXIT_CONNECTION;
    if (status == SS_E_INVAL)
        return SS_EXIT_USAGE;
    return SS_EXIT_PROTOCOL;
}

void report_failure(const struct cli *cl, const char *what, int status, const ss_client_result *r)
{
    const char *text = r && r->error_text ? r->error_text : ss_strerror(status);
    if (cl->json) {
        printf("{\"error\":");
        out_json_string((const uint8_t *)text, strlen(text));
        printf(",\"code\":\"%s\"}\n", ss_errname(status));
    }
    if (status == SS_E_TIMEOUT)
        out_error("%s: no state store answered within %u ms: is the statestore plugin loaded in "
                  "the broker?", what, cl->conn.timeout_ms);
    else if (status == SS_E_QUOTA)
        out_error("%s: %s (a limit of the server: key or value length, number of keys, store "
                  "size or disk space; the broker's log names which)", what, text);
    else
        out_error("%s: %s", what, text);
}
