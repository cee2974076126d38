/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* etcd_cluster.h - a real etcd cluster for tests: n members (1 to 5) on
 * free loopback ports, data under the test's directory, every PID kept
 * and stopped by the test. The etcd binary is $SS_ETCD, or Debian's,
 * unpacked under build/etcd by scripts/etcd-tools.sh. */
#ifndef SS_ETCD_CLUSTER_H
#define SS_ETCD_CLUSTER_H

#include <stdbool.h>
#include <sys/types.h>

#define ETCD_MEMBERS_MAX 5

struct netns_net;

/* TLS on the members' client URLs (peers stay on plain loopback). */
struct etcd_tls {
    const char *ca, *cert, *key; /* PEM files */
    bool client_auth;            /* members require a client certificate */
    const char *client_cert, *client_key; /* what the harness itself uses */
};

struct etcd_cluster {
    int n;
    const struct etcd_tls *tls;
    const char *extra_arg; /* one more flag for every member, or NULL */
    struct netns_net *net;  /* members on hosts of a test network (netns.h), or NULL: loopback */
    int host[ETCD_MEMBERS_MAX]; /* each member's host there */
    pid_t pid[ETCD_MEMBERS_MAX];
    int client_port[ETCD_MEMBERS_MAX];
    int peer_port[ETCD_MEMBERS_MAX];
    char endpoints[512]; /* "http://127.0.0.1:P1,http://127.0.0.1:P2,..." (https with TLS; hosts' addresses on a net) */
    char initial[512];   /* the --initial-cluster of every member */
    char peer_via[ETCD_MEMBERS_MAX][64]; /* the peer URL each member advertises, "" for its own */
};

/* Start n members and wait until the cluster answers through every
 * member; fails the test otherwise. */
void etcd_cluster_start(struct etcd_cluster *c, int n);
/* The same with TLS on the client URLs (https://; tls is borrowed). */
void etcd_cluster_start_tls(struct etcd_cluster *c, int n, const struct etcd_tls *tls);
/* The same with one more flag for every member (e.g.
 * "--quota-backend-bytes=16777216"; borrowed). */
void etcd_cluster_start_with(struct etcd_cluster *c, int n, const char *extra_arg);
/* The same with member i on host hosts[i] of net (netns.h), on its
 * address, ports 2379 and 2380; the harness itself reaches them from the
 * net's hub, so that a cut host does not cut the test off. */
void etcd_cluster_start_on(struct etcd_cluster *c, int n, struct netns_net *net, const int *hosts);
/* The same with one more flag for every member (NULL: none). */
void etcd_cluster_start_on_with(struct etcd_cluster *c, int n, struct netns_net *net, const int *hosts,
                                const char *extra_arg);
/* The same with the members reaching member i through peer_via[i] (e.g.
 * a delaying proxy's URL in the hub) rather than at its own address, and
 * an election timeout of 6 s, for round trips of up to 600 ms. */
void etcd_cluster_start_on_via(struct etcd_cluster *c, int n, struct netns_net *net, const int *hosts,
                               const char *const *peer_via);
/* Run etcdctl against the cluster with the given arguments (NULL-ended);
 * its exit status, its output in out (n bytes, NUL-terminated). */
int etcd_cluster_ctl(const struct etcd_cluster *c, char *out, size_t n, ...);
/* Free the space of what was deleted, as an operator does before
 * disarming a NOSPACE alarm: compaction to the current revision, then
 * defragmentation of every member until each one's database is smaller
 * than below bytes (a member's compaction runs after the call returns:
 * defragmented before it, a member keeps its size). Fails the test
 * after 10 s. */
void etcd_cluster_reclaim(const struct etcd_cluster *c, long long below);
/* Stop every member still running (SIGTERM, then SIGKILL after 5 s). */
void etcd_cluster_stop(struct etcd_cluster *c);
/* The index of the member that leads now, or -1 when no live member
 * knows a leader. */
int etcd_cluster_leader(const struct etcd_cluster *c);
/* kill -9 member i and reap it. */
void etcd_member_kill9(struct etcd_cluster *c, int i);
/* SIGSTOP member i and wait (2 s at most) until every thread of it has
 * stopped: kill returns before a thread running on another CPU stops. */
void etcd_member_sigstop(struct etcd_cluster *c, int i);
/* `etcdctl endpoint hashkv` of every running member (a hash of its whole
 * key-value history): true when all are equal; *n: how many answered. */
bool etcd_cluster_hashkv_equal(const struct etcd_cluster *c, int *n);
/* Wait (5 s at most) until every member's hashkv is equal, and fail the
 * test if they never are (a member that was stopped may catch up late). */
void etcd_cluster_assert_same_history(const struct etcd_cluster *c);
/* How many keys the cluster holds under prefix (etcdctl get --prefix). */
int etcd_cluster_count_keys(const struct etcd_cluster *c, const char *prefix);
/* Wait up to ms for the keys under prefix to number want; fails the
 * test otherwise. */
void etcd_cluster_await_count(const struct etcd_cluster *c, const char *prefix, int want, int ms);
/* Start member i again on its data and wait until it answers with a
 * leader; fails the test after 30 s. */
void etcd_member_restart(struct etcd_cluster *c, int i);
/* The URL of member i. */
const char *etcd_member_url(const struct etcd_cluster *c, int i, char *buf, size_t n);

#endif
