/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client.c - the C client library against the real broker. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include "../../client/client.h"
#include "../../client/lease.h"
#include <stdlib.h>
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

static ss_client *lib_connect(int port, const char *id)
{
    ss_client_options o = {.host = "127.0.0.1", .port = port, .client_id = id, .timeout_ms = 3000};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    return c;
}

struct seen {
    pthread_mutex_t mu;
    char log[4096];
    int connected, lost, gaps;
};

static void on_notify(void *ud, const ss_notification *n)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->mu);
    size_t used = strlen(s->log);
    snprintf(s->log + used, sizeof s->log - used, "%s %.*s%s%.*s;", n->deleted ? "DELETE" : "SET",
             (int)n->key_len, (const char *)n->key, n->deleted ? "" : "=", (int)n->value_len,
             n->deleted ? "" : (const char *)n->value);
    pthread_mutex_unlock(&s->mu);
}

static void on_conn(void *ud, bool connected, bool gap)
{
    struct seen *s = ud;
    pthread_mutex_lock(&s->mu);
    if (connected)
        s->connected++;
    else
        s->lost++;
    if (gap)
        s->gaps++;
    pthread_mutex_unlock(&s->mu);
}

/* Wait until the log holds want (or 3 s). */
static bool seen_wait(struct seen *s, const char *want)
{
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&s->mu);
        bool ok = strcmp(s->log, want) == 0;
        pthread_mutex_unlock(&s->mu);
        if (ok)
            return true;
        usleep(10000);
    }
    fprintf(stderr, "  notifications seen: \"%s\", wanted \"%s\"\n", s->log, want);
    return false;
}

TEST(client_blocking_calls)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *c = lib_connect(b.port, "lib1");
    ss_client_result r;
    ss_set_options nx = {.condition = SS_SET_NX};
    ASSERT_EQ(ss_client_set(c, "k", 1, "v\0x", 3, &nx, &r), SS_OK);
    ASSERT_TRUE(r.applied);
    char v1[300];
    snprintf(v1, sizeof v1, "%s", r.version);
    ASSERT_TRUE(strstr(v1, ":StateStore") != NULL);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_set(c, "k", 1, "other", 5, &nx, &r), SS_OK);
    ASSERT_TRUE(!r.applied);
    ASSERT_MEM(r.version, strlen(r.version), v1, strlen(v1));
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_get(c, "k", 1, &r), SS_OK);
    ASSERT_TRUE(r.found);
    ASSERT_MEM(r.value, r.value_len, "v\0x", 3);
    ASSERT_MEM(r.version, strlen(r.version), v1, strlen(v1));
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_get(c, "nope", 4, &r), SS_OK);
    ASSERT_TRUE(!r.found);
    ASSERT_EQ(r.version[0], '\0');
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_vdel(c, "k", 1, "zz", 2, NULL, &r), SS_OK);
    ASSERT_EQ(r.count, -1);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_vdel(c, "k", 1, "v\0x", 3, NULL, &r), SS_OK);
    ASSERT_EQ(r.count, 1);
    ASSERT_TRUE(r.applied);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_del(c, "k", 1, NULL, &r), SS_OK);
    ASSERT_EQ(r.count, 0);
    ss_client_result_free(&r);
    /* PX and fencing tokens. */
    ss_set_options lease = {.condition = SS_SET_NEX, .px_ms = 200};
    ASSERT_EQ(ss_client_set(c, "lock", 4, "me", 2, &lease, &r), SS_OK);
    char token[300];
    snprintf(token, sizeof token, "%s", r.version);
    ss_client_result_free(&r);
    ss_set_options fenced = {.fencing_token = token};
    ASSERT_EQ(ss_client_set(c, "res", 3, "1", 1, &fenced, &r), SS_OK);
    ss_client_result_free(&r);
    /* Errors map to codes and keep the text. */
    ASSERT_EQ(ss_client_set(c, "res", 3, "2", 1, NULL, &r), SS_E_FT_REQUIRED);
    ASSERT_STR(r.error_text, strlen(r.error_text), "a fencing token is required for this request");
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_del(c, "res", 3, "1:0:x", &r), SS_E_FT_LOWER);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_del(c, "res", 3, "garbage", &r), SS_E_FT_MALFORMED); /* refused locally */
    ASSERT_EQ(r.status, SS_E_FT_MALFORMED);
    ss_client_result_free(&r);
    /* A version whose node id is not UTF-8 (or holds a control character)
     * too: sent, it would make the broker drop the connection. */
    ASSERT_EQ(ss_client_del(c, "res", 3, "1:0:\xff", &r), SS_E_FT_MALFORMED);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_del(c, "res", 3, "1:0:a\x01", &r), SS_E_FT_MALFORMED);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_del(c, "res", 3, "1:0:x", &r), SS_E_FT_LOWER); /* still connected */
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_set(c, "", 0, "x", 1, NULL, &r), SS_E_KEY_EMPTY);
    ss_client_result_free(&r);
    usleep(300 * 1000);
    ASSERT_EQ(ss_client_get(c, "lock", 4, &r), SS_OK);
    ASSERT_TRUE(!r.found);
    ss_client_result_free(&r);
    ss_client_close(c);
    broker_stop(&b);
}

struct async_box {
    pthread_mutex_t mu;
    int done;
    int status[8];
    bool applied[8];
};

/* Completions so far, read under the box's lock (the callbacks run on the
 * client's network thread). */
static int box_done(struct async_box *a)
{
    pthread_mutex_lock(&a->mu);
    int n = a->done;
    pthread_mutex_unlock(&a->mu);
    return n;
}

static void box_reset(struct async_box *a)
{
    pthread_mutex_lock(&a->mu);
    a->done = 0;
    pthread_mutex_unlock(&a->mu);
}

static void async_cb(void *ud, const ss_client_result *r)
{
    struct async_box *a = ud;
    pthread_mutex_lock(&a->mu);
    a->status[a->done] = r->status;
    a->applied[a->done] = r->applied;
    a->done++;
    pthread_mutex_unlock(&a->mu);
}

TEST(client_async_calls_and_timeout)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *c = lib_connect(b.port, "lib2");
    struct async_box a = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ASSERT_EQ(ss_client_set_async(c, "a", 1, "1", 1, NULL, async_cb, &a), SS_OK);
    ASSERT_EQ(ss_client_get_async(c, "a", 1, async_cb, &a), SS_OK);
    ASSERT_EQ(ss_client_vdel_async(c, "a", 1, "1", 1, NULL, async_cb, &a), SS_OK);
    ASSERT_EQ(ss_client_del_async(c, "a", 1, NULL, async_cb, &a), SS_OK);
    ASSERT_EQ(ss_client_keynotify_async(c, "a", 1, false, async_cb, &a), SS_OK);
    for (int i = 0; i < 300 && box_done(&a) < 5; i++)
        usleep(10000);
    ASSERT_EQ(box_done(&a), 5);
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(a.status[i], SS_OK);
    ASSERT_TRUE(a.applied[0] && a.applied[2] && !a.applied[3] && a.applied[4]);
    ss_client_close(c);
    broker_stop(&b);

    /* A broker without the plugin never answers: the call times out, and
     * the asynchronous form reports the same. */
    struct broker plain = {.no_plugin = true};
    broker_start(&plain);
    ss_client_options o = {.host = "127.0.0.1", .port = plain.port, .client_id = "lib3",
                           .timeout_ms = 300};
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    uint64_t t0 = now_ms();
    ss_client_result r;
    ASSERT_EQ(ss_client_get(c, "a", 1, &r), SS_E_TIMEOUT);
    ASSERT_TRUE(now_ms() - t0 + 1 >= 300); /* the client's clock is the monotonic one: a millisecond apart */
    ss_client_result_free(&r);
    box_reset(&a);
    ASSERT_EQ(ss_client_get_async(c, "a", 1, async_cb, &a), SS_OK);
    for (int i = 0; i < 300 && box_done(&a) < 1; i++)
        usleep(10000);
    ASSERT_EQ(box_done(&a), 1);
    ASSERT_EQ(a.status[0], SS_E_TIMEOUT);
    ss_client_close(c);
    broker_stop(&plain);
    /* Nobody listening at all: connect fails. */
    ASSERT_EQ(ss_client_connect(&o, &c), SS_E_CONNECTION);
}

struct blocked_call {
    ss_client *c;
    int rc;
    uint64_t returned_ms;
};

static void *blocked_get(void *arg)
{
    struct blocked_call *b = arg;
    ss_client_result r;
    b->rc = ss_client_get(b->c, "a", 1, &r);
    b->returned_ms = now_ms();
    ss_client_result_free(&r);
    return NULL;
}

/* Closing a client while other threads wait in blocking calls: each call
 * returns SS_E_CONNECTION at once, and the client is freed only after the
 * last has left (under AddressSanitizer a use after free would abort).
 * Several waiters, so that some are still waking when close goes on. */
TEST(client_close_while_calls_wait)
{
    struct broker plain = {.no_plugin = true};
    broker_start(&plain);
    /* Sees each call's request: the call is inside by then. */
    struct client mon;
    client_connect(&mon, plain.port, "monitor", false);
    client_subscribe(&mon, REQ_TOPIC);
    enum { WAITERS = 8 };
    for (int round = 0; round < 10; round++) {
        ss_client_options o = {.host = "127.0.0.1", .port = plain.port, .timeout_ms = 10000};
        ss_client *c;
        ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
        struct blocked_call b[WAITERS];
        pthread_t t[WAITERS];
        for (int i = 0; i < WAITERS; i++) {
            b[i] = (struct blocked_call){.c = c, .rc = 1};
            ASSERT_EQ(pthread_create(&t[i], NULL, blocked_get, &b[i]), 0);
        }
        /* Every call inside (none may start once close has begun): all
         * their requests have reached the broker. A fixed sleep could end
         * before a thread started, on a loaded machine. */
        ASSERT_EQ(client_drain_count(&mon, WAITERS, 10000), WAITERS);
        uint64_t t0 = now_ms();
        ss_client_close(c);
        for (int i = 0; i < WAITERS; i++) {
            ASSERT_EQ(pthread_join(t[i], NULL), 0);
            ASSERT_EQ(b[i].rc, SS_E_CONNECTION);
            ASSERT_TRUE(b[i].returned_ms - t0 < 5000);
        }
    }
    client_close(&mon);
    broker_stop(&plain);
}

TEST(client_notifications_and_reconnect)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *w = lib_connect(b.port, "lib-watch");
    ss_client *s = lib_connect(b.port, "lib-set");
    struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client_set_notify_cb(w, on_notify, &seen);
    ss_client_set_connection_cb(w, on_conn, &seen);
    ASSERT_EQ(ss_client_keynotify(w, "key\x01", 4, false, NULL), SS_OK);
    ASSERT_EQ(ss_client_set(s, "key\x01", 4, "one", 3, NULL, NULL), SS_OK);
    ASSERT_TRUE(seen_wait(&seen, "SET key\x01=one;"));
    ASSERT_EQ(ss_client_del(s, "key\x01", 4, NULL, NULL), SS_OK);
    ASSERT_TRUE(seen_wait(&seen, "SET key\x01=one;DELETE key\x01;"));
    ss_set_options px = {.px_ms = 100};
    ASSERT_EQ(ss_client_set(s, "key\x01", 4, "two", 3, &px, NULL), SS_OK);
    ASSERT_TRUE(seen_wait(&seen, "SET key\x01=one;DELETE key\x01;SET key\x01=two;DELETE key\x01;"));
    seen.log[0] = '\0';
    /* The broker restarts: the watcher reconnects, re-registers, and says
     * there was a gap. */
    ss_client_close(s);
    broker_stop(&b);
    broker_start(&b);
    for (int i = 0; i < 1500; i++) {
        pthread_mutex_lock(&seen.mu);
        bool back = seen.gaps > 0;
        pthread_mutex_unlock(&seen.mu);
        if (back)
            break;
        usleep(10000);
    }
    ASSERT_EQ(seen.lost, 1);
    ASSERT_EQ(seen.gaps, 1);
    s = lib_connect(b.port, "lib-set");
    /* Give the re-registration a moment to land before the SET. */
    ss_client_result r;
    for (int i = 0; i < 50; i++) {
        ASSERT_EQ(ss_client_set(s, "key\x01", 4, "three", 5, NULL, &r), SS_OK);
        ss_client_result_free(&r);
        pthread_mutex_lock(&seen.mu);
        bool got = seen.log[0] != '\0';
        pthread_mutex_unlock(&seen.mu);
        if (got)
            break;
        usleep(20000);
    }
    ASSERT_TRUE(strncmp(seen.log, "SET key\x01=three;", strlen("SET key\x01=three;")) == 0);
    ss_client_close(w);
    ss_client_close(s);
    broker_stop(&b);
}

struct waiter_arg {
    int port;
    int rc;
    uint64_t acquired_at;
};

static void *contender(void *p)
{
    struct waiter_arg *a = p;
    ss_client *c = lib_connect(a->port, "lease-b");
    char token[SS_LEASE_TOKEN_MAX];
    a->rc = ss_lease_acquire_wait(c, "lock", "b", 5000, 5000, token);
    a->acquired_at = now_ms();
    bool released;
    ss_lease_release(c, "lock", "b", &released);
    ss_client_close(c);
    return NULL;
}

TEST(client_leases)
{
    /* A lease of 1 s: long enough for a broker under valgrind to answer
     * every renewal in time, short enough to be outlived below. */
    enum { TTL = 1000 };
    struct broker b = {0};
    broker_start(&b);
    ss_client *a = lib_connect(b.port, "lease-a");
    ss_client *o = lib_connect(b.port, "lease-o");
    bool got = true;
    char t1[SS_LEASE_TOKEN_MAX], t2[SS_LEASE_TOKEN_MAX];
    /* A lease of no time is refused before anything is sent (without PX
     * it would never end; waiting for one spun). */
    ASSERT_EQ(ss_lease_acquire(a, "lock", "a", 0, &got, t1), SS_E_INVAL);
    ASSERT_TRUE(!got);
    ASSERT_EQ(ss_lease_acquire_wait(a, "lock", "a", 0, 100, t1), SS_E_INVAL);
    ASSERT_EQ(ss_lease_acquire(a, "lock", "a", TTL, &got, t1), SS_OK);
    ASSERT_TRUE(got);
    ASSERT_EQ(ss_lease_acquire(o, "lock", "o", TTL, &got, t2), SS_OK);
    ASSERT_TRUE(!got);
    ss_client_result r;
    ASSERT_EQ(ss_lease_holder(o, "lock", &r), SS_OK);
    ASSERT_STR(r.value, r.value_len, "a");
    ss_client_result_free(&r);
    /* The keeper renews past the ttl, with growing tokens. */
    ss_lease_keeper *k;
    ASSERT_EQ(ss_lease_keep(a, "lock", "a", TTL, &k), SS_OK);
    usleep(2 * TTL * 1000);
    ASSERT_TRUE(!ss_lease_keeper_lost(k));
    ss_lease_keeper_token(k, t2);
    ASSERT_TRUE(strcmp(t2, t1) > 0);
    ASSERT_EQ(ss_lease_acquire(o, "lock", "o", TTL, &got, NULL), SS_OK);
    ASSERT_TRUE(!got);
    ss_lease_keeper_stop(k);
    /* Writes with the newest token pass; the first token is now too old. */
    ss_set_options fenced = {.fencing_token = t2};
    ASSERT_EQ(ss_client_set(a, "data", 4, "x", 1, &fenced, NULL), SS_OK);
    fenced.fencing_token = t1;
    ASSERT_EQ(ss_client_set(a, "data", 4, "y", 1, &fenced, NULL), SS_E_FT_LOWER);
    bool released;
    ASSERT_EQ(ss_lease_release(o, "lock", "o", &released), SS_OK);
    ASSERT_TRUE(!released);
    ASSERT_EQ(ss_lease_release(a, "lock", "a", &released), SS_OK);
    ASSERT_TRUE(released);

    /* A blocking acquire waits for the DELETE instead of polling. */
    ASSERT_EQ(ss_lease_acquire(a, "lock", "a", 10000, &got, t1), SS_OK);
    ASSERT_TRUE(got);
    struct waiter_arg wa = {.port = b.port, .rc = -999};
    pthread_t th;
    pthread_create(&th, NULL, contender, &wa);
    usleep(1000 * 1000); /* it has asked, been refused and registered for the DELETE */
    ASSERT_EQ(wa.rc, -999); /* still waiting */
    uint64_t released_at = now_ms();
    ASSERT_EQ(ss_lease_release(a, "lock", "a", &released), SS_OK);
    pthread_join(th, NULL);
    ASSERT_EQ(wa.rc, SS_OK);
    ASSERT_TRUE(wa.acquired_at - released_at < 1000); /* not the 10 s ttl */
    ss_client_close(a);
    ss_client_close(o);
    broker_stop(&b);
}

static int incr(void *ud, const uint8_t *value, size_t len, bool found, uint8_t **nv, size_t *nn,
                bool *del)
{
    (void)ud;
    (void)del;
    char text[16] = "";
    if (found)
        snprintf(text, sizeof text, "%.*s", (int)len, (const char *)value);
    int n = atoi(text);
    *nv = malloc(16);
    *nn = (size_t)snprintf((char *)*nv, 16, "%d", n + 1);
    return 0;
}

static void *editor(void *p)
{
    struct waiter_arg *a = p;
    char id[32];
    snprintf(id, sizeof id, "editor-%d", a->rc);
    ss_client *c = lib_connect(a->port, id);
    for (int i = 0; i < 10; i++)
        if (ss_lease_edit(c, "counter-lock", id, 2000, 10000, "counter", 7, incr, NULL) != SS_OK)
            a->rc = -1;
    ss_client_close(c);
    return NULL;
}

TEST(client_edit_under_lock)
{
    struct broker b = {0};
    broker_start(&b);
    struct waiter_arg args[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        args[i] = (struct waiter_arg){.port = b.port, .rc = i};
        pthread_create(&th[i], NULL, editor, &args[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        ASSERT_EQ(args[i].rc, i);
    }
    ss_client *c = lib_connect(b.port, "reader");
    ss_client_result r;
    ASSERT_EQ(ss_client_get(c, "counter", 7, &r), SS_OK);
    ASSERT_STR(r.value, r.value_len, "30"); /* no lost update */
    ss_client_result_free(&r);
    ss_client_close(c);
    broker_stop(&b);
}

/* An application's own mosquitto handle. */
static void app_on_message(struct mosquitto *m, void *ud, const struct mosquitto_message *msg,
                           const mosquitto_property *props)
{
    (void)m;
    ss_client **c = ud;
    if (*c)
        ss_client_handle_message(*c, msg->topic, msg->payload, msg->payloadlen, props);
}

TEST(client_attach_to_application_handle)
{
    struct broker b = {0};
    broker_start(&b);
    static ss_client *c; /* read by the network thread's callback */
    c = NULL;
    mosquitto_lib_init();
    struct mosquitto *m = mosquitto_new("app-own", true, &c);
    mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_message_v5_callback_set(m, app_on_message);
    ASSERT_EQ(mosquitto_connect_bind_v5(m, "127.0.0.1", b.port, 60, NULL, NULL), MOSQ_ERR_SUCCESS);
    ASSERT_EQ(mosquitto_loop_start(m), MOSQ_ERR_SUCCESS);
    usleep(200 * 1000);
    ss_client *attached;
    ASSERT_EQ(ss_client_attach(m, "app-own", 3000, &attached), SS_OK);
    c = attached;
    ss_client_handle_connect(attached);
    ss_client_result r;
    ASSERT_EQ(ss_client_set(attached, "mine", 4, "yes", 3, NULL, &r), SS_OK);
    ASSERT_TRUE(r.applied);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_get(attached, "mine", 4, &r), SS_OK);
    ASSERT_STR(r.value, r.value_len, "yes");
    ss_client_result_free(&r);
    /* The application's other traffic is left alone. */
    ASSERT_TRUE(!ss_client_handle_message(attached, "app/topic", "x", 1, NULL));
    c = NULL;
    ss_client_close(attached); /* leaves the application's handle alone */
    ASSERT_EQ(mosquitto_publish_v5(m, NULL, "app/topic", 1, "x", 0, false, NULL), MOSQ_ERR_SUCCESS);
    mosquitto_disconnect(m);
    mosquitto_loop_stop(m, false);
    mosquitto_destroy(m);
    broker_stop(&b);
}

/* A fake server on a plain broker: it checks what the library sends, and
 * answers what a real server would not, to check the library's side. */
struct fake {
    struct client srv;
    ss_client *c;
    struct async_box box;
};

/* Start a GET, take the request, answer it with payload and status. */
static void fake_round_ts(struct fake *f, const char *payload, const char *stat, const char *ts)
{
    box_reset(&f->box);
    ASSERT_EQ(ss_client_get_async(f->c, "k", 1, async_cb, &f->box), SS_OK);
    struct msg *m = client_wait(&f->srv, 3000);
    ASSERT_TRUE(m != NULL);
    mosquitto_property *props = NULL;
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, m->corr, (uint16_t)m->corr_len);
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__stat", stat);
    if (ts)
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    char topic[256];
    snprintf(topic, sizeof topic, "%s", m->response_topic);
    ASSERT_EQ(client_publish(&f->srv, topic, payload, (int)strlen(payload), 1, false, props), 0);
    mosquitto_property_free_all(&props);
    for (int i = 0; i < 300 && box_done(&f->box) == 0; i++) {
        client_drain(&f->srv, 5);
    }
    ASSERT_EQ(box_done(&f->box), 1);
}

static void fake_round(struct fake *f, const char *payload, const char *stat)
{
    fake_round_ts(f, payload, stat, NULL);
}

static char fake_text[256];
static void text_cb(void *ud, const ss_client_result *r)
{
    struct async_box *a = ud;
    pthread_mutex_lock(&a->mu);
    snprintf(fake_text, sizeof fake_text, "%s", r->error_text ? r->error_text : "");
    a->status[a->done] = r->status;
    a->done++;
    pthread_mutex_unlock(&a->mu);
}

TEST(client_wire_format_and_error_mapping)
{
    struct broker b = {.no_plugin = true};
    broker_start(&b);
    struct fake f = {.box.mu = PTHREAD_MUTEX_INITIALIZER};
    client_connect(&f.srv, b.port, "fake-server", false);
    client_subscribe(&f.srv, REQ_TOPIC);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "wire", .timeout_ms = 4000};
    ASSERT_EQ(ss_client_connect(&o, &f.c), SS_OK);

    /* What goes on the wire, like the SDKs. */
    ASSERT_EQ(ss_client_set_async(f.c, "k", 1, "v", 1, NULL, async_cb, &f.box), SS_OK);
    struct msg *m = client_wait(&f.srv, 3000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n");
    ASSERT_EQ(m->qos, 1);
    ASSERT_STR(m->response_topic, strlen(m->response_topic),
               "clients/wire/services/statestore/_any_/command/invoke/response");
    ASSERT_EQ(m->corr_len, 16);
    ASSERT_STR(m->content_type, strlen(m->content_type), "application/octet-stream");
    ASSERT_EQ(m->format, 0);
    ASSERT_TRUE(m->expiry >= 3 && m->expiry <= 4); /* from the 4 s timeout */
    USER(m, "__srcId", "wire");
    USER(m, "__protVer", "1.0");
    const char *ts = msg_user(m, "__ts");
    ASSERT_TRUE(ts != NULL);
    ASSERT_TRUE(strstr(ts, ":wire") != NULL);
    ASSERT_TRUE(msg_user(m, "__ft") == NULL);
    /* Every request has fresh correlation data. */
    char first_corr[16];
    memcpy(first_corr, m->corr, 16);
    ASSERT_EQ(ss_client_del_async(f.c, "k", 1, "5:0:tok", async_cb, &f.box), SS_OK);
    m = client_wait(&f.srv, 3000);
    ASSERT_TRUE(m != NULL);
    ASSERT_TRUE(memcmp(m->corr, first_corr, 16) != 0);
    USER(m, "__ft", "5:0:tok");
    /* A token that is not a version is refused before anything is sent. */
    ASSERT_EQ(ss_client_del_async(f.c, "k", 1, "5:tok", async_cb, &f.box), SS_E_FT_MALFORMED);
    ASSERT_TRUE(client_wait(&f.srv, 200) == NULL);
    /* The client merges the __ts it receives: a later request carries a
     * stamp above the one the server sent. */
    char ahead[64];
    unsigned long long ahead_ms = (unsigned long long)now_ms() + 30000;
    snprintf(ahead, sizeof ahead, "%llu:5:server", ahead_ms);
    fake_round_ts(&f, "$1\r\nx\r\n", "200", ahead);
    ASSERT_EQ(f.box.status[0], SS_OK);
    static struct async_box unanswered = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ASSERT_EQ(ss_client_get_async(f.c, "k", 1, async_cb, &unanswered), SS_OK);
    m = client_wait(&f.srv, 3000);
    ASSERT_TRUE(m != NULL);
    unsigned long long wall = strtoull(msg_user(m, "__ts"), NULL, 10);
    ASSERT_EQ(wall, ahead_ms);
    ASSERT_TRUE(strncmp(strchr(msg_user(m, "__ts"), ':'), ":6:", 3) == 0);
    /* (that request stays unanswered: it times out on its own) */

    /* Error texts: known ones map to their code, unknown ones are kept. */
    box_reset(&f.box);
    ASSERT_EQ(ss_client_get_async(f.c, "k", 1, text_cb, &f.box), SS_OK);
    m = client_wait(&f.srv, 3000);
    mosquitto_property *props = NULL;
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, m->corr, (uint16_t)m->corr_len);
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__stat", "200");
    char topic[256];
    snprintf(topic, sizeof topic, "%s", m->response_topic);
    client_publish(&f.srv, topic, "-ERR something brand new\r\n", 26, 1, false, props);
    mosquitto_property_free_all(&props);
    for (int i = 0; i < 300 && box_done(&f.box) == 0; i++)
        client_drain(&f.srv, 5);
    ASSERT_EQ(f.box.status[0], SS_E_SERVER);
    ASSERT_STR(fake_text, strlen(fake_text), "something brand new");
    fake_round(&f, "-ERR the quota has been exceeded\r\n", "200");
    ASSERT_EQ(f.box.status[0], SS_E_QUOTA);
    /* A non-200 status, an unreadable answer, an answer of the wrong kind. */
    fake_round(&f, "whatever", "400");
    ASSERT_EQ(f.box.status[0], SS_E_STATUS);
    fake_round(&f, "garbage", "200");
    ASSERT_EQ(f.box.status[0], SS_E_PROTOCOL);
    fake_round(&f, ":1\r\n", "200");
    ASSERT_EQ(f.box.status[0], SS_E_PROTOCOL);
    ss_client_close(f.c);
    client_close(&f.srv);
    broker_stop(&b);
}

/* The example program of docs/CLIENT.md: the document shows exactly the
 * file that is compiled, and the program does what the document says. */
TEST(client_documented_example_runs)
{
    size_t doc_len, src_len;
    char *doc = slurp("docs/CLIENT.md", &doc_len);
    char *src = slurp("examples/client_example.c", &src_len);
    ASSERT_TRUE(src_len > 100);
    ASSERT_TRUE(strstr(doc, src) != NULL);
    free(doc);
    free(src);
    const char *exe = getenv("SS_EXAMPLE");
    ASSERT_TRUE(exe != NULL);
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    char *argv[] = {(char *)exe, "127.0.0.1", port, NULL};
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    /* Notifications arrive on the network thread: their lines may come
     * before or after the answers' lines. */
    static const char *lines[] = {"notified: greeting set\n", "set: applied\n", "get: hello\n",
                                  "increment: success\n", "del: 1\n", "notified: greeting deleted\n"};
    size_t total = 0;
    for (int i = 0; i < 6; i++) {
        if (strstr(r.out, lines[i]) == NULL)
            test_fail_mem(__FILE__, __LINE__, "example output", r.out, r.out_len, lines[i],
                          strlen(lines[i]));
        total += strlen(lines[i]);
    }
    ASSERT_EQ(r.out_len, total);
    ASSERT_TRUE(strstr(r.out, "set: applied\nget: hello\n") != NULL ||
                strstr(r.out, "set: applied\nnotified: greeting set\nget: hello\n") != NULL);
    run_free(&r);
    run_cmd(argv, NULL, 0, &r);
    run_free(&r);
    /* The counter went up once per run. */
    struct run g;
    char *gargv[] = {(char *)cli_path(), "-p", port, "get", "counter", NULL};
    run_cmd(gargv, NULL, 0, &g);
    ASSERT_STR(g.out, g.out_len, "2");
    run_free(&g);
    broker_stop(&b);
}
