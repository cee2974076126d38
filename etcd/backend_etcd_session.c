/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_session.c - what a broker keeps with the cluster: its
 * commit marker, its claim on its node id, its authentication token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/errors.h"
#include "../core/hex.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"
#include "backend_etcd_txn.h"
#include "backend_etcd_session.h"

/* ---- the commit marker ------------------------------------------------- */

void ss_etcd__ask_marker(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    uint64_t now = ss_etcd__mono_ms();
    if (f->marker_known || f->marker_asked || now < f->marker_retry_ms)
        return;
    struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_MARKER, SS_ETCD_RANGE_METHOD);
    if (op == NULL || ss_etcd__marker_key(e, f->slot) != SS_OK ||
        ss_etcd_range_pack(&op->call.request, ss_etcd__bytes(&e->scratch), false) != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return;
    }
    op->flight = f;
    f->marker_asked = true;
    ss_etcd__submit(e, op);
}

void ss_etcd__answers(struct ss_backend_etcd *e)
{
    if (e->unreachable_logged)
        ss_etcd__log(e, SS_LOG_NOTICE, "etcd answers again (%s)", ss_grpc_endpoint(e->grpc));
    e->unreachable_logged = false;
    e->stats.reachable = true;
}

void ss_etcd__marker_read(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    f->marker_asked = false;
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (op->call.rc == SS_OK && ss_etcd_range_unpack(&op->call.reply, &r, &kv) == SS_OK) {
        f->marker_rev = kv.found ? kv.mod_revision : 0;
        f->marker_known = true;
        ss_etcd_reply_free(&r);
        ss_etcd__answers(e);
        return;
    }
    if (!e->unreachable_logged)
        ss_etcd__log(e, SS_LOG_ERR, "etcd does not answer (%s: %s): trying again every %u ms",
                     ss_grpc_endpoint(e->grpc), ss_etcd__why(&op->call), SS_ETCD_MARKER_RETRY_MS);
    e->unreachable_logged = true;
    e->stats.reachable = false;
    f->marker_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
}

/* ---- the claim on the node id ------------------------------------------ */

/* The claim's Txn for lease id into out: put l/<node id> on the lease if
 * nobody holds it, else read who does. */
static int ss_etcd__claim_pack(struct ss_backend_etcd *e, int64_t lease, ss_buf *out)
{
    ss_bytes value = {(const uint8_t *)e->claim_value, strlen(e->claim_value)};
    int rc = ss_etcd__named(e, 'l', e->node_id);
    return rc == SS_OK ? ss_etcd_cas_pack(out, ss_etcd__bytes(&e->scratch), 0, value, lease) : rc;
}

/* A claim's Txn came back: 0 (held; *rev: the revision that created it),
 * SS_E_BUSY (*holder: the claim of the broker that holds it), or the
 * call's failure. */
static int ss_etcd__claim_result(const ss_grpc_call *c, char *holder, size_t n, int64_t *rev)
{
    ss_etcd_reply r;
    ss_etcd_kv kv;
    if (c->rc != SS_OK)
        return c->rc;
    if (ss_etcd_txn_unpack(&c->reply, &r, &kv) != SS_OK)
        return SS_E_PROTOCOL;
    int rc = r.succeeded ? SS_OK : SS_E_BUSY;
    *rev = r.revision;
    if (!r.succeeded) /* for a log line: whatever bytes are there, shown safely */
        ss_hex_loggable(kv.value.data, kv.found ? kv.value.len : 0, holder, n);
    ss_etcd_reply_free(&r);
    return rc;
}

static int ss_etcd__pack_grant(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd_lease_grant_pack(out, e->lease_ttl_s);
}

static int ss_etcd__pack_claim(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd__claim_pack(e, e->lease_id, out);
}

static int ss_etcd__pack_lease(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd_lease_id_pack(out, e->lease_id);
}

/* Below this much of the lease left, a renewal is not cut to what is
 * left: see ss_etcd__claim_timeout_ms. */
#define SS_ETCD_CLAIM_LEFT_MIN_MS 100u

unsigned ss_etcd__claim_timeout_ms(const struct ss_backend_etcd *e, uint64_t now)
{
    /* A member that stopped answering (frozen, cut off) must be left in
     * time to renew through another one before the lease ends. With
     * etcd_timeout_ms (2 s by default) a renewal sent a third into a 3 s
     * lease failed at its end, and the claim lapsed though a quorum was
     * there all along. So: a third of the lease at most, which leaves a
     * second try on the next endpoint (the channel moves on after a
     * timeout) the last third; and never past the lease's end, after
     * which waiting on that member is no use. */
    unsigned limit = e->lease_ttl_s * 1000u / 3u;
    if (limit > e->call_timeout_ms)
        limit = e->call_timeout_ms;
    /* Nearly over, or over: the lease may live all the same (a new
     * leader extends every lease when it takes over), and only a member
     * can say; a call cut to a few ms would only drop the connection
     * (and every call on it) before anyone could answer. */
    if (e->lease_end_ms >= now + SS_ETCD_CLAIM_LEFT_MIN_MS && e->lease_end_ms - now < limit)
        limit = (unsigned)(e->lease_end_ms - now);
    return limit;
}

int ss_backend_etcd_claim(ss_backend *b, unsigned wait_ms, char *why, size_t why_len)
{
    struct ss_backend_etcd *e = b->impl;
    uint64_t end = ss_etcd__mono_ms() + wait_ms;
    for (;;) {
        ss_grpc_call c;
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_LEASE_GRANT_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        int64_t id = 0, ttl = 0;
        uint64_t asked = ss_etcd__mono_ms();
        int rc = ss_etcd_lease_grant_pack(&c.request, e->lease_ttl_s);
        if (rc == SS_OK && (rc = ss_grpc_call_wait(e->grpc, &c)) == SS_OK)
            rc = ss_etcd_lease_grant_unpack(&c.reply, &id, &ttl);
        if (rc != SS_OK)
            snprintf(why, why_len, "%s", ss_etcd__why(&c));
        ss_grpc_call_clear(&c);
        if (rc != SS_OK)
            return SS_E_UNAVAILABLE;
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_TXN_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        char holder[64] = "";
        int64_t rev = 0;
        if ((rc = ss_etcd__claim_pack(e, id, &c.request)) == SS_OK) {
            ss_grpc_call_wait(e->grpc, &c);
            rc = ss_etcd__claim_result(&c, holder, sizeof holder, &rev);
        }
        if (rc != SS_OK && rc != SS_E_BUSY)
            snprintf(why, why_len, "%s", ss_etcd__why(&c));
        ss_grpc_call_clear(&c);
        if (rc == SS_OK) {
            e->lease_id = id;
            e->claim = SS_CLAIM_HELD;
            e->claim_rev = rev;
            e->lease_end_ms = asked + (uint64_t)ttl * 1000u;
            e->keepalive_ms = ss_etcd__mono_ms() + (uint64_t)ttl * 1000u / 3u;
            /* The instance names what this process writes (chunks of
             * large values: CLUSTER.md). */
            ss_etcd__log(e, SS_LOG_NOTICE, "node id %s claimed (%s)", e->node_id, e->claim_value);
            return SS_OK;
        }
        /* The lease just granted is not needed: give it back. */
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_LEASE_REVOKE_METHOD;
        c.timeout_ms = e->call_timeout_ms;
        if (ss_etcd_lease_id_pack(&c.request, id) == SS_OK)
            ss_grpc_call_wait(e->grpc, &c);
        ss_grpc_call_clear(&c);
        if (rc != SS_E_BUSY)
            return SS_E_UNAVAILABLE;
        if (ss_etcd__mono_ms() >= end) {
            snprintf(why, why_len, "node id %s is claimed by another live broker (%s) on this etcd prefix; "
                     "give each broker its own plugin_opt_node_id", e->node_id, holder);
            return SS_E_BUSY;
        }
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* From poll: claim when not held, renew when held. */
void ss_etcd__claim_step(struct ss_backend_etcd *e)
{
    uint64_t now = ss_etcd__mono_ms();
    if (e->claim == SS_CLAIM_NONE && e->flights[0].marker_known && now >= e->claim_retry_ms) {
        e->claim = SS_CLAIM_GRANTING;
        e->lease_asked_ms = now;
        ss_etcd__send(e, SS_OP_GRANT, SS_ETCD_LEASE_GRANT_METHOD, ss_etcd__pack_grant);
    } else if (e->claim == SS_CLAIM_HELD && !e->keepalive_asked && now >= e->keepalive_ms) {
        struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_KEEPALIVE, SS_ETCD_LEASE_KEEPALIVE_METHOD);
        if (op == NULL || ss_etcd__pack_lease(e, &op->call.request) != SS_OK) {
            if (op)
                ss_etcd__op_free(op);
            return; /* out of memory: at the next poll */
        }
        op->call.timeout_ms = ss_etcd__claim_timeout_ms(e, now);
        e->keepalive_asked = true;
        e->lease_asked_ms = now;
        ss_etcd__submit(e, op);
    }
}

void ss_etcd__claim_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    uint64_t now = ss_etcd__mono_ms();
    const ss_grpc_call *c = &op->call;
    int64_t ttl = 0;
    switch (op->kind) {
    case SS_OP_GRANT:
        if (c->rc == SS_OK && ss_etcd_lease_grant_unpack(&c->reply, &e->lease_id, &ttl) == SS_OK) {
            e->lease_end_ms = e->lease_asked_ms + (uint64_t)ttl * 1000u;
            e->claim = SS_CLAIM_CLAIMING;
            ss_etcd__send(e, SS_OP_CLAIM, SS_ETCD_TXN_METHOD, ss_etcd__pack_claim);
        } else {
            e->claim = SS_CLAIM_NONE;
            e->claim_retry_ms = now + SS_ETCD_MARKER_RETRY_MS;
        }
        break;
    case SS_OP_CLAIM: {
        char holder[64] = "";
        int64_t rev = 0;
        int rc = ss_etcd__claim_result(c, holder, sizeof holder, &rev);
        if (rc == SS_OK) {
            e->claim = SS_CLAIM_HELD;
            e->claim_rev = rev;
            e->keepalive_ms = now + e->lease_ttl_s * 1000u / 3u;
            if (e->claim_refused_logged || e->claim_lapsed)
                ss_etcd__log(e, SS_LOG_NOTICE, "node id %s is this broker's again", e->node_id);
            e->claim_refused_logged = false;
            e->claim_lapsed = false;
            break;
        }
        if (rc == SS_E_BUSY && !e->claim_refused_logged) {
            ss_etcd__log(e, SS_LOG_ERR, "node id %s is claimed by another live broker (%s): two brokers "
                         "must not share a node id (plugin_opt_node_id)", e->node_id, holder);
            e->claim_refused_logged = true;
        }
        ss_etcd__send(e, SS_OP_REVOKE, SS_ETCD_LEASE_REVOKE_METHOD, ss_etcd__pack_lease);
        e->claim = SS_CLAIM_NONE;
        e->claim_retry_ms = now + SS_ETCD_MARKER_RETRY_MS;
        break;
    }
    case SS_OP_KEEPALIVE:
        e->keepalive_asked = false;
        if (c->rc != SS_OK || ss_etcd_lease_keepalive_unpack(&c->reply, &ttl) != SS_OK) {
            /* Again at once, within the lease: after a timeout or a lost
             * connection the channel went on to the next endpoint, which
             * may well answer. Not more often than every
             * SS_ETCD_RETRY_MS all the same: with every member refusing
             * connections, each try fails at once. */
            uint64_t again = e->lease_asked_ms + SS_ETCD_RETRY_MS;
            e->keepalive_ms = again > now ? again : now;
        } else if (ttl > 0) {
            e->lease_end_ms = e->lease_asked_ms + (uint64_t)ttl * 1000u;
            e->keepalive_ms = now + (uint64_t)ttl * 1000u / 3u;
        } else {
            ss_etcd__log(e, SS_LOG_WARNING, "the claim on node id %s lapsed (etcd was out of reach, "
                         "or this broker stalled, for longer than %u s): no write goes out until it is "
                         "claimed again", e->node_id, e->lease_ttl_s);
            e->claim = SS_CLAIM_NONE;
            e->claim_lapsed = true;
            e->claim_lost_ms = now;
            e->claim_retry_ms = 0;
        }
        break;
    default:
        break; /* a revoke: nothing waits for it */
    }
}
/* ---- authentication ---------------------------------------------------- */

static int ss_etcd__pack_auth(struct ss_backend_etcd *e, ss_buf *out)
{
    return ss_etcd_authenticate_pack(out, e->username, e->password);
}

/* A login's reply: the token for every later call. */
int ss_etcd__logged_in(struct ss_backend_etcd *e, const ss_grpc_call *c)
{
    char token[SS_GRPC_TOKEN_MAX];
    if (c->rc != SS_OK)
        return c->rc;
    int rc = ss_etcd_authenticate_unpack(&c->reply, token, sizeof token);
    return rc == SS_OK ? ss_grpc_set_token(e->grpc, token) : rc;
}

void ss_etcd__auth_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    e->auth_asked = false;
    int rc = ss_etcd__logged_in(e, &op->call);
    if (rc == SS_OK) {
        e->auth_needed = false;
        e->auth_refused_logged = false;
        return;
    }
    if (!e->auth_refused_logged && rc == SS_E_LIMIT)
        ss_etcd__log(e, SS_LOG_ERR, "logging in as %s: %s; trying again every %u ms", e->username,
                     SS_ETCD_TOKEN_TOO_LONG, SS_ETCD_MARKER_RETRY_MS);
    else if (!e->auth_refused_logged)
        ss_etcd__log(e, SS_LOG_ERR, "etcd did not accept user %s: %s; trying again every %u ms",
                     e->username, ss_etcd__why(&op->call), SS_ETCD_MARKER_RETRY_MS);
    e->auth_refused_logged = true;
    /* A refusal costs etcd a password hash each time: not too often. A
     * member that did not answer (the channel went on to the next
     * endpoint) did no such work; and while the claim is held, its
     * renewals may wait for the token. */
    bool unanswered = rc == SS_E_TIMEOUT || rc == SS_E_CONNECTION;
    e->auth_retry_ms = ss_etcd__mono_ms() + (unanswered ? SS_ETCD_RETRY_MS : SS_ETCD_MARKER_RETRY_MS);
}

void ss_etcd__auth_step(struct ss_backend_etcd *e)
{
    uint64_t now = ss_etcd__mono_ms();
    if (e->username && e->auth_needed && !e->auth_asked && now >= e->auth_retry_ms) {
        struct ss_etcd_op *op = ss_etcd__op_new(e, SS_OP_AUTH, SS_ETCD_AUTHENTICATE_METHOD);
        if (op == NULL || ss_etcd__pack_auth(e, &op->call.request) != SS_OK) {
            if (op)
                ss_etcd__op_free(op);
            return; /* out of memory: at the next poll */
        }
        /* The claim's renewals wait for the token once it expired: while
         * the claim is held, a member that does not answer is left as
         * soon as it would be for them. */
        if (e->claim == SS_CLAIM_HELD)
            op->call.timeout_ms = ss_etcd__claim_timeout_ms(e, now);
        e->auth_asked = true;
        ss_etcd__submit(e, op);
    }
}
