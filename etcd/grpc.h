/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* grpc.h - gRPC calls over HTTP/2 (unary, and server streams), run by a
 * thread of their own.
 *
 * The etcd backend speaks etcd's gRPC API. A call is a request message's
 * bytes sent to a method ("/etcdserverpb.KV/Range") and a reply message's
 * bytes or a gRPC status. Calls run on the channel's I/O thread, many in
 * flight as streams of one HTTP/2 connection (nghttp2), so the thread that
 * submits them never waits on the network: it submits, is woken (the wake
 * callback, on the I/O thread) when calls finish, and collects them.
 *
 * Endpoints: http://host:port (HTTP/2 with prior knowledge, as etcd
 * serves it on a plain client URL) or https://host:port (TLS 1.2 or later
 * with ALPN "h2", the server's certificate verified against ca_file or
 * the system's CAs and matched to host, an optional client certificate).
 * When the connection fails or is
 * lost, the calls on it fail with SS_E_CONNECTION and the channel moves on
 * to the next endpoint for later calls; nothing is retried here, since
 * only the caller knows whether a call may run twice.
 */
#ifndef SS_GRPC_H
#define SS_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"

typedef struct ss_grpc ss_grpc;

typedef struct ss_grpc_options {
    const char *endpoints; /* comma-separated URLs; at least one */
    const char *ca_file;   /* https: the CA to trust; NULL: the system's */
    const char *cert_file; /* https: a client certificate (chain), or NULL */
    const char *key_file;  /* its private key */
    unsigned connect_timeout_ms; /* 0: 2000 */
    void (*wake)(void *ctx);     /* calls finished (I/O thread); may be NULL */
    void *wake_ctx;
} ss_grpc_options;

/* gRPC status codes used here (the protocol's numbers). */
enum {
    SS_GRPC_OK = 0,
    SS_GRPC_DEADLINE_EXCEEDED = 4,
    SS_GRPC_FAILED_PRECONDITION = 9,
    SS_GRPC_UNAVAILABLE = 14,
};

/* One call. The owner fills the inputs, submits it, and gets it back from
 * ss_grpc_collect (or ss_grpc_call_wait) with the outputs set. */
typedef struct ss_grpc_call {
    /* in */
    const char *method;      /* borrowed: must live until collected */
    ss_buf request;          /* the request message; owned by the call */
    unsigned timeout_ms;     /* 0: 5000 */
    void *user;              /* the owner's */
    bool stream;             /* a server stream (see ss_grpc_stream_take) */
    /* out */
    int rc;                  /* 0, SS_E_CONNECTION, SS_E_TIMEOUT, SS_E_PROTOCOL,
                                SS_E_SERVER (a gRPC status other than OK) */
    int status;              /* the gRPC status (SS_E_SERVER) */
    char message[200];       /* grpc-message, or what went wrong */
    ss_buf reply;            /* the reply message (rc 0); owned by the call */
    /* a stream's messages not yet taken, and the owner's wish to end it
     * (under the channel's mutex) */
    ss_buf inbox;
    bool cancel;
    /* the channel's */
    struct ss_grpc_call *next;
    ss_buf body;          /* the framed request */
    size_t sent;          /* bytes of body handed to HTTP/2 */
    int32_t stream_id;
    uint64_t deadline_ms; /* CLOCK_MONOTONIC */
    bool status_seen;
    bool timed_out;
    bool waited, finished;
    int http_code;
} ss_grpc_call;

/* Start the channel and its I/O thread (it connects when the first call
 * comes). 0, SS_E_INVAL (no endpoint, a URL that is not
 * http(s)://host:port, TLS files that cannot be used; *why says which),
 * SS_E_NOMEM. */
int ss_grpc_new(const ss_grpc_options *o, ss_grpc **out, char *why, size_t why_len);
/* Stop the thread. Calls under way or waiting end with SS_E_CONNECTION;
 * those not collected are cleared (their buffers freed; the structs stay
 * their owner's). No other thread may be inside ss_grpc_call_wait or
 * submit on g when free is called. NULL: no-op. */
void ss_grpc_free(ss_grpc *g);

/* Hand a call to the I/O thread (the channel holds it until collected). */
void ss_grpc_submit(ss_grpc *g, ss_grpc_call *c);
/* The calls finished since the last collect, oldest first (a list through
 * next), now the caller's again; NULL if none. */
ss_grpc_call *ss_grpc_collect(ss_grpc *g);
/* Submit c and wait for it (for tools, tests and start-up; never on the
 * broker's thread while serving). Other finished calls stay collectable. */
int ss_grpc_call_wait(ss_grpc *g, ss_grpc_call *c);
/* Streams (c->stream set before submitting): the request message is
 * sent and the request side stays open (etcd ends a watch whose client
 * half-closes); the call has no deadline; each reply message is handed
 * over as it arrives, with a wake, while the call runs. The call ends
 * (and is collected) when the server ends it, the connection is lost, or
 * the owner cancels it. */
/* Append the complete messages that arrived since the last take to out,
 * each framed as gRPC frames it (a flag byte, a 4-byte big-endian length,
 * the message): read them with ss_grpc_next_message. 0 or SS_E_NOMEM. */
int ss_grpc_stream_take(ss_grpc *g, ss_grpc_call *c, ss_buf *out);
/* The message at *pos of what take gave, moving *pos past it; false at
 * the end. */
bool ss_grpc_next_message(const ss_buf *frames, size_t *pos, ss_bytes *msg);
/* End a running stream (it is collected later with SS_E_CONNECTION). */
void ss_grpc_cancel(ss_grpc *g, ss_grpc_call *c);

/* Free what a call holds (not the call itself). */
void ss_grpc_call_clear(ss_grpc_call *c);

/* The longest authentication token kept, its NUL included: etcd's simple
 * tokens are some 20 bytes, its JWTs (--auth-token jwt, RS256) several
 * hundred. */
#define SS_GRPC_TOKEN_MAX 4096u
#define SS_ETCD_TOKEN_TOO_LONG "etcd's authentication token is longer than 4095 bytes, the most this broker keeps"

/* etcd's authentication token, sent as metadata with every later call
 * ("" for none). 0, or SS_E_INVAL when it is too long. */
int ss_grpc_set_token(ss_grpc *g, const char *token);

/* The endpoint calls go to now (for logs). */
const char *ss_grpc_endpoint(ss_grpc *g);

#endif
