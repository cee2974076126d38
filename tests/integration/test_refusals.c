/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_refusals.c - requests the plugin must not execute: forbidden and
 * unusable response topics, QoS 0, no correlation data, a foreign protocol
 * version, MQTT 3.1.1; and retained requests. */
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "harness.h"


static const char *RESP = "clients/checker/resp";

/* GET key through a well-behaved client: the raw answer payload. */
static void expect_absent(int port, const char *key)
{
    struct client c;
    client_connect(&c, port, "checker", false);
    client_subscribe(&c, RESP);
    struct msg *m = request(&c, RESP, "chk", NULL, NULL, W("GET", key));
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "$-1\r\n");
    client_close(&c);
}

/* Publish a SET of key with the given response topic (NULL: none),
 * correlation data (NULL: none), QoS and extra user property. */
static void send_set(struct client *c, const char *key, const char *resp, const char *corr, int qos,
                     const char *uname, const char *uvalue)
{
    uint8_t buf[256];
    int n = encode_request(buf, sizeof buf, W("SET", key, "v"), NULL);
    mosquitto_property *props = NULL;
    if (resp)
        mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    if (corr)
        mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    char ts[64];
    snprintf(ts, sizeof ts, "%llu:0:c", (unsigned long long)now_ms());
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    if (uname)
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, uname, uvalue);
    ASSERT_EQ(client_publish(c, REQ_TOPIC, buf, n, qos, false, props), MOSQ_ERR_SUCCESS);
    mosquitto_property_free_all(&props);
}

TEST(plugin_forbidden_response_topic_disconnects)
{
    struct broker b = {0};
    broker_start(&b);
    static const char *forbidden[] = {
        REQ_TOPIC,
        "clients/statestore/v1/" GUID,
        "clients/statestore/v1/" GUID "/6D65/command/notify/6B",
    };
    for (int i = 0; i < 3; i++) {
        struct client c;
        client_connect(&c, b.port, "evil", false);
        char key[16];
        snprintf(key, sizeof key, "f%d", i);
        send_set(&c, key, forbidden[i], "x", 1, NULL, NULL);
        ASSERT_TRUE(client_wait(&c, 2000) == NULL);
        ASSERT_TRUE(c.disconnected);
        client_close(&c);
        expect_absent(b.port, key);
    }
    ASSERT_TRUE(broker_log_has(&b, "forbidden response topic"));
    broker_stop(&b);
}

TEST(plugin_unusable_response_topic_not_executed)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "sloppy", false);
    client_subscribe(&c, "#");
    /* The broker's own limit on a topic's levels is 200 slashes. */
    char deep[203], deeper[203];
    memset(deep, '/', 200);
    deep[200] = '\0';
    memset(deeper, '/', 201);
    deeper[201] = '\0';
    const char *bad[] = {NULL, "clients/+/resp", "clients/#", "clients/a+b", deeper};
    int nbad = (int)(sizeof bad / sizeof bad[0]);
    for (int i = 0; i < nbad; i++) {
        char key[16];
        snprintf(key, sizeof key, "u%d", i);
        send_set(&c, key, bad[i], "x", 1, NULL, NULL);
        ASSERT_EQ(client_wait_puback(&c, 2000), MQTT_RC_NOT_AUTHORIZED);
        ASSERT_TRUE(!c.disconnected);
        expect_absent(b.port, key);
    }
    /* No answer went anywhere: the "#" subscriber saw nothing (requests
     * are private, and the checker's answers went to the checker alone). */
    ASSERT_EQ(client_drain(&c, 100), 0);
    struct msg *m;
    /* At the limit the answer goes out. */
    send_set(&c, "deep", deep, "x", 1, NULL, NULL);
    ASSERT_EQ(client_wait_puback(&c, 2000), 0);
    while ((m = client_wait(&c, 2000)) != NULL && strcmp(m->topic, deep) != 0)
        ;
    ASSERT_TRUE(m != NULL);
    ASSERT_MEM(m->payload, (size_t)m->len, "+OK\r\n", 5);
    client_close(&c);
    broker_stop(&b);
}

TEST(plugin_qos0_missing_correlation_and_version)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "odd", false);
    client_subscribe(&c, "clients/odd/resp");
    send_set(&c, "q0", "clients/odd/resp", "c1", 0, NULL, NULL);
    struct msg *m = client_wait(&c, 2000);
    ASSERT_TRUE(m != NULL);
    USER(m, "__stat", "400");
    ASSERT_TRUE(msg_user(m, "__stMsg") != NULL);
    ASSERT_TRUE(strstr(msg_user(m, "__stMsg"), "QoS 1") != NULL);
    ASSERT_MEM(m->corr, (size_t)m->corr_len, "c1", 2);
    ASSERT_STR(m->payload, (size_t)m->len, "QoS 1 is required for state store requests");

    send_set(&c, "nocorr", "clients/odd/resp", NULL, 1, NULL, NULL);
    m = client_wait(&c, 2000);
    ASSERT_TRUE(m != NULL);
    USER(m, "__stat", "400");
    USER(m, "__propName", "Correlation Data");
    ASSERT_STR(m->payload, (size_t)m->len, "Correlation Data is missing");
    ASSERT_TRUE(m->corr == NULL);

    send_set(&c, "v2", "clients/odd/resp", "c3", 1, "__protVer", "2.0");
    m = client_wait(&c, 2000);
    ASSERT_TRUE(m != NULL);
    USER(m, "__stat", "505");
    USER(m, "__supProtMajVer", "1");
    USER(m, "__requestProtVer", "2.0");
    USER(m, "__protVer", "1.0");

    send_set(&c, "v1", "clients/odd/resp", "c4", 1, "__protVer", "1.7");
    m = client_wait(&c, 2000);
    ASSERT_TRUE(m != NULL);
    USER(m, "__stat", "200");
    ASSERT_STR(m->payload, (size_t)m->len, "+OK\r\n");

    /* Empty correlation data is correlation data: the request runs and
     * its answer carries it back, empty (MQTT tells empty from absent). */
    send_set(&c, "emptycorr", "clients/odd/resp", "", 1, NULL, NULL);
    m = client_wait(&c, 2000);
    ASSERT_TRUE(m != NULL);
    USER(m, "__stat", "200");
    ASSERT_STR(m->payload, (size_t)m->len, "+OK\r\n");
    ASSERT_TRUE(m->corr != NULL);
    ASSERT_EQ(m->corr_len, 0);
    client_close(&c);
    expect_absent(b.port, "q0");
    expect_absent(b.port, "nocorr");
    expect_absent(b.port, "v2");
    broker_stop(&b);
}

TEST(plugin_mqtt311_not_executed)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "old", true);
    uint8_t buf[128];
    int n = encode_request(buf, sizeof buf, W("SET", "old", "v"), NULL);
    ASSERT_EQ(client_publish(&c, REQ_TOPIC, buf, n, 1, false, NULL), 0);
    client_wait_puback(&c, 2000);
    client_close(&c);
    expect_absent(b.port, "old");
    ASSERT_TRUE(broker_log_has(&b, "MQTT 5 is required"));
    broker_stop(&b);
}

TEST(plugin_retained_request_not_kept)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "ret", false);
    client_subscribe(&c, "clients/ret/resp");
    uint8_t buf[128];
    int n = encode_request(buf, sizeof buf, W("GET", "k"), NULL);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, "clients/ret/resp");
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, "r", 1);
    ASSERT_EQ(client_publish(&c, REQ_TOPIC, buf, n, 1, true, props), 0);
    mosquitto_property_free_all(&props);
    struct msg *m = client_wait(&c, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_STR(m->payload, (size_t)m->len, "$-1\r\n");
    client_close(&c);
    /* A new subscriber to the request topic gets no retained message. */
    struct client s;
    client_connect(&s, b.port, "late", false);
    client_subscribe(&s, REQ_TOPIC);
    ASSERT_TRUE(client_wait(&s, 300) == NULL);
    client_close(&s);
    broker_stop(&b);
}

/* A listener with a mount_point: the broker prefixes its clients' topics,
 * so their requests never reach the store's topic. The plugin says so at
 * start; the clients of the other listeners are served as ever. */
TEST(plugin_mount_point_listener_is_not_served_and_said_so)
{
    struct broker b = {0};
    int mounted = free_port();
    snprintf(b.extra, sizeof b.extra, "listener %d 127.0.0.1\nmount_point m/\n", mounted);
    broker_start(&b);
    ASSERT_TRUE(broker_log_has(&b, "the broker's configuration has a mount_point: the state store does not serve "
                                   "the clients of such a listener"));
    struct client c, d;
    client_connect(&c, mounted, "mounted", false);
    client_subscribe(&c, "clients/mounted/resp");
    send_set(&c, "k", "clients/mounted/resp", "x", 1, NULL, NULL);
    ASSERT_TRUE(client_wait(&c, 500) == NULL);
    char rd[64];
    client_connect_rr(&d, b.port, "plain", rd, sizeof rd);
    ASSERT_REPLY(request(&d, rd, "1", NULL, NULL, W("GET", "k")), "$-1\r\n");
    client_close(&c);
    client_close(&d);
    broker_stop(&b);
}

/* per_listener_settings true: Mosquitto 2.0 never delivers the tick event
 * to the plugin, so no batch would ever commit and every request would go
 * unanswered while the broker looked healthy. The plugin refuses to start,
 * naming the setting. */
TEST(plugin_per_listener_settings_refused_at_start)
{
    struct broker b = {0};
    snprintf(b.head, sizeof b.head, "per_listener_settings true\n");
    ASSERT_TRUE(broker_start_fails(&b) != 0);
    ASSERT_TRUE(broker_log_has(&b, "per_listener_settings true"));
}
