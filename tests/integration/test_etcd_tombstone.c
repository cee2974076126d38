/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_tombstone.c - a deleted key's tombstone on etcd goes on an
 * etcd lease: no expiry index entry, no sweep; a later SET takes the key
 * off the lease; etcd removes the rest when the lease ends. A commit whose
 * lease was revoked by hand is refused whole by etcd and runs again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

static bool at_least_one(const char *v)
{
    return strtoull(v, NULL, 10) >= 1;
}

static bool at_least_twenty(const char *v)
{
    return strtoull(v, NULL, 10) >= 20;
}

/* etcd's leases (ids in hex, as etcdctl names them): how many, into ids. */
static int lease_ids(const struct etcd_cluster *c, char ids[][32], int max)
{
    char out[4096];
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "lease", "list", NULL), 0);
    int n = 0;
    for (char *line = strtok(out, "\n"); line && n < max; line = strtok(NULL, "\n"))
        if (strncmp(line, "found ", 6) != 0 && line[0] != '\0')
            snprintf(ids[n++], sizeof ids[0], "%s", line);
    return n;
}

/* The keys attached to lease id, into out. */
static void lease_keys(const struct etcd_cluster *c, const char *id, char *out, size_t n)
{
    ASSERT_EQ(etcd_cluster_ctl(c, out, n, "lease", "timetolive", id, "--keys", NULL), 0);
}

TEST(cluster_tombstones_go_on_an_etcd_lease)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct broker b;
    broker_on_etcd(&b, "leaser", c.endpoints, "sys_interval 1\nplugin_opt_etcd_tombstone_ms 5000\n");
    struct client w;
    char rw[64], v[32];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    /* The first deletion finds no lease: its tombstone carries its end,
     * at which a sweep removes it, and a lease is asked for. */
    ASSERT_REPLY(request(&w, rw, "1", NULL, NULL, W("SET", "first", "v")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "2", NULL, NULL, W("DEL", "first")), ":1\r\n");
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/tombstone_leases", at_least_one, v, sizeof v));

    /* Twenty keys deleted: twenty tombstones. */
    enum { N = 20 };
    char key[N][24];
    for (int i = 0; i < N; i++) {
        snprintf(key[i], sizeof key[i], "leased-%02d", i);
        ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", key[i], "v")), "+OK\r\n");
    }
    uint64_t t0 = now_ms(); /* no deletion began before */
    for (int i = 0; i < N; i++)
        ASSERT_REPLY(request(&w, rw, "d", NULL, NULL, W("DEL", key[i])), ":1\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/k/leased-"), N);
    char out[16384];
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/tombstones_leased", at_least_twenty, v, sizeof v));
    /* Each is attached to a lease of this broker's (not the claim's). */
    char ids[16][32];
    int nids = lease_ids(&c, ids, 16);
    int attached = 0;
    for (int l = 0; l < nids; l++) {
        lease_keys(&c, ids[l], out, sizeof out);
        for (int i = 0; i < N; i++) {
            char name[64];
            snprintf(name, sizeof name, "statestore/k/%.16s", key[i]);
            if (strstr(out, name))
                attached++;
        }
    }
    ASSERT_EQ(attached, N);
    ASSERT_REPLY(request(&w, rw, "g", NULL, NULL, W("GET", key[0])), "$-1\r\n");
    /* Written again, a key leaves the lease: it stays when the lease ends. */
    ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", key[0], "again")), "+OK\r\n");
    for (int l = 0; l < nids; l++) {
        lease_keys(&c, ids[l], out, sizeof out);
        ASSERT_TRUE(strstr(out, "statestore/k/leased-00") == NULL);
    }
    /* Every tombstone stays etcd_tombstone_ms after its deletion... */
    int checks = 0;
    for (; now_ms() - t0 < 5000; checks++) {
        ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/k/leased-"), N);
        usleep(100 * 1000);
    }
    ASSERT_TRUE(checks > 0); /* the checks above took less than 5 s */
    /* ...and the others go after it (and the window, 2 s; etcd looks
     * for ended leases every 500 ms), and the first one, swept at its
     * end, and nothing else: no key of an expiry index either. */
    etcd_cluster_await_count(&c, "statestore/k/leased-", 1, 10000);
    uint64_t took = now_ms() - t0;
    etcd_cluster_await_count(&c, "statestore/k/first", 0, 10000);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/x/"), 0);
    ASSERT_REPLY(request(&w, rw, "g", NULL, NULL, W("GET", key[0])), "$5\r\nagain\r\n");
    ASSERT_REPLY(request(&w, rw, "g", NULL, NULL, W("GET", key[1])), "$-1\r\n");
    ASSERT_EQ(broker_log_count(&b, "lease for tombstones"), 0);
    printf("  %d tombstones on a lease, all there %d times in their first 5 s; "
           "etcd removed them %llu ms after the deletions began (etcd_tombstone_ms 5000); the key written "
           "again stayed\n",
           N - 1, checks, (unsigned long long)took);
    client_close(&w);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* Whether key is attached to one of etcd's leases. */
static bool on_a_lease(const struct etcd_cluster *c, const char *key)
{
    char ids[16][32], out[16384];
    int nids = lease_ids(c, ids, 16);
    for (int l = 0; l < nids; l++) {
        lease_keys(c, ids[l], out, sizeof out);
        if (strstr(out, key) != NULL)
            return true;
    }
    return false;
}

/* Revoke every lease but the claim's (l/<node id>). */
static int revoke_tombstone_leases(const struct etcd_cluster *c)
{
    char ids[16][32], out[16384];
    int nids = lease_ids(c, ids, 16), revoked = 0;
    for (int l = 0; l < nids; l++) {
        lease_keys(c, ids[l], out, sizeof out);
        if (strstr(out, "statestore/l/") != NULL)
            continue;
        ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "lease", "revoke", ids[l], NULL), 0);
        revoked++;
    }
    return revoked;
}

TEST(cluster_tombstone_lease_revoked_by_hand_refuses_the_commit_which_runs_again)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct broker b;
    broker_on_etcd(&b, "revoked", c.endpoints, "sys_interval 1\n");
    struct client w, o;
    char rw[64], ro[64], v[32];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&o, b.port, "observer", ro, sizeof ro);
    ASSERT_REPLY(request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", "r1")), "+OK\r\n");
    const char *keys[] = {"r0", "r1"};
    for (int i = 0; i < 2; i++)
        ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", keys[i], "v")), "+OK\r\n");
    ASSERT_TRUE(client_wait(&o, 2000) != NULL); /* r1's SET */
    /* r0's deletion asks for a lease; then the leases are revoked by hand. */
    ASSERT_REPLY(request(&w, rw, "d", NULL, NULL, W("DEL", "r0")), ":1\r\n");
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/tombstone_leases", at_least_one, v, sizeof v));
    ASSERT_TRUE(revoke_tombstone_leases(&c) >= 1);
    /* r1's commit names a lease etcd no longer has: refused whole, it runs
     * again (its tombstone with an end of its own, or on a lease granted
     * since), and is answered and notified once. */
    ASSERT_REPLY(request(&w, rw, "d", NULL, NULL, W("DEL", "r1")), ":1\r\n");
    struct msg *m = client_wait(&o, 2000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    ASSERT_EQ(client_drain(&o, 300), 0);
    ASSERT_REPLY(request(&w, rw, "g", NULL, NULL, W("GET", "r1")), "$-1\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/k/r1"), 1); /* its tombstone */
    ASSERT_EQ(etcd_cluster_count_keys(&c, "statestore/x/"), 0);
    ASSERT_TRUE(sys_figure_until(b.port, "etcd/lease_refusals", at_least_one, v, sizeof v));
    ASSERT_STR(v, strlen(v), "1");
    ASSERT_EQ(broker_log_count(&b, "a lease for tombstones was gone before its time"), 1);
    /* Its tombstone goes in time: on a lease granted since, or with an
     * end of its own that the broker knows and sweeps then. */
    if (!on_a_lease(&c, "statestore/k/r1"))
        ASSERT_TRUE(sys_figure_until(b.port, "etcd/deadlines", at_least_one, v, sizeof v));
    /* Deletions go on a new lease again soon (it is asked for at once). */
    bool leased = false;
    uint64_t t0 = now_ms();
    for (int i = 0; !leased && now_ms() - t0 < 5000; i++) {
        char k[16], name[64];
        snprintf(k, sizeof k, "q%d", i);
        snprintf(name, sizeof name, "statestore/k/%s", k);
        ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", k, "v")), "+OK\r\n");
        ASSERT_REPLY(request(&w, rw, "d", NULL, NULL, W("DEL", k)), ":1\r\n");
        leased = on_a_lease(&c, name);
        if (!leased)
            usleep(100 * 1000);
    }
    ASSERT_TRUE(leased);
    printf("  a commit on a revoked lease was refused by etcd, ran again, and was answered and notified "
           "once; the next deletion went on a new lease\n");
    client_close(&w);
    client_close(&o);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}
