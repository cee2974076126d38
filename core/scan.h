/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* scan.h - SCAN: one page of keys through the storage interface, its
 * continuation token and its answer (PROTOCOL.md §9).
 *
 * A page looks at up to SS_SCAN_EXAMINE keys after the token's cursor, in
 * the backend's order, and at most SS_SCAN_WORK pattern matching steps;
 * a listing starts at the first key with the pattern's literal prefix
 * and ends once past the last (backend.h: scan), so that the keys before
 * and after those cost it nothing;
 * its answer holds about max_answer bytes at most. Expired keys, keys that
 * do not match and keys the caller may not read are passed over. When keys
 * may follow, the answer ends with a token naming where the page stopped.
 * A page that would outgrow its bytes ends before the key that does not
 * fit; a key whose answer alone does not fit max_answer is refused
 * (SS_E_QUOTA), as the client could never be sent it.
 *
 * The token (format 1): one byte 0x01, an 8-byte tag, then the cursor,
 * encrypted. tag = SipHash-2-4 under the backend's 16-byte token key of
 * ('T', 0x01, the pattern's length as 4 bytes big endian, the pattern,
 * the cursor); the cursor is XORed with the stream of SipHash-2-4 under
 * the same key of ('K', the tag, a 4-byte block count): the first byte
 * keeps the two uses apart. A token is bound to its
 * pattern and to the data it was made on (their token key); anything else
 * is "invalid continuation token", and a client cannot read the cursor.
 */
#ifndef SS_SCAN_H
#define SS_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acl.h"
#include "backend.h"
#include "buf.h"

/* Keys looked at per page at most. */
#define SS_SCAN_EXAMINE 1000u
/* Pattern matching steps per page at most (about 2 ms). */
#define SS_SCAN_WORK 4000000u
/* A page's answer bytes when it holds more than one key: room for
 * hundreds of keys, small for any client. */
#define SS_SCAN_ANSWER_DEFAULT 16384u
#define SS_SCAN_TOKEN_VERSION 1u
/* Version byte and tag. */
#define SS_SCAN_TOKEN_HEAD 9u
/* A backend's SCAN cursor is at most its key's length and this many bytes
 * (etcd: the key, a span and a mark; LMDB: the key, or 490 bytes). */
#define SS_SCAN_CURSOR_EXTRA 13u

typedef bool (*ss_scan_may_read_fn)(void *ctx, void *caller, ss_bytes key);

typedef struct ss_scan_request {
    ss_bytes pattern;
    ss_bytes token;      /* data NULL: the first page */
    uint64_t now_ms;     /* keys whose deadline is <= now_ms are passed over */
    size_t max_answer;   /* the answer's bytes at most (0: no bound); a page of
                            more than one key takes page_bytes at most */
    size_t page_bytes;   /* 0: SS_SCAN_ANSWER_DEFAULT */
    ss_scan_may_read_fn may_read; /* NULL: every key */
    void *may_read_ctx;
    void *caller;
} ss_scan_request;

/* The longest key a page of its own can list in an answer of at most
 * max_answer bytes, its token naming it: a longer key could be stored but
 * never listed, and every listing would stop at it. */
size_t ss_scan_longest_key(size_t max_answer);

/* Run one page and append its answer to response. 0; a wire error (the
 * pattern's, SS_E_TOKEN_INVALID); SS_E_PENDING (the backend is reading
 * the page: run again, nothing was appended); or a failure (SS_E_NOMEM,
 * the backend's). On an error nothing was appended. */
int ss_scan_page(ss_backend *be, const ss_scan_request *q, ss_buf *response);

/* The token for cursor under key (16 bytes), appended to out. */
int ss_scan_token_encode(const uint8_t key[16], ss_bytes pattern, ss_bytes cursor, ss_buf *out);
/* The cursor of token into *cursor (cleared first): 0, or
 * SS_E_TOKEN_INVALID (wrong version, length, pattern or key, altered). */
int ss_scan_token_decode(const uint8_t key[16], ss_bytes pattern, ss_bytes token, ss_buf *cursor);

#endif
