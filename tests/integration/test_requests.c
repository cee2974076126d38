/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_requests.c - requests and responses through a real broker: bytes,
 * properties, response topics, and the requests that are refused. */
#include <stdio.h>
#include <string.h>

#include "../test.h"
#include "harness.h"


static const char *RESP = "clients/tester/services/statestore/v1/" GUID "/command/invoke/response";

static void start(struct broker *b, struct client *c)
{
    memset(b, 0, sizeof *b);
    broker_start(b);
    client_connect(c, b->port, "tester", false);
    client_subscribe(c, RESP);
}

/* The properties every state store response carries. */
static void check_response(const struct msg *m, const char *corr)
{
    ASSERT_TRUE(m != NULL);
    ASSERT_STR(m->topic, strlen(m->topic), "clients/tester/services/statestore/v1/" GUID
                                           "/command/invoke/response");
    ASSERT_EQ(m->qos, 1);
    ASSERT_MEM(m->corr, (size_t)m->corr_len, corr, strlen(corr));
    ASSERT_TRUE(m->content_type != NULL);
    ASSERT_STR(m->content_type, strlen(m->content_type), "application/octet-stream");
    USER(m, "__stat", "200");
    USER(m, "__protVer", "1.0");
    ASSERT_TRUE(m->len > 0);
}

TEST(plugin_commands_byte_exact)
{
    struct broker b;
    struct client c;
    start(&b, &c);
    char ts[64];
    snprintf(ts, sizeof ts, "%llu:0:CLIENT", (unsigned long long)now_ms());
    struct msg *m = request(&c, RESP, "corr-1", ts, NULL, W("SET", "testkey", "testvalue"));
    check_response(m, "corr-1");
    PAYLOAD(m, "+OK\r\n");
    const char *v = msg_user(m, "__ts");
    ASSERT_TRUE(v != NULL);
    char version[128];
    snprintf(version, sizeof version, "%s", v);
    ASSERT_TRUE(strstr(version, ":StateStore") != NULL);

    m = request(&c, RESP, "corr-2", NULL, NULL, W("GET", "testkey"));
    check_response(m, "corr-2");
    PAYLOAD(m, "$9\r\ntestvalue\r\n");
    USER(m, "__ts", version);
    m = request(&c, RESP, "corr-3", NULL, NULL, W("SET", "testkey", "other", "NX"));
    PAYLOAD(m, ":-1\r\n");
    USER(m, "__ts", version);
    m = request(&c, RESP, "corr-4", NULL, NULL, W("GET", "absent"));
    check_response(m, "corr-4");
    PAYLOAD(m, "$-1\r\n");
    ASSERT_TRUE(msg_user(m, "__ts") == NULL);
    m = request(&c, RESP, "corr-5", NULL, NULL, W("VDEL", "testkey", "wrong"));
    PAYLOAD(m, ":-1\r\n");
    m = request(&c, RESP, "corr-6", NULL, NULL, W("VDEL", "testkey", "testvalue"));
    PAYLOAD(m, ":1\r\n");
    USER(m, "__ts", version);
    m = request(&c, RESP, "corr-7", NULL, NULL, W("DEL", "testkey"));
    PAYLOAD(m, ":0\r\n");
    m = request(&c, RESP, "corr-8", NULL, NULL, W("KEYNOTIFY", "testkey"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&c, RESP, "corr-9", NULL, NULL, W("KEYNOTIFY", "testkey", "STOP"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&c, RESP, "corr-a", NULL, NULL, W("KEYNOTIFY", "testkey", "STOP"));
    PAYLOAD(m, ":0\r\n");
    m = request(&c, RESP, "corr-b", "", NULL, W("SET", "k", "v"));
    check_response(m, "corr-b");
    PAYLOAD(m, "-ERR missing timestamp\r\n");
    m = request(&c, RESP, "corr-c", NULL, NULL, W("set", "k"));
    PAYLOAD(m, "-ERR wrong number of arguments\r\n");
    m = request(&c, RESP, "corr-d", NULL, NULL, W("SCANX", "*"));
    PAYLOAD(m, "-ERR unknown command\r\n");
    m = request(&c, RESP, "corr-d", NULL, NULL, W("SCAN", "*")); /* every key is gone */
    PAYLOAD(m, "*1\r\n*0\r\n");
    /* Garbage payload. */
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, RESP);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, "corr-e", 6);
    ASSERT_EQ(client_publish(&c, REQ_TOPIC, "\xff\x00garbage", 9, 1, false, props), 0);
    mosquitto_property_free_all(&props);
    m = client_wait(&c, 5000);
    check_response(m, "corr-e");
    PAYLOAD(m, "-ERR syntax error\r\n");
    client_close(&c);
    broker_stop(&b);
}

/* The response topics of the three SDKs and the docs all work. */
TEST(plugin_sdk_response_topics_and_properties)
{
    struct broker b = {0};
    broker_start(&b);
    static const char *topics[] = {
        "clients/sdkclient/services/statestore/v1/" GUID "/command/invoke/response",
        "clients/73646B636C69656E74/statestore/v1/" GUID "/command/invoke/response",
        "clients/sdkclient/statestore/v1/" GUID "/command/invoke",
        "clients/sdkclient/services/statestore/_any_/command/invoke/response",
    };
    struct client c;
    client_connect(&c, b.port, "sdkclient", false);
    for (int i = 0; i < 4; i++)
        client_subscribe(&c, topics[i]);
    for (int i = 0; i < 4; i++) {
        uint8_t buf[128];
        int n = encode_request(buf, sizeof buf, W("SET", "k", "v"), NULL);
        /* What the SDKs send besides. */
        mosquitto_property *props = NULL;
        char ts[64];
        snprintf(ts, sizeof ts, "%015llu:%05d:sdkclient", (unsigned long long)now_ms(), 3);
        mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, topics[i]);
        mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA,
                                      "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16);
        mosquitto_property_add_string(&props, MQTT_PROP_CONTENT_TYPE, "application/octet-stream");
        mosquitto_property_add_byte(&props, MQTT_PROP_PAYLOAD_FORMAT_INDICATOR, 0);
        mosquitto_property_add_int32(&props, MQTT_PROP_MESSAGE_EXPIRY_INTERVAL, 10);
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__srcId", "sdkclient");
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__protVer", "1.0");
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "$partition", "sdkclient");
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "$high_priority", "");
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__invId", "abc");
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "aio-persistence", "true");
        ASSERT_EQ(client_publish(&c, REQ_TOPIC, buf, n, 1, false, props), 0);
        mosquitto_property_free_all(&props);
        struct msg *m = client_wait(&c, 5000);
        ASSERT_TRUE(m != NULL);
        ASSERT_MEM(m->topic, strlen(m->topic), topics[i], strlen(topics[i]));
        ASSERT_MEM(m->corr, (size_t)m->corr_len,
                   "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16);
        PAYLOAD(m, "+OK\r\n");
        USER(m, "__stat", "200");
        ASSERT_TRUE(msg_user(m, "__ts") != NULL);
        /* Exactly one answer: nothing else arrives on the other topics. */
        ASSERT_EQ(client_drain(&c, 50), 0);
    }
    client_close(&c);
    broker_stop(&b);
}

/* VDEL, NEX and fencing tokens through the broker compare every byte and
 * the length: a value or token that is a prefix of the stored one, or has
 * it as a prefix, is another one. */
TEST(plugin_conditions_compare_every_byte_and_the_length)
{
    struct broker b;
    struct client c;
    start(&b, &c);
    struct msg *m = request(&c, RESP, "set", NULL, NULL, W("SET", "k", "vv"));
    PAYLOAD(m, "+OK\r\n");
    char version[128];
    snprintf(version, sizeof version, "%s", msg_user(m, "__ts"));
    static const char *const others[] = {"v", "vvv", ""};
    for (int i = 0; i < 3; i++) {
        char corr[24];
        snprintf(corr, sizeof corr, "vdel-%d", i);
        m = request(&c, RESP, corr, NULL, NULL, W("VDEL", "k", others[i]));
        check_response(m, corr);
        PAYLOAD(m, ":-1\r\n");
        ASSERT_TRUE(msg_user(m, "__ts") == NULL);
        snprintf(corr, sizeof corr, "nex-%d", i);
        m = request(&c, RESP, corr, NULL, NULL, W("SET", "k", others[i], "NEX"));
        check_response(m, corr);
        PAYLOAD(m, ":-1\r\n");
        USER(m, "__ts", version); /* the current version */
    }
    m = request(&c, RESP, "get", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$2\r\nvv\r\n");
    USER(m, "__ts", version);

    /* A lock held by worker-10 is neither worker-1's nor worker-100's. */
    ASSERT_REPLY(request(&c, RESP, "lock", NULL, NULL, W("SET", "lock", "worker-10", "NX", "PX", "60000")),
                 "+OK\r\n");
    ASSERT_REPLY(request(&c, RESP, "rel-1", NULL, NULL, W("VDEL", "lock", "worker-1")), ":-1\r\n");
    ASSERT_REPLY(request(&c, RESP, "rel-2", NULL, NULL, W("VDEL", "lock", "worker-100")), ":-1\r\n");
    ASSERT_REPLY(request(&c, RESP, "rel-3", NULL, NULL, W("VDEL", "lock", "")), ":-1\r\n");
    ASSERT_REPLY(request(&c, RESP, "renew", NULL, NULL, W("SET", "lock", "worker-1", "NEX", "PX", "60000")),
                 ":-1\r\n");
    ASSERT_REPLY(request(&c, RESP, "get-lock", NULL, NULL, W("GET", "lock")), "$9\r\nworker-10\r\n");
    ASSERT_REPLY(request(&c, RESP, "release", NULL, NULL, W("VDEL", "lock", "worker-10")), ":1\r\n");

    /* Fencing tokens whose node ids are prefixes of each other: the
     * shorter is the lower version. */
    char node10[64], node1[64], node100[64];
    uint64_t now = now_ms();
    snprintf(node10, sizeof node10, "%llu:0:node10", (unsigned long long)now);
    snprintf(node1, sizeof node1, "%llu:0:node1", (unsigned long long)now);
    snprintf(node100, sizeof node100, "%llu:0:node100", (unsigned long long)now);
    ASSERT_REPLY(request(&c, RESP, "f1", NULL, node10, W("SET", "res", "a")), "+OK\r\n");
    static const char LOWER[] = "-ERR the request fencing token is a lower version than the fencing token "
                                "protecting the resource\r\n";
    ASSERT_REPLY(request(&c, RESP, "f2", NULL, node1, W("SET", "res", "b")), LOWER);
    ASSERT_REPLY(request(&c, RESP, "f3", NULL, node1, W("VDEL", "res", "a")), LOWER);
    ASSERT_REPLY(request(&c, RESP, "f4", NULL, node1, W("DEL", "res")), LOWER);
    ASSERT_REPLY(request(&c, RESP, "f5", NULL, NULL, W("GET", "res")), "$1\r\na\r\n");
    ASSERT_REPLY(request(&c, RESP, "f6", NULL, node100, W("SET", "res", "c")), "+OK\r\n");
    ASSERT_REPLY(request(&c, RESP, "f7", NULL, node10, W("SET", "res", "d")), LOWER);
    ASSERT_REPLY(request(&c, RESP, "f8", NULL, node100, W("VDEL", "res", "c")), ":1\r\n");
    client_close(&c);
    broker_stop(&b);
}
