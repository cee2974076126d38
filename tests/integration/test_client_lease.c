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
