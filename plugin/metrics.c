/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* metrics.c - the store's figures under $SYS (metrics.h). */
#include "metrics.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../etcd/backend_etcd.h"
#include "batch.h"
#include "plugin.h"

static const char *const ss_verb_names[SS_METRICS_VERBS] = {"unparsed", "set", "get", "del", "vdel",
                                                            "keynotify", "scan"};

uint64_t ss_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

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

void ss_metrics_latency(struct ss_latency *l, uint64_t us)
{
    uint32_t v = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    l->seen++;
    if (l->n < SS_METRICS_SAMPLES) {
        l->us[l->n++] = v;
        return;
    }
    /* A full reservoir: keep a spread of the interval's samples, the
     * slot chosen by a multiplicative hash of the count (top 10 bits). */
    uint64_t slot = (l->seen * 0x9E3779B97F4A7C15ull) >> 54;
    l->us[slot % SS_METRICS_SAMPLES] = v;
}

static int ss_metrics__cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* p50 and p99 of the interval, then start the next. 0 and 0 when empty. */
static void ss_metrics__percentiles(struct ss_latency *l, uint64_t *p50, uint64_t *p99)
{
    *p50 = *p99 = 0;
    if (l->n) {
        qsort(l->us, l->n, sizeof l->us[0], ss_metrics__cmp);
        *p50 = l->us[(l->n - 1) / 2];
        *p99 = l->us[(l->n - 1) * 99 / 100];
    }
    l->n = 0;
    l->seen = 0;
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
    size_t len = strlen(value);
    char *payload = malloc(len ? len : 1);
    if (payload == NULL)
        return;
    memcpy(payload, value, len);
    /* Retained, as $SYS is: a subscriber gets the figures at once. */
    int rc = mosquitto_broker_publish(NULL, topic, (int)len, payload, 0, true, NULL);
    if (rc != MOSQ_ERR_SUCCESS)
        ss_log(p, MOSQ_LOG_WARNING, "could not publish %s: %s", topic, mosquitto_strerror(rc));
}

static void ss_metrics__u64(struct ss_plugin *p, const char *name, uint64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    ss_metrics__put(p, name, text);
}

/* The etcd backend's own figures. */
static void ss_metrics__etcd(struct ss_plugin *p)
{
    ss_backend_etcd_stats st;
    ss_backend_etcd_stats_get(p->backend, &st);
    ss_metrics__put(p, "etcd/endpoint", st.endpoint);
    ss_metrics__u64(p, "etcd/reachable", st.reachable);
    ss_metrics__u64(p, "etcd/txns", st.txns);
    ss_metrics__u64(p, "etcd/txns_overlapped", st.txns_overlapped);
    ss_metrics__u64(p, "etcd/conflicts", st.conflicts);
    ss_metrics__u64(p, "etcd/unknown_outcomes", st.unknown_outcomes);
    ss_metrics__u64(p, "etcd/nospace", st.nospace);
    ss_metrics__u64(p, "etcd/fetches", st.fetches);
    ss_metrics__u64(p, "etcd/cache_entries", st.cache_entries);
    ss_metrics__u64(p, "etcd/watch_revision", st.watch_revision);
    ss_metrics__u64(p, "etcd/watch_events", st.watch_events);
    ss_metrics__u64(p, "etcd/watch_restarts", st.watch_restarts);
    ss_metrics__u64(p, "etcd/watch_lost_revisions", st.watch_lost_revisions);
    ss_metrics__u64(p, "etcd/watch_undecodable", st.watch_undecodable);
    if (st.usage_known) { /* counted over the whole store, with a limit set */
        ss_metrics__u64(p, "keys", st.keys);
        ss_metrics__u64(p, "bytes", st.bytes);
        ss_metrics__u64(p, "limits/max_keys", p->opt.max_keys);
        ss_metrics__u64(p, "limits/max_bytes", p->opt.max_store_bytes);
    }
}

void ss_metrics_publish(struct ss_plugin *p, uint64_t now_ms)
{
    struct ss_metrics *m = &p->metrics;
    m->last_publish_ms = now_ms;
    ss_metrics__put(p, "backend", p->backend->ops->name);
    /* When, on the broker's wall clock: a reader of the retained figures
     * can tell how old they are (statestore stats shows age_ms). */
    ss_metrics__u64(p, "published_ms", ss_wall_ms());
    if (p->store) {
        ss_metrics__u64(p, "keys", ss_store_key_count(p->store));
        ss_metrics__u64(p, "bytes", ss_store_byte_count(p->store));
        ss_metrics__u64(p, "limits/max_keys", p->opt.max_keys);
        ss_metrics__u64(p, "limits/max_bytes", ss_store_options_get(p->store)->max_bytes);
    }
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
    ss_metrics__percentiles(&m->commit, &p50, &p99);
    ss_metrics__u64(p, "commit/p50_us", p50);
    ss_metrics__u64(p, "commit/p99_us", p99);
    ss_metrics__percentiles(&m->fsync, &p50, &p99);
    ss_metrics__u64(p, "fsync/p50_us", p50);
    ss_metrics__u64(p, "fsync/p99_us", p99);
    if (p->store == NULL) {
        ss_metrics__etcd(p);
        return;
    }
    /* While a commit runs, the store is the committing thread's: the
     * journal's size is the one seen last. */
    if (!ss_batch_committing(p->batch))
        m->journal_bytes = ss_store_journal_bytes(p->store);
    ss_metrics__u64(p, "journal/bytes", m->journal_bytes);
    ss_metrics__u64(p, "checkpoint/last", ss_store_last_checkpoint_ms(p->store) / 1000);
    ss_metrics__u64(p, "expiry/backlog", ss_batch_due_count(p->batch, now_ms));
}

void ss_metrics_tick(struct ss_plugin *p, uint64_t now_ms)
{
    uint64_t every = p->sys_interval_s * 1000;
    if (every && now_ms - p->metrics.last_publish_ms >= every)
        ss_metrics_publish(p, now_ms);
}
