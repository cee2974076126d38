/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* leader.c - leader election on a lease (leader.h).
 *
 * One thread per participant: while following, it tries SET role holder
 * NX PX lease (after each notification, and every lease / 3 in case one
 * was missed) and reads the leader otherwise; while leading, it sleeps
 * until the keeper reports the lease lost or the participant resigns.
 *
 * Invariant: `leading` is true only while a keeper started from this
 * participant's own acquisition is running and not lost; the state's
 * fields change under mu only, and the callback runs without mu held.
 */
#include "leader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../core/errors.h"
#include "client_internal.h"

#define SS_LEADER_LEASE_DEFAULT_MS 10000u
/* The longest the participant's thread waits before looking whether it
 * was asked to resign. */
#define SS_LEADER_SLICE_MS 50u

struct ss_leader {
    ss_client *c; /* borrowed */
    char *role;
    char holder[SS_LEADER_HOLDER_MAX];
    uint64_t lease_ms;
    ss_leader_cb cb;
    void *ud;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    bool lost;               /* the keeper said so */
    /* An acquisition of ours may hold the role: its outcome is unknown (no
     * answer) or it succeeded and its keeper could not start. */
    bool maybe_ours;
    ss_lease_keeper *keeper; /* while leading */
    ss_leader_state state;
};

/* The keeper's lost callback, on the keeper's thread: wake ours. */
static void ss_leader__lost(void *ud)
{
    ss_leader *l = ud;
    pthread_mutex_lock(&l->mu);
    l->lost = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* Set what is known and tell the application when it changed. */
static void ss_leader__learn(ss_leader *l, bool leading, const char *leader, const char *token)
{
    pthread_mutex_lock(&l->mu);
    ss_leader_state s = l->state;
    s.leading = leading;
    snprintf(s.leader, sizeof s.leader, "%s", leader);
    snprintf(s.token, sizeof s.token, "%s", token);
    bool changed = memcmp(&s, &l->state, sizeof s) != 0;
    l->state = s;
    pthread_mutex_unlock(&l->mu);
    if (changed && l->cb)
        l->cb(l->ud, &s);
}

static bool ss_leader__stopping(ss_leader *l)
{
    pthread_mutex_lock(&l->mu);
    bool stop = l->stop;
    pthread_mutex_unlock(&l->mu);
    return stop;
}

/* Keep the role, which holds our holder id: start a keeper (its first
 * renewal, NEX, succeeds only while the value is still ours) and lead with
 * token, or with the keeper's own token when token is NULL. True when
 * leading. */
static bool ss_leader__keep(ss_leader *l, const char *token)
{
    ss_lease_keeper *k = NULL;
    pthread_mutex_lock(&l->mu);
    l->lost = false;
    pthread_mutex_unlock(&l->mu);
    if (ss_lease_keep_notify(l->c, l->role, l->holder, l->lease_ms, ss_leader__lost, l, &k) != SS_OK)
        return false;
    if (ss_lease_keeper_lost(k)) {
        ss_lease_keeper_stop(k);
        return false;
    }
    char kept[SS_LEASE_TOKEN_MAX];
    if (token == NULL) {
        ss_lease_keeper_token(k, kept);
        token = kept;
    }
    pthread_mutex_lock(&l->mu);
    l->keeper = k;
    pthread_mutex_unlock(&l->mu);
    ss_leader__learn(l, true, l->holder, token);
    return true;
}

/* One try: acquire the role if nobody holds it, else learn who does. */
static void ss_leader__try(ss_leader *l)
{
    ss_set_options o = {.condition = SS_SET_NX, .px_ms = l->lease_ms};
    ss_client_result r;
    size_t role_len = strlen(l->role);
    int rc = ss_client_set(l->c, l->role, role_len, l->holder, strlen(l->holder), &o, &r);
    bool acquired = rc == SS_OK && r.applied;
    char token[SS_LEASE_TOKEN_MAX];
    snprintf(token, sizeof token, "%s", r.version);
    ss_client_result_free(&r);
    /* Renewed at once by the keeper (NEX: only while the value is still
     * ours); a keeper that finds the role gone is lost. */
    if (acquired && ss_leader__keep(l, token)) {
        l->maybe_ours = false;
        return;
    }
    if (acquired || rc == SS_E_TIMEOUT || rc == SS_E_CONNECTION)
        l->maybe_ours = true;
    rc = ss_client_get(l->c, l->role, role_len, &r);
    if (rc == SS_OK) {
        char who[SS_LEADER_HOLDER_MAX] = "";
        if (r.found)
            snprintf(who, sizeof who, "%.*s", (int)r.value_len, (const char *)r.value);
        bool ours = l->maybe_ours && r.found && r.value_len == strlen(l->holder) &&
                    memcmp(r.value, l->holder, r.value_len) == 0;
        ss_client_result_free(&r);
        /* The role holds our own id after an acquisition of ours whose
         * answer never came (timed out, connection lost), or whose keeper
         * could not start: nobody else can take the role until it
         * expires, so lead (the term's token is the keeper's first
         * renewal, greater than every version of the role before it).
         * Only then: a participant given the same holder id as another
         * must not lead on the other's acquisition. */
        if (ours && ss_leader__keep(l, NULL)) {
            l->maybe_ours = false;
            return;
        }
        if (!ours)
            l->maybe_ours = false;
        ss_leader__learn(l, false, who, "");
        return;
    }
    ss_client_result_free(&r);
}

/* Leading: wait until the lease is lost or we resign; then stop the
 * keeper. */
static void ss_leader__lead(ss_leader *l)
{
    pthread_mutex_lock(&l->mu);
    while (!l->lost && !l->stop)
        pthread_cond_wait(&l->cv, &l->mu);
    bool lost = l->lost && !l->stop;
    ss_lease_keeper *k = lost ? l->keeper : NULL;
    if (lost)
        l->keeper = NULL;
    /* A renewal of ours that was in flight may still be applied (the
     * server stalled, say): the role would then hold our id until it
     * expires, and nobody else could lead meanwhile. Finding it so, lead
     * again (ss_leader__try). */
    if (lost)
        l->maybe_ours = true;
    pthread_mutex_unlock(&l->mu);
    if (k) {
        ss_lease_keeper_stop(k);
        ss_leader__learn(l, false, "", "");
    }
}

/* Following: wait for a notification on the client (the role's DELETE,
 * usually) or lease / 3, whichever is first, looking for a resignation
 * every SS_LEADER_SLICE_MS. */
static void ss_leader__follow(ss_leader *l, uint64_t seen)
{
    uint64_t pace = l->lease_ms / 3 ? l->lease_ms / 3 : 1;
    uint64_t until = ss_client__now_ms() + pace;
    size_t role_len = strlen(l->role);
    while (!ss_leader__stopping(l) && !ss_client__closed(l->c)) {
        uint64_t now = ss_client__now_ms();
        if (now >= until)
            return;
        uint64_t nap = until - now < SS_LEADER_SLICE_MS ? until - now : SS_LEADER_SLICE_MS;
        if (ss_client__wait_wakes(l->c, l->role, role_len, seen, (unsigned)nap) > seen)
            return;
    }
}

/* The client was closed under the participant: it leads no more, and
 * waits for its resignation. */
static void ss_leader__orphaned(ss_leader *l)
{
    pthread_mutex_lock(&l->mu);
    ss_lease_keeper *k = l->keeper;
    l->keeper = NULL;
    pthread_mutex_unlock(&l->mu);
    ss_lease_keeper_stop(k);
    ss_leader__learn(l, false, "", "");
    pthread_mutex_lock(&l->mu);
    while (!l->stop)
        pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
}

static void *ss_leader__main(void *arg)
{
    ss_leader *l = arg;
    while (!ss_leader__stopping(l)) {
        if (ss_client__closed(l->c)) {
            ss_leader__orphaned(l);
            break;
        }
        pthread_mutex_lock(&l->mu);
        bool leading = l->keeper != NULL;
        pthread_mutex_unlock(&l->mu);
        if (leading) {
            ss_leader__lead(l);
            continue;
        }
        uint64_t seen = ss_client__wakes(l->c, l->role, strlen(l->role));
        ss_leader__try(l);
        pthread_mutex_lock(&l->mu);
        leading = l->keeper != NULL;
        pthread_mutex_unlock(&l->mu);
        if (!leading)
            ss_leader__follow(l, seen);
    }
    return NULL;
}

/* Free l and let go of its client. */
static void ss_leader__free(ss_leader *l)
{
    ss_client *c = l->c;
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l->role);
    free(l);
    ss_client__release(c);
}

int ss_leader_campaign(ss_client *c, const ss_leader_options *o, ss_leader **out)
{
    if (c == NULL || o == NULL || o->role == NULL || o->role[0] == '\0' || out == NULL)
        return SS_E_INVAL;
    if (o->holder && (o->holder[0] == '\0' || strlen(o->holder) >= SS_LEADER_HOLDER_MAX))
        return SS_E_INVAL;
    /* Held until the resignation: a close before it leaves freeing the
     * client to it, instead of freeing it under the participant. */
    int rc = ss_client__hold(c);
    if (rc != SS_OK)
        return rc;
    ss_leader *l = calloc(1, sizeof *l);
    if (l == NULL) {
        ss_client__release(c);
        return SS_E_NOMEM;
    }
    l->c = c;
    l->lease_ms = o->lease_ms ? o->lease_ms : SS_LEADER_LEASE_DEFAULT_MS;
    l->cb = o->cb;
    l->ud = o->ud;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->role = strdup(o->role);
    if (l->role == NULL) {
        ss_leader__free(l);
        return SS_E_NOMEM;
    }
    if (o->holder) {
        snprintf(l->holder, sizeof l->holder, "%s", o->holder);
    } else {
        /* Unique to this participant: two processes, even with the same
         * client id, never share it. */
        uint8_t r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            ss_leader__free(l);
            return SS_E_RANDOM;
        }
        int k = snprintf(l->holder, sizeof l->holder - 17, "%s", ss_client_id(c));
        if (k > (int)sizeof l->holder - 18)
            k = (int)sizeof l->holder - 18;
        k += snprintf(l->holder + k, sizeof l->holder - (size_t)k, ".");
        for (int i = 0; i < 8; i++)
            k += snprintf(l->holder + k, sizeof l->holder - (size_t)k, "%02x", r[i]);
    }
    rc = ss_client__helper_watch(c, l->role, strlen(l->role));
    if (rc != SS_OK) {
        ss_leader__free(l);
        return rc;
    }
    if (pthread_create(&l->thread, NULL, ss_leader__main, l) != 0) {
        ss_client__helper_unwatch(c, l->role, strlen(l->role));
        ss_leader__free(l);
        return SS_E_NOMEM;
    }
    *out = l;
    return SS_OK;
}

void ss_leader_get(ss_leader *l, ss_leader_state *s)
{
    pthread_mutex_lock(&l->mu);
    *s = l->state;
    ss_lease_keeper *k = l->keeper;
    /* The keeper's clock-based rule, before our thread has woken. */
    if (s->leading && (k == NULL || ss_lease_keeper_lost(k))) {
        s->leading = false;
        s->token[0] = '\0';
    }
    pthread_mutex_unlock(&l->mu);
}

const char *ss_leader_holder(const ss_leader *l)
{
    return l->holder;
}

int ss_leader_resign(ss_leader *l)
{
    if (l == NULL)
        return SS_OK;
    /* On the client's callback thread the release (a blocking VDEL) and
     * the participant's own calls could not be answered: refused before
     * anything changes. */
    if (ss_client__in_callback_thread(l->c))
        return SS_E_IN_CALLBACK;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    int rc = SS_OK;
    if (l->keeper) {
        ss_lease_keeper_stop(l->keeper);
        l->keeper = NULL;
        rc = ss_lease_release(l->c, l->role, l->holder, NULL);
    }
    ss_client__helper_unwatch(l->c, l->role, strlen(l->role));
    ss_leader__free(l);
    return rc;
}
