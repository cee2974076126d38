/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* leader.h - leader election on a lease (lease.h), as the SDKs' leader
 * election: participants campaign for a named role; at most one of them
 * holds the role's lease at a time and leads for as long as it keeps it.
 *
 * The role is the key `role`, holding the leader's holder id, acquired
 * with SET role holder NX PX lease_ms (only when nobody holds it: two
 * participants that were given the same holder id still cannot both
 * acquire it) and kept by a lease keeper (ss_lease_keep_notify: renewed
 * every lease_ms / 3, lost by its lost rule). Each term's fencing token is
 * the version of its acquisition: greater than every earlier term's, it
 * is what makes a leader's writes safe (the server refuses a write fenced
 * with an older term's token once a newer one has written), while the
 * leading flag can only be late.
 *
 * Followers learn the leader from the role key (GET) and watch it with
 * KEYNOTIFY: when the leader resigns or its lease expires, they try at
 * once, and in any case every lease_ms / 3. A leader lost (a renewal
 * refused, or its lease time passed without one, connected or not) stops
 * leading and campaigns again.
 *
 * Threads: the participant has a thread of its own, which makes the
 * blocking calls and runs the change callback; the client must be one
 * made by ss_client_connect (an event-loop client has no blocking calls).
 */
#ifndef SS_LEADER_H
#define SS_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "client.h"
#include "lease.h"

#define SS_LEADER_HOLDER_MAX 256

typedef struct ss_leader ss_leader;

/* What a participant knows. */
typedef struct ss_leader_state {
    bool leading;                      /* this participant leads */
    char leader[SS_LEADER_HOLDER_MAX]; /* the leader's holder id; "" when none is known */
    char token[SS_LEASE_TOKEN_MAX];    /* leading: the term's fencing token; else "" */
} ss_leader_state;

/* Runs on the participant's thread when what it knows changes (it starts
 * or stops leading, or another leader is learnt). s is valid during the
 * call. It must not call ss_leader_resign. */
typedef void (*ss_leader_cb)(void *ud, const ss_leader_state *s);

typedef struct ss_leader_options {
    const char *role;   /* the role's key; required */
    const char *holder; /* NULL: generated, "<client id>.<16 random hex digits>" */
    uint64_t lease_ms;  /* 0: 10000 */
    ss_leader_cb cb;    /* may be NULL */
    void *ud;
} ss_leader_options;

/* Start campaigning: registers KEYNOTIFY on the role (waiting for its
 * answer) and starts the participant's thread, which tries at once.
 * 0 and *out; SS_E_INVAL (no role, a holder longer than
 * SS_LEADER_HOLDER_MAX - 1 bytes), SS_E_RANDOM, SS_E_NOMEM, or the
 * KEYNOTIFY's error. Strings are copied. */
int ss_leader_campaign(ss_client *c, const ss_leader_options *o, ss_leader **out);
/* What the participant knows now. leading is also false once the lease
 * time has passed since the last renewal, even before the participant's
 * thread has noticed. */
void ss_leader_get(ss_leader *l, ss_leader_state *s);
/* This participant's holder id (valid until ss_leader_resign). */
const char *ss_leader_holder(const ss_leader *l);
/* Stop campaigning: stop renewing, release the role if held (VDEL role
 * holder: the followers learn it from their KEYNOTIFY), end the KEYNOTIFY,
 * free. Returns the release's status (0 when nothing was held). NULL is a
 * no-op. On a thread that runs the client's callbacks it could not be
 * answered: SS_E_IN_CALLBACK, and nothing changes (resign from another
 * thread). */
int ss_leader_resign(ss_leader *l);

#ifdef __cplusplus
}
#endif

#endif
