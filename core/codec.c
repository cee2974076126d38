/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* codec.c - RESP3-style request, response and notification payloads.
 *
 * Invariant of every decoder: an index is compared with len before the byte
 * at it is read, so no input can make a read go past the buffer; a proper
 * prefix of something valid yields SS_E_INCOMPLETE.
 */
#include "codec.h"

#include <string.h>

#include "errors.h"

ss_codec_limits ss_codec_limits_default(void)
{
    ss_codec_limits l = {SS_REQUEST_MAX_ARGS, SS_REQUEST_MAX_SIZE_DEFAULT};
    return l;
}

/* Expect "\r\n" at *pos. */
static int ss_codec__crlf(const uint8_t *p, size_t len, size_t *pos)
{
    if (*pos >= len)
        return SS_E_INCOMPLETE;
    if (p[*pos] != '\r')
        return SS_E_SYNTAX;
    if (*pos + 1 >= len)
        return SS_E_INCOMPLETE;
    if (p[*pos + 1] != '\n')
        return SS_E_SYNTAX;
    *pos += 2;
    return SS_OK;
}

/* A decimal number "[-]digits\r\n" at *pos, at most SS_CODEC_MAX_DIGITS
 * digits so it always fits; a sign only when allow_neg. */
static int ss_codec__number(const uint8_t *p, size_t len, size_t *pos, int allow_neg, int64_t *out)
{
    size_t i = *pos;
    int neg = 0;
    if (i < len && p[i] == '-') {
        if (!allow_neg)
            return SS_E_SYNTAX;
        neg = 1;
        i++;
    }
    uint64_t v = 0;
    size_t digits = 0;
    while (i < len && p[i] >= '0' && p[i] <= '9') {
        if (++digits > SS_CODEC_MAX_DIGITS)
            return SS_E_SYNTAX;
        v = v * 10 + (uint64_t)(p[i] - '0');
        i++;
    }
    if (i >= len)
        return SS_E_INCOMPLETE;
    if (digits == 0)
        return SS_E_SYNTAX;
    int rc = ss_codec__crlf(p, len, &i);
    if (rc != SS_OK)
        return rc;
    /* 19 digits stay below 10^19 < 2^63 * 1.09, so check the int64 range. */
    if (v > (uint64_t)INT64_MAX)
        return SS_E_SYNTAX;
    *out = neg ? -(int64_t)v : (int64_t)v;
    *pos = i;
    return SS_OK;
}

int ss_codec_decode_request(const uint8_t *buf, size_t len, const ss_codec_limits *lim,
                            ss_request *req, size_t *consumed)
{
    ss_codec_limits dl = ss_codec_limits_default();
    if (lim == NULL)
        lim = &dl;
    size_t max_args = lim->max_args;
    if (max_args == 0 || max_args > SS_REQUEST_MAX_ARGS)
        max_args = SS_REQUEST_MAX_ARGS;

    size_t pos = 0;
    if (len == 0)
        return SS_E_INCOMPLETE;
    if (buf[0] != '*')
        return SS_E_SYNTAX;
    pos = 1;
    int64_t argc;
    int rc = ss_codec__number(buf, len, &pos, 0, &argc);
    if (rc != SS_OK)
        return rc;
    if (argc < 1 || (uint64_t)argc > max_args)
        return SS_E_SYNTAX;

    for (size_t i = 0; i < (size_t)argc; i++) {
        if (pos >= len)
            return SS_E_INCOMPLETE;
        if (buf[pos] != '$')
            return SS_E_SYNTAX;
        pos++;
        int64_t n;
        rc = ss_codec__number(buf, len, &pos, 0, &n);
        if (rc != SS_OK)
            return rc;
        if (pos > lim->max_size || (uint64_t)n > lim->max_size - pos)
            return SS_E_SYNTAX;
        if ((uint64_t)n > len - pos)
            return SS_E_INCOMPLETE;
        req->argv[i].data = buf + pos;
        req->argv[i].len = (size_t)n;
        pos += (size_t)n;
        rc = ss_codec__crlf(buf, len, &pos);
        if (rc != SS_OK)
            return rc;
    }
    req->argc = (size_t)argc;
    *consumed = pos;
    return SS_OK;
}

/* Append several pieces or none: the buffer is restored on failure. */
static int ss_codec__put(ss_buf *b, size_t mark, int rc)
{
    if (rc != SS_OK)
        b->len = mark;
    return rc;
}

int ss_codec_put_ok(ss_buf *b)
{
    return ss_buf_append(b, "+OK\r\n", 5);
}

int ss_codec_put_int(ss_buf *b, int64_t v)
{
    size_t mark = b->len;
    int rc = ss_buf_append(b, ":", 1);
    if (rc == SS_OK)
        rc = ss_buf_append_i64(b, v);
    if (rc == SS_OK)
        rc = ss_buf_append(b, "\r\n", 2);
    return ss_codec__put(b, mark, rc);
}

int ss_codec_put_bulk(ss_buf *b, const uint8_t *p, size_t n)
{
    size_t mark = b->len;
    int rc = ss_buf_reserve(b, n + 24);
    if (rc == SS_OK)
        rc = ss_buf_append(b, "$", 1);
    if (rc == SS_OK)
        rc = ss_buf_append_u64(b, n);
    if (rc == SS_OK)
        rc = ss_buf_append(b, "\r\n", 2);
    if (rc == SS_OK)
        rc = ss_buf_append(b, p, n);
    if (rc == SS_OK)
        rc = ss_buf_append(b, "\r\n", 2);
    return ss_codec__put(b, mark, rc);
}

int ss_codec_put_nil(ss_buf *b)
{
    return ss_buf_append(b, "$-1\r\n", 5);
}

int ss_codec_put_error(ss_buf *b, int code)
{
    size_t mark = b->len;
    int rc = ss_buf_append(b, "-ERR ", 5);
    if (rc == SS_OK)
        rc = ss_buf_append_str(b, ss_strerror(code));
    if (rc == SS_OK)
        rc = ss_buf_append(b, "\r\n", 2);
    return ss_codec__put(b, mark, rc);
}

int ss_codec_put_notify_set(ss_buf *b, const uint8_t *value, size_t n)
{
    static const char head[] = "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n";
    size_t mark = b->len;
    int rc = ss_buf_append(b, head, sizeof head - 1);
    if (rc == SS_OK)
        rc = ss_codec_put_bulk(b, value, n);
    return ss_codec__put(b, mark, rc);
}

int ss_codec_put_notify_delete(ss_buf *b)
{
    static const char msg[] = "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n";
    return ss_buf_append(b, msg, sizeof msg - 1);
}

int ss_codec_put_request(ss_buf *b, size_t argc, const ss_bytes *argv)
{
    size_t mark = b->len;
    int rc = ss_buf_append(b, "*", 1);
    if (rc == SS_OK)
        rc = ss_buf_append_u64(b, argc);
    if (rc == SS_OK)
        rc = ss_buf_append(b, "\r\n", 2);
    for (size_t i = 0; i < argc && rc == SS_OK; i++)
        rc = ss_codec_put_bulk(b, argv[i].data, argv[i].len);
    return ss_codec__put(b, mark, rc);
}

/* A line "<text>\r\n" at *pos with no CR or LF inside. */
static int ss_codec__line(const uint8_t *p, size_t len, size_t *pos, ss_bytes *out)
{
    size_t i = *pos;
    while (i < len && p[i] != '\r' && p[i] != '\n')
        i++;
    out->data = p + *pos;
    out->len = i - *pos;
    int rc = ss_codec__crlf(p, len, &i);
    if (rc == SS_OK)
        *pos = i;
    return rc;
}

/* A bulk "$<n>\r\n<bytes>\r\n" or "$-1\r\n" (nil: *is_nil set). */
static int ss_codec__bulk(const uint8_t *p, size_t len, size_t *pos, ss_bytes *out, int *is_nil)
{
    size_t i = *pos;
    if (i >= len)
        return SS_E_INCOMPLETE;
    if (p[i] != '$')
        return SS_E_SYNTAX;
    i++;
    int64_t n;
    int rc = ss_codec__number(p, len, &i, is_nil != NULL, &n);
    if (rc != SS_OK)
        return rc;
    if (n < 0) {
        if (n != -1)
            return SS_E_SYNTAX;
        *is_nil = 1;
        *pos = i;
        return SS_OK;
    }
    if ((uint64_t)n > len - i)
        return SS_E_INCOMPLETE;
    out->data = p + i;
    out->len = (size_t)n;
    i += (size_t)n;
    rc = ss_codec__crlf(p, len, &i);
    if (rc != SS_OK)
        return rc;
    if (is_nil)
        *is_nil = 0;
    *pos = i;
    return SS_OK;
}

int ss_codec_decode_reply(const uint8_t *buf, size_t len, ss_reply *out)
{
    if (len == 0)
        return SS_E_INCOMPLETE;
    size_t pos = 1;
    int rc;
    memset(out, 0, sizeof *out);
    switch (buf[0]) {
    case '+':
        out->kind = SS_REPLY_SIMPLE;
        rc = ss_codec__line(buf, len, &pos, &out->str);
        break;
    case '-':
        out->kind = SS_REPLY_ERROR;
        rc = ss_codec__line(buf, len, &pos, &out->str);
        break;
    case ':':
        out->kind = SS_REPLY_INT;
        rc = ss_codec__number(buf, len, &pos, 1, &out->num);
        break;
    case '$': {
        int nil = 0;
        pos = 0;
        rc = ss_codec__bulk(buf, len, &pos, &out->str, &nil);
        out->kind = nil ? SS_REPLY_NIL : SS_REPLY_BULK;
        break;
    }
    default:
        return SS_E_SYNTAX;
    }
    if (rc != SS_OK)
        return rc;
    return pos == len ? SS_OK : SS_E_SYNTAX;
}

static int ss_codec__bulk_is(const uint8_t *p, size_t len, size_t *pos, const char *want)
{
    ss_bytes s;
    int rc = ss_codec__bulk(p, len, pos, &s, NULL);
    if (rc != SS_OK)
        return rc;
    size_t n = strlen(want);
    return (s.len == n && memcmp(s.data, want, n) == 0) ? SS_OK : SS_E_SYNTAX;
}

int ss_codec_decode_notify(const uint8_t *buf, size_t len, enum ss_notify_kind *kind,
                           ss_bytes *value)
{
    if (len == 0)
        return SS_E_INCOMPLETE;
    if (buf[0] != '*')
        return SS_E_SYNTAX;
    size_t pos = 1;
    int64_t n;
    int rc = ss_codec__number(buf, len, &pos, 0, &n);
    if (rc != SS_OK)
        return rc;
    if (n != 2 && n != 4)
        return SS_E_SYNTAX;
    rc = ss_codec__bulk_is(buf, len, &pos, "NOTIFY");
    if (rc == SS_OK)
        rc = ss_codec__bulk_is(buf, len, &pos, n == 2 ? "DELETE" : "SET");
    if (rc == SS_OK && n == 4) {
        rc = ss_codec__bulk_is(buf, len, &pos, "VALUE");
        if (rc == SS_OK)
            rc = ss_codec__bulk(buf, len, &pos, value, NULL);
    }
    if (rc != SS_OK)
        return rc;
    if (pos != len)
        return SS_E_SYNTAX;
    *kind = n == 2 ? SS_NOTIFY_DELETE : SS_NOTIFY_SET;
    if (n == 2) {
        value->data = NULL;
        value->len = 0;
    }
    return SS_OK;
}
