/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* stats.c - ping (a request's round trip) and stats (the store's figures
 * under $SYS/broker/statestore/). */
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

#define SS_STATS_PREFIX "$SYS/broker/statestore/"
#define SS_STATS_MAX 256
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
    bool up = st == SS_OK || (st == SS_E_SERVER && r.status == SS_E_NOT_AUTHORIZED);
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

/* The figures received, by name; the network thread adds, main reads. */
struct stats {
    pthread_mutex_t mu;
    char *name[SS_STATS_MAX];
    char *value[SS_STATS_MAX];
    int n;
    uint64_t updates;   /* messages received */
    uint64_t last_ms;   /* when the last one came */
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
    size_t plen = strlen(SS_STATS_PREFIX);
    if (strncmp(topic, SS_STATS_PREFIX, plen) != 0 || len < 0 || len > 200)
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

/* Print the figures, sorted by name (under s->mu), with their age: the
 * broker publishes them every sys_interval seconds, so they may be that
 * old. age_ms is this machine's clock minus the broker's published_ms. */
static void stats_print(const struct cli *cl, struct stats *s)
{
    int order[SS_STATS_MAX + 1];
    const char *names[SS_STATS_MAX + 1] = {0}, *values[SS_STATS_MAX + 1] = {0};
    char age[32] = "";
    int n = s->n;
    for (int i = 0; i < s->n; i++) {
        names[i] = s->name[i];
        values[i] = s->value[i];
        uint64_t at;
        if (strcmp(s->name[i], "published_ms") == 0 &&
            ss_parse_u64((const uint8_t *)s->value[i], strlen(s->value[i]), UINT64_MAX, &at) == SS_OK) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            uint64_t now = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
            snprintf(age, sizeof age, "%llu", (unsigned long long)(now > at ? now - at : 0));
        }
    }
    if (age[0]) {
        names[n] = "age_ms";
        values[n++] = age;
    }
    const char *sorted[SS_STATS_MAX + 1];
    memcpy(sorted, names, (size_t)n * sizeof names[0]);
    qsort(sorted, (size_t)n, sizeof sorted[0], by_name);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (names[j] == sorted[i])
                order[i] = j;
    if (cl->json) {
        putchar('{');
        for (int i = 0; i < n; i++) {
            const char *v = values[order[i]];
            printf("%s", i ? "," : "");
            out_json_string((const uint8_t *)sorted[i], strlen(sorted[i]));
            putchar(':');
            if (is_number(v))
                fputs(v, stdout);
            else
                out_json_string((const uint8_t *)v, strlen(v));
        }
        puts("}");
    } else {
        for (int i = 0; i < n; i++)
            printf("%-32s %s\n", sorted[i], values[order[i]]);
    }
    fflush(stdout);
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

int cmd_stats(struct cli *cl, ss_client *c)
{
    struct stats s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    ss_client_set_message_cb(c, on_figure, &s);
    int rc = SS_EXIT_OK;
    int st = ss_client_subscribe(c, SS_STATS_PREFIX "#", 0);
    if (st != SS_OK) {
        out_error("cannot subscribe to " SS_STATS_PREFIX "#: %s", ss_strerror(st));
        rc = exit_for(st);
    } else if (!stats_settle(&s, 0, mono_ms() + cl->conn.timeout_ms)) {
        out_error("no figures under " SS_STATS_PREFIX " within %u ms: the broker publishes them "
                  "every sys_interval seconds (0 turns them off), and its ACLs must let this "
                  "client read $SYS", cl->conn.timeout_ms);
        rc = SS_EXIT_CONNECTION;
    } else {
        pthread_mutex_lock(&s.mu);
        stats_print(cl, &s);
        uint64_t seen = s.updates;
        pthread_mutex_unlock(&s.mu);
        /* --watch: again at each update, until interrupted. */
        while (cl->watch) {
            if (!stats_settle(&s, seen, UINT64_MAX))
                continue;
            pthread_mutex_lock(&s.mu);
            if (!cl->json)
                putchar('\n');
            stats_print(cl, &s);
            seen = s.updates;
            pthread_mutex_unlock(&s.mu);
        }
    }
    ss_client_set_message_cb(c, NULL, NULL);
    for (int i = 0; i < s.n; i++) {
        free(s.name[i]);
        free(s.value[i]);
    }
    pthread_mutex_destroy(&s.mu);
    return rc;
}
