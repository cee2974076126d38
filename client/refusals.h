/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* refusals.h - PUBACKs that refuse a request before its call has learnt
 * its packet id (libmosquitto gives the id only when the publish call
 * returns, and the network thread may have read the PUBACK by then).
 *
 * Each refusal kept is stamped with the number of calls that had begun to
 * publish when it came; a call takes only a refusal of its packet id that
 * came after it began. A refusal whose call had already ended (its time
 * ran out) is therefore never taken by a later call that libmosquitto
 * gives the same packet id, 65,535 publishes on. Pure: the client calls
 * these under its lock. Internal to the client library. */
#ifndef SS_REFUSALS_H
#define SS_REFUSALS_H

#include <stdint.h>

#define SS_EARLY_REFUSALS 8

struct ss_early_refusals {
    int mid[SS_EARLY_REFUSALS], reason[SS_EARLY_REFUSALS];
    uint64_t stamp[SS_EARLY_REFUSALS];
    unsigned next;
    uint64_t begun; /* calls that have begun to publish */
};

/* A call begins to publish: its stamp, for ss_early_take. */
uint64_t ss_early_begin(struct ss_early_refusals *r);
/* A refusal (reason >= 0x80) of packet id mid that no call claims yet;
 * the oldest of SS_EARLY_REFUSALS goes. */
void ss_early_note(struct ss_early_refusals *r, int mid, int reason);
/* The reason of a refusal of mid that came after the call stamped since
 * began (and is then forgotten), or 0. */
int ss_early_take(struct ss_early_refusals *r, int mid, uint64_t since);

#endif
