/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* metrics.c - the store's figures under $SYS (metrics.h). */
#include "metrics.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outbox.h"
#include "plugin.h"

static const char *const ss_verb_names[SS_METRICS_VERBS] = {"unparsed", "set", "get", "del", "vdel",
                                                            "keynotify", "scan"};

void ss_metrics_request(struct ss_metrics *m, int command, int status, const uint8_t *answer,
                        size_t len)
{
    if (command < 0 || command >= SS_METRICS_VERBS)
        command = 0;
    int outcome;
    if (status == SS_OK)
        outcome = len == 5 && memcmp(answer, ":-1\r\n", 5) == 0 ? SS_OUTCOME_NOT_MET : SS_OUTCOME_OK;
    else if (status <= -1 && status >= -12)
        outcome = SS_OUTCOME_ERROR_FIRST + (-status - 1);
    else if (status == SS_E_UNAVAILABLE)
        outcome = SS_OUTCOME_UNAVAILABLE;
    else if (status <= SS_E_PATTERN_EMPTY && status >= SS_E_TOKEN_INVALID)
        outcome = SS_OUTCOME_SCAN_FIRST + (SS_E_PATTERN_EMPTY - status);
    else
        outcome = SS_OUTCOME_STORAGE;
    m->requests[command][outcome]++;
}

/* The outcome's topic name: ok, not_met, the error's name in lower case
 * (ts_future, quota, ...), storage, unavailable. */
static void ss_metrics__outcome_name(int outcome, char *out, size_t n)
{
    if (outcome == SS_OUTCOME_OK) {
        snprintf(out, n, "ok");
    } else if (outcome == SS_OUTCOME_NOT_MET) {
        snprintf(out, n, "not_met");
    } else if (outcome == SS_OUTCOME_STORAGE) {
        snprintf(out, n, "storage");
    } else if (outcome == SS_OUTCOME_UNAVAILABLE) {
        snprintf(out, n, "unavailable");
    } else if (outcome >= SS_OUTCOME_SCAN_FIRST) {
        snprintf(out, n, "%s", ss_errname(SS_E_PATTERN_EMPTY - (outcome - SS_OUTCOME_SCAN_FIRST)));
        for (char *c = out; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    } else {
        snprintf(out, n, "%s", ss_errname(-(outcome - SS_OUTCOME_ERROR_FIRST) - 1));
        for (char *c = out; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    }
}

static void ss_metrics__put(struct ss_plugin *p, const char *name, const char *value)
{
    char topic[160];
    snprintf(topic, sizeof topic, SS_METRICS_PREFIX "%s", name);
    /* Retained, as $SYS is: a subscriber gets the figures at once. */
    int rc = ss_publish(NULL, topic, value, strlen(value), 0, true, NULL);
    if (rc != MOSQ_ERR_SUCCESS)
        ss_log(p, MOSQ_LOG_WARNING, "could not publish %s: %s", topic, mosquitto_strerror(rc));
}

static void ss_metrics__u64(struct ss_plugin *p, const char *name, uint64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    ss_metrics__put(p, name, text);
}

/* One of the backend's figures (backend.h: figures), as it named it. */
static void ss_metrics__figure(void *ctx, const char *name, const char *value)
{
    ss_metrics__put(ctx, name, value);
}

void ss_metrics_publish(struct ss_plugin *p, uint64_t now_ms)
{
    struct ss_metrics *m = &p->metrics;
    m->last_publish_ms = now_ms;
    ss_metrics__put(p, "backend", p->backend->ops->name);
    /* When, on the broker's wall clock: a reader of the retained figures
     * can tell how old they are (statestore stats shows age_ms). */
    ss_metrics__u64(p, "published_ms", ss_wall_ms());
    ss_metrics__u64(p, "limits/max_key_length", p->opt.max_key_length);
    ss_metrics__u64(p, "limits/max_value_bytes", p->opt.max_value_bytes);
    uint64_t total = 0;
    for (int v = 0; v < SS_METRICS_VERBS; v++) {
        for (int o = 0; o < SS_OUTCOME_COUNT; o++) {
            uint64_t n = m->requests[v][o];
            total += n;
            /* A count that never moved is not published: most are errors
             * that never happen. Once published it goes on being. */
            if (n == 0)
                continue;
            char name[64], outcome[32];
            ss_metrics__outcome_name(o, outcome, sizeof outcome);
            snprintf(name, sizeof name, "requests/%s/%s", ss_verb_names[v], outcome);
            ss_metrics__u64(p, name, n);
        }
    }
    ss_metrics__u64(p, "requests/total", total);
    ss_metrics__u64(p, "resends", m->resends);
    ss_metrics__u64(p, "commits/failed", m->commits_failed);
    ss_metrics__u64(p, "notifications/sent", m->notifications_sent);
    ss_metrics__u64(p, "notifications/dropped", m->notifications_dropped);
    ss_metrics__u64(p, "registrations", ss_watch_count(p->watch));
    ss_metrics__u64(p, "pattern_watches", ss_pwatch_count(p->pwatch));
    uint64_t p50, p99;
    ss_latency_take(&m->commit, &p50, &p99);
    ss_metrics__u64(p, "commit/p50_us", p50);
    ss_metrics__u64(p, "commit/p99_us", p99);
    if (p->wswake.live)
        ss_metrics__u64(p, "websockets/wakes", atomic_load_explicit(&p->wswake.wakes, memory_order_relaxed));
    p->backend->ops->figures(p->backend->impl, now_ms, ss_metrics__figure, p);
}

void ss_metrics_tick(struct ss_plugin *p, uint64_t now_ms)
{
    uint64_t every = p->sys_interval_s * 1000;
    if (every && now_ms - p->metrics.last_publish_ms >= every)
        ss_metrics_publish(p, now_ms);
}
