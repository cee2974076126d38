/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* request.c - MOSQ_EVT_MESSAGE: the MQTT checks of a state store request.
 *
 * Order of checks (docs/PROTOCOL.md section 1): our topic; MQTT 5; a
 * forbidden response topic disconnects the client; an unusable response
 * topic gets no answer (PUBACK 0x87); QoS 0 and missing correlation data
 * get status 400; a foreign protocol major version gets 505; everything
 * else goes to the batch (batch.h), which runs it.
 */
#include "request.h"

#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "batch.h"
#include "plugin.h"

/* Keep the first occurrence of a user property we care about. */
static void ss_request__user_prop(struct ss_request_props *r, char *name, char *value)
{
    char **slot = NULL;
    if (strcmp(name, "__ts") == 0)
        slot = &r->ts;
    else if (strcmp(name, "__ft") == 0)
        slot = &r->ft;
    else if (strcmp(name, "__protVer") == 0)
        slot = &r->prot_ver;
    free(name);
    if (slot && *slot == NULL)
        *slot = value;
    else
        free(value);
}

static void ss_request__read(const mosquitto_property *props, struct ss_request_props *r)
{
    memset(r, 0, sizeof *r);
    for (const mosquitto_property *pr = props; pr; pr = mosquitto_property_next(pr)) {
        int id = mosquitto_property_identifier(pr);
        if (id == MQTT_PROP_RESPONSE_TOPIC && r->response_topic == NULL) {
            mosquitto_property_read_string(pr, MQTT_PROP_RESPONSE_TOPIC, &r->response_topic, false);
        } else if (id == MQTT_PROP_CORRELATION_DATA && !r->has_corr) {
            if (mosquitto_property_read_binary(pr, MQTT_PROP_CORRELATION_DATA, &r->corr, &r->corr_len,
                                               false))
                r->has_corr = true;
        } else if (id == MQTT_PROP_USER_PROPERTY) {
            char *name = NULL, *value = NULL;
            if (mosquitto_property_read_string_pair(pr, MQTT_PROP_USER_PROPERTY, &name, &value, false))
                ss_request__user_prop(r, name, value);
        }
    }
}

bool ss_request_forbidden_topic(const char *t)
{
    return strcmp(t, SS_REQUEST_TOPIC) == 0 ||
           strncmp(t, SS_NOTIFY_PREFIX, sizeof SS_NOTIFY_PREFIX - 1) == 0;
}

/* What mosquitto_pub_topic_check accepts in the broker (no wildcard, at
 * most SS_TOPIC_LEVELS_MAX slashes, which keeps its topic matching shallow),
 * and not empty: checked here with the C library's scans, which are several
 * times faster than that function's byte loop on every answer. */
bool ss_request_usable_topic(const char *t)
{
    size_t n = t ? strlen(t) : 0;
    if (n == 0 || n > SS_TOPIC_MAX || strcspn(t, "+#") != n)
        return false;
    unsigned slashes = 0;
    for (const char *s = memchr(t, '/', n); s; s = memchr(s + 1, '/', n - (size_t)(s + 1 - t)))
        if (++slashes > SS_TOPIC_LEVELS_MAX)
            return false;
    return true;
}

int ss_on_message(int event, void *event_data, void *userdata)
{
    (void)event;
    struct ss_plugin *p = userdata;
    struct mosquitto_evt_message *ed = event_data;
    if (p->wswake.live && mosquitto_client_protocol(ed->client) == mp_websockets)
        ss_wswake_used(&p->wswake); /* someone at the console: serve it without the loop's 100 ms */
    if (ed->topic != NULL && strcmp(ed->topic, SS_ADMIN_TOPIC) == 0)
        return ss_admin_on_message(p, ed);
    if (ed->topic == NULL || strcmp(ed->topic, SS_REQUEST_TOPIC) != 0)
        return MOSQ_ERR_SUCCESS;
    ed->retain = false; /* a request is never kept as a retained message */
    const char *client_id = mosquitto_client_id(ed->client);
    if (client_id == NULL)
        client_id = "";
    if (mosquitto_client_protocol_version(ed->client) != 5) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: request over MQTT 3 ignored (MQTT 5 is required)",
               client_id);
        return MOSQ_ERR_ACL_DENIED;
    }
    struct ss_request_props r;
    ss_request__read(ed->properties, &r);
    int ret = MOSQ_ERR_SUCCESS;
    if (r.response_topic && ss_request_forbidden_topic(r.response_topic)) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: forbidden response topic: disconnected", client_id);
        ret = MOSQ_ERR_PROTOCOL;
    } else if (!ss_request_usable_topic(r.response_topic)) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: request without a usable response topic ignored",
               client_id);
        ret = MOSQ_ERR_ACL_DENIED;
    } else if (ed->qos == 0) {
        static const char *const extra[] = {"__stMsg", "QoS 1 is required for state store requests",
                                            NULL};
        ss_batch_refuse(p->batch, client_id, &r, "400", extra);
        ret = MOSQ_ERR_ACL_DENIED;
    } else if (!r.has_corr) {
        static const char *const extra[] = {"__propName", "Correlation Data", "__stMsg",
                                            "Correlation Data is missing", NULL};
        ss_batch_refuse(p->batch, client_id, &r, "400", extra);
        ret = MOSQ_ERR_ACL_DENIED;
    } else if (r.prot_ver && strncmp(r.prot_ver, "1.", 2) != 0 && strcmp(r.prot_ver, "1") != 0) {
        const char *const extra[] = {"__supProtMajVer", "1", "__requestProtVer", r.prot_ver,
                                     "__stMsg", "unsupported protocol version", NULL};
        ss_batch_refuse(p->batch, client_id, &r, "505", extra);
        ret = MOSQ_ERR_ACL_DENIED;
    } else {
        struct ss_request_from from = {ed->payload, (size_t)ed->payloadlen, client_id,
                                       mosquitto_client_username(ed->client)};
        ss_batch_submit(p->batch, &from, &r);
    }
    if (ret != MOSQ_ERR_SUCCESS)
        p->refused++;
    ss_request_props_free(&r);
    return ret;
}
