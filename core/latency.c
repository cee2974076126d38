/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* latency.c - durations of one interval (latency.h). */
#include "latency.h"

#include <stdlib.h>
#include <time.h>

uint64_t ss_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t ss_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ss_latency_add(struct ss_latency *l, uint64_t us)
{
    uint32_t v = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    l->seen++;
    if (l->n < SS_LATENCY_SAMPLES) {
        l->us[l->n++] = v;
        return;
    }
    /* A full reservoir: keep a spread of the interval's samples, the
     * slot chosen by a multiplicative hash of the count (top 10 bits). */
    uint64_t slot = (l->seen * 0x9E3779B97F4A7C15ull) >> 54;
    l->us[slot % SS_LATENCY_SAMPLES] = v;
}

static int ss_latency__cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

void ss_latency_take(struct ss_latency *l, uint64_t *p50, uint64_t *p99)
{
    *p50 = *p99 = 0;
    if (l->n) {
        qsort(l->us, l->n, sizeof l->us[0], ss_latency__cmp);
        *p50 = l->us[(l->n - 1) / 2];
        *p99 = l->us[(l->n - 1) * 99 / 100];
    }
    l->n = 0;
    l->seen = 0;
}
