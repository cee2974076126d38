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
#define NEMESIS_FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

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
    uint64_t sent_ms[WRITES_MAX], acked_ms[WRITES_MAX];
    int ok, refused, lost; /* lost: in flight when its broker died */
    bool full_ok;          /* etcd is out of space: "quota exceeded" is a true answer */
    int full;              /* so answered (not done) */
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
    /* While its broker was dead (from the kill to the WATCH of the one
     * started again), what it was not told is the documented loss: a
     * broker's subscribers hear of changes only while it runs. */
    struct {
        uint64_t from, to;
    } gap[64];
    int ngaps, missed;
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
    uint64_t sent_ms; /* of the request in flight (busy) */
    unsigned seq;
};

struct fenced {
    ss_hlc token, version;
};

struct lock_log {
    struct fenced accepted[FENCED_MAX];
    int naccepted, refused, taken;
    bool full_ok; /* as a writer's */
    int full;
};

/* How the fixture is made (flags of nemesis_up). */
enum {
    NEMESIS_PROXIES = 1, /* every link through a delaying proxy (delay_proxy.h) */
    NEMESIS_CLOCK_A = 2, /* broker A's wall clock set by a file (libfaketime) */
    NEMESIS_QUOTA = 4,   /* etcd's members with a 64 MiB --quota-backend-bytes (room for
                          * 20 rounds of the loads' keys), and a filler client on B */
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
    unsigned flags;
    char endpoints[512];          /* the brokers' way to the members */
    int timeout_ms;               /* plugin_opt_etcd_timeout_ms */
    bool dead[2];                 /* a broker killed, not started again yet */
    char clock_file[600];         /* NEMESIS_CLOCK_A: broker A's clock offset ("+2s") */
    int round;
    struct client filler; /* NEMESIS_QUOTA */
    char rfill[64];
    int filled;           /* its keys fill/0.. stored */
    struct lin_load lin;          /* requests on keys r0-r2 through both brokers: one history */
};

/* A broker on host h, on the cluster (through `endpoints`), with calls
 * timing out after timeout_ms, and a client of it there. */
void nemesis_broker_on_host(struct netns_net *net, int h, struct broker *b, const char *name, const char *endpoints,
                            int timeout_ms, struct client *c, char *resp);

/* The fixture, its load running (flags: NEMESIS_*). */
void nemesis_up(struct nemesis_fixture *f, unsigned flags);
/* Broker i (0: A, 1: B) killed with SIGKILL, its clients closed, what
 * they had in flight of unknown outcome; and started again on its host,
 * with the same node id, its clients connected again. */
void nemesis_broker_kill(struct nemesis_fixture *f, int i);
void nemesis_broker_restart(struct nemesis_fixture *f, int i);
/* NEMESIS_QUOTA: fill etcd until the NOSPACE alarm refuses a write
 * (every load told that "quota exceeded" is a true answer meanwhile);
 * and free it as an operator would: the filler deleted, compaction,
 * defragmentation, the alarm disarmed, until both brokers take writes
 * again. */
void nemesis_fill(struct nemesis_fixture *f);
void nemesis_free(struct nemesis_fixture *f);
/* NEMESIS_CLOCK_A: broker A's clock from now on offset by offset
 * ("+2s", "-2s", "+0s"). */
void nemesis_clock_a(struct nemesis_fixture *f, const char *offset);
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
void nemesis_test(const char *name, void (*fault)(struct nemesis_fixture *, bool), int fault_ms, unsigned flags);

#endif
