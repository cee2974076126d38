/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* transport.c - the gRPC channel's endpoints and its connection to one of
 * them: address resolution, a non-blocking TCP socket, TLS with OpenSSL
 * (transport.h).
 *
 * The socket is non-blocking (the I/O thread polls it with its eventfd);
 * sends wait with poll while the peer reads slowly, receives take what is
 * there. With TLS, OpenSSL reads and writes on the socket itself, and
 * what it gave up on is kept (tls_error) for the message of the calls
 * that the lost connection ends.
 */
#include "transport.h"

#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../core/errors.h"

#define SS_TRANSPORT_CONNECT_MS_DEFAULT 2000u

struct ss_transport {
    ss_transport_endpoint *eps;
    size_t n_eps;
    unsigned connect_timeout_ms;
    SSL_CTX *tls; /* when an endpoint is https:// */
    /* the connection (I/O thread only) */
    int fd;
    SSL *ssl;            /* the connection's TLS, when its endpoint is https:// */
    char tls_error[120]; /* why TLS gave up on the connection ("" if it did not) */
};

uint64_t ss_transport_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void ss_transport__say(char *why, size_t n, const char *text, const char *arg)
{
    if (why && n)
        snprintf(why, n, "%s%s", text, arg ? arg : "");
}

/* ---- endpoints ---------------------------------------------------------- */

/* "http://host:port" (host may be [v6]) into e. */
static int ss_transport__parse_url(ss_transport_endpoint *e, const char *url, size_t len, char *why,
                                   size_t why_len)
{
    e->url = strndup(url, len);
    if (e->url == NULL)
        return SS_E_NOMEM;
    e->tls = strncmp(e->url, "https://", 8) == 0;
    if (!e->tls && strncmp(e->url, "http://", 7) != 0) {
        ss_transport__say(why, why_len, "an endpoint must start with http:// or https://: ", e->url);
        return SS_E_INVAL;
    }
    const char *h = e->url + (e->tls ? 8 : 7);
    const char *colon = h[0] == '[' ? strstr(h, "]:") : strrchr(h, ':');
    if (colon && h[0] == '[')
        colon++;
    if (colon == NULL || colon == h || colon[1] == '\0' || strchr(colon, '/')) {
        ss_transport__say(why, why_len, "an endpoint needs a host and a port (http://host:port): ", e->url);
        return SS_E_INVAL;
    }
    bool v6 = h[0] == '[';
    e->host = strndup(h + v6, (size_t)(colon - h) - 2 * v6);
    e->port = strdup(colon + 1);
    e->authority = strdup(h);
    return e->host && e->port && e->authority ? SS_OK : SS_E_NOMEM;
}

/* Split the comma-separated endpoints (spaces and a trailing '/' allowed). */
static int ss_transport__parse_endpoints(ss_transport *t, const char *list, char *why, size_t why_len)
{
    size_t max = 1;
    for (const char *p = list ? list : ""; *p; p++)
        max += *p == ',';
    t->eps = calloc(max, sizeof *t->eps);
    if (t->eps == NULL)
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
            int rc = ss_transport__parse_url(&t->eps[t->n_eps++], p, len, why, why_len);
            if (rc != SS_OK)
                return rc;
        }
        p += used;
    }
    if (t->n_eps == 0) {
        ss_transport__say(why, why_len, "no endpoint given", NULL);
        return SS_E_INVAL;
    }
    return SS_OK;
}

/* ---- TLS ---------------------------------------------------------------- */

/* The TLS context for https:// endpoints: TLS 1.2 or later, the server's
 * certificate verified (ca_file, or the system's CAs), ALPN "h2", and a
 * client certificate when given. */
static int ss_transport__tls_setup(ss_transport *t, const ss_grpc_options *o, char *why, size_t why_len)
{
    static const unsigned char alpn[] = {2, 'h', '2'};
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL)
        return SS_E_NOMEM;
    t->tls = ctx;
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
static bool ss_transport__tls_wait(int fd, int want, uint64_t deadline)
{
    uint64_t now = ss_transport_now_ms();
    if (now >= deadline)
        return false;
    struct pollfd p = {fd, want == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN, 0};
    return poll(&p, 1, (int)(deadline - now)) == 1;
}

/* The TLS handshake on t->fd for endpoint e, by deadline (monotonic ms).
 * 0 or SS_E_CONNECTION with *why (the certificate's problem when that is
 * the cause). */
static int ss_transport__tls_connect(ss_transport *t, const ss_transport_endpoint *e, uint64_t deadline,
                                     char *why, size_t n)
{
    SSL *ssl = SSL_new(t->tls);
    if (ssl == NULL || SSL_set_fd(ssl, t->fd) != 1) {
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
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(ssl);
        if (r == 1)
            break;
        int err = SSL_get_error(ssl, r);
        if ((err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) &&
            ss_transport__tls_wait(t->fd, err, deadline))
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
    t->ssl = ssl;
    return SS_OK;
}

/* Keep why TLS gave up: an alert from the server (a refused client
 * certificate arrives after the handshake with TLS 1.3) says more than
 * "connection lost". */
static void ss_transport__tls_note(ss_transport *t)
{
    unsigned long e = ERR_peek_last_error();
    if (e && ERR_reason_error_string(e))
        snprintf(t->tls_error, sizeof t->tls_error, "TLS: %s", ERR_reason_error_string(e));
    ERR_clear_error();
}

const char *ss_transport_lost(const ss_transport *t)
{
    return t->tls_error[0] ? t->tls_error : "connection lost";
}

int ss_transport_send(ss_transport *t, const uint8_t *data, size_t n)
{
    size_t off = 0;
    while (off < n) {
        if (t->ssl) {
            ERR_clear_error();
            int w = SSL_write(t->ssl, data + off, (int)(n - off > INT32_MAX ? INT32_MAX : n - off));
            if (w > 0) {
                off += (size_t)w;
                continue;
            }
            int err = SSL_get_error(t->ssl, w);
            if ((err == SSL_ERROR_WANT_WRITE || err == SSL_ERROR_WANT_READ) &&
                ss_transport__tls_wait(t->fd, err, ss_transport_now_ms() + 5000))
                continue;
            ss_transport__tls_note(t);
            return -1;
        }
        ssize_t w = send(t->fd, data + off, n - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            /* The peer reads slowly: wait until it can take more. */
            struct pollfd p = {t->fd, POLLOUT, 0};
            if (poll(&p, 1, 5000) == 1)
                continue;
        }
        return -1;
    }
    return 0;
}

ssize_t ss_transport_recv(ss_transport *t, uint8_t *buf, size_t n)
{
    if (t->ssl) {
        ERR_clear_error();
        int r = SSL_read(t->ssl, buf, (int)(n > INT32_MAX ? INT32_MAX : n));
        if (r > 0)
            return r;
        int err = SSL_get_error(t->ssl, r);
        if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
            return 0;
        ss_transport__tls_note(t);
        return -1;
    }
    for (;;) {
        ssize_t r = recv(t->fd, buf, n, MSG_DONTWAIT);
        if (r > 0)
            return r;
        if (r < 0 && errno == EINTR)
            continue;
        return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
}

void ss_transport_close(ss_transport *t)
{
    t->tls_error[0] = '\0';
    if (t->ssl) {
        SSL_free(t->ssl);
        t->ssl = NULL;
    }
    if (t->fd >= 0) {
        close(t->fd);
        t->fd = -1;
    }
}

/* ---- connecting --------------------------------------------------------- */

/* Connect to endpoint i by deadline (monotonic ms). 0 or SS_E_CONNECTION
 * with *why. */
static int ss_transport__dial(ss_transport *t, size_t i, uint64_t deadline, char *why, size_t n)
{
    const ss_transport_endpoint *e = &t->eps[i];
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
        uint64_t now = ss_transport_now_ms();
        int r = now < deadline ? poll(&p, 1, (int)(deadline - now)) : 0;
        socklen_t len = sizeof err;
        if (r == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) {
            freeaddrinfo(res);
            t->fd = fd;
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

int ss_transport_connect(ss_transport *t, size_t i, char *why, size_t n)
{
    /* One deadline for the whole: each address tried and the handshake
     * used to get the timeout each, and a member that took the
     * connection and hung in TLS held the calls twice as long. */
    uint64_t deadline = ss_transport_now_ms() + t->connect_timeout_ms;
    int rc = ss_transport__dial(t, i, deadline, why, n);
    if (rc == SS_OK && t->eps[i].tls && (rc = ss_transport__tls_connect(t, &t->eps[i], deadline, why, n)) != SS_OK)
        ss_transport_close(t);
    return rc;
}

int ss_transport_fd(const ss_transport *t)
{
    return t->fd;
}

/* ---- the transport ------------------------------------------------------ */

int ss_transport_new(const ss_grpc_options *o, ss_transport **out, char *why, size_t why_len)
{
    ss_transport *t = calloc(1, sizeof *t);
    if (t == NULL)
        return SS_E_NOMEM;
    t->fd = -1;
    t->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : SS_TRANSPORT_CONNECT_MS_DEFAULT;
    int rc = ss_transport__parse_endpoints(t, o->endpoints, why, why_len);
    bool any_tls = false;
    for (size_t i = 0; rc == SS_OK && i < t->n_eps; i++)
        any_tls = any_tls || t->eps[i].tls;
    if (rc == SS_OK && any_tls)
        rc = ss_transport__tls_setup(t, o, why, why_len);
    if (rc != SS_OK) {
        ss_transport_free(t);
        return rc;
    }
    *out = t;
    return SS_OK;
}

void ss_transport_free(ss_transport *t)
{
    if (t == NULL)
        return;
    ss_transport_close(t);
    SSL_CTX_free(t->tls);
    for (size_t i = 0; i < t->n_eps; i++) {
        free(t->eps[i].url);
        free(t->eps[i].host);
        free(t->eps[i].port);
        free(t->eps[i].authority);
    }
    free(t->eps);
    free(t);
}

size_t ss_transport_count(const ss_transport *t)
{
    return t->n_eps;
}

const ss_transport_endpoint *ss_transport_at(const ss_transport *t, size_t i)
{
    return &t->eps[i];
}
