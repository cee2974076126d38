/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_clock.c - two brokers on one cluster whose clocks differ
 * by 2 s (Debian's libfaketime under one of them): versions and fencing
 * tokens still grow whichever broker writes, deadlines are clock times,
 * and the broker behind says so in $SYS and its log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../core/hlc.h"
#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

#define FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

/* The version INSPECT gives for key, through client c. */
static ss_hlc version_of(struct client *c, const char *resp, const char *key)
{
    struct msg *m = admin_call(c, resp, "i", W("INSPECT", key));
    ASSERT_TRUE(m != NULL && m->len > 4 && memcmp(m->payload, "key ", 4) == 0);
    /* "key HEX SIZE VERSION TTL TOKEN" */
    char line[512];
    snprintf(line, sizeof line, "%.*s", m->len, (const char *)m->payload);
    char *f = line;
    for (int i = 0; i < 3; i++) {
        f = strchr(f, ' ');
        ASSERT_TRUE(f != NULL);
        f++;
    }
    ss_hlc v;
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)f, strcspn(f, " "), &v), 0);
    return v;
}

static bool over_1500(const char *v)
{
    return strtoull(v, NULL, 10) >= 1500;
}

static bool any(const char *v)
{
    return v[0] != '\0';
}

TEST(cluster_clock_ahead_reported_and_versions_grow)
{
    ASSERT_TRUE(access(FAKETIME_LIB, R_OK) == 0); /* make test installs faketime */
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    struct broker a, b;
    broker_on_etcd(&a, "a", ec.endpoints, "sys_interval 1\nplugin_opt_node_id a\n");
    /* B's wall clock 2 s ahead; its monotonic clock (timers) true. */
    broker_named(&b, "b");
    snprintf(b.preload, sizeof b.preload, "%s", FAKETIME_LIB);
    setenv("FAKETIME", "+2s", 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    snprintf(b.extra, sizeof b.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nsys_interval 1\nplugin_opt_node_id b\n",
             ec.endpoints);
    broker_start(&b);
    unsetenv("FAKETIME");
    unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cb, b.port, "cb", rb, sizeof rb);

    /* B writes: its version is about 2 s ahead of A's clock. */
    uint64_t before = (uint64_t)time(NULL) * 1000;
    ASSERT_REPLY(request(&cb, rb, "1", NULL, NULL, W("SET", "k", "v1")), "+OK\r\n");
    ss_hlc vb = version_of(&ca, ra, "k");
    ASSERT_TRUE(vb.node_len == 1 && vb.node[0] == 'b');
    ASSERT_TRUE(vb.wall >= before + 1500);
    /* A writes it next: a greater version, though A's clock is behind. */
    ASSERT_REPLY(request(&ca, ra, "2", NULL, NULL, W("SET", "k", "v2")), "+OK\r\n");
    ss_hlc va = version_of(&ca, ra, "k");
    ASSERT_TRUE(va.node_len == 1 && va.node[0] == 'a');
    ASSERT_TRUE(ss_hlc_compare(&va, &vb) > 0);
    /* A lock released through B and taken through A: a greater token. */
    ASSERT_REPLY(request(&cb, rb, "3", NULL, NULL, W("SET", "lock", "b", "NX", "PX", "10000")), "+OK\r\n");
    ss_hlc lb = version_of(&ca, ra, "lock");
    ASSERT_REPLY(request(&cb, rb, "4", NULL, NULL, W("VDEL", "lock", "b")), ":1\r\n");
    ASSERT_REPLY(request(&ca, ra, "5", NULL, NULL, W("SET", "lock", "a", "NX", "PX", "10000")), "+OK\r\n");
    ss_hlc la = version_of(&ca, ra, "lock");
    ASSERT_TRUE(ss_hlc_compare(&la, &lb) > 0);

    /* A deadline is a clock time, and B's clock passes it first: a key
     * set through A for 4 s is gone after 3 s through B, and through A
     * too (with 1 s left by A's clock), as B's sweep deleted it. */
    ASSERT_REPLY(request(&ca, ra, "6", NULL, NULL, W("SET", "e", "v", "PX", "4000")), "+OK\r\n");
    uint64_t set_at = now_ms();
    usleep(3000 * 1000);
    ASSERT_REPLY(request(&cb, rb, "7", NULL, NULL, W("GET", "e")), "$-1\r\n");
    ASSERT_REPLY(request(&ca, ra, "8", NULL, NULL, W("GET", "e")), "$-1\r\n");
    ASSERT_TRUE(now_ms() - set_at < 3900); /* before A's own deadline */

    /* A says how far ahead B's versions are, and whose; B, that none is
     * ahead of it by as much. */
    char v[64];
    ASSERT_TRUE(sys_figure_until(a.port, "etcd/versions_ahead_ms", over_1500, v, sizeof v));
    ASSERT_TRUE(strtoull(v, NULL, 10) < 3000);
    ASSERT_TRUE(sys_figure_until(a.port, "etcd/versions_ahead_node", any, v, sizeof v));
    ASSERT_STR(v, strlen(v), "b");
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/versions_ahead_ms", any, v, sizeof v));
    ASSERT_TRUE(strtoull(v, NULL, 10) < 500);
    ASSERT_TRUE(broker_log_has(&a, "a version from node b is "));
    ASSERT_TRUE(broker_log_has(&a, " ms ahead of this broker's clock: keep the brokers' clocks in sync (NTP)"));
    ASSERT_TRUE(!broker_log_has(&b, "ms ahead of this broker's clock"));

    client_close(&ca);
    client_close(&cb);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}
