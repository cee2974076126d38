/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* waker.c - wake the broker's thread with a signal (waker.h). */
#include "waker.h"

#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../core/errors.h"

#define SS_WAKER_REPEAT_NS 200000L

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid /* glibc < 2.41 names no field for it */
#endif

static void ss_waker__handler(int sig)
{
    (void)sig; /* its only purpose is to interrupt epoll_wait */
}

static void *ss_waker__main(void *arg)
{
    struct ss_waker *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        if (!w->poked) {
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        pthread_kill(w->broker, SS_WAKE_SIGNAL);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += SS_WAKER_REPEAT_NS;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int ss_waker_start(struct ss_waker *w, bool repeat)
{
    memset(w, 0, sizeof *w);
    w->broker = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ss_waker__handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* other system calls go on; epoll_wait returns EINTR */
    if (sigaction(SS_WAKE_SIGNAL, &sa, &w->old_action) != 0)
        return SS_E_NOMEM;
    w->started = true;
    /* The deadline timer signals this (the broker's) thread only. */
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SS_WAKE_SIGNAL;
    sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    w->has_timer = timer_create(CLOCK_REALTIME, &sev, &w->timer) == 0;
    if (!repeat)
        return SS_OK;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return SS_E_NOMEM;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0)
        return SS_E_NOMEM;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        pthread_cond_destroy(&w->cv);
        return SS_E_NOMEM;
    }
    /* Every signal blocked in the thread: the wake-up is the broker's. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&w->thread, NULL, ss_waker__main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        return SS_E_NOMEM;
    }
    w->live = true;
    return SS_OK;
}

void ss_waker_poke(void *waker)
{
    struct ss_waker *w = waker;
    if (!w->live) {
        pthread_kill(w->broker, SS_WAKE_SIGNAL); /* the caller repeats it */
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->poked = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void ss_waker_at(struct ss_waker *w, uint64_t at_ms, uint64_t now_ms)
{
    if (!w->has_timer || at_ms == 0 || at_ms == UINT64_MAX || at_ms <= now_ms || at_ms == w->armed_ms)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_value.tv_sec = (time_t)(at_ms / 1000u);
    its.it_value.tv_nsec = (long)(at_ms % 1000u) * 1000000L;
    if (timer_settime(w->timer, TIMER_ABSTIME, &its, NULL) == 0)
        w->armed_ms = at_ms;
}

static void ss_waker__timer_off(struct ss_waker *w)
{
    if (w->has_timer) {
        timer_delete(w->timer);
        w->has_timer = false;
    }
}

void ss_waker_seen(struct ss_waker *w)
{
    if (!w->live)
        return;
    pthread_mutex_lock(&w->mu);
    w->poked = false;
    pthread_mutex_unlock(&w->mu);
}

void ss_waker_quiet(struct ss_waker *w)
{
    if (w == NULL)
        return;
    ss_waker__timer_off(w);
    if (!w->live)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void ss_waker_stop(struct ss_waker *w)
{
    if (w == NULL || !w->started)
        return;
    ss_waker__timer_off(w);
    if (w->live) {
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        w->live = false;
    }
    sigaction(SS_WAKE_SIGNAL, &w->old_action, NULL);
    w->started = false;
}
