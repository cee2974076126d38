/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_fence.c - a commit whose answer was lost is settled by a
 * fence on the broker's commit marker (etcd/backend_etcd_commit.c); here
 * the fence's own answer is lost too, and the fence sent again must
 * recognise the first one's work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "cluster_util.h"
#include "harness.h"

/* Broker B reaches etcd through a proxy, its calls timing out after 1 s.
 * B's SET of k runs on a cached revision that A's SET has just replaced,
 * so its commit fails on its compare; from that commit on, everything
 * etcd sends B is dropped for 2.7 s: the commit's answer and then the
 * first fence's (which applies, as the commit did not). The fence sent
 * again finds the marker holding the first fence's text. That proves the
 * commit did not happen: B runs the SET again and answers +OK, where it
 * answered "unavailable" and logged that another broker shared its node
 * id. */
TEST(cluster_fence_answer_lost_then_sent_again)
{
    struct proxied_brokers t;
    proxied_brokers_up(&t, "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_solo_ms 0\n"
                           "plugin_opt_etcd_unavailable_ms 20000\n");
    struct delay_proxy *px = t.px;
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, t.a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cb, t.b.port, "cb", rb, sizeof rb);
    ASSERT_REPLY(request(&ca, ra, "0", NULL, NULL, W("SET", "k", "v0")), "+OK\r\n");
    ASSERT_REPLY(request(&cb, rb, "0", NULL, NULL, W("GET", "k")), "$2\r\nv0\r\n"); /* cached on B */
    delay_proxy_set(px, 300, 0); /* B's watch hears of A's SET 300 ms late */
    usleep(400 * 1000);
    ASSERT_REPLY(request(&ca, ra, "1", NULL, NULL, W("SET", "k", "va")), "+OK\r\n");
    delay_proxy_mute_after(px, NULL, "needle-vb", "");
    request_send(&cb, rb, "1", NULL, NULL, W("SET", "k", "needle-vb"));
    usleep(2700 * 1000);
    delay_proxy_mute_after(px, NULL, NULL, NULL);
    delay_proxy_set(px, 0, 0);
    ASSERT_REPLY(client_wait(&cb, 15000), "+OK\r\n");
    ASSERT_TRUE(broker_log_has(&t.b, "an earlier fence of it took effect"));
    ASSERT_TRUE(!broker_log_has(&t.b, "changed by another process"));
    char *v = get_value(&ca, ra, "k");
    ASSERT_TRUE(v != NULL);
    ASSERT_STR(v, strlen(v), "needle-vb");
    free(v);
    client_close(&ca);
    client_close(&cb);
    proxied_brokers_down(&t);
}
