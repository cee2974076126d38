/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* buf.h - a growable byte buffer.
 *
 * An ss_buf owns its memory (data is NULL until the first append). Appending
 * may move data, so pointers into a buffer are valid only until the next
 * append or ss_buf_free. A failed append leaves the buffer unchanged.
 */
#ifndef SS_BUF_H
#define SS_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct ss_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} ss_buf;

/* A borrowed run of bytes: never NUL-terminated, never owned. */
typedef struct ss_bytes {
    const uint8_t *data;
    size_t len;
} ss_bytes;

#define SS_BUF_INIT {NULL, 0, 0}

/* Make room for at least extra more bytes. 0 or SS_E_NOMEM. */
int ss_buf_reserve(ss_buf *b, size_t extra);
/* Append len bytes. 0 or SS_E_NOMEM. */
int ss_buf_append(ss_buf *b, const void *data, size_t len);
/* Append a NUL-terminated string without its NUL. 0 or SS_E_NOMEM. */
int ss_buf_append_str(ss_buf *b, const char *s);
/* Append the decimal form of a signed or unsigned integer. */
int ss_buf_append_i64(ss_buf *b, int64_t v);
int ss_buf_append_u64(ss_buf *b, uint64_t v);
/* Forget the contents, keep the memory. */
void ss_buf_clear(ss_buf *b);
/* Release the memory; the buffer is empty and reusable afterwards. */
void ss_buf_free(ss_buf *b);

/* Decimal digits of v into out (at least 20 bytes); returns the count. */
size_t ss_u64_format(uint64_t v, char out[20]);

#endif
