/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* netns.h - a network of the test's own, for faults the kernel makes:
 * a hub namespace holding a bridge, and hosts, each a network namespace
 * joined to the bridge by a veth pair. Host i has the address
 * 10.200.0.<i + 2>; the hub, 10.200.0.1; each has its own loopback.
 * Nothing leaves these namespaces: they have no route anywhere else.
 *
 * A process lives in the namespace of the thread that started it:
 * netns_enter(n, i) before broker_start or etcd_cluster_start puts what
 * they start on host i, and the test's own connections made meanwhile
 * come from there (an MQTT client of a broker on its loopback, say).
 *
 * Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN), iproute2 and nftables. The
 * namespaces are named "sst<pid>-..." after the test's process, and the
 * test runner (tests/main.c) removes any a test left behind. */
#ifndef SS_NETNS_H
#define SS_NETNS_H

#include <stdbool.h>

#define NETNS_HOSTS_MAX 8
#define NETNS_HUB (-2)  /* netns_enter: the hub */
#define NETNS_ROOT (-1) /* netns_enter: where the test started */

struct netns_net {
    int hosts;
    char hub[32];
    char host[NETNS_HOSTS_MAX][32];
    char addr[NETNS_HOSTS_MAX][24];
    int root_fd; /* the test thread's own namespace */
    int current; /* where the test thread is: a host, NETNS_HUB or NETNS_ROOT */
};

/* Whether this machine lets the tests make namespaces (root, ip). */
bool netns_available(void);
/* Make the hub and hosts 0..hosts-1, all linked; fails the test if it
 * cannot. */
void netns_up(struct netns_net *n, int hosts);
/* Back to the test's namespace, and remove every namespace made (the
 * processes in them should be stopped first). */
void netns_down(struct netns_net *n);
/* Move the calling thread to host i (or NETNS_HUB, NETNS_ROOT). */
void netns_enter(struct netns_net *n, int i);
/* Host i's link to the bridge up or down: down cuts it off from every
 * other host, its loopback untouched. */
void netns_link(struct netns_net *n, int i, bool up);

/* Load nftables rules (nft's own syntax, as `nft -f` reads it) into host
 * i's namespace, e.g. a table with an input chain that drops what comes
 * from one address, or 10% of everything ("numgen random mod 10 < 1
 * drop"); NULL clears every rule there. This kernel has no netem: loss
 * comes from rules, delay from a proxy. */
void netns_filter(struct netns_net *n, int i, const char *rules);

#endif
