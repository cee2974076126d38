/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* blocking.c - the blocking calls: an asynchronous call and a wait for its
 * answer (client.h). */
#include "client_internal.h"

#include <mqtt_protocol.h>
#include <string.h>

#include "../core/errors.h"

struct ss_waiter {
    ss_client *c;
    bool done;
    ss_client_result *out;
};

static void ss_client__wake(void *ud, const ss_client_result *r)
{
    struct ss_waiter *w = ud;
    pthread_mutex_lock(&w->c->mu);
    ss_client_result *o = w->out;
    *o = *r;
    /* Take ownership of the allocated parts. */
    ((ss_client_result *)r)->value = NULL;
    ((ss_client_result *)r)->error_text = NULL;
    w->done = true;
    pthread_cond_broadcast(&w->c->cv);
    pthread_mutex_unlock(&w->c->mu);
}

/* A thread enters a blocking call: counted before it sends anything, so
 * that a close waits for it to have left the client altogether (it may
 * still be inside libmosquitto's publish when the close fails its call).
 * SS_E_CONNECTION when the client is closing. */
static int ss_client__enter(ss_client *c)
{
    pthread_mutex_lock(&c->mu);
    bool closing = c->closing;
    if (!closing)
        c->waiters++;
    pthread_mutex_unlock(&c->mu);
    return closing ? SS_E_CONNECTION : SS_OK;
}

/* Wait for the answer of a call that was sent (rc 0), or take its
 * failure; then leave (ss_client__enter). */
static int ss_client__wait(ss_client *c, struct ss_waiter *w, int rc)
{
    if (rc != SS_OK) {
        w->out->status = rc;
        /* Not sent: larger than the broker's Maximum Packet Size, or,
         * when it gave none, than any MQTT packet may be. */
        if (rc == SS_E_REFUSED) {
            pthread_mutex_lock(&c->mu);
            bool limit = c->max_packet != 0;
            pthread_mutex_unlock(&c->mu);
            w->out->error_text = limit ? ss_client__refusal_text(c, ss_strerror(rc), MQTT_RC_PACKET_TOO_LARGE)
                                       : strdup("the request is larger than an MQTT packet may be (256 MiB); "
                                                "it was not sent");
        }
    }
    pthread_mutex_lock(&c->mu);
    while (rc == SS_OK && !w->done)
        pthread_cond_wait(&c->cv, &c->mu);
    c->waiters--;
    if (c->waiters == 0)
        pthread_cond_broadcast(&c->cv); /* a close may be waiting for us */
    pthread_mutex_unlock(&c->mu);
    return rc == SS_OK ? w->out->status : rc;
}

#define SS_BLOCKING(c, r, call)                                                         \
    do {                                                                                \
        ss_client_result tmp_;                                                          \
        ss_client_result *out_ = (r) ? (r) : &tmp_;                                     \
        memset(out_, 0, sizeof *out_);                                                  \
        struct ss_waiter w_ = {(c), false, out_};                                       \
        /* Refused before anything is sent: on the thread that delivers         \
         * answers, the wait would never end. */                                        \
        int rc_ = ss_client__in_callback_thread(c) ? SS_E_IN_CALLBACK : ss_client__enter(c); \
        if (rc_ == SS_OK)                                                               \
            rc_ = ss_client__wait((c), &w_, (call));                                    \
        else                                                                            \
            out_->status = rc_;                                                         \
        if (out_ == &tmp_)                                                              \
            ss_client_result_free(&tmp_);                                               \
        return rc_;                                                                     \
    } while (0)

int ss_client_call(ss_client *c, const ss_client_request *req, ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_call_async(c, req, ss_client__wake, &w_));
}

int ss_client_set(ss_client *c, const void *key, size_t key_len, const void *value,
                  size_t value_len, const ss_set_options *opts, ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_set_async(c, key, key_len, value, value_len, opts, ss_client__wake, &w_));
}

int ss_client_get(ss_client *c, const void *key, size_t key_len, ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_get_async(c, key, key_len, ss_client__wake, &w_));
}

int ss_client_del(ss_client *c, const void *key, size_t key_len, const char *fencing_token,
                  ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_del_async(c, key, key_len, fencing_token, ss_client__wake, &w_));
}

int ss_client_vdel(ss_client *c, const void *key, size_t key_len, const void *value,
                   size_t value_len, const char *fencing_token, ss_client_result *r)
{
    SS_BLOCKING(c, r,
                ss_client_vdel_async(c, key, key_len, value, value_len, fencing_token, ss_client__wake, &w_));
}

int ss_client_keynotify(ss_client *c, const void *key, size_t key_len, bool stop,
                        ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client_keynotify_async(c, key, key_len, stop, ss_client__wake, &w_));
}

int ss_client_admin(ss_client *c, size_t argc, const void *const *argv, const size_t *lens,
                    ss_client_result *r)
{
    enum { SS_ADMIN_ARGS_MAX = 8 };
    ss_bytes words[SS_ADMIN_ARGS_MAX];
    if (argc == 0 || argc > SS_ADMIN_ARGS_MAX) {
        if (r) {
            memset(r, 0, sizeof *r);
            r->status = SS_E_INVAL;
        }
        return SS_E_INVAL;
    }
    for (size_t i = 0; i < argc; i++)
        words[i] = ss_client__b(argv[i], lens[i]);
    return ss_client__call(c, SS_ANSWER_ADMIN, argc, words, r);
}

int ss_client__call(ss_client *c, enum ss_answer_kind kind, size_t argc, const ss_bytes *argv,
                    ss_client_result *r)
{
    SS_BLOCKING(c, r, ss_client__send(c, kind, argc, argv, NULL, 0, ss_client__wake, &w_));
}
