/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_powerloss.c - power cuts under load: the broker runs with the
 * power-loss simulator preloaded (tests/powerloss/powerloss.h), is killed
 * at a random moment, its data directory is cut back to what a disk could
 * hold, and it starts again on that. */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../powerloss/powerloss.h"
#include "../test.h"
#include "harness.h"

#define WRITERS 4
#define INFLIGHT 8
#define MAX_ACKED 150000
#define MIN_ROUND_ACKED 40 /* so that 3 rounds acknowledge more than 100 writes */

struct rig {
    struct broker b;
    char state[600];
    unsigned seed;
    int cuts;
    int checkpoint_cuts; /* cuts that fell while the data file was written */
    uint64_t journal_syncs; /* the syncs of the journal the simulator saw */
    struct pl_cut_report total;
};

/* Cuts per run: SS_POWERLOSS_CUTS (make stress: 50), else 10 (3 in the
 * sanitizer runs' quick mode). */
static int cuts_wanted(void)
{
    const char *s = getenv("SS_POWERLOSS_CUTS");
    int n = s ? atoi(s) : 0;
    return n > 0 && n <= 1000 ? n : test_quick() ? 3 : 10;
}

/* The broker on tmpdir/data with the simulator preloaded (found beside
 * the plugin, in the build's tests/powerloss/). */
static void rig_start(struct rig *r, const char *extra)
{
    memset(r, 0, sizeof *r);
    r->seed = (unsigned)now_ms();
    fprintf(stderr, "  seed %u\n", r->seed);
    snprintf(r->state, sizeof r->state, "%s/powerloss", test_tmpdir());
    ASSERT_EQ(mkdir(r->state, 0700), 0);
    snprintf(r->b.data, sizeof r->b.data, "%s/data", test_tmpdir());
    snprintf(r->b.extra, sizeof r->b.extra, "%s", extra);
    const char *plugin = getenv("SS_PLUGIN");
    ASSERT_TRUE(plugin != NULL);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", plugin);
    snprintf(r->b.preload, sizeof r->b.preload, "%s/tests/powerloss/powerloss.so", dirname(dir));
    if (access(r->b.preload, R_OK) != 0)
        test_fail(__FILE__, __LINE__, "the simulator is not built (make build/plain/tests/powerloss/powerloss.so)");
    setenv("SS_POWERLOSS_DIR", r->b.data, 1);
    setenv("SS_POWERLOSS_STATE", r->state, 1);
    broker_start(&r->b);
}

/* The simulator stops the broker when a file changed behind its back. */
static void rig_check_log(const struct rig *r)
{
    if (broker_log_has(&r->b, "powerloss simulator:"))
        test_fail(__FILE__, __LINE__, "the simulator stopped the broker (see broker.log)");
}

/* A power cut now, and the broker started again on what is left: it must
 * open (broker_start fails the test otherwise). */
static void rig_cut(struct rig *r)
{
    broker_kill9(&r->b);
    rig_check_log(r);
    r->journal_syncs += pl_syncs(r->state, "journal");
    struct pl_cut_report rep;
    ASSERT_EQ(pl_cut(r->b.data, r->state, &r->seed, &rep), 0);
    fprintf(stderr, "  cut %d: unsynced changes kept/torn/lost: %s\n", r->cuts + 1,
            rep.files ? rep.detail : "none");
    r->checkpoint_cuts += strstr(rep.detail, "data.mdb") != NULL;
    r->cuts++;
    r->total.files += rep.files;
    r->total.kept += rep.kept;
    r->total.torn += rep.torn;
    r->total.dropped += rep.dropped;
    r->total.lost_bytes += rep.lost_bytes;
    broker_start(&r->b);
}

struct acked {
    char key[24];
    char version[64];
    uint64_t at_ms; /* when the answer came */
    int round;
};

/* Values of many lengths, so that cuts fall in many places of a frame. */
static int value_of(const char *key, int i, char *out, size_t cap)
{
    return snprintf(out, cap, "%s-%.*s", key, i % 200,
                    "ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                    "ppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                    "pppppppppppppppppppppp");
}

/* SETs of new keys from WRITERS clients, INFLIGHT in flight each, for
 * 100-400 ms; then a cut in the middle of it. Returns the cut's time. */
static uint64_t load_then_cut(struct rig *r, int round, struct acked *acked, int *nacked, int *seq)
{
    struct client cs[WRITERS];
    char resp[WRITERS][64];
    for (int i = 0; i < WRITERS; i++) {
        char id[32];
        snprintf(id, sizeof id, "p%d-%d", round, i);
        client_connect_rr(&cs[i], r->b.port, id, resp[i], sizeof resp[i]);
    }
    char inflight[WRITERS][INFLIGHT][24];
    memset(inflight, 0, sizeof inflight);
    /* A random 100-400 ms of load, and at least MIN_ROUND_ACKED answers
     * however slow the broker runs (under valgrind a round may answer
     * few in 100 ms), for at most 20 s. */
    uint64_t start = now_ms(), end = start + 100 + (uint64_t)(rand_r(&r->seed) % 300);
    int from = *nacked;
    while ((now_ms() < end || (*nacked - from < MIN_ROUND_ACKED && now_ms() < start + 20000)) &&
           *nacked < MAX_ACKED - WRITERS * INFLIGHT) {
        for (int i = 0; i < WRITERS; i++) {
            for (int s = 0; s < INFLIGHT; s++) {
                if (inflight[i][s][0] == '\0') {
                    snprintf(inflight[i][s], sizeof inflight[i][s], "k%d", *seq);
                    char val[256], corr[16];
                    value_of(inflight[i][s], (*seq)++, val, sizeof val);
                    snprintf(corr, sizeof corr, "%d", s);
                    request_send(&cs[i], resp[i], corr, NULL, NULL, W("SET", inflight[i][s], val));
                }
            }
            struct msg *m;
            while ((m = client_wait(&cs[i], 0)) != NULL) {
                int s = m->corr[0] - '0';
                ASSERT_STR(m->payload, (size_t)m->len, "+OK\r\n");
                struct acked *a = &acked[(*nacked)++];
                snprintf(a->key, sizeof a->key, "%s", inflight[i][s]);
                snprintf(a->version, sizeof a->version, "%s", msg_user(m, "__ts"));
                a->at_ms = now_ms();
                a->round = round;
                inflight[i][s][0] = '\0';
            }
        }
    }
    uint64_t cut_ms = now_ms();
    rig_cut(r);
    for (int i = 0; i < WRITERS; i++)
        client_close(&cs[i]);
    return cut_ms;
}

/* Every acknowledged write is there with its value and version, or
 * absent; absent is allowed only when it was acknowledged within
 * window_ms of the cut that followed it. Counts both kinds of loss. */
static void verify(struct rig *r, const struct acked *acked, int nacked, const uint64_t *cut_ms,
                   uint64_t window_ms, int *lost_allowed, int *lost_wrongly, uint64_t *oldest)
{
    struct client c;
    char rr[64];
    client_connect_rr(&c, r->b.port, "verifier", rr, sizeof rr);
    *lost_allowed = *lost_wrongly = 0;
    *oldest = 0;
    for (int i = 0; i < nacked; i++) {
        const struct acked *a = &acked[i];
        struct msg *m = request(&c, rr, "v", NULL, NULL, W("GET", a->key));
        ASSERT_TRUE(m != NULL);
        if (m->len == 5 && memcmp(m->payload, "$-1\r\n", 5) == 0) {
            uint64_t before = cut_ms[a->round] - a->at_ms;
            if (before <= window_ms) {
                ++*lost_allowed;
                if (before > *oldest)
                    *oldest = before;
            } else if (++*lost_wrongly <= 5) {
                fprintf(stderr, "  lost: %s, acknowledged %llu ms before the cut of round %d\n", a->key,
                        (unsigned long long)before, a->round);
            }
            continue;
        }
        char val[256], want[300];
        int vn = value_of(a->key, atoi(a->key + 1), val, sizeof val);
        int wn = snprintf(want, sizeof want, "$%d\r\n%s\r\n", vn, val);
        ASSERT_MEM(m->payload, (size_t)m->len, want, (size_t)wn);
        USER(m, "__ts", a->version);
    }
    client_close(&c);
}

/* window_ms: how long before a cut an acknowledged write may be lost. */
static void cuts_under_load(const char *extra, uint64_t window_ms)
{
    static struct rig r;
    rig_start(&r, extra);
    static struct acked acked[MAX_ACKED];
    uint64_t cut_ms[1000];
    int nacked = 0, seq = 0, rounds = cuts_wanted();
    for (int round = 0; round < rounds; round++)
        cut_ms[round] = load_then_cut(&r, round, acked, &nacked, &seq);
    int lost, lost_wrongly;
    uint64_t oldest;
    verify(&r, acked, nacked, cut_ms, window_ms, &lost, &lost_wrongly, &oldest);
    fprintf(stderr,
            "  %d cuts (%d during a checkpoint), %llu syncs of the journal, %d acknowledged writes; "
            "unsynced changes: %u kept, %u torn, "
            "%u lost (%llu bytes); %d writes acknowledged within %llu ms of a cut lost (the oldest %llu ms "
            "before), %d earlier ones lost\n",
            r.cuts, r.checkpoint_cuts, (unsigned long long)r.journal_syncs, nacked, r.total.kept, r.total.torn, r.total.dropped,
            (unsigned long long)r.total.lost_bytes, lost, (unsigned long long)window_ms,
            (unsigned long long)oldest, lost_wrongly);
    ASSERT_EQ(lost_wrongly, 0);
    ASSERT_TRUE(nacked > 100);
    ASSERT_TRUE(r.journal_syncs > 0); /* the simulator watched the journal */
    broker_stop(&r.b);
    rig_check_log(&r);
}

/* fsync always: every acknowledged write survives every cut, checkpoints
 * included (a small journal and a short interval make them frequent). */
TEST(powerloss_fsync_always_keeps_every_acknowledged_write)
{
    cuts_under_load("plugin_opt_fsync always\nplugin_opt_journal_max_bytes 65536\n"
                    "plugin_opt_checkpoint_interval_ms 20\n",
                    0);
}

/* fsync periodic: what was acknowledged more than fsync_interval_ms
 * before the cut, plus the time the fsync itself takes, survives, and the
 * store always opens. The fsync starts at most the interval after a write
 * and covers it once it returns: a cut during it may take the last
 * interval's writes with it. 100 ms for that fsync leaves room for a
 * loaded machine and the sanitizers (runs here lost at most 98 ms of an
 * interval of 100). */
TEST(powerloss_fsync_periodic_loses_at_most_the_interval)
{
    cuts_under_load("plugin_opt_fsync periodic\nplugin_opt_fsync_interval_ms 100\n"
                    "plugin_opt_journal_max_bytes 262144\n",
                    100 + 100);
}

/* fsync always: the i-th answer leaves after the i-th sync of the
 * journal, not before (the simulator counts completed syncs). */
TEST(powerloss_fsync_always_answers_after_the_journal_sync)
{
    static struct rig r;
    rig_start(&r, "plugin_opt_fsync always\n");
    struct client c;
    char rr[64];
    client_connect_rr(&c, r.b.port, "writer", rr, sizeof rr);
    uint64_t base = pl_syncs(r.state, "journal");
    for (int i = 1; i <= 50; i++) {
        char key[16], corr[16];
        snprintf(key, sizeof key, "s%d", i);
        snprintf(corr, sizeof corr, "c%d", i);
        ASSERT_REPLY(request(&c, rr, corr, NULL, NULL, W("SET", key, "v")), "+OK\r\n");
        uint64_t syncs = pl_syncs(r.state, "journal") - base;
        if (syncs < (uint64_t)i)
            fprintf(stderr, "  answer %d came after %llu syncs of the journal\n", i, (unsigned long long)syncs);
        ASSERT_TRUE(syncs >= (uint64_t)i);
    }
    fprintf(stderr, "  50 SETs answered one by one: %llu syncs of the journal\n",
            (unsigned long long)(pl_syncs(r.state, "journal") - base));
    client_close(&c);
    broker_stop(&r.b);
    rig_check_log(&r);
}
