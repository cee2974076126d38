/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mqtt_raw.c - see mqtt_raw.h. */
#include "mqtt_raw.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void raw_die(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, strerror(errno));
    exit(2);
}

void raw_put(struct rbuf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        while (b->len + n > b->cap)
            b->cap = b->cap ? b->cap * 2 : 65536;
        b->p = realloc(b->p, b->cap);
        if (b->p == NULL)
            raw_die("realloc");
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

void raw_put_u8(struct rbuf *b, uint8_t v)
{
    raw_put(b, &v, 1);
}

void raw_put_u16(struct rbuf *b, unsigned v)
{
    uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
    raw_put(b, x, 2);
}

void raw_put_varint(struct rbuf *b, size_t v)
{
    do {
        uint8_t byte = v % 128;
        v /= 128;
        raw_put_u8(b, (uint8_t)(byte | (v ? 0x80 : 0)));
    } while (v);
}

void raw_put_str(struct rbuf *b, const void *s, size_t n)
{
    raw_put_u16(b, (unsigned)n);
    raw_put(b, s, n);
}

void raw_put_packet(struct rbuf *b, uint8_t type, const struct rbuf *body)
{
    raw_put_u8(b, type);
    raw_put_varint(b, body->len);
    raw_put(b, body->p, body->len);
}

void raw_put_request(struct rbuf *b, unsigned id, const char *resp_topic, const void *corr,
                     size_t corr_len, const void *payload, size_t len)
{
    raw_put_request_to(b, RAW_REQ_TOPIC, id, resp_topic, corr, corr_len, payload, len);
}

void raw_put_request_to(struct rbuf *b, const char *topic, unsigned id, const char *resp_topic, const void *corr,
                        size_t corr_len, const void *payload, size_t len)
{
    static struct rbuf body, props;
    body.len = props.len = 0;
    raw_put_u8(&props, 0x08);
    raw_put_str(&props, resp_topic, strlen(resp_topic));
    raw_put_u8(&props, 0x09);
    raw_put_str(&props, corr, corr_len);
    char ts[48];
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    int tl = sprintf(ts, "%lld:0:raw", (long long)rt.tv_sec * 1000 + rt.tv_nsec / 1000000);
    raw_put_u8(&props, 0x26);
    raw_put_str(&props, "__ts", 4);
    raw_put_str(&props, ts, (size_t)tl);
    raw_put_str(&body, topic, strlen(topic));
    raw_put_u16(&body, id);
    raw_put_varint(&body, props.len);
    raw_put(&body, props.p, props.len);
    raw_put(&body, payload, len);
    raw_put_packet(b, 0x32, &body);
}

size_t raw_get_varint(const uint8_t *p, size_t n, size_t *v)
{
    size_t mult = 1, i = 0;
    *v = 0;
    while (i < n && i < 4) {
        *v += (p[i] & 127) * mult;
        mult *= 128;
        if (!(p[i++] & 128))
            return i;
    }
    return 0;
}

void raw_flush(struct rconn *c)
{
    size_t off = 0;
    while (off < c->out.len) {
        ssize_t w = write(c->fd, c->out.p + off, c->out.len - off);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            raw_die("write");
        }
        off += (size_t)w;
    }
    memmove(c->out.p, c->out.p + off, c->out.len - off);
    c->out.len -= off;
}

int raw_read(struct rconn *c)
{
    ssize_t r = read(c->fd, c->in + c->in_len, RAW_INBUF - c->in_len);
    if (r == 0)
        return 0;
    if (r > 0)
        c->in_len += (size_t)r;
    else if (errno != EAGAIN && errno != EINTR)
        raw_die("read");
    return 1;
}

/* Blocking read of one whole packet of type want during the handshake. */
static void raw_expect(struct rconn *c, uint8_t want)
{
    for (;;) {
        size_t rem;
        size_t vl = c->in_len > 1 ? raw_get_varint(c->in + 1, c->in_len - 1, &rem) : 0;
        if (vl && c->in_len >= 1 + vl + rem) {
            if ((c->in[0] & 0xF0) != want) {
                fprintf(stderr, "unexpected packet 0x%02x\n", c->in[0]);
                exit(2);
            }
            size_t total = 1 + vl + rem;
            memmove(c->in, c->in + total, c->in_len - total);
            c->in_len -= total;
            return;
        }
        ssize_t r = read(c->fd, c->in + c->in_len, RAW_INBUF - c->in_len);
        if (r <= 0)
            raw_die("read");
        c->in_len += (size_t)r;
    }
}

void raw_open(struct rconn *c, const char *host, int port, const char *id, const char *topic)
{
    memset(c, 0, sizeof *c);
    c->in = malloc(RAW_INBUF);
    if (c->in == NULL)
        raw_die("malloc");
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    if (getaddrinfo(host, portstr, &hints, &ai) != 0)
        raw_die("resolve");
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0)
        raw_die("connect");
    freeaddrinfo(ai);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct rbuf body = {0};
    raw_put_str(&body, "MQTT", 4);
    raw_put_u8(&body, 5);
    raw_put_u8(&body, 0x02);
    raw_put_u16(&body, 60);
    raw_put_u8(&body, 3); /* properties: receive maximum */
    raw_put_u8(&body, 0x21);
    raw_put_u16(&body, 65535);
    raw_put_str(&body, id, strlen(id));
    raw_put_packet(&c->out, 0x10, &body);
    raw_flush(c);
    raw_expect(c, 0x20);
    if (topic) {
        body.len = 0;
        raw_put_u16(&body, 1);
        raw_put_u8(&body, 0);
        raw_put_str(&body, topic, strlen(topic));
        raw_put_u8(&body, 1);
        raw_put_packet(&c->out, 0x82, &body);
        raw_flush(c);
        raw_expect(c, 0x90);
    }
    free(body.p);
    fcntl(c->fd, F_SETFL, O_NONBLOCK);
}

void raw_close(struct rconn *c)
{
    static const uint8_t disc[] = {0xE0, 0x00};
    if (write(c->fd, disc, 2) < 0) {
        /* the connection is going away anyway */
    }
    close(c->fd);
    free(c->in);
    free(c->out.p);
}
