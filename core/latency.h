/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* latency.h - the clocks, and durations of one interval (commits, fsyncs)
 * for the p50 and p99 that the figures publish, in bounded memory. */
#ifndef SS_LATENCY_H
#define SS_LATENCY_H

#include <stdint.h>

/* Samples kept per interval (beyond: a spread of them is kept). */
#define SS_LATENCY_SAMPLES 1024u

struct ss_latency {
    uint32_t us[SS_LATENCY_SAMPLES];
    uint32_t n;    /* samples kept */
    uint64_t seen; /* samples offered this interval */
};

/* One duration, in microseconds. */
void ss_latency_add(struct ss_latency *l, uint64_t us);
/* p50 and p99 of the interval (0 and 0 when empty), then start the next. */
void ss_latency_take(struct ss_latency *l, uint64_t *p50, uint64_t *p99);
/* Microseconds of a monotonic clock, for durations. */
uint64_t ss_mono_us(void);
/* Milliseconds of the wall clock (Unix time), for deadlines. */
uint64_t ss_wall_ms(void);

#endif
