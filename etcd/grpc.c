/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* grpc.c - gRPC calls over HTTP/2 (grpc.h): the owner's side of the
 * channel.
 *
 * The channel is two sides around one mutex. This file is the owner's:
 * it starts and stops the I/O thread (grpc_io.c), queues calls for it
 * and pokes its eventfd, and takes back the calls it finished. Here only
 * what grpc_io.h marks "under mu" is touched while the thread runs; the
 * connection (transport.h) and the running calls are the thread's.
 */
#include "grpc_io.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../core/bigendian.h"
#include "../core/errors.h"

int ss_grpc_new(const ss_grpc_options *o, ss_grpc **out, char *why, size_t why_len)
{
    if (why && why_len)
        why[0] = '\0';
    ss_grpc *g = calloc(1, sizeof *g);
    if (g == NULL)
        return SS_E_NOMEM;
    g->event_fd = -1;
    g->wake = o->wake;
    g->wake_ctx = o->wake_ctx;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    int rc = ss_transport_new(o, &g->net, why, why_len);
    if (rc == SS_OK && (g->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        rc = SS_E_NOMEM;
    if (rc == SS_OK) {
        /* The I/O thread takes no signals: they are for the process's own
         * threads (the broker's loop). */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_create(&g->thread, NULL, ss_grpc__main, g) != 0)
            rc = SS_E_NOMEM;
        else
            g->thread_started = true;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (rc != SS_OK) {
        ss_grpc_free(g);
        return rc;
    }
    *out = g;
    return SS_OK;
}

static void ss_grpc__free_list(ss_grpc_call *c)
{
    while (c) {
        ss_grpc_call *next = c->next;
        ss_grpc_call_clear(c);
        c = next;
    }
}

static void ss_grpc__poke(ss_grpc *g)
{
    uint64_t one = 1;
    ssize_t r = write(g->event_fd, &one, sizeof one);
    (void)r; /* a full counter still wakes the thread */
}

void ss_grpc_free(ss_grpc *g)
{
    if (g == NULL)
        return;
    if (g->thread_started) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_mutex_unlock(&g->mu);
        ss_grpc__poke(g);
        pthread_join(g->thread, NULL);
    }
    ss_grpc__free_list(g->submitted);
    ss_grpc__free_list(g->done);
    if (g->event_fd >= 0)
        close(g->event_fd);
    ss_transport_free(g->net);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

void ss_grpc_submit(ss_grpc *g, ss_grpc_call *c)
{
    c->next = NULL;
    c->finished = false;
    pthread_mutex_lock(&g->mu);
    if (g->sub_tail)
        g->sub_tail->next = c;
    else
        g->submitted = c;
    g->sub_tail = c;
    pthread_mutex_unlock(&g->mu);
    ss_grpc__poke(g);
}

ss_grpc_call *ss_grpc_collect(ss_grpc *g)
{
    pthread_mutex_lock(&g->mu);
    ss_grpc_call *list = g->done;
    g->done = g->done_tail = NULL;
    pthread_mutex_unlock(&g->mu);
    return list;
}

int ss_grpc_call_wait(ss_grpc *g, ss_grpc_call *c)
{
    c->waited = true;
    ss_grpc_submit(g, c);
    pthread_mutex_lock(&g->mu);
    while (!c->finished)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    c->waited = false;
    return c->rc;
}

int ss_grpc_stream_take(ss_grpc *g, ss_grpc_call *c, ss_buf *out)
{
    pthread_mutex_lock(&g->mu);
    int rc = SS_OK;
    if (c->inbox.len) {
        rc = ss_buf_append(out, c->inbox.data, c->inbox.len);
        if (rc == SS_OK)
            ss_buf_clear(&c->inbox);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

bool ss_grpc_next_message(const ss_buf *frames, size_t *pos, ss_bytes *msg)
{
    if (frames->len - *pos < 5)
        return false;
    size_t n = (size_t)ss_get_be(frames->data + *pos + 1, 4);
    if (frames->len - *pos - 5 < n)
        return false;
    msg->data = frames->data + *pos + 5;
    msg->len = n;
    *pos += 5 + n;
    return true;
}

void ss_grpc_cancel(ss_grpc *g, ss_grpc_call *c)
{
    pthread_mutex_lock(&g->mu);
    c->cancel = true;
    pthread_mutex_unlock(&g->mu);
    ss_grpc__poke(g);
}

void ss_grpc_call_clear(ss_grpc_call *c)
{
    ss_buf_free(&c->inbox);
    ss_buf_free(&c->request);
    ss_buf_free(&c->reply);
    ss_buf_free(&c->body);
}

int ss_grpc_set_token(ss_grpc *g, const char *token)
{
    if (strlen(token) >= sizeof g->token)
        return SS_E_INVAL;
    pthread_mutex_lock(&g->mu);
    snprintf(g->token, sizeof g->token, "%s", token);
    pthread_mutex_unlock(&g->mu);
    return SS_OK;
}

const char *ss_grpc_endpoint(ss_grpc *g)
{
    pthread_mutex_lock(&g->mu);
    const char *u = ss_transport_at(g->net, g->current)->url;
    pthread_mutex_unlock(&g->mu);
    return u;
}
