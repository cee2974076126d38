/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fixture.c - the plugin assembled on the in-memory backend, and the
 * broker functions it calls (fixture.h).
 *
 * The broker's API passes no context to mosquitto_broker_publish or
 * mosquitto_log_printf, so what they record lives in this file's one
 * static record. Each test runs in its own process (tests/main.c): the
 * record starts empty for every test.
 */
#include "fixture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/codec.h"
#include "../../core/errors.h"
#include "../../core/hex.h"
#include "../../plugin/admin.h"
#include "../../plugin/backup.h"
#include "../../plugin/batch.h"
#include "../../plugin/notify.h"
#include "../../plugin/protect.h"
#include "../test.h"

/* Room for a flood of answers (test_bound.c sends 10,000 requests). */
#define LC_MSGS_MAX 10240u
#define LC_WORDS_MAX 8u

static struct {
    struct lc_msg msgs[LC_MSGS_MAX];
    size_t n;
    ss_buf log; /* every line logged, each ending in '\n' */
} lc_broker;

/* ---- the broker's side --------------------------------------------------- */

static void lc__record_props(struct lc_msg *m, const mosquitto_property *props)
{
    for (const mosquitto_property *p = props; p; p = mosquitto_property_next(p)) {
        int id = mosquitto_property_identifier(p);
        if (id == MQTT_PROP_CORRELATION_DATA) {
            void *data = NULL;
            uint16_t len = 0;
            ASSERT_TRUE(mosquitto_property_read_binary(p, MQTT_PROP_CORRELATION_DATA, &data, &len, false));
            ASSERT_EQ(ss_buf_append(&m->corr, data, len), SS_OK);
            free(data);
        } else if (id == MQTT_PROP_USER_PROPERTY) {
            char *name = NULL, *value = NULL;
            ASSERT_TRUE(mosquitto_property_read_string_pair(p, MQTT_PROP_USER_PROPERTY, &name, &value, false));
            if (strcmp(name, "__stat") == 0)
                snprintf(m->stat, sizeof m->stat, "%s", value);
            else if (strcmp(name, "__ts") == 0)
                snprintf(m->ts, sizeof m->ts, "%s", value);
            free(name);
            free(value);
        }
    }
}

/* The broker's allocator, which the payloads it takes come from. */
void *mosquitto_malloc(size_t size)
{
    return malloc(size);
}

void mosquitto_free(void *mem)
{
    free(mem);
}

/* Takes payload and properties when it succeeds, as the broker does. */
int mosquitto_broker_publish(const char *clientid, const char *topic, int payloadlen, void *payload, int qos,
                             bool retain, mosquitto_property *properties)
{
    ASSERT_EQ(qos, 1);
    ASSERT_TRUE(!retain);
    ASSERT_TRUE(lc_broker.n < LC_MSGS_MAX);
    struct lc_msg *m = &lc_broker.msgs[lc_broker.n++];
    memset(m, 0, sizeof *m);
    m->clientid = clientid ? strdup(clientid) : NULL;
    m->topic = strdup(topic);
    ASSERT_TRUE(m->topic != NULL && (clientid == NULL || m->clientid != NULL));
    ASSERT_EQ(ss_buf_append(&m->payload, payload, (size_t)payloadlen), SS_OK);
    lc__record_props(m, properties);
    mosquitto_free(payload);
    mosquitto_property_free_all(&properties);
    return MOSQ_ERR_SUCCESS;
}

void mosquitto_log_printf(int level, const char *fmt, ...)
{
    (void)level;
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    (void)ss_buf_append_str(&lc_broker.log, line);
    (void)ss_buf_append(&lc_broker.log, "\n", 1);
}

/* Only administrative requests and broker events ask these. The fake
 * broker's client handle is its id, a C string (lc_disconnect, lc_admin). */
const char *mosquitto_client_id(const struct mosquitto *client)
{
    return (const char *)client;
}

const char *mosquitto_client_username(const struct mosquitto *client)
{
    (void)client;
    return NULL;
}

int mosquitto_client_protocol_version(const struct mosquitto *client)
{
    (void)client;
    return 5;
}

int mosquitto_client_protocol(const struct mosquitto *client)
{
    (void)client;
    return mp_mqtt;
}

size_t lc_published(void)
{
    return lc_broker.n;
}

const struct lc_msg *lc_msg(size_t i)
{
    ASSERT_TRUE(i < lc_broker.n);
    return &lc_broker.msgs[i];
}

bool lc_logged(const char *text)
{
    if (lc_broker.log.len == 0)
        return false;
    (void)ss_buf_append(&lc_broker.log, "", 1); /* a C string, for strstr */
    lc_broker.log.len--;
    return strstr((const char *)lc_broker.log.data, text) != NULL;
}

void lc_expect_answer(size_t i, const char *client, const char *corr, const char *payload)
{
    const struct lc_msg *m = lc_msg(i);
    char topic[128];
    snprintf(topic, sizeof topic, "resp/%s", client);
    /* Into the requester's session alone (topic protection, the default). */
    ASSERT_TRUE(m->clientid != NULL);
    ASSERT_MEM(m->clientid, strlen(m->clientid), client, strlen(client));
    ASSERT_MEM(m->topic, strlen(m->topic), topic, strlen(topic));
    ASSERT_MEM(m->corr.data, m->corr.len, corr, strlen(corr));
    ASSERT_MEM(m->payload.data, m->payload.len, payload, strlen(payload));
    ASSERT_STR(m->stat, strlen(m->stat), "200");
}

void lc_expect_notify(size_t i, const char *client, const char *key, const char *payload)
{
    const struct lc_msg *m = lc_msg(i);
    ss_buf topic = SS_BUF_INIT;
    ASSERT_EQ(ss_buf_append_str(&topic, SS_NOTIFY_PREFIX "/"), SS_OK);
    ASSERT_EQ(ss_hex_append(&topic, (const uint8_t *)client, strlen(client), true), SS_OK);
    ASSERT_EQ(ss_buf_append_str(&topic, "/command/notify/"), SS_OK);
    ASSERT_EQ(ss_hex_append(&topic, (const uint8_t *)key, strlen(key), true), SS_OK);
    ASSERT_TRUE(m->clientid != NULL);
    ASSERT_MEM(m->clientid, strlen(m->clientid), client, strlen(client));
    ASSERT_MEM(m->topic, strlen(m->topic), topic.data, topic.len);
    ASSERT_MEM(m->payload.data, m->payload.len, payload, strlen(payload));
    ASSERT_TRUE(m->ts[0] != '\0');
    ss_buf_free(&topic);
}

/* ---- the plugin ------------------------------------------------------------ */

const struct ss_mem_options lc_shared = {.max_flights = 2, .may_conflict = true};
const struct ss_mem_options lc_single = {.max_flights = 1, .blocks = true};

void lc_open(struct lc *f, const struct ss_mem_options *o)
{
    memset(f, 0, sizeof *f);
    struct ss_plugin *p = calloc(1, sizeof *p);
    ASSERT_TRUE(p != NULL);
    f->p = p;
    /* Valid, and never ahead of the server's clock, so that answers carry
     * the server's own versions; the same for every request, so that
     * sending the same words again is a resend. */
    f->ts_wall = ss_wall_ms() - 3600000;
    /* The defaults of plugin/options.c, as with no plugin_opt_ line. */
    ASSERT_EQ(ss_options_parse(&p->opt, NULL, 0), MOSQ_ERR_SUCCESS);
    p->opt.max_value_bytes = (uint64_t)1 << 20;
    ASSERT_EQ(ss_mem_new(o, &p->backend), SS_OK);
    f->be = p->backend;
    ss_notify_attach(p);
    ss_engine_options eo = {.node_id = p->opt.node_id,
                            .max_key_len = (size_t)p->opt.max_key_length,
                            .max_value_len = (size_t)p->opt.max_value_bytes,
                            .on_keynotify = ss_on_keynotify,
                            .keynotify_ctx = p,
                            .on_authorize = ss_authorize,
                            .authorize_ctx = p,
                            .max_answer = (size_t)p->opt.max_value_bytes};
    ASSERT_EQ(ss_engine_new(p->backend, &eo, &p->engine), SS_OK);
    ASSERT_EQ(ss_watch_new(p->opt.max_registrations_per_client, p->opt.max_registrations, &p->watch), SS_OK);
    ASSERT_EQ(ss_pwatch_new(p->opt.max_pattern_watches_per_client, p->opt.max_pattern_watches, &p->pwatch),
              SS_OK);
    ss_dedup_limits dl = {p->opt.dedup_window_ms, (size_t)p->opt.dedup_max_entries,
                          (size_t)p->opt.dedup_max_bytes};
    ASSERT_EQ(ss_dedup_new(&dl, &p->dedup), SS_OK);
    ASSERT_EQ(ss_admin_new(&p->admin), SS_OK);
    ASSERT_EQ(ss_backup_new(&p->backup), SS_OK);
    ASSERT_EQ(ss_batch_new(p, &p->batch), SS_OK);
}

void lc_close(struct lc *f)
{
    struct ss_plugin *p = f->p;
    ss_backup_free(p->backup);
    ss_batch_free(p->batch);
    ss_admin_free(p->admin);
    ss_engine_free(p->engine);
    p->backend->ops->destroy(p->backend);
    ss_watch_free(p->watch);
    ss_pwatch_free(p->pwatch);
    ss_dedup_free(p->dedup);
    ss_buf_free(&p->topic);
    ss_options_free(&p->opt);
    free(p);
    for (size_t i = 0; i < lc_broker.n; i++) {
        struct lc_msg *m = &lc_broker.msgs[i];
        free(m->clientid);
        free(m->topic);
        ss_buf_free(&m->payload);
        ss_buf_free(&m->corr);
    }
    lc_broker.n = 0;
    ss_buf_free(&lc_broker.log);
    memset(f, 0, sizeof *f);
}

static char *lc__dup(const char *s)
{
    char *d = strdup(s);
    ASSERT_TRUE(d != NULL);
    return d;
}

/* The request of words separated by single spaces, as RESP3. */
static void lc__request(ss_buf *payload, const char *words)
{
    ss_bytes argv[LC_WORDS_MAX];
    size_t argc = 0;
    for (const char *w = words; *w && argc < LC_WORDS_MAX;) {
        size_t n = strcspn(w, " ");
        argv[argc].data = (const uint8_t *)w;
        argv[argc++].len = n;
        w += n + (w[n] == ' ');
    }
    ASSERT_EQ(ss_codec_put_request(payload, argc, argv), SS_OK);
}

void lc_send(struct lc *f, const char *client, const char *corr, const char *words)
{
    ss_buf payload = SS_BUF_INIT;
    lc__request(&payload, words);
    char topic[128], ts[64];
    snprintf(topic, sizeof topic, "resp/%s", client);
    snprintf(ts, sizeof ts, "%llu:0:%s", (unsigned long long)f->ts_wall, client);
    struct ss_request_props r = {.response_topic = lc__dup(topic), .ts = lc__dup(ts)};
    r.corr_len = (uint16_t)strlen(corr);
    r.has_corr = r.corr_len > 0;
    r.corr = r.has_corr ? lc__dup(corr) : NULL;
    struct ss_request_from from = {payload.data, payload.len, client, NULL};
    ss_batch_submit(f->p->batch, &from, &r);
    ss_request_props_free(&r);
    ss_buf_free(&payload);
}

void lc_admin(struct lc *f, const char *client, const char *corr, const char *words)
{
    ss_buf payload = SS_BUF_INIT;
    lc__request(&payload, words);
    char topic[128];
    snprintf(topic, sizeof topic, "resp/%s", client);
    mosquitto_property *props = NULL;
    ASSERT_EQ(mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, topic), MOSQ_ERR_SUCCESS);
    ASSERT_EQ(mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr)),
              MOSQ_ERR_SUCCESS);
    char admin_topic[] = SS_ADMIN_TOPIC;
    struct mosquitto_evt_message ed = {.client = (struct mosquitto *)client, .topic = admin_topic, .payload = payload.data,
                                       .payloadlen = (uint32_t)payload.len, .properties = props, .qos = 1};
    ASSERT_EQ(ss_admin_on_message(f->p, &ed), MOSQ_ERR_SUCCESS);
    mosquitto_property_free_all(&props);
    ss_buf_free(&payload);
}

void lc_disconnect(struct lc *f, const char *client)
{
    struct mosquitto_evt_disconnect ed = {.client = (struct mosquitto *)client};
    ASSERT_EQ(ss_on_disconnect(MOSQ_EVT_DISCONNECT, &ed, f->p), MOSQ_ERR_SUCCESS);
}

void lc_tick(struct lc *f)
{
    lc_tick_at(f, ss_wall_ms());
}

void lc_tick_at(struct lc *f, uint64_t now_ms)
{
    ss_batch_tick(f->p->batch, now_ms);
}
