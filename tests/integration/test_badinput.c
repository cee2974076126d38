/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_badinput.c - malformed requests sent to a running broker: each gets
 * an error answer or a documented refusal, and the broker keeps answering
 * correctly. */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../core/codec.h"
#include "../test.h"
#include "harness.h"

/* Publish raw payload bytes as a request with the given __ts; return the
 * answer payload (NULL if none came). */
static struct msg *send_raw(struct client *c, const char *resp, const void *payload, int len,
                            const char *ts)
{
    static int n;
    char corr[16];
    snprintf(corr, sizeof corr, "bad%d", n++);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    if (ts)
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    ASSERT_EQ(client_publish(c, REQ_TOPIC, payload, len, 1, false, props), 0);
    mosquitto_property_free_all(&props);
    return client_wait(c, 3000);
}

static void expect_error(const struct msg *m)
{
    ASSERT_TRUE(m != NULL);
    ss_reply r;
    ASSERT_EQ(ss_codec_decode_reply(m->payload, (size_t)m->len, &r), 0);
    ASSERT_EQ(r.kind, SS_REPLY_ERROR);
    USER(m, "__stat", "200");
}

/* The victim's data is intact and the broker answers. */
static void check_alive(struct client *v, const char *resp)
{
    struct msg *m = request(v, resp, "alive", NULL, NULL, W("GET", "precious"));
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "$5\r\nvalue\r\n");
}

/* ---- a raw MQTT 5 connection, for what libmosquitto refuses to send ---- */

/* PUBLISH QoS 1 on the request topic with a user property name/value given
 * as raw bytes (not necessarily UTF-8). Returns true if the broker closed
 * the connection (or sent DISCONNECT) instead of answering. */
static bool raw_publish_closed(int fd, const void *name, size_t nlen, const char *resp,
                               size_t resp_len)
{
    static uint8_t body[4096], pkt[4200];
    size_t n = 0, m = 0;
    raw_put_str(body, &n, REQ_TOPIC, strlen(REQ_TOPIC));
    body[n++] = 0;
    body[n++] = 1; /* packet id */
    uint8_t props[1024];
    size_t pn = 0;
    props[pn++] = 0x08; /* response topic */
    raw_put_str(props, &pn, resp, resp_len);
    props[pn++] = 0x09; /* correlation data */
    raw_put_str(props, &pn, "raw", 3);
    props[pn++] = 0x26; /* user property */
    raw_put_str(props, &pn, name, nlen);
    raw_put_str(props, &pn, "v", 1);
    raw_put_varint(body, &n, pn);
    memcpy(body + n, props, pn);
    n += pn;
    static const char payload[] = "*2\r\n$3\r\nSET\r\n$3\r\nraw\r\n";
    memcpy(body + n, payload, sizeof payload - 1);
    n += sizeof payload - 1;
    pkt[m++] = 0x32;
    raw_put_varint(pkt, &m, n);
    memcpy(pkt + m, body, n);
    ASSERT_EQ(write(fd, pkt, m + n), (ssize_t)(m + n));
    struct timeval tv = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    uint8_t in[256];
    ssize_t got = read(fd, in, sizeof in);
    /* Closed (EOF, or reset), or a DISCONNECT. Silence for 2 s (EAGAIN)
     * is neither: the broker neither refused nor answered. */
    return got == 0 || (got < 0 && errno == ECONNRESET) || (got > 0 && in[0] == 0xE0);
}

TEST(badinput_over_the_wire)
{
    struct broker b = {0};
    broker_start(&b);
    struct client v, a;
    char rv[64], ra[64];
    client_connect_rr(&v, b.port, "victim", rv, sizeof rv);
    struct msg *m = request(&v, rv, "1", NULL, NULL, W("SET", "precious", "value"));
    PAYLOAD(m, "+OK\r\n");
    client_connect_rr(&a, b.port, "attacker", ra, sizeof ra);
    char ts[64];
    snprintf(ts, sizeof ts, "%llu:0:x", (unsigned long long)now_ms());
    int answered = 0;

    /* Random bytes. */
    srand(42);
    for (int i = 0; i < 300; i++) {
        uint8_t junk[300];
        int len = rand() % (int)sizeof junk;
        for (int j = 0; j < len; j++)
            junk[j] = (uint8_t)(rand() % 4 == 0 ? "*$\r\n0123456789"[rand() % 14] : rand());
        expect_error(send_raw(&a, ra, junk, len, ts));
        answered++;
    }
    /* Every truncation of a valid request. */
    static const char set[] = "*3\r\n$3\r\nSET\r\n$8\r\nprecious\r\n$5\r\nstole\r\n";
    for (int len = 0; len < (int)sizeof set - 1; len++) {
        m = send_raw(&a, ra, set, len, ts);
        expect_error(m);
        PAYLOAD(m, "-ERR syntax error\r\n");
        answered++;
    }
    /* Huge declared lengths and counts, nested arrays, other element types. */
    static const char *const shapes[] = {
        "*1\r\n$999999999\r\nabc\r\n",
        "*99999\r\n$3\r\nGET\r\n",
        "*2\r\n$3\r\nGET\r\n$18446744073709551615\r\n",
        "*2\r\n$3\r\nGET\r\n$-5\r\n",
        "*2\r\n*1\r\n$3\r\nGET\r\n$1\r\nk\r\n",
        "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n",
        "*2\r\n$3\r\nGET\r\n:12\r\n",
        "*2\r\n$3\r\nGET\r\n+precious\r\n",
        "*-1\r\n",
        "$8\r\nprecious\r\n",
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        m = send_raw(&a, ra, shapes[i], (int)strlen(shapes[i]), ts);
        expect_error(m);
        PAYLOAD(m, "-ERR syntax error\r\n");
        answered++;
    }
    /* An oversized __ts: malformed. Many user properties: answered normally. */
    static char big[60000];
    memset(big, '1', sizeof big - 1);
    m = send_raw(&a, ra, set, (int)sizeof set - 1, big);
    PAYLOAD(m, "-ERR malformed timestamp\r\n");
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, ra);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, "many", 4);
    for (int i = 0; i < 500; i++)
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "junk", big + 59000);
    static const char get[] = "*2\r\n$3\r\nGET\r\n$6\r\nabsent\r\n";
    ASSERT_EQ(client_publish(&a, REQ_TOPIC, get, (int)sizeof get - 1, 1, false, props), 0);
    mosquitto_property_free_all(&props);
    m = client_wait(&a, 3000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "$-1\r\n");
    /* 65535 bytes of correlation data come back whole. */
    props = NULL;
    static char corr[65535];
    memset(corr, 'c', sizeof corr);
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, ra);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, sizeof corr);
    ASSERT_EQ(client_publish(&a, REQ_TOPIC, get, (int)sizeof get - 1, 1, false, props), 0);
    mosquitto_property_free_all(&props);
    m = client_wait(&a, 3000);
    ASSERT_TRUE(m != NULL);
    ASSERT_EQ(m->corr_len, 65535);
    check_alive(&v, rv);

    /* Invalid UTF-8 in a user property or the response topic: the broker
     * drops the connection (MQTT's rule for malformed packets); nothing is
     * executed. */
    int fd = raw_connect(b.port, "rawbad1");
    ASSERT_TRUE(raw_publish_closed(fd, "\xc3\x28", 2, "clients/raw/resp", 16));
    close(fd);
    fd = raw_connect(b.port, "rawbad2");
    ASSERT_TRUE(raw_publish_closed(fd, "ok", 2, "clients/\xff\xfe/resp", 15));
    close(fd);
    m = request(&v, rv, "2", NULL, NULL, W("GET", "raw"));
    PAYLOAD(m, "$-1\r\n");
    check_alive(&v, rv);
    fprintf(stderr, "  %d malformed requests answered with errors; broker still answering\n",
            answered);
    client_close(&a);
    client_close(&v);
    broker_stop(&b);
}
