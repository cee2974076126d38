/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* client_internal.h - what the client library's files share (not
 * installed). The public contract is client.h.
 *
 * Files: client.c (connection events, re-registration, close),
 * connect.c (making a connected client, retries, the non-blocking
 * start), loop.c (the network thread: libmosquitto's loop, timeouts,
 * reconnection), evloop.c (the same driven by the application's event
 * loop), requests.c (sending and pending calls), blocking.c (blocking
 * wrappers), incoming.c (answers and notifications), answer.c (answer
 * interpretation, pure), scan.c (the SCAN pager), leader.c (leader
 * election on a lease).
 *
 * Invariant: every pending call completes exactly once - by its answer, by
 * its timeout, by the loss of the connection, or by ss_client_close - and
 * its callback runs without
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
#include "refusals.h"

#define SS_CORR_LEN 16
/* Reconnection: the first delay, doubled after each failure up to the
 * longest (client.h). */
#define SS_CLIENT_BACKOFF_FIRST_MS 1000u
#define SS_CLIENT_BACKOFF_MAX_MS 10000u


struct ss_pending {
    struct ss_pending *next;
    uint8_t corr[SS_CORR_LEN];
    enum ss_answer_kind kind;
    uint64_t deadline_ms;
    int mid; /* its PUBLISH's packet id (0 until known): a PUBACK that
                refuses it fails it at once */
    ss_result_cb cb;
    void *ud;
};

/* PUBACKs that refused a PUBLISH whose call had not learnt its packet id
 * yet (the broker answered before mosquitto_publish_v5 returned). */

/* A key registered with KEYNOTIFY, to register again after a reconnect:
 * on a list (for that) and in a table (to find it in O(1)). */
struct ss_watched {
    ss_table_node node;
    struct ss_watched *next;
    size_t len;
    uint8_t key[];
};

/* A key some of the library's helpers watch (ss_client__helper_watch). */
struct ss_helper_watch {
    struct ss_helper_watch *next;
    unsigned users;
    uint64_t events; /* notifications on this key */
    size_t len;
    uint8_t key[];
};

/* What a client's own handle is made with, kept for the new handle of
 * each reconnection (connect.c). Strings owned; NULL when not given. */
struct ss_client_conf {
    char *host, *username, *password, *cafile, *capath, *certfile, *keyfile, *tls_version;
    int port, keepalive;
    bool tls, insecure;
};

struct ss_client {
    struct mosquitto *m; /* under mu when it may be replaced (own, not attached) */
    bool own; /* we created m and run its thread */
    struct ss_client_conf conf;
    int publishing; /* threads inside a publish on m: a new m waits for them to leave the old */
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
    int lost_rc;     /* why the connection last ended (libmosquitto's error, or the
                        broker's DISCONNECT reason), 0 if it has not */
    bool sub_refused; /* the broker refused the response topic's SUBSCRIBE */
    ss_notify_cb notify_cb;
    void *notify_ud;
    ss_connection_cb conn_cb;
    void *conn_ud;
    ss_rewatch_cb rewatch_cb;
    void *rewatch_ud;
    ss_message_cb message_cb;
    void *message_ud;
    int app_calls;            /* the application's callbacks under way (notify, */
    pthread_t app_thread;     /* connection, rewatch, message); where the last runs */
    int app_sub_mid;     /* the application's SUBSCRIBE waiting for its answer */
    int app_sub_result;  /* its granted QoS, or -1 while waiting */
    bool app_sub_busy;   /* a thread is in ss_client_subscribe: one at a time */
    bool ready;          /* mu and cv initialised */
    pthread_t net;       /* the network thread of a client that owns m */
    bool net_running;
    pthread_t reaper;    /* the timer thread of an attached client */
    bool reaper_running;
    uint64_t reap_at;    /* no pending call's deadline comes before this */
    unsigned backoff_first_ms, backoff_max_ms; /* reconnection delays */
    unsigned backoff_next_ms; /* the next one; 0: the first */
    /* Driven by the application's event loop (ss_client_connect_start):
     * no thread of ours; reconnect_at is when ss_client_process tries
     * the next connection (0: none scheduled). */
    bool evloop;
    uint64_t reconnect_at;
    /* The thread that delivers answers (the network thread, or the one
     * an attached client's application calls ss_client_handle_message
     * on): a blocking call made on it would wait for itself. */
    pthread_t net_thread;
    bool net_thread_known;
    uint64_t notifications;
    /* Reconnections that re-registered the notifications (notifications
     * may have been missed meanwhile), and re-registrations of a key that
     * a helper's STOP raced with: the library's own waiters (leases,
     * leader election) look again at each. */
    uint64_t gaps;
    /* Keys the library's helpers watch, with how many of them do: the
     * last one to finish ends the KEYNOTIFY (client.c). */
    struct ss_helper_watch *helper_watches;
    int waiters; /* threads inside a blocking call: close waits for them */
    /* Lease keepers, leader participants and lease waits on this client
     * (ss_client__hold): a close while some remain shuts the client down
     * but leaves freeing it to the last of them (orphaned). */
    unsigned holds;
    bool orphaned;
    uint32_t max_packet; /* the broker's Maximum Packet Size (CONNACK); 0: none said */
    struct ss_early_refusals early; /* refusals before their call knew its packet id */
    ss_log_cb log_cb; /* libmosquitto's log lines, when asked for */
    void *log_ud;
};

/* The functions below are shared by the library's files only: hidden, so
 * that the shared library does not export them (its version script
 * exports ss_client_*, which their names also match). */
#pragma GCC visibility push(hidden)

/* Wall clock in ms; an absolute CLOCK_REALTIME time ms from now. */
/* The monotonic clock, in ms (deadlines, pauses, leases); the wall clock
 * (versions only); a condition variable that waits on the monotonic
 * clock, as every wait's time from ss_client__abstime is. */
uint64_t ss_client__now_ms(void);
uint64_t ss_client__wall_ms(void);
int ss_client__cond_init(pthread_cond_t *cv);
void ss_client__abstime(struct timespec *ts, unsigned ms);
/* KEYNOTIFY on key for one of the library's helpers (a lease waiter, a
 * leader participant), counted per key so that one helper ending its wait
 * does not end another's notifications. */
int ss_client__helper_watch(ss_client *c, const void *key, size_t key_len);
void ss_client__helper_unwatch(ss_client *c, const void *key, size_t key_len);
/* A notification on key arrived (c->mu held): its helpers' count grows. */
void ss_client__helper_notified(ss_client *c, const void *key, size_t key_len);
/* Notifications on key (which a helper watches) plus gaps, and a wait
 * until that passes seen (or timeout_ms, or the client closes):
 * what the helpers wait on, so that a reconnection (whose gap may have
 * swallowed the DELETE they wait for) wakes them too, and notifications
 * of other keys do not. */
uint64_t ss_client__wakes(ss_client *c, const void *key, size_t key_len);
uint64_t ss_client__wait_wakes(ss_client *c, const void *key, size_t key_len, uint64_t seen,
                               unsigned timeout_ms);
/* A helper (keeper, participant, lease wait) uses c beyond one call:
 * held, a closed client stays in memory (shut down: every call fails with
 * SS_E_CONNECTION) until released. Hold: 0, or SS_E_CONNECTION when c is
 * closing. Release frees an orphaned client with its last hold. */
int ss_client__hold(ss_client *c);
void ss_client__release(ss_client *c);
/* True once ss_client_close has begun. */
bool ss_client__closed(ss_client *c);
/* Remember the calling thread as the one that delivers answers. */
void ss_client__delivering(ss_client *c);
/* True on a thread that runs this client's callbacks, where a blocking
 * call must be refused (SS_E_IN_CALLBACK). */
bool ss_client__in_callback_thread(ss_client *c);
/* Start the client's thread: the network thread if it owns m, else the
 * timer thread. Stop them (closing set), after which no callback runs but
 * on the caller's thread. */
int ss_client__threads_start(ss_client *c);
void ss_client__threads_stop(ss_client *c);
/* Complete the calls whose deadline passed (all of them when closing). */
void ss_client__reap(ss_client *c);
/* The next reconnection delay in ms, and the one after it doubled up to
 * the longest. */
unsigned ss_client__backoff_step(ss_client *c);
/* Event-loop clients: try the connection again after the next delay. */
void ss_client__schedule_reconnect(ss_client *c);
/* Connect again on a new handle (connect.c), the TCP connection begun
 * (threaded: for a network thread of the client's own); 0, or a failure
 * (the old handle stays, to try again after the backoff). */
int ss_client__reconnect(ss_client *c, bool threaded);
void ss_client__conf_free(struct ss_client_conf *f);
/* A client on m (ours when own), not connected; set m's callbacks to
 * the client's. */
int ss_client__new(struct mosquitto *m, bool own, const char *id, unsigned timeout_ms, ss_client **out);
void ss_client__callbacks_set(ss_client *c, struct mosquitto *m);
/* The text of the broker's refusal with an MQTT 5 reason code (PUBACK or
 * DISCONNECT): "the broker refused the request (packet too large: its
 * limit is N bytes)". Malloc'ed; NULL when out of memory. */
char *ss_client__refusal_text(ss_client *c, const char *what, int reason);
/* Complete a pending call with status and a text of its own (taken
 * over; may be NULL). */
void ss_client__fail_pending_text(struct ss_pending *p, int status, char *text);
/* Run a pending call's callback with r, then free both. */
void ss_client__complete(struct ss_pending *p, ss_client_result *r);
/* Complete a pending call with status and no answer. */
void ss_client__fail_pending(struct ss_pending *p, int status);
/* Publish one request; on success the pending entry is queued. It waits
 * for its answer timeout_ms (0: the client's timeout). */
int ss_client__send(ss_client *c, enum ss_answer_kind kind, size_t argc, const ss_bytes *argv,
                    const char *fencing_token, unsigned timeout_ms, ss_result_cb cb, void *ud);
/* Send one request and wait for its answer (the client's timeout), as the
 * blocking calls do: r (may be NULL) is filled as theirs is. */
int ss_client__call(ss_client *c, enum ss_answer_kind kind, size_t argc, const ss_bytes *argv,
                    ss_client_result *r);
/* Remember (stop false) or forget a key that a reconnect registers again:
 * true when the set changed. */
bool ss_client__track(ss_client *c, const void *key, size_t key_len, bool stop);
/* True when status is an answer of the server (the request was refused),
 * not a local failure whose outcome is unknown. */
bool ss_client__refused(int status);
/* Around a call of the application's notify, connection, rewatch or
 * message callback (the first under c->mu): counted, so that setting one
 * waits for a call under way. */
void ss_client__app_call_begin(ss_client *c);
void ss_client__app_call_end(ss_client *c);
/* Borrowed slices of bytes and of a C string. */
ss_bytes ss_client__b(const void *p, size_t n);
ss_bytes ss_client__w(const char *s);

#pragma GCC visibility pop

#endif
