/* tick.c - MOSQ_EVT_TICK, once per broker loop iteration: expire due keys
 * (a bounded number), commit the batch, then publish what waited for it.
 * Kept O(1) when nothing is due and nothing is pending: the broker ticks
 * more than 100 000 times a second under load. */
#include <time.h>

#include "../core/errors.h"
#include "plugin.h"

uint64_t ss_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int ss_on_tick(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)event_data;
    struct ss_plugin *p = userdata;
    uint64_t now = ss_wall_ms();
    int n = ss_engine_expire(p->engine, now, SS_SWEEP_PER_TICK);
    if (n < 0)
        ss_log(p, MOSQ_LOG_ERR, "expiry sweep failed: %s", ss_strerror(n));
    int rc = ss_engine_commit(p->engine, now);
    if (rc != SS_OK) {
        ss_log(p, MOSQ_LOG_ERR, "commit failed, the batch's requests are answered with an error: %s",
               ss_strerror(rc));
        ss_outbox_fail(&p->outbox, rc);
        ss_dedup_forget_since(p->dedup, p->dedup_mark);
    }
    if (p->outbox.len)
        ss_outbox_flush(p);
    ss_dedup_expire(p->dedup, now);
    p->dedup_mark = ss_dedup_mark(p->dedup);
    return MOSQ_ERR_SUCCESS;
}
