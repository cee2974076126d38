/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_soak.c - a bounded high-load run with churn: clients connect and
 * disconnect, register and unregister notifications, write, read, delete
 * and let keys expire, while the broker's memory is sampled. After the
 * warm-up (30% of the run, at least 20 s), resident memory must not grow
 * by more than 1%. The load is paced (REQUESTS_PER_SECOND) so that what
 * is legitimately kept per request, for a while, stays constant.
 * SS_SOAK_SECONDS sets the length (default 90). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../integration/harness.h"
#include "../test.h"

/* A line of /proc/<pid>/status in kB ("VmRSS:", "RssAnon:", "RssFile:"). */
static long status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0)
            kb = atol(line + n);
    if (f)
        fclose(f);
    return kb;
}

#define WORKERS 8
#define KEYSPACE 2000
/* A steady pace below the broker's capacity: the answers remembered for
 * resends (a 10 s window) then hold a steady number of entries, so memory
 * can be compared over time. */
#define REQUESTS_PER_SECOND 2000

TEST(stress_soak_memory_is_stable)
{
    const char *env = getenv("SS_SOAK_SECONDS");
    int seconds = env && atoi(env) > 0 ? atoi(env) : 90;
    struct broker b = {0};
    /* SS_SOAK_EXTRA: broker config lines, e.g. "plugin_opt_fsync always". */
    const char *extra = getenv("SS_SOAK_EXTRA");
    if (extra)
        snprintf(b.extra, sizeof b.extra, "%s\n", extra);
    broker_start(&b);
    static struct client cs[WORKERS];
    char resp[WORKERS][64];
    int generation[WORKERS] = {0}, ops_left[WORKERS] = {0};
    long samples[4096], anon[4096], file[4096];
    int nsamples = 0;
    uint64_t start = now_ms(), next_sample = start;
    uint64_t total_ops = 0, reconnects = 0;
    srand(1);
    for (int i = 0; i < WORKERS; i++) {
        char id[32];
        snprintf(id, sizeof id, "soak%d-%d", i, generation[i]++);
        client_connect_rr(&cs[i], b.port, id, resp[i], sizeof resp[i]);
        ops_left[i] = 200 + rand() % 200;
    }
    while (now_ms() - start < (uint64_t)seconds * 1000) {
        uint64_t due = start + total_ops * 1000 / REQUESTS_PER_SECOND;
        if (now_ms() < due)
            usleep((useconds_t)(due - now_ms()) * 1000);
        for (int i = 0; i < WORKERS; i++) {
            if (ops_left[i]-- <= 0) {
                /* Churn: go away (dropping registrations) and come back. */
                client_close(&cs[i]);
                char id[32];
                snprintf(id, sizeof id, "soak%d-%d", i, generation[i]++);
                client_connect_rr(&cs[i], b.port, id, resp[i], sizeof resp[i]);
                ops_left[i] = 200 + rand() % 200;
                reconnects++;
            }
            char key[16], val[48];
            snprintf(key, sizeof key, "s%d", rand() % KEYSPACE);
            snprintf(val, sizeof val, "value-%d-%llu", i, (unsigned long long)total_ops);
            char px[16];
            snprintf(px, sizeof px, "%d", 20 + rand() % 200);
            const char *w[6] = {NULL};
            switch (rand() % 8) {
            case 0: w[0] = "KEYNOTIFY", w[1] = key; break;
            case 1: w[0] = "KEYNOTIFY", w[1] = key, w[2] = "STOP"; break;
            case 2: w[0] = "DEL", w[1] = key; break;
            case 3: w[0] = "GET", w[1] = key; break;
            case 4:
            case 5: w[0] = "SET", w[1] = key, w[2] = val, w[3] = "PX", w[4] = px; break;
            default: w[0] = "SET", w[1] = key, w[2] = val; break;
            }
            struct msg *m = request(&cs[i], resp[i], "s", NULL, NULL, w);
            ASSERT_TRUE(m != NULL);
            /* Drain notifications that arrived meanwhile. */
            while (client_wait(&cs[i], 0) != NULL)
                ;
            total_ops++;
        }
        if (now_ms() >= next_sample && nsamples < 4096) {
            anon[nsamples] = status_kb(b.pid, "RssAnon:");
            file[nsamples] = status_kb(b.pid, "RssFile:");
            samples[nsamples++] = status_kb(b.pid, "VmRSS:");
            next_sample += 2000;
        }
    }
    /* Warm-up: the dedup cache fills its 10 s window and the key space its
     * LMDB pages; then memory must stay flat. */
    int warm = nsamples * 3 / 10 > 10 ? nsamples * 3 / 10 : 10;
    ASSERT_TRUE(warm >= 1 && nsamples - warm >= 3);
    long base = samples[warm], peak = 0;
    fprintf(stderr, "  soak: %d s, %llu requests, %llu reconnects; broker RSS kB every 2 s:",
            seconds, (unsigned long long)total_ops, (unsigned long long)reconnects);
    for (int i = 0; i < nsamples; i++) {
        fprintf(stderr, " %ld", samples[i]);
        if (i > warm && samples[i] > peak)
            peak = samples[i];
    }
    fprintf(stderr, "\n  of which heap (RssAnon):");
    for (int i = 0; i < nsamples; i++)
        fprintf(stderr, " %ld", anon[i]);
    fprintf(stderr, "\n  and mapped files (RssFile: libraries, LMDB pages):");
    for (int i = 0; i < nsamples; i++)
        fprintf(stderr, " %ld", file[i]);
    double growth = 100.0 * (double)(peak - base) / (double)base;
    fprintf(stderr, "\n  growth after warm-up: %.2f%% (from %ld to at most %ld kB)\n", growth, base,
            peak);
    ASSERT_TRUE(growth <= 1.0);
    for (int i = 0; i < WORKERS; i++)
        client_close(&cs[i]);
    broker_stop(&b);
}
