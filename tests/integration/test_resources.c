/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_resources.c - what the broker keeps of memory and disk: memory
 * given back after a huge value, and a full data filesystem. */
#define _GNU_SOURCE /* unshare */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../private_fs.h"
#include "../test.h"
#include "harness.h"

static const char *RESP = "clients/tester/services/statestore/v1/" GUID "/command/invoke/response";

/* Anonymous memory of a process (heap and private mappings), in KiB. */
static long rss_anon_kib(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    size_t n;
    char *s = slurp(path, &n);
    const char *p = strstr(s, "RssAnon:");
    long kib = p ? strtol(p + 8, NULL, 10) : -1;
    free(s);
    return kib;
}

/* The broker frees what the plugin publishes with its own accounting
 * free: payloads it did not allocate made its count of memory in use wrap
 * below zero, and with memory_limit set every allocation failed after the
 * first GET of a large value (no client could connect any more). */
TEST(plugin_answers_keep_the_brokers_memory_limit_working)
{
    struct broker b = {0};
    snprintf(b.head, sizeof b.head, "memory_limit 200000000\n");
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    size_t n = 100000;
    char *value = malloc(n + 1);
    ASSERT_TRUE(value != NULL);
    memset(value, 'v', n);
    value[n] = '\0';
    char want[40];
    snprintf(want, sizeof want, "$%zu\r\n", n);
    ASSERT_REPLY(request(&c, RESP, "s", NULL, NULL, W("SET", "big", value)), "+OK\r\n");
    for (int i = 0; i < 20; i++) {
        struct msg *m = request(&c, RESP, "g", NULL, NULL, W("GET", "big"));
        ASSERT_TRUE((size_t)m->len == n + strlen(want) + 2 && memcmp(m->payload, want, strlen(want)) == 0);
    }
    free(value);
    /* A new client connects and is served; the first one still is. */
    struct client d;
    client_connect(&d, b.port, "later", false);
    client_subscribe(&d, "clients/later/services/statestore/v1/" GUID "/command/invoke/response");
    ASSERT_REPLY(request(&d, "clients/later/services/statestore/v1/" GUID "/command/invoke/response", "l", NULL,
                         NULL, W("SET", "small", "v")),
                 "+OK\r\n");
    ASSERT_REPLY(request(&c, RESP, "s2", NULL, NULL, W("GET", "small")), "$1\r\nv\r\n");
    client_close(&d);
    client_close(&c);
    broker_stop(&b);
}

/* A GET of a huge value once kept a buffer of the value's size (rounded
 * up to a power of two) for the broker's life; on etcd, a DEL kept the
 * deleted record's buffer in the cache without counting it. Two rounds of
 * SET, GET and DEL of a huge value: neither keeps the value, and the
 * second keeps no more than the first (on etcd the backend's thread has
 * an arena of its own, and its transport buffers of up to one etcd
 * request stay there). */
TEST(plugin_memory_given_back_after_a_huge_value)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    ASSERT_REPLY(request(&c, RESP, "warm", NULL, NULL, W("SET", "small", "v")), "+OK\r\n");
    long before = rss_anon_kib(b.pid);
    ASSERT_TRUE(before > 0);
    /* Sanitizer and valgrind allocators keep freed memory by design (a
     * quarantine): the figure only means something with the C library's,
     * and there a value over glibc's largest mmap threshold (32 MiB) leaves
     * the process at once when freed. Under the others a smaller value
     * checks the rest in less time. */
    const char *preload = getenv("SS_BROKER_PRELOAD");
    bool measured = (preload == NULL || preload[0] == '\0') && getenv("SS_BROKER_VALGRIND") == NULL;
    size_t big = (size_t)(measured ? 48 : 4) << 20;
    char *value = malloc(big + 1);
    ASSERT_TRUE(value != NULL);
    memset(value, 'v', big);
    value[big] = '\0';
    long after[2];
    for (int round = 0; round < 2; round++) {
        value[0] = (char)('a' + round);
        ASSERT_REPLY(request(&c, RESP, "set", NULL, NULL, W("SET", "big", value)), "+OK\r\n");
        struct msg *m = request(&c, RESP, "get", NULL, NULL, W("GET", "big"));
        ASSERT_TRUE(m != NULL);
        char head[32];
        int hl = snprintf(head, sizeof head, "$%zu\r\n", big);
        ASSERT_EQ(m->len, (long long)big + hl + 2);
        ASSERT_TRUE(memcmp(m->payload, head, (size_t)hl) == 0);
        ASSERT_TRUE(memcmp(m->payload + hl, value, big) == 0);
        ASSERT_REPLY(request(&c, RESP, "del", NULL, NULL, W("DEL", "big")), ":1\r\n");
        ASSERT_REPLY(request(&c, RESP, "after", NULL, NULL, W("GET", "small")), "$1\r\nv\r\n");
        after[round] = rss_anon_kib(b.pid);
    }
    free(value);
    fprintf(stderr, "  broker anonymous memory: %ld KiB before, %ld and %ld KiB after each round\n", before,
            after[0], after[1]);
    if (measured) {
        /* On etcd, the backend thread's arena (above) on top. */
        ASSERT_TRUE(after[0] < before + (harness_on_etcd() ? 16 : 8) * 1024);
        ASSERT_TRUE(after[1] < after[0] + 4 * 1024);
    }
    client_close(&c);
    broker_stop(&b);
}

static int count_in_log(const struct broker *b, const char *text)
{
    size_t n;
    char *log = slurp(b->log, &n);
    int count = 0;
    for (const char *p = log; (p = strstr(p, text)) != NULL; p++)
        count++;
    free(log);
    return count;
}

/* Each "next try in N ms" of the log waits at least 1.5 times the one
 * before it (the interval doubles; the figure is measured from a later
 * moment than the failure, so allow for that). */
static void check_backoff(const struct broker *b)
{
    size_t n;
    char *log = slurp(b->log, &n);
    const char *mark = "next try in ";
    long prev = -1;
    for (const char *p = log; (p = strstr(p, mark)) != NULL; p++) {
        long ms = strtol(p + strlen(mark), NULL, 10);
        if (prev >= 0)
            ASSERT_TRUE(ms * 2 >= prev * 3);
        prev = ms;
    }
    free(log);
}

#define FULL_VALUE ((size_t)200 << 10)

/* The value of key number i: 200 KiB of one letter per key. */
static char *full_value(int i)
{
    char *v = malloc(FULL_VALUE + 1);
    ASSERT_TRUE(v != NULL);
    memset(v, 'a' + i % 26, FULL_VALUE);
    v[FULL_VALUE] = '\0';
    return v;
}

static void check_value(struct client *c, int i, bool present)
{
    char key[16], corr[24];
    snprintf(key, sizeof key, "k%d", i);
    snprintf(corr, sizeof corr, "get-%d", i);
    struct msg *m = request(c, RESP, corr, NULL, NULL, W("GET", key));
    ASSERT_TRUE(m != NULL);
    if (!present) {
        PAYLOAD(m, "$-1\r\n");
        return;
    }
    char *v = full_value(i);
    ASSERT_EQ(m->len, (long long)FULL_VALUE + 11); /* "$204800\r\n", value, "\r\n" */
    ASSERT_TRUE(memcmp(m->payload + 9, v, FULL_VALUE) == 0);
    free(v);
}

/* A full data filesystem: a write that grows the store is refused with
 * the quota error and a log line that names the disk; failing checkpoints
 * are logged as such and tried again with backoff; reads and deletes go
 * on; the broker starts again on the full disk; nothing acknowledged is
 * lost; and once there is room again, writes succeed. */
TEST(plugin_full_disk_keeps_serving_and_loses_nothing)
{
    char dir[400], ballast[500];
    snprintf(dir, sizeof dir, "%s/small", test_tmpdir());
    private_tmpfs(dir, "8m", 0);
    /* Someone else's file on the same filesystem, removed later to make
     * room, as an operator would. */
    snprintf(ballast, sizeof ballast, "%s/other-file", dir);
    int fd = open(ballast, O_WRONLY | O_CREAT, 0600);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(posix_fallocate(fd, 0, 2 << 20), 0);
    close(fd);

    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s/data", dir);
    snprintf(b.extra, sizeof b.extra,
             "plugin_opt_journal_max_bytes 1048576\nplugin_opt_checkpoint_interval_ms 200\n");
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    /* Fill it: go on after the first refusal (a delete elsewhere, or a
     * checkpoint, may make room for one more), until five in a row. */
    bool acked[80] = {false};
    int n = 0, nacked = 0, refusals = 0;
    for (; n < 80 && refusals < 5; n++) {
        char key[16], corr[24];
        snprintf(key, sizeof key, "k%d", n);
        snprintf(corr, sizeof corr, "set-%d", n);
        char *v = full_value(n);
        struct msg *m = request(&c, RESP, corr, NULL, NULL, W("SET", key, v));
        free(v);
        ASSERT_TRUE(m != NULL);
        if (m->len == 5 && memcmp(m->payload, "+OK\r\n", 5) == 0) {
            acked[n] = true;
            nacked++;
            refusals = 0;
        } else {
            PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
            refusals++;
        }
    }
    ASSERT_EQ(refusals, 5);
    ASSERT_TRUE(nacked >= 5);
    ASSERT_TRUE(acked[0] && acked[1] && acked[2]);
    ASSERT_TRUE(broker_log_has(&b, "No space left on device"));
    /* Another program takes every byte left. */
    char ballast2[520];
    snprintf(ballast2, sizeof ballast2, "%s/other-file-2", dir);
    fill_filesystem(ballast2);
    /* Deletes are still journaled (in the space reserved for them), but
     * the data file cannot take them: checkpoints fail, and are tried
     * again after 200, 400, 800, 1600 ms..., not every interval. */
    ASSERT_REPLY(request(&c, RESP, "del-0", NULL, NULL, W("DEL", "k0")), ":1\r\n");
    ASSERT_REPLY(request(&c, RESP, "del-1", NULL, NULL, W("DEL", "k1")), ":1\r\n");
    client_drain(&c, 3000);
    int failures = count_in_log(&b, "checkpoint failed (");
    bool recovered = broker_log_has(&b, "checkpoint succeeded again");
    fprintf(stderr, "  %d of %d writes acknowledged, %d failed checkpoints logged in 3 s%s\n",
            nacked, n, failures, recovered ? ", then one went through" : "");
    /* LMDB keeps the pages a failed commit managed to write, so a later
     * try may get through even on a full disk: how many fail varies. */
    ASSERT_TRUE(failures >= 1);
    ASSERT_TRUE(failures <= 6);
    ASSERT_TRUE(broker_log_has(&b, "the journal keeps every acknowledged write; next try in"));
    check_backoff(&b);
    /* Reads go on; a refused write left nothing. */
    for (int i = 0; i < n; i++)
        check_value(&c, i, acked[i] && i >= 2);
    client_close(&c);

    /* A crash, and a start on the full disk: the journal cannot go into
     * the data file, so the store serves from it. */
    broker_kill9(&b);
    broker_start(&b);
    bool serving = broker_log_has(&b, "serving from the journal");
    if (!recovered)
        ASSERT_TRUE(serving);
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    for (int i = 0; i < n; i++)
        check_value(&c, i, acked[i] && i >= 2);
    ASSERT_REPLY(request(&c, RESP, "del-2", NULL, NULL, W("DEL", "k2")), ":1\r\n");
    check_value(&c, 2, false);
    /* A small write fits if the journal's allocation holds more than its
     * reserve (after a checkpoint, say); otherwise it is refused. */
    struct msg *m = request(&c, RESP, "full", NULL, NULL, W("SET", "more", "x"));
    ASSERT_TRUE(m != NULL);
    bool more = m->len == 5 && memcmp(m->payload, "+OK\r\n", 5) == 0;
    if (!more)
        PAYLOAD(m, "-ERR the quota has been exceeded\r\n");

    /* Room again: the checkpoint goes through at its next try, and writes
     * are accepted. */
    ASSERT_EQ(unlink(ballast), 0);
    ASSERT_EQ(unlink(ballast2), 0);
    if (serving) {
        for (int i = 0; i < 200 && !broker_log_has(&b, "checkpoint succeeded again"); i++)
            client_drain(&c, 100);
        ASSERT_TRUE(broker_log_has(&b, "checkpoint succeeded again"));
    }
    ASSERT_REPLY(request(&c, RESP, "after", NULL, NULL, W("SET", "after", "room")), "+OK\r\n");
    client_close(&c);
    broker_stop(&b);
    broker_start(&b);
    ASSERT_TRUE(!broker_log_has(&b, "serving from the journal"));
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    ASSERT_REPLY(request(&c, RESP, "get-after", NULL, NULL, W("GET", "after")), "$4\r\nroom\r\n");
    m = request(&c, RESP, "get-more", NULL, NULL, W("GET", "more"));
    ASSERT_TRUE(m != NULL);
    if (more)
        PAYLOAD(m, "$1\r\nx\r\n");
    else
        PAYLOAD(m, "$-1\r\n");
    for (int i = 0; i < n; i++)
        check_value(&c, i, acked[i] && i >= 3);
    client_close(&c);
    broker_stop(&b);
    umount2(dir, MNT_DETACH);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* The data file never shrinks by itself (LMDB reuses its free pages);
 * compact_on_start rewrites it without them, keeping every key. */
TEST(plugin_compact_on_start_shrinks_the_data_file)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        char *v = full_value(i);
        ASSERT_REPLY(request(&c, RESP, "set", NULL, NULL, W("SET", key, v)), "+OK\r\n");
        free(v);
    }
    for (int i = 2; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        ASSERT_REPLY(request(&c, RESP, "del", NULL, NULL, W("DEL", key)), ":1\r\n");
    }
    client_close(&c);
    broker_stop(&b);
    char data[600];
    snprintf(data, sizeof data, "%s/data.mdb", b.data);
    long long before = file_size(data);
    broker_start(&b); /* without the option: the file stays as it is */
    /* The start-up line shows every effective option, the map size
     * computed from the default quota too (4 GiB + 64 MiB). */
    ASSERT_TRUE(broker_log_has(&b, " journal_max_bytes=4194304 map_size=4362076160 compact_on_start=false"));
    broker_stop(&b);
    ASSERT_EQ(file_size(data), before);
    snprintf(b.extra, sizeof b.extra, "plugin_opt_compact_on_start true\n");
    broker_start(&b);
    ASSERT_TRUE(broker_log_has(&b, "data file compacted from "));
    long long after = file_size(data);
    fprintf(stderr, "  data file: %lld bytes, %lld after compaction\n", before, after);
    ASSERT_TRUE(before > (long long)(3 << 20));
    ASSERT_TRUE(after < (long long)(1 << 20));
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    for (int i = 0; i < 20; i++)
        check_value(&c, i, i < 2);
    ASSERT_REPLY(request(&c, RESP, "set", NULL, NULL, W("SET", "new", "v")), "+OK\r\n");
    client_close(&c);
    broker_stop(&b);
    broker_start(&b);
    client_connect(&c, b.port, "tester", false);
    client_subscribe(&c, RESP);
    ASSERT_REPLY(request(&c, RESP, "get", NULL, NULL, W("GET", "new")), "$1\r\nv\r\n");
    check_value(&c, 1, true);
    client_close(&c);
    broker_stop(&b);
}

/* A storage error at start names the system's reason. */
TEST(plugin_storage_error_at_start_names_the_reason)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s/readonly", test_tmpdir());
    private_tmpfs(dir, "1m", MS_RDONLY);
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s/data", dir);
    ASSERT_TRUE(broker_start_fails(&b) != 0);
    ASSERT_TRUE(broker_log_has(&b, "statestore: cannot open the store in "));
    ASSERT_TRUE(broker_log_has(&b, "/readonly/data: storage error: Read-only file system"));
    ASSERT_TRUE(broker_log_has(&b, "/readonly/data is on a read-only filesystem"));
    umount2(dir, MNT_DETACH);
}
