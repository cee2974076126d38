/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_auth.c - the store on an etcd whose authentication is on:
 * a user with rights on the prefix only, JWT tokens, and tokens that stop
 * working while the broker runs (a JWT past its ttl, a simple token that
 * a restarted member forgot). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "cluster_util.h"
#include "etcd_cluster.h"
#include "harness.h"

/* Run etcdctl against the cluster with the words given. */
static void etcdctl(const struct etcd_cluster *c, const char *const *words)
{
    char ep[600];
    snprintf(ep, sizeof ep, "--endpoints=%s", c->endpoints);
    char *argv[16] = {"build/etcd/root/usr/bin/etcdctl", ep};
    int n = 2;
    for (size_t i = 0; words[i] && n < 15; i++)
        argv[n++] = (char *)words[i];
    argv[n] = NULL;
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    if (r.status != 0)
        fprintf(stderr, "  etcdctl: %s%s", r.out, r.err ? r.err : "");
    ASSERT_EQ(r.status, 0);
    run_free(&r);
}

/* etcd's authentication on, with a user "store" (password "storepw")
 * whose role may read and write the prefix race/ only. */
static void store_user_and_auth(const struct etcd_cluster *c)
{
    etcdctl(c, W("user", "add", "root", "--new-user-password=rootpw", "--interactive=false"));
    etcdctl(c, W("role", "add", "store"));
    etcdctl(c, W("role", "grant-permission", "--prefix=true", "store", "readwrite", "race/"));
    etcdctl(c, W("user", "add", "store", "--new-user-password=storepw", "--interactive=false"));
    etcdctl(c, W("user", "grant-role", "store", "store"));
    etcdctl(c, W("auth", "enable"));
}

/* With etcd's authentication on, the plugin logs in with
 * etcd_username/etcd_password (a user whose role may read and write only
 * the store's prefix) and serves; a wrong password stops the broker at
 * start, naming the options. */
TEST(cluster_etcd_user_and_password)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    store_user_and_auth(&c);
    struct broker b;
    cluster_broker(&b, &c, "auth", "plugin_opt_etcd_username store\nplugin_opt_etcd_password storepw\n");
    struct client cl;
    char r[64];
    client_connect_rr(&cl, b.port, "c", r, sizeof r);
    /* 2 s: the GET comes before the deadline even under the sanitizers. */
    struct msg *m = request(&cl, r, "1", NULL, NULL, W("SET", "k", "v", "PX", "2000"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&cl, r, "2", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$1\r\nv\r\n");
    usleep(2400 * 1000); /* expired and swept, under the user's rights */
    m = request(&cl, r, "3", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$-1\r\n");
    client_close(&cl);
    ASSERT_TRUE(broker_log_has(&b, "etcd_username=store"));
    ASSERT_TRUE(!broker_log_has(&b, "storepw"));
    broker_stop(&b);
    struct broker bad;
    memset(&bad, 0, sizeof bad);
    snprintf(bad.name, sizeof bad.name, "bad-password");
    snprintf(bad.extra, sizeof bad.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix race/\n"
             "plugin_opt_etcd_username store\nplugin_opt_etcd_password wrong\n", c.endpoints);
    ASSERT_TRUE(broker_start_fails(&bad) != 0);
    ASSERT_TRUE(broker_log_has(&bad, "plugin_opt_etcd_username, plugin_opt_etcd_password: etcd did not accept user store"));
    etcd_cluster_stop(&c);
}

/* A one-member etcd with JWT tokens (--auth-token jwt,
 * RS256: the setup etcd documents for production), a key pair made for
 * it; ttl is the tokens' life ("" for etcd's default, 5 minutes). */
static void jwt_cluster_start(struct etcd_cluster *c, const char *ttl)
{
    const char *d = test_tmpdir();
    char cmd[1200], arg[1000];
    snprintf(cmd, sizeof cmd,
             "openssl genrsa -out %s/jwt.key 2048 >%s/openssl.log 2>&1 && "
             "openssl rsa -in %s/jwt.key -pubout -out %s/jwt.pub >>%s/openssl.log 2>&1",
             d, d, d, d, d);
    ASSERT_EQ(system(cmd), 0);
    snprintf(arg, sizeof arg, "--auth-token=jwt,pub-key=%s/jwt.pub,priv-key=%s/jwt.key,sign-method=RS256%s%s", d,
             d, ttl[0] ? ",ttl=" : "", ttl);
    etcd_cluster_start_with(c, 1, arg);
    store_user_and_auth(c);
}

/* etcd's JWT tokens are several hundred bytes long, where its simple
 * tokens are some 20: the plugin logs in with them, and serves. */
TEST(cluster_etcd_jwt_tokens)
{
    struct etcd_cluster c;
    jwt_cluster_start(&c, "");
    struct broker b;
    cluster_broker(&b, &c, "jwt", "plugin_opt_etcd_username store\nplugin_opt_etcd_password storepw\n");
    struct client cl;
    char r[64];
    client_connect_rr(&cl, b.port, "c", r, sizeof r);
    struct msg *m = request(&cl, r, "1", NULL, NULL, W("SET", "k", "v"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&cl, r, "2", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$1\r\nv\r\n");
    client_close(&cl);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* A JWT lives for its ttl, used or not (5 minutes by default). Past it,
 * the plugin logs in again: etcd refuses a login that carries an expired
 * token, so the login goes without one. Before, every broker on JWTs was
 * answered "unavailable" for good once its first token had expired. */
TEST(cluster_etcd_jwt_expiring_tokens)
{
    struct etcd_cluster c;
    jwt_cluster_start(&c, "2s");
    const char *login = "plugin_opt_etcd_username store\nplugin_opt_etcd_password storepw\n";
    struct broker a, b;
    cluster_broker(&a, &c, "jwt-a", login);
    cluster_broker(&b, &c, "jwt-b", login);
    struct client ca, ob;
    char ra[64], rob[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    client_connect_rr(&ob, b.port, "ob", rob, sizeof rob);
    ASSERT_REPLY(request(&ob, rob, "n", NULL, NULL, W("KEYNOTIFY", "k")), "+OK\r\n");
    /* Each SET after the tokens of both brokers have expired: the writer's
     * Txn, the observer's broker's watch and its reads all log in again. */
    for (int i = 0; i < 4; i++) {
        char v[16], note[64], got[64];
        snprintf(v, sizeof v, "v%d", i);
        ASSERT_REPLY(request(&ca, ra, "s", NULL, NULL, W("SET", "k", v)), "+OK\r\n");
        struct msg *n = client_wait(&ob, 5000);
        ASSERT_TRUE(n != NULL);
        snprintf(note, sizeof note, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$2\r\n%s\r\n", v);
        ASSERT_MEM(n->payload, (size_t)n->len, note, strlen(note));
        snprintf(got, sizeof got, "$2\r\n%s\r\n", v);
        struct msg *m = request(&ob, rob, "g", NULL, NULL, W("GET", "k"));
        ASSERT_TRUE(m != NULL);
        ASSERT_MEM(m->payload, (size_t)m->len, got, strlen(got));
        usleep(2500 * 1000); /* past the tokens' life */
    }
    client_close(&ca);
    client_close(&ob);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* etcd's simple tokens live in its members' memory: a member restarted
 * forgets them, and the plugin's next call is refused for its token. It
 * logs in again (without the forgotten token) and serves. */
TEST(cluster_etcd_simple_token_forgotten_by_a_restarted_member)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    store_user_and_auth(&c);
    struct broker a;
    cluster_broker(&a, &c, "token-a", "plugin_opt_etcd_username store\nplugin_opt_etcd_password storepw\n");
    struct client ca;
    char ra[64];
    client_connect_rr(&ca, a.port, "ca", ra, sizeof ra);
    ASSERT_REPLY(request(&ca, ra, "s", NULL, NULL, W("SET", "k", "1")), "+OK\r\n");
    etcd_member_kill9(&c, 0);
    etcd_member_restart(&c, 0);
    /* Answered "unavailable" while the member is down; OK within 20 s. */
    uint64_t t0 = now_ms();
    struct msg *m = NULL;
    while (now_ms() - t0 < 20000) {
        m = request(&ca, ra, "s", NULL, NULL, W("SET", "k", "2"));
        if (m && payload_is(m, "+OK\r\n"))
            break;
        usleep(300 * 1000);
    }
    ASSERT_REPLY(m, "+OK\r\n");
    ASSERT_REPLY(request(&ca, ra, "g", NULL, NULL, W("GET", "k")), "$1\r\n2\r\n");
    client_close(&ca);
    broker_stop(&a);
    etcd_cluster_stop(&c);
}
