/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* grpc_io.c - the gRPC channel's I/O thread: its loop, the HTTP/2
 * connection with nghttp2, and the calls on it (grpc.h, grpc_io.h).
 *
 * gRPC over HTTP/2: a POST to /<service>/<method> with content-type
 * application/grpc and "te: trailers"; the body is one length-prefixed
 * message (a flag byte, 0 for uncompressed, and a 4-byte big-endian
 * length); the reply is the same framing, and the call's status comes in
 * the trailers (grpc-status, grpc-message), or in the headers when the
 * server answers with trailers only. A server stream (etcd's Watch) is
 * the same with many reply messages and a request side left open.
 *
 * nghttp2 does the HTTP/2 framing; the transport (transport.h) the socket
 * and TLS; this file runs the loop on the I/O thread: poll the connection
 * and an eventfd (submissions, cancels, stop), feed what arrives to
 * nghttp2, write what it has to send, and hand finished calls back to the
 * owner's side (grpc.c) under the channel's mutex. The session and the
 * running calls are this thread's alone.
 */
#include "grpc_io.h"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../core/bigendian.h"
#include "../core/errors.h"
#include "kv.h"

#define SS_GRPC_TIMEOUT_MS_DEFAULT 5000u
/* A reply larger than this is refused (our records are far smaller). */
#define SS_GRPC_REPLY_MAX ((size_t)512 << 20)
/* Flow-control windows: large, so that big values need no round trips. */
#define SS_GRPC_WINDOW (1 << 24)

/* ---- calls ending ------------------------------------------------------- */

static void ss_grpc__rotate(ss_grpc *g, size_t failed)
{
    pthread_mutex_lock(&g->mu);
    if (g->current == failed)
        g->current = (g->current + 1) % ss_transport_count(g->net);
    pthread_mutex_unlock(&g->mu);
}

static void ss_grpc__unlink(ss_grpc_call **list, ss_grpc_call *c)
{
    for (ss_grpc_call **pp = list; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            return;
        }
    }
}

/* The stream of c closed with error_code: set its outputs from what came. */
static void ss_grpc__settle(ss_grpc *g, ss_grpc_call *c, uint32_t error_code)
{
    const char *url = ss_transport_at(g->net, g->connected_to)->url;
    /* (A call past its deadline ends with its connection: see
     * ss_grpc__deadlines.) */
    if (error_code != NGHTTP2_NO_ERROR) {
        c->rc = SS_E_CONNECTION;
        snprintf(c->message, sizeof c->message, "%s: stream reset (%s)", url,
                 nghttp2_http2_strerror(error_code));
    } else if (c->http_code != 200 || !c->status_seen) {
        c->rc = SS_E_PROTOCOL;
        snprintf(c->message, sizeof c->message, "%s: HTTP status %d%s", url, c->http_code,
                 c->status_seen ? "" : " without a gRPC status");
    } else if (c->status != SS_GRPC_OK) {
        c->rc = SS_E_SERVER;
        /* No leader, or cut off from the quorum: another member may serve. */
        if (c->status == SS_GRPC_UNAVAILABLE)
            g->move_on = true;
    } else if (c->stream) {
        c->rc = SS_OK; /* its messages went to the inbox */
    } else {
        /* One uncompressed message, exactly. */
        ss_buf *r = &c->reply;
        if (r->len < 5 || r->data[0] != 0 || (size_t)ss_get_be(r->data + 1, 4) != r->len - 5) {
            c->rc = SS_E_PROTOCOL;
            snprintf(c->message, sizeof c->message, "%s: malformed gRPC reply (%zu bytes)", url, r->len);
        } else {
            memmove(r->data, r->data + 5, r->len - 5);
            r->len -= 5;
            c->rc = SS_OK;
        }
    }
    ss_grpc__unlink(&g->running, c);
    c->next = g->finished;
    g->finished = c;
}

/* Hand the finished calls back: each to its waiter or to the done list. */
static void ss_grpc__hand_back(ss_grpc *g)
{
    if (g->stream_data && g->finished == NULL && g->wake) {
        g->stream_data = false;
        g->wake(g->wake_ctx);
    }
    if (g->finished == NULL)
        return;
    g->stream_data = false;
    /* finished is newest first: reverse it, so that calls come back in
     * the order they ended. */
    ss_grpc_call *list = NULL;
    while (g->finished) {
        ss_grpc_call *c = g->finished;
        g->finished = c->next;
        c->next = list;
        list = c;
    }
    pthread_mutex_lock(&g->mu);
    while (list) {
        ss_grpc_call *c = list;
        list = c->next;
        c->next = NULL;
        if (c->waited) {
            c->finished = true;
        } else {
            if (g->done_tail)
                g->done_tail->next = c;
            else
                g->done = c;
            g->done_tail = c;
        }
    }
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (g->wake)
        g->wake(g->wake_ctx);
}

static void ss_grpc__fail(ss_grpc *g, ss_grpc_call *c, int rc, const char *what)
{
    c->rc = rc;
    snprintf(c->message, sizeof c->message, "%s", what);
    c->next = g->finished;
    g->finished = c;
}

/* ---- nghttp2 callbacks (I/O thread) ------------------------------------- */

static int ss_grpc__on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                              size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                              void *ud)
{
    (void)flags;
    (void)ud;
    ss_grpc_call *c = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    if (c == NULL || frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        int v = 0;
        for (size_t i = 0; i < valuelen && i < 3 && value[i] >= '0' && value[i] <= '9'; i++)
            v = v * 10 + (value[i] - '0');
        c->http_code = v;
    } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        int v = 0;
        for (size_t i = 0; i < valuelen && i < 4 && value[i] >= '0' && value[i] <= '9'; i++)
            v = v * 10 + (value[i] - '0');
        c->status = v;
        c->status_seen = true;
    } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
        snprintf(c->message, sizeof c->message, "%.*s", (int)valuelen, (const char *)value);
    }
    return 0;
}

/* Move the complete messages of a stream's reply into its inbox, for the
 * owner to take. */
static void ss_grpc__stream_messages(ss_grpc *g, ss_grpc_call *c)
{
    ss_buf *r = &c->reply;
    size_t used = 0;
    while (r->len - used >= 5) {
        size_t n = 5 + (size_t)ss_get_be(r->data + used + 1, 4);
        if (r->len - used < n)
            break;
        used += n;
    }
    if (used == 0)
        return;
    pthread_mutex_lock(&g->mu);
    int rc = ss_buf_append(&c->inbox, r->data, used);
    pthread_mutex_unlock(&g->mu);
    if (rc != SS_OK) {
        nghttp2_submit_rst_stream(g->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    memmove(r->data, r->data + used, r->len - used);
    r->len -= used;
    g->stream_data = true;
}

static int ss_grpc__on_data(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
                            size_t len, void *ud)
{
    (void)flags;
    (void)ud;
    ss_grpc_call *c = nghttp2_session_get_stream_user_data(s, stream_id);
    if (c == NULL)
        return 0;
    if (c->reply.len + len > SS_GRPC_REPLY_MAX || ss_buf_append(&c->reply, data, len) != SS_OK) {
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_INTERNAL_ERROR);
        return 0;
    }
    if (c->stream)
        ss_grpc__stream_messages(ud, c);
    return 0;
}

static int ss_grpc__on_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *ud)
{
    ss_grpc *g = ud;
    ss_grpc_call *c = nghttp2_session_get_stream_user_data(s, stream_id);
    if (c != NULL) {
        nghttp2_session_set_stream_user_data(s, stream_id, NULL);
        ss_grpc__settle(g, c, error_code);
    }
    return 0;
}

/* The request body, framed, handed to nghttp2 as it asks. */
static ssize_t ss_grpc__read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                                  uint32_t *data_flags, nghttp2_data_source *source, void *ud)
{
    (void)s;
    (void)stream_id;
    (void)ud;
    ss_grpc_call *c = source->ptr;
    size_t n = c->body.len - c->sent;
    if (n > length)
        n = length;
    memcpy(buf, c->body.data + c->sent, n);
    if (n == 0 && c->stream)
        return NGHTTP2_ERR_DEFERRED; /* the request side stays open */
    c->sent += n;
    if (c->sent == c->body.len && !c->stream)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* ---- the connection (I/O thread) ---------------------------------------- */

static void ss_grpc__disconnect(ss_grpc *g, const char *why)
{
    /* First: why may be the transport's (ss_transport_lost), which closing
     * clears. */
    char what[200];
    snprintf(what, sizeof what, "%s: %s", ss_transport_at(g->net, g->connected_to)->url, why);
    if (g->session) {
        nghttp2_session_del(g->session);
        g->session = NULL;
    }
    ss_transport_close(g->net);
    /* The calls on the lost connection: their outcome is unknown. */
    while (g->running) {
        ss_grpc_call *c = g->running;
        g->running = c->next;
        ss_grpc__fail(g, c, c->timed_out ? SS_E_TIMEOUT : SS_E_CONNECTION, what);
    }
    g->running = NULL;
    ss_grpc__rotate(g, g->connected_to);
}

/* Connect to the current endpoint and start HTTP/2 on the connection. 0,
 * or SS_E_CONNECTION or SS_E_NOMEM with *why (nothing stays open); a
 * connection that failed moves later calls on to the next endpoint. */
static int ss_grpc__connect(ss_grpc *g, char *why, size_t n)
{
    pthread_mutex_lock(&g->mu);
    size_t i = g->current;
    pthread_mutex_unlock(&g->mu);
    g->connected_to = i;
    int rc = ss_transport_connect(g->net, i, why, n);
    if (rc != SS_OK) {
        ss_grpc__rotate(g, i);
        return rc;
    }
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        ss_transport_close(g->net);
        snprintf(why, n, "out of memory");
        return SS_E_NOMEM;
    }
    nghttp2_session_callbacks_set_on_header_callback(cb, ss_grpc__on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, ss_grpc__on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, ss_grpc__on_close);
    int r = nghttp2_session_client_new(&g->session, cb, g);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry set[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, SS_GRPC_WINDOW}};
    if (r != 0 || nghttp2_submit_settings(g->session, NGHTTP2_FLAG_NONE, set, 2) != 0 ||
        nghttp2_session_set_local_window_size(g->session, NGHTTP2_FLAG_NONE, 0, SS_GRPC_WINDOW) != 0) {
        ss_grpc__disconnect(g, "cannot start HTTP/2");
        snprintf(why, n, "cannot start HTTP/2");
        return SS_E_CONNECTION;
    }
    return SS_OK;
}

/* Write everything nghttp2 has to send. false when the connection broke. */
static bool ss_grpc__flush(ss_grpc *g)
{
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(g->session, &data);
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        if (ss_transport_send(g->net, data, (size_t)n) != 0)
            return false;
    }
}

/* Read what arrived and feed it to nghttp2. false when the connection
 * broke or closed. */
static bool ss_grpc__receive(ss_grpc *g)
{
    uint8_t buf[65536];
    for (;;) {
        ssize_t r = ss_transport_recv(g->net, buf, sizeof buf);
        if (r == 0)
            return true;
        if (r < 0 || nghttp2_session_mem_recv(g->session, buf, (size_t)r) < 0)
            return false;
    }
}

/* Frame c's request and open its stream. */
static int ss_grpc__start(ss_grpc *g, ss_grpc_call *c)
{
    ss_buf_clear(&c->body);
    uint8_t head[5] = {0};
    ss_put_be(head + 1, c->request.len, 4);
    int rc = ss_buf_append(&c->body, head, sizeof head);
    if (rc == SS_OK && c->request.len)
        rc = ss_buf_append(&c->body, c->request.data, c->request.len);
    if (rc != SS_OK)
        return rc;
    c->sent = 0;
    ss_buf_clear(&c->reply);
    c->status = 0;
    c->status_seen = false;
    c->timed_out = false;
    c->http_code = 0;
    c->message[0] = '\0';
    c->deadline_ms = c->stream ? UINT64_MAX
                               : ss_transport_now_ms() + (c->timeout_ms ? c->timeout_ms : SS_GRPC_TIMEOUT_MS_DEFAULT);
    const ss_transport_endpoint *e = ss_transport_at(g->net, g->connected_to);
    char token[sizeof g->token];
    pthread_mutex_lock(&g->mu);
    ss_buf_clear(&c->inbox); /* the owner takes a stream's messages under mu */
    memcpy(token, g->token, strlen(g->token) + 1);
    pthread_mutex_unlock(&g->mu);
    /* A login goes without the token: etcd checks a token sent with
     * Authenticate too, and refuses the login once that token stopped
     * working (a JWT past its ttl, a simple token a restarted member
     * forgot), which kept the broker out for good. */
    if (strcmp(c->method, SS_ETCD_AUTHENTICATE_METHOD) == 0)
        token[0] = '\0';
#define SS_NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv hdrs[] = {SS_NV(":method", "POST"),         SS_NV(":scheme", e->tls ? "https" : "http"),
                         SS_NV(":path", c->method),        SS_NV(":authority", e->authority),
                         SS_NV("content-type", "application/grpc"), SS_NV("te", "trailers"),
                         SS_NV("token", token)};
#undef SS_NV
    size_t nhdrs = sizeof hdrs / sizeof hdrs[0] - (token[0] ? 0 : 1); /* the token only when there is one */
    nghttp2_data_provider body = {.source.ptr = c, .read_callback = ss_grpc__read_body};
    int32_t id = nghttp2_submit_request(g->session, NULL, hdrs, nhdrs, &body, c);
    if (id == NGHTTP2_ERR_NOMEM)
        return SS_E_NOMEM;
    if (id < 0) {
        /* The connection can take no more streams (stream ids run out
         * after 2^30 calls) or is going away: a new one, once idle. */
        g->move_on = true;
        return SS_E_CONNECTION;
    }
    c->stream_id = id;
    c->next = g->running;
    g->running = c;
    return SS_OK;
}

/* A call past its deadline: the endpoint is stopped, partitioned or
 * overloaded. Give up the connection (the other calls on it end with
 * SS_E_CONNECTION: their outcome is unknown to the caller either way) and
 * let later calls try the next endpoint. Returns ms to the next deadline. */
static int ss_grpc__deadlines(ss_grpc *g)
{
    /* Streams the owner wants ended. */
    pthread_mutex_lock(&g->mu);
    for (ss_grpc_call *c = g->running; c; c = c->next)
        if (c->cancel) {
            c->cancel = false;
            nghttp2_submit_rst_stream(g->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
        }
    pthread_mutex_unlock(&g->mu);
    uint64_t now = ss_transport_now_ms(), next = now + 1000;
    bool expired = false;
    for (ss_grpc_call *c = g->running; c; c = c->next) {
        if (c->deadline_ms <= now) {
            c->timed_out = true;
            expired = true;
        } else if (c->deadline_ms < next) {
            next = c->deadline_ms;
        }
    }
    if (expired) {
        ss_grpc__disconnect(g, "no answer in time");
        return 1000;
    }
    return (int)(next - now);
}

/* ---- the loop (I/O thread) ---------------------------------------------- */

static bool ss_grpc__only_streams(const ss_grpc *g)
{
    for (const ss_grpc_call *c = g->running; c; c = c->next)
        if (!c->stream)
            return false;
    return true;
}

void *ss_grpc__main(void *arg)
{
    ss_grpc *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        ss_grpc_call *list = g->submitted;
        g->submitted = g->sub_tail = NULL;
        pthread_mutex_unlock(&g->mu);
        char why[160];
        /* Once no unary call waits on it (streams go on elsewhere). */
        if (g->move_on && g->session && ss_grpc__only_streams(g))
            ss_grpc__disconnect(g, "the member cannot serve: moving on");
        if (g->session == NULL)
            g->move_on = false;
        if (list && g->session == NULL && ss_grpc__connect(g, why, sizeof why) != SS_OK) {
            /* Nothing was sent: these calls did not happen. */
            while (list) {
                ss_grpc_call *c = list;
                list = c->next;
                ss_grpc__fail(g, c, SS_E_CONNECTION, why);
            }
        }
        while (list) {
            ss_grpc_call *c = list;
            list = c->next;
            int rc = ss_grpc__start(g, c);
            if (rc != SS_OK)
                ss_grpc__fail(g, c, rc, rc == SS_E_NOMEM ? "out of memory" : "the connection takes no more calls");
        }
        int wait_ms = 1000;
        if (g->session)
            wait_ms = ss_grpc__deadlines(g);
        if (g->session && !ss_grpc__flush(g))
            ss_grpc__disconnect(g, ss_transport_lost(g->net));
        ss_grpc__hand_back(g);
        struct pollfd p[2] = {{g->event_fd, POLLIN, 0}, {ss_transport_fd(g->net), POLLIN, 0}};
        int np = g->session ? 2 : 1;
        if (poll(p, (nfds_t)np, wait_ms) > 0) {
            if (p[0].revents & POLLIN) {
                uint64_t v;
                ssize_t r = read(g->event_fd, &v, sizeof v);
                (void)r;
            }
            if (np == 2 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
                bool alive = ss_grpc__receive(g) && ss_grpc__flush(g);
                if (!alive || (!nghttp2_session_want_read(g->session) &&
                               !nghttp2_session_want_write(g->session)))
                    ss_grpc__disconnect(g, alive ? "closed by the server" : ss_transport_lost(g->net));
            }
            ss_grpc__hand_back(g);
        }
        pthread_mutex_lock(&g->mu);
    }
    /* Calls submitted and not started end too: their waiters return. */
    ss_grpc_call *left = g->submitted;
    g->submitted = g->sub_tail = NULL;
    pthread_mutex_unlock(&g->mu);
    while (left) {
        ss_grpc_call *c = left;
        left = c->next;
        ss_grpc__fail(g, c, SS_E_CONNECTION, "channel closed");
    }
    if (g->session)
        ss_grpc__disconnect(g, "channel closed");
    ss_grpc__hand_back(g);
    return NULL;
}
