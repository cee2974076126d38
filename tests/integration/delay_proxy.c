/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* delay_proxy.c - a TCP proxy that delays what it forwards
 * (delay_proxy.h). One thread polls the listening socket and every
 * connection pair; each direction keeps a queue of chunks, each with the
 * time it may leave (never before the chunk ahead of it). A tap reads the
 * client's bytes as HTTP/2 and keeps the gRPC messages it sends. */
#include "delay_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

#define PROXY_PAIRS 32
#define PROXY_CHUNK 16384
#define TAP_STREAMS 16
#define TAP_KEPT 64
#define H2_PREFACE_LEN 24
#define H2_DATA 0
#define H2_HEADERS 1
#define H2_RST_STREAM 3
#define H2_FLAG_END_STREAM 0x1
#define H2_FLAG_PADDED 0x8

/* A request stream's DATA so far (its gRPC messages, framed). */
struct tap_stream {
    uint32_t id; /* 0: free */
    uint8_t *data;
    size_t len, cap;
};

/* The tap's reading of one connection's client-to-server bytes. */
struct tap {
    size_t preface_left;
    uint8_t head[9];
    size_t head_len;
    size_t left;       /* payload bytes of the current frame still to come */
    uint8_t type, flags; /* the current frame's */
    bool data_frame;   /* the current frame is DATA */
    size_t pad;        /* its padding, at the payload's end */
    bool pad_known;    /* the pad length byte was read (or there is none) */
    uint32_t stream;
    struct tap_stream s[TAP_STREAMS];
};

/* The reading of one connection's server-to-client bytes as HTTP/2
 * frames, to hold those of the streams a client keeps open (a watch). */
struct cut {
    uint8_t head[9];
    size_t head_len;
    size_t left;        /* payload bytes of the current frame still to come */
    bool held;          /* the current frame is held */
    uint8_t *lag;       /* held bytes, in order */
    size_t lag_len, lag_cap;
};

struct chunk {
    struct chunk *next;
    uint64_t due_ms;
    size_t len, sent;
    uint8_t data[];
};

/* One direction of a connection: read from `from`, queued, written to `to`. */
struct flow {
    int from, to;
    struct chunk *head, *tail;
    uint64_t last_due; /* chunks leave in order */
    bool eof;          /* `from` ended: shut `to` down once the queue is out */
};

struct pair {
    bool used;
    struct flow f[2]; /* client to server, server to client */
    struct tap tap;
    struct cut cut;
};

struct tapped {
    uint8_t *data;
    size_t len;
};

struct delay_proxy {
    pthread_t thread;
    pthread_mutex_t mu;
    int listen_fd;
    struct sockaddr_in to;
    int delay_ms, jitter_ms; /* under mu */
    bool hold;               /* under mu: what clients send waits */
    bool stop;               /* under mu */
    unsigned seed;
    struct pair pairs[PROXY_PAIRS];
    size_t tap_min;            /* under mu; 0: none kept by length */
    char tap_needle[64];       /* under mu; "": none kept by content */
    struct tapped kept[TAP_KEPT]; /* under mu */
    size_t nkept;
    char mute_needles[2][64]; /* under mu: a client message holding both mutes the servers... */
    char mute_after[64];      /* under mu: ...once one holding this went ("": at once) */
    bool mute_armed;          /* under mu: it went */
    bool muted;               /* under mu: what servers send is dropped */
    bool lagging;             /* under mu: the servers' frames on open streams are held */
};

static void flow_free(struct flow *f)
{
    for (struct chunk *c = f->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    f->head = f->tail = NULL;
}

static void pair_close(struct pair *p)
{
    close(p->f[0].from);
    close(p->f[0].to);
    flow_free(&p->f[0]);
    flow_free(&p->f[1]);
    for (int i = 0; i < TAP_STREAMS; i++)
        free(p->tap.s[i].data);
    free(p->cut.lag);
    p->used = false;
}

/* ---- the tap ------------------------------------------------------------- */

/* Stream id's slot; a new one if open (at its HEADERS), else NULL when it
 * has none (more than TAP_STREAMS at once: that stream is not kept). */
static struct tap_stream *tap_stream(struct tap *t, uint32_t id, bool open)
{
    struct tap_stream *free_one = NULL;
    for (int i = 0; i < TAP_STREAMS; i++) {
        if (t->s[i].id == id)
            return &t->s[i];
        if (t->s[i].id == 0 && free_one == NULL)
            free_one = &t->s[i];
    }
    if (!open || free_one == NULL)
        return NULL;
    free_one->id = id;
    free_one->len = 0;
    return free_one;
}

/* The frame just read ended stream id (END_STREAM, RST_STREAM): its slot
 * is free. */
static void tap_stream_end(struct tap *t, uint32_t id)
{
    struct tap_stream *s = tap_stream(t, id, false);
    if (s) {
        s->id = 0;
        s->len = 0;
    }
}

/* Does p[0..n) hold needle[0..nl)? */
static bool holds(const uint8_t *p, size_t n, const char *needle, size_t nl)
{
    for (size_t i = 0; i + nl <= n; i++)
        if (memcmp(p + i, needle, nl) == 0)
            return true;
    return false;
}

/* Keep the complete messages at the start of stream s's bytes. */
static void tap_messages(struct delay_proxy *x, struct tap_stream *s)
{
    size_t off = 0;
    while (s->len - off >= 5) {
        size_t n = (size_t)s->data[off + 1] << 24 | (size_t)s->data[off + 2] << 16 |
                   (size_t)s->data[off + 3] << 8 | s->data[off + 4];
        if (s->len - off - 5 < n)
            break;
        const uint8_t *msg = s->data + off + 5;
        pthread_mutex_lock(&x->mu);
        size_t nl = strlen(x->tap_needle);
        bool keep = (x->tap_min && n >= x->tap_min) || (nl && holds(msg, n, x->tap_needle, nl));
        if (x->mute_needles[0][0] && x->mute_armed &&
            holds(msg, n, x->mute_needles[0], strlen(x->mute_needles[0])) &&
            holds(msg, n, x->mute_needles[1], strlen(x->mute_needles[1])))
            x->muted = true;
        if (x->mute_needles[0][0] && !x->mute_armed && holds(msg, n, x->mute_after, strlen(x->mute_after)))
            x->mute_armed = true;
        if (keep && x->nkept < TAP_KEPT) {
            uint8_t *copy = malloc(n);
            ASSERT_TRUE(copy != NULL);
            memcpy(copy, msg, n);
            x->kept[x->nkept++] = (struct tapped){copy, n};
        }
        pthread_mutex_unlock(&x->mu);
        off += 5 + n;
    }
    memmove(s->data, s->data + off, s->len - off);
    s->len -= off;
}

/* The payload bytes p[0..n) of a DATA frame on the tap's current stream. */
static void tap_data(struct delay_proxy *x, struct tap *t, const uint8_t *p, size_t n)
{
    struct tap_stream *s = tap_stream(t, t->stream, false);
    if (s == NULL)
        return;
    if (s->len + n > s->cap) {
        size_t cap = (s->len + n) * 2;
        uint8_t *d = realloc(s->data, cap);
        ASSERT_TRUE(d != NULL);
        s->data = d;
        s->cap = cap;
    }
    memcpy(s->data + s->len, p, n);
    s->len += n;
    tap_messages(x, s);
}

/* The current frame was read whole. */
static void tap_frame_end(struct tap *t)
{
    if ((t->type == H2_DATA && (t->flags & H2_FLAG_END_STREAM)) || t->type == H2_RST_STREAM)
        tap_stream_end(t, t->stream);
    t->head_len = 0;
}

/* Read data[0..len), the next bytes the client sent, as HTTP/2. */
static void tap_feed(struct delay_proxy *x, struct tap *t, const uint8_t *data, size_t len)
{
    while (len > 0) {
        if (t->preface_left > 0) {
            size_t k = len < t->preface_left ? len : t->preface_left;
            t->preface_left -= k;
            data += k;
            len -= k;
        } else if (t->left == 0 && t->head_len < 9) {
            t->head[t->head_len++] = *data++;
            len--;
            if (t->head_len == 9) {
                t->left = (size_t)t->head[0] << 16 | (size_t)t->head[1] << 8 | t->head[2];
                t->type = t->head[3];
                t->flags = t->head[4];
                t->data_frame = t->head[3] == H2_DATA;
                t->pad = 0;
                t->pad_known = !(t->data_frame && (t->head[4] & H2_FLAG_PADDED));
                t->stream = ((uint32_t)t->head[5] << 24 | (uint32_t)t->head[6] << 16 |
                             (uint32_t)t->head[7] << 8 | t->head[8]) & 0x7fffffffu;
                if (t->type == H2_HEADERS && !(t->flags & H2_FLAG_END_STREAM))
                    tap_stream(t, t->stream, true); /* a request begins */
                if (t->left == 0)
                    tap_frame_end(t);
            }
        } else {
            if (!t->pad_known) {
                t->pad = *data++;
                len--;
                t->left--;
                t->pad_known = true;
                continue;
            }
            size_t k = len < t->left ? len : t->left;
            size_t body = t->left > t->pad ? t->left - t->pad : 0; /* payload before the padding */
            size_t use = k < body ? k : body;
            if (t->data_frame && use > 0)
                tap_data(x, t, data, use);
            t->left -= k;
            data += k;
            len -= k;
            if (t->left == 0)
                tap_frame_end(t);
        }
    }
}

/* ---- the cut: a watch's answers held ------------------------------------ */

static void bytes_put(uint8_t **buf, size_t *len, size_t *cap, const uint8_t *p, size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*len + n) * 2;
        uint8_t *d = realloc(*buf, c);
        ASSERT_TRUE(d != NULL);
        *buf = d;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
}

/* Split data[0..len), the next bytes a server sent, into what goes on
 * (appended to out[0..*out_len), room for len + 9 bytes) and the frames
 * held in p->cut.lag: the DATA frames of a stream the client has not
 * ended (only etcd's watch stays open), while lagging or while held bytes
 * wait. Other frames go on: HEADERS must keep their order across streams
 * (HPACK's table is the connection's), and a stream's trailers would
 * overtake its held DATA, so a lag is for a stream that stays open. */
static void cut_feed(struct pair *p, bool lagging, const uint8_t *data, size_t len, uint8_t *out, size_t *out_len)
{
    struct cut *c = &p->cut;
    while (len > 0) {
        if (c->left == 0 && c->head_len < 9) {
            c->head[c->head_len++] = *data++;
            len--;
            if (c->head_len < 9)
                continue;
            c->left = (size_t)c->head[0] << 16 | (size_t)c->head[1] << 8 | c->head[2];
            uint32_t id = ((uint32_t)c->head[5] << 24 | (uint32_t)c->head[6] << 16 | (uint32_t)c->head[7] << 8 |
                           c->head[8]) & 0x7fffffffu;
            c->held = (lagging || c->lag_len > 0) && c->head[3] == H2_DATA && id != 0 &&
                      tap_stream(&p->tap, id, false) != NULL;
            if (c->held) {
                bytes_put(&c->lag, &c->lag_len, &c->lag_cap, c->head, 9);
            } else {
                memcpy(out + *out_len, c->head, 9);
                *out_len += 9;
            }
            if (c->left == 0)
                c->head_len = 0;
            continue;
        }
        size_t k = len < c->left ? len : c->left;
        if (c->held) {
            bytes_put(&c->lag, &c->lag_len, &c->lag_cap, data, k);
        } else {
            memcpy(out + *out_len, data, k);
            *out_len += k;
        }
        c->left -= k;
        data += k;
        len -= k;
        if (c->left == 0)
            c->head_len = 0;
    }
}

static void proxy_accept(struct delay_proxy *x)
{
    int c = accept(x->listen_fd, NULL, NULL);
    if (c < 0)
        return;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&x->to, sizeof x->to) != 0) {
        close(c);
        if (s >= 0)
            close(s);
        return;
    }
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (int i = 0; i < PROXY_PAIRS; i++) {
        if (!x->pairs[i].used) {
            x->pairs[i] = (struct pair){.used = true,
                                        .f = {{.from = c, .to = s}, {.from = s, .to = c}},
                                        .tap = {.preface_left = H2_PREFACE_LEN}};
            return;
        }
    }
    close(c); /* no room: refused */
    close(s);
}

/* Read what direction k of pair p has into a new chunk; false when the
 * flow ended. The client's bytes go through the tap too, the server's
 * through the cut. */
static bool flow_read(struct delay_proxy *x, struct pair *p, int k, uint64_t now)
{
    struct flow *f = &p->f[k];
    struct chunk *c = malloc(sizeof *c + PROXY_CHUNK + 9);
    if (c == NULL)
        return false;
    uint8_t in[PROXY_CHUNK];
    ssize_t n = read(f->from, in, PROXY_CHUNK);
    if (n <= 0) {
        free(c);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        f->eof = true;
        return true;
    }
    pthread_mutex_lock(&x->mu);
    int delay = x->delay_ms, jitter = x->jitter_ms;
    bool drop = k == 1 && x->muted, lagging = x->lagging;
    pthread_mutex_unlock(&x->mu);
    size_t len = 0;
    if (k == 0) {
        tap_feed(x, &p->tap, in, (size_t)n);
        memcpy(c->data, in, (size_t)n);
        len = (size_t)n;
    } else {
        cut_feed(p, lagging, in, (size_t)n, c->data, &len);
    }
    if (drop || len == 0) { /* a server's bytes while muted: lost; or all held */
        free(c);
        return true;
    }
    int64_t d = delay + (jitter ? (int)(rand_r(&x->seed) % (unsigned)(2 * jitter + 1)) - jitter : 0);
    uint64_t due = now + (uint64_t)(d > 0 ? d : 0);
    if (due < f->last_due)
        due = f->last_due;
    f->last_due = due;
    c->next = NULL;
    c->due_ms = due;
    c->len = len;
    c->sent = 0;
    if (f->tail)
        f->tail->next = c;
    else
        f->head = c;
    f->tail = c;
    return true;
}

/* The frames the cut held go on, after what was queued before them. */
static void flow_release(struct pair *p, uint64_t now)
{
    struct flow *f = &p->f[1];
    struct chunk *c = malloc(sizeof *c + p->cut.lag_len);
    ASSERT_TRUE(c != NULL);
    memcpy(c->data, p->cut.lag, p->cut.lag_len);
    *c = (struct chunk){.due_ms = now > f->last_due ? now : f->last_due, .len = p->cut.lag_len};
    f->last_due = c->due_ms;
    if (f->tail)
        f->tail->next = c;
    else
        f->head = c;
    f->tail = c;
    p->cut.lag_len = 0;
}

/* Write the chunks that are due, unless held; false when `to` failed. */
static bool flow_write(struct flow *f, uint64_t now, bool hold)
{
    if (hold)
        return true;
    while (f->head && f->head->due_ms <= now) {
        struct chunk *c = f->head;
        ssize_t n = send(f->to, c->data + c->sent, c->len - c->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR;
        c->sent += (size_t)n;
        if (c->sent < c->len)
            return true;
        f->head = c->next;
        if (f->head == NULL)
            f->tail = NULL;
        free(c);
    }
    if (f->head == NULL && f->eof)
        shutdown(f->to, SHUT_WR);
    return true;
}

static void *proxy_run(void *arg)
{
    struct delay_proxy *x = arg;
    for (;;) {
        pthread_mutex_lock(&x->mu);
        bool stop = x->stop;
        pthread_mutex_unlock(&x->mu);
        if (stop)
            break;
        struct pollfd pf[1 + 2 * PROXY_PAIRS];
        int map[1 + 2 * PROXY_PAIRS], n = 0;
        pf[n] = (struct pollfd){.fd = x->listen_fd, .events = POLLIN};
        map[n++] = -1;
        for (int i = 0; i < PROXY_PAIRS; i++) {
            for (int k = 0; x->pairs[i].used && k < 2; k++) {
                struct flow *f = &x->pairs[i].f[k];
                pf[n] = (struct pollfd){.fd = f->eof ? -1 : f->from, .events = POLLIN};
                map[n++] = i * 2 + k;
            }
        }
        poll(pf, (nfds_t)n, 5); /* chunks fall due between reads: look every 5 ms */
        uint64_t now = now_ms();
        if (pf[0].revents & POLLIN)
            proxy_accept(x);
        for (int j = 1; j < n; j++) {
            struct pair *p = &x->pairs[map[j] / 2];
            if (p->used && (pf[j].revents & (POLLIN | POLLHUP | POLLERR)))
                flow_read(x, p, map[j] % 2, now);
        }
        pthread_mutex_lock(&x->mu);
        bool hold = x->hold, lagging = x->lagging;
        pthread_mutex_unlock(&x->mu);
        for (int i = 0; i < PROXY_PAIRS && !lagging; i++) {
            struct cut *c = &x->pairs[i].cut;
            /* Whole frames only: the rest of a held one is held too. */
            if (x->pairs[i].used && c->lag_len && !(c->held && c->left > 0))
                flow_release(&x->pairs[i], now);
        }
        for (int i = 0; i < PROXY_PAIRS; i++) {
            struct pair *p = &x->pairs[i];
            if (!p->used)
                continue;
            bool ok = flow_write(&p->f[0], now, hold) && flow_write(&p->f[1], now, false);
            bool done = p->f[0].eof && p->f[1].eof && !p->f[0].head && !p->f[1].head;
            if (!ok || done)
                pair_close(p);
        }
    }
    for (int i = 0; i < PROXY_PAIRS; i++)
        if (x->pairs[i].used)
            pair_close(&x->pairs[i]);
    return NULL;
}

struct delay_proxy *delay_proxy_start(const char *listen_addr, int listen_port, const char *to_addr, int to_port)
{
    struct delay_proxy *x = calloc(1, sizeof *x);
    ASSERT_TRUE(x != NULL);
    pthread_mutex_init(&x->mu, NULL);
    x->seed = (unsigned)listen_port;
    x->to = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)to_port)};
    ASSERT_EQ(inet_pton(AF_INET, to_addr, &x->to.sin_addr), 1);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)listen_port)};
    ASSERT_EQ(inet_pton(AF_INET, listen_addr, &a.sin_addr), 1);
    x->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(x->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ASSERT_TRUE(x->listen_fd >= 0 && bind(x->listen_fd, (struct sockaddr *)&a, sizeof a) == 0 &&
                listen(x->listen_fd, 64) == 0);
    ASSERT_EQ(pthread_create(&x->thread, NULL, proxy_run, x), 0);
    return x;
}

void delay_proxy_set(struct delay_proxy *x, int delay_ms, int jitter_ms)
{
    pthread_mutex_lock(&x->mu);
    x->delay_ms = delay_ms;
    x->jitter_ms = jitter_ms;
    pthread_mutex_unlock(&x->mu);
}

void delay_proxy_hold(struct delay_proxy *x, bool hold)
{
    pthread_mutex_lock(&x->mu);
    x->hold = hold;
    pthread_mutex_unlock(&x->mu);
}

void delay_proxy_lag(struct delay_proxy *x, bool lag)
{
    pthread_mutex_lock(&x->mu);
    x->lagging = lag;
    pthread_mutex_unlock(&x->mu);
}

void delay_proxy_tap(struct delay_proxy *x, size_t min_len, const char *needle)
{
    pthread_mutex_lock(&x->mu);
    x->tap_min = min_len;
    snprintf(x->tap_needle, sizeof x->tap_needle, "%s", needle ? needle : "");
    pthread_mutex_unlock(&x->mu);
}

void delay_proxy_mute_after(struct delay_proxy *x, const char *after, const char *needle1, const char *needle2)
{
    pthread_mutex_lock(&x->mu);
    snprintf(x->mute_after, sizeof x->mute_after, "%s", after ? after : "");
    x->mute_armed = after == NULL;
    snprintf(x->mute_needles[0], sizeof x->mute_needles[0], "%s", needle1 ? needle1 : "");
    snprintf(x->mute_needles[1], sizeof x->mute_needles[1], "%s", needle2 ? needle2 : "");
    x->muted = false;
    pthread_mutex_unlock(&x->mu);
}

size_t delay_proxy_tapped(struct delay_proxy *x, size_t i, uint8_t **msg)
{
    pthread_mutex_lock(&x->mu);
    size_t n = i < x->nkept ? x->kept[i].len : 0;
    *msg = NULL;
    if (n) {
        *msg = malloc(n);
        ASSERT_TRUE(*msg != NULL);
        memcpy(*msg, x->kept[i].data, n);
    }
    pthread_mutex_unlock(&x->mu);
    return n;
}

void delay_proxy_stop(struct delay_proxy *x)
{
    pthread_mutex_lock(&x->mu);
    x->stop = true;
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->thread, NULL);
    close(x->listen_fd);
    for (size_t i = 0; i < x->nkept; i++)
        free(x->kept[i].data);
    pthread_mutex_destroy(&x->mu);
    free(x);
}
