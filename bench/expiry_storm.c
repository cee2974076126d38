/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* expiry_storm.c - many observed keys expiring in the same second.
 *
 *   expiry_storm PORT KEYS
 *
 * Registers KEYNOTIFY for KEYS keys, sets them all with PX so that every
 * deadline falls within one second (starting 30 s after the tool starts,
 * leaving time for the setup while a load runs beside), then counts the
 * DELETE notifications. Prints how long after the last deadline the last
 * DELETE arrived, and a summary line:
 *   STORM keys=.. deleted=.. last_delete_after_deadline_ms=.. failed=..
 *
 * One MQTT 5 connection spoken directly (mqtt_raw.c), reading in large
 * chunks and acknowledging notifications in batches: what is measured is
 * the server's delivery, not one PUBACK write per notification of a
 * general-purpose client. Keeps 512 requests in flight during the setup.
 */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/codec.h"
#include "../core/errors.h"
#include "mqtt_raw.h"

#define WINDOW 512
#define CLIENT_ID "storm"
#define RESP_TOPIC "clients/" CLIENT_ID "/resp"
/* Notification topics for this client: prefix, HEX(client id), suffix. */
#define NOTIFY_PREFIX "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/73746F726D/command/notify/"

struct storm {
    struct rconn c;
    long keys;
    long answered, failed, deleted;
    unsigned next_id;
    uint64_t last_delete_ms;
    uint64_t base_deadline;
};

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void on_publish(struct storm *s, uint8_t flags, const uint8_t *p, size_t n)
{
    size_t tlen = (size_t)p[0] << 8 | p[1];
    const char *topic = (const char *)p + 2;
    size_t i = 2 + tlen;
    if ((flags >> 1) & 3) {
        uint8_t ack[4] = {0x40, 0x02, p[i], p[i + 1]};
        raw_put(&s->c.out, ack, 4); /* sent with the next batch */
        i += 2;
    }
    size_t plen;
    i += raw_get_varint(p + i, n - i, &plen);
    i += plen;
    const uint8_t *payload = p + i;
    size_t len = n - i;
    if (tlen == sizeof RESP_TOPIC - 1 && memcmp(topic, RESP_TOPIC, tlen) == 0) {
        s->answered++;
        if (len != 5 || memcmp(payload, "+OK\r\n", 5) != 0)
            s->failed++;
        return;
    }
    enum ss_notify_kind kind;
    ss_bytes value;
    if (tlen > sizeof NOTIFY_PREFIX - 1 && memcmp(topic, NOTIFY_PREFIX, sizeof NOTIFY_PREFIX - 1) == 0 &&
        ss_codec_decode_notify(payload, len, &kind, &value) == SS_OK && kind == SS_NOTIFY_DELETE) {
        s->deleted++;
        s->last_delete_ms = wall_ms();
    }
}

/* Parse every complete packet that has arrived. */
static void on_input(struct storm *s)
{
    struct rconn *c = &s->c;
    size_t i = 0;
    while (i + 2 <= c->in_len) {
        size_t rem, vl = raw_get_varint(c->in + i + 1, c->in_len - i - 1, &rem);
        if (vl == 0 || i + 1 + vl + rem > c->in_len)
            break;
        uint8_t type = c->in[i];
        if ((type & 0xF0) == 0x30)
            on_publish(s, type & 0x0F, c->in + i + 1 + vl, rem);
        else if (type == 0xE0) {
            fprintf(stderr, "expiry_storm: disconnected by the broker\n");
            exit(2);
        }
        i += 1 + vl + rem;
    }
    memmove(c->in, c->in + i, c->in_len - i);
    c->in_len -= i;
}

/* Wait up to ms for input, handle it, write what is pending. */
static void pump(struct storm *s, int ms)
{
    struct pollfd pfd = {s->c.fd, (short)(POLLIN | (s->c.out.len ? POLLOUT : 0)), 0};
    if (poll(&pfd, 1, ms) > 0 && (pfd.revents & POLLIN)) {
        if (!raw_read(&s->c)) {
            fprintf(stderr, "expiry_storm: the broker closed the connection\n");
            exit(2);
        }
        on_input(s);
    }
    if (s->c.out.len)
        raw_flush(&s->c);
}

static void send_words(struct storm *s, const ss_bytes *words, size_t n)
{
    static ss_buf payload = SS_BUF_INIT;
    ss_buf_clear(&payload);
    if (ss_codec_put_request(&payload, n, words) != SS_OK) {
        fprintf(stderr, "expiry_storm: cannot encode a request\n");
        exit(2);
    }
    s->next_id = s->next_id % 65535 + 1;
    raw_put_request(&s->c.out, s->next_id, RESP_TOPIC, "s", 1, payload.data, payload.len);
}

static void send_keynotify(struct storm *s, long i)
{
    char key[32];
    int kl = snprintf(key, sizeof key, "storm-%06ld", i);
    ss_bytes w[2] = {{(const uint8_t *)"KEYNOTIFY", 9}, {(const uint8_t *)key, (size_t)kl}};
    send_words(s, w, 2);
}

static void send_set(struct storm *s, long i)
{
    char key[32], px[24];
    int kl = snprintf(key, sizeof key, "storm-%06ld", i);
    /* Deadlines spread over one second starting at base_deadline. */
    uint64_t deadline = s->base_deadline + (uint64_t)(i * 1000 / s->keys);
    uint64_t now = wall_ms();
    int pl = snprintf(px, sizeof px, "%llu", (unsigned long long)(deadline > now ? deadline - now : 1));
    ss_bytes w[5] = {{(const uint8_t *)"SET", 3}, {(const uint8_t *)key, (size_t)kl},
                     {(const uint8_t *)"x", 1}, {(const uint8_t *)"PX", 2}, {(const uint8_t *)px, (size_t)pl}};
    send_words(s, w, 5);
}

/* Send keys requests through fn with at most WINDOW unanswered. */
static void phase(struct storm *s, void (*fn)(struct storm *, long))
{
    long issued = 0;
    s->answered = 0;
    while (s->answered < s->keys) {
        while (issued < s->keys && issued - s->answered < WINDOW)
            fn(s, issued++);
        pump(s, 100);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: expiry_storm PORT KEYS\n");
        return 64;
    }
    struct storm s = {.keys = atol(argv[2])};
    if (s.keys < 1)
        return 64;
    s.base_deadline = wall_ms() + 30000;
    raw_open(&s.c, "127.0.0.1", atoi(argv[1]), CLIENT_ID, RESP_TOPIC);
    phase(&s, send_keynotify);
    phase(&s, send_set);
    uint64_t last_deadline = s.base_deadline + 999;
    if (wall_ms() >= s.base_deadline)
        fprintf(stderr, "expiry_storm: the setup took too long; deadlines already passing\n");
    /* Wait for the DELETEs (at most 30 s after the last deadline). */
    while (s.deleted < s.keys && wall_ms() < last_deadline + 30000)
        pump(&s, 10);
    raw_close(&s.c);
    long long after = (long long)s.last_delete_ms - (long long)last_deadline;
    printf("expiry storm: %ld observed keys with deadlines in one second; %ld DELETEs, the last %lld ms "
           "after the last deadline; %ld failed requests\n",
           s.keys, s.deleted, after, s.failed);
    printf("STORM keys=%ld deleted=%ld last_delete_after_deadline_ms=%lld failed=%ld storm_start_ms=%llu\n",
           s.keys, s.deleted, after, s.failed, (unsigned long long)s.base_deadline);
    return s.deleted == s.keys && s.failed == 0 ? 0 : 1;
}
