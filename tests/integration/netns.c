/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* netns.c - a network of the test's own (netns.h). */
#define _GNU_SOURCE /* setns */
#include "netns.h"

#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

#define NETNS_DIR "/run/netns"

bool netns_available(void)
{
    return geteuid() == 0 && access("/usr/sbin/ip", X_OK) == 0 && access("/usr/sbin/nft", X_OK) == 0;
}

/* Run `ip` with the words given (NULL-ended); fail the test unless it
 * succeeds. */
static void netns_ip(const char *first, ...)
{
    char *argv[24] = {"ip"};
    int k = 1;
    va_list ap;
    va_start(ap, first);
    for (const char *w = first; w && k < 23; w = va_arg(ap, const char *))
        argv[k++] = (char *)w;
    va_end(ap);
    argv[k] = NULL;
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    if (r.status != 0) {
        fprintf(stderr, "  ip");
        for (int i = 1; i < k; i++)
            fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, ": %s%s", r.out, r.err);
    }
    ASSERT_EQ(r.status, 0);
    run_free(&r);
}

void netns_up(struct netns_net *n, int hosts)
{
    ASSERT_TRUE(hosts >= 1 && hosts <= NETNS_HOSTS_MAX);
    memset(n, 0, sizeof *n);
    n->hosts = hosts;
    n->current = NETNS_ROOT;
    n->root_fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    ASSERT_TRUE(n->root_fd >= 0);
    /* Named after this test's process (the runner removes what a failed
     * test left: netns_remove_left_by). */
    snprintf(n->hub, sizeof n->hub, "sst%d-hub", (int)getpid());
    netns_ip("netns", "add", n->hub, NULL);
    netns_ip("-n", n->hub, "link", "set", "lo", "up", NULL);
    netns_ip("-n", n->hub, "link", "add", "br0", "type", "bridge", NULL);
    netns_ip("-n", n->hub, "addr", "add", "10.200.0.1/24", "dev", "br0", NULL);
    netns_ip("-n", n->hub, "link", "set", "br0", "up", NULL);
    for (int i = 0; i < hosts; i++) {
        char veth[16], cidr[24];
        snprintf(n->host[i], sizeof n->host[i], "sst%d-h%d", (int)getpid(), i);
        snprintf(n->addr[i], sizeof n->addr[i], "10.200.0.%d", i + 2);
        snprintf(veth, sizeof veth, "v%d", i);
        snprintf(cidr, sizeof cidr, "%s/24", n->addr[i]);
        netns_ip("netns", "add", n->host[i], NULL);
        netns_ip("-n", n->host[i], "link", "set", "lo", "up", NULL);
        netns_ip("-n", n->hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", n->host[i],
                 NULL);
        netns_ip("-n", n->hub, "link", "set", veth, "master", "br0", "up", NULL);
        netns_ip("-n", n->host[i], "addr", "add", cidr, "dev", "eth0", NULL);
        netns_ip("-n", n->host[i], "link", "set", "eth0", "up", NULL);
    }
}

void netns_enter(struct netns_net *n, int i)
{
    int fd = n->root_fd;
    char path[96];
    if (i != NETNS_ROOT) {
        ASSERT_TRUE(i == NETNS_HUB || (i >= 0 && i < n->hosts));
        snprintf(path, sizeof path, NETNS_DIR "/%s", i == NETNS_HUB ? n->hub : n->host[i]);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
    }
    int rc = setns(fd, CLONE_NEWNET);
    if (fd != n->root_fd)
        close(fd);
    ASSERT_EQ(rc, 0);
    n->current = i;
}

void netns_link(struct netns_net *n, int i, bool up)
{
    ASSERT_TRUE(i >= 0 && i < n->hosts);
    char veth[16];
    snprintf(veth, sizeof veth, "v%d", i);
    netns_ip("-n", n->hub, "link", "set", veth, up ? "up" : "down", NULL);
}

void netns_filter(struct netns_net *n, int i, const char *rules)
{
    ASSERT_TRUE(i >= 0 && i < n->hosts);
    const char *text = rules ? rules : "flush ruleset\n";
    char *argv[] = {"ip", "netns", "exec", n->host[i], "nft", "-f", "-", NULL};
    struct run r;
    run_cmd(argv, text, strlen(text), &r);
    if (r.status != 0)
        fprintf(stderr, "  nft on %s: %s%s", n->host[i], r.out, r.err);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
}

/* Remove the namespace NETNS_DIR/name as `ip netns del` does. */
static void netns_remove(const char *name)
{
    char path[300];
    snprintf(path, sizeof path, NETNS_DIR "/%s", name);
    umount2(path, MNT_DETACH);
    unlink(path);
}

void netns_down(struct netns_net *n)
{
    if (n->current != NETNS_ROOT)
        netns_enter(n, NETNS_ROOT);
    for (int i = 0; i < n->hosts; i++)
        netns_remove(n->host[i]);
    netns_remove(n->hub);
    close(n->root_fd);
    n->hosts = 0;
}
