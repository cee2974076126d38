/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_helpers.c - the library's lease and leader helpers at the
 * edges of their client: a resignation from the client's own callback,
 * a client closed under a keeper, a participant and a lease wait, and a
 * lock waiter on a client that also watches busy keys. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../client/leader.h"
#include "../../client/lease.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

static ss_client *helper_connect(int port, const char *id, ss_log_cb log_cb, void *log_ud)
{
    ss_client_options o = {.host = "127.0.0.1", .port = port, .client_id = id, .timeout_ms = 5000,
                           .log_cb = log_cb, .log_ud = log_ud};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    return c;
}

static bool wait_leading(ss_leader *l, bool want, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        ss_leader_state s;
        ss_leader_get(l, &s);
        if (s.leading == want)
            return true;
        usleep(10 * 1000);
    }
    return false;
}

struct resign_try {
    pthread_mutex_t mu;
    ss_leader *l;
    int rc;
    bool done;
};

static void resign_from_callback(void *ud, const ss_client_result *r)
{
    (void)r;
    struct resign_try *t = ud;
    int rc = ss_leader_resign(t->l);
    pthread_mutex_lock(&t->mu);
    t->rc = rc;
    t->done = true;
    pthread_mutex_unlock(&t->mu);
}

/* ss_leader_resign on the client's callback thread could not be
 * answered (its participant's calls and the release go through that
 * thread): refused at once, the participant going on, both when it
 * follows and when it leads. It hung the client's thread for good. */
TEST(client_leader_resign_from_a_callback_is_refused)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *c1 = helper_connect(b.port, "lead-a", NULL, NULL);
    ss_client *c2 = helper_connect(b.port, "lead-b", NULL, NULL);
    ss_leader_options lo = {.role = "cb-role", .lease_ms = 1500};
    ss_leader *l1, *l2;
    ASSERT_EQ(ss_leader_campaign(c1, &lo, &l1), SS_OK);
    ASSERT_TRUE(wait_leading(l1, true, 3000));
    ASSERT_EQ(ss_leader_campaign(c2, &lo, &l2), SS_OK);
    for (int round = 0; round < 2; round++) {
        /* Round 0: l2 follows; round 1: it leads. */
        struct resign_try t = {.mu = PTHREAD_MUTEX_INITIALIZER, .l = l2, .rc = 1};
        ASSERT_EQ(ss_client_get_async(c2, "x", 1, resign_from_callback, &t), SS_OK);
        bool done = false;
        for (int i = 0; i < 300 && !done; i++) {
            usleep(10 * 1000);
            pthread_mutex_lock(&t.mu);
            done = t.done;
            pthread_mutex_unlock(&t.mu);
        }
        ASSERT_TRUE(done);
        ASSERT_EQ(t.rc, SS_E_IN_CALLBACK);
        /* The client's thread is free: calls are answered. */
        ss_client_result r;
        ASSERT_EQ(ss_client_get(c2, "x", 1, &r), SS_OK);
        ss_client_result_free(&r);
        if (round == 0) {
            ASSERT_EQ(ss_leader_resign(l1), SS_OK);
            ASSERT_TRUE(wait_leading(l2, true, 3000));
        }
    }
    /* Still leading, renewing through the round's lease time. */
    usleep(1600 * 1000);
    ASSERT_TRUE(wait_leading(l2, true, 10));
    ASSERT_EQ(ss_leader_resign(l2), SS_OK);
    ss_client_close(c1);
    ss_client_close(c2);
    broker_stop(&b);
}

struct lost_flag {
    pthread_mutex_t mu;
    int calls;
};

static void on_lost(void *ud)
{
    struct lost_flag *f = ud;
    pthread_mutex_lock(&f->mu);
    f->calls++;
    pthread_mutex_unlock(&f->mu);
}

struct waiter {
    ss_client *c;
    int rc;
    uint64_t returned_ms;
};

static void *lease_wait_main(void *arg)
{
    struct waiter *w = arg;
    char token[SS_LEASE_TOKEN_MAX];
    w->rc = ss_lease_acquire_wait(w->c, "busy", "waiter", 5000, 20000, token);
    w->returned_ms = now_ms();
    return NULL;
}

/* The client closed while a keeper, a participant and a lease wait still
 * use it: the wait returns SS_E_CONNECTION at once, the keeper finds its
 * lease lost at its next renewal (its callback runs), the participant
 * stops leading, and stopping them afterwards frees the client (they used
 * its memory after the close freed it: the sanitizers and valgrind runs
 * of this test see that). */
TEST(client_closed_under_its_keeper_participant_and_lease_wait)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *other = helper_connect(b.port, "holder", NULL, NULL);
    bool got = false;
    ASSERT_EQ(ss_lease_acquire(other, "busy", "holder", 30000, &got, NULL), SS_OK);
    ASSERT_TRUE(got);
    ss_client *c = helper_connect(b.port, "closed-early", NULL, NULL);
    ASSERT_EQ(ss_lease_acquire(c, "mine", "me", 3000, &got, NULL), SS_OK);
    ASSERT_TRUE(got);
    struct lost_flag f = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_lease_keeper *k;
    ASSERT_EQ(ss_lease_keep_notify(c, "mine", "me", 3000, on_lost, &f, &k), SS_OK);
    ss_leader_options lo = {.role = "closed-role", .lease_ms = 3000};
    ss_leader *l;
    ASSERT_EQ(ss_leader_campaign(c, &lo, &l), SS_OK);
    ASSERT_TRUE(wait_leading(l, true, 3000));
    struct waiter w = {.c = c, .rc = 1};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, lease_wait_main, &w), 0);
    usleep(300 * 1000); /* the wait is under way */
    uint64_t closed_at = now_ms();
    ss_client_close(c);
    pthread_join(t, NULL);
    ASSERT_EQ(w.rc, SS_E_CONNECTION);
    ASSERT_TRUE(w.returned_ms - closed_at < 1000);
    /* The keeper's next renewal is at most ttl / 3 away. */
    bool lost = false;
    for (int i = 0; i < 200 && !lost; i++) {
        usleep(10 * 1000);
        pthread_mutex_lock(&f.mu);
        lost = f.calls == 1;
        pthread_mutex_unlock(&f.mu);
    }
    ASSERT_TRUE(lost);
    ASSERT_TRUE(ss_lease_keeper_lost(k));
    ASSERT_TRUE(wait_leading(l, false, 2000));
    ss_lease_keeper_stop(k);
    ASSERT_EQ(ss_leader_resign(l), SS_OK);
    ss_client_close(other);
    broker_stop(&b);
}

struct publishes {
    pthread_mutex_t mu;
    int n;
};

static void count_publishes(void *ud, int level, const char *line)
{
    (void)level;
    struct publishes *p = ud;
    if (strstr(line, "sending PUBLISH") != NULL) {
        pthread_mutex_lock(&p->mu);
        p->n++;
        pthread_mutex_unlock(&p->mu);
    }
}

struct x_writes {
    ss_client *c;
    int done;
};

static void *write_x_main(void *arg)
{
    struct x_writes *x = arg;
    for (int i = 0; i < 100; i++) {
        ss_client_result r;
        if (ss_client_set(x->c, "X", 1, "v", 1, NULL, &r) == SS_OK)
            x->done++;
        ss_client_result_free(&r);
        usleep(10 * 1000);
    }
    return NULL;
}

/* A lock waiter tries again when the lock's key changes (or the client
 * reconnects), not on every notification its client gets: with the
 * client also watching a key written every 10 ms, the wait sent a
 * request per write. */
TEST(client_lock_waiter_ignores_other_keys_notifications)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *h = helper_connect(b.port, "lock-holder", NULL, NULL);
    bool got = false;
    ASSERT_EQ(ss_lease_acquire(h, "L", "holder", 30000, &got, NULL), SS_OK);
    ASSERT_TRUE(got);
    struct publishes p = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client *w = helper_connect(b.port, "lock-waiter", count_publishes, &p);
    ASSERT_EQ(ss_client_keynotify(w, "X", 1, false, NULL), SS_OK);
    pthread_mutex_lock(&p.mu);
    p.n = 0;
    pthread_mutex_unlock(&p.mu);
    struct x_writes x = {.c = helper_connect(b.port, "x-writer", NULL, NULL)};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, write_x_main, &x), 0);
    char token[SS_LEASE_TOKEN_MAX];
    ASSERT_EQ(ss_lease_acquire_wait(w, "L", "waiter", 30000, 1500, token), SS_E_TIMEOUT);
    pthread_join(t, NULL);
    ASSERT_TRUE(x.done > 50);
    ASSERT_TRUE(ss_client_notification_count(w) > 50);
    /* Its first try, KEYNOTIFY on L, a try once watching (the lock may
     * have gone in between), the STOP: four requests. */
    pthread_mutex_lock(&p.mu);
    int sent = p.n;
    pthread_mutex_unlock(&p.mu);
    printf("  the waiter sent %d requests while %d writes of X were notified to its client\n", sent, x.done);
    ASSERT_EQ(sent, 4);
    ss_client_close(x.c);
    ss_client_close(w);
    ss_client_close(h);
    broker_stop(&b);
}
