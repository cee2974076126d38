/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* errors.h - the one list of status codes of the statestore core.
 *
 * Every function of the core returns 0 on success or a negative code from
 * SS_ERRORS. The first twelve are the protocol's error answers: their text is
 * sent on the wire byte for byte as "-ERR <text>\r\n" (PROTOCOL.md section 3)
 * and must never be reused for another meaning. Those after them with
 * wire 1 are texts of statestore's own (an unavailable store, SCAN's
 * refusals: PROTOCOL.md 9.3), under the same rule; the others are local
 * failures that never reach the wire as such.
 *
 * What a client of the library (client.h, lease.h) can receive:
 *   - the server's answers: every code whose wire flag is 1 (TS_FUTURE ..
 *     KEY_EMPTY, UNAVAILABLE, the PATTERN_* and TOKEN_INVALID of SCAN), and
 *     SERVER for a text it does not know;
 *   - its own failures: TIMEOUT, CONNECTION, PROTOCOL, STATUS, IN_CALLBACK,
 *     FT_MALFORMED, RANDOM, REFUSED, NOMEM, INVAL.
 * The others (INCOMPLETE, IO, CORRUPT, BUSY, NOTFOUND, LIMIT, PENDING,
 * CONFLICT) are internal to the server's core and backends: a client never
 * sees them.
 */
#ifndef SS_ERRORS_H
#define SS_ERRORS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, wire, text): wire is 1 when text is a protocol error text. */
#define SS_ERRORS(X)                                                                \
    X(TS_FUTURE, -1, 1,                                                             \
      "the request timestamp is too far in the future; ensure that the client "     \
      "and broker system clocks are synchronized")                                  \
    X(FT_REQUIRED, -2, 1, "a fencing token is required for this request")          \
    X(FT_FUTURE, -3, 1,                                                             \
      "the request fencing token timestamp is too far in the future; ensure that " \
      "the client and broker system clocks are synchronized")                      \
    X(FT_LOWER, -4, 1,                                                              \
      "the request fencing token is a lower version than the fencing token "       \
      "protecting the resource")                                                    \
    X(QUOTA, -5, 1, "the quota has been exceeded")                                 \
    X(SYNTAX, -6, 1, "syntax error")                                               \
    X(NOT_AUTHORIZED, -7, 1, "not authorized")                                     \
    X(UNKNOWN_COMMAND, -8, 1, "unknown command")                                   \
    X(ARITY, -9, 1, "wrong number of arguments")                                   \
    X(TS_MISSING, -10, 1, "missing timestamp")                                     \
    X(TS_MALFORMED, -11, 1, "malformed timestamp")                                 \
    X(KEY_EMPTY, -12, 1, "the key length is zero")                                 \
    X(INCOMPLETE, -20, 0, "more bytes are needed")                                 \
    X(NOMEM, -21, 0, "out of memory")                                              \
    X(IO, -22, 0, "storage error")                                                 \
    X(INVAL, -23, 0, "invalid argument")                                           \
    X(CORRUPT, -24, 0, "stored record is corrupt")                                 \
    X(BUSY, -25, 0, "a batch is not open or is already open")                      \
    X(NOTFOUND, -26, 0, "not found")                                               \
    X(LIMIT, -27, 0, "a configured limit was reached")                            \
    X(PENDING, -28, 0, "a read is under way: run the request again when it is done") \
    X(CONFLICT, -29, 0, "the key changed after the request was decided: run it again") \
    X(TIMEOUT, -30, 0, "timed out waiting for the answer")                        \
    X(CONNECTION, -31, 0, "not connected to the broker")                          \
    X(PROTOCOL, -32, 0, "malformed answer from the server")                       \
    X(SERVER, -33, 0, "the server answered with an error this client does not know") \
    X(STATUS, -34, 0, "the server refused the request (status other than 200)")  \
    X(UNAVAILABLE, -35, 1, "the store is unavailable")                            \
    X(PATTERN_EMPTY, -36, 1, "the pattern is empty")                               \
    X(PATTERN_LONG, -37, 1, "the pattern is longer than 1024 bytes")              \
    X(PATTERN_UTF8, -38, 1, "the pattern is not UTF-8")                            \
    X(PATTERN_BRACKET, -39, 1, "invalid pattern: a '[' is not closed")            \
    X(PATTERN_STARS, -40, 1,                                                        \
      "invalid pattern: '**' must be a whole path segment and '***' is not a "    \
      "wildcard")                                                                   \
    X(TOKEN_INVALID, -41, 1, "invalid continuation token")                        \
    X(IN_CALLBACK, -42, 0,                                                          \
      "a blocking call on the thread that runs this client's callbacks (it would "  \
      "wait for the answers that thread delivers)")                                 \
    X(FT_MALFORMED, -43, 0, "the fencing token is not a version (an HLC timestamp)") \
    X(RANDOM, -44, 0, "the system gave no random bytes")                          \
    X(REFUSED, -45, 0, "the broker refused the request")                           \
    X(CANCELLED, -46, 0, "the wait was cancelled")

enum ss_status {
    SS_OK = 0,
#define SS_ERR_ENUM_(name, value, wire, text) SS_E_##name = (value),
    SS_ERRORS(SS_ERR_ENUM_)
#undef SS_ERR_ENUM_
};

/* Text for a status code; a static string, never NULL ("unknown error" for
 * codes not in the list). */
const char *ss_strerror(int code);

/* Name of a status code without prefix ("SYNTAX"), static, never NULL. */
const char *ss_errname(int code);

/* True when code is one of the protocol's error answers. */
bool ss_err_is_wire(int code);

/* The code of an error answer's text (the bytes after "-ERR "), or
 * SS_E_SERVER for a text not in the list. */
int ss_err_from_wire(const char *text, size_t n);

#ifdef __cplusplus
}
#endif

#endif
