/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* harness.h - integration test helpers: a real mosquitto with the plugin,
 * started on a free loopback port in the test's directory, and a
 * synchronous MQTT client on libmosquitto. */
#ifndef SS_HARNESS_H
#define SS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <mosquitto.h>
#include <mqtt_protocol.h>

#define GUID "FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8"
#define REQ_TOPIC "statestore/v1/" GUID "/command/invoke"

struct broker {
    pid_t pid;
    int port;
    char conf[512];
    char log[512];
    char data[512];
    char extra[2048]; /* extra config lines */
    char head[256];   /* config lines before all others (global settings) */
    bool no_plugin;   /* a plain mosquitto */
    char name[32];    /* several brokers in one test: NAME.conf, NAME.log */
    char preload[512]; /* a library to preload into the broker, after any sanitizer's */
    /* A function of Mosquitto's own that leaks in this test's use of the
     * broker (NULL: none): its leaks are not counted (harness.c,
     * broker_leak_suppressions). */
    const char *mosquitto_leak;
    char user[32];     /* run as root: the user it drops to ("root", staying, when empty) */
    char plugin[512];  /* the plugin's path ($SS_PLUGIN when empty) */
    /* Run while the broker is held (held.h) at its first flock, the lock
     * of its data directory, with held_ctx (NULL: not held): what another
     * process does in that window. */
    void (*held_at_lock)(void *ctx);
    void *held_ctx;
};

/* True when the brokers of the tests run on etcd (SS_BACKEND=etcd). */
bool harness_on_etcd(void);
/* Start mosquitto with the plugin (path from $SS_PLUGIN) and b->extra; the
 * data directory is <tmpdir>/data unless b->data is set. Waits until it
 * serves (its port answers, its log says it is running); fails the test
 * otherwise. Reuses b->port if set. */
void broker_start(struct broker *b);
/* Start and expect the broker to exit by itself (bad config): returns its
 * exit status (0 if it came up instead); the log is in b->log. Fails the
 * test when the log has a sanitizer's report other than Mosquitto's own
 * leaks (a memory error, undefined behaviour, a data race, a leak with a
 * frame in the plugin). */
int broker_start_fails(struct broker *b);
void broker_stop(struct broker *b); /* SIGTERM, wait */
/* SIGKILL, wait; fails the test (and prints the log) if the broker had
 * already ended by itself. */
void broker_kill9(struct broker *b);
/* True if the log contains text. */
bool broker_log_has(const struct broker *b, const char *text);
/* How many lines of the broker's log hold text. */
int broker_log_count(const struct broker *b, const char *text);
/* b emptied and named (several brokers in one test), with its data
 * directory <tmpdir>/data-NAME; extra is the caller's to fill. */
void broker_named(struct broker *b, const char *name);
/* A broker named name with the config lines extra refuses to start, and
 * its log says why (contains text); fails the test otherwise. */
void broker_refuses(const char *name, const char *extra, const char *text);
/* Start b, named name, on the etcd cluster at endpoints (comma-separated
 * URLs), with more config lines (may be ""). */
void broker_on_etcd(struct broker *b, const char *name, const char *endpoints, const char *more);
/* The value of line NAME of statestore status's text output ("NAME
 * VALUE", the name padded to 18) into value; NULL if there is none. */
const char *status_line(const char *out, const char *name, char *value, size_t cap);

/* A received message, owned by the client until the next wait or close. */
struct msg {
    char *topic;
    uint8_t *payload;
    int len;
    int qos;
    bool retain;
    char *corr;
    int corr_len;
    char *content_type;
    char *response_topic;
    long expiry;       /* message expiry interval, -1 when absent */
    int format;        /* payload format indicator, -1 when absent */
    char *user[16][2]; /* user properties, name and value */
    int nuser;
};

struct client {
    struct mosquitto *m;
    char id[128];
    struct msg *queue; /* a ring of cap messages, grown as they come */
    int head, count, cap;
    bool connected, disconnected;
    int disconnect_rc;
    int last_puback_rc;
    int pubacks;
    int last_suback; /* granted QoS or reason code of the last SUBACK, -1 before */
    int subacks;
    struct msg last; /* the message returned by the last wait */
};

uint64_t now_ms(void);
/* A loopback TCP port that nobody listens on now. */
int free_port(void);
/* True if something accepts connections on the loopback port. */
bool port_open(int port);

/* Connect (MQTT 5 unless v311) with the given client id; fails the test if
 * the connection is not accepted within 5 s. */
void client_connect(struct client *c, int port, const char *id, bool v311);
/* How to connect, for what client_connect and client_connect_user do
 * not say: another host (NULL: 127.0.0.1), and a session the broker
 * keeps for session_expiry_s after a disconnection (0: a clean one). */
struct client_options {
    const char *host;
    int port;
    const char *id;
    bool v311;
    const char *user, *password;
    unsigned session_expiry_s;
};
void client_connect_with(struct client *c, const struct client_options *o);
/* A figure of the broker on port under $SYS/broker/statestore/ (name:
 * "keys", "etcd/versions_ahead_ms"...), once one satisfying want came,
 * into out (10 s at most); false if none did. */
bool sys_figure_until(int port, const char *name, bool (*want)(const char *v), char *out, size_t n);
/* Run the loop until CONNACK (5 s at most); fails the test otherwise. */
void client_wait_connected(struct client *c);
void client_connect_user(struct client *c, int port, const char *id, bool v311, const char *user,
                         const char *password);
void client_close(struct client *c);
void client_subscribe(struct client *c, const char *topic);
/* Subscribe and return the SUBACK's granted QoS or failure reason code. */
int client_subscribe_rc(struct client *c, const char *topic);
/* Publish with properties (props is copied and freed by the caller). */
int client_publish(struct client *c, const char *topic, const void *payload, int len, int qos,
                   bool retain, const mosquitto_property *props);
/* Run the network loop for up to ms; returns the first message received
 * (also in c->last), or NULL on time out or disconnect. */
struct msg *client_wait(struct client *c, int ms);
/* Run c's network loop for up to ms without taking a message: what a
 * publish left unsent (a large one does not fit the socket at once) goes
 * on, and what arrives waits for client_wait. For tests that wait on
 * something else (etcd, a proxy) after request_send. */
void client_pump(struct client *c, int ms);
/* Run the loop for ms and return the number of messages received. */
int client_drain(struct client *c, int ms);
/* Run the loop until want messages came or ms passed, then 100 ms more;
 * returns the number received (for loads whose pace varies: a sanitizer
 * build, a cluster). */
int client_drain_count(struct client *c, int want, int ms);
/* Wait for our own PUBACK: returns its reason code, or -1. */
int client_wait_puback(struct client *c, int ms);
const char *msg_user(const struct msg *m, const char *name);

/* Connect as id and subscribe to "clients/<id>/resp", written to resp. */
void client_connect_rr(struct client *c, int port, const char *id, char *resp, size_t n);

/* Request words: W("SET", "k", "v"). */
#define W(...) ((const char *const[]){__VA_ARGS__, NULL})
/* The message's payload equals a string literal. */
#define PAYLOAD(m, lit) ASSERT_STR((m)->payload, (size_t)(m)->len, lit)
/* A message (evaluated once, e.g. a request) arrived with this payload. */
#define ASSERT_REPLY(expr, lit)                                                         \
    do {                                                                                \
        struct msg *r_ = (expr);                                                        \
        ASSERT_TRUE(r_ != NULL);                                                        \
        PAYLOAD(r_, lit);                                                               \
    } while (0)
/* The message has user property name with exactly this value. */
#define USER(m, name, val)                                                              \
    do {                                                                                \
        const char *v_ = msg_user((m), (name));                                         \
        ASSERT_TRUE(v_ != NULL);                                                        \
        ASSERT_MEM(v_, strlen(v_), (val), strlen(val));                                 \
    } while (0)

/* A state store request: SET, GET... given as words (NULL-terminated).
 * Adds __ts (now) unless ts is "" (none), __ft when ft is non-NULL,
 * correlation data corr, and response topic resp. */
struct msg *request(struct client *c, const char *resp, const char *corr, const char *ts,
                    const char *ft, const char *const *words);
/* The same, without waiting for the answer. */
void request_send(struct client *c, const char *resp, const char *corr, const char *ts,
                  const char *ft, const char *const *words);
/* SET "<prefix><i, digits digits>" to "v" for i in [from, from + n), 200
 * in flight at a time (no wait between requests); each answers +OK. */
void set_keys_pipelined(struct client *c, const char *resp, const char *prefix, int digits, int from, int n);
/* The next n messages on c (30 s at most for each) are answers of
 * exactly want: for requests sent without waiting. Unlike
 * client_drain_count, no quiet time after them. */
void await_answers(struct client *c, int n, const char *want);
/* statestore's administrative requests (docs/OPERATIONS.md): publish
 * words to ADMIN_TOPIC with response topic resp and correlation data corr;
 * admin_call waits for the answer (20 s) and checks its correlation data.
 * words NULL: an empty payload. */
#define ADMIN_TOPIC "statestore/admin/v1/invoke"
void admin_send(struct client *c, const char *resp, const char *corr, const char *const *words);
struct msg *admin_call(struct client *c, const char *resp, const char *corr, const char *const *words);
/* Encode words as a request payload into buf (cap bytes); returns length. */
int encode_request(uint8_t *buf, int cap, const char *const *words, const int *lens);


/* Raw MQTT 5 over a socket, for sequences libmosquitto will not send. */
void raw_put_varint(uint8_t *b, size_t *n, size_t v);
void raw_put_str(uint8_t *b, size_t *n, const void *s, size_t len);
/* Connect with a clean start; returns the socket after the CONNACK. */
int raw_connect(int port, const char *id);
/* A QoS 1 request PUBLISH (words as for request, __ts now) into out;
 * returns its length. */
size_t raw_request(uint8_t *out, size_t cap, uint16_t packet_id, const char *resp, const char *corr,
                   const char *const *words);

/* Running programs (the CLI, examples). */
struct run {
    int status; /* exit status, or 128 + signal */
    char *out;  /* everything written to stdout / stderr, NUL-terminated */
    size_t out_len;
    char *err;
};
/* Run argv to completion with in (inlen bytes) as stdin; fails the test
 * after 20 s. */
void run_cmd(char *const argv[], const void *in, size_t inlen, struct run *r);
void run_free(struct run *r);
/* Start argv in the background with stdout and stderr going to files;
 * returns its pid. */
pid_t spawn_cmd(char *const argv[], const char *out_path, const char *err_path);
/* The same with in_fd as its stdin (-1: /dev/null). Every other
 * descriptor of the caller goes with it unless close-on-exec: a pipe's
 * write end held there would keep it from ever reading the end. */
pid_t spawn_cmd_from(char *const argv[], int in_fd, const char *out_path, const char *err_path);
/* SS_TEST_QUICK=1: the long fault loops run fewer rounds (one of each
 * kind of fault). CI sets it for the sanitizer and valgrind runs, which
 * look for memory and thread errors; make test runs every round. */
bool test_quick(void);
/* The statestore tool under test ($SS_CLI); fails the test without it. */
const char *cli_path(void);
/* Run the tool with -p port and words (W(...): at most 12) to completion. */
void cli_words(struct run *r, int port, const char *const *words);
/* The figure name of the broker on port (the tool's stats), 0 if it has
 * none. */
long long broker_figure(int port, const char *name);
/* Run the tool with the given arguments (NULL-terminated, at most 60) to
 * completion, without -p. */
void cli_tool(struct run *r, ...);
/* Run the tool with "-p PORT" (none if port is 0), in (inlen bytes) as
 * its stdin, and the given arguments (NULL-terminated, at most 60). */
void cli_run(struct run *r, int port, const void *in, size_t inlen, ...);
/* What a run wrote: stdout exactly, or stderr containing text. */
#define OUT_IS(r, lit) ASSERT_MEM((r).out, (r).out_len, lit, sizeof(lit) - 1)
#define ERR_HAS(r, text) ASSERT_TRUE(strstr((r).err, text) != NULL)
/* Write text into a new file (replaced); fails the test if it cannot. */
void write_text(const char *path, const char *text);
/* A test CA (ca.crt, ca.key) in dir, and server.crt/server.key for the
 * subjectAltName san (such as "IP:127.0.0.1"), and client.crt/client.key
 * when client is true. Fails the test if openssl fails. */
void tls_certs(const char *dir, const char *san, bool client);
/* Read a whole file into a malloc'ed NUL-terminated string ("" if none). */
char *slurp(const char *path, size_t *len);
#endif
