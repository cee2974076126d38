/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_lease.c - the lease keeper against a real broker: the token
 * it starts with, and when it reports the lease lost. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../client/lease.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

static ss_client *lease_connect(int port, const char *id, unsigned timeout_ms)
{
    ss_client_options o = {.host = "127.0.0.1", .port = port, .client_id = id, .timeout_ms = timeout_ms};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    return c;
}

/* A new keeper already holds a fencing token that fences writes: the one
 * of a renewal made before ss_lease_keep returned, above the token of
 * the acquisition. */
TEST(client_lease_keeper_starts_with_a_token)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *c = lease_connect(b.port, "keeper-token", 3000);
    bool got = false;
    char acquired[SS_LEASE_TOKEN_MAX], kept[SS_LEASE_TOKEN_MAX];
    ASSERT_EQ(ss_lease_acquire(c, "leader", "me", 30000, &got, acquired), SS_OK);
    ASSERT_TRUE(got);
    ss_lease_keeper *k;
    ASSERT_EQ(ss_lease_keep(c, "leader", "me", 30000, &k), SS_OK);
    ss_lease_keeper_token(k, kept);
    ASSERT_TRUE(kept[0] != '\0');
    ASSERT_TRUE(strcmp(kept, acquired) > 0);
    ASSERT_TRUE(!ss_lease_keeper_lost(k));
    ss_set_options fenced = {.fencing_token = kept};
    ss_client_result r;
    ASSERT_EQ(ss_client_set(c, "work", 4, "1", 1, &fenced, &r), SS_OK);
    ASSERT_TRUE(r.applied);
    ss_client_result_free(&r);
    ss_lease_keeper_stop(k);
    ss_client_close(c);
    broker_stop(&b);
}

struct lost_seen {
    pthread_mutex_t mu;
    int calls;
    uint64_t at;
};

static void on_lost(void *ud)
{
    struct lost_seen *s = ud;
    pthread_mutex_lock(&s->mu);
    s->calls++;
    s->at = now_ms();
    pthread_mutex_unlock(&s->mu);
}

static int lost_calls(struct lost_seen *s, uint64_t *at)
{
    pthread_mutex_lock(&s->mu);
    int n = s->calls;
    if (at)
        *at = s->at;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Wait up to ms for the keeper to say lost; returns when it did (0: not). */
static uint64_t wait_lost(ss_lease_keeper *k, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    while (now_ms() < end) {
        if (ss_lease_keeper_lost(k))
            return now_ms();
        usleep(10000);
    }
    return 0;
}

/* The lease is lost, from the holder's side, once its last renewal plus
 * the lease time has passed, connected or not: with the broker gone
 * (SIGTERM) and with the broker hung (SIGSTOP, the connection open and
 * every renewal unanswered for longer than the lease). Never earlier
 * than two thirds of the lease after the last answer; once lost, it stays
 * lost when the broker is back, and the callback ran once. */
TEST(client_lease_keeper_lost_while_disconnected)
{
    enum { TTL = 1500 };
    struct broker b = {0};
    broker_start(&b);
    for (int hung = 0; hung < 2; hung++) {
        /* The client's timeout is longer than the lease: a renewal that
         * waits for its answer must not hide the lease's end. */
        ss_client *c = lease_connect(b.port, hung ? "keeper-hung" : "keeper-gone", 5000);
        bool got = false;
        ASSERT_EQ(ss_lease_acquire(c, hung ? "lh" : "lg", "me", TTL, &got, NULL), SS_OK);
        ASSERT_TRUE(got);
        struct lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
        ss_lease_keeper *k;
        ASSERT_EQ(ss_lease_keep_notify(c, hung ? "lh" : "lg", "me", TTL, on_lost, &seen, &k), SS_OK);
        usleep(2 * TTL * 1000); /* renewed throughout */
        ASSERT_TRUE(!ss_lease_keeper_lost(k));
        ASSERT_EQ(lost_calls(&seen, NULL), 0);
        uint64_t cut = now_ms();
        if (hung)
            ASSERT_EQ(kill(b.pid, SIGSTOP), 0);
        else
            broker_stop(&b);
        uint64_t lost_at = wait_lost(k, 3 * TTL);
        ASSERT_TRUE(lost_at != 0);
        fprintf(stderr, "  %s: lost %llu ms after the cut\n", hung ? "hung" : "gone",
                (unsigned long long)(lost_at - cut));
        ASSERT_TRUE(lost_at - cut <= TTL + 200);
        ASSERT_TRUE(lost_at - cut + 100 >= TTL * 2 / 3);
        uint64_t cb_at = 0;
        for (int i = 0; i < 100 && lost_calls(&seen, &cb_at) == 0; i++)
            usleep(10000);
        ASSERT_EQ(lost_calls(&seen, &cb_at), 1);
        ASSERT_TRUE(cb_at - cut <= TTL + 300);
        if (hung)
            ASSERT_EQ(kill(b.pid, SIGCONT), 0);
        else
            broker_start(&b);
        usleep(1500 * 1000); /* reconnected by now */
        ASSERT_TRUE(ss_lease_keeper_lost(k));
        ASSERT_EQ(lost_calls(&seen, NULL), 1);
        ss_lease_keeper_stop(k);
        ss_client_close(c);
    }
    broker_stop(&b);
}

/* A keeper of a lease held by someone else is lost from the start, and
 * says so through the callback too. */
TEST(client_lease_keeper_of_a_lease_not_held)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *c = lease_connect(b.port, "keeper-other", 3000);
    bool got = false;
    ASSERT_EQ(ss_lease_acquire(c, "taken", "someone", 30000, &got, NULL), SS_OK);
    ASSERT_TRUE(got);
    struct lost_seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_lease_keeper *k;
    ASSERT_EQ(ss_lease_keep_notify(c, "taken", "me", 30000, on_lost, &seen, &k), SS_OK);
    ASSERT_TRUE(ss_lease_keeper_lost(k));
    char token[SS_LEASE_TOKEN_MAX];
    ss_lease_keeper_token(k, token);
    ASSERT_EQ(token[0], '\0');
    for (int i = 0; i < 100 && lost_calls(&seen, NULL) == 0; i++)
        usleep(10000);
    ASSERT_EQ(lost_calls(&seen, NULL), 1);
    ss_lease_keeper_stop(k);
    ss_client_close(c);
    broker_stop(&b);
}
