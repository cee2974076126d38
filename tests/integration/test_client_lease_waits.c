/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_lease_waits.c - ss_lease_acquire_wait notices a release promptly:
 * with two waiters on one client, and with a release made while the
 * waiter's connection was down (its notification missed). */
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../client/lease.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

static ss_client *lr_connect(int port, const char *id)
{
    ss_client_options o = {.host = "127.0.0.1", .port = port, .client_id = id, .timeout_ms = 3000};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    return c;
}

struct lr_waiter {
    ss_client *c;
    const char *holder;
    int rc;
    _Atomic uint64_t at; /* when it returned (read while it runs) */
    pthread_t t;
};

static void *lr_wait(void *arg)
{
    struct lr_waiter *w = arg;
    char token[SS_LEASE_TOKEN_MAX];
    w->rc = ss_lease_acquire_wait(w->c, "L", w->holder, 20000, 30000, token);
    w->at = now_ms();
    return NULL;
}

/* Two threads of one process wait for the same lock on one client (the
 * client may be used from any thread). The first to acquire it ends the
 * KEYNOTIFY they share; when it releases, the second must still notice at
 * once rather than after its poll of a whole ttl. */
TEST(client_lease_two_waiters_share_a_client)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *h = lr_connect(b.port, "holder");
    ss_client *c = lr_connect(b.port, "shared");
    bool got = false;
    ASSERT_EQ(ss_lease_acquire(h, "L", "h", 20000, &got, NULL), SS_OK);
    ASSERT_TRUE(got);
    struct lr_waiter w1 = {.c = c, .holder = "w1"}, w2 = {.c = c, .holder = "w2"};
    pthread_create(&w1.t, NULL, lr_wait, &w1);
    pthread_create(&w2.t, NULL, lr_wait, &w2);
    usleep(500 * 1000);
    bool released = false;
    ASSERT_EQ(ss_lease_release(h, "L", "h", &released), SS_OK);
    ASSERT_TRUE(released);
    /* One of them has it now. */
    struct lr_waiter *first = NULL, *second = NULL;
    for (int i = 0; i < 300 && first == NULL; i++) {
        if (w1.at)
            first = &w1, second = &w2;
        else if (w2.at)
            first = &w2, second = &w1;
        else
            usleep(10000);
    }
    ASSERT_TRUE(first != NULL);
    pthread_join(first->t, NULL);
    ASSERT_EQ(first->rc, SS_OK);
    usleep(300 * 1000);
    uint64_t t0 = now_ms();
    ASSERT_EQ(ss_lease_release(c, "L", first->holder, &released), SS_OK);
    ASSERT_TRUE(released);
    pthread_join(second->t, NULL);
    fprintf(stderr, "  second waiter: rc %d, %llu ms after the release\n", second->rc,
            (unsigned long long)(second->at - t0));
    ASSERT_EQ(second->rc, SS_OK);
    ASSERT_TRUE(second->at - t0 < 2000);
    ss_client_close(c);
    ss_client_close(h);
    broker_stop(&b);
}

/* The broker restarts while a waiter waits; the holder releases before
 * the waiter's client is back (its reconnection backs off 1 s), so the
 * DELETE notification goes to nobody. The waiter must look again once it
 * is reconnected (the client reports a gap), not a whole ttl later. */
TEST(client_lease_release_missed_during_a_reconnect)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *w = lr_connect(b.port, "waiter");
    ss_client *h = lr_connect(b.port, "holder");
    bool got = false;
    ASSERT_EQ(ss_lease_acquire(h, "L", "h", 20000, &got, NULL), SS_OK);
    ASSERT_TRUE(got);
    ss_client_close(h);
    struct lr_waiter w1 = {.c = w, .holder = "w"};
    pthread_create(&w1.t, NULL, lr_wait, &w1);
    usleep(500 * 1000);
    broker_stop(&b);
    broker_start(&b);
    /* A fresh client (no backoff) releases at once. */
    h = lr_connect(b.port, "holder2");
    bool released = false;
    ASSERT_EQ(ss_lease_release(h, "L", "h", &released), SS_OK);
    ASSERT_TRUE(released);
    uint64_t t0 = now_ms();
    pthread_join(w1.t, NULL);
    fprintf(stderr, "  waiter: rc %d, %llu ms after the release\n", w1.rc, (unsigned long long)(w1.at - t0));
    ASSERT_EQ(w1.rc, SS_OK);
    ASSERT_TRUE(w1.at - t0 < 4000);
    ss_client_close(h);
    ss_client_close(w);
    broker_stop(&b);
}

/* A keeper goes on through a broker restart (stop, and kill -9) that is
 * shorter than its lease: not lost, its token grows, nobody else takes
 * the lease meanwhile. (On etcd a broker restarted after kill -9 first
 * waits for its old claim on the node id to lapse, 3 s: the lease is
 * 12 s.) */
TEST(client_lease_keeper_through_broker_restart)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *c = lr_connect(b.port, "keeper");
    ss_client *o = lr_connect(b.port, "other");
    bool got = false;
    char t0[SS_LEASE_TOKEN_MAX], t1[SS_LEASE_TOKEN_MAX];
    ASSERT_EQ(ss_lease_acquire(c, "K", "me", 12000, &got, t0), SS_OK);
    ASSERT_TRUE(got);
    ss_lease_keeper *k;
    ASSERT_EQ(ss_lease_keep(c, "K", "me", 12000, &k), SS_OK);
    for (int round = 0; round < 2; round++) {
        ss_lease_keeper_token(k, t0);
        if (round)
            broker_kill9(&b);
        else
            broker_stop(&b);
        broker_start(&b);
        /* Renewed after the restart (every 4 s): its token grows. */
        for (int i = 0; i < 100; i++) {
            ss_lease_keeper_token(k, t1);
            if (strcmp(t1, t0) > 0)
                break;
            usleep(100 * 1000);
        }
        ASSERT_TRUE(!ss_lease_keeper_lost(k));
        fprintf(stderr, "  round %d: %s -> %s\n", round, t0, t1);
        ASSERT_TRUE(strcmp(t1, t0) > 0);
        got = true;
        ASSERT_EQ(ss_lease_acquire(o, "K", "other", 12000, &got, NULL), SS_OK);
        ASSERT_TRUE(!got);
        ss_set_options fenced = {.fencing_token = t1};
        ss_client_result r;
        ASSERT_EQ(ss_client_set(c, "res", 3, "v", 1, &fenced, &r), SS_OK);
        ss_client_result_free(&r);
        ss_set_options old = {.fencing_token = t0};
        ASSERT_EQ(ss_client_set(o, "res", 3, "x", 1, &old, &r), SS_E_FT_LOWER);
        ss_client_result_free(&r);
    }
    ss_lease_keeper_stop(k);
    ss_client_close(o);
    ss_client_close(c);
    broker_stop(&b);
}

/* Two `statestore lock` invocations given one client id (--id names the
 * principal of authorization rules, so scripts share it): the second
 * waits for the first. (The holder was the client id: NEX accepted the
 * equal value and both ran COMMAND at once.) */
TEST(cli_lock_with_one_client_id_excludes)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16], log[600], script[1400], out1[700], out2[700];
    snprintf(port, sizeof port, "%d", b.port);
    snprintf(log, sizeof log, "%s/order", test_tmpdir());
    snprintf(out1, sizeof out1, "%s/1.out", test_tmpdir());
    snprintf(out2, sizeof out2, "%s/2.out", test_tmpdir());
    snprintf(script, sizeof script, "echo s >> %s; sleep 1; echo e >> %s", log, log);
    char *argv[] = {(char *)cli_path(), "-p", port, "-i", "deployer", "lock", "L", "--ttl", "3000", "--",
                    "sh", "-c", script, NULL};
    pid_t p1 = spawn_cmd(argv, out1, out1);
    usleep(300 * 1000);
    pid_t p2 = spawn_cmd(argv, out2, out2);
    int s1, s2;
    ASSERT_EQ(waitpid(p1, &s1, 0), p1);
    ASSERT_EQ(waitpid(p2, &s2, 0), p2);
    char *order = slurp(log, NULL);
    fprintf(stderr, "  order: %s", order);
    ASSERT_TRUE(strcmp(order, "s\ne\ns\ne\n") == 0);
    free(order);
    broker_stop(&b);
}

#include "../../client/leader.h"

/* A participant whose acquisition ran on the server but whose answer
 * came too late (the broker hung past the client's timeout): the role
 * holds its own holder id. It should lead (or release the role), not
 * follow itself for a whole lease while nobody leads. */
TEST(client_leader_acquisition_answer_lost)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *o = lr_connect(b.port, "other");
    ss_client_options co = {.host = "127.0.0.1", .port = b.port, .client_id = "part", .timeout_ms = 400};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&co, &c), SS_OK);
    bool got = false;
    ASSERT_EQ(ss_lease_acquire(o, "R", "someone", 1500, &got, NULL), SS_OK);
    ASSERT_TRUE(got);
    ss_leader_options lo = {.role = "R", .holder = "me", .lease_ms = 6000};
    ss_leader *l;
    ASSERT_EQ(ss_leader_campaign(c, &lo, &l), SS_OK);
    usleep(1000 * 1000);
    kill(b.pid, SIGSTOP); /* before R expires; the participant tries every 2 s */
    usleep(3000 * 1000);
    kill(b.pid, SIGCONT);
    uint64_t t0 = now_ms();
    ss_leader_state s;
    bool led = false;
    while (now_ms() - t0 < 4000 && !led) {
        ss_leader_get(l, &s);
        led = s.leading;
        usleep(20 * 1000);
    }
    ss_leader_get(l, &s);
    ss_client_result r;
    ASSERT_EQ(ss_lease_holder(o, "R", &r), SS_OK);
    fprintf(stderr, "  role holds \"%.*s\"; participant: leading %d, leader \"%s\" (%llu ms after the thaw)\n",
            (int)r.value_len, (const char *)r.value, s.leading, s.leader, (unsigned long long)(now_ms() - t0));
    ss_client_result_free(&r);
    ASSERT_TRUE(led);
    ss_leader_resign(l);
    ss_client_close(c);
    ss_client_close(o);
    broker_stop(&b);
}
