/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* batch_answer.c - the answers and notifications a batch queues in its
 * outbox (batch_internal.h, batch.h). */
#include <stdlib.h>
#include <string.h>

#include <mosquitto_broker.h>
#include <mqtt_protocol.h>

#include "batch_internal.h"
#include "plugin.h"

void ss_request_props_free(struct ss_request_props *r)
{
    free(r->response_topic);
    free(r->corr);
    free(r->ts);
    free(r->ft);
    free(r->prot_ver);
    memset(r, 0, sizeof *r);
}

bool ss_batch__push(struct ss_batch *b, const char *client_id, struct ss_request_props *r, uint8_t *payload,
                    size_t len, mosquitto_property *props, uint64_t commit, bool final)
{
    const char *session = ss_answer_to(b->p, client_id);
    char *to = NULL;
    if (session && (to = strdup(session)) == NULL) {
        free(payload);
        mosquitto_property_free_all(&props);
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: an answer was dropped");
        return false;
    }
    char *topic = r->response_topic;
    uint8_t *corr = r->corr;
    uint16_t corr_len = r->corr_len;
    r->response_topic = NULL;
    r->corr = NULL;
    r->corr_len = 0;
    if (ss_outbox_push(&b->outbox, to, true, topic, payload, len, props, corr, corr_len, commit, final) !=
        MOSQ_ERR_SUCCESS) {
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: an answer was dropped");
        return false;
    }
    return true;
}

bool ss_batch__answer(struct ss_batch *b, const char *client_id, struct ss_request_props *r,
                      const ss_bytes *payload, const char *version, uint64_t commit, bool final)
{
    mosquitto_property *props = ss_response_props(r->corr, r->corr_len, "200", version);
    uint8_t *copy = malloc(payload->len);
    if (props == NULL || copy == NULL) {
        mosquitto_property_free_all(&props);
        free(copy);
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: an answer was dropped");
        return false;
    }
    memcpy(copy, payload->data, payload->len);
    return ss_batch__push(b, client_id, r, copy, payload->len, props, commit, final);
}

void ss_batch_refuse(struct ss_batch *b, const char *client_id, struct ss_request_props *r, const char *stat,
                     const char *const *extra)
{
    mosquitto_property *props = ss_response_props(r->corr, r->corr_len, stat, NULL);
    for (size_t i = 0; props && extra[i]; i += 2) {
        if (mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, extra[i], extra[i + 1]) !=
            MOSQ_ERR_SUCCESS)
            mosquitto_property_free_all(&props);
    }
    /* The payload is never empty: it repeats the status message. */
    const char *text = "error";
    for (size_t i = 0; extra[i]; i += 2)
        if (strcmp(extra[i], "__stMsg") == 0)
            text = extra[i + 1];
    uint8_t *payload = (uint8_t *)strdup(text);
    if (props == NULL || payload == NULL) {
        mosquitto_property_free_all(&props);
        free(payload);
        return;
    }
    ss_batch__push(b, client_id, r, payload, strlen(text), props, 0, false);
}

void ss_batch_notify(struct ss_batch *b, char *client_id, char *topic, uint8_t *payload, size_t len,
                     mosquitto_property *props)
{
    /* From the change feed: committed already, it waits for nothing. */
    if (ss_outbox_push(&b->outbox, client_id, false, topic, payload, len, props, NULL, 0, 0, false) !=
        MOSQ_ERR_SUCCESS) {
        b->p->metrics.notifications_dropped++;
        ss_log(b->p, MOSQ_LOG_WARNING, "out of memory: a notification was dropped");
    }
}
