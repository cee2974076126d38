/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* output.c - printing results: plain text, JSON, escapes, errors. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/json.h"
#include "cli.h"

/* Bytes as text: printable ASCII as it is (a space too when space is
 * true), a backslash doubled, anything else as \xHH, so that the bytes
 * can be read back from the text. */
static void out_text(const uint8_t *p, size_t n, bool space)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\\')
            fputs("\\\\", stdout);
        else if ((p[i] > 0x20 && p[i] < 0x7f) || (space && p[i] == ' '))
            putchar(p[i]);
        else
            printf("\\x%02x", p[i]);
    }
}

void out_escaped(const uint8_t *p, size_t n)
{
    out_text(p, n, false);
}

void out_line(const uint8_t *p, size_t n)
{
    out_text(p, n, true);
    putchar('\n');
}

/* Print what f appends to a buffer; out of memory prints nothing. */
static void out_via(int (*f)(ss_buf *, const uint8_t *, size_t), const uint8_t *p, size_t n)
{
    ss_buf b = SS_BUF_INIT;
    if (f(&b, p, n) == SS_OK)
        fwrite(b.data, 1, b.len, stdout);
    ss_buf_free(&b);
}

void out_json_string(const uint8_t *p, size_t n)
{
    out_via(ss_json_string, p, n);
}

void out_base64(const uint8_t *p, size_t n)
{
    out_via(ss_json_base64, p, n);
}

void out_verror(const char *fmt, va_list ap)
{
    fputs("statestore: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void out_note_terminal(const char *note)
{
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "%s\n", note);
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
