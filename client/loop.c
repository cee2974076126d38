/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* loop.c - the threads that drive a client: its network thread, which
 * runs libmosquitto's loop, completes the calls whose time ran out and
 * reconnects with a backoff; and, for an attached client (whose
 * application runs the network loop), a timer thread that completes the
 * calls whose time ran out.
 *
 * Invariant: a client that runs its own network thread calls every one
 * of its callbacks on that thread (ss_client_close excepted: the calls
 * still pending then complete inside it).
 */
#include "client_internal.h"

#include <mosquitto.h>
#include <stdlib.h>

#include "../core/errors.h"

/* Longest wait in libmosquitto's loop: keepalive and a close are noticed
 * within it even when nothing else wakes the loop. */
#define SS_LOOP_WAIT_MAX_MS 1000u

/* Complete the calls whose deadline passed (all of them when closing),
 * on the calling thread; set c->reap_at to the next deadline. */
void ss_client__reap(ss_client *c)
{
    uint64_t now = ss_client__now_ms();
    pthread_mutex_lock(&c->mu);
    if (now < c->reap_at && !c->closing) {
        pthread_mutex_unlock(&c->mu);
        return;
    }
    bool closing = c->closing;
    uint64_t next = UINT64_MAX;
    struct ss_pending *due = NULL, **pp = &c->pending;
    while (*pp) {
        struct ss_pending *p = *pp;
        if (p->deadline_ms <= now || closing) {
            *pp = p->next;
            p->next = due;
            due = p;
        } else {
            if (p->deadline_ms < next)
                next = p->deadline_ms;
            pp = &p->next;
        }
    }
    c->reap_at = next;
    pthread_mutex_unlock(&c->mu);
    while (due) {
        struct ss_pending *p = due;
        due = p->next;
        ss_client__fail_pending(p, closing ? SS_E_CONNECTION : SS_E_TIMEOUT);
    }
}

/* How long the network loop may wait: until the next deadline, at most
 * SS_LOOP_WAIT_MAX_MS. */
static int ss_client__loop_wait(ss_client *c)
{
    uint64_t now = ss_client__now_ms();
    pthread_mutex_lock(&c->mu);
    uint64_t at = c->closing ? now + 10 : c->reap_at;
    pthread_mutex_unlock(&c->mu);
    uint64_t wait = at <= now ? 0 : at - now;
    return (int)(wait < SS_LOOP_WAIT_MAX_MS ? wait : SS_LOOP_WAIT_MAX_MS);
}

void ss_client_set_reconnect_backoff(ss_client *c, unsigned first_ms, unsigned max_ms)
{
    pthread_mutex_lock(&c->mu);
    c->backoff_first_ms = first_ms ? first_ms : SS_CLIENT_BACKOFF_FIRST_MS;
    c->backoff_max_ms = max_ms ? max_ms : SS_CLIENT_BACKOFF_MAX_MS;
    if (c->backoff_max_ms < c->backoff_first_ms)
        c->backoff_max_ms = c->backoff_first_ms;
    c->backoff_next_ms = 0;
    bool waiting = c->evloop && c->reconnect_at != 0;
    pthread_mutex_unlock(&c->mu);
    /* An event-loop client waiting for its next attempt: the new delays
     * apply to this very wait. */
    if (waiting)
        ss_client__schedule_reconnect(c);
}

unsigned ss_client__backoff_step(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    unsigned delay = c->backoff_next_ms ? c->backoff_next_ms : c->backoff_first_ms;
    c->backoff_next_ms = delay >= c->backoff_max_ms / 2 ? c->backoff_max_ms : delay * 2;
    if (delay > c->backoff_max_ms)
        delay = c->backoff_max_ms;
    pthread_mutex_unlock(&c->mu);
    return delay;
}

/* Wait out the reconnection delay; false when the client is closing. */
static bool ss_client__backoff(ss_client *c)
{
    unsigned delay = ss_client__backoff_step(c);
    struct timespec until;
    ss_client__abstime(&until, delay);
    pthread_mutex_lock(&c->mu);
    while (!c->closing)
        if (pthread_cond_timedwait(&c->cv, &c->mu, &until) != 0)
            break;
    bool go_on = !c->closing;
    pthread_mutex_unlock(&c->mu);
    return go_on;
}

static void *ss_client__net_main(void *arg)
{
    ss_client *c = arg;
    ss_client__delivering(c);
    int flushes = 0;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        bool closing = c->closing;
        pthread_mutex_unlock(&c->mu);
        /* Closing: a few more turns write the DISCONNECT out. */
        if (closing && ++flushes > 5)
            break;
        int rc = mosquitto_loop(c->m, ss_client__loop_wait(c), 1);
        if (!closing)
            ss_client__reap(c);
        if (rc == MOSQ_ERR_SUCCESS)
            continue;
        if (closing)
            break;
        /* Why, for a first connection that waits for its answer: a TLS
         * handshake that fails here calls no disconnect callback. */
        pthread_mutex_lock(&c->mu);
        c->lost_rc = rc;
        pthread_cond_broadcast(&c->cv);
        pthread_mutex_unlock(&c->mu);
        /* The connection is gone (the disconnect callback has run) or a
         * reconnection failed: try again after the backoff. */
        if (!ss_client__backoff(c))
            break;
        ss_client__reconnect(c, true);
    }
    return NULL;
}

/* The timer thread of an attached client: completes calls whose deadline
 * passed, ten times a second. */
static void *ss_client__reaper_main(void *arg)
{
    ss_client *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->closing) {
        struct timespec ts;
        ss_client__abstime(&ts, 100);
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
        pthread_mutex_unlock(&c->mu);
        ss_client__reap(c);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

int ss_client__threads_start(ss_client *c)
{
    if (c->own) {
        if (pthread_create(&c->net, NULL, ss_client__net_main, c) != 0)
            return SS_E_NOMEM;
        c->net_running = true;
    } else {
        if (pthread_create(&c->reaper, NULL, ss_client__reaper_main, c) != 0)
            return SS_E_NOMEM;
        c->reaper_running = true;
    }
    return SS_OK;
}

void ss_client__threads_stop(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    c->closing = true;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_lock(&c->mu);
    struct mosquitto *m = c->m; /* after closing is set, no new one replaces it */
    pthread_mutex_unlock(&c->mu);
    if (c->evloop)
        mosquitto_disconnect(m); /* written at once: no thread of ours */
    if (c->net_running) {
        mosquitto_disconnect(m); /* also wakes the loop */
        pthread_join(c->net, NULL);
        c->net_running = false;
    }
    if (c->reaper_running) {
        pthread_join(c->reaper, NULL);
        c->reaper_running = false;
    }
}
