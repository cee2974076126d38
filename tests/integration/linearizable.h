/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* linearizable.h - histories of concurrent requests on a few keys, and
 * the checker that they are linearizable: one order of the operations,
 * consistent with real time, in which every answer is true.
 *
 * The load (struct lin_load) keeps one request in flight per client, at
 * random among SET, SET NX, GET, DEL and VDEL, and records each
 * operation's invocation, completion and answer. A test steps it beside
 * whatever else it does (a fault, other loads), then finishes it and
 * checks the history. */
#ifndef SS_TEST_LINEARIZABLE_H
#define SS_TEST_LINEARIZABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "../../core/hlc.h"
#include "harness.h"

enum lin_kind { LIN_SET, LIN_SETNX, LIN_GET, LIN_DEL, LIN_VDEL };

struct lin_op {
    enum lin_kind kind;
    int key;
    char value[16];
    uint64_t invoked, done; /* microseconds; done UINT64_MAX: never answered */
    /* outcome */
    bool ok;          /* SET applied / DEL, VDEL deleted / GET found */
    ss_hlc version;   /* version written, read, deleted, or current (NX failed) */
    bool has_version;
    int64_t count;    /* DEL/VDEL answer */
    char got[16];     /* GET value */
    bool unknown;     /* refused or never answered: it may or may not have happened */
    int client;
    /* An answer that came with no request of its client in flight (a
     * duplicate, or one to another request): no operation but a
     * violation. key is -1; value holds its correlation data, got its
     * payload (as text). */
    bool stray;
};

/* Microseconds on the monotonic clock: histories need finer stamps than
 * the milliseconds of a version. */
uint64_t lin_now_us(void);

/* Checks the history of n operations on keys 0..keys-1; fails the test
 * on a violation, after writing each one and the whole history (in the
 * test's directory) to stderr. */
void lin_check(struct lin_op *ops, int n, int keys);

#define LIN_CLIENTS_MAX 32

struct lin_load {
    int nclients, keys;
    const char *prefix;  /* keys are <prefix><0..keys-1> */
    bool may_refuse;     /* "the store is unavailable" is an answer of unknown outcome */
    bool may_be_full;    /* "quota exceeded" is a true answer to a SET: it was not done */
    int full;
    unsigned seed;
    struct client c[LIN_CLIENTS_MAX];
    char resp[LIN_CLIENTS_MAX][64];
    int current[LIN_CLIENTS_MAX]; /* the op in flight, -1: none */
    bool off[LIN_CLIENTS_MAX];    /* dropped (its broker died) until connected again */
    struct lin_op *ops;
    int n, cap, limit;   /* n: operations in the history, stray answers too; limit: n at which no
                            more are issued */
    int vcount, unknown;
    int mark;     /* an index of the history (-1: none), set by the test, e.g. at a fault */
    int answered; /* by lin_load_finish: operations from mark on that were answered */
};

/* A load of nclients on keys prefix0.. (at most limit operations); its
 * clients are connected one by one with lin_load_connect (in whatever
 * network namespace the test chooses). */
void lin_load_init(struct lin_load *l, int nclients, int keys, const char *prefix, int limit, bool may_refuse);
void lin_load_connect(struct lin_load *l, int i, int port);
/* Client i's broker died: its request in flight stays of unknown
 * outcome, and it sends nothing until connected again. */
void lin_load_drop(struct lin_load *l, int i);
/* Sends a request for each idle client and takes the answers that came. */
void lin_load_step(struct lin_load *l);
/* Waits up to ms for the requests in flight; those not answered then
 * stay of unknown outcome. Then checks the history and closes the
 * clients. Returns the operations of unknown outcome. */
int lin_load_finish(struct lin_load *l, int ms);

#endif
