/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* harness_client.c - the tests' MQTT 5 clients (libmosquitto), their
 * requests to the state store and the administrative topic, and the
 * broker's $SYS figures (harness.h). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/buf.h"
#include "../../core/codec.h"
#include "../test.h"

/* ---- client --------------------------------------------------------- */

static void msg_free(struct msg *m)
{
    free(m->topic);
    free(m->payload);
    free(m->corr);
    free(m->content_type);
    free(m->response_topic);
    for (int i = 0; i < m->nuser; i++) {
        free(m->user[i][0]);
        free(m->user[i][1]);
    }
    memset(m, 0, sizeof *m);
}

static void on_connect(struct mosquitto *m, void *ud, int rc, int flags, const mosquitto_property *p)
{
    (void)m;
    (void)flags;
    (void)p;
    struct client *c = ud;
    if (rc == 0)
        c->connected = true;
}

static void on_disconnect(struct mosquitto *m, void *ud, int rc, const mosquitto_property *p)
{
    (void)m;
    (void)p;
    struct client *c = ud;
    c->disconnected = true;
    c->connected = false;
    c->disconnect_rc = rc;
}

static void on_publish(struct mosquitto *m, void *ud, int mid, int rc, const mosquitto_property *p)
{
    (void)m;
    (void)mid;
    (void)p;
    struct client *c = ud;
    c->last_puback_rc = rc;
    c->pubacks++;
}

static void on_subscribe(struct mosquitto *m, void *ud, int mid, int n, const int *granted,
                         const mosquitto_property *p)
{
    (void)m;
    (void)mid;
    (void)p;
    struct client *c = ud;
    c->last_suback = n > 0 ? granted[0] : -1;
    c->subacks++;
}

static void on_message(struct mosquitto *m, void *ud, const struct mosquitto_message *mm,
                       const mosquitto_property *props)
{
    (void)m;
    struct client *c = ud;
    if (c->count == c->cap) {
        /* Never drop one: a test that sends many requests before reading
         * the answers gets them all. */
        int cap = c->cap ? 2 * c->cap : 256;
        struct msg *q = calloc((size_t)cap, sizeof *q);
        ASSERT_TRUE(q != NULL);
        for (int i = 0; i < c->count; i++)
            q[i] = c->queue[(c->head + i) % c->cap];
        free(c->queue);
        c->queue = q;
        c->head = 0;
        c->cap = cap;
    }
    struct msg *x = &c->queue[(c->head + c->count++) % c->cap];
    memset(x, 0, sizeof *x);
    x->topic = strdup(mm->topic);
    x->len = mm->payloadlen;
    x->payload = malloc((size_t)mm->payloadlen + 1);
    memcpy(x->payload, mm->payload, (size_t)mm->payloadlen);
    x->payload[mm->payloadlen] = 0;
    x->qos = mm->qos;
    x->retain = mm->retain;
    x->expiry = -1;
    x->format = -1;
    for (const mosquitto_property *p = props; p; p = mosquitto_property_next(p)) {
        int id = mosquitto_property_identifier(p);
        if (id == MQTT_PROP_CORRELATION_DATA) {
            void *v;
            uint16_t n;
            mosquitto_property_read_binary(p, id, &v, &n, false);
            x->corr = v;
            x->corr_len = n;
        } else if (id == MQTT_PROP_CONTENT_TYPE) {
            mosquitto_property_read_string(p, id, &x->content_type, false);
        } else if (id == MQTT_PROP_RESPONSE_TOPIC) {
            mosquitto_property_read_string(p, id, &x->response_topic, false);
        } else if (id == MQTT_PROP_MESSAGE_EXPIRY_INTERVAL) {
            uint32_t v;
            mosquitto_property_read_int32(p, id, &v, false);
            x->expiry = (long)v;
        } else if (id == MQTT_PROP_PAYLOAD_FORMAT_INDICATOR) {
            uint8_t v;
            mosquitto_property_read_byte(p, id, &v, false);
            x->format = v;
        } else if (id == MQTT_PROP_USER_PROPERTY && x->nuser < 16) {
            mosquitto_property_read_string_pair(p, id, &x->user[x->nuser][0], &x->user[x->nuser][1],
                                                false);
            x->nuser++;
        }
    }
}

void client_connect(struct client *c, int port, const char *id, bool v311)
{
    client_connect_user(c, port, id, v311, NULL, NULL);
}

void client_connect_user(struct client *c, int port, const char *id, bool v311, const char *user,
                         const char *password)
{
    struct client_options o = {.port = port, .id = id, .v311 = v311, .user = user, .password = password};
    client_connect_with(c, &o);
}

void client_connect_with(struct client *c, const struct client_options *o)
{
    static int lib_ready;
    if (!lib_ready) {
        mosquitto_lib_init();
        lib_ready = 1;
    }
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", o->id);
    c->m = mosquitto_new(o->id, !o->session_expiry_s, c);
    ASSERT_TRUE(c->m != NULL);
    mosquitto_int_option(c->m, MOSQ_OPT_PROTOCOL_VERSION, o->v311 ? MQTT_PROTOCOL_V311 : MQTT_PROTOCOL_V5);
    mosquitto_int_option(c->m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_v5_callback_set(c->m, on_connect);
    mosquitto_disconnect_v5_callback_set(c->m, on_disconnect);
    mosquitto_publish_v5_callback_set(c->m, on_publish);
    mosquitto_message_v5_callback_set(c->m, on_message);
    mosquitto_subscribe_v5_callback_set(c->m, on_subscribe);
    c->last_suback = -1;
    if (o->user)
        mosquitto_username_pw_set(c->m, o->user, o->password);
    mosquitto_property *props = NULL;
    if (o->session_expiry_s)
        ASSERT_EQ(mosquitto_property_add_int32(&props, MQTT_PROP_SESSION_EXPIRY_INTERVAL, o->session_expiry_s), 0);
    int rc = mosquitto_connect_bind_v5(c->m, o->host ? o->host : "127.0.0.1", o->port, 60, NULL, props);
    mosquitto_property_free_all(&props);
    ASSERT_EQ(rc, MOSQ_ERR_SUCCESS);
    client_wait_connected(c);
}

void client_wait_connected(struct client *c)
{
    uint64_t end = now_ms() + 5000;
    while (!c->connected && !c->disconnected && now_ms() < end)
        mosquitto_loop(c->m, 20, 1);
    ASSERT_TRUE(c->connected);
}

void client_connect_rr(struct client *c, int port, const char *id, char *resp, size_t n)
{
    client_connect(c, port, id, false);
    snprintf(resp, n, "clients/%s/resp", id);
    client_subscribe(c, resp);
}

void client_close(struct client *c)
{
    if (c->m && c->connected) {
        mosquitto_disconnect(c->m);
        for (int i = 0; i < 10 && !c->disconnected; i++)
            mosquitto_loop(c->m, 10, 1);
    }
    if (c->m)
        mosquitto_destroy(c->m);
    c->m = NULL;
    msg_free(&c->last);
    while (c->count) {
        msg_free(&c->queue[c->head]);
        c->head = (c->head + 1) % c->cap;
        c->count--;
    }
    free(c->queue);
    c->queue = NULL;
    c->cap = 0;
}

void client_subscribe(struct client *c, const char *topic)
{
    ASSERT_EQ(mosquitto_subscribe_v5(c->m, NULL, topic, 1, 0, NULL), MOSQ_ERR_SUCCESS);
    /* A round trip makes sure the SUBACK is in. */
    for (int i = 0; i < 10; i++)
        mosquitto_loop(c->m, 10, 1);
}

int client_subscribe_rc(struct client *c, const char *topic)
{
    int before = c->subacks;
    ASSERT_EQ(mosquitto_subscribe_v5(c->m, NULL, topic, 1, 0, NULL), MOSQ_ERR_SUCCESS);
    uint64_t end = now_ms() + 3000;
    while (c->subacks == before && now_ms() < end)
        mosquitto_loop(c->m, 5, 1);
    return c->subacks == before ? -1 : c->last_suback;
}

int client_publish(struct client *c, const char *topic, const void *payload, int len, int qos,
                   bool retain, const mosquitto_property *props)
{
    return mosquitto_publish_v5(c->m, NULL, topic, len, payload, qos, retain, props);
}

void client_pump(struct client *c, int ms)
{
    if (!c->disconnected)
        mosquitto_loop(c->m, ms, 1);
}

struct msg *client_wait(struct client *c, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    /* At least one pass of the network loop, even for ms == 0. */
    if (c->count == 0 && !c->disconnected)
        mosquitto_loop(c->m, 0, 1);
    while (c->count == 0 && now_ms() < end && !c->disconnected)
        mosquitto_loop(c->m, 5, 1);
    if (c->count == 0)
        return NULL;
    msg_free(&c->last);
    c->last = c->queue[c->head];
    c->head = (c->head + 1) % c->cap;
    c->count--;
    return &c->last;
}

int client_drain(struct client *c, int ms)
{
    int n = 0;
    uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end) {
        if (client_wait(c, (int)(end - now_ms())))
            n++;
        if (c->disconnected)
            break;
    }
    return n;
}

int client_drain_count(struct client *c, int want, int ms)
{
    int n = 0;
    uint64_t end = now_ms() + (uint64_t)ms;
    while (n < want && now_ms() < end && !c->disconnected)
        if (client_wait(c, (int)(end - now_ms())))
            n++;
    return n + client_drain(c, 100); /* and none more */
}

int client_wait_puback(struct client *c, int ms)
{
    int before = c->pubacks;
    uint64_t end = now_ms() + (uint64_t)ms;
    while (c->pubacks == before && now_ms() < end && !c->disconnected)
        mosquitto_loop(c->m, 5, 1);
    return c->pubacks == before ? -1 : c->last_puback_rc;
}

const char *msg_user(const struct msg *m, const char *name)
{
    for (int i = 0; i < m->nuser; i++)
        if (strcmp(m->user[i][0], name) == 0)
            return m->user[i][1];
    return NULL;
}

void admin_send(struct client *c, const char *resp, const char *corr, const char *const *words)
{
    uint8_t payload[4096];
    int len = words ? encode_request(payload, sizeof payload, words, NULL) : 0; /* NULL: an empty payload */
    ASSERT_TRUE(len > 0 || words == NULL);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    ASSERT_EQ(mosquitto_publish_v5(c->m, NULL, ADMIN_TOPIC, len, payload, 1, false, props), MOSQ_ERR_SUCCESS);
    mosquitto_property_free_all(&props);
}

struct msg *admin_call(struct client *c, const char *resp, const char *corr, const char *const *words)
{
    admin_send(c, resp, corr, words);
    struct msg *m = client_wait(c, 20000);
    ASSERT_TRUE(m != NULL);
    ASSERT_MEM(m->corr, (size_t)m->corr_len, corr, strlen(corr));
    return m;
}

int encode_request(uint8_t *buf, int cap, const char *const *words, const int *lens)
{
    ss_bytes argv[16];
    size_t argc = 0;
    for (; words[argc]; argc++) {
        argv[argc].data = (const uint8_t *)words[argc];
        argv[argc].len = lens ? (size_t)lens[argc] : strlen(words[argc]);
    }
    ss_buf b = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&b, argc, argv), 0);
    ASSERT_TRUE(b.len <= (size_t)cap);
    memcpy(buf, b.data, b.len);
    int n = (int)b.len;
    ss_buf_free(&b);
    return n;
}

void request_send(struct client *c, const char *resp, const char *corr, const char *ts,
                  const char *ft, const char *const *words)
{
    /* Any size: a value may be tens of MiB. */
    ss_bytes argv[16];
    size_t argc = 0;
    for (; words[argc]; argc++)
        argv[argc] = (ss_bytes){(const uint8_t *)words[argc], strlen(words[argc])};
    ss_buf payload = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&payload, argc, argv), 0);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    if (corr)
        mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    char tsbuf[64];
    if (ts == NULL) {
        snprintf(tsbuf, sizeof tsbuf, "%015llu:%05d:%s", (unsigned long long)now_ms(), 0, "client");
        ts = tsbuf;
    }
    if (ts[0])
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    if (ft)
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ft", ft);
    int rc = client_publish(c, REQ_TOPIC, payload.data, (int)payload.len, 1, false, props);
    ss_buf_free(&payload);
    mosquitto_property_free_all(&props);
    ASSERT_EQ(rc, MOSQ_ERR_SUCCESS);
}

struct msg *request(struct client *c, const char *resp, const char *corr, const char *ts,
                    const char *ft, const char *const *words)
{
    request_send(c, resp, corr, ts, ft, words);
    return client_wait(c, 5000);
}

void set_keys_pipelined(struct client *c, const char *resp, const char *prefix, int digits, int from, int n)
{
    enum { WINDOW = 200 };
    char key[96];
    for (int done = 0; done < n;) {
        int batch = n - done < WINDOW ? n - done : WINDOW;
        for (int i = 0; i < batch; i++) {
            snprintf(key, sizeof key, "%s%0*d", prefix, digits, from + done + i);
            request_send(c, resp, "s", NULL, NULL, W("SET", key, "v"));
        }
        await_answers(c, batch, "+OK\r\n");
        done += batch;
    }
}

void await_answers(struct client *c, int n, const char *want)
{
    for (int i = 0; i < n; i++) {
        struct msg *m = client_wait(c, 30000);
        ASSERT_TRUE(m != NULL);
        ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
    }
}

/* A figure of the broker on port under $SYS/broker/statestore/, once one
 * satisfying want came (10 s at most); false if none did. */
bool sys_figure_until(int port, const char *name, bool (*want)(const char *v), char *out, size_t n)
{
    struct client s;
    client_connect(&s, port, "figures", false);
    char topic[128];
    snprintf(topic, sizeof topic, "$SYS/broker/statestore/%s", name);
    client_subscribe(&s, topic);
    bool got = false;
    for (uint64_t t0 = now_ms(); !got && now_ms() - t0 < 10000;) {
        struct msg *m = client_wait(&s, 1500);
        if (m == NULL)
            continue;
        snprintf(out, n, "%.*s", m->len, (const char *)m->payload);
        got = want(out);
    }
    client_close(&s);
    return got;
}
