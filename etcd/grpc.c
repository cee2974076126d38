/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* grpc.c - gRPC calls over HTTP/2 with nghttp2 (grpc.h).
 *
 * gRPC over HTTP/2: a POST to /<service>/<method> with content-type
 * application/grpc and "te: trailers"; the body is one length-prefixed
 * message (a flag byte, 0 for uncompressed, and a 4-byte big-endian
 * length); the reply is the same framing, and the call's status comes in
 * the trailers (grpc-status, grpc-message), or in the headers when the
 * server answers with trailers only. A server stream (etcd's Watch) is
 * the same with many reply messages and a request side left open.
 *
 * nghttp2 does the framing; this file owns the socket and the loop, on the
 * I/O thread: poll the connection and an eventfd (submissions, stop), feed
 * what arrives to nghttp2, write what it has to send. Threads: the owner's
 * thread submits and collects under the channel's mutex; the socket, the
 * session and the running calls are the I/O thread's alone.
 */
#include "grpc.h"

#include <errno.h>
#include <netdb.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../core/bigendian.h"
#include "../core/errors.h"

#define SS_GRPC_CONNECT_MS_DEFAULT 2000u
#define SS_GRPC_TIMEOUT_MS_DEFAULT 5000u
/* A reply larger than this is refused (our records are far smaller). */
#define SS_GRPC_REPLY_MAX ((size_t)512 << 20)
/* Flow-control windows: large, so that big values need no round trips. */
#define SS_GRPC_WINDOW (1 << 24)

struct ss_grpc_endpoint {
    char *url;  /* as given, for messages */
    char *host;
    char *port;
    char *authority; /* host:port as given */
    bool tls;        /* https:// */
};

struct ss_grpc {
    struct ss_grpc_endpoint *eps;
    size_t n_eps;
    size_t current; /* under mu */
    unsigned connect_timeout_ms;
    void (*wake)(void *ctx);
    void *wake_ctx;
    int event_fd;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;                          /* under mu */
    ss_grpc_call *submitted, *sub_tail; /* under mu */
    ss_grpc_call *done, *done_tail;     /* under mu */
    char token[256];                    /* under mu: etcd's auth token, "" for none */
    /* I/O thread only */
    SSL_CTX *tls;   /* when an endpoint is https:// */
    int fd;
    SSL *ssl;       /* the connection's TLS, when its endpoint is https:// */
    char tls_error[120]; /* why TLS gave up on the connection ("" if it did not) */
    size_t connected_to;
    nghttp2_session *session;
    ss_grpc_call *running;
    ss_grpc_call *finished; /* closed streams, to hand back after this round */
    bool move_on;           /* the member said it cannot serve: leave it when idle */
    bool stream_data;       /* a stream got messages: wake the owner */
};

static uint64_t ss_grpc__mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void ss_grpc__say(char *why, size_t n, const char *text, const char *arg)
{
    if (why && n)
        snprintf(why, n, "%s%s", text, arg ? arg : "");
}

/* ---- endpoints ---------------------------------------------------------- */

/* "http://host:port" (host may be [v6]) into e. */
static int ss_grpc__parse_url(struct ss_grpc_endpoint *e, const char *url, size_t len, char *why,
                              size_t why_len)
{
    e->url = strndup(url, len);
    if (e->url == NULL)
        return SS_E_NOMEM;
    e->tls = strncmp(e->url, "https://", 8) == 0;
    if (!e->tls && strncmp(e->url, "http://", 7) != 0) {
        ss_grpc__say(why, why_len, "an endpoint must start with http:// or https://: ", e->url);
        return SS_E_INVAL;
    }
    const char *h = e->url + (e->tls ? 8 : 7);
    const char *colon = h[0] == '[' ? strstr(h, "]:") : strrchr(h, ':');
    if (colon && h[0] == '[')
        colon++;
    if (colon == NULL || colon == h || colon[1] == '\0' || strchr(colon, '/')) {
        ss_grpc__say(why, why_len, "an endpoint needs a host and a port (http://host:port): ", e->url);
        return SS_E_INVAL;
    }
    bool v6 = h[0] == '[';
    e->host = strndup(h + v6, (size_t)(colon - h) - 2 * v6);
    e->port = strdup(colon + 1);
    e->authority = strdup(h);
    return e->host && e->port && e->authority ? SS_OK : SS_E_NOMEM;
}

/* Split the comma-separated endpoints (spaces and a trailing '/' allowed). */
static int ss_grpc__parse_endpoints(ss_grpc *g, const char *list, char *why, size_t why_len)
{
    size_t max = 1;
    for (const char *p = list ? list : ""; *p; p++)
        max += *p == ',';
    g->eps = calloc(max, sizeof *g->eps);
    if (g->eps == NULL)
        return SS_E_NOMEM;
    const char *p = list ? list : "";
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        size_t used = len;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '/'))
            len--;
        if (len) {
            int rc = ss_grpc__parse_url(&g->eps[g->n_eps++], p, len, why, why_len);
            if (rc != SS_OK)
                return rc;
        }
        p += used;
    }
    if (g->n_eps == 0) {
        ss_grpc__say(why, why_len, "no endpoint given", NULL);
        return SS_E_INVAL;
    }
    return SS_OK;
}

/* ---- calls ending ------------------------------------------------------- */

static void ss_grpc__rotate(ss_grpc *g, size_t failed)
{
    pthread_mutex_lock(&g->mu);
    if (g->current == failed)
        g->current = (g->current + 1) % g->n_eps;
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
    const char *url = g->eps[g->connected_to].url;
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

/* ---- TLS ------------------------------------------------------------------ */

/* The TLS context for https:// endpoints: TLS 1.2 or later, the server's
 * certificate verified (ca_file, or the system's CAs), ALPN "h2", and a
 * client certificate when given. */
static int ss_grpc__tls_setup(ss_grpc *g, const ss_grpc_options *o, char *why, size_t why_len)
{
    static const unsigned char alpn[] = {2, 'h', '2'};
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        return SS_E_NOMEM;
    g->tls = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    const char *what = NULL, *file = "";
    const char *key = o->key_file ? o->key_file : o->cert_file;
    if (o->ca_file && o->ca_file[0] && SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1) {
        what = "cannot use the CA file ";
        file = o->ca_file;
    } else if ((o->ca_file == NULL || o->ca_file[0] == '\0') && SSL_CTX_set_default_verify_paths(ctx) != 1) {
        what = "cannot load the system's CA certificates";
    } else if (o->cert_file && o->cert_file[0] && SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) {
        what = "cannot use the client certificate ";
        file = o->cert_file;
    } else if (o->cert_file && o->cert_file[0] &&
               (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1)) {
        what = "cannot use the client key ";
        file = key;
    } else if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof alpn) != 0) {
        what = "cannot ask for HTTP/2 (ALPN)";
    }
    if (what) {
        char err[120];
        ERR_error_string_n(ERR_get_error(), err, sizeof err);
        if (why && why_len)
            snprintf(why, why_len, "%s%s: %s", what, file, err);
        ERR_clear_error();
        return SS_E_INVAL;
    }
    return SS_OK;
}

/* Wait until fd is ready for what TLS wants (SSL_ERROR_WANT_*), at most
 * until deadline (monotonic ms). */
static bool ss_grpc__tls_wait(int fd, int want, uint64_t deadline)
{
    uint64_t now = ss_grpc__mono_ms();
    if (now >= deadline)
        return false;
    struct pollfd p = {fd, want == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, 0};
    return poll(&p, 1, (int)(deadline - now)) == 1;
}

/* The TLS handshake on g->fd for endpoint e. 0 or SS_E_CONNECTION with
 * *why (the certificate's problem when that is the cause). */
static int ss_grpc__tls_connect(ss_grpc *g, const struct ss_grpc_endpoint *e, char *why, size_t n)
{
    SSL *ssl = SSL_new(g->tls);
    if (ssl == NULL || SSL_set_fd(ssl, g->fd) != 1) {
        SSL_free(ssl);
        snprintf(why, n, "%s: cannot start TLS", e->url);
        return SS_E_CONNECTION;
    }
    /* The certificate must name the host: an IP address as such, a name
     * (sent as SNI too) by the usual rules. */
    unsigned char addr[16];
    bool ip = inet_pton(AF_INET, e->host, addr) == 1 || inet_pton(AF_INET6, e->host, addr) == 1;
    if (ip)
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), e->host);
    else {
        SSL_set_tlsext_host_name(ssl, e->host);
        SSL_set1_host(ssl, e->host);
    }
    uint64_t deadline = ss_grpc__mono_ms() + g->connect_timeout_ms;
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(ssl);
        if (r == 1)
            break;
        int err = SSL_get_error(ssl, r);
        if ((err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) && ss_grpc__tls_wait(g->fd, err, deadline))
            continue;
        long v = SSL_get_verify_result(ssl);
        char detail[120];
        unsigned long e2 = ERR_peek_last_error();
        if (v != X509_V_OK)
            snprintf(detail, sizeof detail, "certificate verify failed: %s", X509_verify_cert_error_string(v));
        else if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
            snprintf(detail, sizeof detail, "TLS handshake timed out");
        else if (e2)
            snprintf(detail, sizeof detail, "TLS handshake failed: %s", ERR_reason_error_string(e2));
        else
            snprintf(detail, sizeof detail, "TLS handshake failed (the server closed the connection)");
        snprintf(why, n, "%s: %s", e->url, detail);
        ERR_clear_error();
        SSL_free(ssl);
        return SS_E_CONNECTION;
    }
    const unsigned char *proto = NULL;
    unsigned int plen = 0;
    SSL_get0_alpn_selected(ssl, &proto, &plen);
    if (plen != 2 || memcmp(proto, "h2", 2) != 0) {
        snprintf(why, n, "%s: the server does not speak HTTP/2 over TLS (ALPN)", e->url);
        SSL_free(ssl);
        return SS_E_CONNECTION;
    }
    g->ssl = ssl;
    return SS_OK;
}

/* Keep why TLS gave up: an alert from the server (a refused client
 * certificate arrives after the handshake with TLS 1.3) says more than
 * "connection lost". */
static void ss_grpc__tls_note(ss_grpc *g)
{
    unsigned long e = ERR_peek_last_error();
    if (e && ERR_reason_error_string(e))
        snprintf(g->tls_error, sizeof g->tls_error, "TLS: %s", ERR_reason_error_string(e));
    ERR_clear_error();
}

/* Why the connection was lost, as well as is known. */
static const char *ss_grpc__lost(const ss_grpc *g)
{
    return g->tls_error[0] ? g->tls_error : "connection lost";
}

/* Send n bytes (all of them): 0, or -1 when the connection broke. */
static int ss_grpc__send_all(ss_grpc *g, const uint8_t *data, size_t n)
{
    size_t off = 0;
    while (off < n) {
        if (g->ssl) {
            ERR_clear_error();
            int w = SSL_write(g->ssl, data + off, (int)(n - off > INT32_MAX ? INT32_MAX : n - off));
            if (w > 0) {
                off += (size_t)w;
                continue;
            }
            int err = SSL_get_error(g->ssl, w);
            if ((err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) &&
                ss_grpc__tls_wait(g->fd, err, ss_grpc__mono_ms() + 5000))
                continue;
            ss_grpc__tls_note(g);
            return -1;
        }
        ssize_t w = send(g->fd, data + off, n - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* The peer reads slowly: wait until it can take more. */
            struct pollfd p = {g->fd, POLLOUT, 0};
            if (poll(&p, 1, 5000) == 1)
                continue;
        }
        return -1;
    }
    return 0;
}

/* Read what is there: bytes (> 0), 0 when nothing more is there now, -1
 * when the connection closed or broke. */
static ssize_t ss_grpc__recv_some(ss_grpc *g, uint8_t *buf, size_t n)
{
    if (g->ssl) {
        ERR_clear_error();
        int r = SSL_read(g->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
        if (r > 0)
            return r;
        int err = SSL_get_error(g->ssl, r);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
            return 0;
        ss_grpc__tls_note(g);
        return -1;
    }
    for (;;) {
        ssize_t r = recv(g->fd, buf, n, MSG_DONTWAIT);
        if (r > 0)
            return r;
        if (r < 0 && errno == EINTR)
            continue;
        return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
}

/* Close the socket (and its TLS). */
static void ss_grpc__close_socket(ss_grpc *g)
{
    g->tls_error[0] = '\0';
    if (g->ssl) {
        SSL_free(g->ssl);
        g->ssl = NULL;
    }
    if (g->fd >= 0) {
        close(g->fd);
        g->fd = -1;
    }
}

/* ---- the connection (I/O thread) ---------------------------------------- */

static void ss_grpc__disconnect(ss_grpc *g, const char *why)
{
    char what[200]; /* first: why may be g->tls_error, which closing clears */
    snprintf(what, sizeof what, "%s: %s", g->eps[g->connected_to].url, why);
    if (g->session) {
        nghttp2_session_del(g->session);
        g->session = NULL;
    }
    ss_grpc__close_socket(g);
    /* The calls on the lost connection: their outcome is unknown. */
    while (g->running) {
        ss_grpc_call *c = g->running;
        g->running = c->next;
        ss_grpc__fail(g, c, c->timed_out ? SS_E_TIMEOUT : SS_E_CONNECTION, what);
    }
    g->running = NULL;
    ss_grpc__rotate(g, g->connected_to);
}

/* Connect to endpoint i within the connect timeout. 0 or SS_E_CONNECTION
 * with *why. */
static int ss_grpc__dial(ss_grpc *g, size_t i, char *why, size_t n)
{
    const struct ss_grpc_endpoint *e = &g->eps[i];
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int gai = getaddrinfo(e->host, e->port, &hints, &res);
    if (gai != 0) {
        snprintf(why, n, "%s: %s", e->url, gai_strerror(gai));
        return SS_E_CONNECTION;
    }
    int err = ECONNREFUSED;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        /* A call is a HEADERS frame then a DATA frame: with Nagle's
         * algorithm the second waits for the peer's delayed ACK (40 ms). */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            err = errno;
            close(fd);
            continue;
        }
        struct pollfd p = {fd, POLLOUT, 0};
        int r = poll(&p, 1, (int)g->connect_timeout_ms);
        socklen_t len = sizeof err;
        if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
            freeaddrinfo(res);
            g->fd = fd;
            return SS_OK;
        }
        if (r == 0)
            err = ETIMEDOUT;
        close(fd);
    }
    freeaddrinfo(res);
    snprintf(why, n, "%s: %s", e->url, strerror(err));
    return SS_E_CONNECTION;
}

static int ss_grpc__connect(ss_grpc *g, char *why, size_t n)
{
    pthread_mutex_lock(&g->mu);
    size_t i = g->current;
    pthread_mutex_unlock(&g->mu);
    g->connected_to = i;
    int rc = ss_grpc__dial(g, i, why, n);
    if (rc == SS_OK && g->eps[i].tls && (rc = ss_grpc__tls_connect(g, &g->eps[i], why, n)) != SS_OK)
        ss_grpc__close_socket(g);
    if (rc != SS_OK) {
        ss_grpc__rotate(g, i);
        return rc;
    }
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        ss_grpc__close_socket(g);
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
        if (ss_grpc__send_all(g, data, (size_t)n) != 0)
            return false;
    }
}

/* Read what arrived and feed it to nghttp2. false when the connection
 * broke or closed. */
static bool ss_grpc__receive(ss_grpc *g)
{
    uint8_t buf[65536];
    for (;;) {
        ssize_t r = ss_grpc__recv_some(g, buf, sizeof buf);
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
                               : ss_grpc__mono_ms() + (c->timeout_ms ? c->timeout_ms : SS_GRPC_TIMEOUT_MS_DEFAULT);
    const struct ss_grpc_endpoint *e = &g->eps[g->connected_to];
    char token[sizeof g->token];
    pthread_mutex_lock(&g->mu);
    ss_buf_clear(&c->inbox); /* the owner takes a stream's messages under mu */
    memcpy(token, g->token, sizeof token);
    pthread_mutex_unlock(&g->mu);
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
    uint64_t now = ss_grpc__mono_ms(), next = now + 1000;
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

static bool ss_grpc__only_streams(const ss_grpc *g)
{
    for (const ss_grpc_call *c = g->running; c; c = c->next)
        if (!c->stream)
            return false;
    return true;
}

static void *ss_grpc__main(void *arg)
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
            ss_grpc__disconnect(g, ss_grpc__lost(g));
        ss_grpc__hand_back(g);
        struct pollfd p[2] = {{g->event_fd, POLLIN, 0}, {g->fd, POLLIN, 0}};
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
                    ss_grpc__disconnect(g, alive ? "closed by the server" : ss_grpc__lost(g));
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

/* ---- the owner's side --------------------------------------------------- */

int ss_grpc_new(const ss_grpc_options *o, ss_grpc **out, char *why, size_t why_len)
{
    ss_grpc__say(why, why_len, "", NULL);
    ss_grpc *g = calloc(1, sizeof *g);
    if (g == NULL)
        return SS_E_NOMEM;
    g->fd = -1;
    g->event_fd = -1;
    g->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : SS_GRPC_CONNECT_MS_DEFAULT;
    g->wake = o->wake;
    g->wake_ctx = o->wake_ctx;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    int rc = ss_grpc__parse_endpoints(g, o->endpoints, why, why_len);
    bool any_tls = false;
    for (size_t i = 0; rc == SS_OK && i < g->n_eps; i++)
        any_tls = any_tls || g->eps[i].tls;
    if (rc == SS_OK && any_tls)
        rc = ss_grpc__tls_setup(g, o, why, why_len);
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
    SSL_CTX_free(g->tls);
    for (size_t i = 0; i < g->n_eps; i++) {
        free(g->eps[i].url);
        free(g->eps[i].host);
        free(g->eps[i].port);
        free(g->eps[i].authority);
    }
    free(g->eps);
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
    const char *u = g->eps[g->current].url;
    pthread_mutex_unlock(&g->mu);
    return u;
}
