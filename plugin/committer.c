/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* committer.c - the commits that wait for the disk, and the periodic
 * fsync of the journal, off the broker's thread.
 *
 * Two kinds of commit wait for the disk: every commit with fsync=always
 * (its journal frame is fsynced before the answers go out) and, in either
 * mode, a checkpoint (the store's LMDB transaction committed with LMDB's
 * full sync, see core/store_lmdb.h). Done on the broker's thread, that wait
 * would stall every client; and since the broker reads about one packet per
 * connection per loop iteration, each fsync would cover only a few
 * requests. So such a commit runs here, on a thread of its own, while the
 * broker goes on reading requests; those wait in a queue (request.c) and
 * all go into the next batch, which one commit and one fsync then cover.
 *
 * Waking the broker: it sleeps in epoll_wait (up to 100 ms) and a plugin
 * cannot add a descriptor to that set. A signal interrupts the wait (the
 * broker treats EINTR as a normal wake-up) and the loop goes on to its
 * TICK, where the answers are published. A signal that lands just before
 * the broker enters epoll_wait is spent without waking it, so the thread
 * repeats it every 200 us until the tick has collected the result.
 * SIGURG is used: ignored by default, and nothing in Mosquitto uses it.
 *
 * Why a signal: Mosquitto 2.0 gives a plugin no way to add a descriptor to
 * its epoll set or to wake its loop (no eventfd, no self-pipe in the plugin
 * API), and only three things end its epoll_wait: activity on a socket it
 * owns, a signal, or the 100 ms timeout. A socket would mean the plugin
 * connecting to the broker as a client, which depends on the listeners'
 * TLS, authentication and ACLs. So a signal it is, with these limits:
 *   - it goes to the broker's thread only (pthread_kill), never to other
 *     threads of the process;
 *   - SA_RESTART restarts the broker thread's other system calls, except
 *     those Linux never restarts (epoll_wait, poll, select, nanosleep...):
 *     another plugin blocking in one of those inside a callback would see
 *     EINTR, and only while a commit of ours is being collected;
 *   - the handler is process-wide: with two instances of this plugin, the
 *     first one unloaded restores the previous handler, and the second's
 *     wake-ups then wait for the 100 ms timeout instead (slower answers,
 *     nothing lost). Another plugin that takes SIGURG for itself has the
 *     same effect on us, and gets these empty wake-ups.
 *
 * With fsync=periodic the other commits stay on the broker's thread (they
 * only hand a frame to the operating system), but the once-per-interval
 * fsync of the journal runs here: on slow storage (an SD card) it can take
 * tens of milliseconds, which would otherwise stall every client each
 * interval. Nothing waits for it, so no wake-up is sent.
 *
 * Resident or on demand: with fsync=always the thread has a job every few
 * requests and lives as long as the plugin. With fsync=periodic its jobs
 * come about twice a second, and with a thread merely sleeping beside it
 * the broker spent about a tenth more CPU per request (docs/BENCHMARKS.md).
 * So there the thread is started for each job and joined when the job is
 * collected. Should it fail to start, the job runs on the broker's thread:
 * a stall, not a lost write.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <signal.h>
#include <string.h>
#include <time.h>

#include "../core/errors.h"
#include "committer.h"

#include "metrics.h"

#define SS_WAKE_REPEAT_NS 200000L

enum { SS_COMMIT_IDLE, SS_COMMIT_RUNNING, SS_COMMIT_DONE };

static void ss_committer__wake_handler(int sig)
{
    (void)sig; /* its only purpose is to interrupt epoll_wait */
}

static void ss_committer__deadline(struct timespec *ts, long ns)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_nsec += ns;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static int ss_committer__run_job(struct ss_committer *c, int job)
{
    uint64_t t0 = ss_mono_us();
    int rc = job == SS_JOB_SYNC ? ss_store_sync_run(c->store) : ss_store_commit_run(c->store);
    c->job_us = ss_mono_us() - t0; /* published with the result, under mu */
    return rc;
}

static void *ss_committer__main(void *arg)
{
    struct ss_committer *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        /* On demand, the thread ends once its job is collected (or, for a
         * sync, done: nothing waits for it). */
        while (c->state != SS_COMMIT_RUNNING && !c->stop && c->resident)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->state != SS_COMMIT_RUNNING)
            break;
        int job = c->job;
        bool sync = job == SS_JOB_SYNC;
        pthread_mutex_unlock(&c->mu);
        int rc = ss_committer__run_job(c, job);
        pthread_mutex_lock(&c->mu);
        c->result = rc;
        c->state = SS_COMMIT_DONE;
        pthread_cond_broadcast(&c->cv); /* a broker waiting in ss_committer_wait */
        /* Nothing waits for a periodic sync: the next tick collects it. */
        while (!sync && c->state == SS_COMMIT_DONE && !c->stop) {
            pthread_kill(c->broker, SS_WAKE_SIGNAL);
            struct timespec ts;
            ss_committer__deadline(&ts, SS_WAKE_REPEAT_NS);
            pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* Start the thread with every signal blocked: the wake-up is for the
 * broker's thread. */
static int ss_committer__spawn(struct ss_committer *c)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&c->thread, NULL, ss_committer__main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0) {
        c->live = true;
        /* Its name in top -H and /proc/PID/task/N/comm. */
        pthread_setname_np(c->thread, SS_COMMITTER_THREAD_NAME);
    }
    return rc;
}

int ss_committer_start(struct ss_committer *c, ss_store *store, bool resident)
{
    memset(c, 0, sizeof *c);
    c->store = store;
    c->resident = resident;
    c->broker = pthread_self();
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return SS_E_NOMEM;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&c->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return SS_E_NOMEM;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        pthread_cond_destroy(&c->cv);
        return SS_E_NOMEM;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ss_committer__wake_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* other system calls go on; epoll_wait returns EINTR */
    if (sigaction(SS_WAKE_SIGNAL, &sa, &c->old_action) != 0)
        goto fail;
    if (resident && ss_committer__spawn(c) != 0) {
        sigaction(SS_WAKE_SIGNAL, &c->old_action, NULL);
        goto fail;
    }
    c->started = true;
    return SS_OK;
fail:
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    c->store = NULL;
    return SS_E_NOMEM;
}

void ss_committer_submit(struct ss_committer *c, int job)
{
    pthread_mutex_lock(&c->mu);
    c->job = job;
    c->state = SS_COMMIT_RUNNING;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!c->resident && ss_committer__spawn(c) != 0) {
        int rc = ss_committer__run_job(c, job);
        pthread_mutex_lock(&c->mu);
        c->result = rc;
        c->state = SS_COMMIT_DONE;
        pthread_mutex_unlock(&c->mu);
    }
    if (job == SS_JOB_COMMIT)
        c->pending = true;
    else
        c->syncing = true;
}

bool ss_committer_collect(struct ss_committer *c, int *rc)
{
    pthread_mutex_lock(&c->mu);
    bool done = c->state == SS_COMMIT_DONE;
    if (done) {
        *rc = c->result;
        c->state = SS_COMMIT_IDLE;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (done && !c->resident && c->live) {
        pthread_join(c->thread, NULL); /* it is ending: its job is collected */
        c->live = false;
    }
    if (done)
        c->pending = c->syncing = false;
    return done;
}

void ss_committer_wait(struct ss_committer *c, int *rc)
{
    pthread_mutex_lock(&c->mu);
    while (c->state == SS_COMMIT_RUNNING)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    ss_committer_collect(c, rc);
}

void ss_committer_stop(struct ss_committer *c)
{
    if (!c->started)
        return;
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    /* A commit under way is completed first; its result stays to collect. */
    if (c->live)
        pthread_join(c->thread, NULL);
    c->live = false;
    sigaction(SS_WAKE_SIGNAL, &c->old_action, NULL);
    c->started = false;
}

void ss_committer_destroy(struct ss_committer *c)
{
    if (c->started)
        ss_committer_stop(c);
    if (c->store == NULL)
        return;
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    c->store = NULL;
}
