/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* client.h - a C client for the state store, on libmosquitto (MQTT 5).
 *
 * It speaks the protocol exactly like the official SDKs: a client HLC sent
 * as __ts on every request and merged with every __ts received, __srcId,
 * __protVer 1.0, 16 random bytes of correlation data, a message expiry
 * from the timeout, content type application/octet-stream, and the response
 * topic clients/<clientId>/services/statestore/_any_/command/invoke/response,
 * subscribed before the first request.
 *
 * Threads. ss_client_connect starts the client's network thread (it runs
 * libmosquitto's loop, completes the calls whose time ran out, and
 * reconnects); every callback (completions, timeouts included,
 * notifications, messages, connection events) runs on it, one at a time,
 * except that the calls still pending when ss_client_close is called
 * complete inside ss_client_close. An attached client (ss_client_attach)
 * runs its callbacks on the thread that calls ss_client_handle_message,
 * _connect or _disconnect, and the completions of calls that timed out on
 * a timer thread of its own. Callbacks must not block on this client: a
 * blocking call made there (or from an attached client's thread that
 * calls ss_client_handle_message) returns SS_E_IN_CALLBACK at once, since
 * its answer would have to come through the very thread it stops. All
 * functions may be called from any thread. The blocking calls wait for
 * their answer on a condition variable. A client made by
 * ss_client_connect_start has no thread of its own and is used by one
 * thread, whose event loop drives it (see the event-loop section below).
 *
 * Errors are the status codes of core/errors.h: 0, a protocol error answered
 * by the server (SS_E_SYNTAX, SS_E_FT_LOWER, ...; unknown texts give
 * SS_E_SERVER and the text is kept in the result), or a local failure
 * (SS_E_TIMEOUT, SS_E_CONNECTION, SS_E_PROTOCOL, SS_E_STATUS,
 * SS_E_IN_CALLBACK, SS_E_FT_MALFORMED, SS_E_RANDOM, SS_E_NOMEM,
 * SS_E_INVAL), or SS_E_REFUSED: the broker refused the request, or it
 * was larger than the broker or MQTT takes, so it was not run.
 * ss_strerror gives the message.
 *
 * Ownership: byte arguments are borrowed for the call (copied when needed).
 * Results passed to callbacks are valid during the callback only; results
 * of blocking calls are owned by the caller and freed with
 * ss_client_result_free.
 */
#ifndef SS_CLIENT_H
#define SS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mosquitto;

typedef struct ss_client ss_client;

/* A line of libmosquitto's log (the packets sent and received, as
 * mosquitto_pub -d prints them): level is one of libmosquitto's
 * MOSQ_LOG_* values; line is valid during the call only. It runs on
 * whichever thread logged: the network thread, or one that made a call. */
typedef void (*ss_log_cb)(void *ud, int level, const char *line);

typedef struct ss_client_options {
    const char *host;      /* default "localhost" */
    int port;              /* default 1883 (8883 with TLS) */
    const char *client_id; /* default: "statestore-" + random hex; no + or # (SS_E_INVAL) */
    const char *username;  /* optional */
    const char *password;  /* optional */
    const char *cafile;    /* TLS: any of cafile/capath/certfile turns TLS on */
    const char *capath;
    const char *certfile; /* TLS client certificate and key, both or neither
                             (SS_E_INVAL); without cafile/capath, checked
                             against the system's authorities */
    const char *keyfile;
    int keepalive;       /* seconds, default 60 */
    unsigned timeout_ms; /* default for blocking calls, default 10000 */
    /* Fields added later: a zeroed struct keeps the earlier behaviour. */
    bool tls;                /* TLS even without cafile/capath, trusting the
                                system's certificate authorities (mqtts://) */
    bool insecure;           /* TLS: do not check that the server's certificate
                                names host (testing only) */
    const char *tls_version; /* "tlsv1.3", "tlsv1.2" or "tlsv1.1"; NULL: libmosquitto's default */
    ss_log_cb log_cb;        /* NULL: no log */
    void *log_ud;
} ss_client_options;

/* What an answer said. value is NULL-terminated for convenience (the
 * terminator is not counted in value_len); version is "" when the answer
 * carried none; error_text is set when the server answered an error. */
typedef struct ss_client_result {
    int status;         /* 0 or the error, as returned by the call */
    bool applied;       /* SET: +OK; DEL/VDEL: a key was deleted */
    bool found;         /* GET: the key exists */
    int64_t count;      /* DEL/VDEL: 1, 0 or -1 (VDEL value differs) */
    uint8_t *value;     /* GET: the value (owned) */
    size_t value_len;
    char version[300];  /* the __ts of the answer */
    char *error_text;   /* owned; the server's text after "-ERR " */
} ss_client_result;

void ss_client_result_free(ss_client_result *r);

enum ss_set_condition { SS_SET_ALWAYS = 0, SS_SET_NX, SS_SET_NEX };

typedef struct ss_set_options {
    enum ss_set_condition condition;
    uint64_t px_ms;            /* 0: no expiry */
    const char *fencing_token; /* NULL: none */
} ss_set_options;

/* A notification: key and value borrowed for the callback. */
typedef struct ss_notification {
    const uint8_t *key;
    size_t key_len;
    bool deleted;         /* DELETE (or expiry); else SET with value */
    const uint8_t *value; /* SET */
    size_t value_len;
    const char *version;  /* the __ts */
} ss_notification;

typedef void (*ss_notify_cb)(void *ud, const ss_notification *n);
/* Connection events: connected (true) or lost (false). After a reconnect
 * the client re-subscribes and re-registers every KEYNOTIFY before
 * reporting connected = true with gap = true: notifications may have been
 * missed while it was away. */
typedef void (*ss_connection_cb)(void *ud, bool connected, bool gap);
/* A KEYNOTIFY that the client registered again after a reconnect failed;
 * r->status (and r->error_text) say why, key is borrowed for the call.
 * An answer of the server (a limit reached meanwhile, rules changed) is
 * final: the key is no longer watched, nor registered at the next
 * reconnect. SS_E_CONNECTION or SS_E_TIMEOUT leave it watched and
 * registered again at the next reconnect, but notifications may be
 * missing until then. Runs where answers are delivered. */
typedef void (*ss_rewatch_cb)(void *ud, const void *key, size_t key_len, const ss_client_result *r);
/* Completion of an asynchronous call; r is valid during the call only. A
 * call that fails to start returns its error and never calls back. */
typedef void (*ss_result_cb)(void *ud, const ss_client_result *r);

/* Connect and wait until the response topic is subscribed (up to
 * timeout_ms). 0 and *out, or SS_E_CONNECTION / SS_E_INVAL / SS_E_NOMEM. */
int ss_client_connect(const ss_client_options *o, ss_client **out);
/* The same, and on failure a sentence saying why ("Connection refused",
 * "unknown host x", "the broker refused the connection: Not authorized",
 * "no MQTT 5 answer from the broker within 10000 ms") written into why
 * (NUL-terminated, cut to why_len). why may be NULL. */
int ss_client_connect_explain(const ss_client_options *o, ss_client **out, char *why,
                              size_t why_len);

/* Use an application's own MQTT 5 mosquitto handle. The application runs
 * the network loop (mosquitto_loop_start, or its own loop in another thread
 * than the blocking calls), forwards every message with
 * ss_client_handle_message, calls ss_client_handle_connect once
 * connected (after attaching) and after every reconnect, and
 * ss_client_handle_disconnect when the connection is lost. Requests may be
 * made once ss_client_handle_connect has returned. The library knows the
 * thread that delivers messages from the first ss_client_handle_message:
 * before that (in the application's own connect callback, say) a blocking
 * call on that thread is not refused with SS_E_IN_CALLBACK but waits out
 * its timeout, as nothing delivers its answer; make asynchronous calls
 * there. */
int ss_client_attach(struct mosquitto *mosq, const char *client_id, unsigned timeout_ms,
                     ss_client **out);
/* For attached clients: returns true when the message was this client's
 * (an answer or a notification) and has been handled. */
bool ss_client_handle_message(ss_client *c, const char *topic, const void *payload, int len,
                              const void *props);
void ss_client_handle_connect(ss_client *c);
/* For attached clients: the connection is gone (call it from the
 * application's disconnect callback). Calls in flight fail at once with
 * SS_E_CONNECTION, and the connection callback reports the loss. */
void ss_client_handle_disconnect(ss_client *c);

/* Stop (the network thread, if ours), disconnect (if ours), fail pending
 * calls with SS_E_CONNECTION, free everything. NULL is a no-op. A thread
 * blocked in a call on c returns SS_E_CONNECTION, and close waits for it
 * to have left; no call may start once close has begun. Not from a
 * callback of c (close waits for the callbacks' thread): from another
 * thread. */
void ss_client_close(ss_client *c);

/* Reconnection (clients of ss_client_connect): when the connection is
 * lost, the network thread tries again after first_ms, and after each
 * failed attempt waits twice as long as before, up to max_ms; a
 * connection that the broker accepts starts the series again. Defaults
 * (also for 0): 1000 and 10000 ms. Takes effect from the next delay. */
void ss_client_set_reconnect_backoff(ss_client *c, unsigned first_ms, unsigned max_ms);

/* Setting a callback (or NULL) waits for a call of the old one under way
 * on another thread to end, so that what it uses may be freed once the
 * setter returns. */
void ss_client_set_notify_cb(ss_client *c, ss_notify_cb cb, void *ud);
void ss_client_set_connection_cb(ss_client *c, ss_connection_cb cb, void *ud);
void ss_client_set_rewatch_cb(ss_client *c, ss_rewatch_cb cb, void *ud);

/* An administrative request of statestore's own (not the protocol's:
 * docs/OPERATIONS.md): argc words, argv[i] of lens[i] bytes, such as
 * KEYS PATTERN CURSOR COUNT or INSPECT KEY. Blocking. On success
 * r->value holds the answer's text (NUL-terminated, r->value_len bytes);
 * an "error TEXT" answer is SS_E_SERVER with r->error_text. */
int ss_client_admin(ss_client *c, size_t argc, const void *const *argv, const size_t *lens,
                    ss_client_result *r);

/* Messages on the application's own subscriptions (anything that is not
 * this client's answer or notification), for clients that run their own
 * network thread (ss_client_connect): cb runs on that thread; topic and
 * payload are valid during the call only. Setting another callback (or
 * NULL) waits for a call of the old one under way to end. */
typedef void (*ss_message_cb)(void *ud, const char *topic, const void *payload, int len,
                              bool retained);
void ss_client_set_message_cb(ss_client *c, ss_message_cb cb, void *ud);
/* Subscribe to a topic filter of the application's own (QoS 0 or 1), for
 * example $SYS/broker/statestore/# for the store's figures; its messages
 * go to the message callback. Waits for the broker's answer (the
 * client's timeout): 0, SS_E_STATUS (refused), SS_E_TIMEOUT,
 * SS_E_CONNECTION, SS_E_INVAL. Not kept across reconnects. */
int ss_client_subscribe(ss_client *c, const char *filter, int qos);
const char *ss_client_id(const ss_client *c);

/* Notifications received so far, and a wait until more than `seen` have
 * arrived or timeout_ms passed; returns the count then. Used to wait for a
 * key's DELETE instead of polling. On the thread that runs the client's
 * callbacks (where no notification could arrive meanwhile) it returns the
 * count at once. */
uint64_t ss_client_notification_count(ss_client *c);
uint64_t ss_client_wait_notification(ss_client *c, uint64_t seen, unsigned timeout_ms);

/* Blocking calls: wait up to the client's timeout. On success r->status
 * is 0; r is filled in every case that reached the server. */
int ss_client_set(ss_client *c, const void *key, size_t key_len, const void *value,
                  size_t value_len, const ss_set_options *opts, ss_client_result *r);
int ss_client_get(ss_client *c, const void *key, size_t key_len, ss_client_result *r);
int ss_client_del(ss_client *c, const void *key, size_t key_len, const char *fencing_token,
                  ss_client_result *r);
int ss_client_vdel(ss_client *c, const void *key, size_t key_len, const void *value,
                   size_t value_len, const char *fencing_token, ss_client_result *r);
/* Register (stop false) or end notifications for key. */
int ss_client_keynotify(ss_client *c, const void *key, size_t key_len, bool stop,
                        ss_client_result *r);

/* Listing keys with SCAN (PROTOCOL.md section 9), a page at a time, as the
 * SDKs' list_keys and its pager do. ss_client_list_keys makes a pager and
 * sends nothing; each ss_client_pager_next sends one SCAN (the pattern,
 * and from the second page on the token of the page before) and waits up
 * to the client's timeout for its answer. The token is kept inside the
 * pager and never shown. The pager borrows c, which must outlive it; one
 * pager is used by one thread at a time. */
typedef struct ss_client_pager ss_client_pager;

/* One page of keys, owned by the caller until ss_client_page_free. keys[i]
 * holds lens[i] bytes (NUL-terminated for convenience, the NUL not
 * counted). A page may hold no key and still not be the last. */
typedef struct ss_client_page {
    size_t count;
    uint8_t **keys;
    size_t *lens;
    bool end;         /* the listing had ended before this call: nothing was
                         sent and the page is empty (the SDKs' None) */
    char *error_text; /* owned; the server's text when it answered an error */
} ss_client_page;

/* A pager over the keys matching pattern (the glob crate's dialect, over
 * whole keys; copied). 0 and *out; SS_E_INVAL for an empty pattern (as
 * the SDKs refuse it, before anything is sent); SS_E_NOMEM. */
int ss_client_list_keys(ss_client *c, const void *pattern, size_t pattern_len,
                        ss_client_pager **out);
/* Request the next page into *page (cleared first). 0: a page (page->end
 * false), or, once the last page was returned, page->end true without a
 * request. An error (the server's, such as SS_E_TOKEN_INVALID or
 * SS_E_PATTERN_BRACKET, with page->error_text; SS_E_TIMEOUT,
 * SS_E_CONNECTION, SS_E_PROTOCOL, SS_E_STATUS, SS_E_NOMEM) leaves the
 * pager as it was, so the same call may be tried again. */
int ss_client_pager_next(ss_client_pager *p, ss_client_page *page);
/* True once the last page has been returned. */
bool ss_client_pager_done(const ss_client_pager *p);
void ss_client_page_free(ss_client_page *page);
/* Free the pager (NULL is a no-op); nothing is sent. */
void ss_client_pager_free(ss_client_pager *p);

/* Asynchronous forms: the callback runs once, on the network thread (see
 * Threads above). */
int ss_client_set_async(ss_client *c, const void *key, size_t key_len, const void *value,
                        size_t value_len, const ss_set_options *opts, ss_result_cb cb, void *ud);
int ss_client_get_async(ss_client *c, const void *key, size_t key_len, ss_result_cb cb, void *ud);
int ss_client_del_async(ss_client *c, const void *key, size_t key_len, const char *fencing_token,
                        ss_result_cb cb, void *ud);
int ss_client_vdel_async(ss_client *c, const void *key, size_t key_len, const void *value,
                         size_t value_len, const char *fencing_token, ss_result_cb cb, void *ud);
int ss_client_keynotify_async(ss_client *c, const void *key, size_t key_len, bool stop,
                              ss_result_cb cb, void *ud);

/* ---- Per-call options ------------------------------------------------
 *
 * One request described in full, for a call that needs more than the
 * functions above say: its own timeout (0: the client's). The functions
 * above are these two with timeout_ms 0. Pointers are borrowed for the
 * call only. */
enum ss_client_op {
    SS_REQ_SET = 0,
    SS_REQ_GET,
    SS_REQ_DEL,
    SS_REQ_VDEL,
    SS_REQ_KEYNOTIFY,      /* register notifications for key */
    SS_REQ_KEYNOTIFY_STOP, /* end them */
};

typedef struct ss_client_request {
    enum ss_client_op op;
    const void *key;
    size_t key_len;
    const void *value; /* SET, VDEL */
    size_t value_len;
    enum ss_set_condition condition; /* SET */
    uint64_t px_ms;                  /* SET: 0, no expiry */
    const char *fencing_token;       /* SET, DEL, VDEL: NULL, none */
    unsigned timeout_ms;             /* 0: the client's timeout_ms */
} ss_client_request;

/* Blocking: as ss_client_set and the others (r may be NULL). SS_E_INVAL
 * for an op out of the list. */
int ss_client_call(ss_client *c, const ss_client_request *req, ss_client_result *r);
/* Asynchronous: as ss_client_set_async and the others. */
int ss_client_call_async(ss_client *c, const ss_client_request *req, ss_result_cb cb, void *ud);

/* ---- Retrying the first connection ----------------------------------
 *
 * ss_client_connect tries once. ss_client_connect_retry tries again while
 * the broker cannot be reached (refused, unreachable, unknown host, no
 * answer), after first_ms, then twice as long after each failure up to
 * max_ms (defaults, also for 0: 1000 and 10000 ms, the reconnection's),
 * until give_up_ms have passed since the first attempt (0: never). A
 * broker that answers with a refusal (not authorized, bad credentials)
 * or a failure of the options themselves (TLS files, no memory) ends it
 * at once. The client made keeps first_ms and max_ms as its reconnection
 * backoff. why as for ss_client_connect_explain (the last attempt's). */
typedef struct ss_client_retry {
    unsigned first_ms;
    unsigned max_ms;
    unsigned give_up_ms;
} ss_client_retry;
int ss_client_connect_retry(const ss_client_options *o, const ss_client_retry *retry,
                            ss_client **out, char *why, size_t why_len);

/* ---- Driving the client from the application's event loop ------------
 *
 * As curl multi, libmosquitto's mosquitto_socket / loop_read / loop_write /
 * loop_misc or hiredis's async context. A client made by
 * ss_client_connect_start has no thread of its own: the application polls
 * its socket and calls ss_client_process, and every callback (answers,
 * timeouts, notifications, messages, connection events) runs inside
 * ss_client_process, on the application's thread. Such a client is used
 * by one thread at a time (the loop's); it has no blocking calls: they,
 * ss_client_subscribe, the SCAN pager and the lease and leader functions
 * return SS_E_IN_CALLBACK (and ss_client_wait_notification returns at
 * once: count notifications in the notification callback).
 *
 *     ss_client_connect_start(&opts, &c);
 *     for (;;) {
 *         struct pollfd p = {ss_client_socket(c), POLLIN, 0};
 *         if (ss_client_want_write(c)) p.events |= POLLOUT;
 *         int n = poll(&p, p.fd >= 0, ss_client_timeout_ms(c));
 *         ss_client_process(c, n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)),
 *                           n > 0 && (p.revents & POLLOUT));
 *     }
 *
 * The socket changes after each reconnection: ask for it before each poll.
 * client_ev.h does all this for a libev loop. */

/* Start connecting without waiting: the name is resolved (which may
 * block) and a non-blocking TCP connection begun. 0 and *out once the
 * client exists, even when the broker cannot be reached yet: the client
 * keeps trying with the reconnection backoff (ss_client_set_reconnect_
 * backoff applies at once), and the connection callback reports
 * connected = true, gap = false when requests may be sent. Calls made
 * before then fail with SS_E_CONNECTION. SS_E_INVAL, SS_E_NOMEM,
 * SS_E_RANDOM otherwise (nothing to free). */
int ss_client_connect_start(const ss_client_options *o, ss_client **out);
/* The socket to poll for reading (always) and for writing (when
 * ss_client_want_write); -1 while there is none (between a loss and the
 * next attempt): then wait for the timeout only. */
int ss_client_socket(ss_client *c);
bool ss_client_want_write(ss_client *c);
/* The longest the application may wait before calling ss_client_process
 * although the socket said nothing: the next call's deadline, the next
 * reconnection attempt or the keepalive, whichever is first; at most
 * 1000 ms, 0 when something is due now. */
int ss_client_timeout_ms(ss_client *c);
/* Read (readable), write (writable, or data waiting), keep the connection
 * alive, complete the calls whose time ran out, reconnect when it is
 * time; callbacks run inside. 0, or SS_E_INVAL for a client that runs its
 * own thread. A lost connection is not an error here: it is reported
 * through the connection callback and repaired by later calls. */
int ss_client_process(ss_client *c, bool readable, bool writable);
/* True once the client may send requests (connected, response topic
 * subscribed). */
bool ss_client_is_ready(ss_client *c);

#ifdef __cplusplus
}
#endif

#endif
