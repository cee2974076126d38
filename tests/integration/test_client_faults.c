/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_faults.c - the C client library when things go wrong: the
 * connection drops under calls in flight, calls made where they cannot
 * work, arguments refused before sending. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

struct done_box {
    pthread_mutex_t mu;
    int calls;
    int status;
    uint64_t at;
};

static void done_cb(void *ud, const ss_client_result *r)
{
    struct done_box *d = ud;
    pthread_mutex_lock(&d->mu);
    d->calls++;
    d->status = r->status;
    d->at = now_ms();
    pthread_mutex_unlock(&d->mu);
}

static int done_calls(struct done_box *d)
{
    pthread_mutex_lock(&d->mu);
    int n = d->calls;
    pthread_mutex_unlock(&d->mu);
    return n;
}

struct blocked {
    ss_client *c;
    int rc;
    uint64_t at;
};

static void *blocked_get(void *arg)
{
    struct blocked *b = arg;
    b->rc = ss_client_get(b->c, "k", 1, NULL);
    b->at = now_ms();
    return NULL;
}

/* A broker without the plugin never answers; when it goes away, the
 * calls in flight (asynchronous and blocking) fail at once with
 * SS_E_CONNECTION instead of waiting for their 10 s timeout, and a call
 * made while disconnected fails the same way. */
TEST(client_calls_in_flight_fail_when_the_connection_drops)
{
    struct broker b = {.no_plugin = true};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "inflight",
                           .timeout_ms = 10000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    struct done_box d = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ASSERT_EQ(ss_client_get_async(c, "k", 1, done_cb, &d), SS_OK);
    struct blocked bl = {.c = c, .rc = 1};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, blocked_get, &bl), 0);
    usleep(200 * 1000); /* both sent, neither answered */
    ASSERT_EQ(done_calls(&d), 0);
    uint64_t cut = now_ms();
    broker_stop(&b);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(bl.rc, SS_E_CONNECTION);
    ASSERT_TRUE(bl.at - cut < 1000);
    for (int i = 0; i < 100 && done_calls(&d) == 0; i++)
        usleep(10000);
    ASSERT_EQ(done_calls(&d), 1);
    ASSERT_EQ(d.status, SS_E_CONNECTION);
    ASSERT_TRUE(d.at - cut < 1000);
    uint64_t t0 = now_ms();
    ASSERT_EQ(ss_client_get(c, "k", 1, NULL), SS_E_CONNECTION);
    ASSERT_TRUE(now_ms() - t0 < 100);
    ss_client_close(c);
    ASSERT_EQ(done_calls(&d), 1); /* once, not again at close */
}
