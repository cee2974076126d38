/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_durability.c - resent requests, restarts, kill -9, the lease
 * pattern, many clients at once, and bad configuration. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"


static void copy_ts(char *out, size_t n, const struct msg *m)
{
    const char *v = msg_user(m, "__ts");
    ASSERT_TRUE(v != NULL);
    snprintf(out, n, "%s", v);
}

/* kill -9 the broker, drop the client's handle to it (its socket is dead:
 * no DISCONNECT is sent), and start the broker again on the same port. */
static void kill9_and_restart(struct broker *b, struct client *c)
{
    broker_kill9(b);
    mosquitto_destroy(c->m);
    c->m = NULL;
    client_close(c);
    broker_start(b);
}

/* A resent request whose first run was committed in an earlier batch is
 * answered "+OK" again even if the batch it lands in fails to commit: the
 * write is durable, and a lock holder told otherwise would believe it has
 * no lock. The broker is stopped while the resend and another client's
 * write arrive, so that both run in one batch, whose journal write fails
 * (injected). */
TEST(plugin_resent_committed_request_survives_a_failed_batch)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_test_fail_write_at 2\n");
    broker_start(&b);
    ASSERT_TRUE(broker_log_has(&b, "failure injection is on"));
    struct client c, d;
    char rc_[64], rd[64];
    client_connect_rr(&c, b.port, "holder", rc_, sizeof rc_);
    client_connect_rr(&d, b.port, "other", rd, sizeof rd);
    char ts[64];
    snprintf(ts, sizeof ts, "%llu:0:holder", (unsigned long long)now_ms());
    struct msg *m = request(&c, rc_, "lock-1", ts, NULL, W("SET", "lock", "holder", "NX", "PX", "60000"));
    PAYLOAD(m, "+OK\r\n"); /* journal write 1 */
    char v1[128];
    copy_ts(v1, sizeof v1, m);
    client_drain(&c, 100); /* our PUBACK reaches the broker */
    ASSERT_EQ(kill(b.pid, SIGSTOP), 0);
    request_send(&c, rc_, "lock-1", ts, NULL, W("SET", "lock", "holder", "NX", "PX", "60000"));
    request_send(&d, rd, "w", NULL, NULL, W("SET", "unrelated", "x")); /* journal write 2: fails */
    usleep(200000);
    ASSERT_EQ(kill(b.pid, SIGCONT), 0);
    m = client_wait(&c, 5000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "+OK\r\n");
    ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), v1, strlen(v1));
    m = client_wait(&d, 5000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "-ERR storage error\r\n");
    ASSERT_TRUE(broker_log_has(&b, "writing the journal (an injected failure)"));
    /* The store holds the lock and not the failed write. */
    m = request(&d, rd, "g1", NULL, NULL, W("GET", "lock"));
    PAYLOAD(m, "$6\r\nholder\r\n");
    m = request(&d, rd, "g2", NULL, NULL, W("GET", "unrelated"));
    PAYLOAD(m, "$-1\r\n");
    client_close(&c);
    client_close(&d);
    broker_kill9(&b);
    broker_start(&b);
    client_connect_rr(&d, b.port, "other", rd, sizeof rd);
    m = request(&d, rd, "g3", NULL, NULL, W("GET", "lock"));
    PAYLOAD(m, "$6\r\nholder\r\n");
    client_close(&d);
    broker_stop(&b);
}

/* A failed periodic fsync is not retried as if nothing happened: a
 * checkpoint writes the whole state into the data file at once, and the
 * log says what was at stake and when it was safe again. */
TEST(plugin_failed_fsync_is_followed_by_a_checkpoint)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra,
             "plugin_opt_test_fail_sync_at 1\nplugin_opt_fsync_interval_ms 20\n"
             "plugin_opt_checkpoint_interval_ms 3600000\n");
    broker_start(&b);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "writer", r, sizeof r);
    ASSERT_REPLY(request(&c, r, "1", NULL, NULL, W("SET", "k1", "v1")), "+OK\r\n");
    for (int i = 0; i < 100 && !broker_log_has(&b, "checkpoint after the failed fsync succeeded"); i++)
        client_drain(&c, 50);
    ASSERT_TRUE(broker_log_has(&b, "fsync of the journal: Input/output error: writes acknowledged "
                                   "since the last good fsync may not be on disk"));
    ASSERT_TRUE(broker_log_has(&b, "checkpoint after the failed fsync succeeded"));
    ASSERT_REPLY(request(&c, r, "2", NULL, NULL, W("SET", "k2", "v2")), "+OK\r\n");
    client_close(&c);
    broker_kill9(&b);
    b.extra[0] = '\0';
    broker_start(&b);
    client_connect_rr(&c, b.port, "writer", r, sizeof r);
    ASSERT_REPLY(request(&c, r, "3", NULL, NULL, W("GET", "k1")), "$2\r\nv1\r\n");
    ASSERT_REPLY(request(&c, r, "4", NULL, NULL, W("GET", "k2")), "$2\r\nv2\r\n");
    client_close(&c);
    broker_stop(&b);
}

TEST(plugin_resent_request_answered_once)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "retry", r, sizeof r);
    char ts[64];
    snprintf(ts, sizeof ts, "%llu:0:retry", (unsigned long long)now_ms());
    struct msg *m = request(&c, r, "same-corr", ts, NULL, W("SET", "lease", "me", "NX", "PX", "60000"));
    PAYLOAD(m, "+OK\r\n");
    char v1[128];
    copy_ts(v1, sizeof v1, m);
    /* The identical request again: the first answer, not ":-1". */
    m = request(&c, r, "same-corr", ts, NULL, W("SET", "lease", "me", "NX", "PX", "60000"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), v1, strlen(v1));
    /* The same correlation data with another request runs normally. */
    m = request(&c, r, "same-corr", ts, NULL, W("SET", "lease", "other", "NX"));
    PAYLOAD(m, ":-1\r\n");
    m = request(&c, r, "same-corr", ts, NULL, W("GET", "lease"));
    PAYLOAD(m, "$2\r\nme\r\n");
    /* And another client with the same correlation data and request. */
    struct client d;
    char rd[64];
    client_connect_rr(&d, b.port, "other", rd, sizeof rd);
    m = request(&d, rd, "same-corr", ts, NULL, W("SET", "lease", "me", "NX", "PX", "60000"));
    PAYLOAD(m, ":-1\r\n");
    client_close(&c);
    client_close(&d);
    broker_stop(&b);
}

TEST(plugin_restart_keeps_values_versions_tokens_expiries)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "keeper", r, sizeof r);
    struct msg *m = request(&c, r, "1", NULL, "1:0:tok", W("SET", "fenced", "value-1", "PX", "600000"));
    PAYLOAD(m, "+OK\r\n");
    char vf[128];
    copy_ts(vf, sizeof vf, m);
    m = request(&c, r, "2", NULL, NULL, W("SET", "brief", "gone soon", "PX", "300"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&c, r, "3", NULL, NULL, W("SET", "plain", "stays"));
    char vp[128];
    copy_ts(vp, sizeof vp, m);
    client_close(&c);
    broker_stop(&b);
    usleep(500 * 1000); /* "brief" expires while the broker is down */
    broker_start(&b);
    client_connect_rr(&c, b.port, "keeper", r, sizeof r);
    m = request(&c, r, "4", NULL, NULL, W("GET", "fenced"));
    PAYLOAD(m, "$7\r\nvalue-1\r\n");
    ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), vf, strlen(vf));
    m = request(&c, r, "5", NULL, NULL, W("DEL", "fenced"));
    PAYLOAD(m, "-ERR a fencing token is required for this request\r\n");
    m = request(&c, r, "6", NULL, NULL, W("GET", "plain"));
    PAYLOAD(m, "$5\r\nstays\r\n");
    ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), vp, strlen(vp));
    m = request(&c, r, "7", NULL, NULL, W("GET", "brief"));
    PAYLOAD(m, "$-1\r\n");
    /* New versions are above the old ones even with an old request clock. */
    m = request(&c, r, "8", "1:0:old", NULL, W("SET", "plain", "newer"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_TRUE(strcmp(msg_user(m, "__ts"), vp) > 0); /* same width: text order is time order */
    client_close(&c);
    broker_stop(&b);
}

TEST(plugin_kill9_keeps_every_acknowledged_write)
{
    struct broker b = {0};
    broker_start(&b);
    char versions[60][128];
    int acked = 0;
    for (int round = 0; round < 3; round++) {
        struct client c;
        char r[64];
        client_connect_rr(&c, b.port, "writer", r, sizeof r);
        for (int i = 0; i < 20; i++, acked++) {
            char key[16], val[16];
            snprintf(key, sizeof key, "k%d", acked);
            snprintf(val, sizeof val, "v%d", acked);
            struct msg *m = request(&c, r, key, NULL, NULL, W("SET", key, val));
            PAYLOAD(m, "+OK\r\n");
            copy_ts(versions[acked], sizeof versions[acked], m);
        }
        /* Killed right after the last acknowledgement. */
        kill9_and_restart(&b, &c);
    }
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "reader", r, sizeof r);
    for (int i = 0; i < acked; i++) {
        char key[16], val[16], want[32];
        snprintf(key, sizeof key, "k%d", i);
        int vn = snprintf(val, sizeof val, "v%d", i);
        int wn = snprintf(want, sizeof want, "$%d\r\n%s\r\n", vn, val);
        struct msg *m = request(&c, r, key, NULL, NULL, W("GET", key));
        ASSERT_MEM(m->payload, (size_t)m->len, want, (size_t)wn);
        ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), versions[i], strlen(versions[i]));
    }
    client_close(&c);
    broker_stop(&b);
}

/* fsync=always commits on another thread and wakes the broker when done:
 * one request at a time must not wait for the broker's idle timeout
 * (100 ms per iteration), and what was answered survives kill -9. */
TEST(plugin_fsync_always_answers_promptly_and_durably)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_fsync always\n");
    broker_start(&b);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "one-at-a-time", r, sizeof r);
    uint64_t start = now_ms();
    for (int i = 0; i < 50; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        ASSERT_REPLY(request(&c, r, "1", NULL, NULL, W("SET", key, key)), "+OK\r\n");
    }
    uint64_t took = now_ms() - start;
    fprintf(stderr, "  50 sequential SETs with fsync=always: %llu ms\n", (unsigned long long)took);
    /* 50 idle timeouts would be 5 s; a sync costs milliseconds at most. */
    ASSERT_TRUE(took < 2500);
    kill9_and_restart(&b, &c);
    client_connect_rr(&c, b.port, "reader", r, sizeof r);
    ASSERT_REPLY(request(&c, r, "2", NULL, NULL, W("GET", "k49")), "$3\r\nk49\r\n");
    client_close(&c);
    broker_stop(&b);
}

/* Two brokers on one data directory would each keep their own counts and
 * clock: the second is refused. */
/* Threads of the broker's process, from /proc. */
/* The broker's threads named name (/proc/PID/task/N/comm). */
static int broker_threads_named(const struct broker *b, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "/proc/%d/task", (int)b->pid);
    DIR *d = opendir(path);
    ASSERT_TRUE(d != NULL);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%d/task/%s/comm", (int)b->pid, e->d_name);
        size_t len;
        char *comm = slurp(path, &len);
        if (len > 0 && comm[len - 1] == '\n')
            comm[len - 1] = '\0';
        n += strcmp(comm, name) == 0;
        free(comm);
    }
    closedir(d);
    return n;
}

/* SETs spread over half a second, so that syncs and checkpoints run (at
 * most every 5 ms); then wait (at most 3 s) for the process to have
 * `want` committing threads; returns how many it has. (By name: the
 * process may have threads of its own, as a sanitizer's runtime does.) */
static int threads_after_writes(struct broker *b, struct client *c, const char *r, int want)
{
    for (int i = 0; i < 25; i++) {
        char key[16];
        snprintf(key, sizeof key, "t%d", i);
        ASSERT_REPLY(request(c, r, "1", NULL, NULL, W("SET", key, key)), "+OK\r\n");
        usleep(20000);
    }
    int n = broker_threads_named(b, "ss-committer");
    for (uint64_t end = now_ms() + 3000; n != want && now_ms() < end;
         n = broker_threads_named(b, "ss-committer"))
        usleep(20000);
    return n;
}

/* With fsync=periodic the fsyncs and checkpoints run on a thread started
 * for each of them: no thread stays beside the broker's (one costs the
 * broker a tenth of its throughput). With fsync=always it stays. What was
 * answered survives kill -9 either way. */
TEST(plugin_committing_thread_only_while_needed)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra,
             "plugin_opt_fsync_interval_ms 5\nplugin_opt_checkpoint_interval_ms 5\n");
    broker_start(&b);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "threads", r, sizeof r);
    ASSERT_EQ(threads_after_writes(&b, &c, r, 0), 0);
    kill9_and_restart(&b, &c);
    client_connect_rr(&c, b.port, "threads", r, sizeof r);
    ASSERT_REPLY(request(&c, r, "2", NULL, NULL, W("GET", "t24")), "$3\r\nt24\r\n");
    client_close(&c);
    broker_stop(&b);

    struct broker a = {0};
    snprintf(a.extra, sizeof a.extra, "plugin_opt_fsync always\n");
    broker_start(&a);
    client_connect_rr(&c, a.port, "threads", r, sizeof r);
    ASSERT_EQ(threads_after_writes(&a, &c, r, 1), 1);
    client_close(&c);
    broker_stop(&a);
}

TEST(plugin_data_dir_used_by_one_broker_only)
{
    struct broker b = {0};
    broker_start(&b);
    struct broker second = {0};
    snprintf(second.data, sizeof second.data, "%s", b.data);
    ASSERT_TRUE(broker_start_fails(&second) != 0);
    ASSERT_TRUE(broker_log_has(&second, "another process has it open"));
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "still-serving", r, sizeof r);
    ASSERT_REPLY(request(&c, r, "1", NULL, NULL, W("SET", "a", "1")), "+OK\r\n");
    client_close(&c);
    broker_stop(&b);
}

TEST(plugin_lease_pattern)
{
    struct broker b = {0};
    broker_start(&b);
    struct client a, o;
    char ra[64], ro[64];
    client_connect_rr(&a, b.port, "holder-a", ra, sizeof ra);
    client_connect_rr(&o, b.port, "holder-b", ro, sizeof ro);
    struct msg *m = request(&a, ra, "1", NULL, NULL, W("SET", "lock", "holder-a", "NEX", "PX", "10000"));
    PAYLOAD(m, "+OK\r\n");
    char t1[128], t2[128];
    copy_ts(t1, sizeof t1, m);
    m = request(&o, ro, "2", NULL, NULL, W("SET", "lock", "holder-b", "NEX", "PX", "10000"));
    PAYLOAD(m, ":-1\r\n");
    m = request(&a, ra, "3", NULL, NULL, W("SET", "lock", "holder-a", "NEX", "PX", "10000"));
    PAYLOAD(m, "+OK\r\n");
    copy_ts(t2, sizeof t2, m);
    ASSERT_TRUE(strcmp(t2, t1) > 0);
    m = request(&a, ra, "4", NULL, t2, W("SET", "resource", "written by a"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&o, ro, "5", NULL, t1, W("SET", "resource", "written by b"));
    PAYLOAD(m, "-ERR the request fencing token is a lower version than the fencing token "
               "protecting the resource\r\n");
    /* b waits for the release with KEYNOTIFY instead of polling. */
    m = request(&o, ro, "6", NULL, NULL, W("KEYNOTIFY", "lock"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&a, ra, "7", NULL, NULL, W("VDEL", "lock", "holder-a"));
    PAYLOAD(m, ":1\r\n");
    m = client_wait(&o, 2000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    m = request(&o, ro, "8", NULL, NULL, W("SET", "lock", "holder-b", "NEX", "PX", "10000"));
    PAYLOAD(m, "+OK\r\n");
    char t3[128];
    copy_ts(t3, sizeof t3, m);
    ASSERT_EQ(client_drain_count(&o, 1, 5000), 1); /* its own SET notification (on etcd, from the watch) */
    m = request(&o, ro, "9", NULL, t3, W("SET", "resource", "written by b"));
    PAYLOAD(m, "+OK\r\n");
    client_close(&a);
    client_close(&o);
    broker_stop(&b);
}

TEST(plugin_fifty_concurrent_clients)
{
    struct broker b = {0};
    broker_start(&b);
    enum { N = 50, ROUNDS = 20 };
    static struct client cs[N];
    char resp[N][64];
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "many%02d", i);
        client_connect_rr(&cs[i], b.port, id, resp[i], sizeof resp[i]);
    }
    /* Every client fires all its requests, then everyone collects. */
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < ROUNDS; k++) {
            uint8_t buf[256];
            char key[32], val[32], corr[16];
            snprintf(key, sizeof key, "own-%d-%d", i, k);
            snprintf(val, sizeof val, "val-%d-%d", i, k);
            snprintf(corr, sizeof corr, "%d", k);
            int n = k == 0 ? encode_request(buf, sizeof buf, W("SET", "race", val, "NX"), NULL)
                           : encode_request(buf, sizeof buf, W("SET", key, val), NULL);
            mosquitto_property *props = NULL;
            char ts[64];
            snprintf(ts, sizeof ts, "%llu:0:c", (unsigned long long)now_ms());
            mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp[i]);
            mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
            mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
            ASSERT_EQ(client_publish(&cs[i], REQ_TOPIC, buf, n, 1, false, props), 0);
            mosquitto_property_free_all(&props);
        }
    }
    int winners = 0, answers = 0;
    uint64_t end = now_ms() + 20000;
    int got[N] = {0};
    while (answers < N * ROUNDS && now_ms() < end) {
        for (int i = 0; i < N; i++) {
            struct msg *m;
            while ((m = client_wait(&cs[i], 1)) != NULL) {
                answers++;
                got[i]++;
                if (m->corr_len == 1 && m->corr[0] == '0') {
                    if (m->len == 5 && memcmp(m->payload, "+OK\r\n", 5) == 0)
                        winners++;
                    else
                        ASSERT_STR(m->payload, (size_t)m->len, ":-1\r\n");
                } else {
                    ASSERT_STR(m->payload, (size_t)m->len, "+OK\r\n");
                }
            }
        }
    }
    ASSERT_EQ(answers, N * ROUNDS);
    ASSERT_EQ(winners, 1);
    /* Spot check the data. */
    struct msg *m = request(&cs[7], resp[7], "x", NULL, NULL, W("GET", "own-7-19"));
    PAYLOAD(m, "$8\r\nval-7-19\r\n");
    for (int i = 0; i < N; i++)
        client_close(&cs[i]);
    broker_stop(&b);
}

TEST(plugin_bad_options_stop_the_broker)
{
    broker_refuses("unknown", "plugin_opt_no_such_option 1\n", "unknown option plugin_opt_no_such_option");
    broker_refuses("fsync", "plugin_opt_fsync sometimes\n", "plugin_opt_fsync: invalid value \"sometimes\"");
    broker_refuses("max-keys", "plugin_opt_max_keys lots\n", "plugin_opt_max_keys");
    broker_refuses("relative", "plugin_opt_data_dir statestore-data\n",
                   "plugin_opt_data_dir: invalid value \"statestore-data\": must be an absolute path");
    /* 9 at least: a value in chunks alone in its Txn needs them. */
    broker_refuses("txn-ops", "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints http://127.0.0.1:1\n"
                              "plugin_opt_etcd_max_txn_ops 8\n",
                   "plugin_opt_etcd_max_txn_ops: invalid value \"8\"");
    /* A map too small for any store: the option is named (the map's
     * failure at open said only "the quota has been exceeded"). */
    broker_refuses("map-small", "plugin_opt_map_size 1\n",
                   "plugin_opt_map_size: must be 0 (computed) or at least 1048576 bytes");
    /* The node id is sent in every __ts user property: it must be UTF-8. */
    broker_refuses("node-utf8", "plugin_opt_node_id Caf\xe9\n", "plugin_opt_node_id: invalid value");
    /* (A map too large to be made is said as such too; not checked here:
     * under valgrind the mapping fails otherwise.) */
    /* Good options are logged at startup. */
    struct broker e = {0};
    snprintf(e.extra, sizeof e.extra,
             "plugin_opt_fsync always\nplugin_opt_max_keys 2\nplugin_opt_node_id Edge1\n"
             "plugin_opt_max_registrations_per_client 1\n");
    broker_start(&e);
    ASSERT_TRUE(broker_log_has(&e, "fsync=always"));
    ASSERT_TRUE(broker_log_has(&e, "node_id=Edge1"));
    struct client cl;
    char r[64];
    client_connect_rr(&cl, e.port, "q", r, sizeof r);
    struct msg *m = request(&cl, r, "1", NULL, NULL, W("SET", "a", "1"));
    ASSERT_TRUE(strstr(msg_user(m, "__ts"), ":Edge1") != NULL);
    request(&cl, r, "2", NULL, NULL, W("SET", "b", "1"));
    m = request(&cl, r, "3", NULL, NULL, W("SET", "c", "1"));
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    /* Each refusal names its own limit: a KEYNOTIFY over its limit after
     * it is not said to be refused for max_keys. */
    m = request(&cl, r, "4", NULL, NULL, W("KEYNOTIFY", "a"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&cl, r, "5", NULL, NULL, W("KEYNOTIFY", "b"));
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    client_close(&cl);
    ASSERT_TRUE(broker_log_has(&e, "request from q refused: max_keys (2 keys) reached"));
    ASSERT_TRUE(broker_log_has(&e, "client q reached a KEYNOTIFY limit: max_registrations_per_client"));
    ASSERT_EQ(broker_log_count(&e, "refused: max_keys"), 1);
    broker_stop(&e);
}

/* A value whose notification would not fit the broker's message_size_limit
 * is refused; one that fits works end to end. */
TEST(plugin_value_limit_follows_message_size_limit)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "message_size_limit 1000\n");
    broker_start(&b);
    ASSERT_TRUE(broker_log_has(&b, "max_value_bytes=950"));
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "big", r, sizeof r);
    request(&c, r, "1", NULL, NULL, W("KEYNOTIFY", "k"));
    static char val[961];
    memset(val, 'v', 951);
    struct msg *m = request(&c, r, "2", NULL, NULL, W("SET", "k", val));
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    ASSERT_TRUE(broker_log_has(&b, "notifications fit the broker's message_size_limit"));
    val[950] = '\0';
    m = request(&c, r, "3", NULL, NULL, W("SET", "k", val));
    PAYLOAD(m, "+OK\r\n");
    m = client_wait(&c, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_TRUE(strstr(m->topic, "/command/notify/6B") != NULL);
    ASSERT_EQ(m->len, 36 + 6 + 950 + 2); /* 994 bytes: within the limit */
    client_close(&c);
    broker_stop(&b);
}
