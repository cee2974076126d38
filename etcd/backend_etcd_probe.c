/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_probe.c - each endpoint's status, for the figures: what
 * etcdctl endpoint status shows (health, the leader, the raft term and
 * index, the database's size), asked of every configured endpoint every
 * status_interval_ms.
 *
 * The backend's channel talks to one endpoint at a time, so it cannot say
 * how the others are: each endpoint gets a channel of its own here (a
 * connection and an I/O thread each), used for nothing but a Maintenance
 * Status call, one at a time. With a user name, each channel logs in by
 * itself: etcd's simple tokens are known only to the member that gave
 * them. Everything here runs on the owner's thread, from poll; a channel's
 * thread only wakes the owner when its call ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "backend_etcd_base.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_probe.h"

struct ss_etcd_probe {
    ss_grpc *grpc;
    char url[256];
    ss_grpc_call call;
    bool busy;      /* call is under way */
    bool authing;   /* ...and it is the log-in, not the status */
    bool logged_in; /* with a user name: this channel has its token */
    /* the last answer, or why there was none */
    bool checked;   /* asked and answered (or failed) at least once */
    uint64_t next_ms; /* monotonic: not asked again before (after a refused log-in) */
    bool answered;  /* a status came, ever */
    bool healthy;   /* the last Status answered, with a leader, without alarms */
    ss_etcd_status st;
    char error[200];
};

static void ss_probe__wake(void *ctx)
{
    struct ss_backend_etcd *e = ctx;
    if (e->base.wake)
        e->base.wake(e->base.wake_ctx);
}

int ss_etcd__probes_new(struct ss_backend_etcd *e, const ss_backend_etcd_options *o, char *why,
                        size_t why_len)
{
    e->probe_interval_ms = o->status_interval_ms;
    if (o->status_interval_ms == 0 || o->endpoints == NULL)
        return SS_OK;
    size_t n = 1;
    for (const char *p = o->endpoints; *p; p++)
        n += *p == ',';
    e->probes = calloc(n, sizeof *e->probes);
    if (e->probes == NULL)
        return SS_E_NOMEM;
    const char *p = o->endpoints;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(p, ",");
        struct ss_etcd_probe *pr = &e->probes[e->nprobes];
        /* As the channel reads the list: spaces around an entry do not
         * count, and an empty entry is none. */
        size_t lead = strspn(p, " \t");
        size_t end = len;
        while (end > lead && (p[end - 1] == ' ' || p[end - 1] == '\t'))
            end--;
        if (end - lead >= sizeof pr->url) {
            snprintf(why, why_len, "an etcd endpoint of over %zu characters", sizeof pr->url - 1);
            return SS_E_INVAL;
        }
        if (end > lead) {
            memcpy(pr->url, p + lead, end - lead);
            pr->url[end - lead] = '\0';
            ss_grpc_options go = {.endpoints = pr->url, .ca_file = o->ca_file, .cert_file = o->cert_file,
                                  .key_file = o->key_file, .connect_timeout_ms = e->call_timeout_ms,
                                  .wake = ss_probe__wake, .wake_ctx = e};
            int rc = ss_grpc_new(&go, &pr->grpc, why, why_len);
            if (rc != SS_OK)
                return rc;
            snprintf(pr->error, sizeof pr->error, "not asked yet");
            e->nprobes++;
        }
        p += len + (p[len] == ',');
    }
    return SS_OK;
}

void ss_etcd__probes_free(struct ss_backend_etcd *e)
{
    for (size_t i = 0; i < e->nprobes; i++) {
        ss_grpc_free(e->probes[i].grpc); /* no call runs past here */
        ss_grpc_call_clear(&e->probes[i].call);
    }
    free(e->probes);
    e->probes = NULL;
    e->nprobes = 0;
}

static void ss_probe__send(struct ss_backend_etcd *e, struct ss_etcd_probe *pr)
{
    ss_grpc_call_clear(&pr->call);
    memset(&pr->call, 0, sizeof pr->call);
    pr->call.timeout_ms = e->call_timeout_ms;
    pr->call.user = pr;
    pr->authing = e->username && !pr->logged_in;
    if (pr->authing) {
        pr->call.method = SS_ETCD_AUTHENTICATE_METHOD;
        if (ss_etcd_authenticate_pack(&pr->call.request, e->username, e->password) != SS_OK) {
            snprintf(pr->error, sizeof pr->error, "logging in: out of memory");
            return;
        }
    } else {
        pr->call.method = SS_ETCD_STATUS_METHOD; /* an empty request */
    }
    pr->busy = true;
    ss_grpc_submit(pr->grpc, &pr->call);
}

/* The call of pr ended: keep what it says. */
static void ss_probe__answered(struct ss_backend_etcd *e, struct ss_etcd_probe *pr)
{
    ss_grpc_call *c = &pr->call;
    pr->busy = false;
    pr->checked = true;
    if (pr->authing) {
        char token[SS_GRPC_TOKEN_MAX];
        int rc = c->rc == SS_OK ? ss_etcd_authenticate_unpack(&c->reply, token, sizeof token) : c->rc;
        if (rc == SS_OK && ss_grpc_set_token(pr->grpc, token) == SS_OK) {
            pr->logged_in = true;
            ss_probe__send(e, pr); /* the status itself, at once */
            return;
        }
        pr->healthy = false;
        pr->checked = true;
        snprintf(pr->error, sizeof pr->error, "logging in: %s", rc == SS_E_LIMIT ? SS_ETCD_TOKEN_TOO_LONG : ss_etcd__why(c));
        /* Each try costs etcd a password hash: not at every interval. */
        pr->next_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
        return;
    }
    if (c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED)
        pr->logged_in = false; /* the token expired: log in again next time */
    ss_etcd_status st;
    if (c->rc != SS_OK || ss_etcd_status_read(&c->reply, &st) != SS_OK) {
        pr->healthy = false;
        pr->st.leader = 0; /* what it knew of the leader is stale */
        snprintf(pr->error, sizeof pr->error, "%s", c->rc != SS_OK ? ss_etcd__why(c) : "undecodable status");
        return;
    }
    pr->answered = true;
    pr->st = st;
    pr->healthy = st.leader != 0 && st.nerrors == 0;
    snprintf(pr->error, sizeof pr->error, "%s", st.nerrors ? st.error : st.leader ? "" : "no leader");
}

void ss_etcd__probe_step(struct ss_backend_etcd *e)
{
    if (e->nprobes == 0)
        return;
    /* Called at every tick, which under load is 100,000 times a second:
     * a channel's lock is taken only while its call is under way. */
    for (size_t i = 0; i < e->nprobes; i++) {
        struct ss_etcd_probe *pr = &e->probes[i];
        if (!pr->busy)
            continue;
        ss_grpc_call *c = ss_grpc_collect(pr->grpc);
        while (c) {
            ss_grpc_call *next = c->next; /* c may be sent again at once */
            ss_probe__answered(e, c->user);
            c = next;
        }
    }
    uint64_t now = ss_etcd__mono_ms();
    if (now < e->probe_next_ms)
        return;
    e->probe_next_ms = now + e->probe_interval_ms;
    for (size_t i = 0; i < e->nprobes; i++)
        if (!e->probes[i].busy && now >= e->probes[i].next_ms)
            ss_probe__send(e, &e->probes[i]);
}

/* The leader as the healthy endpoints see it: the first one's view (they
 * agree but for a moment during an election). 0: none known. */
static uint64_t ss_probe__leader(const struct ss_backend_etcd *e)
{
    for (size_t i = 0; i < e->nprobes; i++)
        if (e->probes[i].healthy)
            return e->probes[i].st.leader;
    return 0;
}

static void ss_probe__figure(ss_figure_fn fn, void *ctx, size_t i, const char *leaf, const char *value)
{
    char name[64];
    snprintf(name, sizeof name, "etcd/endpoints/%zu/%s", i + 1, leaf);
    fn(ctx, name, value);
}

static void ss_probe__figure_u64(ss_figure_fn fn, void *ctx, size_t i, const char *leaf, uint64_t value)
{
    char v[24];
    snprintf(v, sizeof v, "%llu", (unsigned long long)value);
    ss_probe__figure(fn, ctx, i, leaf, v);
}

void ss_etcd__probe_figures(const struct ss_backend_etcd *e, ss_figure_fn fn, void *ctx)
{
    if (e->nprobes == 0)
        return;
    uint64_t leader = ss_probe__leader(e);
    uint64_t healthy = 0, unhealthy = 0;
    /* Never an empty figure: an empty retained message would clear the
     * topic, and a new subscriber would not see it at all. */
    char leader_url[300] = "none";
    if (leader)
        snprintf(leader_url, sizeof leader_url, "member %llx (not among the endpoints)", (unsigned long long)leader);
    for (size_t i = 0; i < e->nprobes; i++) {
        const struct ss_etcd_probe *pr = &e->probes[i];
        healthy += pr->healthy;
        unhealthy += pr->checked && !pr->healthy;
        if (leader && pr->answered && pr->st.member == leader)
            snprintf(leader_url, sizeof leader_url, "%s", pr->url);
    }
    ss_figure_u64(fn, ctx, "etcd/endpoint_count", e->nprobes);
    ss_figure_u64(fn, ctx, "etcd/endpoints_healthy", healthy);
    ss_figure_u64(fn, ctx, "etcd/endpoints_unhealthy", unhealthy); /* not counting those not asked yet */
    fn(ctx, "etcd/leader", leader_url);
    for (size_t i = 0; i < e->nprobes; i++) {
        const struct ss_etcd_probe *pr = &e->probes[i];
        char id[24] = "unknown"; /* as etcdctl prints member ids */
        if (pr->answered)
            snprintf(id, sizeof id, "%llx", (unsigned long long)pr->st.member);
        ss_probe__figure(fn, ctx, i, "url", pr->url);
        ss_probe__figure_u64(fn, ctx, i, "healthy", pr->healthy);
        ss_probe__figure_u64(fn, ctx, i, "leader", pr->healthy && leader && pr->st.member == leader);
        ss_probe__figure(fn, ctx, i, "id", id);
        ss_probe__figure(fn, ctx, i, "version", pr->st.version[0] ? pr->st.version : "unknown");
        ss_probe__figure_u64(fn, ctx, i, "db_size", pr->st.db_size);
        ss_probe__figure_u64(fn, ctx, i, "raft_term", pr->st.raft_term);
        ss_probe__figure_u64(fn, ctx, i, "raft_index", pr->st.raft_index);
        ss_probe__figure(fn, ctx, i, "error", pr->error[0] ? pr->error : "none");
    }
}
