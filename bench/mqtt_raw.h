/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* mqtt_raw.h - just enough MQTT 5, spoken directly over a socket, for the
 * benchmark tools: they batch what they write and read in large chunks, so
 * that a tool costs the machine far less than the broker it measures
 * (a libmosquitto client costs a write and a wake-up per packet). */
#ifndef SS_MQTT_RAW_H
#define SS_MQTT_RAW_H

#include <stddef.h>
#include <stdint.h>

#define RAW_REQ_TOPIC "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke"
#define RAW_ADMIN_TOPIC "statestore/admin/v1/invoke"
#define RAW_INBUF (1 << 20)

struct rbuf {
    uint8_t *p;
    size_t len, cap;
};

/* One connection: bytes to write, bytes read and not yet parsed. */
struct rconn {
    int fd;
    struct rbuf out;
    uint8_t *in;
    size_t in_len;
};

void raw_die(const char *what); /* prints errno's text and exits with 2 */

void raw_put(struct rbuf *b, const void *p, size_t n);
void raw_put_u8(struct rbuf *b, uint8_t v);
void raw_put_u16(struct rbuf *b, unsigned v);
void raw_put_varint(struct rbuf *b, size_t v);
void raw_put_str(struct rbuf *b, const void *s, size_t n);
/* A packet: type byte, remaining length, body. */
void raw_put_packet(struct rbuf *b, uint8_t type, const struct rbuf *body);
/* A QoS 1 state store request with response topic, correlation data and
 * __ts (now), and payload; packet id id. */
void raw_put_request(struct rbuf *b, unsigned id, const char *resp_topic, const void *corr,
                     size_t corr_len, const void *payload, size_t len);
/* The same to another topic (statestore's administrative topic). */
void raw_put_request_to(struct rbuf *b, const char *topic, unsigned id, const char *resp_topic, const void *corr,
                        size_t corr_len, const void *payload, size_t len);

/* Decode a variable byte integer: its length in bytes, 0 if incomplete. */
size_t raw_get_varint(const uint8_t *p, size_t n, size_t *v);

/* Connect (clean start, receive maximum 65535), subscribe to topic at QoS 1
 * (NULL: none), then make the socket non-blocking. Exits on failure. */
void raw_open(struct rconn *c, const char *host, int port, const char *id, const char *topic);
/* Write what the socket takes now. */
void raw_flush(struct rconn *c);
/* Read what is there (non-blocking); false when the broker closed. */
int raw_read(struct rconn *c);
/* Send DISCONNECT, close, free. */
void raw_close(struct rconn *c);

#endif
