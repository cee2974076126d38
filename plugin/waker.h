/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* waker.h - wake the broker's thread when results arrive from another
 * thread (the etcd backend's calls).
 *
 * The broker sleeps in epoll_wait (up to 100 ms) and only a signal ends
 * that wait early (committer.c explains why). A signal that lands just
 * before the broker enters the wait is spent for nothing, so, as the
 * committing thread does for its commits, a small thread repeats it every
 * 200 us until the broker's tick says it has looked (ss_waker_seen).
 */
#ifndef SS_WAKER_H
#define SS_WAKER_H

#include <pthread.h>
#include <stdbool.h>

struct ss_waker {
    pthread_t thread, broker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool poked, stop; /* under mu */
    bool live;
};

/* Start the thread; the broker is the calling thread. The wake signal's
 * handler must be installed (ss_committer_start). 0 or SS_E_NOMEM. */
int ss_waker_start(struct ss_waker *w);
/* Results are ready (any thread). */
void ss_waker_poke(void *waker);
/* The broker's tick is about to look at the results (broker thread):
 * stop signalling. Poke again after this to be woken again. */
void ss_waker_seen(struct ss_waker *w);
/* End the thread. NULL or never started: no-op. */
void ss_waker_stop(struct ss_waker *w);

#endif
