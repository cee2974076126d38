/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cluster_locks.c - locks, renewals and deadlines on two brokers
 * while etcd members and brokers fail: fenced writes in token order, no two
 * holders at once, and every deadline kept. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/hlc.h"
#include "../test.h"
#include "cluster_util.h"
#include "etcd_cluster.h"
#include "harness.h"

enum lk_state { LK_ACQUIRE, LK_WRITE, LK_RELEASE };

/* A client of the lock test: one request in flight at a time. */
struct lk_client {
    struct client c;
    char id[16], resp[64];
    int port;
    bool busy;
    uint64_t sent_ms;
    enum lk_state state;
    char token[80]; /* LK_WRITE: the lock's fencing token */
    int n;
    /* Correlation data of the request under way: unique, as the SDKs make
     * it (an identical request with the same data and timestamp within a
     * millisecond would be a resend, answered from the resend cache). */
    char corr[24];
    unsigned seq;
};

/* Fresh correlation data for k's next request. */
static const char *lk_corr(struct lk_client *k, char kind)
{
    snprintf(k->corr, sizeof k->corr, "%c%u", kind, ++k->seq);
    return k->corr;
}

/* A fenced write the store accepted: its token and its version. */
struct lk_accepted {
    ss_hlc token, version;
};

static int lk_by_version(const void *a, const void *b)
{
    return ss_hlc_compare(&((const struct lk_accepted *)a)->version, &((const struct lk_accepted *)b)->version);
}

static void lk_connect(struct lk_client *k, int port)
{
    k->port = port;
    k->busy = false;
    client_connect_rr(&k->c, port, k->id, k->resp, sizeof k->resp);
}

/* The answer of k's request, if it came; NULL otherwise. */
static struct msg *lk_answer(struct lk_client *k)
{
    if (!k->busy)
        return NULL;
    struct msg *m = client_wait(&k->c, 0);
    if (m != NULL) {
        k->busy = false;
        /* The answer to this request, not to an earlier one. */
        if (m->corr_len != (int)strlen(k->corr) || memcmp(m->corr, k->corr, strlen(k->corr)) != 0)
            printf("  %s waited for the answer to %s and got one to %.*s: %.*s\n", k->id, k->corr, m->corr_len,
                   m->corr ? m->corr : "", m->len, (const char *)m->payload);
        ASSERT_MEM(m->corr, (size_t)m->corr_len, k->corr, strlen(k->corr));
    }
    return m;
}

static bool lk_unavailable(const struct msg *m)
{
    return payload_is(m, UNAVAILABLE);
}

/* Lockers take a lock (SET NX PX), write a fenced resource with its
 * token, and release it (VDEL); a renewer keeps a lease alive (SET NEX
 * PX); a reader writes keys with a 200 ms deadline and reads them until
 * they are gone. Clients on both brokers, while the etcd leader is
 * killed, a follower stopped, and one broker killed (its clients move to
 * the other); in a longer run (make stress) the rounds repeat, the dead
 * broker starts again and the other is killed next. Afterwards: the tokens the resource accepted only increase
 * in version order, no GET begun after a key's deadline returned it, and
 * every member's history hashes the same. */
TEST(cluster_locks_renewals_and_deadlines_under_faults)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    struct broker a, b;
    const char *opts = "plugin_opt_etcd_timeout_ms 1000\nplugin_opt_etcd_unavailable_ms 3000\n";
    cluster_broker(&a, &c, "locks-a", opts);
    cluster_broker(&b, &c, "locks-b", opts);
    enum { LOCKERS = 4, RENEWER = LOCKERS, READER = LOCKERS + 1, ALL = LOCKERS + 2 };
    static struct lk_client ks[ALL];
    for (int i = 0; i < ALL; i++) {
        snprintf(ks[i].id, sizeof ks[i].id, i < LOCKERS ? "locker%d" : i == RENEWER ? "renewer" : "reader", i);
        lk_connect(&ks[i], i % 2 ? b.port : a.port);
    }
    static struct lk_accepted accepted[200000];
    int naccepted = 0, refused = 0, acquired = 0, unknown = 0, renewed = 0, lapsed = 0, reads = 0;
    int expiring = 0, late_reads = 0;
    bool renewer_has_lease = false;
    uint64_t tmp_deadline = 0; /* the reader's key: latest possible deadline */
    int tmp_n = 0;
    /* 14 s; make stress runs it longer (SS_CLUSTER_SOAK_S), the etcd
     * faults again every 12 s. */
    const char *soak = getenv("SS_CLUSTER_SOAK_S");
    uint64_t run_ms = soak && atoi(soak) > 14 ? (uint64_t)atoi(soak) * 1000u : 14000u;
    uint64_t start = now_ms(), end = start + run_ms, cycle_start = start;
    int fault = 0, stopped = -1, cycles = 1;
    int broker_kills = 0, broker_restarts = 0;
    struct broker *brokers[2] = {&a, &b};
    struct broker *dead = NULL; /* killed, to start again in the next round */
    while (now_ms() < end) {
        uint64_t t = now_ms() - cycle_start;
        if (fault == 5 && t >= 12000 && now_ms() + 12000 <= end) {
            cycle_start = now_ms(); /* the next round of etcd faults */
            fault = 0;
            cycles++;
            t = 0;
        }
        /* The faults, at fixed times. A broker killed in the last round
         * starts again first (its node id's claim has lapsed by then). */
        if (fault == 0 && dead != NULL) {
            broker_start(dead);
            broker_restarts++;
            dead = NULL;
        }
        if (fault == 0 && t >= 3000) {
            int leader = etcd_cluster_leader(&c);
            ASSERT_TRUE(leader >= 0);
            etcd_member_kill9(&c, leader);
            stopped = leader;
            fault++;
        } else if (fault == 1 && t >= 5000) {
            etcd_member_restart(&c, stopped);
            fault++;
        } else if (fault == 2 && t >= 7000) {
            int leader = etcd_cluster_leader(&c);
            ASSERT_TRUE(leader >= 0);
            stopped = (leader + 1) % 3;
            etcd_member_sigstop(&c, stopped);
            fault++;
        } else if (fault == 3 && t >= 8500) {
            ASSERT_EQ(kill(c.pid[stopped], SIGCONT), 0);
            fault++;
        } else if (fault == 4 && t >= 10000) {
            /* A broker dies (a, then b, in turns); its clients go on
             * through the other. */
            struct broker *victim = brokers[broker_kills % 2], *other = brokers[(broker_kills + 1) % 2];
            broker_kill9(victim);
            broker_kills++;
            dead = victim;
            for (int i = 0; i < ALL; i++) {
                if (ks[i].port != victim->port)
                    continue;
                if (ks[i].busy)
                    unknown++; /* its answer will never come */
                client_close(&ks[i].c);
                lk_connect(&ks[i], other->port);
            }
            fault++;
        }
        for (int i = 0; i < ALL; i++) {
            struct lk_client *k = &ks[i];
            struct msg *m = lk_answer(k);
            if (k->busy)
                continue;
            if (m != NULL)
                ASSERT_TRUE(now_ms() - k->sent_ms < 20000);
            if (i < LOCKERS) {
                if (m != NULL && lk_unavailable(m)) {
                    unknown++;
                    k->state = LK_ACQUIRE;
                } else if (m != NULL && k->state == LK_ACQUIRE) {
                    if (payload_is(m, "+OK\r\n")) {
                        snprintf(k->token, sizeof k->token, "%s", msg_user(m, "__ts"));
                        k->state = LK_WRITE;
                        acquired++;
                    } else {
                        ASSERT_TRUE(payload_is(m, ":-1\r\n"));
                    }
                } else if (m != NULL && k->state == LK_WRITE) {
                    if (payload_is(m, "+OK\r\n")) {
                        ASSERT_TRUE(naccepted < 200000);
                        const char *v = msg_user(m, "__ts");
                        ASSERT_EQ(ss_hlc_parse((const uint8_t *)k->token, strlen(k->token),
                                               &accepted[naccepted].token), 0);
                        ASSERT_EQ(ss_hlc_parse((const uint8_t *)v, strlen(v), &accepted[naccepted].version), 0);
                        naccepted++;
                    } else {
                        if (!payload_is(m, "-ERR the request fencing token is a lower version than "
                                           "the fencing token protecting the resource\r\n"))
                            printf("  a fenced write of %s was answered %.*s (correlation data %.*s)\n", k->id, m->len,
                                   (const char *)m->payload, m->corr_len, m->corr ? m->corr : "");
                        ASSERT_TRUE(payload_is(m, "-ERR the request fencing token is a lower version than "
                                                  "the fencing token protecting the resource\r\n"));
                        refused++;
                    }
                    k->state = LK_RELEASE;
                } else if (m != NULL && k->state == LK_RELEASE) {
                    ASSERT_TRUE(payload_is(m, ":1\r\n") || payload_is(m, ":0\r\n") || payload_is(m, ":-1\r\n"));
                    k->state = LK_ACQUIRE;
                }
                char val[32];
                snprintf(val, sizeof val, "%s-%d", k->id, k->n++);
                if (k->state == LK_ACQUIRE)
                    request_send(&k->c, k->resp, lk_corr(k, 'l'), NULL, NULL, W("SET", "lock", k->id, "NX", "PX", "2000"));
                else if (k->state == LK_WRITE)
                    request_send(&k->c, k->resp, lk_corr(k, 'w'), NULL, k->token, W("SET", "protected", val));
                else
                    request_send(&k->c, k->resp, lk_corr(k, 'r'), NULL, NULL, W("VDEL", "lock", k->id));
            } else if (i == RENEWER) {
                if (m != NULL && payload_is(m, "+OK\r\n")) {
                    renewed += renewer_has_lease;
                    renewer_has_lease = true;
                } else if (m != NULL && payload_is(m, ":-1\r\n")) {
                    lapsed++; /* the lease expired (a fault outlasted it): take it again */
                    renewer_has_lease = false;
                } else if (m != NULL) {
                    ASSERT_TRUE(lk_unavailable(m));
                    unknown++;
                    renewer_has_lease = false;
                }
                if (renewer_has_lease)
                    request_send(&k->c, k->resp, lk_corr(k, 'n'), NULL, NULL, W("SET", "lease", "held", "NEX", "PX", "1500"));
                else
                    request_send(&k->c, k->resp, lk_corr(k, 'n'), NULL, NULL, W("SET", "lease", "held", "PX", "1500"));
            } else {
                /* The reader: "SET tmp<n> x PX 200", then GETs until gone. */
                char key[16];
                snprintf(key, sizeof key, "tmp%d", tmp_n);
                if (m != NULL && lk_unavailable(m)) {
                    unknown++;
                    tmp_deadline = 0;
                    tmp_n++;
                } else if (m != NULL && tmp_deadline == 0) {
                    ASSERT_TRUE(payload_is(m, "+OK\r\n"));
                    tmp_deadline = now_ms() + 200; /* the deadline is at most this */
                    expiring++;
                } else if (m != NULL) {
                    reads++;
                    if (payload_is(m, "$1\r\nx\r\n")) {
                        /* Begun after the latest possible deadline: must
                         * have been absent. */
                        if (k->sent_ms > tmp_deadline + 1)
                            late_reads++;
                    } else {
                        ASSERT_TRUE(payload_is(m, "$-1\r\n"));
                        tmp_deadline = 0;
                        tmp_n++;
                    }
                }
                snprintf(key, sizeof key, "tmp%d", tmp_n);
                if (tmp_deadline == 0)
                    request_send(&k->c, k->resp, lk_corr(k, 't'), NULL, NULL, W("SET", key, "x", "PX", "200"));
                else
                    request_send(&k->c, k->resp, lk_corr(k, 't'), NULL, NULL, W("GET", key));
            }
            k->busy = true;
            k->sent_ms = now_ms();
        }
        usleep(200);
    }
    ASSERT_TRUE(fault == 5 && broker_kills == cycles && broker_restarts == cycles - 1);
    ASSERT_EQ(late_reads, 0);
    /* The fenced resource: in version order, tokens never went down. */
    qsort(accepted, (size_t)naccepted, sizeof accepted[0], lk_by_version);
    for (int i = 0; i + 1 < naccepted; i++)
        ASSERT_TRUE(ss_hlc_compare(&accepted[i].token, &accepted[i + 1].token) <= 0);
    ASSERT_TRUE(acquired > 0 && naccepted > 0 && expiring > 0 && renewed > 0);
    printf("  %d s, %d rounds of etcd faults, %d brokers killed, %d started again: %d locks taken, %d fenced "
           "writes accepted (tokens only increased) and %d refused; %d renewals, %d lapses; %d keys with "
           "deadlines, %d reads of them, none past the deadline; %d operations of unknown outcome\n",
           (int)(run_ms / 1000), cycles, broker_kills, broker_restarts, acquired, naccepted, refused, renewed,
           lapsed, expiring, reads, unknown);
    for (int i = 0; i < ALL; i++)
        client_close(&ks[i].c);
    broker_stop(dead == &a ? &b : &a);
    etcd_cluster_assert_same_history(&c);
    etcd_cluster_stop(&c);
}
