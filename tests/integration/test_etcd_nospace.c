/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_nospace.c - a store on an etcd cluster that is out of space
 * (its --quota-backend-bytes reached: the NOSPACE alarm refuses every
 * put). A full store must still be read, shrunk and expired: reads
 * answer, deletions succeed, expiries are notified, writes that store
 * anything are answered "quota exceeded", $SYS and the log say why, and
 * writes come back once an operator frees space, with the usage counter
 * of max_keys counted again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "cluster_util.h"
#include "delay_proxy.h"
#include "etcd_cluster.h"
#include "harness.h"

#define QUOTA "-ERR the quota has been exceeded\r\n"

/* Is the sentinel there (CLUSTER.md: reads confirmed by the markers)?
 * A deletion without a commit marker, as out of space, takes it along. */
static bool sentinel_there(const struct etcd_cluster *c)
{
    char out[4096];
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "get", "full/s/marked", NULL), 0);
    return strstr(out, "full/s/marked") != NULL;
}

TEST(cluster_out_of_space_reads_deletions_and_expiry_go_on)
{
    struct etcd_cluster c;
    etcd_cluster_start_with(&c, 3, "--quota-backend-bytes=16777216");
    struct broker b = {0};
    snprintf(b.name, sizeof b.name, "full");
    snprintf(b.data, sizeof b.data, "%s/data-full", test_tmpdir());
    snprintf(b.extra, sizeof b.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix full/\n"
             "plugin_opt_node_id full\nsys_interval 1\nplugin_opt_max_keys 1000\n", c.endpoints);
    broker_start(&b);
    struct client w, o;
    char rw[64], ro[64];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&o, b.port, "observer", ro, sizeof ro);
    struct msg *m = request(&w, rw, "l", NULL, NULL, W("SET", "live", "v"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&w, rw, "d", NULL, NULL, W("SET", "doomed", "x"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&o, ro, "n", NULL, NULL, W("KEYNOTIFY", "short"));
    PAYLOAD(m, "+OK\r\n");
    /* Expires while the cluster is full. */
    uint64_t set_at = now_ms();
    m = request(&w, rw, "s", NULL, NULL, W("SET", "short", "s", "PX", "9000"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_TRUE(client_wait(&o, 2000) != NULL); /* its SET */
    ASSERT_TRUE(sentinel_there(&c));

    /* Fill the cluster with values of 512 KiB until it refuses. */
    static char big[512 * 1024];
    memset(big, 'f', sizeof big - 1);
    int stored = 0;
    bool full = false;
    for (int i = 0; i < 80 && !full; i++) {
        char key[32];
        snprintf(key, sizeof key, "fill/%d", i);
        m = request(&w, rw, "f", NULL, NULL, W("SET", key, big));
        ASSERT_TRUE(m != NULL);
        if (m->len == (int)strlen(QUOTA) && memcmp(m->payload, QUOTA, m->len) == 0)
            full = true;
        else
            PAYLOAD(m, "+OK\r\n");
        stored += !full;
    }
    ASSERT_TRUE(full);
    ASSERT_TRUE(stored > 4);
    ASSERT_TRUE(now_ms() - set_at < 8000); /* "short" still lives */
    ASSERT_TRUE(broker_log_has(&b, "etcd is out of space"));

    /* Writes and reads in the same batches: every read answers, every
     * write that would store something is refused. */
    for (int i = 0; i < 20; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "w%d", i);
        request_send(&w, rw, corr, NULL, NULL, W("SET", "more", "m"));
        snprintf(corr, sizeof corr, "r%d", i);
        request_send(&w, rw, corr, NULL, NULL, W("GET", "live"));
    }
    int reads = 0, writes = 0;
    for (int i = 0; i < 40; i++) {
        m = client_wait(&w, 10000);
        ASSERT_TRUE(m != NULL && m->corr_len > 0);
        if (m->corr[0] == 'r') {
            PAYLOAD(m, "$1\r\nv\r\n");
            reads++;
        } else {
            PAYLOAD(m, QUOTA);
            writes++;
        }
    }
    ASSERT_EQ(reads, 20);
    ASSERT_EQ(writes, 20);

    /* Deletions shrink it. */
    m = request(&w, rw, "dd", NULL, NULL, W("DEL", "doomed"));
    PAYLOAD(m, ":1\r\n");
    ASSERT_TRUE(!sentinel_there(&c));
    m = request(&w, rw, "gd", NULL, NULL, W("GET", "doomed"));
    PAYLOAD(m, "$-1\r\n");
    m = request(&w, rw, "vd", NULL, NULL, W("VDEL", "fill/0", "not its value"));
    PAYLOAD(m, ":-1\r\n");
    m = request(&w, rw, "df", NULL, NULL, W("DEL", "fill/1"));
    PAYLOAD(m, ":1\r\n");

    /* The expiry is notified, on time, and the key is gone. */
    m = client_wait(&o, 12000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    ASSERT_TRUE(now_ms() - set_at < 9000 + 2000);
    m = request(&w, rw, "gs", NULL, NULL, W("GET", "short"));
    PAYLOAD(m, "$-1\r\n");

    /* $SYS says it (published every second here). */
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    usleep(1500000);
    char *stats[] = {(char *)cli_path(), "-p", port, "stats", NULL};
    struct run r;
    run_cmd(stats, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    const char *f = strstr(r.out, "\netcd/nospace ");
    ASSERT_TRUE(f != NULL);
    ASSERT_EQ(strtol(f + 14, NULL, 10), 1);
    run_free(&r);

    /* A broker started while etcd is full learns SCAN's token key all the
     * same (by a read: etcd refuses a Txn that holds a put even when it
     * would only read), and lists. (It cannot claim its node id, a put,
     * so it writes nothing until there is room: CLUSTER.md.) */
    struct broker late = {0};
    snprintf(late.name, sizeof late.name, "late");
    snprintf(late.data, sizeof late.data, "%s/data-late", test_tmpdir());
    snprintf(late.extra, sizeof late.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix full/\n"
             "plugin_opt_node_id late\nplugin_opt_max_keys 1000\n", c.endpoints);
    broker_start(&late);
    struct client l;
    char rl[64];
    client_connect_rr(&l, late.port, "lister", rl, sizeof rl);
    m = request(&l, rl, "sc", NULL, NULL, W("SCAN", "liv*"));
    PAYLOAD(m, "*1\r\n*1\r\n$4\r\nlive\r\n");
    client_close(&l);
    broker_stop(&late);

    /* An operator frees space: the filler deleted (through the store, as
     * deletions are allowed), compaction, defragmentation, and the alarm
     * disarmed. Writes come back (tried again every few seconds). */
    for (int i = 2; i < stored; i++) {
        char key[32];
        snprintf(key, sizeof key, "fill/%d", i);
        m = request(&w, rw, "df", NULL, NULL, W("DEL", key));
        PAYLOAD(m, ":1\r\n");
    }
    etcd_cluster_reclaim(&c, 8LL << 20); /* half the quota */
    char out[4096];
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "alarm", "disarm", NULL), 0);
    bool back = false;
    for (int i = 0; i < 100 && !back; i++) {
        m = request(&w, rw, "b", NULL, NULL, W("SET", "again", "a"));
        ASSERT_TRUE(m != NULL);
        back = m->len == 5 && memcmp(m->payload, "+OK\r\n", 5) == 0;
        if (!back) {
            PAYLOAD(m, QUOTA);
            usleep(200000);
        }
    }
    ASSERT_TRUE(back);
    ASSERT_TRUE(broker_log_has(&b, "etcd takes writes again"));
    ASSERT_TRUE(sentinel_there(&c)); /* put again by the first write */
    m = request(&w, rw, "ga", NULL, NULL, W("GET", "again"));
    PAYLOAD(m, "$1\r\na\r\n");
    m = request(&w, rw, "gl", NULL, NULL, W("GET", "live"));
    PAYLOAD(m, "$1\r\nv\r\n");
    /* The usage counter (max_keys is set) was not charged for the
     * deletions made while out of space: counted again, it holds what is
     * there, "live", "fill/0" and "again": 3 keys, and each key's and
     * value's bytes and 64. */
    ASSERT_TRUE(broker_log_has(&b, "counting the store's usage again"));
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "get", "full/q/usage", "--print-value-only", NULL), 0);
    char want[64];
    snprintf(want, sizeof want, "3 %zu\n", (4 + 1 + 64) + (6 + (sizeof big - 1) + 64) + (5 + 1 + 64));
    ASSERT_MEM(out, strlen(out), want, strlen(want));
    client_close(&w);
    client_close(&o);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* A commit whose answer is lost while etcd is out of space: the fence
 * that would settle it is a put, which etcd refuses then. Broker B (via a
 * proxy, its calls timing out after 1 s) sends a SET once A has filled
 * etcd; everything etcd sends B is dropped for 2.5 s from that commit on.
 * The fence sent after is refused "space exceeded": B settles the commit
 * by reading its marker (etcd applies no write after its alarm, in the
 * order of its log), and answers the SET "quota exceeded". The fence was
 * sent again every 100 ms for good, and the SET never answered. */
TEST(cluster_fence_refused_out_of_space_is_settled_by_a_read)
{
    struct proxied_brokers t;
    proxied_brokers_up_with(&t, "--quota-backend-bytes=16777216",
                            "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 60000\n");
    struct client ca, cb;
    char ra[64], rb[64];
    client_connect_rr(&ca, t.a.port, "ca", ra, sizeof ra);
    client_connect_rr(&cb, t.b.port, "cb", rb, sizeof rb);
    ASSERT_REPLY(request(&cb, rb, "0", NULL, NULL, W("SET", "k", "v0")), "+OK\r\n");
    static char big[512 * 1024];
    memset(big, 'f', sizeof big - 1);
    bool full = false;
    for (int i = 0; i < 80 && !full; i++) {
        char key[32];
        snprintf(key, sizeof key, "fill/%d", i);
        struct msg *m = request(&ca, ra, "f", NULL, NULL, W("SET", key, big));
        ASSERT_TRUE(m != NULL);
        full = m->len == (int)strlen(QUOTA) && memcmp(m->payload, QUOTA, m->len) == 0;
        if (!full)
            PAYLOAD(m, "+OK\r\n");
    }
    ASSERT_TRUE(full);
    delay_proxy_mute_after(t.px, NULL, "needle-q", "");
    uint64_t sent = now_ms();
    request_send(&cb, rb, "1", NULL, NULL, W("SET", "k", "needle-q"));
    usleep(2500 * 1000);
    delay_proxy_mute_after(t.px, NULL, NULL, NULL);
    struct msg *m = client_wait(&cb, 10000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, QUOTA);
    printf("  answered %llu ms after the SET was sent\n", (unsigned long long)(now_ms() - sent));
    ASSERT_TRUE(broker_log_has(&t.b, "a fence was refused, etcd being out of space"));
    /* Reads and deletions go on through B. */
    ASSERT_REPLY(request(&cb, rb, "2", NULL, NULL, W("GET", "k")), "$2\r\nv0\r\n");
    ASSERT_REPLY(request(&cb, rb, "3", NULL, NULL, W("DEL", "k")), ":1\r\n");
    client_close(&ca);
    client_close(&cb);
    proxied_brokers_down(&t);
}
