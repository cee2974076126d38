/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* json.h - bytes written as JSON: strings and base64, for the tool's
 * --json output and the administrative answers. Keys and values are
 * bytes: a JSON string shows valid UTF-8 as it is and any other byte as
 * U+00XX; the base64 form is exact. */
#ifndef SS_JSON_H
#define SS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Append "..." (quotes included) to b. 0 or SS_E_NOMEM. */
int ss_json_string(ss_buf *b, const uint8_t *p, size_t n);
/* Append the bare base64 of p (standard alphabet, padded). */
int ss_json_base64(ss_buf *b, const uint8_t *p, size_t n);
/* Decode base64 text (standard alphabet, padded) into out (replaced).
 * 0, SS_E_SYNTAX (not base64), SS_E_NOMEM. */
int ss_json_base64_decode(ss_buf *out, const uint8_t *text, size_t n);
/* The text between a JSON string's quotes (n bytes, its escapes as they
 * are) into out (replaced, one byte to spare for a NUL): \" \\ \/ \b \f \n
 * \r \t and \uXXXX (a surrogate pair as one code point) as UTF-8. 0,
 * SS_E_SYNTAX (another escape, a lone surrogate, a control character
 * left unescaped), SS_E_NOMEM. */
int ss_json_unescape(ss_buf *out, const uint8_t *text, size_t n);

#endif
