/* expiry_storm.c - many observed keys expiring in the same second.
 *
 *   expiry_storm PORT KEYS
 *
 * Registers KEYNOTIFY for KEYS keys, sets them all with PX so that every
 * deadline falls within one second, then counts the DELETE notifications.
 * Prints when the last deadline was and how long after it the last DELETE
 * arrived, and a summary line:
 *   STORM keys=.. deleted=.. last_delete_after_deadline_ms=..
 * Runs on the statestore client library; keeps 512 calls in flight.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../client/client.h"
#include "../core/errors.h"

static atomic_long done, failed, deleted;
static _Atomic uint64_t last_delete_ms;

static uint64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void on_done(void *ud, const ss_client_result *r)
{
    (void)ud;
    if (r->status != SS_OK)
        atomic_fetch_add(&failed, 1);
    atomic_fetch_add(&done, 1);
}

static void on_notify(void *ud, const ss_notification *n)
{
    (void)ud;
    if (n->deleted && n->key_len > 6 && memcmp(n->key, "storm-", 6) == 0) {
        atomic_fetch_add(&deleted, 1);
        atomic_store(&last_delete_ms, wall_ms());
    }
}

/* Issue count calls through fn, keeping at most 512 outstanding. */
static void pipeline(ss_client *c, long count, int (*fn)(ss_client *, long))
{
    long issued = 0;
    atomic_store(&done, 0);
    while (atomic_load(&done) < count) {
        while (issued < count && issued - atomic_load(&done) < 512) {
            if (fn(c, issued) != SS_OK)
                atomic_fetch_add(&failed, 1), atomic_fetch_add(&done, 1);
            issued++;
        }
        usleep(200);
    }
}

static uint64_t base_deadline;

static int do_notify(ss_client *c, long i)
{
    char key[32];
    int n = snprintf(key, sizeof key, "storm-%06ld", i);
    return ss_client_keynotify_async(c, key, (size_t)n, false, on_done, NULL);
}

static long nkeys;

static int do_set(ss_client *c, long i)
{
    char key[32];
    int n = snprintf(key, sizeof key, "storm-%06ld", i);
    /* Deadlines spread over one second starting at base_deadline. */
    uint64_t deadline = base_deadline + (uint64_t)(i * 1000 / nkeys);
    uint64_t now = wall_ms();
    ss_set_options o = {.px_ms = deadline > now ? deadline - now : 1};
    return ss_client_set_async(c, key, (size_t)n, "x", 1, &o, on_done, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: expiry_storm PORT KEYS\n");
        return 64;
    }
    nkeys = atol(argv[2]);
    ss_client_options o = {.host = "127.0.0.1", .port = atoi(argv[1]), .client_id = "storm",
                           .timeout_ms = 30000};
    ss_client *c;
    if (ss_client_connect(&o, &c) != SS_OK) {
        fprintf(stderr, "expiry_storm: cannot connect\n");
        return 2;
    }
    ss_client_set_notify_cb(c, on_notify, NULL);
    pipeline(c, nkeys, do_notify);
    /* Leave time to write everything (with a load running beside):
     * deadlines start 30 s from now. */
    base_deadline = wall_ms() + 30000;
    pipeline(c, nkeys, do_set);
    uint64_t set_done = wall_ms();
    uint64_t last_deadline = base_deadline + 999;
    if (set_done >= base_deadline)
        fprintf(stderr, "expiry_storm: writing took too long; deadlines already passing\n");
    /* Wait for the DELETEs (at most 30 s after the last deadline). */
    while (atomic_load(&deleted) < nkeys && wall_ms() < last_deadline + 30000)
        usleep(1000);
    long del = atomic_load(&deleted);
    int64_t after = (int64_t)atomic_load(&last_delete_ms) - (int64_t)last_deadline;
    printf("expiry storm: %ld observed keys with deadlines in one second; %ld DELETEs, the last %lld ms "
           "after the last deadline; %ld failed calls\n",
           nkeys, del, (long long)after, atomic_load(&failed));
    printf("STORM keys=%ld deleted=%ld last_delete_after_deadline_ms=%lld failed=%ld "
           "storm_start_ms=%llu\n",
           nkeys, del, (long long)after, atomic_load(&failed), (unsigned long long)base_deadline);
    ss_client_close(c);
    return del == nkeys && atomic_load(&failed) == 0 ? 0 : 1;
}
