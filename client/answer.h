/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* answer.h - what a state store answer means for the call that asked:
 * the __stat and __ts properties and the payload turned into a result.
 * Pure, so that every answer shape is unit-tested without a broker.
 * Internal to the client library (not installed). */
#ifndef SS_ANSWER_H
#define SS_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"

/* The kind of call an answer is for. */
enum ss_answer_kind {
    SS_ANSWER_SET = 1,
    SS_ANSWER_GET,
    SS_ANSWER_DEL,
    SS_ANSWER_VDEL,
    SS_ANSWER_KEYNOTIFY,
    SS_ANSWER_ADMIN, /* statestore's administrative requests: text, no __stat */
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

#endif
