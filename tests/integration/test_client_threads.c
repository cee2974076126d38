/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_threads.c - the C client library used from several threads
 * at once, and a client id it cannot work with. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

/* A filter that topic protection refuses (another client's answers). */
#define REFUSED_FILTER "clients/statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/#"

struct subscriber {
    ss_client *c;
    bool refused; /* subscribe to REFUSED_FILTER, or to app/ filters */
    int rounds;
    int right, wrong;
};

static void *subscribe_rounds(void *arg)
{
    struct subscriber *s = arg;
    for (int i = 0; i < s->rounds; i++) {
        char filter[64];
        snprintf(filter, sizeof filter, "app/good/%d", i);
        int rc = ss_client_subscribe(s->c, s->refused ? REFUSED_FILTER : filter, 0);
        if (rc == (s->refused ? SS_E_STATUS : SS_OK))
            s->right++;
        else
            s->wrong++;
    }
    return NULL;
}

/* Two threads subscribe on one client at the same time, one to filters
 * the broker grants, the other to one it refuses: each is told its own
 * SUBACK. (The pending subscription had one place, and each caller took
 * the other's answer about half the time.) */
TEST(client_subscribes_from_two_threads_get_their_own_answers)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "twothreads", .timeout_ms = 5000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    ASSERT_EQ(ss_client_subscribe(c, REFUSED_FILTER, 0), SS_E_STATUS);
    enum { ROUNDS = 100 };
    struct subscriber good = {.c = c, .refused = false, .rounds = ROUNDS};
    struct subscriber bad = {.c = c, .refused = true, .rounds = ROUNDS};
    pthread_t tg, tb;
    ASSERT_EQ(pthread_create(&tg, NULL, subscribe_rounds, &good), 0);
    ASSERT_EQ(pthread_create(&tb, NULL, subscribe_rounds, &bad), 0);
    pthread_join(tg, NULL);
    pthread_join(tb, NULL);
    printf("  %d subscriptions from each of two threads: granted as granted %d, refused as refused %d\n", ROUNDS,
           good.right, bad.right);
    ASSERT_EQ(good.wrong, 0);
    ASSERT_EQ(bad.wrong, 0);
    ss_client_close(c);
    broker_stop(&b);
}

/* The client id is a level of the response topic the client subscribes
 * to: one with a wildcard is refused at once, where the client waited
 * for a SUBACK that never came and blamed the broker. */
TEST(client_id_with_a_wildcard_refused)
{
    struct broker b = {0};
    broker_start(&b);
    const char *ids[] = {"dev+1", "dev#1"};
    for (size_t i = 0; i < 2; i++) {
        ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = ids[i], .timeout_ms = 2000};
        ss_client *c = NULL;
        char why[200] = "";
        uint64_t t0 = now_ms();
        ASSERT_EQ(ss_client_connect_explain(&o, &c, why, sizeof why), SS_E_INVAL);
        ASSERT_TRUE(now_ms() - t0 < 1000);
        ASSERT_TRUE(strstr(why, "'+' or '#'") != NULL);
    }
    ss_client_options ok = {.host = "127.0.0.1", .port = b.port, .client_id = "dev-1", .timeout_ms = 2000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&ok, &c), SS_OK);
    ss_client_close(c);
    broker_stop(&b);
}
