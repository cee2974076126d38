/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_by_hand.c - what was put under the store's etcd prefix by
 * hand (etcdctl), not by a broker: records that are not records, chunks
 * gone, a usage counter and a SCAN token key that cannot be read, a claim
 * on a node id. Each answers the protocol's error (or is repaired, where
 * the store can know the truth), the log says what and where with any
 * bytes shown safely, and every other key goes on working. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "cluster_util.h"
#include "etcd_cluster.h"
#include "harness.h"

#define STORAGE_ERROR "-ERR storage error\r\n"

/* etcdctl with these words; fails the test unless it succeeds. */
static void ctl(const struct etcd_cluster *c, const char *a, const char *b, const char *d)
{
    char out[512];
    if (etcd_cluster_ctl(c, out, sizeof out, a, b, d, NULL) != 0) {
        fprintf(stderr, "  etcdctl %s %s: %s", a, b, out);
        test_fail(__FILE__, __LINE__, "etcdctl failed");
    }
}

/* The value etcd holds at key, into out. */
static void ctl_value(const struct etcd_cluster *c, const char *key, char *out, size_t n)
{
    ASSERT_EQ(etcd_cluster_ctl(c, out, n, "get", key, "--print-value-only", NULL), 0);
}

TEST(cluster_values_put_by_hand_under_the_prefix)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    /* Chunks of 64 KiB, and a key limit: the usage counter is in use. */
    const char *more = "plugin_opt_max_keys 1000\nplugin_opt_etcd_max_request_bytes 65536\n";
    struct broker b;
    cluster_broker(&b, &c, "foreign", more);
    struct client cl, ob;
    char r[64], ro[64];
    client_connect_rr(&cl, b.port, "writer", r, sizeof r);
    client_connect_rr(&ob, b.port, "observer", ro, sizeof ro);
    /* A key with a terminal's escape and a newline in it. */
    const char bad[] = "bad\x1b[2J\n";
    ASSERT_REPLY(request(&ob, ro, "n", NULL, NULL, W("KEYNOTIFY", bad)), "+OK\r\n");
    ASSERT_REPLY(request(&cl, r, "1", NULL, NULL, W("SET", "ok", "v")), "+OK\r\n");
    char value[256];

    /* Records that are not records: the observer is told nothing (there
     * is nothing true to tell), and every request on them answers
     * "storage error", a SET or a DEL too (the version to grow from, or
     * the fencing token to respect, cannot be read). */
    ctl(&c, "put", "race/k/bad\x1b[2J\n", "not a record");
    ctl(&c, "put", "race/k/empty", "");
    ASSERT_EQ(client_drain(&ob, 500), 0);
    uint64_t t0 = now_ms();
    ASSERT_REPLY(request(&cl, r, "2", NULL, NULL, W("GET", bad)), STORAGE_ERROR);
    ASSERT_REPLY(request(&cl, r, "3", NULL, NULL, W("SET", bad, "x")), STORAGE_ERROR);
    ASSERT_REPLY(request(&cl, r, "4", NULL, NULL, W("DEL", bad)), STORAGE_ERROR);
    ASSERT_REPLY(request(&cl, r, "5", NULL, NULL, W("GET", "empty")), STORAGE_ERROR);
    ASSERT_REPLY(request(&cl, r, "6", NULL, NULL, W("VDEL", "empty", "v")), STORAGE_ERROR);
    /* The log names the first key, its bytes escaped; the next within
     * 10 s is only counted (one line per 10 s begun since, on a slow
     * run). */
    ASSERT_TRUE(broker_log_has(&b, "statestore: race/k/bad\\x1b[2J\\x0a holds no record of the state store: "
                                   "its requests answer \"storage error\" until it is deleted in etcd\n"));
    int lines = broker_log_count(&b, "holds no record of the state store");
    ASSERT_TRUE(lines >= 1 && (uint64_t)lines <= 1 + (now_ms() - t0) / 10000);
    /* SCAN lists the records only; the other key works. */
    ASSERT_REPLY(request(&cl, r, "7", NULL, NULL, W("SCAN", "*")), "*1\r\n*1\r\n$2\r\nok\r\n");
    ASSERT_REPLY(request(&cl, r, "8", NULL, NULL, W("GET", "ok")), "$1\r\nv\r\n");
    /* Deleted in etcd, the key is absent again, and can be set. */
    ctl(&c, "del", "race/k/empty", NULL);
    ASSERT_REPLY(request(&cl, r, "9", NULL, NULL, W("SET", "empty", "e")), "+OK\r\n");
    ASSERT_REPLY(request(&cl, r, "10", NULL, NULL, W("GET", "empty")), "$1\r\ne\r\n");

    /* The usage counter replaced by hand while the broker runs: the next
     * write's Txn finds it changed, reads it, cannot, counts the records
     * and replaces it ("-1" is no count: a parse that takes a sign would
     * read 2^64 - 1 and refuse every write as over the limit). */
    ASSERT_EQ(etcd_cluster_ctl(&c, value, sizeof value, "put", "--", "race/q/usage", "-1 5", NULL), 0);
    ASSERT_REPLY(request(&cl, r, "11", NULL, NULL, W("SET", "x", "1")), "+OK\r\n");
    ASSERT_TRUE(broker_log_has(&b, "statestore: race/q/usage holds \"-1 5\", not \"<keys> <bytes>\": counting "
                                   "the store again to replace it\n"));
    /* ok, empty and x: key, value and 64 bytes each. */
    ctl_value(&c, "race/q/usage", value, sizeof value);
    ASSERT_STR(value, strlen(value), "3 203\n");
    /* Nor is "1e3" (a parse that takes any byte from '0' up as a digit
     * would read 1 and 'e' as 59). */
    ctl(&c, "put", "race/q/usage", "1e3 5");
    ASSERT_REPLY(request(&cl, r, "11b", NULL, NULL, W("SET", "y", "1")), "+OK\r\n");
    ASSERT_TRUE(broker_log_has(&b, "statestore: race/q/usage holds \"1e3 5\""));
    ctl_value(&c, "race/q/usage", value, sizeof value);
    ASSERT_STR(value, strlen(value), "4 269\n");

    /* A value in chunks whose chunks were deleted by hand: "storage
     * error", and the log says which. Read after a restart (nothing
     * cached), with the counter and SCAN's token key unreadable too: the
     * broker starts, counts again, and writes go on at once. */
    char *big = patterned(200000, 3);
    ASSERT_REPLY(request(&cl, r, "12", NULL, NULL, W("SET", "big", big)), "+OK\r\n");
    ASSERT_EQ(etcd_cluster_count_keys(&c, "race/c/"), 5); /* a little under 64 KiB each */
    ctl(&c, "del", "race/c/", "--prefix");
    ctl(&c, "put", "race/q/usage", "twelve");
    ctl(&c, "put", "race/s/scan-token-key", "short");
    client_close(&cl);
    client_close(&ob);
    broker_stop(&b);
    broker_start(&b);
    client_connect_rr(&cl, b.port, "writer", r, sizeof r);
    ASSERT_REPLY(request(&cl, r, "13", NULL, NULL, W("GET", "big")), STORAGE_ERROR);
    ASSERT_TRUE(broker_log_has(&b, "of a stored value are missing or do not add up to its length"));
    ASSERT_REPLY(request(&cl, r, "14", NULL, NULL, W("SET", "new", "n")), "+OK\r\n");
    ASSERT_TRUE(broker_log_has(&b, "statestore: race/q/usage holds \"twelve\", not \"<keys> <bytes>\""));
    /* ok, empty, x, y, new, and big (200,000 bytes, as its stub says). */
    ctl_value(&c, "race/q/usage", value, sizeof value);
    ASSERT_STR(value, strlen(value), "6 200404\n");
    /* SCAN's key is not 16 bytes: SCAN is unavailable, and says so, until
     * it is deleted; then a broker makes a new one. */
    ASSERT_REPLY(request(&cl, r, "15", NULL, NULL, W("SCAN", "*")), UNAVAILABLE);
    ASSERT_TRUE(broker_log_has(&b, "statestore: race/s/scan-token-key is not 16 bytes: SCAN is unavailable "
                                   "until it is (delete it, and a broker makes a new one)"));
    ctl(&c, "del", "race/s/scan-token-key", NULL);
    struct msg *m = NULL;
    for (int i = 0; i < 40; i++) { /* the broker looks again every second */
        m = request(&cl, r, "16", NULL, NULL, W("SCAN", "n*"));
        if (m == NULL || !payload_is(m, UNAVAILABLE))
            break;
        usleep(100 * 1000);
    }
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*1\r\n*1\r\n$3\r\nnew\r\n");
    /* 16 bytes: 24 characters of base64 in etcdctl's JSON. */
    char json[1024];
    ASSERT_EQ(etcd_cluster_ctl(&c, json, sizeof json, "get", "race/s/scan-token-key", "-w", "json", NULL), 0);
    const char *v = strstr(json, "\"value\":\"");
    ASSERT_TRUE(v != NULL);
    v += 9;
    ASSERT_EQ(strcspn(v, "\""), 24);
    ASSERT_MEM(v + 22, 2, "==", 2);

    /* A claim on a node id put by hand, with no lease: a broker with that
     * node id does not start, and says who holds it, shown safely. */
    ctl(&c, "put", "race/l/twin", "\x1b]0;junk\n");
    struct broker t;
    broker_named(&t, "twin");
    snprintf(t.extra, sizeof t.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix race/\n"
             "plugin_opt_node_id twin\n%s", c.endpoints, more);
    ASSERT_TRUE(broker_start_fails(&t) != 0);
    ASSERT_TRUE(broker_log_has(&t, "node id twin is claimed by another live broker (\\x1b]0;junk\\x0a)"));

    printf("  records that are not records, chunks gone, a usage counter and a SCAN key put by hand: "
           "errors where nothing true can be said, the counter counted again, SCAN back once its key "
           "was deleted\n");
    free(big);
    client_close(&cl);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* The usage counter deleted by hand under a store of 300 records: the
 * next write finds it gone, and the broker counts the records again in
 * pages (128 records each with 64 KiB requests), all at the revision of
 * the first, never the whole store in one reply; the count is exact. */
TEST(cluster_usage_counted_again_in_pages)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct broker b;
    cluster_broker(&b, &c, "counter",
                   "plugin_opt_max_keys 100000\nplugin_opt_etcd_max_request_bytes 65536\nsys_interval 1\n");
    struct client cl;
    char r[64];
    client_connect_rr(&cl, b.port, "writer", r, sizeof r);
    set_keys_pipelined(&cl, r, "key", 3, 0, 300); /* "key000" ... "key299" = "v" */
    char value[256];
    ctl_value(&c, "race/q/usage", value, sizeof value);
    ASSERT_STR(value, strlen(value), "300 21300\n"); /* 300 x (6 + 1 + 64) */
    /* One broker alone: every commit knew the counter's revision it left
     * (a batch that uses the counter waits for the one in flight), so
     * none failed its compare. */
    usleep(1500 * 1000); /* a publication of the figures after the writes */
    ASSERT_EQ(broker_figure(b.port, "etcd/conflicts"), 0);
    ctl(&c, "del", "race/q/usage", NULL);
    /* A value of 1000 bytes, so that the count is not that of the keys. */
    char big[1001];
    memset(big, 'b', 1000);
    big[1000] = '\0';
    ASSERT_REPLY(request(&cl, r, "1", NULL, NULL, W("SET", "key300", big)), "+OK\r\n");
    ctl_value(&c, "race/q/usage", value, sizeof value);
    ASSERT_STR(value, strlen(value), "301 22370\n"); /* and 6 + 1000 + 64 */
    ASSERT_TRUE(broker_log_has(&b, "statestore: the store's usage counted: 300 keys, 21300 bytes\n"));
    /* The pages, exactly: 1 for the first count (no record yet); then 3
     * of records (128, 128, 44), the second and third over intervals
     * learnt from the page before; then 16 empty intervals past the last
     * record, each larger than the one before, until one reaches the end
     * of k/. (A first page's span taken from its last key alone would
     * read many more.) */
    usleep(1500 * 1000);
    ASSERT_EQ(broker_figure(b.port, "etcd/usage_ranges"), 20);
    client_close(&cl);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}
