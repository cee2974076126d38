/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* transport.h - the gRPC channel's byte pipe: its endpoints, and one
 * connection at a time to one of them (TCP, or TLS over TCP).
 *
 * Apart from the channel (grpc.c, grpc_io.c) so that HTTP/2 and the calls
 * know nothing of address resolution, sockets or OpenSSL: the channel asks
 * for a connection to endpoint i, polls its descriptor, sends and receives
 * bytes, and closes it. Which endpoint comes next is the channel's choice,
 * not the transport's: the channel's owner reads it (for logs) under the
 * channel's mutex. Only the channel includes this header.
 *
 * Threads: ss_transport_new and ss_transport_free run while the channel's
 * I/O thread does not (before it starts, after it ends); the connection
 * is the I/O thread's alone. The endpoints never change after new, so any
 * thread may read them.
 */
#ifndef SS_ETCD_TRANSPORT_H
#define SS_ETCD_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "grpc.h"

typedef struct ss_transport ss_transport;

/* One endpoint of the channel's list, parsed. */
typedef struct ss_transport_endpoint {
    char *url;       /* as given, for messages */
    char *host;      /* without the brackets of [v6] */
    char *port;
    char *authority; /* host:port as given */
    bool tls;        /* https:// */
} ss_transport_endpoint;

/* Parse o->endpoints (comma-separated http(s)://host:port URLs) and, when
 * one is https://, set up TLS from o's CA, certificate and key files; keep
 * o->connect_timeout_ms (0: 2000). Nothing of o is kept. 0, SS_E_INVAL (no
 * endpoint, a URL that is not http(s)://host:port, TLS files that cannot
 * be used; *why says which), SS_E_NOMEM. */
int ss_transport_new(const ss_grpc_options *o, ss_transport **out, char *why, size_t why_len);
/* Close the connection, if any, and free t. NULL: no-op. */
void ss_transport_free(ss_transport *t);

/* How many endpoints there are (at least one), and endpoint i (i below
 * that count), which lives as long as t. */
size_t ss_transport_count(const ss_transport *t);
const ss_transport_endpoint *ss_transport_at(const ss_transport *t, size_t i);

/* Connect to endpoint i (no connection open): TCP, then for https://
 * the TLS handshake (the server's certificate verified and matched to
 * the host, ALPN "h2"), all within the connect timeout. 0, or SS_E_CONNECTION
 * with *why naming the endpoint and the cause (the certificate's problem
 * when that is it); nothing stays open then. */
int ss_transport_connect(ss_transport *t, size_t i, char *why, size_t n);
/* The connection's socket, to poll for input (-1 when not connected). */
int ss_transport_fd(const ss_transport *t);
/* Send all n bytes, waiting while the peer reads slowly: 0, or -1 when the
 * connection broke. */
int ss_transport_send(ss_transport *t, const uint8_t *data, size_t n);
/* Read what is there: bytes (> 0), 0 when nothing more is there now, -1
 * when the connection closed or broke. */
ssize_t ss_transport_recv(ss_transport *t, uint8_t *buf, size_t n);
/* Why the connection was lost, as well as is known. The text lives in t
 * until ss_transport_close, which clears it. */
const char *ss_transport_lost(const ss_transport *t);
/* Close the connection (and its TLS). No connection: no-op. */
void ss_transport_close(ss_transport *t);

/* CLOCK_MONOTONIC in ms: the clock of the connection's deadlines, and of
 * the calls' (ss_grpc_call.deadline_ms). */
uint64_t ss_transport_now_ms(void);

#endif
