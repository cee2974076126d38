/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* output.c - printing results: plain text, JSON, escapes, errors. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/json.h"
#include "../core/pattern.h"
#include "cli.h"

/* Code points a terminal shows as nothing, or that move or break the text
 * around them, so that two keys that differ would look alike: C1
 * controls, the soft hyphen, invisible format characters (zero-width
 * characters, direction marks, embeddings, overrides and isolates), the
 * line and paragraph separators, the byte order mark, interlinear
 * annotation marks and tags. Sorted; each pair is a range. */
static const uint32_t hidden[][2] = {
    {0x80, 0x9f},     {0xad, 0xad},       {0x61c, 0x61c},     {0x180e, 0x180e},
    {0x200b, 0x200f}, {0x2028, 0x202e},   {0x2060, 0x2064},   {0x2066, 0x206f},
    {0xfeff, 0xfeff}, {0xfff9, 0xfffb},   {0xe0000, 0xe007f},
};

/* Unicode's spaces other than ' ': in a line of fields they would pass
 * for the separator. */
static const uint32_t spaces[][2] = {
    {0xa0, 0xa0}, {0x1680, 0x1680}, {0x2000, 0x200a}, {0x202f, 0x202f}, {0x205f, 0x205f},
    {0x3000, 0x3000},
};

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
    for (size_t i = 0; i < n; i++)
        if (cp >= r[i][0] && cp <= r[i][1])
            return true;
    return false;
}

/* Bytes as text: valid, printable UTF-8 as it is, a backslash doubled,
 * and the bytes of anything else as \xHH (controls, DEL, what hidden
 * lists, bytes that are not UTF-8, checked as strictly as SCAN's patterns
 * are), so that the bytes can be read back from the text and no two keys
 * print alike. Spaces (' ' and Unicode's) stay when space is true (a
 * line of its own); else they are escaped too (a field of a line). */
static void out_text(FILE *f, const uint8_t *p, size_t n, bool space)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = ss_utf8_decode(p + i, n - i, &cp);
        bool shown = len > 0 && cp >= 0x20 && cp != 0x7f &&
                     !in_ranges(hidden, sizeof hidden / sizeof hidden[0], cp) &&
                     (space || (cp != ' ' && !in_ranges(spaces, sizeof spaces / sizeof spaces[0], cp)));
        if (len == 0)
            len = 1; /* not UTF-8: this byte alone */
        if (cp == '\\' && shown)
            fputs("\\\\", f);
        else if (shown)
            fwrite(p + i, 1, len, f);
        else
            for (size_t k = 0; k < len; k++)
                fprintf(f, "\\x%02x", p[i + k]);
        i += len;
    }
}

void out_escaped(const uint8_t *p, size_t n)
{
    out_text(stdout, p, n, false);
}

void out_escaped_to(FILE *f, const uint8_t *p, size_t n)
{
    out_text(f, p, n, false);
}

void out_line(const uint8_t *p, size_t n)
{
    out_text(stdout, p, n, true);
    putchar('\n');
}

void out_quoted(const uint8_t *p, size_t n)
{
    putchar('"');
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t len = ss_utf8_decode(p + i, n - i, &cp);
        const char *esc = len == 1 ? (cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '\n' ? "\\n"
                                      : cp == '\r' ? "\\r" : cp == '\t' ? "\\t" : NULL)
                                   : NULL;
        if (esc) {
            fputs(esc, stdout);
            i++;
        } else {
            /* Anything else as out_line shows it: \xHH for what does not show. */
            out_text(stdout, p + i, len ? len : 1, true);
            i += len ? len : 1;
        }
    }
    putchar('"');
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

int out_flush_check(int rc)
{
    int err = fflush(stdout) == 0 ? 0 : errno;
    if (err == 0 && !ferror(stdout))
        return rc;
    /* SIGPIPE is ignored (libmosquitto ignores it): a closed pipe or a
     * full disk shows only here, and must not pass for success. A write
     * that failed earlier (another thread's) left no errno of its own. */
    out_error("cannot write standard output: %s",
              err ? strerror(err) : "a write failed (a closed pipe or a full disk?)");
    return rc == SS_EXIT_OK || rc == SS_EXIT_NOT_FOUND ? SS_EXIT_CONNECTION : rc;
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

void out_json_error(const char *text, int status)
{
    printf("{\"error\":");
    out_json_string((const uint8_t *)text, strlen(text));
    printf(",\"code\":\"%s\"}\n", ss_errname(status));
}

void cli_vfail(const struct cli *cl, int status, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    /* The text once, for both outputs: its length first, as a path or a
     * word of the user's may be long. */
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (text) {
        vsnprintf(text, (size_t)n + 1, fmt, again);
        if (cl->json)
            out_json_error(text, status);
        out_error("%s", text);
        free(text);
    } else {
        if (cl->json)
            out_json_error(ss_strerror(status), status);
        out_verror(fmt, again);
    }
    va_end(again);
}

void cli_fail(const struct cli *cl, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_vfail(cl, status, fmt, ap);
    va_end(ap);
}

void report_failure(const struct cli *cl, const char *what, int status, const ss_client_result *r)
{
    const char *text = r && r->error_text ? r->error_text : ss_strerror(status);
    if (cl->json)
        out_json_error(text, status);
    if (status == SS_E_TIMEOUT)
        out_error("%s: no state store answered within %u ms: is the statestore plugin loaded in "
                  "the broker?", what, cl->conn.timeout_ms);
    else if (status == SS_E_QUOTA)
        out_error("%s: %s (a limit of the server: key or value length, number of keys, store "
                  "size or disk space; the broker's log names which)", what, text);
    else
        out_error("%s: %s", what, text);
}
