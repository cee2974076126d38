/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* nemesis.h - a cluster under load for faults to be made in: a 3-member
 * etcd cluster and two brokers, each a host of its own (netns.h), with
 * on each broker a writer, a locker, an observer and half of the clients
 * of a linearizability load; and the checks that what they were told was
 * true (every acknowledged write there and notified once, fenced writes
 * in token order, one linearizable history, the members agreeing). */
#ifndef SS_TEST_NEMESIS_H
#define SS_TEST_NEMESIS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../core/hlc.h"
#include "delay_proxy.h"
#include "etcd_cluster.h"
#include "harness.h"
#include "linearizable.h"
#include "netns.h"

enum { HOST_A = 3, HOST_B = 4 }; /* hosts 0-2: the etcd members */

#define WRITES_MAX 40000 /* 20 rounds (make stress) of about 1,500 each */
#define FENCED_MAX 20000
enum { LK_ACQUIRE, LK_WRITE, LK_RELEASE };
#define LIN_NEMESIS_CLIENTS 8 /* half on each broker */

/* One client's writes, one in flight: SET w/<tag>/<i> <i>. Each answer
 * is +OK (acknowledged: it must be there at the end) or "unavailable"
 * (it may or may not have taken effect); any other is a failure. */
struct writer {
    struct client *c;
    const char *resp;
    const char *tag;
    int next;           /* the next write's i */
    int pending;        /* the write in flight, -1: none */
    bool acked[WRITES_MAX];
    int ok, refused;
    uint64_t last_ok_ms; /* when the last +OK came */
};

/* An observer on a broker, watching the pattern "w/" "*" (the writers'
 * keys): every acknowledged write must reach it exactly once, with its
 * value; a write answered "unavailable", at most once. */
struct observer {
    struct client c;
    char id[16], resp[64];
    unsigned char seen[2][WRITES_MAX]; /* [writer a, b][i]: notifications */
    int notified;
};

/* A locker: takes "lock" (SET NX PX 2000), writes "fenced" with the
 * lock's fencing token, releases it (VDEL); one request in flight. Lock
 * safety: the fenced writes the store accepted, in version order, carry
 * tokens that never go down. */
struct locker {
    struct client c;
    char id[16], resp[64], token[80], corr[16];
    int state;
    bool busy;
    unsigned seq;
};

struct fenced {
    ss_hlc token, version;
};

struct lock_log {
    struct fenced accepted[FENCED_MAX];
    int naccepted, refused, taken;
};

/* Two brokers on hosts A and B, each with a writing client and a locker,
 * on a 3-member cluster on hosts 0-2. */
struct nemesis_fixture {
    struct netns_net net;
    struct etcd_cluster ec;
    struct broker a, b;
    struct client ca, cb;
    char ra[64], rb[64];
    struct writer wa, wb;
    int isolated; /* the member the leader nemesis cut off */
    struct delay_proxy *proxy[3]; /* with_proxies: the brokers' way to each member */
    struct delay_proxy *peer_proxy[3]; /* with_proxies: the members' way to each member */
    struct locker lk[2];          /* one on each broker */
    struct lock_log locks;
    struct observer obs[2];       /* one on each broker */
    long rss_kb[2];               /* each broker's resident memory after start */
    struct lin_load lin;          /* requests on keys r0-r2 through both brokers: one history */
};

/* A broker on host h, on the cluster (through `endpoints`), with calls
 * timing out after timeout_ms, and a client of it there. */
void nemesis_broker_on_host(struct netns_net *net, int h, struct broker *b, const char *name, const char *endpoints,
                            int timeout_ms, struct client *c, char *resp);

/* The fixture, its load running: with_proxies puts a delaying proxy
 * (delay_proxy.h) on each broker's way to each member. */
void nemesis_up(struct nemesis_fixture *f, bool with_proxies);
void nemesis_down(struct nemesis_fixture *f);
/* Every load for ms. */
void nemesis_load(struct nemesis_fixture *f, int ms);
/* Until both writers' last writes are answered and each broker has
 * acknowledged a write since `since` (30 s at most); the time that took. */
uint64_t nemesis_recover(struct nemesis_fixture *f, uint64_t since);
/* One round: load, fault(f, true), fault_ms under load, fault(f, false),
 * recovery; prints what was answered during the fault. */
void nemesis_round(struct nemesis_fixture *f, const char *name, void (*fault)(struct nemesis_fixture *, bool),
                   int fault_ms);
/* The end of a test: every check. */
void nemesis_check(struct nemesis_fixture *f);
/* Rounds of each nemesis: 1, or SS_NEMESIS_ROUNDS (make stress). */
int nemesis_rounds(void);
/* A nemesis's whole test: the fixture, its rounds, the checks. */
void nemesis_test(const char *name, void (*fault)(struct nemesis_fixture *, bool), int fault_ms, bool with_proxies);

#endif
