/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* worker.c - one job at a time off the owner's thread (worker.h).
 *
 * Two kinds of LMDB commit wait for the disk: every commit with
 * fsync=always (its journal frame is fsynced before the answers go out)
 * and, in either mode, a checkpoint (the store's LMDB transaction
 * committed with LMDB's full sync, see store_lmdb.h). Done on the broker's
 * thread, that wait would stall every client; and since the broker reads
 * about one packet per connection per loop iteration, each fsync would
 * cover only a few requests. So such a commit runs here, on a thread of
 * its own, while the broker goes on reading requests; those wait in the
 * owner's queue and all go into the next batch, which one commit and one
 * fsync then cover. With fsync=periodic, the once-per-interval fsync of
 * the journal runs here too: on slow storage (an SD card) it can take tens
 * of milliseconds. Nothing waits for it, so it wakes nobody.
 *
 * Waking the owner: the broker sleeps in epoll_wait, and a wake-up that
 * lands just before it enters the wait is spent for nothing (the plugin's
 * waker.c says how it wakes the broker, and why). So once a job that
 * wakes is done, this thread calls the wake hook every 200 us until the
 * owner has collected the result.
 *
 * Resident or on demand: with fsync=always the thread has a job every few
 * requests and lives as long as the worker. With fsync=periodic its jobs
 * come about twice a second, and with a thread merely sleeping beside it
 * the broker spent about a tenth more CPU per request (docs/BENCHMARKS.md:
 * glibc takes its cheaper single-threaded paths only while a process has
 * one thread). So there the thread is started for each job and joined
 * when the job is collected.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <signal.h>
#include <string.h>
#include <time.h>

#include "errors.h"
#include "latency.h"
#include "worker.h"

#define SS_WORKER_REPEAT_NS 200000L

enum { SS_WORKER_IDLE, SS_WORKER_RUNNING, SS_WORKER_DONE };

static void ss_worker__deadline(struct timespec *ts, long ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_nsec += ns;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int ss_worker__run_job(struct ss_worker *c, int job)
{
    uint64_t t0 = ss_mono_us();
    int rc = c->run(c->ctx, job);
    c->job_us = ss_mono_us() - t0; /* published with the result, under mu */
    return rc;
}

static void *ss_worker__main(void *arg)
{
    struct ss_worker *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        /* On demand, the thread ends once its job is collected (or, for a
         * sync, done: nothing waits for it). */
        while (c->state != SS_WORKER_RUNNING && !c->stop && c->resident)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->state != SS_WORKER_RUNNING)
            break;
        int job = c->job;
        bool wakes = c->wakes;
        pthread_mutex_unlock(&c->mu);
        int rc = ss_worker__run_job(c, job);
        pthread_mutex_lock(&c->mu);
        c->result = rc;
        c->state = SS_WORKER_DONE;
        pthread_cond_broadcast(&c->cv); /* an owner waiting in ss_worker_wait */
        /* A job nobody waits for is collected at the next tick. */
        while (wakes && c->state == SS_WORKER_DONE && !c->stop && c->wake) {
            c->wake(c->wake_ctx);
            struct timespec ts;
            ss_worker__deadline(&ts, SS_WORKER_REPEAT_NS);
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Start the thread with every signal blocked: signals are for the
 * owner's thread (the broker's wake-up among them). */
static int ss_worker__spawn(struct ss_worker *c)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&c->thread, NULL, ss_worker__main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        c->live = true;
        /* Its name in top -H and /proc/PID/task/N/comm. */
        pthread_setname_np(c->thread, c->name);
    }
    return rc;
}

int ss_worker_start(struct ss_worker *c, const char *name, bool resident, ss_worker_job_fn run, void *ctx)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->run = run;
    c->ctx = ctx;
    c->resident = resident;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) {
        c->run = NULL;
        return SS_E_NOMEM;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0 || pthread_mutex_init(&c->mu, NULL) != 0) {
        if (rc == 0)
            pthread_cond_destroy(&c->cv);
        c->run = NULL;
        return SS_E_NOMEM;
    }
    if (resident && ss_worker__spawn(c) != 0) {
        pthread_mutex_destroy(&c->mu);
        pthread_cond_destroy(&c->cv);
        c->run = NULL;
        return SS_E_NOMEM;
    }
    c->started = true;
    return SS_OK;
}

void ss_worker_submit(struct ss_worker *c, int job, bool wakes)
{
    pthread_mutex_lock(&c->mu);
    c->job = job;
    c->wakes = wakes;
    c->state = SS_WORKER_RUNNING;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!c->resident && ss_worker__spawn(c) != 0) {
        int rc = ss_worker__run_job(c, job);
        pthread_mutex_lock(&c->mu);
        c->result = rc;
        c->state = SS_WORKER_DONE;
        pthread_mutex_unlock(&c->mu);
    }
    c->busy = true;
}

bool ss_worker_collect(struct ss_worker *c, int *rc)
{
    pthread_mutex_lock(&c->mu);
    bool done = c->state == SS_WORKER_DONE;
    if (done) {
        *rc = c->result;
        c->state = SS_WORKER_IDLE;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (done && !c->resident && c->live) {
        pthread_join(c->thread, NULL); /* it is ending: its job is collected */
        c->live = false;
    }
    if (done)
        c->busy = false;
    return done;
}

void ss_worker_wait(struct ss_worker *c, int *rc)
{
    pthread_mutex_lock(&c->mu);
    while (c->state == SS_WORKER_RUNNING)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    ss_worker_collect(c, rc);
}

void ss_worker_stop(struct ss_worker *c)
{
    if (!c->started)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    /* A job under way is completed first; its result stays to collect. */
    if (c->live)
        pthread_join(c->thread, NULL);
    c->live = false;
    c->started = false;
}

void ss_worker_destroy(struct ss_worker *c)
{
    if (c->run == NULL)
        return; /* never started */
    ss_worker_stop(c);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    c->run = NULL;
}
