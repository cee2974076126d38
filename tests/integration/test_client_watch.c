/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_watch.c - the client library's KEYNOTIFY registrations
 * across reconnects: what it registers again, and what it tells the
 * application when the broker refuses one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

#define ASSERT_TEXT(a, b) ASSERT_MEM((a), strlen(a), (b), strlen(b))

struct watch_log {
    pthread_mutex_t mu;
    char notes[1024];   /* "KEY=VALUE;" per SET notification */
    char refused[256];  /* "KEY:STATUS;" per failed re-registration */
    int gaps;
};

static void on_note(void *ud, const ss_notification *n)
{
    struct watch_log *l = ud;
    pthread_mutex_lock(&l->mu);
    size_t used = strlen(l->notes);
    if (!n->deleted)
        snprintf(l->notes + used, sizeof l->notes - used, "%.*s=%.*s;", (int)n->key_len,
                 (const char *)n->key, (int)n->value_len, (const char *)n->value);
    pthread_mutex_unlock(&l->mu);
}

static void on_gap(void *ud, bool connected, bool gap)
{
    struct watch_log *l = ud;
    pthread_mutex_lock(&l->mu);
    if (connected && gap)
        l->gaps++;
    pthread_mutex_unlock(&l->mu);
}

static void on_rewatch(void *ud, const void *key, size_t key_len, const ss_client_result *r)
{
    struct watch_log *l = ud;
    pthread_mutex_lock(&l->mu);
    size_t used = strlen(l->refused);
    snprintf(l->refused + used, sizeof l->refused - used, "%.*s:%s;", (int)key_len, (const char *)key,
             ss_errname(r->status));
    pthread_mutex_unlock(&l->mu);
}

static ss_client *connect_to(int port, const char *id)
{
    ss_client_options o = {.host = "127.0.0.1", .port = port, .client_id = id, .timeout_ms = 3000};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    return c;
}

/* A client that reconnects soon (50 ms), its notifications, connection
 * events and refused re-registrations written into l. */
static ss_client *watcher(int port, const char *id, struct watch_log *l)
{
    ss_client *w = connect_to(port, id);
    ss_client_set_reconnect_backoff(w, 50, 200);
    ss_client_set_notify_cb(w, on_note, l);
    ss_client_set_connection_cb(w, on_gap, l);
    ss_client_set_rewatch_cb(w, on_rewatch, l);
    return w;
}

/* Restart the broker on its port with extra (a limit, or none) and wait
 * until the watcher is back (its connection callback says so). */
static void restart_with(struct broker *b, struct watch_log *l, const char *extra)
{
    pthread_mutex_lock(&l->mu);
    int gaps = l->gaps;
    pthread_mutex_unlock(&l->mu);
    broker_stop(b);
    snprintf(b->extra, sizeof b->extra, "%s", extra);
    broker_start(b);
    bool back = false;
    for (int i = 0; i < 1000 && !back; i++) {
        pthread_mutex_lock(&l->mu);
        back = l->gaps > gaps;
        pthread_mutex_unlock(&l->mu);
        if (!back)
            usleep(10000);
    }
    ASSERT_TRUE(back);
}

/* SET each of keys to value (a fresh setter each time: the broker
 * restarted) until the last key's notification has come; notifications
 * of one connection keep their order, so every earlier key's has come by
 * then if it is watched. Returns the notifications seen. */
static void set_all(int port, struct watch_log *l, const char *const *keys, int n, const char *value,
                    char *out, size_t out_len)
{
    ss_client *s = connect_to(port, "watch-setter");
    char last[64];
    snprintf(last, sizeof last, "%s=%s;", keys[n - 1], value);
    bool got = false;
    for (int round = 0; round < 100 && !got; round++) {
        pthread_mutex_lock(&l->mu);
        l->notes[0] = '\0';
        pthread_mutex_unlock(&l->mu);
        for (int i = 0; i < n; i++)
            ASSERT_EQ(ss_client_set(s, keys[i], strlen(keys[i]), value, strlen(value), NULL, NULL), SS_OK);
        for (int i = 0; i < 50 && !got; i++) {
            pthread_mutex_lock(&l->mu);
            got = strstr(l->notes, last) != NULL;
            snprintf(out, out_len, "%s", l->notes);
            pthread_mutex_unlock(&l->mu);
            if (!got)
                usleep(10000);
        }
    }
    ss_client_close(s);
    ASSERT_TRUE(got);
}

/* A KEYNOTIFY the broker refused is not registered again by a reconnect;
 * one that a reconnect's registration finds refused is reported to the
 * application and forgotten, not left to look watched. */
TEST(client_rewatch_after_reconnect_reports_refusals)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_max_registrations_per_client 2\n");
    broker_start(&b);
    struct watch_log l = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client *w = watcher(b.port, "watch-watcher", &l);
    ASSERT_EQ(ss_client_keynotify(w, "wa", 2, false, NULL), SS_OK);
    ASSERT_EQ(ss_client_keynotify(w, "wb", 2, false, NULL), SS_OK);
    ss_client_result r;
    ASSERT_EQ(ss_client_keynotify(w, "wc", 2, false, &r), SS_E_QUOTA);
    ss_client_result_free(&r);

    /* Room for three after the restart: wa and wb come back, and wc,
     * refused before, does not (its SET comes first and is not heard). */
    restart_with(&b, &l, "plugin_opt_max_registrations_per_client 3\n");
    const char *abc[] = {"wc", "wa", "wb"};
    char notes[1024];
    set_all(b.port, &l, abc, 3, "1", notes, sizeof notes);
    ASSERT_TEXT(notes, "wa=1;wb=1;");
    pthread_mutex_lock(&l.mu);
    bool none_refused = l.refused[0] == '\0';
    pthread_mutex_unlock(&l.mu);
    ASSERT_TRUE(none_refused);

    /* Room for one: one of the two is refused, reported, and forgotten. */
    restart_with(&b, &l, "plugin_opt_max_registrations_per_client 1\n");
    bool told = false;
    for (int i = 0; i < 300 && !told; i++) {
        pthread_mutex_lock(&l.mu);
        told = l.refused[0] != '\0';
        pthread_mutex_unlock(&l.mu);
        if (!told)
            usleep(10000);
    }
    ASSERT_TRUE(told);
    pthread_mutex_lock(&l.mu);
    char refused[256];
    snprintf(refused, sizeof refused, "%s", l.refused);
    pthread_mutex_unlock(&l.mu);
    ASSERT_TRUE(strcmp(refused, "wa:QUOTA;") == 0 || strcmp(refused, "wb:QUOTA;") == 0);
    const char *kept = refused[1] == 'a' ? "wb" : "wa";

    /* No limit: only the key that stayed watched comes back. */
    restart_with(&b, &l, "");
    const char *forgotten_then_kept[] = {refused[1] == 'a' ? "wa" : "wb", kept};
    set_all(b.port, &l, forgotten_then_kept, 2, "2", notes, sizeof notes);
    char want[16];
    snprintf(want, sizeof want, "%s=2;", kept);
    ASSERT_TEXT(notes, want);
    pthread_mutex_lock(&l.mu);
    bool same = strcmp(l.refused, refused) == 0;
    pthread_mutex_unlock(&l.mu);
    ASSERT_TRUE(same);
    ss_client_close(w);
    broker_stop(&b);
}

/* A KEYNOTIFY the broker itself refused in its PUBACK (here larger than
 * its message_size_limit: SS_E_REFUSED) never ran: a reconnect does not
 * send it again, and nothing is told of it then. */
TEST(client_keynotify_refused_by_the_broker_not_registered_again)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "message_size_limit 1000\n");
    broker_start(&b);
    struct watch_log l = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client *w = watcher(b.port, "watch-big", &l);
    static char big[1500];
    memset(big, 'k', sizeof big);
    ss_client_result r;
    ASSERT_EQ(ss_client_keynotify(w, big, sizeof big, false, &r), SS_E_REFUSED);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_keynotify(w, "wa", 2, false, NULL), SS_OK);
    restart_with(&b, &l, "message_size_limit 1000\n");
    restart_with(&b, &l, "message_size_limit 1000\n");
    /* wa is back (its SET is told); the refused key was never sent. */
    const char *wa[] = {"wa"};
    char notes[1024];
    set_all(b.port, &l, wa, 1, "1", notes, sizeof notes);
    ASSERT_TEXT(notes, "wa=1;");
    pthread_mutex_lock(&l.mu);
    bool none = l.refused[0] == '\0';
    pthread_mutex_unlock(&l.mu);
    ASSERT_TRUE(none);
    ss_client_close(w);
    broker_stop(&b);
}
