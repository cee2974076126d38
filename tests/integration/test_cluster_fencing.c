/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_fencing.c - two brokers on one etcd: a holder whose lease
 * expired (or was released) through broker A, with a clock stamp ahead,
 * can no longer write with its token once a holder through broker B has. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../core/hlc.h"
#include "../test.h"
#include "cluster_util.h"
#include "etcd_cluster.h"
#include "harness.h"

static unsigned long long wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (unsigned long long)t.tv_sec * 1000ull + (unsigned long long)t.tv_nsec / 1000000ull;
}

static int hlc_cmp(const char *a, const char *b)
{
    ss_hlc ha, hb;
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)a, strlen(a), &ha), 0);
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)b, strlen(b), &hb), 0);
    return ss_hlc_compare(&ha, &hb);
}

TEST(cluster_old_token_fenced_across_brokers)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    struct broker a, b;
    cluster_broker(&a, &ec, "a", "plugin_opt_etcd_tombstone_ms 1000\n");
    cluster_broker(&b, &ec, "b", "plugin_opt_etcd_tombstone_ms 1000\n");
    struct client x, y;
    char rx[64], ry[64];
    client_connect_rr(&x, a.port, "x", rx, sizeof rx);
    client_connect_rr(&y, b.port, "y", ry, sizeof ry);
    for (int how = 0; how < 3; how++) {
        char lock[16], res[16], ahead[64], va[128], vb[128], corr[32];
        snprintf(lock, sizeof lock, "lock%d", how);
        snprintf(res, sizeof res, "res%d", how);
        /* x's clock 30 s ahead (accepted: under 60 s). */
        snprintf(ahead, sizeof ahead, "%llu:0:x", wall_ms() + 30000);
        snprintf(corr, sizeof corr, "xa%d", how);
        struct msg *m = request(&x, rx, corr, ahead, NULL, W("SET", lock, "X", "NX", "PX", "1000"));
        PAYLOAD(m, "+OK\r\n");
        snprintf(va, sizeof va, "%s", msg_user(m, "__ts"));
        snprintf(corr, sizeof corr, "xw%d", how);
        ASSERT_REPLY(request(&x, rx, corr, ahead, va, W("SET", res, "x1")), "+OK\r\n");
        if (how == 1) {
            snprintf(corr, sizeof corr, "xr%d", how);
            ASSERT_REPLY(request(&x, rx, corr, ahead, NULL, W("VDEL", lock, "X")), ":1\r\n");
        } else {
            usleep(1300 * 1000); /* expired */
        }
        if (how == 2)
            usleep(2500 * 1000); /* past the tombstone's own ms */
        char now[64];
        snprintf(now, sizeof now, "%llu:0:y", wall_ms());
        snprintf(corr, sizeof corr, "ya%d", how);
        m = request(&y, ry, corr, now, NULL, W("SET", lock, "Y", "NX", "PX", "10000"));
        PAYLOAD(m, "+OK\r\n");
        snprintf(vb, sizeof vb, "%s", msg_user(m, "__ts"));
        fprintf(stderr, "  case %d: stamp %s, old token %s, new token %s\n", how, ahead, va, vb);
        ASSERT_TRUE(hlc_cmp(vb, va) > 0);
        snprintf(corr, sizeof corr, "yw%d", how);
        ASSERT_REPLY(request(&y, ry, corr, now, vb, W("SET", res, "y1")), "+OK\r\n");
        snprintf(corr, sizeof corr, "xz%d", how);
        m = request(&x, rx, corr, ahead, va, W("SET", res, "x2"));
        fprintf(stderr, "  case %d: old holder's write: %.*s", how, m->len, (const char *)m->payload);
        ASSERT_TRUE(m->len > 4 && memcmp(m->payload, "-ERR", 4) == 0);
    }
    client_close(&x);
    client_close(&y);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}
