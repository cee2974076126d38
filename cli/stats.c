/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* stats.c - ping (a request's round trip), stats (the store's figures
 * under $SYS/broker/statestore/) and status (the backend's state and the
 * broker's own figures, under $SYS/broker/). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "cli.h"

#define SS_SYS_PREFIX "$SYS/broker/"
#define SS_STATS_PREFIX SS_SYS_PREFIX "statestore/"
#define SS_STATS_MAX 512
/* The retained figures arrive right after the SUBACK; this much silence
 * after the last one means all are in. */
#define SS_STATS_QUIET_MS 300u
#define SS_PING_KEY "statestore-ping"

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int cmd_ping(struct cli *cl, ss_client *c)
{
    ss_client_result r;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int st = ss_client_get(c, SS_PING_KEY, strlen(SS_PING_KEY), &r);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
    /* Any answer of the store's own shows it is up, "not authorized"
     * included; a storage error or no answer does not. */
    bool up = st == SS_OK || st == SS_E_NOT_AUTHORIZED;
    if (!up) {
        report_failure(cl, "ping", st, &r);
        ss_client_result_free(&r);
        return exit_for(st);
    }
    ss_client_result_free(&r);
    if (cl->json)
        printf("{\"ok\":true,\"ms\":%.3f}\n", ms);
    else
        printf("answered in %.3f ms\n", ms);
    return SS_EXIT_OK;
}

/* The figures received, by name (their topic after prefix); the network
 * thread adds, main reads. */
struct stats {
    pthread_mutex_t mu;
    const char *prefix;
    char *name[SS_STATS_MAX];
    char *value[SS_STATS_MAX];
    int n;
    uint64_t updates;   /* messages received */
    uint64_t last_ms;   /* when the last one came */
    /* stats --watch: the network thread saw a reconnect. The broker
     * forgot the subscription (the session starts clean), and a blocking
     * call may not run on that thread: main subscribes again. */
    bool reconnected;
};

static void stats_set(struct stats *s, const char *name, const char *value)
{
    for (int i = 0; i < s->n; i++) {
        if (strcmp(s->name[i], name) == 0) {
            char *v = strdup(value);
            if (v) {
                free(s->value[i]);
                s->value[i] = v;
            }
            return;
        }
    }
    if (s->n == SS_STATS_MAX)
        return;
    s->name[s->n] = strdup(name);
    s->value[s->n] = strdup(value);
    if (s->name[s->n] && s->value[s->n])
        s->n++;
}

static void on_figure(void *ud, const char *topic, const void *payload, int len, bool retained)
{
    (void)retained;
    struct stats *s = ud;
    size_t plen = strlen(s->prefix);
    if (strncmp(topic, s->prefix, plen) != 0 || len < 0 || len > 200)
        return;
    char value[201];
    memcpy(value, payload, (size_t)len);
    value[len] = '\0';
    pthread_mutex_lock(&s->mu);
    stats_set(s, topic + plen, value);
    s->updates++;
    s->last_ms = mono_ms();
    pthread_mutex_unlock(&s->mu);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_number(const char *v)
{
    if (*v == '\0')
        return false;
    for (; *v; v++)
        if (*v < '0' || *v > '9')
            return false;
    return true;
}

/* Print n figures: "NAME VALUE" lines (the name padded to width), or one
 * JSON object whose values are numbers when they look like numbers. */
static void print_pairs(const struct cli *cl, const char *const *names, const char *const *values,
                        int n, int width)
{
    if (cl->json) {
        putchar('{');
        for (int i = 0; i < n; i++) {
            printf("%s", i ? "," : "");
            out_json_string((const uint8_t *)names[i], strlen(names[i]));
            putchar(':');
            if (is_number(values[i]))
                fputs(values[i], stdout);
            else
                out_json_string((const uint8_t *)values[i], strlen(values[i]));
        }
        puts("}");
    } else {
        for (int i = 0; i < n; i++)
            printf("%-*s %s\n", width, names[i], values[i]);
    }
    fflush(stdout);
}

/* How old figures published at the broker's wall clock `published` (ms
 * since the epoch, as text) are by this machine's clock, as text; false
 * when published is not a number. */
static bool age_of(const char *published, char *out, size_t n)
{
    uint64_t at;
    if (ss_parse_u64((const uint8_t *)published, strlen(published), UINT64_MAX, &at) != SS_OK)
        return false;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    snprintf(out, n, "%llu", (unsigned long long)(now > at ? now - at : 0));
    return true;
}

/* Print the figures, sorted by name (under s->mu), with their age: the
 * broker publishes them every sys_interval seconds, so they may be that
 * old. */
static void stats_print(const struct cli *cl, struct stats *s)
{
    const char *names[SS_STATS_MAX + 1] = {0}, *values[SS_STATS_MAX + 1] = {0};
    char age[32] = "";
    int n = s->n;
    for (int i = 0; i < s->n; i++) {
        names[i] = s->name[i];
        values[i] = s->value[i];
        if (strcmp(s->name[i], "published_ms") == 0 && !age_of(s->value[i], age, sizeof age))
            age[0] = '\0';
    }
    if (age[0]) {
        names[n] = "age_ms";
        values[n++] = age;
    }
    const char *sorted[SS_STATS_MAX + 1], *sorted_values[SS_STATS_MAX + 1];
    memcpy(sorted, names, (size_t)n * sizeof names[0]);
    qsort(sorted, (size_t)n, sizeof sorted[0], by_name);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (names[j] == sorted[i])
                sorted_values[i] = values[j];
    print_pairs(cl, sorted, sorted_values, n, 32);
}

/* Wait until figures came and then SS_STATS_QUIET_MS passed without more,
 * or until deadline_ms (monotonic). True if any came after `since`. */
static bool stats_settle(struct stats *s, uint64_t since, uint64_t deadline_ms)
{
    pthread_mutex_lock(&s->mu);
    for (;;) {
        uint64_t now = mono_ms();
        if (s->updates > since && now - s->last_ms >= SS_STATS_QUIET_MS)
            break;
        if (now >= deadline_ms)
            break;
        pthread_mutex_unlock(&s->mu);
        usleep(20000);
        pthread_mutex_lock(&s->mu);
    }
    bool got = s->updates > since;
    pthread_mutex_unlock(&s->mu);
    return got;
}

/* Connection events of stats --watch, said on standard error as watch
 * says them (commands.c). */
static void on_stats_connection(void *ud, bool connected, bool gap)
{
    (void)gap; /* the figures are retained: they come again, none missed */
    struct stats *s = ud;
    pthread_mutex_lock(&s->mu);
    s->reconnected = s->reconnected || connected;
    out_error(connected ? "reconnected" : "connection lost; reconnecting");
    pthread_mutex_unlock(&s->mu);
}

/* Subscribe to s->prefix#: 0, or the status of a failure, said when
 * `say` holds for it. */
static int stats_subscribe(struct cli *cl, ss_client *c, struct stats *s, bool say)
{
    char filter[64];
    snprintf(filter, sizeof filter, "%s#", s->prefix);
    int st = ss_client_subscribe(c, filter, 0);
    if (st != SS_OK && say)
        cli_fail(cl, st, "cannot subscribe to %s: %s", filter, ss_strerror(st));
    return st;
}

/* Subscribe to prefix# and wait for the retained figures to come (the
 * client's timeout). Returns the exit code; s is the caller's to free
 * (stats_free) and to stop (ss_client_set_message_cb NULL) either way. */
static int stats_collect(struct cli *cl, ss_client *c, struct stats *s, const char *prefix)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->prefix = prefix;
    ss_client_set_message_cb(c, on_figure, s);
    /* --watch: a reconnect noted from now on is subscribed again. */
    if (cl->watch)
        ss_client_set_connection_cb(c, on_stats_connection, s);
    int st = stats_subscribe(cl, c, s, true);
    if (st != SS_OK)
        return exit_for(st);
    if (!stats_settle(s, 0, mono_ms() + cl->conn.timeout_ms)) {
        cli_fail(cl, SS_E_TIMEOUT, "no figures under %s within %u ms: the broker publishes them "
                  "every sys_interval seconds (0 turns them off), and its ACLs must let this "
                  "client read $SYS", prefix, cl->conn.timeout_ms);
        return SS_EXIT_CONNECTION;
    }
    return SS_EXIT_OK;
}

static void stats_free(ss_client *c, struct stats *s)
{
    ss_client_set_connection_cb(c, NULL, NULL);
    ss_client_set_message_cb(c, NULL, NULL);
    for (int i = 0; i < s->n; i++) {
        free(s->name[i]);
        free(s->value[i]);
    }
    pthread_mutex_destroy(&s->mu);
}

int cmd_stats(struct cli *cl, ss_client *c)
{
    struct stats s;
    int rc = stats_collect(cl, c, &s, SS_STATS_PREFIX);
    if (rc == SS_EXIT_OK) {
        pthread_mutex_lock(&s.mu);
        stats_print(cl, &s);
        uint64_t seen = s.updates;
        pthread_mutex_unlock(&s.mu);
        /* --watch: again at each update, until interrupted (at the
         * interactive prompt SIGINT is blocked and waits to be taken). */
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        const struct timespec none = {0, 0};
        int sig = -1;
        while (cl->watch && !ferror(stdout) && (sig = sigtimedwait(&stop, NULL, &none)) < 0) {
            pthread_mutex_lock(&s.mu);
            bool again = s.reconnected;
            s.reconnected = false;
            pthread_mutex_unlock(&s.mu);
            int st = again ? stats_subscribe(cl, c, &s, false) : SS_OK;
            if (st == SS_E_CONNECTION || st == SS_E_TIMEOUT) {
                /* Lost again meanwhile: again at the next turn, quietly
                 * (the connection's events are said as they come). */
                pthread_mutex_lock(&s.mu);
                s.reconnected = true;
                pthread_mutex_unlock(&s.mu);
                usleep(200000);
                continue;
            }
            if (st != SS_OK) {
                /* Refused (the ACLs changed): a watch that no longer
                 * watches must not go on as if it did. */
                cli_fail(cl, st, "cannot subscribe to %s# again after the reconnect: %s", s.prefix,
                         ss_strerror(st));
                rc = exit_for(st);
                break;
            }
            if (!stats_settle(&s, seen, mono_ms() + 200))
                continue;
            pthread_mutex_lock(&s.mu);
            if (!cl->json)
                putchar('\n');
            stats_print(cl, &s);
            seen = s.updates;
            pthread_mutex_unlock(&s.mu);
        }
        if (sig == SIGTERM) /* the program ends too, as for a watch (commands.c) */
            raise(SIGTERM);
    }
    stats_free(c, &s);
    return rc;
}

/* ---- status ------------------------------------------------------------ */

/* What status shows, in this order, when the broker published it: the
 * name printed, and the topic under $SYS/broker/. */
static const struct {
    const char *name;
    const char *topic;
} status_figures[] = {
    {"backend", "statestore/backend"},
    {"etcd_endpoint", "statestore/etcd/endpoint"},
    {"etcd_reachable", "statestore/etcd/reachable"},
    {"etcd_nospace", "statestore/etcd/nospace"},
    {"etcd_leader", "statestore/etcd/leader"},
    {"keys", "statestore/keys"},
    {"bytes", "statestore/bytes"},
    {"requests", "statestore/requests/total"},
    {"broker", "version"},
    {"uptime", "uptime"},
    {"clients_connected", "clients/connected"},
    {"clients_total", "clients/total"},
    {"messages_received", "messages/received"},
    {"messages_sent", "messages/sent"},
    {"heap_bytes", "heap/current"},
};
#define SS_STATUS_N (sizeof status_figures / sizeof status_figures[0])

static const char *figure(const struct stats *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->name[i], name) == 0)
            return s->value[i];
    return NULL;
}

/* Endpoints status shows one line each at most. */
#define SS_STATUS_ENDPOINTS 16

/* Endpoint n (from 1) as one line, from its figures under
 * etcd/endpoints/n/: "URL healthy, leader, id ..., version ..., db_size
 * ..., raft_term ..., raft_index ...", "URL unhealthy: why", or "URL not
 * asked yet" just after a start (not counted as unhealthy). False
 * when the broker published none for n. */
static bool endpoint_line(const struct stats *s, int n, char *out, size_t len)
{
    static const char *const leaf[] = {"url", "healthy", "leader", "id", "version", "db_size",
                                       "raft_term", "raft_index", "error"};
    const char *v[sizeof leaf / sizeof leaf[0]];
    for (size_t k = 0; k < sizeof leaf / sizeof leaf[0]; k++) {
        char topic[96];
        snprintf(topic, sizeof topic, "statestore/etcd/endpoints/%d/%s", n, leaf[k]);
        if ((v[k] = figure(s, topic)) == NULL)
            return false;
    }
    if (strcmp(v[1], "1") != 0 && strcmp(v[8], "not asked yet") == 0)
        snprintf(out, len, "%s not asked yet", v[0]);
    else if (strcmp(v[1], "1") != 0)
        snprintf(out, len, "%s unhealthy: %s", v[0], strcmp(v[8], "none") != 0 ? v[8] : "no answer");
    else
        snprintf(out, len, "%s healthy%s, id %s, version %s, db_size %s, raft_term %s, raft_index %s", v[0],
                 strcmp(v[2], "1") == 0 ? ", leader" : "", v[3], v[4], v[5], v[6], v[7]);
    return true;
}

int cmd_status(struct cli *cl, ss_client *c)
{
    struct stats s;
    uint64_t deadline = mono_ms() + cl->conn.timeout_ms;
    int rc = stats_collect(cl, c, &s, SS_SYS_PREFIX);
    if (rc != SS_EXIT_OK) {
        stats_free(c, &s);
        return rc;
    }
    /* The broker's figures may come before the plugin has published its
     * own (just after a start): wait for those too, within the timeout. */
    pthread_mutex_lock(&s.mu);
    while (figure(&s, "statestore/backend") == NULL && mono_ms() < deadline) {
        uint64_t seen = s.updates;
        pthread_mutex_unlock(&s.mu);
        stats_settle(&s, seen, deadline);
        pthread_mutex_lock(&s.mu);
    }
    const char *names[SS_STATUS_N + SS_STATUS_ENDPOINTS + 3], *values[SS_STATUS_N + SS_STATUS_ENDPOINTS + 3];
    int n = 0;
    const char *backend = figure(&s, "statestore/backend");
    const char *reachable = figure(&s, "statestore/etcd/reachable");
    const char *nospace = figure(&s, "statestore/etcd/nospace");
    const char *unhealthy = figure(&s, "statestore/etcd/endpoints_unhealthy");
    const char *count = figure(&s, "statestore/etcd/endpoint_count");
    const char *published = figure(&s, "statestore/published_ms");
    /* Healthy: the plugin publishes, and its backend can store. Degraded
     * (exit 0): it can, but some etcd endpoint does not answer as it
     * should. */
    char degraded[96];
    snprintf(degraded, sizeof degraded, "degraded (%s of %s etcd endpoints unhealthy)", unhealthy ? unhealthy : "",
             count ? count : "");
    const char *health = backend == NULL                              ? "no statestore figures"
                         : reachable && strcmp(reachable, "1") != 0   ? "etcd unreachable"
                         : nospace && strcmp(nospace, "0") != 0       ? "etcd out of space"
                         : unhealthy && count && strcmp(unhealthy, "0") != 0 ? degraded
                                                                      : "ok";
    names[n] = "health";
    values[n++] = health;
    char lines[SS_STATUS_ENDPOINTS][512], line_names[SS_STATUS_ENDPOINTS][32];
    for (size_t i = 0; i < SS_STATUS_N; i++) {
        const char *v = figure(&s, status_figures[i].topic);
        if (v) {
            names[n] = status_figures[i].name;
            values[n++] = v;
        }
        /* Each endpoint after the leader. */
        for (int e = 0; strcmp(status_figures[i].name, "etcd_leader") == 0 && e < SS_STATUS_ENDPOINTS &&
                        endpoint_line(&s, e + 1, lines[e], sizeof lines[e]);
             e++) {
            snprintf(line_names[e], sizeof line_names[e], "etcd_endpoint_%d", e + 1);
            names[n] = line_names[e];
            values[n++] = lines[e];
        }
    }
    char age[32];
    if (published && age_of(published, age, sizeof age)) {
        names[n] = "age_ms";
        values[n++] = age;
    }
    print_pairs(cl, names, values, n, 18);
    pthread_mutex_unlock(&s.mu);
    if (backend == NULL) {
        out_error("status: the broker publishes no figures under " SS_STATS_PREFIX
                  ": is the statestore plugin loaded?");
        rc = SS_EXIT_CONNECTION;
    } else if (strcmp(health, "ok") != 0 && health != degraded) {
        rc = SS_EXIT_PROTOCOL;
    }
    stats_free(c, &s);
    return rc;
}
