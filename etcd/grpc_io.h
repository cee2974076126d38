/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* grpc_io.h - the gRPC channel's state, shared by its two sides: the
 * owner's (grpc.c: new, submit, collect, wait, free) and its I/O thread's
 * (grpc_io.c: the loop, the HTTP/2 connection, the calls on it).
 *
 * Apart so that each side reads alone, and so that who may touch what is
 * written once, here: the owner's side touches only what is marked "under
 * mu" (and the rest before the thread starts or after it is joined); the
 * I/O thread owns the connection and the running calls. Only grpc.c and
 * grpc_io.c include this header.
 */
#ifndef SS_ETCD_GRPC_IO_H
#define SS_ETCD_GRPC_IO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "grpc.h"
#include "transport.h"

struct nghttp2_session;

struct ss_grpc {
    ss_transport *net; /* the endpoints (read by both sides: they never
                          change), and the connection (I/O thread only) */
    size_t current;    /* under mu: the endpoint later calls go to */
    void (*wake)(void *ctx);
    void *wake_ctx;
    int event_fd; /* pokes the I/O thread: a submission, a cancel, stop */
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;                  /* a waited call finished */
    bool stop;                          /* under mu */
    ss_grpc_call *submitted, *sub_tail; /* under mu */
    ss_grpc_call *done, *done_tail;     /* under mu */
    char token[SS_GRPC_TOKEN_MAX];      /* under mu: etcd's auth token, "" for none */
    /* I/O thread only */
    size_t connected_to; /* the endpoint of the connection */
    struct nghttp2_session *session;
    ss_grpc_call *running;
    ss_grpc_call *finished; /* closed streams, to hand back after this round */
    bool move_on;           /* the member said it cannot serve: leave it when idle */
    bool stream_data;       /* a stream got messages: wake the owner */
};

/* The I/O thread (pthread_create's start routine; arg is the channel):
 * runs the calls submitted until stop is set under mu and the eventfd
 * poked, then ends every call it still holds with SS_E_CONNECTION and
 * hands them back. */
void *ss_grpc__main(void *arg);

#endif
