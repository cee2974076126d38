/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* client_ev.h - drive an event-loop client (ss_client_connect_start,
 * client.h) from a libev loop (Debian's libev-dev).
 *
 * Header only, so that the library itself does not depend on libev:
 * include <ev.h> before it and link the program with -lev.
 *
 *     ss_client_ev a;
 *     ss_client_connect_start(&opts, &c);
 *     ss_client_ev_attach(&a, EV_DEFAULT, c);
 *     ev_run(EV_DEFAULT, 0);
 *     ...
 *     ss_client_ev_detach(&a);  (before ss_client_close)
 *
 * How: a prepare watcher, which libev runs before each wait, sets an io
 * watcher on the client's socket (read, and write when it wants to) and a
 * timer for its timeout, from what the client wants at that moment (so
 * that calls made from any other watcher are sent too); both watchers
 * call ss_client_process, inside which the client's callbacks run. The
 * ss_client_ev belongs to the caller and must stay where it is while
 * attached.
 */
#ifndef SS_CLIENT_EV_H
#define SS_CLIENT_EV_H

#include <stdbool.h>

#include "client.h"

typedef struct ss_client_ev {
    struct ev_loop *loop;
    ss_client *c;
    ev_io io;
    ev_timer timer;
    ev_prepare prepare;
    int fd;     /* the socket the io watcher is set on; -1: none */
    int events; /* and its events */
} ss_client_ev;

static inline void ss_client_ev__io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    ss_client_ev *a = (ss_client_ev *)w->data;
    ss_client_process(a->c, (revents & EV_READ) != 0, (revents & EV_WRITE) != 0);
}

static inline void ss_client_ev__timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    ss_client_ev *a = (ss_client_ev *)w->data;
    ss_client_process(a->c, false, false);
}

static inline void ss_client_ev__prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)revents;
    ss_client_ev *a = (ss_client_ev *)w->data;
    int fd = ss_client_socket(a->c);
    int events = EV_READ | (ss_client_want_write(a->c) ? EV_WRITE : 0);
    if (fd != a->fd || events != a->events) {
        ev_io_stop(loop, &a->io);
        if (fd >= 0) {
            ev_io_set(&a->io, fd, events);
            ev_io_start(loop, &a->io);
        }
        a->fd = fd;
        a->events = events;
    }
    ev_timer_stop(loop, &a->timer);
    ev_timer_set(&a->timer, ss_client_timeout_ms(a->c) / 1000.0, 0.);
    ev_timer_start(loop, &a->timer);
}

/* Start driving c from loop. c must come from ss_client_connect_start. */
static inline void ss_client_ev_attach(ss_client_ev *a, struct ev_loop *loop, ss_client *c)
{
    a->loop = loop;
    a->c = c;
    a->fd = -1;
    a->events = 0;
    ev_io_init(&a->io, ss_client_ev__io, 0, EV_READ);
    ev_timer_init(&a->timer, ss_client_ev__timer, 0., 0.);
    ev_prepare_init(&a->prepare, ss_client_ev__prepare);
    a->io.data = a;
    a->timer.data = a;
    a->prepare.data = a;
    ev_prepare_start(loop, &a->prepare);
}

/* Stop: the loop no longer watches the client (call it before
 * ss_client_close). ev_run returns once nothing else is watched. */
static inline void ss_client_ev_detach(ss_client_ev *a)
{
    ev_prepare_stop(a->loop, &a->prepare);
    ev_io_stop(a->loop, &a->io);
    ev_timer_stop(a->loop, &a->timer);
}

#endif
