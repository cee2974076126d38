/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_websockets.c - the broker's websockets listener (the web console's
 * files, MQTT over WebSockets) served between the turns of its loop: the
 * plugin wakes the loop while the listener is in use, and only then. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

#define WAKES "$SYS/broker/statestore/websockets/wakes"

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* GET /path from the websockets listener on port (HTTP/1.1, the
 * connection closed after it): the whole response into out; how long it
 * took, in ms (until the broker closed the connection). */
static uint64_t http_get(int port, const char *path, char *out, size_t cap)
{
    uint64_t t0 = mono_ms();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    ASSERT_EQ(write(fd, req, (size_t)n), n);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fd, out + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    out[len] = '\0';
    close(fd);
    return mono_ms() - t0;
}

/* The next value of the wakes figure (published every second). */
static long long next_wakes(struct client *s)
{
    for (int i = 0; i < 40; i++) {
        struct msg *m = client_wait(s, 3000);
        ASSERT_TRUE(m != NULL);
        if (strcmp(m->topic, WAKES) == 0)
            return strtoll((const char *)m->payload, NULL, 10);
    }
    ASSERT_TRUE(false);
    return -1;
}

/* A broker with a websockets listener on ws_port, and more config lines.
 * No http_dir: Mosquitto 2.0.11 never frees its settings, which the
 * sanitizers and valgrind would report as the broker's leak. */
static void ws_broker(struct broker *b, const char *name, int ws_port, const char *more)
{
    broker_named(b, name);
    snprintf(b->extra, sizeof b->extra,
             "sys_interval 1\n%slistener %d 127.0.0.1\nprotocol websockets\nsocket_domain ipv4\n", more, ws_port);
    broker_start(b);
}

/* Idle, the plugin never wakes the broker; a connection to the websockets
 * listener (a page load) makes it turn the loop every websockets_wake_ms
 * for 5 s (the request is answered: without http_dir, by closing the
 * connection); then it is idle again. With websockets_wake_ms 0 it never
 * does (and says nothing of it). */
TEST(plugin_websockets_listener_turns_the_loop_while_in_use)
{
    int ws = free_port();
    struct broker b;
    ws_broker(&b, "ws", ws, "");
    ASSERT_TRUE(broker_log_has(&b, "websockets_wake_ms=5"));
    struct client s;
    client_connect(&s, b.port, "sys", false);
    client_subscribe(&s, WAKES);
    /* Idle (an MQTT client over TCP is not a use of the listener). */
    ASSERT_EQ(next_wakes(&s), 0);
    ASSERT_EQ(next_wakes(&s), 0);
    char resp[4096];
    uint64_t ms = http_get(ws, "/index.html", resp, sizeof resp);
    ASSERT_STR(resp, strlen(resp), "");
    long long during = next_wakes(&s);
    ASSERT_TRUE(during > 0);
    uint64_t ms2 = http_get(ws, "/index.html", resp, sizeof resp);
    ASSERT_STR(resp, strlen(resp), "");
    /* The window ends 5 s after the last request: idle again. */
    client_drain(&s, 6000); /* the figures published meanwhile, read and dropped */
    long long after = next_wakes(&s);
    ASSERT_TRUE(after >= during);
    ASSERT_EQ(next_wakes(&s), after);
    fprintf(stderr, "  a request to the websockets listener answered in %llu ms, then %llu ms; %lld wake-ups in all\n",
            (unsigned long long)ms, (unsigned long long)ms2, after);
    client_close(&s);
    broker_stop(&b);

    struct broker off;
    ws_broker(&off, "ws-off", free_port(), "plugin_opt_websockets_wake_ms 0\n");
    ASSERT_TRUE(broker_log_has(&off, "websockets_wake_ms=0"));
    client_connect(&s, off.port, "sys", false);
    client_subscribe(&s, "$SYS/broker/statestore/#");
    struct msg *m;
    int figures = 0;
    uint64_t end = mono_ms() + 2500;
    while (mono_ms() < end && (m = client_wait(&s, 500)) != NULL) {
        figures++;
        ASSERT_TRUE(strcmp(m->topic, WAKES) != 0);
    }
    ASSERT_TRUE(figures > 0);
    client_close(&s);
    broker_stop(&off);
}
