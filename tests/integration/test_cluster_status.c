/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_status.c - what a broker on a 3-member etcd cluster says of
 * each member, through statestore status: health, the leader, and how
 * both change when members die. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "../test.h"
#include "delay_proxy.h"
#include "etcd_cluster.h"
#include "harness.h"

/* Run status until its health line is `health` and its leader line is
 * `leader`, and every endpoint has been asked (10 s at most); r keeps the
 * last run. */
static void status_until(struct run *r, const char *port, const char *health, const char *leader)
{
    char v[600], l[600];
    for (int i = 0; i < 100; i++) {
        cli_tool(r, "-p", port, "status", NULL);
        if (status_line(r->out, "health", v, sizeof v) && strcmp(v, health) == 0 &&
            status_line(r->out, "etcd_leader", l, sizeof l) && strcmp(l, leader) == 0 &&
            strstr(r->out, " not asked yet\n") == NULL)
            return;
        run_free(r);
        usleep(100000);
    }
    cli_tool(r, "-p", port, "status", NULL);
    fprintf(stderr, "  wanted health \"%s\" and leader \"%s\"; status said:\n%s", health, leader, r->out);
    ASSERT_TRUE(false);
}

/* Endpoint i's line (from 0): the member's URL, then healthy (and leader
 * if it leads, with its id and figures) or unhealthy and why. */
static void check_endpoint(const struct run *r, const struct etcd_cluster *c, int i, bool healthy, bool leads,
                           char *id, size_t id_cap)
{
    char name[32], v[600], url[64], want[128];
    snprintf(name, sizeof name, "etcd_endpoint_%d", i + 1);
    ASSERT_TRUE(status_line(r->out, name, v, sizeof v) != NULL);
    etcd_member_url(c, i, url, sizeof url);
    if (!healthy) {
        snprintf(want, sizeof want, "%s unhealthy: ", url);
        ASSERT_TRUE(strncmp(v, want, strlen(want)) == 0);
        ASSERT_TRUE(strlen(v) > strlen(want)); /* and why */
        return;
    }
    snprintf(want, sizeof want, "%s healthy%s, id ", url, leads ? ", leader" : "");
    ASSERT_TRUE(strncmp(v, want, strlen(want)) == 0);
    const char *p = v + strlen(want);
    size_t n = strspn(p, "0123456789abcdef");
    ASSERT_TRUE(n >= 1 && n <= 16 && n < id_cap);
    snprintf(id, id_cap, "%.*s", (int)n, p);
    p += n;
    ASSERT_TRUE(strncmp(p, ", version 3.", 12) == 0);
    ASSERT_TRUE(strstr(p, ", db_size ") != NULL);
    ASSERT_TRUE(strstr(p, ", raft_term ") != NULL);
    ASSERT_TRUE(strstr(p, ", raft_index ") != NULL);
}

/* status on a broker of a 3-member cluster: every endpoint healthy with
 * its id, exactly the leader marked, the leader's URL; a follower killed
 * makes the health "degraded" (exit 0) and its line unhealthy; back, all
 * is healthy again; the leader killed, the new leader is named. Turned
 * off, nothing is said of the endpoints; too often is refused. */
TEST(cluster_status_shows_each_endpoint_and_the_leader)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker b;
    broker_on_etcd(&b, "status", c.endpoints,
                   "sys_interval 1\nplugin_opt_etcd_status_interval_ms 200\nplugin_opt_etcd_timeout_ms 500\n");
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);

    int leader = etcd_cluster_leader(&c);
    ASSERT_TRUE(leader >= 0);
    char url[64];
    struct run r;
    status_until(&r, port, "ok", etcd_member_url(&c, leader, url, sizeof url));
    ASSERT_EQ(r.status, 0);
    char ids[3][24];
    for (int i = 0; i < 3; i++)
        check_endpoint(&r, &c, i, true, i == leader, ids[i], sizeof ids[i]);
    ASSERT_TRUE(strcmp(ids[0], ids[1]) != 0 && strcmp(ids[1], ids[2]) != 0 && strcmp(ids[0], ids[2]) != 0);
    char v[64];
    ASSERT_TRUE(status_line(r.out, "etcd_endpoint_4", v, sizeof v) == NULL);
    run_free(&r);
    /* The same as JSON. */
    cli_tool(&r, "-p", port, "--json", "status", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"health\":\"ok\",", 15) == 0);
    char want[128];
    snprintf(want, sizeof want, "\"etcd_leader\":\"%s\"", url);
    ASSERT_TRUE(strstr(r.out, want) != NULL);
    ASSERT_TRUE(strstr(r.out, "\"etcd_endpoint_3\":\"http://127.0.0.1:") != NULL);
    run_free(&r);

    /* A follower dies: degraded, exit 0, the same leader. */
    int f = (leader + 1) % 3;
    etcd_member_kill9(&c, f);
    status_until(&r, port, "degraded (1 of 3 etcd endpoints unhealthy)", url);
    ASSERT_EQ(r.status, 0);
    char id[24];
    for (int i = 0; i < 3; i++)
        check_endpoint(&r, &c, i, i != f, i == leader, id, sizeof id);
    run_free(&r);

    /* Back: healthy again, with its old id. */
    etcd_member_restart(&c, f);
    status_until(&r, port, "ok", url);
    check_endpoint(&r, &c, f, true, false, id, sizeof id);
    ASSERT_TRUE(strcmp(id, ids[f]) == 0);
    run_free(&r);

    /* The leader dies: another is elected and named. */
    etcd_member_kill9(&c, leader);
    int next = -1;
    for (int i = 0; i < 100 && ((next = etcd_cluster_leader(&c)) < 0 || next == leader); i++)
        usleep(100000);
    ASSERT_TRUE(next >= 0 && next != leader);
    status_until(&r, port, "degraded (1 of 3 etcd endpoints unhealthy)", etcd_member_url(&c, next, url, sizeof url));
    ASSERT_EQ(r.status, 0);
    for (int i = 0; i < 3; i++)
        check_endpoint(&r, &c, i, i != leader, i == next, id, sizeof id);
    run_free(&r);
    broker_stop(&b);

    /* Off: no endpoint is asked, and nothing is said of them. Below 100
     * ms: refused. */
    struct broker off;
    broker_on_etcd(&off, "off", c.endpoints, "sys_interval 1\nplugin_opt_etcd_status_interval_ms 0\n");
    snprintf(port, sizeof port, "%d", off.port);
    char v2[600];
    for (int i = 0; i < 50; i++) {
        cli_tool(&r, "-p", port, "status", NULL);
        if (status_line(r.out, "etcd_reachable", v2, sizeof v2) && strcmp(v2, "1") == 0)
            break;
        run_free(&r);
        usleep(100000);
    }
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(status_line(r.out, "etcd_reachable", v2, sizeof v2) != NULL);
    ASSERT_TRUE(status_line(r.out, "etcd_leader", v2, sizeof v2) == NULL);
    ASSERT_TRUE(status_line(r.out, "etcd_endpoint_1", v2, sizeof v2) == NULL);
    run_free(&r);
    broker_stop(&off);
    char bad[700];
    snprintf(bad, sizeof bad,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_status_interval_ms 50\n",
             c.endpoints);
    broker_refuses("bad", bad, "plugin_opt_etcd_status_interval_ms: 0 (off) or 100 to 3600000");

    /* An endpoint that takes connections and never answers (a socket
     * nobody accepts on): "not asked yet" until its first check times
     * out, not counted unhealthy meanwhile; then unhealthy, and why. */
    etcd_member_restart(&c, leader);
    etcd_member_url(&c, etcd_cluster_leader(&c), url, sizeof url);
    int silent = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(silent >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int sport = 0;
    for (int i = 0; i < 20 && sport == 0; i++) {
        sa.sin_port = htons((uint16_t)(sport = free_port()));
        if (bind(silent, (struct sockaddr *)&sa, sizeof sa) != 0)
            sport = 0;
    }
    ASSERT_TRUE(sport != 0 && listen(silent, 16) == 0);
    char endpoints[700];
    snprintf(endpoints, sizeof endpoints, "%s,http://127.0.0.1:%d", c.endpoints, sport);
    struct broker quiet;
    broker_on_etcd(&quiet, "quiet", endpoints,
                   "sys_interval 1\nplugin_opt_etcd_status_interval_ms 200\nplugin_opt_etcd_timeout_ms 4000\n");
    snprintf(port, sizeof port, "%d", quiet.port);
    char silent_url[64];
    snprintf(silent_url, sizeof silent_url, "http://127.0.0.1:%d", sport);
    char line[700];
    bool seen = false;
    for (int i = 0; i < 30 && !seen; i++) {
        cli_tool(&r, "-p", port, "status", NULL);
        snprintf(want, sizeof want, "%s not asked yet", silent_url);
        if (status_line(r.out, "etcd_endpoint_4", line, sizeof line) && strcmp(line, want) == 0 &&
            status_line(r.out, "health", v2, sizeof v2) && strcmp(v2, "ok") == 0) {
            ASSERT_EQ(r.status, 0);
            ASSERT_TRUE(status_line(r.out, "etcd_leader", v2, sizeof v2) != NULL);
            /* The member restarted above may have started an election
             * since the leader was read (no pre-vote): the leader named
             * is the one etcd names now. */
            int now_leader = etcd_cluster_leader(&c);
            if (now_leader >= 0)
                etcd_member_url(&c, now_leader, url, sizeof url);
            seen = strcmp(v2, url) == 0;
        }
        run_free(&r);
        if (!seen)
            usleep(100000);
    }
    ASSERT_TRUE(seen);
    status_until(&r, port, "degraded (1 of 4 etcd endpoints unhealthy)", url);
    ASSERT_TRUE(status_line(r.out, "etcd_endpoint_4", line, sizeof line) != NULL);
    snprintf(want, sizeof want, "%s unhealthy: ", silent_url);
    ASSERT_TRUE(strncmp(line, want, strlen(want)) == 0 && strlen(line) > strlen(want));
    run_free(&r);
    broker_stop(&quiet);
    close(silent);
    etcd_cluster_stop(&c);
}

/* The first endpoint accepts connections and never answers: the broker
 * says etcd does not answer, goes on to the next endpoint, serves, and
 * says that etcd answers (it used to stay silent on that). */
TEST(cluster_first_endpoint_frozen_at_start_said_and_then_served)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    int via = free_port();
    struct delay_proxy *px = delay_proxy_start("127.0.0.1", via, "127.0.0.1", c.client_port[0]);
    delay_proxy_hold(px, true);
    char endpoints[200];
    snprintf(endpoints, sizeof endpoints, "http://127.0.0.1:%d,http://127.0.0.1:%d", via, c.client_port[0]);
    struct broker b;
    broker_on_etcd(&b, "b", endpoints, "plugin_opt_etcd_timeout_ms 1000\n");
    ASSERT_TRUE(broker_log_has(&b, "etcd does not answer ("));
    struct client w;
    char rw[64];
    client_connect_rr(&w, b.port, "w", rw, sizeof rw);
    ASSERT_REPLY(request(&w, rw, "1", NULL, NULL, W("SET", "k", "v")), "+OK\r\n");
    char said[100];
    snprintf(said, sizeof said, "etcd answers again (http://127.0.0.1:%d)", c.client_port[0]);
    for (int i = 0; i < 50 && !broker_log_has(&b, said); i++)
        usleep(100 * 1000);
    ASSERT_TRUE(broker_log_has(&b, said));
    client_close(&w);
    broker_stop(&b);
    delay_proxy_stop(px);
    etcd_cluster_stop(&c);
}
