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

/* Microseconds on the monotonic clock: histories need finer stamps than
 * the milliseconds of a version. */
static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* One in-flight request per client, tracked by correlation data. */
struct pending {
    bool busy;
    char corr[16];
    uint64_t invoked, done;
};

static void send_words(struct client *c, const char *resp, const char *corr, const char *const *words)
{
    static uint8_t buf[1 << 17];
    int n = encode_request(buf, sizeof buf, words, NULL);
    mosquitto_property *props = NULL;
    char ts[200];
    snprintf(ts, sizeof ts, "%llu:0:%s", (unsigned long long)now_ms(), c->id);
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    ASSERT_EQ(client_publish(c, REQ_TOPIC, buf, n, 1, false, props), 0);
    mosquitto_property_free_all(&props);
}

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
    const int rounds = test_quick() ? 3 : 10;
    for (int round = 0; round < rounds; round++) {
        struct client cs[WRITERS];
        char resp[WRITERS][64];
        for (int i = 0; i < WRITERS; i++) {
            char id[32];
            snprintf(id, sizeof id, "w%d-%d", round, i);
            client_connect_rr(&cs[i], b.port, id, resp[i], sizeof resp[i]);
        }
        /* Keep 8 writes in flight per client for ~300 ms, then kill -9
         * in the middle of it. */
        char inflight[WRITERS][8][32];
        memset(inflight, 0, sizeof inflight);
        uint64_t end = now_ms() + 200 + (uint64_t)(rand() % 200);
        while (now_ms() < end && nacked < MAX_ACKED - 100) {
            for (int i = 0; i < WRITERS; i++) {
                for (int s = 0; s < 8; s++) {
                    if (inflight[i][s][0] == '\0') {
                        snprintf(inflight[i][s], 32, "k%d", seq++);
                        char corr[16];
                        snprintf(corr, sizeof corr, "%d", s);
                        send_words(&cs[i], resp[i], corr, W("SET", inflight[i][s], inflight[i][s]));
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

enum op_kind { OP_SET, OP_SETNX, OP_GET, OP_DEL, OP_VDEL };

struct op {
    enum op_kind kind;
    int key;
    char value[16];
    uint64_t invoked, done;
    /* outcome */
    bool ok;          /* SET applied / DEL, VDEL deleted / GET found */
    ss_hlc version;   /* version written, read, deleted, or current (NX failed) */
    bool has_version;
    int64_t count;    /* DEL/VDEL answer */
    char got[16];     /* GET value */
    bool unknown;     /* answered with an error: it may or may not have happened */
    int client;       /* who sent it (even: the first broker, odd: the second) */
};

#define CLIENTS 16
#define KEYS 3
#define OPS 3000

/* The values written and named by VDEL: of different lengths, each a
 * prefix of others, the empty one included, so that a comparison of fewer
 * bytes than both values hold deletes what it must not. */
static const char *const VALUES[] = {"v", "vv", "", "v1", "vvv", "v10", "v100"};
#define NVALUES (int)(sizeof VALUES / sizeof VALUES[0])

static int cmp_version(const struct op *a, const struct op *b)
{
    return ss_hlc_compare(&a->version, &b->version);
}

/* The checker: a register per key, its states ordered by version (the
 * server's linearization order), checked against real time. Operations
 * of unknown outcome take no part, except that a read may have seen what
 * a write of unknown outcome wrote (the same value, begun before the
 * read ended). */
static void report(const char *why, const struct op *o)
{
    char v[SS_HLC_TEXT_MAX + 1] = "";
    if (o->has_version)
        v[ss_hlc_format(&o->version, v)] = '\0';
    fprintf(stderr, "  violation: %s: op kind %d key %d value %s [%llu, %llu] ok %d count %lld version %s "
            "client %d\n", why, o->kind, o->key, o->value, (unsigned long long)o->invoked,
            (unsigned long long)o->done, o->ok, (long long)o->count, v, o->client);
}

/* The whole history, for a look at a violation (kept with SS_KEEP_TMP). */
static void dump_history(const struct op *ops, int n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/history.txt", test_tmpdir());
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    for (int i = 0; i < n; i++) {
        const struct op *o = &ops[i];
        char v[SS_HLC_TEXT_MAX + 1] = "";
        if (o->has_version)
            v[ss_hlc_format(&o->version, v)] = '\0';
        fprintf(f, "%d kind %d key %d value %s [%llu, %llu] ok %d count %lld version %s got %s unknown %d "
                "client %d\n", i, o->kind, o->key, o->value, (unsigned long long)o->invoked,
                (unsigned long long)o->done, o->ok, (long long)o->count, v, o->got, o->unknown, o->client);
    }
    fclose(f);
    fprintf(stderr, "  the history: %s\n", path);
}

#define VIOLATION(why, o)                                                               \
    do {                                                                                \
        report((why), (o));                                                             \
        violations++;                                                                   \
    } while (0)

/* A VDEL that deleted (1) removed a state holding exactly its value; one
 * answered -1 met, at some point while it ran, a state holding another
 * value (writes: the key's writes by version). Returns the violations. */
static int check_vdel(const struct op *ops, int n, struct op *const *writes, int nw, const struct op *o)
{
    int violations = 0;
    if (o->count == 1) {
        for (int j = 0; j < nw; j++)
            if (ss_hlc_compare(&writes[j]->version, &o->version) == 0 && strcmp(writes[j]->value, o->value) != 0) {
                VIOLATION("VDEL deleted a state holding another value", o);
                report("  the write of that state", writes[j]);
            }
        return violations;
    }
    bool possible = false;
    for (int j = 0; j < nw && !possible; j++) {
        if (strcmp(writes[j]->value, o->value) == 0 || writes[j]->invoked > o->done)
            continue;
        if (j + 1 < nw && writes[j + 1]->done < o->invoked)
            continue; /* overwritten before the VDEL began */
        bool deleted = false;
        for (int d = 0; d < n; d++)
            deleted = deleted || (ops[d].key == o->key && (ops[d].kind == OP_DEL || ops[d].kind == OP_VDEL) &&
                                  ops[d].count == 1 && ops[d].done < o->invoked &&
                                  ss_hlc_compare(&ops[d].version, &writes[j]->version) == 0);
        possible = !deleted;
    }
    for (int j = 0; j < n && !possible; j++)
        possible = ops[j].unknown && ops[j].key == o->key && (ops[j].kind == OP_SET || ops[j].kind == OP_SETNX) &&
                   ops[j].invoked <= o->done && strcmp(ops[j].value, o->value) != 0;
    if (!possible)
        VIOLATION("VDEL answered -1 with no other value present while it ran", o);
    return violations;
}

static void check_history(struct op *ops, int n)
{
    int violations = 0;
    for (int k = 0; k < KEYS; k++) {
        /* Writes that created a state, by version. */
        struct op *writes[OPS];
        int nw = 0;
        for (int i = 0; i < n; i++)
            if (ops[i].key == k && (ops[i].kind == OP_SET || ops[i].kind == OP_SETNX) && ops[i].ok &&
                !ops[i].unknown)
                writes[nw++] = &ops[i];
        for (int i = 0; i < nw; i++)
            for (int j = i + 1; j < nw; j++)
                if (cmp_version(writes[j], writes[i]) < 0) {
                    struct op *t = writes[i];
                    writes[i] = writes[j];
                    writes[j] = t;
                }
        /* Versions respect real time, and are unique. */
        for (int i = 0; i + 1 < nw; i++) {
            if (cmp_version(writes[i], writes[i + 1]) == 0)
                VIOLATION("two writes with one version", writes[i]);
            for (int j = i + 1; j < nw; j++)
                if (writes[j]->done < writes[i]->invoked)
                    VIOLATION("a later version finished before an earlier one began", writes[i]);
        }
        /* The op that ended state i: the next write, or a delete of it. */
        for (int i = 0; i < n; i++) {
            struct op *o = &ops[i];
            if (o->key != k || o->unknown)
                continue;
            if (o->kind == OP_VDEL && o->count != 0)
                violations += check_vdel(ops, n, writes, nw, o);
            bool is_read = o->kind == OP_GET || (o->kind == OP_SETNX && !o->ok);
            bool reads_absent = (o->kind == OP_GET && !o->ok) ||
                                ((o->kind == OP_DEL || o->kind == OP_VDEL) && o->count == 0);
            if (is_read && o->has_version) {
                /* Find the state it saw. */
                int s = -1;
                for (int j = 0; j < nw; j++)
                    if (ss_hlc_compare(&writes[j]->version, &o->version) == 0)
                        s = j;
                if (s < 0) {
                    bool maybe = false;
                    for (int j = 0; j < n; j++)
                        maybe = maybe || (ops[j].unknown && ops[j].key == k &&
                                          (ops[j].kind == OP_SET || ops[j].kind == OP_SETNX) &&
                                          ops[j].invoked <= o->done &&
                                          (o->kind != OP_GET || strcmp(ops[j].value, o->got) == 0));
                    if (!maybe)
                        VIOLATION("a version nobody wrote", o);
                    continue;
                }
                if (o->kind == OP_GET && strcmp(o->got, writes[s]->value) != 0)
                    VIOLATION("value of another version", o);
                if (writes[s]->invoked > o->done)
                    VIOLATION("read from the future", o);
                /* Any state after s fully written before the read began,
                 * that was not deleted... the read is stale if a later
                 * write finished before the read started. */
                if (s + 1 < nw && writes[s + 1]->done < o->invoked) {
                    VIOLATION("stale read: a newer write finished before", o);
                    report("  the write it saw", writes[s]);
                    report("  the newer write", writes[s + 1]);
                }
                /* A delete of s that finished before the read started. */
                for (int j = 0; j < n; j++)
                    if (ops[j].key == k && (ops[j].kind == OP_DEL || ops[j].kind == OP_VDEL) &&
                        ops[j].count == 1 && ss_hlc_compare(&ops[j].version, &o->version) == 0 &&
                        ops[j].done < o->invoked)
                        VIOLATION("read a value deleted before it began", o);
            } else if (reads_absent) {
                /* Absent must have been possible at some point of
                 * [invoked, done]: not after a write that finished before
                 * the read began, unless that state was deleted by an op
                 * that started before the read finished. */
                int last = -1; /* the latest state written before the read began */
                for (int j = 0; j < nw; j++)
                    if (writes[j]->done < o->invoked)
                        last = j;
                if (last < 0)
                    continue;
                bool gone = false;
                for (int j = last; j < nw && !gone; j++) {
                    for (int d = 0; d < n; d++)
                        if (ops[d].key == k && (ops[d].kind == OP_DEL || ops[d].kind == OP_VDEL) &&
                            ops[d].count == 1 &&
                            ss_hlc_compare(&ops[d].version, &writes[j]->version) == 0 &&
                            ops[d].invoked <= o->done)
                            gone = true;
                }
                if (!gone) {
                    VIOLATION("absent, but a write finished before and was not deleted", o);
                }
            }
        }
    }
    if (violations)
        dump_history(ops, n);
    ASSERT_EQ(violations, 0);
}

/* OPS operations from CLIENTS clients, alternately on the brokers at
 * port_a and port_b (the same one for a single broker); fault(ctx) runs
 * once, halfway. With may_refuse, "the store is unavailable" answers are
 * accepted as operations of unknown outcome. Returns how many there were. */
static int linearizable_run(int port_a, int port_b, bool may_refuse, void (*fault)(void *ctx), void *ctx)
{
    static struct client cs[CLIENTS];
    static char resp[CLIENTS][64];
    static struct op ops[OPS];
    memset(ops, 0, sizeof ops);
    int current[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        char id[32];
        snprintf(id, sizeof id, "lin%02d", i);
        client_connect_rr(&cs[i], i % 2 ? port_b : port_a, id, resp[i], sizeof resp[i]);
        current[i] = -1;
    }
    int unknown = 0;
    int issued = 0, completed = 0, vcount = 0;
    srand(7);
    uint64_t deadline = now_ms() + 60000;
    while (completed < OPS && now_ms() < deadline) {
        if (fault && completed >= OPS / 2) {
            fault(ctx);
            fault = NULL;
        }
        for (int i = 0; i < CLIENTS; i++) {
            if (current[i] < 0 && issued < OPS) {
                struct op *o = &ops[issued];
                current[i] = issued++;
                o->client = i;
                o->kind = (enum op_kind)(rand() % 5);
                o->key = rand() % KEYS;
                snprintf(o->value, sizeof o->value, "%s", VALUES[vcount++ % NVALUES]);
                char key[8];
                snprintf(key, sizeof key, "r%d", o->key);
                o->invoked = now_us();
                const char *const *w =
                    o->kind == OP_SET     ? W("SET", key, o->value)
                    : o->kind == OP_SETNX ? W("SET", key, o->value, "NX")
                    : o->kind == OP_GET   ? W("GET", key)
                    : o->kind == OP_DEL   ? W("DEL", key)
                                          : W("VDEL", key, o->value);
                /* Fresh correlation data for every request, as the SDKs do
                 * (a repeat of the same request would be answered once). */
                char corr[16];
                snprintf(corr, sizeof corr, "op%d", current[i]);
                send_words(&cs[i], resp[i], corr, w);
            }
            struct msg *m = client_wait(&cs[i], 0);
            if (m == NULL)
                continue;
            struct op *o = &ops[current[i]];
            o->done = now_us();
            current[i] = -1;
            completed++;
            const char *v = msg_user(m, "__ts");
            o->has_version = v != NULL;
            if (v)
                ASSERT_EQ(ss_hlc_parse((const uint8_t *)v, strlen(v), &o->version), 0);
            ss_reply rep;
            ASSERT_EQ(ss_codec_decode_reply(m->payload, (size_t)m->len, &rep), 0);
            if (may_refuse && rep.kind == SS_REPLY_ERROR) {
                /* Only the cluster's refusal is an acceptable error. */
                ASSERT_STR(m->payload, (size_t)m->len, "-ERR the store is unavailable\r\n");
                o->unknown = true;
                unknown++;
                continue;
            }
            switch (o->kind) {
            case OP_SET:
            case OP_SETNX:
                o->ok = rep.kind == SS_REPLY_SIMPLE;
                ASSERT_TRUE(o->ok || (o->kind == OP_SETNX && rep.kind == SS_REPLY_INT && rep.num == -1));
                ASSERT_TRUE(o->has_version);
                break;
            case OP_GET:
                o->ok = rep.kind == SS_REPLY_BULK;
                ASSERT_TRUE(o->ok || rep.kind == SS_REPLY_NIL);
                ASSERT_TRUE(o->ok == o->has_version);
                if (o->ok)
                    snprintf(o->got, sizeof o->got, "%.*s", (int)rep.str.len, (const char *)rep.str.data);
                break;
            case OP_DEL:
            case OP_VDEL:
                ASSERT_EQ(rep.kind, SS_REPLY_INT);
                o->count = rep.num;
                o->ok = rep.num == 1;
                ASSERT_TRUE(o->ok == o->has_version);
                break;
            }
        }
    }
    ASSERT_EQ(completed, OPS);
    check_history(ops, OPS);
    for (int i = 0; i < CLIENTS; i++)
        client_close(&cs[i]);
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
static bool checker_fails(struct op *ops, int n)
{
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr); /* the expected complaints */
        check_history(ops, n);
        _exit(0); /* not caught */
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) != 0;
}

/* A broken history must be caught: the checker is not vacuous. */
TEST(reliability_checker_catches_violations)
{
    static struct op ops[4];
    memset(ops, 0, sizeof ops);
    /* SET v1 (version 10) finishes, then a GET starting later sees nothing. */
    ops[0] = (struct op){.kind = OP_SET, .key = 0, .invoked = 1, .done = 2, .ok = true, .has_version = true};
    snprintf(ops[0].value, sizeof ops[0].value, "a");
    ops[0].version.wall = 10;
    ops[1] = (struct op){.kind = OP_GET, .key = 0, .invoked = 5, .done = 6, .ok = false};
    ASSERT_TRUE(checker_fails(ops, 2));
    /* A stale read: a newer version finished before the read began. */
    ops[1] = (struct op){.kind = OP_SET, .key = 0, .invoked = 3, .done = 4, .ok = true, .has_version = true};
    snprintf(ops[1].value, sizeof ops[1].value, "b");
    ops[1].version.wall = 20;
    ops[2] = (struct op){.kind = OP_GET, .key = 0, .invoked = 5, .done = 6, .ok = true, .has_version = true};
    snprintf(ops[2].got, sizeof ops[2].got, "a");
    ops[2].version.wall = 10;
    ASSERT_TRUE(checker_fails(ops, 3));
    /* And the same history read correctly passes. */
    snprintf(ops[2].got, sizeof ops[2].got, "b");
    ops[2].version.wall = 20;
    check_history(ops, 3);
    /* A write of unknown outcome may have happened: a later read of its
     * value passes; a read of a value nobody wrote does not. */
    ops[3] = (struct op){.kind = OP_SET, .key = 0, .invoked = 7, .done = 8, .unknown = true};
    snprintf(ops[3].value, sizeof ops[3].value, "c");
    ops[2] = (struct op){.kind = OP_GET, .key = 0, .invoked = 9, .done = 10, .ok = true, .has_version = true};
    snprintf(ops[2].got, sizeof ops[2].got, "c");
    ops[2].version.wall = 30;
    check_history(ops, 4);
    snprintf(ops[2].got, sizeof ops[2].got, "d");
    ASSERT_TRUE(checker_fails(ops, 4));
    /* A VDEL of "v" that deleted "vv" (a comparison of the named value's
     * length only), and one of "vv" answered -1 while only "vv" was there. */
    ops[0] = (struct op){.kind = OP_SET, .key = 0, .invoked = 1, .done = 2, .ok = true, .has_version = true};
    snprintf(ops[0].value, sizeof ops[0].value, "vv");
    ops[0].version.wall = 10;
    ops[1] = (struct op){.kind = OP_VDEL, .key = 0, .invoked = 3, .done = 4, .count = -1};
    snprintf(ops[1].value, sizeof ops[1].value, "v");
    ops[2] = (struct op){.kind = OP_VDEL, .key = 0, .invoked = 5, .done = 6, .ok = true, .count = 1,
                         .has_version = true};
    snprintf(ops[2].value, sizeof ops[2].value, "vv");
    ops[2].version.wall = 10;
    check_history(ops, 3); /* the correct history passes */
    for (int wrong = 0; wrong < 2; wrong++) {
        snprintf(ops[wrong + 1].value, sizeof ops[wrong + 1].value, "%s", wrong == 0 ? "vv" : "v");
        ASSERT_TRUE(checker_fails(ops, 3));
        snprintf(ops[wrong + 1].value, sizeof ops[wrong + 1].value, "%s", wrong == 0 ? "v" : "vv");
    }
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
}
