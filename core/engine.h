/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* engine.h - the state store's rules, executed against a backend.
 *
 * The engine turns one request payload (with its __ts and __ft properties
 * and the current wall clock) into the response payload and the version to
 * send back as __ts. It implements PROTOCOL.md sections 2 to 6: conditions,
 * expiry, versions, fencing. It knows nothing of MQTT; time is always
 * passed in. It reaches storage only through the storage interface
 * (backend.h); the changes it makes reach observers through that
 * interface's change feed, once committed.
 *
 * Writes go into the backend's open batch. Nothing is durable until it is
 * committed; if the commit fails, every response produced since the last
 * commit must be discarded (answer those requests with the commit's error
 * instead).
 */
#ifndef SS_ENGINE_H
#define SS_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "acl.h"
#include "buf.h"
#include "codec.h"
#include "command.h"
#include "hlc.h"
#include "backend.h"

typedef struct ss_engine ss_engine;

/* KEYNOTIFY handler: register (stop false) or unregister caller for key.
 * Returns 1 when registered / was registered, 0 when STOP found nothing,
 * or a negative status answered as a protocol error (e.g. SS_E_QUOTA). */
typedef int (*ss_keynotify_fn)(void *ctx, void *caller, ss_bytes key, bool stop);

/* Authorization: may caller read (GET, KEYNOTIFY) or write (SET, DEL,
 * VDEL) key? Asked before anything else about the key is looked at, so a
 * denial ("not authorized") reveals nothing about it. quietly: no request
 * is refused by the answer (a SCAN passes over a key its client may not
 * read), so it is not one to log. */
typedef bool (*ss_authorize_fn)(void *ctx, void *caller, enum ss_access access, ss_bytes key, bool quietly);

typedef struct ss_engine_options {
    const char *node_id;        /* version node id; NULL: "StateStore" */
    ss_codec_limits limits;     /* zeroes: ss_codec_limits_default() */
    size_t max_key_len;         /* 0: SS_STORE_KEY_MAX */
    size_t max_value_len;       /* SET values; 0: no limit beyond the request size */
    ss_keynotify_fn on_keynotify; /* NULL: KEYNOTIFY answers "unknown command" */
    void *keynotify_ctx;
    ss_authorize_fn on_authorize; /* NULL: everything is allowed */
    void *authorize_ctx;
    size_t max_answer;          /* SCAN: an answer's bytes at most; 0: no bound */
    size_t scan_page_bytes;     /* SCAN: a page of several keys at most; 0: SS_SCAN_ANSWER_DEFAULT */
} ss_engine_options;

#define SS_NODE_ID_DEFAULT "StateStore"

/* One request. Inputs are borrowed for the call; the response is appended
 * to the caller's buffer. */
typedef struct ss_exec {
    const uint8_t *payload;
    size_t payload_len;
    ss_bytes ts;     /* __ts user property; data NULL when absent */
    ss_bytes ft;     /* __ft user property; data NULL when absent */
    uint64_t now_ms; /* wall clock, ms since the Unix epoch */
    void *caller;    /* handed to on_keynotify and on_authorize */
    ss_buf *response;
    bool has_version; /* out: send version as __ts */
    ss_hlc version;
    int command;      /* out: the enum ss_cmd_type run, 0 if the request did not parse */
    /* Kept by ss_engine_parse for ss_engine_exec; zero-initialise. */
    bool parsed;
    int parse_rc;
    ss_command cmd;
} ss_exec;

/* Create an engine on a backend (borrowed: it must outlive the engine).
 * The clock resumes above the last version persisted in the backend.
 * Errors: SS_E_INVAL (bad node id), SS_E_NOMEM. */
int ss_engine_new(ss_backend *be, const ss_engine_options *o, ss_engine **out);
void ss_engine_free(ss_engine *e);

/* Execute one request. A response is always appended unless memory runs
 * out (SS_E_NOMEM) or the request must run again (SS_E_PENDING: its read
 * is under way; SS_E_CONFLICT: the key changed after it was decided);
 * then nothing was appended and nothing written. Returns 0 for a normal
 * answer, or the status whose error text was answered (protocol errors,
 * and SS_E_IO / SS_E_CORRUPT answered as "-ERR storage error"). */
int ss_engine_exec(ss_engine *e, ss_exec *x);

/* Decode and check x's payload without running it, and set x->command
 * (0 if it does not parse). Optional: a caller that must know the command
 * before running it (the resend cache skips GETs) calls this first, and
 * ss_engine_exec then runs what was parsed here instead of parsing again. */
void ss_engine_parse(ss_engine *e, ss_exec *x);

/* Remove up to max keys whose deadline is <= now_ms, earliest first
 * (each a DELETE in the change feed once committed). Cheap when nothing is due. Returns the
 * number removed, or a negative status. */
int ss_engine_expire(ss_engine *e, uint64_t now_ms, unsigned max);

/* Commit everything since the last commit and wait for it (the backend's
 * commit: for owners without a pipeline of their own). 0, or the failure
 * (nothing of the batch remains): SS_E_QUOTA, SS_E_IO. */
int ss_engine_commit(ss_engine *e, uint64_t now_ms);

/* Drop everything since the last commit. */
void ss_engine_abort(ss_engine *e);

/* The server clock's last issued stamp (for logs and tests). */
ss_hlc ss_engine_clock(const ss_engine *e);

#endif
