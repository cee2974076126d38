/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* echo_plugin.c - the floor for benchmarks: a Mosquitto plugin that
 * answers every state store request with a fixed valid response and
 * touches no store. The difference between it and the state store is what
 * the store costs; the echo itself is what the broker costs.
 *
 * It answers like the real plugin does (same topic checks, same response
 * properties, published to the response topic, QoS 1), with "+OK" for
 * writes and a 64-byte bulk for reads, so the load generator's checks pass.
 */
#include <stdlib.h>
#include <string.h>

#include <mosquitto.h>
#include <mosquitto_broker.h>
#include <mosquitto_plugin.h>
#include <mqtt_protocol.h>

#define SS_EXPORT __attribute__((visibility("default")))
#define REQ_TOPIC "statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke"

SS_EXPORT int mosquitto_plugin_version(int n, const int *v);
SS_EXPORT int mosquitto_plugin_init(mosquitto_plugin_id_t *id, void **ud, struct mosquitto_opt *o, int n);
SS_EXPORT int mosquitto_plugin_cleanup(void *ud, struct mosquitto_opt *o, int n);

static int on_message(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)userdata;
    struct mosquitto_evt_message *ed = event_data;
    if (strcmp(ed->topic, REQ_TOPIC) != 0)
        return MOSQ_ERR_SUCCESS;
    char *resp = NULL;
    void *corr = NULL;
    uint16_t corr_len = 0;
    mosquitto_property_read_string(ed->properties, MQTT_PROP_RESPONSE_TOPIC, &resp, false);
    mosquitto_property_read_binary(ed->properties, MQTT_PROP_CORRELATION_DATA, &corr, &corr_len, false);
    if (resp == NULL || corr == NULL) {
        free(resp);
        free(corr);
        return MOSQ_ERR_ACL_DENIED;
    }
    /* "*3\r\n$3\r\nSET..." or "*2\r\n$3\r\nGET...": the verb's first letter. */
    const char *p = ed->payload;
    bool get = ed->payloadlen > 8 && p[8] == 'G';
    static const char ok[] = "+OK\r\n";
    static const char bulk[] = "$64\r\n0123456789012345678901234567890123456789012345678901234567890123\r\n";
    const char *answer = get ? bulk : ok;
    size_t len = get ? sizeof bulk - 1 : sizeof ok - 1;
    mosquitto_property *props = NULL;
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, corr_len);
    mosquitto_property_add_string(&props, MQTT_PROP_CONTENT_TYPE, "application/octet-stream");
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__stat", "200");
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__protVer", "1.0");
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", "1700000000000:1:Echo");
    if (mosquitto_broker_publish_copy(NULL, resp, (int)len, answer, 1, false, props) != MOSQ_ERR_SUCCESS)
        mosquitto_property_free_all(&props);
    free(resp);
    free(corr);
    return MOSQ_ERR_SUCCESS;
}

int mosquitto_plugin_version(int n, const int *v)
{
    (void)n;
    (void)v;
    return 5;
}

int mosquitto_plugin_init(mosquitto_plugin_id_t *id, void **ud, struct mosquitto_opt *o, int n)
{
    (void)o;
    (void)n;
    *ud = id; /* the plugin's only state: its id, to unregister */
    return mosquitto_callback_register(id, MOSQ_EVT_MESSAGE, on_message, NULL, NULL);
}

int mosquitto_plugin_cleanup(void *ud, struct mosquitto_opt *o, int n)
{
    (void)o;
    (void)n;
    return mosquitto_callback_unregister(ud, MOSQ_EVT_MESSAGE, on_message, NULL);
}
