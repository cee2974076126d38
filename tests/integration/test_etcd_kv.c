/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_kv.c - the etcd backend's client side against a real 3-member
 * etcd cluster: gRPC calls over HTTP/2, Range and compare-and-set Txns,
 * many calls in flight, endpoint failover, errors. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../etcd/backend_etcd_calls.h"
#include "../../etcd/grpc.h"
#include "../../etcd/kv.h"
#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

/* Range of one key, through g; returns the reply's header revision. */
static int64_t get_key(ss_grpc *g, const char *key, ss_etcd_kv *kv, char *value, size_t n)
{
    ss_grpc_call c = {.method = SS_ETCD_RANGE_METHOD};
    ASSERT_EQ(ss_etcd_range_pack(&c.request, B(key), false), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_OK);
    ss_etcd_reply r;
    ASSERT_EQ(ss_etcd_range_unpack(&c.reply, &r, kv), SS_OK);
    snprintf(value, n, "%.*s", (int)kv->value.len, (const char *)kv->value.data);
    kv->value.data = NULL; /* borrowed from r, freed below */
    int64_t rev = r.revision;
    ss_etcd_reply_free(&r);
    ss_grpc_call_clear(&c);
    return rev;
}

/* Send Txn t (freed) through g: whether it succeeded. */
static bool txn_succeeded(ss_grpc *g, ss_etcd_txn *t)
{
    ss_grpc_call c = {.method = SS_ETCD_TXN_METHOD};
    ASSERT_EQ(ss_etcd_txn_pack(t, &c.request), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_OK);
    ss_etcd_reply r;
    ASSERT_EQ(ss_etcd_txn_unpack(&c.reply, &r, NULL), SS_OK);
    bool ok = r.succeeded;
    ss_etcd_reply_free(&r);
    ss_grpc_call_clear(&c);
    ss_etcd_txn_free(t);
    return ok;
}

/* A Txn: expect key at rev, then put value (or delete when value is
 * NULL). Returns whether it succeeded. */
static bool cas(ss_grpc *g, const char *key, int64_t rev, const char *value)
{
    ss_etcd_txn t = {0};
    ASSERT_EQ(ss_etcd_txn_expect(&t, B(key), rev), SS_OK);
    ASSERT_EQ(value ? ss_etcd_txn_put(&t, B(key), B(value)) : ss_etcd_txn_delete(&t, B(key)), SS_OK);
    return txn_succeeded(g, &t);
}

/* A Txn: every key of [from, end) changed before rev, then put
 * z/probe. Returns whether it succeeded. */
static bool below(ss_grpc *g, ss_bytes from, const char *end, int64_t rev)
{
    ss_etcd_txn t = {0};
    ASSERT_EQ(ss_etcd_txn_expect_below(&t, from, B(end), rev), SS_OK);
    ASSERT_EQ(ss_etcd_txn_put(&t, B("z/probe"), B("p")), SS_OK);
    return txn_succeeded(g, &t);
}

/* A Txn: key is there, then put z/probe. Returns whether it
 * succeeded. */
static bool present(ss_grpc *g, const char *key)
{
    ss_etcd_txn t = {0};
    ASSERT_EQ(ss_etcd_txn_expect_present(&t, B(key)), SS_OK);
    ASSERT_EQ(ss_etcd_txn_put(&t, B("z/probe"), B("p")), SS_OK);
    return txn_succeeded(g, &t);
}

TEST(etcd_kv_range_and_compare_and_set)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 3);
    ss_grpc_options o = {.endpoints = ec.endpoints};
    ss_grpc *g;
    char why[200];
    ASSERT_EQ(ss_grpc_new(&o, &g, why, sizeof why), SS_OK);
    ss_etcd_kv kv;
    char v[64];
    get_key(g, "k", &kv, v, sizeof v);
    ASSERT_TRUE(!kv.found);
    /* Absent: create_revision == 0 holds once. */
    ASSERT_TRUE(cas(g, "k", 0, "one"));
    ASSERT_TRUE(!cas(g, "k", 0, "again"));
    get_key(g, "k", &kv, v, sizeof v);
    ASSERT_TRUE(kv.found);
    ASSERT_STR(v, strlen(v), "one");
    int64_t r1 = kv.mod_revision;
    ASSERT_TRUE(r1 > 0 && kv.create_revision == r1);
    /* Present: only the revision it was read at. */
    ASSERT_TRUE(cas(g, "k", r1, "two"));
    ASSERT_TRUE(!cas(g, "k", r1, "three"));
    get_key(g, "k", &kv, v, sizeof v);
    ASSERT_STR(v, strlen(v), "two");
    ASSERT_TRUE(kv.mod_revision > r1);
    ASSERT_TRUE(!cas(g, "k", r1, NULL));
    ASSERT_TRUE(cas(g, "k", kv.mod_revision, NULL));
    get_key(g, "k", &kv, v, sizeof v);
    ASSERT_TRUE(!kv.found);
    /* Binary keys and values, and an empty value. */
    ss_etcd_txn t = {0};
    uint8_t bin[4] = {0, 0xff, '\n', 0};
    ss_bytes bk = {bin, 4};
    ss_bytes empty = {NULL, 0};
    ASSERT_EQ(ss_etcd_txn_expect(&t, bk, 0), SS_OK);
    ASSERT_EQ(ss_etcd_txn_put(&t, bk, empty), SS_OK);
    ASSERT_EQ(ss_etcd_txn_ops(&t), 2);
    ss_grpc_call c = {.method = SS_ETCD_TXN_METHOD};
    ASSERT_EQ(ss_etcd_txn_pack(&t, &c.request), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_OK);
    ss_grpc_call_clear(&c);
    ss_etcd_txn_free(&t);
    ss_grpc_call rc = {.method = SS_ETCD_RANGE_METHOD};
    ASSERT_EQ(ss_etcd_range_pack(&rc.request, bk, false), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &rc), SS_OK);
    ss_etcd_reply r;
    ASSERT_EQ(ss_etcd_range_unpack(&rc.reply, &r, &kv), SS_OK);
    ASSERT_TRUE(kv.found);
    ASSERT_EQ(kv.value.len, 0);
    ss_etcd_reply_free(&r);
    ss_grpc_call_clear(&rc);
    /* No key of a range changed after a revision: m/1 and n/2 written at
     * ra < rb. [m/, n0) holds below rb + 1, not below rb; the
     * interval that leaves n/2 out holds below ra + 1, one that leaves
     * nothing out does not; an empty interval always holds. */
    ASSERT_TRUE(cas(g, "m/1", 0, "a"));
    ASSERT_TRUE(cas(g, "n/2", 0, "b"));
    get_key(g, "m/1", &kv, v, sizeof v);
    int64_t ra = kv.mod_revision;
    get_key(g, "n/2", &kv, v, sizeof v);
    int64_t rb = kv.mod_revision;
    ASSERT_TRUE(ra > 0 && rb > ra);
    ASSERT_TRUE(below(g, B("m/"), "n0", rb + 1));
    ASSERT_TRUE(!below(g, B("m/"), "n0", rb));
    ASSERT_TRUE(below(g, B("m/"), "n/2", ra + 1));
    ASSERT_TRUE(!below(g, B("m/"), "n/2", ra));
    ASSERT_TRUE(!below(g, B("m/"), "n/3", ra + 1));
    ss_bytes after_n2 = {(const uint8_t *)"n/2", 4}; /* with its NUL: the key right after n/2 */
    ASSERT_TRUE(below(g, after_n2, "n0", 1));
    ASSERT_TRUE(below(g, B("x/"), "x0", 1));
    /* A key is there: whatever its revisions, and not once deleted (an
     * empty value counts as there). */
    ASSERT_TRUE(!present(g, "s/marked"));
    ASSERT_TRUE(cas(g, "s/marked", 0, ""));
    ASSERT_TRUE(present(g, "s/marked"));
    get_key(g, "s/marked", &kv, v, sizeof v);
    ASSERT_TRUE(cas(g, "s/marked", kv.mod_revision, "again"));
    ASSERT_TRUE(present(g, "s/marked"));
    get_key(g, "s/marked", &kv, v, sizeof v);
    ASSERT_TRUE(cas(g, "s/marked", kv.mod_revision, NULL));
    ASSERT_TRUE(!present(g, "s/marked"));
    ss_grpc_free(g);
    etcd_cluster_stop(&ec);
}

struct wake_count {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int wakes;
};

static void on_wake(void *ctx)
{
    struct wake_count *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->wakes++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* 200 calls submitted at once, on one connection: each completes once,
 * the owner is woken, and collecting returns every one. */
TEST(etcd_kv_many_calls_in_flight)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 3);
    struct wake_count w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    ss_grpc_options o = {.endpoints = ec.endpoints, .wake = on_wake, .wake_ctx = &w};
    ss_grpc *g;
    ASSERT_EQ(ss_grpc_new(&o, &g, NULL, 0), SS_OK);
    enum { N = 200 };
    static ss_grpc_call calls[N];
    memset(calls, 0, sizeof calls);
    for (int i = 0; i < N; i++) {
        char key[16], val[16];
        snprintf(key, sizeof key, "m%03d", i);
        snprintf(val, sizeof val, "v%d", i);
        ss_etcd_txn t = {0};
        ASSERT_EQ(ss_etcd_txn_expect(&t, B(key), 0), SS_OK);
        ASSERT_EQ(ss_etcd_txn_put(&t, B(key), B(val)), SS_OK);
        calls[i].method = SS_ETCD_TXN_METHOD;
        calls[i].user = &calls[i];
        ASSERT_EQ(ss_etcd_txn_pack(&t, &calls[i].request), SS_OK);
        ss_etcd_txn_free(&t);
        ss_grpc_submit(g, &calls[i]);
    }
    int got = 0;
    uint64_t deadline = now_ms() + 30000;
    bool seen[N] = {false};
    while (got < N && now_ms() < deadline) {
        pthread_mutex_lock(&w.mu);
        if (w.wakes == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&w.cv, &w.mu, &ts);
        }
        w.wakes = 0;
        pthread_mutex_unlock(&w.mu);
        for (ss_grpc_call *c = ss_grpc_collect(g); c; c = c->next) {
            int i = (int)(c - calls);
            ASSERT_TRUE(i >= 0 && i < N && c->user == c && !seen[i]);
            seen[i] = true;
            ASSERT_EQ(c->rc, SS_OK);
            ss_etcd_reply r;
            ASSERT_EQ(ss_etcd_txn_unpack(&c->reply, &r, NULL), SS_OK);
            ASSERT_TRUE(r.succeeded);
            ss_etcd_reply_free(&r);
            got++;
        }
    }
    ASSERT_EQ(got, N);
    fprintf(stderr, "  %d Txns in flight at once on a 3-member cluster: all committed\n", N);
    for (int i = 0; i < N; i++)
        ss_grpc_call_clear(&calls[i]);
    ss_etcd_kv kv;
    char v[64];
    get_key(g, "m199", &kv, v, sizeof v);
    ASSERT_STR(v, strlen(v), "v199");
    ss_grpc_free(g);
    etcd_cluster_stop(&ec);
}

/* An endpoint that refuses: the call fails with a connection error that
 * names it, and later calls go to the next endpoint. A method etcd does
 * not have: its gRPC status. Bad endpoint lists are refused up front. */
TEST(etcd_kv_failover_and_errors)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    char list[600];
    int dead = free_port();
    snprintf(list, sizeof list, "http://127.0.0.1:%d, %s/", dead, ec.endpoints);
    ss_grpc_options o = {.endpoints = list};
    ss_grpc *g;
    ASSERT_EQ(ss_grpc_new(&o, &g, NULL, 0), SS_OK);
    ss_grpc_call c = {.method = SS_ETCD_RANGE_METHOD};
    ASSERT_EQ(ss_etcd_range_pack(&c.request, B("x"), false), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_E_CONNECTION);
    char port[32];
    snprintf(port, sizeof port, ":%d", dead);
    ASSERT_TRUE(strstr(c.message, port) != NULL);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_OK);
    char url[64];
    etcd_member_url(&ec, 0, url, sizeof url);
    ASSERT_MEM(ss_grpc_endpoint(g), strlen(ss_grpc_endpoint(g)), url, strlen(url));
    ss_grpc_call_clear(&c);
    ss_grpc_call u = {.method = "/etcdserverpb.KV/NoSuchMethod"};
    ASSERT_EQ(ss_grpc_call_wait(g, &u), SS_E_SERVER);
    ASSERT_STR(u.message, strlen(u.message), "unknown method NoSuchMethod for service etcdserverpb.KV");
    ASSERT_EQ(u.status, 12); /* UNIMPLEMENTED */
    ss_grpc_call_clear(&u);
    ss_grpc_free(g);

    char why[200];
    ss_grpc_options bad = {.endpoints = "127.0.0.1:2379"};
    ASSERT_EQ(ss_grpc_new(&bad, &g, why, sizeof why), SS_E_INVAL);
    ASSERT_STR(why, strlen(why), "an endpoint must start with http:// or https://: 127.0.0.1:2379");
    ss_grpc_options noport = {.endpoints = "http://etcd.example"};
    ASSERT_EQ(ss_grpc_new(&noport, &g, why, sizeof why), SS_E_INVAL);
    ASSERT_STR(why, strlen(why), "an endpoint needs a host and a port (http://host:port): http://etcd.example");
    ss_grpc_options none = {.endpoints = " , "};
    ASSERT_EQ(ss_grpc_new(&none, &g, why, sizeof why), SS_E_INVAL);
    ASSERT_STR(why, strlen(why), "no endpoint given");
    etcd_cluster_stop(&ec);
}

/* Call c until it is answered (10 s at most): while the cluster elects a
 * leader or the channel finds a live member, a call fails as unavailable
 * or as a lost connection, never otherwise. */
static void call_until_answered(ss_grpc *g, ss_grpc_call *c)
{
    int rc, tries = 0;
    while ((rc = ss_grpc_call_wait(g, c)) != SS_OK && ++tries < 100) {
        fprintf(stderr, "  meanwhile: %s (%s)\n", ss_strerror(rc), c->message);
        ASSERT_TRUE(rc == SS_E_CONNECTION || (rc == SS_E_SERVER && c->status == SS_GRPC_UNAVAILABLE));
        usleep(100000);
    }
    ASSERT_EQ(rc, SS_OK);
}

/* The index of the member whose URL is endpoint, or -1. */
static int member_of(const struct etcd_cluster *ec, const char *endpoint)
{
    char url[64];
    for (int i = 0; i < ec->n; i++)
        if (strcmp(endpoint, etcd_member_url(ec, i, url, sizeof url)) == 0)
            return i;
    return -1;
}

/* A member that stops answering (SIGSTOP): the call times out and later
 * calls go to the next member. A member killed: its call fails as a lost
 * connection, and the next goes on elsewhere. */
TEST(etcd_kv_timeout_and_lost_member)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 3);
    ss_grpc_options o = {.endpoints = ec.endpoints};
    ss_grpc *g;
    ASSERT_EQ(ss_grpc_new(&o, &g, NULL, 0), SS_OK);
    ss_etcd_kv kv;
    char v[64], url[64];
    get_key(g, "k", &kv, v, sizeof v);
    /* Stop the member the channel is connected to: usually member 0, but
     * another when member 0 was not yet listening at the first call. */
    int s = member_of(&ec, ss_grpc_endpoint(g));
    ASSERT_TRUE(s >= 0);
    etcd_member_sigstop(&ec, s);
    ss_grpc_call c = {.method = SS_ETCD_RANGE_METHOD, .timeout_ms = 500};
    ASSERT_EQ(ss_etcd_range_pack(&c.request, B("k"), false), SS_OK);
    uint64_t t0 = now_ms();
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_E_TIMEOUT);
    ASSERT_TRUE(now_ms() - t0 >= 500 && now_ms() - t0 < 3000);
    etcd_member_url(&ec, s, url, sizeof url);
    ASSERT_TRUE(strstr(c.message, url) != NULL && strstr(c.message, "no answer in time") != NULL);
    /* The two others still have a quorum. */
    c.timeout_ms = 5000;
    call_until_answered(g, &c);
    ASSERT_TRUE(strcmp(ss_grpc_endpoint(g), url) != 0);
    /* Kill the member that answered. */
    int m = member_of(&ec, ss_grpc_endpoint(g));
    ASSERT_TRUE(m >= 0 && m != s);
    etcd_member_url(&ec, m, url, sizeof url);
    ASSERT_EQ(kill(ec.pid[s], SIGCONT), 0);
    ASSERT_EQ(kill(ec.pid[m], SIGKILL), 0);
    waitpid(ec.pid[m], NULL, 0);
    ec.pid[m] = 0;
    /* The lost connection is noticed (by the next call, or before it);
     * calls then go to another member, which answers once the two left
     * have a leader again: until then with UNAVAILABLE, never with data. */
    call_until_answered(g, &c);
    ASSERT_TRUE(strcmp(ss_grpc_endpoint(g), url) != 0);
    ASSERT_TRUE(cas(g, "after", 0, "yes"));
    ss_grpc_call_clear(&c);
    ss_grpc_free(g);
    etcd_cluster_stop(&ec);
}

/* Make a CA, a server certificate for 127.0.0.1, a client certificate,
 * and a second, unrelated CA, under dir, with openssl. */
static void make_certs(const char *dir)
{
    char cmd[4000];
    snprintf(cmd, sizeof cmd,
             "(cd %s && "
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca && "
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.crt -days 2 -subj /CN=other && "
             "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=etcd && "
             "printf 'subjectAltName=IP:127.0.0.1\\nextendedKeyUsage=serverAuth,clientAuth\\n' > server.ext && "
             "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 "
             "-extfile server.ext && "
             "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=statestore && "
             "printf 'extendedKeyUsage=clientAuth\\n' > client.ext && "
             "openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt -days 2 "
             "-extfile client.ext) > %s/certs.log 2>&1",
             dir, dir);
    ASSERT_EQ(system(cmd), 0);
}

/* TLS: the server's certificate is checked against the CA given; a client
 * certificate is presented when the members require one; without it, or
 * against another CA, the call fails as a connection failure that says
 * why. */
TEST(etcd_kv_tls_and_client_certificates)
{
    char dir[400], ca[500], cert[500], key[500], ccert[500], ckey[500], other[500];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    make_certs(dir);
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    snprintf(cert, sizeof cert, "%s/server.crt", dir);
    snprintf(key, sizeof key, "%s/server.key", dir);
    snprintf(ccert, sizeof ccert, "%s/client.crt", dir);
    snprintf(ckey, sizeof ckey, "%s/client.key", dir);
    snprintf(other, sizeof other, "%s/other.crt", dir);
    struct etcd_tls tls = {ca, cert, key, true, ccert, ckey};
    struct etcd_cluster ec;
    etcd_cluster_start_tls(&ec, 1, &tls);
    ASSERT_TRUE(strncmp(ec.endpoints, "https://127.0.0.1:", 18) == 0);

    ss_grpc_options o = {.endpoints = ec.endpoints, .ca_file = ca, .cert_file = ccert, .key_file = ckey};
    ss_grpc *g;
    char why[300];
    ASSERT_EQ(ss_grpc_new(&o, &g, why, sizeof why), SS_OK);
    ASSERT_TRUE(cas(g, "secure", 0, "yes"));
    ss_etcd_kv kv;
    char v[64];
    get_key(g, "secure", &kv, v, sizeof v);
    ASSERT_STR(v, strlen(v), "yes");
    ss_grpc_free(g);

    /* No client certificate: the member refuses the handshake. */
    ss_grpc_options nocert = {.endpoints = ec.endpoints, .ca_file = ca};
    ASSERT_EQ(ss_grpc_new(&nocert, &g, why, sizeof why), SS_OK);
    ss_grpc_call c = {.method = SS_ETCD_RANGE_METHOD};
    ASSERT_EQ(ss_etcd_range_pack(&c.request, B("secure"), false), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_E_CONNECTION);
    /* Go's TLS refuses after the handshake (TLS 1.3): the reason is the
     * server's alert when it arrives before the connection closes. */
    ASSERT_TRUE(strncmp(c.message, ec.endpoints, strlen(ec.endpoints)) == 0);
    fprintf(stderr, "  without a client certificate: %s\n", c.message);
    ss_grpc_free(g);

    /* Another CA: the server's certificate is not trusted. */
    ss_grpc_options wrongca = {.endpoints = ec.endpoints, .ca_file = other, .cert_file = ccert, .key_file = ckey};
    ASSERT_EQ(ss_grpc_new(&wrongca, &g, why, sizeof why), SS_OK);
    ASSERT_EQ(ss_grpc_call_wait(g, &c), SS_E_CONNECTION);
    ASSERT_TRUE(strstr(c.message, "certificate verify failed") != NULL);
    ss_grpc_free(g);

    /* Plain HTTP/2 to a TLS port is no answer either. */
    char plain[100];
    snprintf(plain, sizeof plain, "http://127.0.0.1:%d", ec.client_port[0]);
    ss_grpc_options http = {.endpoints = plain, .connect_timeout_ms = 1000};
    ASSERT_EQ(ss_grpc_new(&http, &g, why, sizeof why), SS_OK);
    c.timeout_ms = 2000;
    int rc = ss_grpc_call_wait(g, &c);
    ASSERT_TRUE(rc == SS_E_CONNECTION || rc == SS_E_TIMEOUT || rc == SS_E_PROTOCOL);
    ss_grpc_call_clear(&c);
    ss_grpc_free(g);

    /* Files that cannot be used stop the channel at once. */
    ss_grpc_options bad = {.endpoints = ec.endpoints, .ca_file = "/nonexistent/ca.crt"};
    ASSERT_EQ(ss_grpc_new(&bad, &g, why, sizeof why), SS_E_INVAL);
    ASSERT_TRUE(strncmp(why, "cannot use the CA file /nonexistent/ca.crt: ", 44) == 0);
    etcd_cluster_stop(&ec);
}

/* Which failures of a call say that etcd did not run it and never will
 * (the batch is answered with an error), and which may pass (it is
 * settled or sent again). etcd answers a full database and a member
 * overloaded for a while with the same status, RESOURCE_EXHAUSTED: only
 * the message tells them apart, and "too many requests" must not become
 * a "quota exceeded" answer. (Needs no cluster: the messages are etcd
 * 3.4's, from its api/v3rpc/rpctypes.) */
TEST(etcd_kv_failures_that_refuse_and_that_pass)
{
    struct {
        int rc, status;
        const char *message;
        bool refused;
    } cases[] = {
        {SS_E_SERVER, 8, "etcdserver: mvcc: database space exceeded", true},
        {SS_E_SERVER, 8, "etcdserver: too many requests", false},
        {SS_E_SERVER, 3, "etcdserver: too many operations in txn request", true},
        {SS_E_SERVER, 3, "etcdserver: request is too large", true},
        {SS_E_SERVER, 7, "etcdserver: permission denied", true},
        {SS_E_SERVER, 14, "etcdserver: leader changed", false},
        {SS_E_SERVER, 14, "etcdserver: no leader", false},
        {SS_E_SERVER, 4, "context deadline exceeded", false},
        {SS_E_TIMEOUT, 0, "no answer in time", false},
        {SS_E_IO, 0, "connection lost", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ss_grpc_call c;
        memset(&c, 0, sizeof c);
        c.rc = cases[i].rc;
        c.status = cases[i].status;
        snprintf(c.message, sizeof c.message, "%s", cases[i].message);
        if (ss_etcd__refused(&c) != cases[i].refused)
            printf("  %s: refused %d, expected %d\n", cases[i].message, !cases[i].refused, cases[i].refused);
        ASSERT_EQ(ss_etcd__refused(&c), cases[i].refused);
    }
}
