/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* evloop.c - a client driven by the application's event loop (client.h):
 * the socket to poll, "wants write", the next timeout, and the call that
 * does the I/O, completes the calls whose time ran out and reconnects.
 *
 * Invariant: nothing here starts a thread or waits; every callback runs
 * inside ss_client_process, on the caller's thread. The same pieces as the
 * network thread's (loop.c) do the work: libmosquitto's read, write and
 * keepalive, ss_client__reap, and the reconnection backoff.
 */
#include "client_internal.h"

#include <mosquitto.h>

#include "../core/errors.h"

/* The longest a loop may sleep: libmosquitto's keepalive is checked at
 * least this often. */
#define SS_EVLOOP_WAIT_MAX_MS 1000u

void ss_client__schedule_reconnect(ss_client *c)
{
    unsigned delay = ss_client__backoff_step(c);
    pthread_mutex_lock(&c->mu);
    c->reconnect_at = ss_client__now_ms() + delay;
    pthread_mutex_unlock(&c->mu);
}

int ss_client_socket(ss_client *c)
{
    return c->evloop ? mosquitto_socket(c->m) : -1;
}

bool ss_client_want_write(ss_client *c)
{
    return c->evloop && mosquitto_socket(c->m) >= 0 && mosquitto_want_write(c->m);
}

int ss_client_timeout_ms(ss_client *c)
{
    uint64_t now = ss_client__now_ms();
    uint64_t at = now + SS_EVLOOP_WAIT_MAX_MS;
    pthread_mutex_lock(&c->mu);
    if (c->reap_at < at)
        at = c->reap_at;
    if (c->reconnect_at && c->reconnect_at < at)
        at = c->reconnect_at;
    pthread_mutex_unlock(&c->mu);
    return at <= now ? 0 : (int)(at - now);
}

bool ss_client_is_ready(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool ready = c->subscribed && !c->closing;
    pthread_mutex_unlock(&c->mu);
    return ready;
}

int ss_client_process(ss_client *c, bool readable, bool writable)
{
    if (c == NULL || !c->evloop)
        return SS_E_INVAL;
    ss_client__delivering(c);
    struct mosquitto *m = c->m;
    /* A failed read or write closes the socket and runs the disconnect
     * callback (ss_client__lost): the calls in flight fail at once. */
    int rc = MOSQ_ERR_SUCCESS;
    if (mosquitto_socket(m) >= 0 && readable)
        rc = mosquitto_loop_read(m, 1);
    pthread_mutex_lock(&c->mu);
    bool connected = c->connected;
    pthread_mutex_unlock(&c->mu);
    /* What the callbacks just sent is queued (libmosquitto writes nothing
     * inside its callbacks): once connected, write it now rather than
     * after another turn of the loop. Before the CONNACK, only when the
     * socket says it is writable (the TCP connection may be under way). */
    if (rc == MOSQ_ERR_SUCCESS && mosquitto_socket(m) >= 0 &&
        (writable || (connected && mosquitto_want_write(m))))
        rc = mosquitto_loop_write(m, 1);
    if (rc == MOSQ_ERR_SUCCESS && mosquitto_socket(m) >= 0)
        mosquitto_loop_misc(m);
    ss_client__reap(c);
    uint64_t now = ss_client__now_ms();
    pthread_mutex_lock(&c->mu);
    bool closing = c->closing;
    uint64_t at = c->reconnect_at;
    bool due = at != 0 && now >= at;
    if (due)
        c->reconnect_at = 0;
    pthread_mutex_unlock(&c->mu);
    if (closing)
        return SS_OK;
    if (due) {
        if (ss_client__reconnect(c, false) != SS_OK) /* on a new handle: see connect.c */
            ss_client__schedule_reconnect(c);
    } else if (at == 0 && mosquitto_socket(m) < 0) {
        /* The connection is gone: try again after the backoff. */
        ss_client__schedule_reconnect(c);
    }
    return SS_OK;
}
