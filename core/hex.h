/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* hex.h - bytes as hexadecimal text: notification topics name client ids
 * and keys in upper-case hex (PROTOCOL.md), the administrative answers and
 * cursors in lower case. */
#ifndef SS_HEX_H
#define SS_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Append two hex digits per byte of p to b. 0 or SS_E_NOMEM. */
int ss_hex_append(ss_buf *b, const uint8_t *p, size_t n, bool upper);
/* Decode n hex digits (either case) into out (replaced). 0, SS_E_SYNTAX
 * (an odd count or a character that is not a hex digit), SS_E_NOMEM. */
int ss_hex_decode(ss_buf *out, const char *text, size_t n);
/* The value of one hex digit (either case), or -1. */
int ss_hex_digit(char c);
/* Bytes p (n of them) as a log line may show them, into out (cap bytes,
 * at least 8; always NUL-terminated): printable ASCII as itself, a
 * backslash doubled, any other byte as a backslash, 'x' and two hex
 * digits; cut after a whole byte with "..." when it does not fit. A key
 * is any bytes (a terminal's escapes, a newline that would forge a log
 * line): never shown as is. */
void ss_hex_loggable(const uint8_t *p, size_t n, char *out, size_t cap);
/* A field of a line of the administrative answers (a version, a fencing
 * token: HLC text whose node id may hold any byte but ':'), appended to
 * b so that it holds no space or line break: a space, a backslash, a
 * control byte or DEL as a backslash, 'x' and two lower-case hex digits,
 * any other byte as itself. 0 or SS_E_NOMEM. */
int ss_hex_field_append(ss_buf *b, const uint8_t *p, size_t n);
/* Such a field back into its bytes (out replaced, one byte to spare for
 * a NUL). 0, SS_E_SYNTAX (a backslash not followed by 'x' and two hex
 * digits), SS_E_NOMEM. */
int ss_hex_field_decode(ss_buf *out, const char *text, size_t n);

#endif
