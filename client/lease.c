/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* lease.c - leases on top of the client: SET NEX PX, VDEL, KEYNOTIFY. */
#include "lease.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/errors.h"

static uint64_t ss_lease__ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int ss_lease_acquire(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                     bool *acquired, char token[SS_LEASE_TOKEN_MAX])
{
    ss_set_options o = {.condition = SS_SET_NEX, .px_ms = ttl_ms};
    ss_client_result r;
    int rc = ss_client_set(c, name, strlen(name), holder, strlen(holder), &o, &r);
    *acquired = rc == SS_OK && r.applied;
    if (*acquired && token)
        snprintf(token, SS_LEASE_TOKEN_MAX, "%s", r.version);
    ss_client_result_free(&r);
    return rc;
}

int ss_lease_acquire_wait(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                          unsigned wait_ms, char token[SS_LEASE_TOKEN_MAX])
{
    /* Uncontended: no need to watch the lock key at all. */
    bool acquired = false;
    int rc = ss_lease_acquire(c, name, holder, ttl_ms, &acquired, token);
    if (rc != SS_OK || acquired)
        return rc;
    rc = ss_client_keynotify(c, name, strlen(name), false, NULL);
    if (rc != SS_OK)
        return rc;
    uint64_t deadline = ss_lease__ms() + wait_ms;
    for (;;) {
        uint64_t seen = ss_client_notification_count(c);
        rc = ss_lease_acquire(c, name, holder, ttl_ms, &acquired, token);
        if (rc != SS_OK || acquired)
            break;
        uint64_t now = ss_lease__ms();
        if (now >= deadline) {
            rc = SS_E_TIMEOUT;
            break;
        }
        /* Woken by any notification (the lock's DELETE, usually); also
         * retry at least every ttl in case one was missed. */
        uint64_t nap = deadline - now < ttl_ms ? deadline - now : ttl_ms;
        ss_client_wait_notification(c, seen, (unsigned)nap);
    }
    ss_client_keynotify(c, name, strlen(name), true, NULL);
    return rc;
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

struct ss_lease_keeper {
    ss_client *c;
    char *name, *holder;
    uint64_t ttl_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, lost;
    char token[SS_LEASE_TOKEN_MAX];
};

static void *ss_lease__keeper_main(void *arg)
{
    ss_lease_keeper *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stop && !k->lost) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t nap = k->ttl_ms / 3 ? k->ttl_ms / 3 : 1;
        ts.tv_sec += (time_t)(nap / 1000);
        ts.tv_nsec += (long)(nap % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&k->cv, &k->mu, &ts);
        if (k->stop)
            break;
        pthread_mutex_unlock(&k->mu);
        bool acquired = false;
        char token[SS_LEASE_TOKEN_MAX];
        int rc = ss_lease_acquire(k->c, k->name, k->holder, k->ttl_ms, &acquired, token);
        pthread_mutex_lock(&k->mu);
        if (rc == SS_OK && acquired)
            memcpy(k->token, token, sizeof token);
        else if (rc == SS_OK || ss_err_is_wire(rc) || rc == SS_E_SERVER)
            k->lost = true; /* refused: someone else holds it now */
        /* A timeout or a dropped connection is retried at the next turn. */
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

int ss_lease_keep(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                  ss_lease_keeper **out)
{
    if (ttl_ms == 0)
        return SS_E_INVAL;
    ss_lease_keeper *k = calloc(1, sizeof *k);
    if (k == NULL)
        return SS_E_NOMEM;
    k->c = c;
    k->name = strdup(name);
    k->holder = strdup(holder);
    k->ttl_ms = ttl_ms;
    /* Renew once before returning, so that the keeper starts with a
     * token: a write fenced with "" would be refused. */
    bool acquired = false;
    int rc = k->name && k->holder ? ss_lease_acquire(c, name, holder, ttl_ms, &acquired, k->token)
                                  : SS_E_NOMEM;
    if (rc != SS_OK) {
        free(k->name);
        free(k->holder);
        free(k);
        return rc;
    }
    k->lost = !acquired;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    if (k->name == NULL || k->holder == NULL ||
        pthread_create(&k->thread, NULL, ss_lease__keeper_main, k) != 0) {
        free(k->name);
        free(k->holder);
        pthread_mutex_destroy(&k->mu);
        pthread_cond_destroy(&k->cv);
        free(k);
        return SS_E_NOMEM;
    }
    *out = k;
    return SS_OK;
}

bool ss_lease_keeper_lost(ss_lease_keeper *k)
{
    pthread_mutex_lock(&k->mu);
    bool lost = k->lost;
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
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k->name);
    free(k->holder);
    free(k);
}

int ss_lease_edit(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                  unsigned wait_ms, const void *key, size_t key_len, ss_edit_fn fn, void *ud)
{
    char token[SS_LEASE_TOKEN_MAX];
    int rc = ss_lease_acquire_wait(c, name, holder, ttl_ms, wait_ms, token);
    if (rc != SS_OK)
        return rc;
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
    return rc != SS_OK ? rc : rrc;
}
