/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* loadgen.c - load generator for the state store over MQTT 5.
 *
 *   loadgen [-h HOST] [-p PORT] [-c CONNECTIONS] [-w IN_FLIGHT] [-s SET_PERCENT]
 *           [-k KEYS] [-l KEY_LEN] [-v VALUE_LEN] [-d SECONDS | -n COUNT]
 *           [--sequential] [--echo] [--prefix P] [--px MS] [--del-pct D] [--lease]
 *           [--label NAME] [--watch-patterns N [--watch-format FMT]]
 *
 * Each connection keeps IN_FLIGHT QoS 1 requests outstanding and sends the
 * next as soon as an answer arrives. It speaks MQTT 5 itself (mqtt_raw.c)
 * over non-blocking sockets from one thread, batching what it writes, so
 * that the generator costs the machine as little as possible next to the
 * broker it measures (a libmosquitto client spent more CPU than the broker).
 *
 * Every answer is checked: SET must answer +OK; GET either $-1 or exactly
 * the value this generator writes for that key (with --echo: the echo
 * plugin's fixed 64-byte bulk). --del-pct D makes D% of the requests DELs
 * (:1 or :0; SETs stay SET_PERCENT, GETs the rest). --lease makes the
 * SETs those of locks and leases, in turn: SET NX PX (taken: +OK, or
 * held: :-1), SET NEX PX (renewed: +OK, or lapsed: :-1), VDEL of the
 * value (released: :1, or gone: :0); --px gives their time (default
 * 2000). --sequential writes keys 0, 1, 2... in
 * order (to fill a store). Prints ops/s and p50/p99/max latency, then:
 *   LOADGEN label=.. ops=.. seconds=.. ops_per_s=.. p50_us=.. p99_us=.. max_us=.. errors=..
 * With --watch-patterns N, one more connection first registers N pattern
 * watches (WATCH with FMT's %d replaced by 0 .. N-1; by default FMT is
 * site/%d/ and a star)
 * on the administrative topic, each answered "ok", and stays connected
 * through the load; the summary line adds watch_patterns=N and
 * watch_notified= (the notifications it received).
 * Exit status 0 when no answer was wrong or missing.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mqtt_raw.h"

#define MAX_WINDOW 1024

struct options {
    const char *host;
    int port, conns, window, set_pct, keys, key_len, value_len;
    double seconds;
    long count;
    bool echo, sequential;
    const char *prefix, *label;
    long px;
    int del_pct;
    bool lease;
    int watch_patterns;
    const char *watch_format;
};

struct conn {
    struct rconn r;
    int index;
    char resp_topic[64];
    uint64_t sent_ns[MAX_WINDOW];
    int slot_key[MAX_WINDOW];
    enum req_kind { REQ_GET, REQ_SET, REQ_DEL, REQ_SET_NX, REQ_SET_NEX, REQ_VDEL } slot_kind[MAX_WINDOW];
    bool slot_busy[MAX_WINDOW];
    unsigned lease_turn; /* --lease: which of NX, NEX, VDEL comes next */
    int outstanding;
    unsigned seed;
};

static struct options o = {"127.0.0.1", 1883, 4, 64, 50, 100000, 16, 64, 5.0, 0, false, false, "k", "run", 0,
                          0, false, 0, "site/%d/*"};
static uint32_t *lat;
static size_t nlat, latcap;
static long errors, sent, next_seq;
static bool running;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int key_text(int k, char *out)
{
    return sprintf(out, "%s%0*d", o.prefix, o.key_len - (int)strlen(o.prefix), k);
}

static void value_text(int k, char *out)
{
    for (int i = 0; i < o.value_len; i++)
        out[i] = (char)('a' + (k + i) % 26);
}

static void send_request(struct conn *c, int slot)
{
    if (o.count > 0 && sent >= o.count)
        return;
    sent++;
    int k = o.sequential ? (int)(next_seq++ % o.keys) : (int)(rand_r(&c->seed) % (unsigned)o.keys);
    int dice = o.sequential ? 0 : (int)(rand_r(&c->seed) % 100);
    enum req_kind kind = dice < o.set_pct ? REQ_SET : dice < o.set_pct + o.del_pct ? REQ_DEL : REQ_GET;
    if (o.sequential)
        kind = REQ_SET;
    if (kind == REQ_SET && o.lease) {
        static const enum req_kind turn[3] = {REQ_SET_NX, REQ_SET_NEX, REQ_VDEL};
        kind = turn[c->lease_turn++ % 3];
    }
    static char payload[8192];
    char key[128], value[4096], px[24];
    int kl = key_text(k, key), n;
    long ms = o.px ? o.px : 2000;
    int pl = sprintf(px, "%ld", ms);
    bool with_px = o.px || kind == REQ_SET_NX || kind == REQ_SET_NEX;
    value_text(k, value);
    if (kind == REQ_GET || kind == REQ_DEL) {
        n = sprintf(payload, "*2\r\n$3\r\n%s\r\n$%d\r\n%s\r\n", kind == REQ_GET ? "GET" : "DEL", kl, key);
    } else if (kind == REQ_VDEL) {
        n = sprintf(payload, "*3\r\n$4\r\nVDEL\r\n$%d\r\n%s\r\n$%d\r\n", kl, key, o.value_len);
        memcpy(payload + n, value, (size_t)o.value_len);
        n += o.value_len;
        n += sprintf(payload + n, "\r\n");
    } else {
        int words = 3 + (with_px ? 2 : 0) + (kind != REQ_SET ? 1 : 0);
        n = sprintf(payload, "*%d\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n", words, kl, key, o.value_len);
        memcpy(payload + n, value, (size_t)o.value_len);
        n += o.value_len;
        n += sprintf(payload + n, "\r\n");
        if (kind == REQ_SET_NX)
            n += sprintf(payload + n, "$2\r\nNX\r\n");
        else if (kind == REQ_SET_NEX)
            n += sprintf(payload + n, "$3\r\nNEX\r\n");
        if (with_px)
            n += sprintf(payload + n, "$2\r\nPX\r\n$%d\r\n%s\r\n", pl, px);
    }
    uint8_t corr[8];
    memcpy(corr, &c->index, 4);
    memcpy(corr + 4, &slot, 4);
    raw_put_request(&c->r.out, (unsigned)slot + 1, c->resp_topic, corr, sizeof corr, payload, (size_t)n);
    c->slot_key[slot] = k;
    c->slot_kind[slot] = kind;
    c->slot_busy[slot] = true;
    c->sent_ns[slot] = now_ns();
    c->outstanding++;
}

static bool answer_is(const uint8_t *p, size_t len, const char *lit)
{
    return len == strlen(lit) && memcmp(p, lit, len) == 0;
}

static bool answer_ok(struct conn *c, int slot, const uint8_t *p, size_t len)
{
    switch (c->slot_kind[slot]) {
    case REQ_SET: return answer_is(p, len, "+OK\r\n");
    case REQ_SET_NX:
    case REQ_SET_NEX: return answer_is(p, len, "+OK\r\n") || answer_is(p, len, ":-1\r\n");
    case REQ_DEL:
    case REQ_VDEL: return answer_is(p, len, ":1\r\n") || answer_is(p, len, ":0\r\n");
    case REQ_GET: break;
    }
    if (len == 5 && memcmp(p, "$-1\r\n", 5) == 0)
        return !o.echo;
    if (o.echo)
        return len == 64 + 7 && p[0] == '$';
    char want[4200];
    int hn = sprintf(want, "$%d\r\n", o.value_len);
    value_text(c->slot_key[slot], want + hn);
    memcpy(want + hn + o.value_len, "\r\n", 2);
    return len == (size_t)(hn + o.value_len + 2) && memcmp(p, want, len) == 0;
}

/* An answer: find the correlation data, check, record, send the next. */
static void on_publish(struct conn *c, uint8_t flags, const uint8_t *p, size_t n)
{
    size_t i = 0;
    size_t tlen = (size_t)p[0] << 8 | p[1];
    i = 2 + tlen;
    int qos = (flags >> 1) & 3;
    if (qos) {
        uint8_t ack[4] = {0x40, 0x02, p[i], p[i + 1]};
        raw_put(&c->r.out, ack, 4);
        i += 2;
    }
    size_t plen;
    i += raw_get_varint(p + i, n - i, &plen);
    size_t pend = i + plen;
    int slot = -1;
    while (i < pend) {
        uint8_t id = p[i++];
        if (id == 0x09 || id == 0x08 || id == 0x03) {
            size_t l = (size_t)p[i] << 8 | p[i + 1];
            if (id == 0x09 && l == 8)
                memcpy(&slot, p + i + 2 + 4, 4);
            i += 2 + l;
        } else if (id == 0x26) {
            size_t l = (size_t)p[i] << 8 | p[i + 1];
            i += 2 + l;
            l = (size_t)p[i] << 8 | p[i + 1];
            i += 2 + l;
        } else if (id == 0x01) {
            i += 1;
        } else if (id == 0x02) {
            i += 4;
        } else {
            errors++;
            return;
        }
    }
    if (slot < 0 || slot >= o.window || !c->slot_busy[slot]) {
        errors++;
        return;
    }
    uint64_t us = (now_ns() - c->sent_ns[slot]) / 1000;
    if (!answer_ok(c, slot, p + pend, n - pend))
        errors++;
    if (nlat == latcap) {
        latcap = latcap ? latcap * 2 : 1 << 20;
        lat = realloc(lat, latcap * sizeof *lat);
    }
    lat[nlat++] = (uint32_t)(us > UINT32_MAX ? UINT32_MAX : us);
    c->slot_busy[slot] = false;
    c->outstanding--;
    if (running)
        send_request(c, slot);
}

/* Parse every complete packet in c->in. */
static void on_input(struct conn *c)
{
    size_t i = 0;
    while (i + 2 <= c->r.in_len) {
        size_t rem, vl = raw_get_varint(c->r.in + i + 1, c->r.in_len - i - 1, &rem);
        if (vl == 0 || i + 1 + vl + rem > c->r.in_len)
            break;
        uint8_t type = c->r.in[i];
        const uint8_t *body = c->r.in + i + 1 + vl;
        if ((type & 0xF0) == 0x30)
            on_publish(c, type & 0x0F, body, rem);
        else if (type == 0x40 && rem >= 3 && body[2] >= 0x80)
            errors++; /* a refused request */
        else if (type == 0xE0) {
            fprintf(stderr, "loadgen: disconnected by the broker (reason 0x%02x)\n", rem ? body[0] : 0);
            exit(2);
        }
        i += 1 + vl + rem;
    }
    memmove(c->r.in, c->r.in + i, c->r.in_len - i);
    c->r.in_len -= i;
}

static void open_conn(struct conn *c, int index)
{
    c->index = index;
    c->seed = (unsigned)(index * 7919 + 1);
    char id[48];
    snprintf(id, sizeof id, "loadgen-%d-%d", (int)getpid(), index);
    snprintf(c->resp_topic, sizeof c->resp_topic, "clients/%s/resp", id);
    raw_open(&c->r, o.host, o.port, id, c->resp_topic);
}

/* The watcher's input: PUBLISHes acknowledged (QoS 1) and counted, those
 * whose payload is exactly "ok\n" in *oks, others in *others. */
static void watcher_input(struct rconn *w, long *oks, long *others)
{
    size_t i = 0;
    while (i + 2 <= w->in_len) {
        size_t rem, vl = raw_get_varint(w->in + i + 1, w->in_len - i - 1, &rem);
        if (vl == 0 || i + 1 + vl + rem > w->in_len)
            break;
        uint8_t type = w->in[i];
        const uint8_t *p = w->in + i + 1 + vl;
        if ((type & 0xF0) == 0x30 && rem >= 2) {
            size_t at = 2 + ((size_t)p[0] << 8 | p[1]), plen;
            if ((type >> 1) & 3) {
                uint8_t ack[4] = {0x40, 0x02, p[at], p[at + 1]};
                raw_put(&w->out, ack, 4);
                at += 2;
            }
            at += raw_get_varint(p + at, rem - at, &plen) + plen;
            bool ok = rem - at == 3 && memcmp(p + at, "ok\n", 3) == 0;
            *(ok ? oks : others) += 1;
        }
        i += 1 + vl + rem;
    }
    memmove(w->in, w->in + i, w->in_len - i);
    w->in_len -= i;
}

/* --watch-patterns: register them all (10 s at most) before the load. */
static void open_watcher(struct rconn *w)
{
    char id[48], resp[64], pattern[128], payload[256];
    snprintf(id, sizeof id, "loadgen-%d-watcher", (int)getpid());
    snprintf(resp, sizeof resp, "clients/%s/resp", id);
    raw_open(w, o.host, o.port, id, resp);
    for (int i = 0; i < o.watch_patterns; i++) {
        const char *d = strstr(o.watch_format, "%d");
        int pl = snprintf(pattern, sizeof pattern, "%.*s%d%s", (int)(d - o.watch_format), o.watch_format, i, d + 2);
        int n = snprintf(payload, sizeof payload, "*2\r\n$5\r\nWATCH\r\n$%d\r\n%s\r\n", pl, pattern);
        raw_put_request_to(&w->out, RAW_ADMIN_TOPIC, (unsigned)(i % 65535) + 1, resp, "w", 1, payload, (size_t)n);
    }
    long oks = 0, others = 0;
    uint64_t until = now_ns() + 10000000000ull;
    while (oks + others < o.watch_patterns && now_ns() < until) {
        raw_flush(w);
        struct pollfd pf = {w->fd, POLLIN, 0};
        if (poll(&pf, 1, 100) > 0 && !raw_read(w))
            break;
        watcher_input(w, &oks, &others);
    }
    raw_flush(w);
    if (oks != o.watch_patterns) {
        fprintf(stderr, "loadgen: %ld of %d pattern watches answered ok\n", oks, o.watch_patterns);
        exit(2);
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr, "usage: loadgen [-h HOST] [-p PORT] [-c CONNS] [-w IN_FLIGHT] [-s SET_PCT] "
                    "[-k KEYS] [-l KEY_LEN] [-v VALUE_LEN] [-d SECONDS | -n COUNT] [--sequential] "
                    "[--echo] [--prefix P] [--px MS] [--del-pct D] [--lease] [--label NAME] "
                    "[--watch-patterns N [--watch-format FMT]]\n");
    exit(64);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {{"echo", no_argument, NULL, 'E'},
                                          {"sequential", no_argument, NULL, 'S'},
                                          {"prefix", required_argument, NULL, 'P'},
                                          {"px", required_argument, NULL, 'X'},
                                          {"del-pct", required_argument, NULL, 'D'},
                                          {"lease", no_argument, NULL, 'A'},
                                          {"label", required_argument, NULL, 'L'},
                                          {"watch-patterns", required_argument, NULL, 'W'},
                                          {"watch-format", required_argument, NULL, 'F'},
                                          {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "h:p:c:w:s:k:l:v:d:n:", longs, NULL)) != -1) {
        switch (opt) {
        case 'h': o.host = optarg; break;
        case 'p': o.port = atoi(optarg); break;
        case 'c': o.conns = atoi(optarg); break;
        case 'w': o.window = atoi(optarg); break;
        case 's': o.set_pct = atoi(optarg); break;
        case 'k': o.keys = atoi(optarg); break;
        case 'l': o.key_len = atoi(optarg); break;
        case 'v': o.value_len = atoi(optarg); break;
        case 'd': o.seconds = atof(optarg); break;
        case 'n': o.count = atol(optarg); break;
        case 'E': o.echo = true; break;
        case 'S': o.sequential = true; break;
        case 'P': o.prefix = optarg; break;
        case 'X': o.px = atol(optarg); break;
        case 'D': o.del_pct = atoi(optarg); break;
        case 'A': o.lease = true; break;
        case 'L': o.label = optarg; break;
        case 'W': o.watch_patterns = atoi(optarg); break;
        case 'F': o.watch_format = optarg; break;
        default: usage();
        }
    }
    if (o.conns < 1 || o.conns > 256 || o.window < 1 || o.window > MAX_WINDOW || o.keys < 1 || o.del_pct < 0 ||
        o.set_pct < 0 || o.set_pct + o.del_pct > 100 ||
        o.value_len < 0 || o.value_len > 4000 || o.key_len < 2 || o.key_len > 100 || o.watch_patterns < 0 ||
        o.watch_patterns > 65535 || strstr(o.watch_format, "%d") == NULL || strlen(o.watch_format) > 100)
        usage();
    struct rconn watcher = {.fd = -1};
    if (o.watch_patterns)
        open_watcher(&watcher);
    struct conn *cs = calloc((size_t)o.conns, sizeof *cs);
    struct pollfd *pfd = calloc((size_t)o.conns, sizeof *pfd);
    for (int i = 0; i < o.conns; i++)
        open_conn(&cs[i], i);
    running = true;
    uint64_t t0 = now_ns(), stop = t0 + (uint64_t)(o.seconds * 1e9);
    for (int i = 0; i < o.conns; i++) {
        for (int s = 0; s < o.window; s++)
            send_request(&cs[i], s);
        raw_flush(&cs[i].r);
    }
    uint64_t drain_until = 0;
    for (;;) {
        uint64_t now = now_ns();
        if (running && ((o.count > 0 && sent >= o.count) || (o.count == 0 && now >= stop))) {
            running = false;
            drain_until = now + 5000000000ull;
        }
        int out = 0;
        for (int i = 0; i < o.conns; i++)
            out += cs[i].outstanding;
        if (!running && (out == 0 || now >= drain_until))
            break;
        for (int i = 0; i < o.conns; i++) {
            pfd[i].fd = cs[i].r.fd;
            pfd[i].events = POLLIN | (cs[i].r.out.len ? POLLOUT : 0);
        }
        if (poll(pfd, (nfds_t)o.conns, 100) < 0 && errno != EINTR)
            raw_die("loadgen: poll");
        for (int i = 0; i < o.conns; i++) {
            struct conn *c = &cs[i];
            if (pfd[i].revents & POLLIN) {
                if (!raw_read(&c->r)) {
                    fprintf(stderr, "loadgen: the broker closed connection %d\n", i);
                    exit(2);
                }
                on_input(c);
            }
            if (c->r.out.len)
                raw_flush(&c->r);
        }
    }
    double secs = (double)(now_ns() - t0) / 1e9;
    long missing = 0;
    for (int i = 0; i < o.conns; i++) {
        missing += cs[i].outstanding;
        raw_close(&cs[i].r);
    }
    long notified = 0;
    if (o.watch_patterns) {
        long oks = 0;
        struct pollfd pf = {watcher.fd, POLLIN, 0};
        if (poll(&pf, 1, 200) > 0 && raw_read(&watcher))
            watcher_input(&watcher, &oks, &notified);
        raw_close(&watcher);
    }
    qsort(lat, nlat, sizeof *lat, cmp_u32);
    uint32_t p50 = nlat ? lat[nlat / 2] : 0, p99 = nlat ? lat[nlat * 99 / 100] : 0,
             max = nlat ? lat[nlat - 1] : 0;
    double rate = (double)nlat / secs;
    printf("%s: %zu ops in %.2f s: %.0f ops/s, latency p50 %u us, p99 %u us, max %u us, %ld errors, "
           "%ld missing\n",
           o.label, nlat, secs, rate, p50, p99, max, errors, missing);
    printf("LOADGEN label=%s ops=%zu seconds=%.3f ops_per_s=%.0f p50_us=%u p99_us=%u max_us=%u "
           "errors=%ld missing=%ld watch_patterns=%d watch_notified=%ld\n",
           o.label, nlat, secs, rate, p50, p99, max, errors, missing, o.watch_patterns, notified);
    free(lat);
    free(cs);
    free(pfd);
    return errors || missing ? 1 : 0;
}
