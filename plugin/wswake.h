/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* wswake.h - turn the broker's loop often while its websockets listeners
 * are in use.
 *
 * Mosquitto 2.0 serves its websockets listeners (libwebsockets: the web
 * console's files from http_dir, and MQTT over WebSockets) once per turn
 * of its loop, and an idle loop turns every 100 ms (its epoll_wait
 * timeout): those sockets are not in its epoll set. Each HTTP request
 * takes about three turns, so each file of the console took about 290 ms
 * from an idle broker, and each message over WebSockets waited up to 100
 * ms each way.
 *
 * This wakes the broker's thread (with the signal of waker.h) every
 * wake_ms while that matters:
 *   - for SS_WSWAKE_WINDOW_MS after a connection arrives at a websockets
 *     listener (a page load): a thread of ours polls the listening
 *     sockets, which only looks (libwebsockets still accepts);
 *   - for SS_WSWAKE_WINDOW_MS after a message came over WebSockets
 *     (someone at the console).
 * The listening sockets are found by their ports, read from the broker's
 * configuration (broker_conf.h), among this process's descriptors, once
 * the broker has opened them (after the plugin starts): by the broker's
 * thread, at its ticks, which hands the thread copies (dup) of them, so
 * that the thread never touches a descriptor the broker owns. Without a
 * websockets listener, or with wake_ms 0, nothing runs.
 */
#ifndef SS_WSWAKE_H
#define SS_WSWAKE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SS_WSWAKE_PORTS_MAX 8
/* How long the loop turns fast after the last sign of use. */
#define SS_WSWAKE_WINDOW_MS 5000u

#define SS_WSWAKE_FDS_MAX 16

struct ss_wswake {
    pthread_t thread, broker;
    bool live;
    bool looking;    /* the listening sockets are not found yet (broker thread) */
    uint64_t started_ms, next_scan_ms; /* monotonic (broker thread) */
    /* a pipe to the thread: a byte says fds changed; its write end
     * closed stops the thread */
    int pipe[2];
    unsigned wake_ms;
    uint16_t ports[SS_WSWAKE_PORTS_MAX];
    int nports;
    pthread_mutex_t mu;
    int fds[SS_WSWAKE_FDS_MAX]; /* under mu: the copies of the listening sockets */
    int nfds;
    _Atomic uint64_t fast_until_ms; /* monotonic: wake often until then */
    _Atomic uint64_t wakes;         /* wake-ups sent, for tests and figures */
};

/* Start the thread for the websockets listeners on ports (n of them) when
 * n > 0 and wake_ms > 0; the broker is the calling thread. 0, or
 * SS_E_NOMEM. */
int ss_wswake_start(struct ss_wswake *w, const uint16_t *ports, int n, unsigned wake_ms);
/* A message came over WebSockets (broker thread). */
void ss_wswake_used(struct ss_wswake *w);
/* At the broker's tick while w->looking: look for the listening sockets
 * (now and then, not at every tick). False when they were not found in
 * the first 10 s, and will not be looked for again (say so). */
bool ss_wswake_tick(struct ss_wswake *w);
/* End the thread (if any). */
void ss_wswake_stop(struct ss_wswake *w);

#endif
