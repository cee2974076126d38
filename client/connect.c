/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* connect.c - making a client that owns its connection (client.h): the
 * blocking connect, once or with retries, and the non-blocking start of a
 * client driven by the application's event loop.
 *
 * Invariant: a failed attempt leaves nothing behind (the client and its
 * mosquitto handle are freed), so that retrying starts afresh.
 */
#include "client_internal.h"

#include <errno.h>
#include <mosquitto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../core/errors.h"

static int ss_client__mosq_err(int rc)
{
    return rc == MOSQ_ERR_NOMEM ? SS_E_NOMEM : rc == MOSQ_ERR_INVAL ? SS_E_INVAL : SS_E_CONNECTION;
}

/* Write a reason into why (if any) and return status. */
static int ss_client__explain(char *why, size_t n, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int ss_client__explain(char *why, size_t n, int status, const char *fmt, ...)
{
    if (why && n > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* Why mosquitto_connect or mosquitto_tls_set failed, in words. */
static int ss_client__explain_mosq(char *why, size_t n, int mrc, int err, const char *host)
{
    if (mrc == MOSQ_ERR_ERRNO)
        return ss_client__explain(why, n, SS_E_CONNECTION, "%s", strerror(err));
    if (mrc == MOSQ_ERR_EAI)
        return ss_client__explain(why, n, SS_E_CONNECTION, "unknown host %s", host);
    return ss_client__explain(why, n, ss_client__mosq_err(mrc), "%s", mosquitto_strerror(mrc));
}

/* The options with their defaults in *d; a generated client id goes into
 * idbuf, which must outlive *d. */
static int ss_client__defaults(const ss_client_options *o, ss_client_options *d, char idbuf[48],
                               char *why, size_t why_len)
{
    memset(d, 0, sizeof *d);
    if (o)
        *d = *o;
    if (d->client_id == NULL || d->client_id[0] == '\0') {
        uint8_t r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
            return ss_client__explain(why, why_len, SS_E_RANDOM, "no random bytes for a client id");
        int k = snprintf(idbuf, 48, "statestore-");
        for (int i = 0; i < 8; i++)
            k += snprintf(idbuf + k, 48 - (size_t)k, "%02x", r[i]);
        d->client_id = idbuf;
    }
    /* The id is a level of the response topic the client subscribes to:
     * a wildcard there makes the SUBSCRIBE invalid, and nothing would
     * answer it. */
    if (strpbrk(d->client_id, "+#"))
        return ss_client__explain(why, why_len, SS_E_INVAL,
                                  "a client id with '+' or '#' cannot name a response topic");
    /* An MQTT string: UTF-8 without control characters, 65535 bytes at
     * most (libmosquitto refuses others without saying why). */
    size_t id_len = strlen(d->client_id);
    if (id_len > 65535 || mosquitto_validate_utf8(d->client_id, (int)id_len) != MOSQ_ERR_SUCCESS)
        return ss_client__explain(why, why_len, SS_E_INVAL,
                                  "a client id must be UTF-8 without control characters, at most 65535 bytes");
    bool tls = d->cafile || d->capath || d->certfile || d->tls; /* a client certificate is TLS's */
    if (d->host == NULL)
        d->host = "localhost";
    if (d->port == 0)
        d->port = tls ? 8883 : 1883;
    if (d->keepalive == 0)
        d->keepalive = 60;
    return SS_OK;
}

static void ss_client__cb_log(struct mosquitto *m, void *ud, int level, const char *line)
{
    (void)m;
    ss_client *c = ud;
    c->log_cb(c->log_ud, level, line);
}


/* A copy of s into *out (NULL stays NULL); false when out of memory. */
static bool ss_client__keep(char **out, const char *s)
{
    *out = s ? strdup(s) : NULL;
    return s == NULL || *out != NULL;
}

void ss_client__conf_free(struct ss_client_conf *f)
{
    char **strings[] = {&f->host, &f->username, &f->password, &f->cafile,
                        &f->capath, &f->certfile, &f->keyfile, &f->tls_version};
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) {
        free(*strings[i]);
        *strings[i] = NULL;
    }
}

/* Keep the options a handle is made with (d: defaults applied). */
static int ss_client__conf_keep(struct ss_client_conf *f, const ss_client_options *d)
{
    bool ok = ss_client__keep(&f->host, d->host) && ss_client__keep(&f->username, d->username) &&
              ss_client__keep(&f->password, d->password) && ss_client__keep(&f->cafile, d->cafile) &&
              ss_client__keep(&f->capath, d->capath) && ss_client__keep(&f->certfile, d->certfile) &&
              ss_client__keep(&f->keyfile, d->keyfile) && ss_client__keep(&f->tls_version, d->tls_version);
    f->port = d->port;
    f->keepalive = d->keepalive;
    f->tls = d->cafile || d->capath || d->certfile || d->tls;
    f->insecure = d->insecure;
    if (!ok)
        ss_client__conf_free(f);
    return ok ? SS_OK : SS_E_NOMEM;
}

/* The TLS settings beyond the files: the system's authorities when no
 * cafile/capath is given, the host name check, the protocol version. */
static int ss_client__tls_extras(struct mosquitto *m, const struct ss_client_conf *f)
{
    int mrc = MOSQ_ERR_SUCCESS;
    if (!f->cafile && !f->capath)
        mrc = mosquitto_int_option(m, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
    if (mrc == MOSQ_ERR_SUCCESS && f->tls_version)
        mrc = mosquitto_tls_opts_set(m, 1, f->tls_version, NULL);
    if (mrc == MOSQ_ERR_SUCCESS && f->insecure)
        mrc = mosquitto_tls_insecure_set(m, true);
    return mrc;
}

/* A new mosquitto handle for c, made as c's configuration says: MQTT 5,
 * callbacks, credentials and TLS set, not connected yet. */
static int ss_client__handle(ss_client *c, struct mosquitto **out, char *why, size_t why_len)
{
    const struct ss_client_conf *f = &c->conf;
    struct mosquitto *m = mosquitto_new(c->id, true, c);
    if (m == NULL)
        return ss_client__explain(why, why_len, SS_E_NOMEM, "out of memory");
    mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_int_option(m, MOSQ_OPT_TCP_NODELAY, 1);
    ss_client__callbacks_set(c, m);
    if (c->log_cb)
        mosquitto_log_callback_set(m, ss_client__cb_log);
    int mrc = MOSQ_ERR_SUCCESS, rc = SS_OK;
    if (f->username && (mrc = mosquitto_username_pw_set(m, f->username, f->password)) != MOSQ_ERR_SUCCESS)
        rc = ss_client__explain_mosq(why, why_len, mrc, 0, f->host);
    if (rc == SS_OK && (f->certfile == NULL) != (f->keyfile == NULL))
        rc = ss_client__explain(why, why_len, SS_E_INVAL, "a client certificate needs its key, and a key its "
                                "certificate");
    /* libmosquitto takes a client certificate only beside a cafile or a
     * capath: without either, the system's directory of authorities
     * (OpenSSL's, SSL_CERT_DIR when set), which is what trusting the
     * system's authorities means (ss_client__tls_extras). */
    const char *capath = f->capath;
    if (capath == NULL && f->cafile == NULL && f->certfile) {
        const char *env = getenv("SSL_CERT_DIR");
        capath = env && env[0] ? env : "/etc/ssl/certs";
    }
    if (rc == SS_OK && (f->cafile || capath || f->certfile) &&
        (mrc = mosquitto_tls_set(m, f->cafile, capath, f->certfile, f->keyfile, NULL)) != MOSQ_ERR_SUCCESS)
        rc = ss_client__explain(why, why_len, SS_E_INVAL, "cannot use the TLS files (missing or unreadable): %s",
                                mosquitto_strerror(mrc));
    if (rc == SS_OK && f->tls && (mrc = ss_client__tls_extras(m, f)) != MOSQ_ERR_SUCCESS)
        rc = ss_client__explain(why, why_len, SS_E_INVAL, "cannot use the TLS options: %s", mosquitto_strerror(mrc));
    if (rc != SS_OK) {
        mosquitto_destroy(m);
        return rc;
    }
    *out = m;
    return SS_OK;
}

/* A client on a new mosquitto handle, not connected yet. */
static int ss_client__prepare(const ss_client_options *d, ss_client **out, char *why, size_t why_len)
{
    mosquitto_lib_init();
    ss_client *c;
    int rc = ss_client__new(NULL, true, d->client_id, d->timeout_ms, &c);
    if (rc != SS_OK)
        return ss_client__explain(why, why_len, rc, "%s", ss_strerror(rc));
    if (d->log_cb) {
        c->log_cb = d->log_cb;
        c->log_ud = d->log_ud;
    }
    if ((rc = ss_client__conf_keep(&c->conf, d)) != SS_OK) {
        ss_client_close(c);
        return ss_client__explain(why, why_len, rc, "%s", ss_strerror(rc));
    }
    if ((rc = ss_client__handle(c, &c->m, why, why_len)) != SS_OK) {
        ss_client_close(c);
        return rc;
    }
    *out = c;
    return SS_OK;
}

/* Connect again on a new handle, never on the old one: libmosquitto sends
 * a handle's unacknowledged PUBLISHes again after a reconnection, and a
 * request whose call failed (SS_E_CONNECTION, SS_E_TIMEOUT) would then run
 * after all, perhaps long after (docs/CLIENT.md). The old handle goes
 * once no thread is inside a publish on it. The TCP connection is only
 * begun here, and completes in the loop that runs the handle: a blocking
 * connect to a host that drops packets would hold the network thread,
 * and a close waiting for it, for the system's connect timeout (about
 * two minutes on Linux). threaded: other threads publish on the handle
 * (a network thread of the client's own). */
int ss_client__reconnect(ss_client *c, bool threaded)
{
    struct mosquitto *m;
    int rc = ss_client__handle(c, &m, NULL, 0);
    if (rc != SS_OK)
        return rc;
    const struct ss_client_conf *f = &c->conf;
    if (threaded)
        mosquitto_threaded_set(m, true);
    int mrc = mosquitto_connect_bind_async(m, f->host, f->port, f->keepalive, NULL);
    pthread_mutex_lock(&c->mu);
    bool swap = mrc == MOSQ_ERR_SUCCESS && !c->closing;
    struct mosquitto *old = swap ? c->m : m;
    if (swap)
        c->m = m;
    while (swap && c->publishing > 0)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    mosquitto_destroy(old);
    return swap ? SS_OK : SS_E_CONNECTION;
}

/* One blocking attempt; *final is set when trying again cannot help (the
 * broker refused us, or the options are wrong). */
static int ss_client__connect_once(const ss_client_options *d, ss_client **out, char *why, size_t why_len,
                                   bool *final)
{
    *final = true;
    ss_client *c;
    int rc = ss_client__prepare(d, &c, why, why_len);
    if (rc != SS_OK)
        return rc;
    /* Threaded before connecting: from now on packets are only queued by
     * the calling threads and written by the network thread. */
    mosquitto_threaded_set(c->m, true);
    errno = 0;
    int mrc = mosquitto_connect_bind_v5(c->m, d->host, d->port, d->keepalive, NULL, NULL);
    int err = errno;
    if (mrc == MOSQ_ERR_SUCCESS && ss_client__threads_start(c) != SS_OK)
        mrc = MOSQ_ERR_NOMEM;
    if (mrc != MOSQ_ERR_SUCCESS) {
        ss_client_close(c);
        *final = mrc != MOSQ_ERR_ERRNO && mrc != MOSQ_ERR_EAI;
        return ss_client__explain_mosq(why, why_len, mrc, err, d->host);
    }
    /* Wait for the subscription of the response topic. */
    uint64_t end = ss_client__now_ms() + c->timeout_ms;
    pthread_mutex_lock(&c->mu);
    while (!c->subscribed && c->connack_rc == 0 && !c->sub_refused && c->lost_rc == 0 &&
           ss_client__now_ms() < end) {
        struct timespec ts;
        ss_client__abstime(&ts, 20);
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    bool ok = c->subscribed;
    int connack = c->connack_rc;
    int lost = c->lost_rc;
    bool refused = c->sub_refused;
    pthread_mutex_unlock(&c->mu);
    if (!ok) {
        unsigned ms = c->timeout_ms;
        ss_client_close(c);
        if (connack != 0)
            return ss_client__explain(why, why_len, SS_E_CONNECTION, "the broker refused the connection: %s",
                                      mosquitto_reason_string(connack));
        /* Ended before the broker answered: a TLS handshake that failed
         * (a certificate not trusted, say) finishes on the network
         * thread, and said nothing but a timeout. Trying again with the
         * same files cannot help a TLS failure. */
        if (lost != 0) {
            *final = lost == MOSQ_ERR_TLS;
            return ss_client__explain(why, why_len, SS_E_CONNECTION, "the connection ended before the broker "
                                      "answered: %s", lost >= 0x80 ? mosquitto_reason_string(lost)
                                                                   : mosquitto_strerror(lost));
        }
        if (refused)
            return ss_client__explain(why, why_len, SS_E_CONNECTION,
                                      "the broker refused the subscription to the response topic");
        *final = false;
        return ss_client__explain(why, why_len, SS_E_CONNECTION, "no MQTT 5 answer from the broker within %u ms",
                                  ms);
    }
    *out = c;
    return SS_OK;
}

int ss_client_connect(const ss_client_options *o, ss_client **out)
{
    return ss_client_connect_explain(o, out, NULL, 0);
}

int ss_client_connect_explain(const ss_client_options *o, ss_client **out, char *why, size_t why_len)
{
    ss_client__explain(why, why_len, SS_OK, "%s", "");
    ss_client_options d;
    char idbuf[48];
    int rc = ss_client__defaults(o, &d, idbuf, why, why_len);
    bool final;
    return rc != SS_OK ? rc : ss_client__connect_once(&d, out, why, why_len, &final);
}

int ss_client_connect_retry(const ss_client_options *o, const ss_client_retry *retry, ss_client **out,
                            char *why, size_t why_len)
{
    ss_client__explain(why, why_len, SS_OK, "%s", "");
    ss_client_options d;
    char idbuf[48];
    /* One generated id for every attempt. */
    int rc = ss_client__defaults(o, &d, idbuf, why, why_len);
    if (rc != SS_OK)
        return rc;
    unsigned first = retry && retry->first_ms ? retry->first_ms : SS_CLIENT_BACKOFF_FIRST_MS;
    unsigned max = retry && retry->max_ms ? retry->max_ms : SS_CLIENT_BACKOFF_MAX_MS;
    if (max < first)
        max = first;
    uint64_t give_up = retry ? retry->give_up_ms : 0;
    uint64_t end = give_up ? ss_client__now_ms() + give_up : UINT64_MAX;
    unsigned delay = first;
    for (;;) {
        bool final;
        rc = ss_client__connect_once(&d, out, why, why_len, &final);
        if (rc == SS_OK) {
            ss_client_set_reconnect_backoff(*out, first, max);
            return SS_OK;
        }
        uint64_t now = ss_client__now_ms();
        if (final || now >= end)
            return rc;
        uint64_t nap = end - now < delay ? end - now : delay;
        struct timespec ts = {.tv_sec = (time_t)(nap / 1000), .tv_nsec = (long)(nap % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        delay = delay >= max / 2 ? max : delay * 2;
    }
}

int ss_client_connect_start(const ss_client_options *o, ss_client **out)
{
    ss_client_options d;
    char idbuf[48];
    int rc = ss_client__defaults(o, &d, idbuf, NULL, 0);
    ss_client *c;
    if (rc == SS_OK)
        rc = ss_client__prepare(&d, &c, NULL, 0);
    if (rc != SS_OK)
        return rc;
    /* No network thread: libmosquitto writes from the calling thread, and
     * queues what callbacks send until ss_client_process writes it. */
    c->evloop = true;
    int mrc = mosquitto_connect_bind_async(c->m, d.host, d.port, d.keepalive, NULL);
    if (mrc != MOSQ_ERR_SUCCESS && mrc != MOSQ_ERR_ERRNO && mrc != MOSQ_ERR_EAI) {
        ss_client_close(c);
        return ss_client__mosq_err(mrc);
    }
    /* Unreachable now: ss_client_process tries again after the backoff. */
    if (mrc != MOSQ_ERR_SUCCESS)
        ss_client__schedule_reconnect(c);
    *out = c;
    return SS_OK;
}
