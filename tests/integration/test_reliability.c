/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_reliability.c - crashes under load, linearizability of concurrent
 * histories, and per-client limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../core/codec.h"

#include "../../core/hlc.h"
#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"
#include "linearizable.h"

/* ---- crash ------------------------------------------------------------ */

#define WRITERS 4
#define MAX_ACKED 20000

struct acked {
    char key[32];
    char version[64];
};

/* extra: broker config lines (the sync policy under test). */
static void kill9_rounds(const char *extra)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "%s", extra);
    broker_start(&b);
    static struct acked acked[MAX_ACKED];
    int nacked = 0, seq = 0;
    /* On etcd each restart waits for the killed broker's claim on its
     * node id to lapse (3 s, docs/CLUSTER.md), and what must survive is
     * etcd's to keep: four rounds there, ten on LMDB. */
    const int rounds = test_quick() ? 3 : harness_on_etcd() ? 4 : 10;
    for (int round = 0; round < rounds; round++) {
        struct client cs[WRITERS];
        char resp[WRITERS][64];
        for (int i = 0; i < WRITERS; i++) {
            char id[32];
            snprintf(id, sizeof id, "w%d-%d", round, i);
            client_connect_rr(&cs[i], b.port, id, resp[i], sizeof resp[i]);
        }
        /* Keep 8 writes in flight per client for ~300 ms, and until 50
         * are acknowledged (a broker under valgrind checkpointing every
         * 5 ms acknowledges few in 300 ms), then kill -9 in the middle of
         * it. */
        char inflight[WRITERS][8][32];
        memset(inflight, 0, sizeof inflight);
        uint64_t start = now_ms();
        uint64_t end = start + 200 + (uint64_t)(rand() % 200);
        int round_start = nacked;
        while ((now_ms() < end || nacked - round_start < 50) && now_ms() < start + 20000 &&
               nacked < MAX_ACKED - 100) {
            for (int i = 0; i < WRITERS; i++) {
                for (int s = 0; s < 8; s++) {
                    if (inflight[i][s][0] == '\0') {
                        snprintf(inflight[i][s], 32, "k%d", seq++);
                        char corr[16];
                        snprintf(corr, sizeof corr, "%d", s);
                        request_send(&cs[i], resp[i], corr, NULL, NULL, W("SET", inflight[i][s], inflight[i][s]));
                    }
                }
                struct msg *m;
                while ((m = client_wait(&cs[i], 0)) != NULL) {
                    int s = m->corr[0] - '0';
                    ASSERT_STR(m->payload, (size_t)m->len, "+OK\r\n");
                    snprintf(acked[nacked].key, 32, "%s", inflight[i][s]);
                    snprintf(acked[nacked].version, 64, "%s", msg_user(m, "__ts"));
                    nacked++;
                    inflight[i][s][0] = '\0';
                }
            }
        }
        broker_kill9(&b);
        for (int i = 0; i < WRITERS; i++)
            client_close(&cs[i]);
        broker_start(&b); /* the store opens cleanly, or this fails */
    }
    fprintf(stderr, "  %d kill -9 rounds, %d acknowledged writes checked\n", rounds, nacked);
    ASSERT_TRUE(nacked > 100);
    /* Every acknowledged write is there, with its version. */
    struct client r;
    char rr[64];
    client_connect_rr(&r, b.port, "verifier", rr, sizeof rr);
    for (int i = 0; i < nacked; i++) {
        struct msg *m = request(&r, rr, "v", NULL, NULL, W("GET", acked[i].key));
        ASSERT_TRUE(m != NULL);
        char want[64];
        int wn = snprintf(want, sizeof want, "$%zu\r\n%s\r\n", strlen(acked[i].key), acked[i].key);
        ASSERT_MEM(m->payload, (size_t)m->len, want, (size_t)wn);
        ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), acked[i].version,
                   strlen(acked[i].version));
    }
    client_close(&r);
    broker_stop(&b);
}

TEST(reliability_kill9_rounds_keep_acknowledged_writes)
{
    kill9_rounds("");
}

/* Group commit: the commit runs on another thread while requests queue. */
TEST(reliability_kill9_rounds_fsync_always)
{
    kill9_rounds("plugin_opt_fsync always\n");
}

/* Checkpoints every few milliseconds: the kill lands before, during and
 * after them, and the restart replays whatever journal it finds. */
TEST(reliability_kill9_rounds_frequent_checkpoints)
{
    kill9_rounds("plugin_opt_checkpoint_interval_ms 5\nplugin_opt_journal_max_bytes 65536\n");
}

/* ---- linearizability -------------------------------------------------- */

#define CLIENTS 16
#define KEYS 3
#define OPS 3000

/* OPS operations from CLIENTS clients, alternately on the brokers at
 * port_a and port_b (the same one for a single broker); fault(ctx) runs
 * once, halfway. With may_refuse, "the store is unavailable" answers are
 * accepted as operations of unknown outcome. Returns how many there were. */
static int linearizable_run(int port_a, int port_b, bool may_refuse, void (*fault)(void *ctx), void *ctx)
{
    static struct lin_load l;
    lin_load_init(&l, CLIENTS, KEYS, "r", OPS, may_refuse);
    for (int i = 0; i < CLIENTS; i++)
        lin_load_connect(&l, i, i % 2 ? port_b : port_a);
    uint64_t deadline = now_ms() + 60000;
    while (l.n < OPS && now_ms() < deadline) {
        if (fault && l.n >= OPS / 2) {
            fault(ctx);
            fault = NULL;
            l.mark = l.n;
        }
        lin_load_step(&l);
    }
    /* All issued in time. (More: stray answers are recorded in the
     * history too, for lin_check to report.) */
    ASSERT_TRUE(l.n >= OPS);
    int unknown = lin_load_finish(&l, 30000);
    if (!may_refuse)
        ASSERT_EQ(unknown, 0); /* every request answered */
    /* The store served again after the fault (a quorum was left): some
     * requests issued after it were answered, not all refused. */
    if (l.mark >= 0) {
        fprintf(stderr, "  after the fault: %d requests answered\n", l.answered);
        ASSERT_TRUE(l.answered > 0);
    }
    return unknown;
}

static void linearizable_histories(const char *extra)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "%s", extra);
    broker_start(&b);
    linearizable_run(b.port, b.port, false, NULL, NULL);
    fprintf(stderr, "  %d operations from %d clients on %d keys: linearizable\n", OPS, CLIENTS, KEYS);
    broker_stop(&b);
}

TEST(reliability_linearizable_histories)
{
    linearizable_histories("");
}

/* Requests that wait for a commit under way run in the next batch: still
 * one order consistent with real time. */
TEST(reliability_linearizable_histories_fsync_always)
{
    linearizable_histories("plugin_opt_fsync always\n");
}

/* A full queue (here: any request at all) waits for the commit in the
 * request's own callback; still one order consistent with real time. */
TEST(reliability_linearizable_histories_full_queue)
{
    linearizable_histories("plugin_opt_fsync always\nplugin_opt_max_queued_bytes 1\n");
}

/* Requests queue behind checkpoints on the committing thread, often. */
TEST(reliability_linearizable_histories_frequent_checkpoints)
{
    linearizable_histories("plugin_opt_checkpoint_interval_ms 2\n");
}

static void kill_etcd_leader(void *ctx)
{
    struct etcd_cluster *c = ctx;
    int leader = etcd_cluster_leader(c);
    ASSERT_TRUE(leader >= 0);
    etcd_member_kill9(c, leader);
    fprintf(stderr, "  halfway: etcd member %d, the leader, killed with SIGKILL\n", leader);
}

/* Two brokers on one etcd cluster, the clients split between them, the
 * etcd leader killed halfway: one history, linearizable. */
TEST(reliability_linearizable_across_brokers_with_a_leader_kill)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a = {0}, b = {0};
    const char *names[] = {"lin-a", "lin-b"};
    struct broker *bs[] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        snprintf(bs[i]->name, sizeof bs[i]->name, "%s", names[i]);
        snprintf(bs[i]->data, sizeof bs[i]->data, "%s/data-%s", test_tmpdir(), names[i]);
        snprintf(bs[i]->extra, sizeof bs[i]->extra,
                 "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_node_id %s\n"
                 "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 3000\n",
                 c.endpoints, names[i]);
        broker_start(bs[i]);
    }
    int unknown = linearizable_run(a.port, b.port, true, kill_etcd_leader, &c);
    fprintf(stderr, "  %d operations from %d clients on two brokers, %d keys: linearizable (%d of unknown "
            "outcome)\n", OPS, CLIENTS, KEYS, unknown);
    broker_stop(&a);
    broker_stop(&b);
    etcd_cluster_stop(&c);
}

/* Whether the checker fails the history (in a child: a failed assertion
 * ends the process). */
static bool checker_fails(struct lin_op *ops, int n)
{
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr); /* the expected complaints */
        lin_check(ops, n, KEYS);
        _exit(0); /* not caught */
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

/* A broken history must be caught: the checker is not vacuous. */
TEST(reliability_checker_catches_violations)
{
    static struct lin_op ops[4];
    memset(ops, 0, sizeof ops);
    /* SET v1 (version 10) finishes, then a GET starting later sees nothing. */
    ops[0] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 1, .done = 2, .ok = true, .has_version = true};
    snprintf(ops[0].value, sizeof ops[0].value, "a");
    ops[0].version.wall = 10;
    ops[1] = (struct lin_op){.kind = LIN_GET, .key = 0, .invoked = 5, .done = 6, .ok = false};
    ASSERT_TRUE(checker_fails(ops, 2));
    /* A stale read: a newer version finished before the read began. */
    ops[1] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 3, .done = 4, .ok = true, .has_version = true};
    snprintf(ops[1].value, sizeof ops[1].value, "b");
    ops[1].version.wall = 20;
    ops[2] = (struct lin_op){.kind = LIN_GET, .key = 0, .invoked = 5, .done = 6, .ok = true, .has_version = true};
    snprintf(ops[2].got, sizeof ops[2].got, "a");
    ops[2].version.wall = 10;
    ASSERT_TRUE(checker_fails(ops, 3));
    /* And the same history read correctly passes. */
    snprintf(ops[2].got, sizeof ops[2].got, "b");
    ops[2].version.wall = 20;
    lin_check(ops, 3, KEYS);
    /* A write of unknown outcome may have happened: a later read of its
     * value passes; a read of a value nobody wrote does not. */
    ops[3] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 7, .done = 8, .unknown = true};
    snprintf(ops[3].value, sizeof ops[3].value, "c");
    ops[2] = (struct lin_op){.kind = LIN_GET, .key = 0, .invoked = 9, .done = 10, .ok = true, .has_version = true};
    snprintf(ops[2].got, sizeof ops[2].got, "c");
    ops[2].version.wall = 30;
    lin_check(ops, 4, KEYS);
    snprintf(ops[2].got, sizeof ops[2].got, "d");
    ASSERT_TRUE(checker_fails(ops, 4));
    /* A VDEL of "v" that deleted "vv" (a comparison of the named value's
     * length only), and one of "vv" answered -1 while only "vv" was there. */
    ops[0] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 1, .done = 2, .ok = true, .has_version = true};
    snprintf(ops[0].value, sizeof ops[0].value, "vv");
    ops[0].version.wall = 10;
    ops[1] = (struct lin_op){.kind = LIN_VDEL, .key = 0, .invoked = 3, .done = 4, .count = -1};
    snprintf(ops[1].value, sizeof ops[1].value, "v");
    ops[2] = (struct lin_op){.kind = LIN_VDEL, .key = 0, .invoked = 5, .done = 6, .ok = true, .count = 1,
                         .has_version = true};
    snprintf(ops[2].value, sizeof ops[2].value, "vv");
    ops[2].version.wall = 10;
    lin_check(ops, 3, KEYS); /* the correct history passes */
    for (int wrong = 0; wrong < 2; wrong++) {
        snprintf(ops[wrong + 1].value, sizeof ops[wrong + 1].value, "%s", wrong == 0 ? "vv" : "v");
        ASSERT_TRUE(checker_fails(ops, 3));
        snprintf(ops[wrong + 1].value, sizeof ops[wrong + 1].value, "%s", wrong == 0 ? "v" : "vv");
    }
    /* A read of the first of three states, begun after the third was
     * written: stale, though the second was still being written. */
    ops[0] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 1, .done = 2, .ok = true, .has_version = true};
    snprintf(ops[0].value, sizeof ops[0].value, "a");
    ops[0].version.wall = 10;
    ops[1] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 3, .done = 50, .ok = true, .has_version = true};
    snprintf(ops[1].value, sizeof ops[1].value, "b");
    ops[1].version.wall = 20;
    ops[2] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 4, .done = 5, .ok = true, .has_version = true};
    snprintf(ops[2].value, sizeof ops[2].value, "c");
    ops[2].version.wall = 30;
    ops[3] = (struct lin_op){.kind = LIN_GET, .key = 0, .invoked = 6, .done = 7, .ok = true, .has_version = true};
    snprintf(ops[3].got, sizeof ops[3].got, "a");
    ops[3].version.wall = 10;
    ASSERT_TRUE(checker_fails(ops, 4));
    snprintf(ops[3].got, sizeof ops[3].got, "c");
    ops[3].version.wall = 30;
    lin_check(ops, 4, KEYS);
    /* Absent after a finished write: only if a deletion, perhaps one of
     * unknown outcome, began before the read ended. */
    ops[1] = (struct lin_op){.kind = LIN_GET, .key = 0, .invoked = 3, .done = 4};
    ops[2] = (struct lin_op){.kind = LIN_DEL, .key = 0, .invoked = 5, .done = 6, .unknown = true};
    ASSERT_TRUE(checker_fails(ops, 3));
    ops[2].invoked = 4;
    lin_check(ops, 3, KEYS);
    ops[2].invoked = 5;
    ops[1].done = 5;
    lin_check(ops, 3, KEYS);
    /* A write of unknown outcome took effect after the finished one (a
     * DEL removed its version), then a GET finds nothing: absent, as that
     * DEL began before the GET ended; without the DEL, a violation. */
    ops[1] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 3, .done = 4, .unknown = true};
    snprintf(ops[1].value, sizeof ops[1].value, "u");
    ops[2] = (struct lin_op){.kind = LIN_DEL, .key = 0, .invoked = 5, .done = 6, .ok = true, .count = 1,
                         .has_version = true};
    ops[2].version.wall = 20;
    ops[3] = (struct lin_op){.kind = LIN_GET, .key = 0, .invoked = 7, .done = 8};
    lin_check(ops, 4, KEYS);
    ops[2].invoked = 9;
    ops[2].done = 10;
    ASSERT_TRUE(checker_fails(ops, 4));
    /* ...and with no write of unknown outcome begun before the DEL ended,
     * its version explains nothing: a violation too. */
    ops[2].invoked = 5;
    ops[2].done = 6;
    ops[1].invoked = 7;
    ASSERT_TRUE(checker_fails(ops, 4));
    /* A DEL that deleted (1) names the version it deleted: a state that was
     * there. SET (version 10), then two DELs one after the other that both
     * deleted it: the second deleted a state already gone. Answered 0, it
     * passes. */
    ops[0] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 1, .done = 2, .ok = true, .has_version = true};
    snprintf(ops[0].value, sizeof ops[0].value, "a");
    ops[0].version.wall = 10;
    ops[1] = (struct lin_op){.kind = LIN_DEL, .key = 0, .invoked = 3, .done = 4, .ok = true, .count = 1,
                         .has_version = true};
    ops[1].version.wall = 10;
    ops[2] = ops[1];
    ops[2].invoked = 5;
    ops[2].done = 6;
    ASSERT_TRUE(checker_fails(ops, 3));
    ops[2] = (struct lin_op){.kind = LIN_DEL, .key = 0, .invoked = 5, .done = 6};
    lin_check(ops, 3, KEYS);
    /* A DEL of version 10 begun after a SET of version 20 ended: it deleted
     * a state already replaced. Begun before that SET ended, it passes. */
    ops[1] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 3, .done = 4, .ok = true, .has_version = true};
    snprintf(ops[1].value, sizeof ops[1].value, "b");
    ops[1].version.wall = 20;
    ops[2] = (struct lin_op){.kind = LIN_DEL, .key = 0, .invoked = 5, .done = 6, .ok = true, .count = 1,
                         .has_version = true};
    ops[2].version.wall = 10;
    ASSERT_TRUE(checker_fails(ops, 3));
    ops[1].done = 7;
    lin_check(ops, 3, KEYS);
    /* A DEL that ended before the write of the state it deleted began. */
    ops[1] = (struct lin_op){.kind = LIN_DEL, .key = 0, .invoked = 0, .done = 1, .ok = true, .count = 1,
                         .has_version = true};
    ops[0].invoked = 2;
    ops[0].done = 3;
    ops[1].version.wall = 10;
    ASSERT_TRUE(checker_fails(ops, 2));
    /* A DEL of version 99, which no write made. */
    ops[0] = (struct lin_op){.kind = LIN_DEL, .key = 0, .invoked = 1, .done = 2, .ok = true, .count = 1,
                         .has_version = true};
    ops[0].version.wall = 99;
    ASSERT_TRUE(checker_fails(ops, 1));
    /* A write of unknown outcome explains it, once: a second DEL of that
     * version, begun after the first ended, deleted it again. */
    ops[1] = (struct lin_op){.kind = LIN_SET, .key = 0, .invoked = 0, .done = UINT64_MAX, .unknown = true};
    snprintf(ops[1].value, sizeof ops[1].value, "u");
    lin_check(ops, 2, KEYS);
    ops[2] = ops[0];
    ops[2].invoked = 3;
    ops[2].done = 4;
    ASSERT_TRUE(checker_fails(ops, 3));
    /* An answer with no request in flight (a duplicate): the load records
     * it in the history, which then fails. */
    ops[0] = (struct lin_op){.key = -1, .stray = true, .invoked = 1, .done = 1};
    snprintf(ops[0].value, sizeof ops[0].value, "op7");
    snprintf(ops[0].got, sizeof ops[0].got, "+OK..");
    ASSERT_TRUE(checker_fails(ops, 1));
}

TEST(reliability_per_client_limits)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_max_registrations_per_client 5\n");
    broker_start(&b);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "greedy", r, sizeof r);
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        struct msg *m = request(&c, r, "x", NULL, NULL, W("KEYNOTIFY", key));
        PAYLOAD(m, "+OK\r\n");
    }
    struct msg *m = request(&c, r, "x", NULL, NULL, W("KEYNOTIFY", "k5"));
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    /* Other clients are not affected. */
    struct client d;
    char rd[64];
    client_connect_rr(&d, b.port, "modest", rd, sizeof rd);
    m = request(&d, rd, "x", NULL, NULL, W("KEYNOTIFY", "k5"));
    PAYLOAD(m, "+OK\r\n");
    client_close(&c);
    client_close(&d);
    broker_stop(&b);

    /* Keys may be long: the bytes of the registered keys are bounded too
     * (max_registration_bytes); the greedy client's go back when it
     * leaves. */
    struct broker e = {0};
    snprintf(e.extra, sizeof e.extra, "plugin_opt_max_registration_bytes 100000\n");
    broker_start(&e);
    client_connect_rr(&c, e.port, "greedy", r, sizeof r);
    static char key[30001];
    for (int i = 0; i < 4; i++) {
        memset(key, 'a' + i, 30000);
        m = request(&c, r, "x", NULL, NULL, W("KEYNOTIFY", key));
        if (i < 3)
            PAYLOAD(m, "+OK\r\n");
        else
            PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    }
    client_connect_rr(&d, e.port, "modest", rd, sizeof rd);
    m = request(&d, rd, "x", NULL, NULL, W("KEYNOTIFY", key)); /* 90,000 + 30,000 */
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    client_close(&c);
    /* The broker drops the greedy client's registrations when it sees it
     * go, which may come after this client's next request (valgrind). */
    bool room = false;
    for (int i = 0; i < 100 && !room; i++) {
        m = request(&d, rd, "y", NULL, NULL, W("KEYNOTIFY", key));
        room = m->len == 5 && memcmp(m->payload, "+OK\r\n", 5) == 0;
        if (!room) {
            PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
            usleep(50 * 1000);
        }
    }
    ASSERT_TRUE(room);
    client_close(&d);
    broker_stop(&e);
}
