/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_ev.c - the libev adapter (client/client_ev.h): an
 * event-loop client driven by ev_run alone. */
#include <ev.h>
#include <stdio.h>
#include <string.h>

#include "../../client/client.h"
#include "../../client/client_ev.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

struct ev_app {
    struct ev_loop *loop;
    ss_client *c;
    int sent, done, failed, total;
    bool connected;
};

static void ev_app_next(struct ev_app *a);

static void ev_app_done(void *ud, const ss_client_result *r)
{
    struct ev_app *a = ud;
    a->done++;
    if (r->status != SS_OK || !r->applied)
        a->failed++;
    if (a->done == a->total)
        ev_break(a->loop, EVBREAK_ALL);
    else
        ev_app_next(a);
}

/* Ten calls in flight; the next ones start from the completions. */
static void ev_app_next(struct ev_app *a)
{
    while (a->sent < a->total && a->sent - a->done < 10) {
        char key[32];
        int n = snprintf(key, sizeof key, "ev%d", a->sent);
        ASSERT_EQ(ss_client_set_async(a->c, key, (size_t)n, "v", 1, NULL, ev_app_done, a), SS_OK);
        a->sent++;
    }
}

static void ev_app_connected(void *ud, bool connected, bool gap)
{
    struct ev_app *a = ud;
    (void)gap;
    if (connected && !a->connected) {
        a->connected = true;
        ev_app_next(a);
    }
}

static void ev_app_guard(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)w;
    (void)revents;
    ev_break(loop, EVBREAK_ALL);
}

/* Started before its broker, a client attached to a libev loop connects
 * when the broker comes (its retries run from the adapter's timer) and
 * completes 1,000 SETs with nothing but ev_run driving it. */
TEST(client_libev_adapter_drives_calls)
{
    struct broker b = {0};
    b.port = free_port();
    struct ev_app a = {.loop = ev_loop_new(EVFLAG_AUTO), .total = 1000};
    ASSERT_TRUE(a.loop != NULL);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "libev", .timeout_ms = 10000};
    ASSERT_EQ(ss_client_connect_start(&o, &a.c), SS_OK);
    ss_client_set_reconnect_backoff(a.c, 50, 200);
    ss_client_set_connection_cb(a.c, ev_app_connected, &a);
    ss_client_ev adapter;
    ss_client_ev_attach(&adapter, a.loop, a.c);
    ev_timer guard;
    ev_timer_init(&guard, ev_app_guard, 0.5, 0.);
    ev_timer_start(a.loop, &guard);
    ev_run(a.loop, 0); /* half a second of failed attempts */
    ASSERT_TRUE(!a.connected);
    broker_start(&b);
    ev_timer_set(&guard, 30., 0.);
    ev_timer_start(a.loop, &guard);
    ev_run(a.loop, 0);
    ev_timer_stop(a.loop, &guard);
    ASSERT_TRUE(a.connected);
    ASSERT_EQ(a.done, 1000);
    ASSERT_EQ(a.failed, 0);
    ss_client_ev_detach(&adapter);
    ss_client_close(a.c);
    ev_loop_destroy(a.loop);
    broker_stop(&b);
}
