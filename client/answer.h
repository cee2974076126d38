/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* answer.h - what a state store answer means for the call that asked:
 * the __stat and __ts properties and the payload turned into a result.
 * Pure, so that every answer shape is unit-tested without a broker.
 * Internal to the client library (not installed). */
#ifndef SS_ANSWER_H
#define SS_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "client.h"

/* The kind of call an answer is for. */
enum ss_answer_kind {
    SS_ANSWER_SET = 1,
    SS_ANSWER_GET,
    SS_ANSWER_DEL,
    SS_ANSWER_VDEL,
    SS_ANSWER_KEYNOTIFY,
    SS_ANSWER_ADMIN, /* statestore's administrative requests: text, no __stat */
    SS_ANSWER_SCAN,  /* the payload is kept whole in value: see ss_answer_scan */
};

/* Fill *r (cleared first) from an answer: stat and ts are the __stat and
 * __ts user properties (NULL when absent), payload the RESP3 answer.
 * r->status: 0; SS_E_STATUS (no __stat, or not "200"); SS_E_PROTOCOL (a
 * payload that is not an answer of this kind); a protocol error answered
 * by the server (its text kept in r->error_text; SS_E_SERVER for a text
 * this client does not know); SS_E_NOMEM. The caller frees r with
 * ss_client_result_free. */
void ss_answer_interpret(enum ss_answer_kind kind, const char *stat, const char *ts,
                         const uint8_t *payload, size_t len, ss_client_result *r);

/* The keys and token of a SCAN answer's payload (PROTOCOL.md 9.2), read
 * as strictly as the SDKs read it: an array of one or two elements, the
 * array of keys (bulk strings) and an optional token (a bulk string,
 * possibly empty), nothing after. Fills *page (cleared first; freed with
 * ss_client_page_free) and, when the answer has a token, *has_token and
 * the token into *token (cleared first). 0, SS_E_PROTOCOL (anything
 * else; *page is then empty) or SS_E_NOMEM. */
int ss_answer_scan(const uint8_t *payload, size_t len, ss_client_page *page, bool *has_token,
                   ss_buf *token);

#endif
