/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* outbox.c - messages that wait for a batch's commit, then go out
 * (outbox.h). mosquitto_broker_publish takes payload and properties only
 * when it succeeds; on failure they are freed here.
 */
#include "outbox.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <mosquitto_broker.h>
#include <mqtt_protocol.h>

#include "../core/codec.h"
#include "../core/errors.h"
#include "plugin.h"

mosquitto_property *ss_response_props(const uint8_t *corr, uint16_t corr_len, const char *stat,
                                      const char *version)
{
    mosquitto_property *props = NULL;
    int rc = MOSQ_ERR_SUCCESS;
    if (corr) /* present, perhaps empty: echoed as it came (MQTT tells empty from absent) */
        rc = mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, corr_len);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string(&props, MQTT_PROP_CONTENT_TYPE, "application/octet-stream");
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__stat", stat);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__protVer", "1.0");
    if (rc == MOSQ_ERR_SUCCESS && version)
        rc = mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", version);
    if (rc != MOSQ_ERR_SUCCESS) {
        mosquitto_property_free_all(&props);
        return NULL;
    }
    return props;
}

const char *ss_answer_to(const struct ss_plugin *p, const char *client_id)
{
    return p->opt.topic_protection ? client_id : NULL;
}

/* What a message holds beside its payload, topic, client id and
 * correlation data: its structure here and its properties (four or five,
 * each a node and one or two strings, with the allocator's overhead). An
 * estimate: the bound it serves is on memory, and a message of an empty
 * payload must weigh something, or answers without end would fit it. */
#define SS_OUTBOX_MSG_OVERHEAD 512u

static size_t ss_outbox__size(const struct ss_outmsg *m)
{
    return SS_OUTBOX_MSG_OVERHEAD + m->payload_len + m->corr_len + (m->topic ? strlen(m->topic) : 0) +
           (m->clientid ? strlen(m->clientid) : 0) + (m->requester ? strlen(m->requester) : 0);
}

/* Free m, which leaves ob (its bytes no longer counted). */
static void ss_outbox__msg_free(struct ss_outbox *ob, struct ss_outmsg *m)
{
    ob->bytes -= m->size;
    free(m->clientid);
    free(m->requester);
    free(m->topic);
    free(m->payload);
    free(m->corr);
    mosquitto_property_free_all(&m->props);
    memset(m, 0, sizeof *m);
}

int ss_outbox_push(struct ss_outbox *ob, char *clientid, bool answer, char *topic, uint8_t *payload, size_t len,
                   mosquitto_property *props, uint8_t *corr, uint16_t corr_len, uint64_t commit, bool final)
{
    struct ss_outmsg m = {.clientid = clientid,
                          .answer = answer,
                          .topic = topic,
                          .payload = payload,
                          .payload_len = len,
                          .props = props,
                          .corr = corr,
                          .corr_len = corr_len,
                          .commit = commit,
                          .final = final};
    if (ob->len == ob->cap) {
        size_t cap = ob->cap ? ob->cap * 2 : 64;
        struct ss_outmsg *p = realloc(ob->msgs, cap * sizeof *p);
        if (p) {
            ob->msgs = p;
            ob->cap = cap;
        }
    }
    if (topic == NULL || (clientid == NULL && !answer) || ob->len == ob->cap) {
        ss_outbox__msg_free(ob, &m); /* never counted: size 0 */
        return MOSQ_ERR_NOMEM;
    }
    m.size = ss_outbox__size(&m);
    ob->bytes += m.size;
    ob->msgs[ob->len++] = m;
    return MOSQ_ERR_SUCCESS;
}

size_t ss_outbox_count(const struct ss_outbox *ob, uint64_t commit)
{
    size_t n = 0;
    for (size_t i = 0; i < ob->len; i++)
        n += ob->msgs[i].commit == commit;
    return n;
}

void ss_outbox_fail(struct ss_outbox *ob, uint64_t commit, int err)
{
    size_t kept = 0;
    for (size_t i = 0; i < ob->len; i++) {
        struct ss_outmsg *m = &ob->msgs[i];
        bool failed = commit != 0 && m->commit == commit && !m->final;
        if (failed && m->answer) {
            ss_buf b = SS_BUF_INIT;
            mosquitto_property *props = ss_response_props(m->corr, m->corr_len, "200", NULL);
            if (props && ss_codec_put_error(&b, ss_err_is_wire(err) ? err : SS_E_IO) == SS_OK) {
                free(m->payload);
                mosquitto_property_free_all(&m->props);
                m->payload = b.data;
                m->payload_len = b.len;
                m->props = props;
                ob->bytes -= m->size;
                m->size = ss_outbox__size(m);
                ob->bytes += m->size;
                ob->msgs[kept++] = *m;
                continue;
            }
            ss_buf_free(&b);
            mosquitto_property_free_all(&props);
        }
        if (failed) {
            ss_outbox__msg_free(ob, m);
            continue;
        }
        ob->msgs[kept++] = *m;
    }
    ob->len = kept;
}

int ss_outbox_registers(struct ss_outbox *ob, const char *client_id)
{
    if (ob->len == 0 || !ob->msgs[ob->len - 1].answer)
        return MOSQ_ERR_SUCCESS; /* cannot happen: the caller pushed it */
    struct ss_outmsg *m = &ob->msgs[ob->len - 1];
    if (m->clientid == NULL && m->requester == NULL) {
        if ((m->requester = strdup(client_id)) == NULL)
            return MOSQ_ERR_NOMEM;
        ob->bytes -= m->size;
        m->size = ss_outbox__size(m);
        ob->bytes += m->size;
    }
    m->registers = true;
    return MOSQ_ERR_SUCCESS;
}

size_t ss_outbox_client_gone(struct ss_outbox *ob, const char *client_id)
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < ob->len; i++) {
        struct ss_outmsg *m = &ob->msgs[i];
        const char *whose = m->clientid ? m->clientid : m->requester;
        if ((!m->answer || m->registers) && whose && strcmp(whose, client_id) == 0) {
            dropped += !m->answer;
            ss_outbox__msg_free(ob, m);
        } else {
            ob->msgs[kept++] = *m;
        }
    }
    ob->len = kept;
    return dropped;
}

void ss_outbox_drop(struct ss_outbox *ob, uint64_t commit)
{
    size_t kept = 0;
    for (size_t i = 0; i < ob->len; i++) {
        if (commit != 0 && ob->msgs[i].commit == commit && !ob->msgs[i].final)
            ss_outbox__msg_free(ob, &ob->msgs[i]);
        else
            ob->msgs[kept++] = ob->msgs[i];
    }
    ob->len = kept;
}

void ss_outbox_flush(struct ss_outbox *ob, struct ss_plugin *p)
{
    ss_outbox_flush_from(ob, p, UINT64_MAX);
}

void ss_outbox_flush_from(struct ss_outbox *ob, struct ss_plugin *p, uint64_t from)
{
    size_t kept = 0;
    for (size_t i = 0; i < ob->len; i++) {
        struct ss_outmsg *m = &ob->msgs[i];
        /* A notification never overtakes an answer held before it: the
         * writer hears of its write before its observers do. */
        if ((m->commit != 0 && m->commit >= from) || (kept && !m->answer)) {
            ob->msgs[kept++] = *m;
            continue;
        }
        int rc = ss_publish(m->clientid, m->topic, m->payload, m->payload_len, 1, false, m->props);
        if (!m->answer && rc == MOSQ_ERR_SUCCESS)
            p->metrics.notifications_sent++;
        else if (!m->answer)
            p->metrics.notifications_dropped++;
        if (rc == MOSQ_ERR_SUCCESS) {
            m->props = NULL; /* now the broker's */
        } else {
            ss_log(p, MOSQ_LOG_WARNING, "could not publish to %s: %s", m->topic,
                   mosquitto_strerror(rc));
        }
        ss_outbox__msg_free(ob, m);
    }
    ob->len = kept;
}

void ss_outbox_free(struct ss_outbox *ob)
{
    for (size_t i = 0; i < ob->len; i++)
        ss_outbox__msg_free(ob, &ob->msgs[i]);
    free(ob->msgs);
    memset(ob, 0, sizeof *ob);
}

int ss_publish(const char *clientid, const char *topic, const void *payload, size_t len, int qos, bool retain,
               mosquitto_property *props)
{
    /* The broker frees the payload with its own accounting free, which
     * takes from its count of memory in use what it never added for our
     * malloc: its count wraps below zero, and with memory_limit set every
     * allocation after that fails (no client could connect). Its
     * mosquitto_broker_publish_copy copies with the plain calloc, so the
     * copy is made here, with the broker's allocator. */
    if (len > INT_MAX)
        return MOSQ_ERR_PAYLOAD_SIZE;
    void *copy = mosquitto_malloc(len ? len : 1);
    if (copy == NULL)
        return MOSQ_ERR_NOMEM;
    if (len)
        memcpy(copy, payload, len);
    int rc = mosquitto_broker_publish(clientid, topic, (int)len, copy, qos, retain, props);
    if (rc != MOSQ_ERR_SUCCESS)
        mosquitto_free(copy);
    return rc;
}
