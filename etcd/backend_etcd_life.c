/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_life.c - the etcd backend's side of the owner's lifecycle
 * (backend.h): start-up (a look at the cluster, the node id's claim, the
 * watch), commits in flights named in the order they started,
 * administrative pages, and its figures. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/latency.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_cache.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_life.h"
#include "backend_etcd_probe.h"
#include "backend_etcd_scan.h"
#include "backend_etcd_session.h"
#include "backend_etcd_watch.h"

/* How long a starting broker waits for the claim of a broker that died
 * with its node id: the claim's lease (3 s) and a margin. */
#define SS_ETCD_CLAIM_WAIT_MS 4500u

/* An unreachable cluster is no reason to stop the broker: it is said, and
 * tried again (requests wait for it up to unavailable_ms). */
int ss_etcd__start(void *impl, char *why, size_t why_len)
{
    struct ss_backend_etcd *e = impl;
    ss_backend *b = &e->base;
    char what[300];
    int rc = ss_backend_etcd_ping(b, what, sizeof what);
    if (rc == SS_E_INVAL) { /* the user name or password */
        snprintf(why, why_len, "plugin_opt_etcd_username, plugin_opt_etcd_password: %s", what);
        return rc;
    }
    if (rc == SS_E_LIMIT) { /* a token too long to keep: trying again cannot help */
        snprintf(why, why_len, "%s", what);
        return rc;
    }
    if (rc != SS_OK) {
        ss_etcd__log(e, SS_LOG_ERR, "etcd does not answer (%s): requests wait for it and are answered "
                     "\"the store is unavailable\" after %u ms; trying again", what, e->unavailable_ms);
        e->unreachable_logged = true; /* its answer is said (session.c) */
        return SS_OK;
    }
    ss_etcd__log(e, SS_LOG_NOTICE, "%s", what);
    ss_etcd__token_key_load(e); /* else from poll, until known */
    /* One live broker per node id: a broker that died leaves its claim
     * until its lease lapses, so wait that long first. */
    rc = ss_backend_etcd_claim(b, SS_ETCD_CLAIM_WAIT_MS, why, why_len);
    if (rc == SS_E_BUSY)
        return rc;
    if (rc != SS_OK)
        ss_etcd__log(e, SS_LOG_WARNING, "the node id could not be claimed yet (%s): trying again", why);
    /* Serve once changes made through other brokers are watched, so that
     * an observer registered from the start hears of them. */
    if (ss_backend_etcd_watch_start(b, e->call_timeout_ms) != SS_OK)
        ss_etcd__log(e, SS_LOG_WARNING, "etcd did not start the watch on changes in time: trying again "
                     "(until then, observers here hear of no change: they hear of it all once it starts)");
    return SS_OK;
}

void ss_etcd__poll_op(void *impl, uint64_t now_ms)
{
    struct ss_backend_etcd *e = impl;
    ss_backend_etcd_poll(&e->base, now_ms);
}

/* A new batch opens as soon as one goes in flight. */
bool ss_etcd__accepting(void *impl)
{
    (void)impl;
    return true;
}

int ss_etcd__commit_start_op(void *impl, uint64_t now_ms, bool holds_answers, unsigned *id)
{
    (void)holds_answers;
    struct ss_backend_etcd *e = impl;
    unsigned slot = 0;
    int rc = ss_backend_etcd_commit_start(&e->base, now_ms, &slot);
    if (rc == SS_E_PENDING)
        return SS_E_BUSY;
    if (rc != SS_OK)
        return rc;
    e->flight_id[slot] = *id = ++e->next_flight_id;
    e->flight_t0_us[slot] = ss_mono_us();
    return SS_OK;
}

bool ss_etcd__commit_collect(void *impl, ss_commit_outcome *out)
{
    struct ss_backend_etcd *e = impl;
    int found = -1;
    for (unsigned i = 0; i < SS_BACKEND_ETCD_FLIGHTS; i++)
        if (ss_backend_etcd_flight_done(&e->base, i) &&
            (found < 0 || e->flight_id[i] - e->flight_id[found] > UINT_MAX / 2))
            found = (int)i;
    if (found < 0 || !ss_backend_etcd_commit_done(&e->base, (unsigned)found, &out->rc))
        return false;
    out->id = e->flight_id[found];
    out->us = ss_mono_us() - e->flight_t0_us[found];
    out->logged = false;
    return true;
}

/* The broker's thread never waits for the network. */
int ss_etcd__commit_wait(void *impl)
{
    (void)impl;
    return SS_E_BUSY;
}

void ss_etcd__prefetch_op(void *impl, ss_bytes key)
{
    struct ss_backend_etcd *e = impl;
    ss_backend_etcd_prefetch(&e->base, key);
}

int ss_etcd__page_start(void *impl, ss_bytes from, bool inclusive, size_t limit, bool values)
{
    struct ss_backend_etcd *e = impl;
    return ss_backend_etcd_scan_start(&e->base, from, inclusive, limit, values);
}

bool ss_etcd__page_done(void *impl, ss_backend_page_fn fn, void *ctx, ss_buf *next, int *rc)
{
    struct ss_backend_etcd *e = impl;
    return ss_backend_etcd_scan_done(&e->base, fn, ctx, next, rc);
}

void ss_etcd__figures(void *impl, uint64_t now_ms, ss_figure_fn fn, void *ctx)
{
    (void)now_ms;
    struct ss_backend_etcd *e = impl;
    ss_backend_etcd_stats st;
    ss_backend_etcd_stats_get(&e->base, &st);
    fn(ctx, "etcd/endpoint", st.endpoint);
    ss_figure_u64(fn, ctx, "etcd/reachable", st.reachable);
    ss_figure_u64(fn, ctx, "etcd/txns", st.txns);
    ss_figure_u64(fn, ctx, "etcd/txns_overlapped", st.txns_overlapped);
    ss_figure_u64(fn, ctx, "etcd/txns_solo", st.txns_solo);
    ss_figure_u64(fn, ctx, "etcd/conflicts", st.conflicts);
    ss_figure_u64(fn, ctx, "etcd/unknown_outcomes", st.unknown_outcomes);
    ss_figure_u64(fn, ctx, "etcd/nospace", st.nospace);
    ss_figure_u64(fn, ctx, "etcd/fetches", st.fetches);
    /* Another broker's versions ahead of this one's clock: the most in the
     * last minute (0: none ahead, or none seen). */
    bool recent = e->now_ms - e->ahead_at_ms <= SS_ETCD_AHEAD_WINDOW_MS && e->ahead_ms > 0;
    ss_figure_u64(fn, ctx, "etcd/versions_ahead_ms", recent ? (uint64_t)e->ahead_ms : 0);
    fn(ctx, "etcd/versions_ahead_node", recent && e->ahead_node[0] ? e->ahead_node : "none");
    ss_figure_u64(fn, ctx, "etcd/scan_reads", e->page_reads);
    ss_figure_u64(fn, ctx, "etcd/scan_keys_counted", e->page_counted);
    ss_figure_u64(fn, ctx, "etcd/cache_entries", st.cache_entries);
    ss_figure_u64(fn, ctx, "etcd/watch_revision", st.watch_revision);
    ss_figure_u64(fn, ctx, "etcd/watch_events", st.watch_events);
    ss_figure_u64(fn, ctx, "etcd/watch_restarts", st.watch_restarts);
    ss_figure_u64(fn, ctx, "etcd/watch_lost_revisions", st.watch_lost_revisions);
    ss_figure_u64(fn, ctx, "etcd/watch_undecodable", st.watch_undecodable);
    ss_figure_u64(fn, ctx, "etcd/revisions_went_back", st.revisions_went_back);
    ss_figure_u64(fn, ctx, "etcd/deadlines", st.deadlines);
    ss_figure_u64(fn, ctx, "etcd/deadline_reads", st.deadline_reads);
    ss_figure_u64(fn, ctx, "etcd/deadline_ranges", st.deadline_ranges);
    ss_figure_u64(fn, ctx, "etcd/deadline_keys_counted", st.deadline_keys_counted);
    ss_figure_u64(fn, ctx, "etcd/deadlines_missed", st.deadlines_missed);
    ss_figure_u64(fn, ctx, "etcd/usage_ranges", st.usage_ranges);
    ss_figure_u64(fn, ctx, "etcd/tombstone_leases", st.tombstone_leases);
    ss_figure_u64(fn, ctx, "etcd/tombstones_leased", st.tombstones_leased);
    ss_figure_u64(fn, ctx, "etcd/lease_refusals", st.lease_refusals);
    ss_etcd__probe_figures(e, fn, ctx);
    if (st.usage_known) { /* counted over the whole store, with a limit set */
        ss_figure_u64(fn, ctx, "keys", st.keys);
        ss_figure_u64(fn, ctx, "bytes", st.bytes);
        ss_figure_u64(fn, ctx, "limits/max_keys", e->max_keys);
        ss_figure_u64(fn, ctx, "limits/max_bytes", e->max_bytes);
    }
}

/* The backend logs its failures itself, as they happen. */
const char *ss_etcd__cause(void *impl)
{
    (void)impl;
    return "";
}

int ss_etcd__backup_start(void *impl, const char *path, char *why, size_t why_len)
{
    (void)impl;
    (void)path;
    snprintf(why, why_len, "backups are not available on the etcd backend (etcdctl snapshot save backs up "
             "the cluster)");
    return SS_E_INVAL;
}

bool ss_etcd__backup_done(void *impl, int *rc, int *err, uint64_t *bytes)
{
    (void)impl;
    (void)rc;
    (void)err;
    (void)bytes;
    return false; /* none is ever started */
}
