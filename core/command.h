/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* command.h - turn a decoded request into a checked command.
 *
 * One table holds each verb with its arity and its parser. Verbs and options
 * are matched case-insensitively; SET options come in any order. The result
 * borrows its key and value from the request (and so from the payload).
 */
#ifndef SS_COMMAND_H
#define SS_COMMAND_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "codec.h"

enum ss_cmd_type {
    SS_CMD_SET = 1,
    SS_CMD_GET,
    SS_CMD_DEL,
    SS_CMD_VDEL,
    SS_CMD_KEYNOTIFY,
    SS_CMD_SCAN,
};

enum ss_set_cond {
    SS_COND_NONE = 0,
    SS_COND_NX,  /* only if absent */
    SS_COND_NEX, /* only if absent or equal to the new value */
};

typedef struct ss_command {
    enum ss_cmd_type type;
    ss_bytes key;
    ss_bytes value;        /* SET, VDEL */
    enum ss_set_cond cond; /* SET */
    uint64_t px;           /* SET: expiry in ms, 0 when absent */
    bool stop;             /* KEYNOTIFY STOP */
    ss_bytes token;        /* SCAN: the continuation token; data NULL on a first page */
} ss_command;

/* What the rest of the server needs to know of a verb (command.c's
 * table holds them beside its name, arity and parser). */
typedef struct ss_command_traits {
    bool writes;     /* authorization asks for write access (else read) */
    bool fenced;     /* takes a fencing token (__ft) */
    bool needs_ts;   /* a request without __ts is refused */
    bool remembered; /* a resend within the window gets the first answer */
    bool held;       /* its answer waits for its batch's commit, and becomes
                        an error when that fails; a verb whose effect is not
                        stored (KEYNOTIFY) is answered whatever the commit */
} ss_command_traits;

/* The traits of a verb (an enum ss_cmd_type); any other value, such as 0
 * for a request that did not parse, gets those of an unparsed request
 * (nothing needed, its error answer remembered). Static, never NULL. */
const ss_command_traits *ss_command_traits_of(int type);

/* Whether a resend of a request gets its first answer: its verb's
 * remembered trait, but a KEYNOTIFY that registers runs again. MQTT
 * resends a request only after a reconnect, and the disconnect dropped
 * the client's registrations: the first answer would leave the client
 * believing it observes a key it is told nothing of, and registering
 * again is harmless. type as for ss_command_traits_of; c, the parsed
 * request, is read only for a KEYNOTIFY. */
bool ss_command_remembered(int type, const ss_command *c);

/* Check req and fill *cmd. Returns 0, or the protocol error to answer:
 * SS_E_UNKNOWN_COMMAND, SS_E_ARITY, SS_E_KEY_EMPTY (SCAN: SS_E_PATTERN_EMPTY;
 * its pattern is in key) or SS_E_SYNTAX (unknown
 * or repeated option, NX with NEX, PX missing, not a positive integer, or
 * above SS_PX_MAX). Checks run in that order. */
int ss_command_parse(const ss_request *req, ss_command *cmd);

/* Largest PX accepted: about 292 million years, so deadlines never overflow. */
#define SS_PX_MAX ((uint64_t)1 << 53)

/* Parse a positive decimal integer (no sign, no spaces, at most 19 digits)
 * not above max. 0 or SS_E_SYNTAX. */
int ss_parse_u64(const uint8_t *p, size_t n, uint64_t max, uint64_t *out);

#endif
