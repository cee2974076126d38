/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* lease.c - leases on top of the client: SET NEX PX, VDEL, KEYNOTIFY. */
#include "lease.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <time.h>

#include "../core/errors.h"
#include "client_internal.h"

int ss_lease_acquire(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                     bool *acquired, char token[SS_LEASE_TOKEN_MAX])
{
    if (ttl_ms == 0) { /* no PX: a lease that never ends is no lease */
        *acquired = false;
        return SS_E_INVAL;
    }
    ss_set_options o = {.condition = SS_SET_NEX, .px_ms = ttl_ms};
    ss_client_result r;
    int rc = ss_client_set(c, name, strlen(name), holder, strlen(holder), &o, &r);
    *acquired = rc == SS_OK && r.applied;
    if (*acquired && token)
        snprintf(token, SS_LEASE_TOKEN_MAX, "%s", r.version);
    ss_client_result_free(&r);
    return rc;
}

/* How often a cancellable wait asks whether it is cancelled. */
#define SS_LEASE_CANCEL_POLL_MS 100u

int ss_lease_acquire_wait_cancel(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                                 unsigned wait_ms, char token[SS_LEASE_TOKEN_MAX], bool (*cancelled)(void *ud),
                                 void *ud)
{
    /* Held from the start: a close from another thread ends the wait
     * (SS_E_CONNECTION) rather than free the client under it, between
     * two of its calls too. */
    int rc = ss_client__hold(c);
    if (rc != SS_OK)
        return rc;
    /* Uncontended: no need to watch the lock key at all. */
    bool acquired = false;
    rc = ss_lease_acquire(c, name, holder, ttl_ms, &acquired, token);
    if (rc != SS_OK || acquired) {
        ss_client__release(c);
        return rc;
    }
    size_t name_len = strlen(name);
    rc = ss_client__helper_watch(c, name, name_len);
    if (rc != SS_OK) {
        ss_client__release(c);
        return rc;
    }
    uint64_t deadline = ss_client__now_ms() + wait_ms;
    uint64_t retry_at = 0, seen = 0;
    for (;;) {
        uint64_t now = ss_client__now_ms();
        if (now >= retry_at) {
            seen = ss_client__wakes(c, name, name_len);
            rc = ss_lease_acquire(c, name, holder, ttl_ms, &acquired, token);
            if (rc != SS_OK || acquired)
                break;
            /* Tried again on a notification of the lock (its DELETE,
             * usually) or a reconnection (which may have swallowed one),
             * and at least every ttl in case one was missed. */
            now = ss_client__now_ms();
            retry_at = now + ttl_ms;
        }
        if (now >= deadline) {
            rc = SS_E_TIMEOUT;
            break;
        }
        if (cancelled && cancelled(ud)) {
            rc = SS_E_CANCELLED;
            break;
        }
        uint64_t until = deadline < retry_at ? deadline : retry_at;
        uint64_t nap = until - now;
        if (cancelled && nap > SS_LEASE_CANCEL_POLL_MS)
            nap = SS_LEASE_CANCEL_POLL_MS;
        if (nap > UINT_MAX)
            nap = UINT_MAX;
        if (ss_client__wait_wakes(c, name, name_len, seen, (unsigned)nap) != seen)
            retry_at = 0;
        if (ss_client__closed(c)) {
            rc = SS_E_CONNECTION;
            break;
        }
    }
    ss_client__helper_unwatch(c, name, name_len);
    ss_client__release(c);
    return rc;
}

int ss_lease_acquire_wait(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                          unsigned wait_ms, char token[SS_LEASE_TOKEN_MAX])
{
    return ss_lease_acquire_wait_cancel(c, name, holder, ttl_ms, wait_ms, token, NULL, NULL);
}

int ss_lease_release(ss_client *c, const char *name, const char *holder, bool *released)
{
    ss_client_result r;
    int rc = ss_client_vdel(c, name, strlen(name), holder, strlen(holder), NULL, &r);
    if (released)
        *released = rc == SS_OK && r.count == 1;
    ss_client_result_free(&r);
    return rc;
}

int ss_lease_holder(ss_client *c, const char *name, ss_client_result *r)
{
    return ss_client_get(c, name, strlen(name), r);
}

/* The keeper. One thread renews the lease with asynchronous SETs, so
 * that a renewal waiting for its answer never hides the lease's end: the
 * thread wakes at the next renewal or at held_until, whichever is first.
 * held_until is the send time of the last renewal that succeeded plus the
 * lease time (the server counts from its receipt, later than our send, so
 * the holder's view ends no later than the server's). Once lost, the
 * keeper stops renewing for good.
 *
 * Ownership: the keeper is shared by the application's handle and by a
 * renewal in flight (whose callback may come after ss_lease_keeper_stop);
 * refs counts them under mu, and the last one frees it. */
struct ss_lease_keeper {
    ss_client *c;
    char *name, *holder;
    uint64_t ttl_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    bool stop, lost;
    bool in_flight;      /* a renewal awaits its answer */
    uint64_t sent_at;    /* ms; when it was sent */
    uint64_t held_until; /* ms; the lease is ours until then */
    uint64_t next_renewal;
    ss_lease_lost_cb lost_cb;
    void *lost_ud;
    char token[SS_LEASE_TOKEN_MAX];
};

/* A renewal's answer is a refusal (someone else holds the lease) rather
 * than a failure to reach the server, which is retried. */
static bool ss_lease__refused(int rc, bool applied)
{
    return (rc == SS_OK && !applied) || ss_err_is_wire(rc) || rc == SS_E_SERVER;
}

static void ss_lease__keeper_unref(ss_lease_keeper *k)
{
    pthread_mutex_lock(&k->mu);
    bool last = --k->refs == 0;
    pthread_mutex_unlock(&k->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k->name);
    free(k->holder);
    free(k);
}

/* The retry pace after a renewal that did not reach the server. */
static uint64_t ss_lease__retry_ms(uint64_t ttl_ms)
{
    uint64_t r = ttl_ms / 10;
    return r < 50 ? 50 : r > 1000 ? 1000 : r;
}

/* A renewal's answer, taken where it arrives (under k->mu): an answer
 * that comes after held_until has passed is too late to keep the lease,
 * which ss_lease_keeper_lost has said was lost by then, for good. */
static void ss_lease__renewed(void *ud, const ss_client_result *r)
{
    ss_lease_keeper *k = ud;
    pthread_mutex_lock(&k->mu);
    k->in_flight = false;
    uint64_t now = ss_client__now_ms();
    if (k->lost || now >= k->held_until) {
        k->lost = true;
    } else if (r->status == SS_OK && r->applied) {
        snprintf(k->token, sizeof k->token, "%s", r->version);
        k->held_until = k->sent_at + k->ttl_ms;
        k->next_renewal = k->sent_at + (k->ttl_ms / 3 ? k->ttl_ms / 3 : 1);
    } else if (ss_lease__refused(r->status, r->applied)) {
        k->lost = true;
    } else {
        k->next_renewal = now + ss_lease__retry_ms(k->ttl_ms);
    }
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    ss_lease__keeper_unref(k);
}

static void *ss_lease__keeper_main(void *arg)
{
    ss_lease_keeper *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stop && !k->lost) {
        uint64_t now = ss_client__now_ms();
        if (now >= k->held_until) {
            k->lost = true;
            break;
        }
        if (!k->in_flight && now >= k->next_renewal) {
            k->in_flight = true;
            k->refs++;
            k->sent_at = now;
            pthread_mutex_unlock(&k->mu);
            ss_set_options o = {.condition = SS_SET_NEX, .px_ms = k->ttl_ms};
            int rc = ss_client_set_async(k->c, k->name, strlen(k->name), k->holder,
                                         strlen(k->holder), &o, ss_lease__renewed, k);
            /* A closed client renews nothing again: lost now, not when
             * the lease runs out. */
            bool closed = rc != SS_OK && ss_client__closed(k->c);
            pthread_mutex_lock(&k->mu);
            if (rc != SS_OK) {
                /* Never started, never calls back. */
                k->refs--;
                k->in_flight = false;
                k->next_renewal = now + ss_lease__retry_ms(k->ttl_ms);
                k->lost = k->lost || closed;
            }
            continue;
        }
        uint64_t wake = k->held_until;
        if (!k->in_flight && k->next_renewal < wake)
            wake = k->next_renewal;
        struct timespec ts = {.tv_sec = (time_t)(wake / 1000), .tv_nsec = (long)(wake % 1000) * 1000000L};
        pthread_cond_timedwait(&k->cv, &k->mu, &ts);
    }
    bool report = k->lost && !k->stop;
    ss_lease_lost_cb cb = k->lost_cb;
    void *ud = k->lost_ud;
    pthread_mutex_unlock(&k->mu);
    if (report && cb)
        cb(ud);
    return NULL;
}

int ss_lease_keep_notify(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                         ss_lease_lost_cb lost_cb, void *ud, ss_lease_keeper **out)
{
    if (c == NULL || name == NULL || holder == NULL || ttl_ms == 0 || out == NULL)
        return SS_E_INVAL;
    /* Held until ss_lease_keeper_stop: a close before it shuts the
     * client down (the keeper finds it lost) and leaves freeing it to the
     * stop, instead of freeing it under the keeper's thread. */
    int rc = ss_client__hold(c);
    if (rc != SS_OK)
        return rc;
    /* Renew once before returning, so that the keeper starts with a
     * token (and a time the lease is known to be held until). */
    uint64_t sent_at = ss_client__now_ms();
    bool held = false;
    char token[SS_LEASE_TOKEN_MAX] = "";
    ss_client_result r;
    ss_set_options o = {.condition = SS_SET_NEX, .px_ms = ttl_ms};
    rc = ss_client_set(c, name, strlen(name), holder, strlen(holder), &o, &r);
    bool refused = ss_lease__refused(rc, r.applied);
    held = rc == SS_OK && r.applied;
    if (held)
        snprintf(token, sizeof token, "%s", r.version);
    ss_client_result_free(&r);
    if (!held && !refused) {
        ss_client__release(c);
        return rc;
    }
    ss_lease_keeper *k = calloc(1, sizeof *k);
    if (k == NULL) {
        ss_client__release(c);
        return SS_E_NOMEM;
    }
    k->c = c;
    k->name = strdup(name);
    k->holder = strdup(holder);
    k->ttl_ms = ttl_ms;
    k->refs = 1;
    k->lost = !held;
    k->held_until = held ? sent_at + ttl_ms : 0;
    k->next_renewal = sent_at + (ttl_ms / 3 ? ttl_ms / 3 : 1);
    k->lost_cb = lost_cb;
    k->lost_ud = ud;
    memcpy(k->token, token, sizeof token);
    pthread_mutex_init(&k->mu, NULL);
    if (ss_client__cond_init(&k->cv) != SS_OK) {
        pthread_mutex_destroy(&k->mu);
        free(k->name);
        free(k->holder);
        free(k);
        ss_client__release(c);
        return SS_E_NOMEM;
    }
    if (k->name == NULL || k->holder == NULL ||
        pthread_create(&k->thread, NULL, ss_lease__keeper_main, k) != 0) {
        ss_lease__keeper_unref(k);
        ss_client__release(c);
        return SS_E_NOMEM;
    }
    *out = k;
    return SS_OK;
}

int ss_lease_keep(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                  ss_lease_keeper **out)
{
    return ss_lease_keep_notify(c, name, holder, ttl_ms, NULL, NULL, out);
}

bool ss_lease_keeper_lost(ss_lease_keeper *k)
{
    pthread_mutex_lock(&k->mu);
    /* By the clock too: the keeper's thread may not have woken yet. */
    bool lost = k->lost || ss_client__now_ms() >= k->held_until;
    pthread_mutex_unlock(&k->mu);
    return lost;
}

void ss_lease_keeper_token(ss_lease_keeper *k, char token[SS_LEASE_TOKEN_MAX])
{
    pthread_mutex_lock(&k->mu);
    memcpy(token, k->token, SS_LEASE_TOKEN_MAX);
    pthread_mutex_unlock(&k->mu);
}

void ss_lease_keeper_stop(ss_lease_keeper *k)
{
    if (k == NULL)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    ss_client *c = k->c;
    ss_lease__keeper_unref(k);
    /* A renewal still in flight holds k, not c: a closed client failed
     * every pending call before its close returned. */
    ss_client__release(c);
}

int ss_lease_edit(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                  unsigned wait_ms, const void *key, size_t key_len, ss_edit_fn fn, void *ud)
{
    char token[SS_LEASE_TOKEN_MAX];
    int rc = ss_client__hold(c); /* several calls: a close ends them, never frees c under them */
    if (rc != SS_OK)
        return rc;
    rc = ss_lease_acquire_wait(c, name, holder, ttl_ms, wait_ms, token);
    if (rc != SS_OK) {
        ss_client__release(c);
        return rc;
    }
    ss_client_result cur;
    rc = ss_client_get(c, key, key_len, &cur);
    if (rc == SS_OK) {
        uint8_t *nv = NULL;
        size_t nn = 0;
        bool del = false;
        rc = fn(ud, cur.value, cur.value_len, cur.found, &nv, &nn, &del);
        if (rc == SS_OK && nv) {
            ss_set_options o = {.fencing_token = token};
            rc = ss_client_set(c, key, key_len, nv, nn, &o, NULL);
        } else if (rc == SS_OK && del) {
            rc = ss_client_del(c, key, key_len, token, NULL);
        }
        free(nv);
    }
    ss_client_result_free(&cur);
    int rrc = ss_lease_release(c, name, holder, NULL);
    ss_client__release(c);
    return rc != SS_OK ? rc : rrc;
}
