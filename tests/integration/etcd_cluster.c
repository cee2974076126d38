/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* etcd_cluster.c - a real etcd cluster for tests (etcd_cluster.h). */
#include "etcd_cluster.h"

#include <dirent.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../etcd/grpc.h"
#include "../../etcd/kv.h"
#include "../test.h"
#include "harness.h"
#include "netns.h"

static const char *etcd_binary(void)
{
    const char *e = getenv("SS_ETCD");
    return e && e[0] ? e : "build/etcd/root/usr/bin/etcd";
}

/* Member i's address: loopback, or its host's. */
static const char *etcd_member_addr(const struct etcd_cluster *c, int i)
{
    return c->net ? c->net->addr[c->host[i]] : "127.0.0.1";
}

const char *etcd_member_url(const struct etcd_cluster *c, int i, char *buf, size_t n)
{
    snprintf(buf, n, "%s://%s:%d", c->tls ? "https" : "http", etcd_member_addr(c, i), c->client_port[i]);
    return buf;
}

/* On a test network the harness talks to the members from the hub (a
 * host cut off does not cut the test off); returns where the thread
 * was, for etcd_from_back. */
static int etcd_from_hub(const struct etcd_cluster *c)
{
    if (c->net == NULL)
        return NETNS_ROOT;
    int was = c->net->current;
    netns_enter(c->net, NETNS_HUB);
    return was;
}

static void etcd_from_back(const struct etcd_cluster *c, int was)
{
    if (c->net)
        netns_enter(c->net, was);
}

static pid_t etcd_spawn(const struct etcd_cluster *c, int i, const char *initial)
{
    char name[16], dir[600], client[64], peer[64], advertised[64], out[600], err[600];
    snprintf(name, sizeof name, "m%d", i);
    snprintf(dir, sizeof dir, "%s/etcd-%d", test_tmpdir(), i);
    etcd_member_url(c, i, client, sizeof client);
    snprintf(peer, sizeof peer, "http://%s:%d", etcd_member_addr(c, i), c->peer_port[i]);
    snprintf(advertised, sizeof advertised, "%s", c->peer_via[i][0] ? c->peer_via[i] : peer);
    snprintf(out, sizeof out, "%s/etcd-%d.out", test_tmpdir(), i);
    snprintf(err, sizeof err, "%s/etcd-%d.log", test_tmpdir(), i);
    /* Short election timings: a lost leader is replaced within about a
     * second, so that fault tests stay short. */
    char *argv[] = {(char *)etcd_binary(), "--name", name, "--data-dir", dir,
                    "--listen-client-urls", client, "--advertise-client-urls", client,
                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", advertised,
                    "--initial-cluster", (char *)initial, "--initial-cluster-state", "new",
                    "--initial-cluster-token", "statestore-test",
                    "--heartbeat-interval", "50", "--election-timeout", "500",
                    "--logger", "zap", "--log-outputs", "stderr", NULL, NULL, NULL, NULL, NULL, NULL,
                    NULL, NULL};
    char certf[700], keyf[700], caf[700];
    if (c->tls) {
        size_t k = 0;
        while (argv[k])
            k++;
        snprintf(certf, sizeof certf, "--cert-file=%s", c->tls->cert);
        snprintf(keyf, sizeof keyf, "--key-file=%s", c->tls->key);
        snprintf(caf, sizeof caf, "--trusted-ca-file=%s", c->tls->ca);
        argv[k++] = certf;
        argv[k++] = keyf;
        argv[k++] = caf;
        if (c->tls->client_auth)
            argv[k++] = "--client-cert-auth";
    }
    if (c->extra_arg) {
        size_t k = 0;
        while (argv[k])
            k++;
        argv[k] = (char *)c->extra_arg;
    }
    /* On a test network, the member starts in its host's namespace. */
    int was = c->net ? c->net->current : NETNS_ROOT;
    if (c->net)
        netns_enter(c->net, c->host[i]);
    pid_t pid = spawn_cmd(argv, out, err);
    if (c->net)
        netns_enter(c->net, was);
    return pid;
}

static bool etcd_member_status_here(const struct etcd_cluster *c, int i, uint64_t *self, uint64_t *leader);

/* Ask member i for its status: true when it answered, with its own id
 * and its leader's (0: none). */
static bool etcd_member_status(const struct etcd_cluster *c, int i, uint64_t *self, uint64_t *leader)
{
    *self = *leader = 0;
    int was = etcd_from_hub(c);
    bool answered = etcd_member_status_here(c, i, self, leader);
    etcd_from_back(c, was);
    return answered;
}

static bool etcd_member_status_here(const struct etcd_cluster *c, int i, uint64_t *self, uint64_t *leader)
{
    if (c->net == NULL && !port_open(c->client_port[i]))
        return false;
    char url[64];
    ss_grpc_options o = {.endpoints = etcd_member_url(c, i, url, sizeof url)};
    if (c->tls) {
        o.ca_file = c->tls->ca;
        o.cert_file = c->tls->client_cert;
        o.key_file = c->tls->client_key;
    }
    ss_grpc *g;
    if (ss_grpc_new(&o, &g, NULL, 0) != SS_OK)
        return false;
    ss_grpc_call call = {.method = SS_ETCD_STATUS_METHOD, .timeout_ms = 2000};
    bool answered = ss_grpc_call_wait(g, &call) == SS_OK &&
                    ss_etcd_status_unpack(&call.reply, leader, NULL, 0) == SS_OK;
    if (answered)
        *self = ss_etcd_status_member(&call.reply);
    ss_grpc_call_clear(&call);
    ss_grpc_free(g);
    return answered;
}

/* True when member i answers a status request with a leader (etcd opens
 * its client port before it has one). */
static bool etcd_member_ready(const struct etcd_cluster *c, int i)
{
    uint64_t self, leader;
    return etcd_member_status(c, i, &self, &leader) && leader != 0;
}

int etcd_cluster_leader(const struct etcd_cluster *c)
{
    uint64_t ids[ETCD_MEMBERS_MAX] = {0}, leader = 0;
    for (int i = 0; i < c->n; i++) {
        uint64_t l;
        if (c->pid[i] > 0 && etcd_member_status(c, i, &ids[i], &l) && l)
            leader = l;
    }
    for (int i = 0; i < c->n; i++)
        if (leader && ids[i] == leader)
            return i;
    return -1;
}

static void etcd_member_wait_ready(struct etcd_cluster *c, int i)
{
    for (int tries = 0; !etcd_member_ready(c, i); tries++) {
        int status;
        if (waitpid(c->pid[i], &status, WNOHANG) == c->pid[i]) {
            c->pid[i] = 0;
            etcd_cluster_stop(c);
            test_fail(__FILE__, __LINE__, "an etcd member exited at start (see etcd-N.log)");
        }
        if (tries > 300) {
            etcd_cluster_stop(c);
            test_fail(__FILE__, __LINE__, "the etcd cluster did not become ready in 30 s");
        }
        usleep(100000);
    }
}

void etcd_member_kill9(struct etcd_cluster *c, int i)
{
    if (c->pid[i] <= 0)
        return;
    kill(c->pid[i], SIGKILL);
    waitpid(c->pid[i], NULL, 0);
    c->pid[i] = 0;
}

void etcd_member_restart(struct etcd_cluster *c, int i)
{
    ASSERT_TRUE(c->pid[i] == 0);
    c->pid[i] = etcd_spawn(c, i, c->initial);
    etcd_member_wait_ready(c, i);
}

static void etcd_cluster__start(struct etcd_cluster *c, int n, const struct etcd_tls *tls, const char *extra,
                                struct netns_net *net, const int *hosts, const char *const *peer_via)
{
    ASSERT_TRUE(n >= 1 && n <= ETCD_MEMBERS_MAX);
    memset(c, 0, sizeof *c);
    for (int i = 0; peer_via && i < n; i++)
        snprintf(c->peer_via[i], sizeof c->peer_via[i], "%s", peer_via[i]);
    c->n = n;
    c->tls = tls;
    c->extra_arg = extra;
    c->net = net;
    char *initial = c->initial;
    size_t used = 0, eused = 0;
    for (int i = 0; i < n; i++) {
        if (net) { /* a host of its own: etcd's own ports */
            c->host[i] = hosts[i];
            c->client_port[i] = 2379;
            c->peer_port[i] = 2380;
        } else {
            c->client_port[i] = free_port();
            do
                c->peer_port[i] = free_port();
            while (c->peer_port[i] == c->client_port[i]);
        }
        char peer[64];
        snprintf(peer, sizeof peer, "http://%s:%d", etcd_member_addr(c, i), c->peer_port[i]);
        used += (size_t)snprintf(initial + used, sizeof c->initial - used, "%sm%d=%s", i ? "," : "", i,
                                 c->peer_via[i][0] ? c->peer_via[i] : peer);
        eused += (size_t)snprintf(c->endpoints + eused, sizeof c->endpoints - eused, "%s%s://%s:%d", i ? "," : "",
                                  tls ? "https" : "http", etcd_member_addr(c, i), c->client_port[i]);
    }
    for (int i = 0; i < n; i++)
        c->pid[i] = etcd_spawn(c, i, initial);
    for (int i = 0; i < n; i++)
        etcd_member_wait_ready(c, i);
}

void etcd_cluster_start(struct etcd_cluster *c, int n)
{
    etcd_cluster__start(c, n, NULL, NULL, NULL, NULL, NULL);
}

void etcd_cluster_start_tls(struct etcd_cluster *c, int n, const struct etcd_tls *tls)
{
    etcd_cluster__start(c, n, tls, NULL, NULL, NULL, NULL);
}

void etcd_cluster_start_with(struct etcd_cluster *c, int n, const char *extra_arg)
{
    etcd_cluster__start(c, n, NULL, extra_arg, NULL, NULL, NULL);
}

void etcd_cluster_start_on(struct etcd_cluster *c, int n, struct netns_net *net, const int *hosts)
{
    etcd_cluster__start(c, n, NULL, NULL, net, hosts, NULL);
}

void etcd_cluster_start_on_with(struct etcd_cluster *c, int n, struct netns_net *net, const int *hosts,
                                const char *extra_arg)
{
    etcd_cluster__start(c, n, NULL, extra_arg, net, hosts, NULL);
}

void etcd_cluster_start_on_via(struct etcd_cluster *c, int n, struct netns_net *net, const int *hosts,
                               const char *const *peer_via)
{
    /* Elections as etcd advises for its peers' round trip (a delay the
     * test makes, up to 600 ms): ten times it. */
    etcd_cluster__start(c, n, NULL, "--election-timeout=6000", net, hosts, peer_via);
}

/* True when every thread of pid is stopped (state T in /proc). */
static bool etcd_all_threads_stopped(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return false;
    bool all = true;
    struct dirent *t;
    while (all && (t = readdir(d)) != NULL) {
        if (t->d_name[0] == '.')
            continue;
        char stat[320], line[512];
        snprintf(stat, sizeof stat, "/proc/%d/task/%s/stat", (int)pid, t->d_name);
        FILE *f = fopen(stat, "r");
        if (f == NULL)
            continue; /* the thread ended */
        const char *close_paren = NULL;
        if (fgets(line, sizeof line, f))
            close_paren = strrchr(line, ')');
        fclose(f);
        /* "pid (comm) S ...": the state follows the command's ')'. */
        all = close_paren != NULL && close_paren[1] == ' ' && (close_paren[2] == 'T' || close_paren[2] == 't');
    }
    closedir(d);
    return all;
}

void etcd_member_sigstop(struct etcd_cluster *c, int i)
{
    ASSERT_EQ(kill(c->pid[i], SIGSTOP), 0);
    for (int waited = 0; !etcd_all_threads_stopped(c->pid[i]); waited++) {
        ASSERT_TRUE(waited < 2000);
        usleep(1000);
    }
}

/* etcdctl beside the etcd binary, into ctl. */
static void etcdctl_path(char *ctl, size_t n)
{
    snprintf(ctl, n, "%s", etcd_binary());
    char *slash = strrchr(ctl, '/');
    snprintf(slash ? slash + 1 : ctl, n - (size_t)(slash ? slash + 1 - ctl : 0), "etcdctl");
}

int etcd_cluster_ctl(const struct etcd_cluster *c, char *out, size_t n, ...)
{
    char ctl[600];
    etcdctl_path(ctl, sizeof ctl);
    char *argv[24] = {ctl, "--endpoints", (char *)c->endpoints};
    size_t k = 3;
    va_list ap;
    va_start(ap, n);
    char *a;
    while ((a = va_arg(ap, char *)) != NULL && k < 23)
        argv[k++] = a;
    va_end(ap);
    argv[k] = NULL;
    struct run r;
    int was = etcd_from_hub(c);
    run_cmd(argv, NULL, 0, &r);
    etcd_from_back(c, was);
    snprintf(out, n, "%s%s", r.out ? r.out : "", r.err ? r.err : "");
    int status = r.status;
    run_free(&r);
    return status;
}

void etcd_cluster_reclaim(const struct etcd_cluster *c, long long below)
{
    char out[8192];
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "endpoint", "status", "--write-out=fields", NULL), 0);
    const char *rev = strstr(out, "\"Revision\" : ");
    ASSERT_TRUE(rev != NULL);
    char revision[32];
    snprintf(revision, sizeof revision, "%lld", strtoll(rev + 13, NULL, 10));
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "compact", "--physical", revision, NULL), 0);
    for (uint64_t t0 = now_ms();; usleep(200000)) {
        ASSERT_TRUE(now_ms() - t0 < 10000);
        ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "defrag", "--cluster", NULL), 0);
        ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "endpoint", "status", "--write-out=fields", NULL), 0);
        bool small = true;
        int members = 0;
        for (const char *p = out; (p = strstr(p, "\"DBSize\" : ")) != NULL; p++, members++)
            small = small && strtoll(p + 11, NULL, 10) < below;
        if (small && members == c->n)
            return;
    }
}

int etcd_cluster_count_keys(const struct etcd_cluster *c, const char *prefix)
{
    char ctl[600];
    etcdctl_path(ctl, sizeof ctl);
    char *argv[] = {ctl, "--endpoints", (char *)c->endpoints, "get", "--prefix", "--keys-only", (char *)prefix,
                    NULL};
    struct run r;
    int was = etcd_from_hub(c);
    run_cmd(argv, NULL, 0, &r);
    etcd_from_back(c, was);
    ASSERT_EQ(r.status, 0);
    /* One line per key, each followed by an empty line. */
    int n = 0;
    for (const char *p = r.out ? r.out : ""; *p; p++)
        if (*p != '\n' && (p == r.out || p[-1] == '\n'))
            n++;
    run_free(&r);
    return n;
}

void etcd_cluster_await_count(const struct etcd_cluster *c, const char *prefix, int want, int ms)
{
    int got = -1;
    for (int waited = 0; (got = etcd_cluster_count_keys(c, prefix)) != want && waited < ms; waited += 100)
        usleep(100 * 1000);
    ASSERT_EQ(got, want);
}

bool etcd_cluster_hashkv_equal(const struct etcd_cluster *c, int *n)
{
    char ctl[600];
    etcdctl_path(ctl, sizeof ctl);
    char first[64] = "";
    bool equal = true;
    *n = 0;
    for (int i = 0; i < c->n; i++) {
        if (c->pid[i] <= 0)
            continue;
        char url[64];
        char *argv[] = {ctl, "--endpoints", (char *)etcd_member_url(c, i, url, sizeof url), "endpoint", "hashkv",
                        NULL};
        struct run r;
        int was = etcd_from_hub(c);
        run_cmd(argv, NULL, 0, &r);
        etcd_from_back(c, was);
        /* "http://127.0.0.1:P, HASH" */
        const char *comma = r.status == 0 && r.out ? strstr(r.out, ", ") : NULL;
        ASSERT_TRUE(comma != NULL);
        char hash[64];
        snprintf(hash, sizeof hash, "%.*s", (int)strcspn(comma + 2, "\n"), comma + 2);
        run_free(&r);
        if (*n == 0)
            snprintf(first, sizeof first, "%s", hash);
        else if (strcmp(first, hash) != 0)
            equal = false;
        (*n)++;
    }
    return equal;
}

void etcd_cluster_assert_same_history(const struct etcd_cluster *c)
{
    int members = 0;
    bool equal = false;
    for (int tries = 0; tries < 50 && !equal; tries++) {
        equal = etcd_cluster_hashkv_equal(c, &members);
        if (!equal)
            usleep(100000);
    }
    ASSERT_TRUE(equal && members == c->n);
}

void etcd_cluster_stop(struct etcd_cluster *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->pid[i] > 0)
            kill(c->pid[i], SIGTERM);
    for (int i = 0; i < c->n; i++) {
        if (c->pid[i] <= 0)
            continue;
        int status;
        for (int waited = 0; waitpid(c->pid[i], &status, WNOHANG) == 0; waited += 10) {
            if (waited == 5000)
                kill(c->pid[i], SIGKILL);
            usleep(10000);
        }
        c->pid[i] = 0;
    }
}
