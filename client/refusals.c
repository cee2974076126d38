/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* refusals.c - early PUBACK refusals (refusals.h). */
#include "refusals.h"

uint64_t ss_early_begin(struct ss_early_refusals *r)
{
    return ++r->begun;
}

void ss_early_note(struct ss_early_refusals *r, int mid, int reason)
{
    r->mid[r->next] = mid;
    r->reason[r->next] = reason;
    r->stamp[r->next] = r->begun;
    r->next = (r->next + 1) % SS_EARLY_REFUSALS;
}

int ss_early_take(struct ss_early_refusals *r, int mid, uint64_t since)
{
    if (mid == 0)
        return 0;
    for (unsigned i = 0; i < SS_EARLY_REFUSALS; i++) {
        if (r->mid[i] == mid && r->stamp[i] >= since) {
            r->mid[i] = 0;
            return r->reason[i];
        }
    }
    return 0;
}
