/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* client_internal.h - what the client library's files share (not
 * installed). The public contract is client.h.
 *
 * Files: client.c (connection, reconnection, the timeout reaper, close),
 * requests.c (sending and pending calls), blocking.c (blocking wrappers),
 * incoming.c (answers and notifications), answer.c (answer
 * interpretation, pure), scan.c (the SCAN pager).
 *
 * Invariant: every pending call completes exactly once - by its answer, by
 * the timeout reaper, or by ss_client_close - and its callback runs without
 * the client's lock held, so callbacks may start new calls.
 */
#ifndef SS_CLIENT_INTERNAL_H
#define SS_CLIENT_INTERNAL_H

#include <mosquitto.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "../core/buf.h"
#include "../core/hlc.h"
#include "../core/table.h"
#include "answer.h"
#include "client.h"

#define SS_CORR_LEN 16


struct ss_pending {
    struct ss_pending *next;
    uint8_t corr[SS_CORR_LEN];
    enum ss_answer_kind kind;
    uint64_t deadline_ms;
    ss_result_cb cb;
    void *ud;
};

/* A key registered with KEYNOTIFY, to register again after a reconnect:
 * on a list (for that) and in a table (to find it in O(1)). */
struct ss_watched {
    ss_table_node node;
    struct ss_watched *next;
    size_t len;
    uint8_t key[];
};

struct ss_client {
    struct mosquitto *m;
    bool own; /* we created m and run its thread */
    char *id;
    char *resp_topic;
    char *notify_prefix;
    unsigned timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ss_clock clock;
    struct ss_pending *pending;
    struct ss_watched *watched;
    ss_table watched_index;
    bool connected, subscribed, ever_subscribed, closing;
    int sub_mid;
    int connack_rc;  /* the broker's refusal of the last CONNECT, 0 if none */
    bool sub_refused; /* the broker refused the response topic's SUBSCRIBE */
    ss_notify_cb notify_cb;
    void *notify_ud;
    ss_connection_cb conn_cb;
    void *conn_ud;
    ss_message_cb message_cb;
    void *message_ud;
    int message_calls;        /* message callbacks under way */
    pthread_t message_thread; /* the thread running them */
    int app_sub_mid;     /* the application's SUBSCRIBE waiting for its answer */
    int app_sub_result;  /* its granted QoS, or -1 while waiting */
    pthread_t reaper;
    bool reaper_running;
    uint64_t notifications;
    int waiters; /* threads inside a blocking call: close waits for them */
};

/* Wall clock in ms; an absolute CLOCK_REALTIME time ms from now. */
uint64_t ss_client__now_ms(void);
void ss_client__abstime(struct timespec *ts, unsigned ms);
/* Run a pending call's callback with r, then free both. */
void ss_client__complete(struct ss_pending *p, ss_client_result *r);
/* Complete a pending call with status and no answer. */
void ss_client__fail_pending(struct ss_pending *p, int status);
/* Publish one request; on success the pending entry is queued. */
int ss_client__send(ss_client *c, enum ss_answer_kind kind, size_t argc, const ss_bytes *argv,
                    const char *fencing_token, ss_result_cb cb, void *ud);
/* Send one request and wait for its answer (the client's timeout), as the
 * blocking calls do: r (may be NULL) is filled as theirs is. */
int ss_client__call(ss_client *c, enum ss_answer_kind kind, size_t argc, const ss_bytes *argv,
                    ss_client_result *r);
/* Borrowed slices of bytes and of a C string. */
ss_bytes ss_client__b(const void *p, size_t n);
ss_bytes ss_client__w(const char *s);

#endif
