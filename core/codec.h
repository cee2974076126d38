/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* codec.h - the state store's RESP3-style payloads, bytes in and bytes out.
 *
 * No I/O and no allocation in the decoders: they read only inside the given
 * buffer, bound every dimension, and return borrowed slices that point into
 * that buffer (valid as long as the caller keeps it). "More bytes needed" is
 * the normal result SS_E_INCOMPLETE, never confused with SS_E_SYNTAX.
 * Encoders append to a caller-owned ss_buf and are byte-exact with
 * PROTOCOL.md sections 2, 3 and 6.
 */
#ifndef SS_CODEC_H
#define SS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Hard upper bound on the arguments of one request (SET uses at most 6). */
#define SS_REQUEST_MAX_ARGS 16
/* Default bound on the whole encoded request: MQTT's largest payload. */
#define SS_REQUEST_MAX_SIZE_DEFAULT ((size_t)268435455)
/* Digits accepted in one length or count; more is a syntax error. */
#define SS_CODEC_MAX_DIGITS 19

typedef struct ss_codec_limits {
    size_t max_args; /* 1..SS_REQUEST_MAX_ARGS */
    size_t max_size; /* total encoded bytes; a declared length above it is SYNTAX */
} ss_codec_limits;

/* A decoded request: argv[i] borrow from the decoded buffer. */
typedef struct ss_request {
    size_t argc;
    ss_bytes argv[SS_REQUEST_MAX_ARGS];
} ss_request;

/* Default limits: SS_REQUEST_MAX_ARGS arguments, SS_REQUEST_MAX_SIZE_DEFAULT bytes. */
ss_codec_limits ss_codec_limits_default(void);

/* Decode one request "*<n>\r\n" followed by n bulk strings "$<len>\r\n<bytes>\r\n"
 * from the start of buf. lim may be NULL for the defaults.
 * Returns 0 and sets *req and *consumed (bytes used, trailing bytes are not
 * looked at); SS_E_INCOMPLETE when buf is a proper prefix of a request that
 * could still be valid; SS_E_SYNTAX for anything else (no arguments, not an
 * array, a nested array or other non-bulk element, a null bulk, a non-digit,
 * a missing CR LF, a count above lim->max_args, a length above lim->max_size). */
int ss_codec_decode_request(const uint8_t *buf, size_t len, const ss_codec_limits *lim,
                            ss_request *req, size_t *consumed);

/* Response and notification encoders. Each returns 0 or SS_E_NOMEM, and on
 * failure leaves b as it was. */
int ss_codec_put_ok(ss_buf *b);                                /* +OK\r\n */
int ss_codec_put_int(ss_buf *b, int64_t v);                    /* :<v>\r\n */
int ss_codec_put_bulk(ss_buf *b, const uint8_t *p, size_t n);  /* $<n>\r\n<p>\r\n */
int ss_codec_put_nil(ss_buf *b);                               /* $-1\r\n */
int ss_codec_put_error(ss_buf *b, int code);                   /* -ERR <text>\r\n */
int ss_codec_put_notify_set(ss_buf *b, const uint8_t *value, size_t n);
int ss_codec_put_notify_delete(ss_buf *b);
/* A request array of argc bulk strings (used by clients and tests). */
int ss_codec_put_request(ss_buf *b, size_t argc, const ss_bytes *argv);

/* What a response payload holds. */
enum ss_reply_kind {
    SS_REPLY_SIMPLE = 1, /* +<text>: text in str */
    SS_REPLY_INT,        /* :<n>: n in num */
    SS_REPLY_BULK,       /* $<n>: bytes in str */
    SS_REPLY_NIL,        /* $-1 */
    SS_REPLY_ERROR,      /* -<text>: text after '-' in str (e.g. "ERR syntax error") */
};

typedef struct ss_reply {
    enum ss_reply_kind kind;
    int64_t num;
    ss_bytes str; /* borrowed from the decoded buffer */
} ss_reply;

/* Decode one whole response payload; the buffer must hold exactly one reply.
 * 0, SS_E_INCOMPLETE (proper prefix) or SS_E_SYNTAX. */
int ss_codec_decode_reply(const uint8_t *buf, size_t len, ss_reply *out);

/* What a notification payload holds. */
enum ss_notify_kind { SS_NOTIFY_SET = 1, SS_NOTIFY_DELETE };

/* Decode a whole notification payload; for SET, *value borrows the new value.
 * 0, SS_E_INCOMPLETE or SS_E_SYNTAX. */
int ss_codec_decode_notify(const uint8_t *buf, size_t len, enum ss_notify_kind *kind,
                           ss_bytes *value);

#endif
