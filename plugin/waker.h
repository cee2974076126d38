/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* waker.h - wake the broker's thread when the backend has results from
 * another thread (a commit done on LMDB's worker, etcd's calls).
 *
 * Waking the broker: it sleeps in epoll_wait (up to 100 ms) and a plugin
 * cannot add a descriptor to that set. A signal interrupts the wait (the
 * broker treats EINTR as a normal wake-up) and the loop goes on to its
 * TICK, where the results are taken. Why a signal: Mosquitto 2.0 gives a
 * plugin no way to add a descriptor to its epoll set or to wake its loop
 * (no eventfd, no self-pipe in the plugin API), and only three things end
 * its epoll_wait: activity on a socket it owns, a signal, or the 100 ms
 * timeout. A socket would mean the plugin connecting to the broker as a
 * client, which depends on the listeners' TLS, authentication and ACLs.
 * So a signal it is, SIGURG (ignored by default, used by nothing in
 * Mosquitto), with these limits:
 *   - it goes to the broker's thread only (pthread_kill), never to other
 *     threads of the process;
 *   - SA_RESTART restarts the broker thread's other system calls, except
 *     those Linux never restarts (epoll_wait, poll, select, nanosleep...):
 *     another plugin blocking in one of those inside a callback would see
 *     EINTR, and only while a result of ours is waiting;
 *   - the handler is process-wide: with two instances of this plugin, the
 *     first one unloaded restores the previous handler, and the second's
 *     wake-ups then wait for the 100 ms timeout instead (slower answers,
 *     nothing lost). Another plugin that takes SIGURG for itself has the
 *     same effect on us, and gets these empty wake-ups.
 *
 * A signal that lands just before the broker enters the wait is spent for
 * nothing. A backend that repeats its wake-up until its results are taken
 * (LMDB's worker, backend.h: wake_repeats) needs nothing more: each poke
 * is one signal. For one that wakes once (etcd), a small thread repeats
 * the signal every 200 us until the broker's tick says it has looked
 * (ss_waker_seen).
 */
#ifndef SS_WAKER_H
#define SS_WAKER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The signal that wakes the broker's thread. */
#define SS_WAKE_SIGNAL SIGURG

struct ss_waker {
    pthread_t thread, broker;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool poked, stop; /* under mu */
    bool live;        /* the repeating thread runs */
    bool started;
    struct sigaction old_action;
    timer_t timer;     /* signals the broker's thread at a deadline (ss_waker_at) */
    bool has_timer;
    uint64_t armed_ms; /* the wall-clock ms the timer is set for, 0: none */
};

/* Wake the broker's thread when the wall clock (CLOCK_REALTIME, in ms,
 * as ss_wall_ms) reaches at_ms: an idle broker turns only every 100 ms,
 * and an expiry must not wait for the next turn. One deadline at a time
 * (a later call replaces it); 0, UINT64_MAX or a time already passed
 * changes nothing. Broker thread only. */
void ss_waker_at(struct ss_waker *w, uint64_t at_ms, uint64_t now_ms);

/* Install the wake signal's handler; the broker is the calling thread.
 * repeat: start the thread that repeats the signal until seen. 0 or
 * SS_E_NOMEM. */
int ss_waker_start(struct ss_waker *w, bool repeat);
/* Results are ready (any thread). */
void ss_waker_poke(void *waker);
/* The broker's tick is about to look at the results (broker thread):
 * stop signalling. Poke again after this to be woken again. */
void ss_waker_seen(struct ss_waker *w);
/* The broker's loop has ended (broker thread, at the plugin's cleanup):
 * the repeating thread ends, so that the signal no longer lands on the
 * broker thread while it waits for the backend's threads to end (a poke
 * left unseen would otherwise repeat it every 200 us for the whole
 * teardown). Pokes after this send nothing. Without the thread (a backend
 * that repeats its own wake-ups) it does nothing. ss_waker_stop follows. */
void ss_waker_quiet(struct ss_waker *w);
/* End the thread and restore the signal's handler. Never started: no-op. */
void ss_waker_stop(struct ss_waker *w);

#endif
