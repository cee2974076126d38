/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* delay_proxy.c - a TCP proxy that delays what it forwards
 * (delay_proxy.h). One thread polls the listening socket and every
 * connection pair; each direction keeps a queue of chunks, each with the
 * time it may leave (never before the chunk ahead of it). */
#include "delay_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

#define PROXY_PAIRS 32
#define PROXY_CHUNK 16384

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
};

struct delay_proxy {
    pthread_t thread;
    pthread_mutex_t mu;
    int listen_fd;
    struct sockaddr_in to;
    int delay_ms, jitter_ms; /* under mu */
    bool stop;               /* under mu */
    unsigned seed;
    struct pair pairs[PROXY_PAIRS];
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
    p->used = false;
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
                                        .f = {{.from = c, .to = s}, {.from = s, .to = c}}};
            return;
        }
    }
    close(c); /* no room: refused */
    close(s);
}

/* Read what `from` has into a new chunk; false when the flow ended. */
static bool flow_read(struct delay_proxy *x, struct flow *f, uint64_t now)
{
    struct chunk *c = malloc(sizeof *c + PROXY_CHUNK);
    if (c == NULL)
        return false;
    ssize_t n = read(f->from, c->data, PROXY_CHUNK);
    if (n <= 0) {
        free(c);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        f->eof = true;
        return true;
    }
    pthread_mutex_lock(&x->mu);
    int delay = x->delay_ms, jitter = x->jitter_ms;
    pthread_mutex_unlock(&x->mu);
    int64_t d = delay + (jitter ? (int)(rand_r(&x->seed) % (unsigned)(2 * jitter + 1)) - jitter : 0);
    uint64_t due = now + (uint64_t)(d > 0 ? d : 0);
    if (due < f->last_due)
        due = f->last_due;
    f->last_due = due;
    c->next = NULL;
    c->due_ms = due;
    c->len = (size_t)n;
    c->sent = 0;
    if (f->tail)
        f->tail->next = c;
    else
        f->head = c;
    f->tail = c;
    return true;
}

/* Write the chunks that are due; false when `to` failed. */
static bool flow_write(struct flow *f, uint64_t now)
{
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
                flow_read(x, &p->f[map[j] % 2], now);
        }
        for (int i = 0; i < PROXY_PAIRS; i++) {
            struct pair *p = &x->pairs[i];
            if (!p->used)
                continue;
            bool ok = flow_write(&p->f[0], now) && flow_write(&p->f[1], now);
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

void delay_proxy_stop(struct delay_proxy *x)
{
    pthread_mutex_lock(&x->mu);
    x->stop = true;
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->thread, NULL);
    close(x->listen_fd);
    pthread_mutex_destroy(&x->mu);
    free(x);
}
