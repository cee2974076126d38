/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* engine.c - PROTOCOL.md sections 2-6 on top of a backend (backend.h).
 *
 * Invariant: every version issued comes from the one clock and is strictly
 * greater than all earlier ones (persisted with each batch, so also across
 * restarts); a record whose deadline is <= now is never visible to a
 * command: it is removed (and its DELETE emitted) before the command runs.
 */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "errors.h"
#include "scan.h"

struct ss_engine {
    ss_backend *be;
    ss_engine_options opt;
    ss_clock clock;
    ss_buf key_scratch;
};

int ss_engine_new(ss_backend *be, const ss_engine_options *o, ss_engine **out)
{
    ss_engine *e = calloc(1, sizeof *e);
    if (e == NULL)
        return SS_E_NOMEM;
    e->be = be;
    if (o)
        e->opt = *o;
    if (e->opt.node_id == NULL)
        e->opt.node_id = SS_NODE_ID_DEFAULT;
    if (e->opt.limits.max_args == 0 || e->opt.limits.max_size == 0)
        e->opt.limits = ss_codec_limits_default();
    if (e->opt.max_key_len == 0 || e->opt.max_key_len > SS_STORE_KEY_MAX)
        e->opt.max_key_len = SS_STORE_KEY_MAX;
    if (ss_clock_init(&e->clock, e->opt.node_id, strlen(e->opt.node_id)) != SS_OK) {
        free(e);
        return SS_E_INVAL;
    }
    e->opt.node_id = NULL; /* borrowed string: not kept past this call */
    uint64_t wall;
    uint32_t counter;
    be->ops->load_clock(be->impl, &wall, &counter);
    ss_clock_restore(&e->clock, wall, counter);
    *out = e;
    return SS_OK;
}

void ss_engine_free(ss_engine *e)
{
    if (e == NULL)
        return;
    ss_buf_free(&e->key_scratch);
    free(e);
}

ss_hlc ss_engine_clock(const ss_engine *e)
{
    ss_hlc h;
    h.wall = e->clock.wall;
    h.counter = e->clock.counter;
    h.node_len = e->clock.node_len;
    memcpy(h.node, e->clock.node, e->clock.node_len);
    return h;
}

/* Look key up, removing it first if it has expired. 0 with *rec (found),
 * SS_E_NOTFOUND, SS_E_PENDING, or a store failure; *rev: what a write of
 * the key is decided on. */
static int ss_engine__lookup(ss_engine *e, ss_bytes key, uint64_t now_ms, ss_record *rec,
                             ss_revision *rev)
{
    ss_backend *be = e->be;
    memset(rec, 0, sizeof *rec); /* absent: the version of its last deletion, if the backend knows it */
    int rc = be->ops->read(be->impl, key, rec, rev);
    if (rc != SS_OK || rec->expiry_ms == 0 || rec->expiry_ms > now_ms)
        return rc;
    ss_change gone = {.type = SS_CHANGE_DELETE, .key = key, .version = rec->version, .expired = true};
    if ((rc = be->ops->del(be->impl, &gone, *rev)) != SS_OK)
        return rc;
    return SS_E_NOTFOUND; /* rec->version: the version just removed */
}

/* The fencing rule for SET/DEL/VDEL on an existing record. */
static int ss_engine__fence(const ss_record *rec, const ss_hlc *ft)
{
    if (!rec->has_ft)
        return SS_OK;
    if (ft == NULL)
        return SS_E_FT_REQUIRED;
    if (ss_hlc_compare(ft, &rec->ft) < 0)
        return SS_E_FT_LOWER;
    return SS_OK;
}

static bool ss_engine__bytes_eq(ss_bytes a, ss_bytes b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, a.len) == 0);
}

/* Every handler gets the parsed command and its checked stamps (ts, ft:
 * NULL when absent; ft only for fenced verbs). */
static int ss_engine__set(ss_engine *e, ss_exec *x, const ss_command *c, const ss_hlc *ts,
                          const ss_hlc *ft)
{
    ss_record old;
    ss_revision rev;
    int rc = ss_engine__lookup(e, c->key, x->now_ms, &old, &rev);
    bool exists = rc == SS_OK;
    if (rc != SS_OK && rc != SS_E_NOTFOUND)
        return rc;
    if (exists) {
        if ((rc = ss_engine__fence(&old, ft)) != SS_OK)
            return rc;
        if (c->cond == SS_COND_NX || (c->cond == SS_COND_NEX && !ss_engine__bytes_eq(old.value, c->value))) {
            x->has_version = true;
            x->version = old.version;
            return ss_codec_put_int(x->response, -1);
        }
    }
    ss_record rec;
    memset(&rec, 0, sizeof rec);
    rec.value = c->value;
    /* Past the version it replaces, or the last one a deletion removed
     * (another broker's clock may be behind it). */
    bool removed = !exists && (old.version.wall != 0 || old.version.counter != 0);
    /* A version may be at most SS_HLC_MAX_SKEW_MS ahead of real time. A
     * source exactly that far ahead with its counter exhausted (the
     * request's __ts, the version replaced, or the clock's last issue) has
     * no successor within it this millisecond: refused, the clock as it
     * was, as a __ts beyond the skew is. A source already beyond it (the
     * system clock went back) is counted on from (SEMANTICS.md). */
    const ss_hlc *prev = exists || removed ? &old.version : NULL;
    uint64_t edge = x->now_ms <= UINT64_MAX - SS_HLC_MAX_SKEW_MS ? x->now_ms + SS_HLC_MAX_SKEW_MS : UINT64_MAX;
    bool beyond = e->clock.wall > edge || (prev && prev->wall > edge);
    ss_clock next = e->clock;
    rec.version = ss_clock_issue(&next, x->now_ms, ts, prev);
    if (!beyond && rec.version.wall > edge)
        return SS_E_TS_FUTURE;
    e->clock = next;
    if (ft) {
        rec.has_ft = true;
        rec.ft = *ft; /* equal or newer than any stored token (checked above) */
    }
    rec.expiry_ms = c->px ? x->now_ms + c->px : 0;
    ss_backend *be = e->be;
    if ((rc = be->ops->save_clock(be->impl, rec.version.wall, rec.version.counter)) != SS_OK)
        return rc;
    if ((rc = be->ops->put(be->impl, c->key, &rec, rev)) != SS_OK)
        return rc;
    if ((rc = ss_codec_put_ok(x->response)) != SS_OK)
        return rc;
    x->has_version = true;
    x->version = rec.version;
    return SS_OK;
}

static int ss_engine__get(ss_engine *e, ss_exec *x, const ss_command *c, const ss_hlc *ts,
                          const ss_hlc *ft)
{
    (void)ts;
    (void)ft;
    ss_record rec;
    ss_revision rev;
    int rc = ss_engine__lookup(e, c->key, x->now_ms, &rec, &rev);
    if (rc == SS_E_NOTFOUND)
        return ss_codec_put_nil(x->response);
    if (rc != SS_OK)
        return rc;
    if ((rc = ss_codec_put_bulk(x->response, rec.value.data, rec.value.len)) != SS_OK)
        return rc;
    x->has_version = true;
    x->version = rec.version;
    return SS_OK;
}

/* DEL, and VDEL (which only deletes the value it names). */
static int ss_engine__del(ss_engine *e, ss_exec *x, const ss_command *c, const ss_hlc *ts,
                          const ss_hlc *ft)
{
    (void)ts;
    const ss_bytes *match = c->type == SS_CMD_VDEL ? &c->value : NULL;
    ss_record rec;
    ss_revision rev;
    int rc = ss_engine__lookup(e, c->key, x->now_ms, &rec, &rev);
    if (rc == SS_E_NOTFOUND)
        return ss_codec_put_int(x->response, 0);
    if (rc != SS_OK)
        return rc;
    if ((rc = ss_engine__fence(&rec, ft)) != SS_OK)
        return rc;
    if (match && !ss_engine__bytes_eq(rec.value, *match))
        return ss_codec_put_int(x->response, -1);
    ss_hlc version = rec.version;
    ss_change gone = {.type = SS_CHANGE_DELETE, .key = c->key, .version = version};
    if ((rc = e->be->ops->del(e->be->impl, &gone, rev)) != SS_OK)
        return rc;
    if ((rc = ss_codec_put_int(x->response, 1)) != SS_OK)
        return rc;
    x->has_version = true;
    x->version = version;
    return SS_OK;
}

static int ss_engine__keynotify(ss_engine *e, ss_exec *x, const ss_command *c, const ss_hlc *ts,
                                const ss_hlc *ft)
{
    (void)ts;
    (void)ft;
    if (e->opt.on_keynotify == NULL)
        return SS_E_UNKNOWN_COMMAND;
    int rc = e->opt.on_keynotify(e->opt.keynotify_ctx, x->caller, c->key, c->stop);
    if (rc < 0)
        return rc;
    return rc == 1 ? ss_codec_put_ok(x->response) : ss_codec_put_int(x->response, 0);
}

/* A key of a SCAN page is listed only to who may read it. */
static bool ss_engine__may_read(void *ctx, void *caller, ss_bytes key)
{
    const ss_engine *e = ctx;
    return e->opt.on_authorize(e->opt.authorize_ctx, caller, SS_ACCESS_READ, key, true);
}

static int ss_engine__scan(ss_engine *e, ss_exec *x, const ss_command *c, const ss_hlc *ts,
                           const ss_hlc *ft)
{
    (void)ts;
    (void)ft;
    ss_scan_request q = {.pattern = c->key, .token = c->token, .now_ms = x->now_ms,
                         .max_answer = e->opt.max_answer, .page_bytes = e->opt.scan_page_bytes,
                         .caller = x->caller};
    if (e->opt.on_authorize) {
        q.may_read = ss_engine__may_read;
        q.may_read_ctx = e;
    }
    return ss_scan_page(e->be, &q, x->response);
}

/* What each verb does; what it needs (access, fencing, timestamp, resend
 * answer) is in the command table (command.c). */
typedef int (*ss_engine_handler)(ss_engine *e, ss_exec *x, const ss_command *c, const ss_hlc *ts,
                                 const ss_hlc *ft);
#define SS_ENGINE_HANDLERS (SS_CMD_SCAN + 1)
static const ss_engine_handler ss_engine__handlers[SS_ENGINE_HANDLERS] = {
    [SS_CMD_SET] = ss_engine__set,
    [SS_CMD_GET] = ss_engine__get,
    [SS_CMD_DEL] = ss_engine__del,
    [SS_CMD_VDEL] = ss_engine__del,
    [SS_CMD_KEYNOTIFY] = ss_engine__keynotify,
    [SS_CMD_SCAN] = ss_engine__scan,
};

/* Parse an optional HLC property and apply the skew check. */
static int ss_engine__stamp(ss_bytes prop, uint64_t now_ms, int future_err, ss_hlc *out,
                            const ss_hlc **p)
{
    *p = NULL;
    if (prop.data == NULL)
        return SS_OK;
    if (ss_hlc_parse(prop.data, prop.len, out) != SS_OK)
        return SS_E_TS_MALFORMED;
    if (ss_hlc_too_far_ahead(out, now_ms))
        return future_err;
    *p = out;
    return SS_OK;
}

static int ss_engine__parse(ss_engine *e, ss_exec *x)
{
    ss_request req;
    size_t used;
    int rc = ss_codec_decode_request(x->payload, x->payload_len, &e->opt.limits, &req, &used);
    if (rc != SS_OK || used != x->payload_len)
        return SS_E_SYNTAX;
    ss_command *c = &x->cmd;
    if ((rc = ss_command_parse(&req, c)) != SS_OK)
        return rc;
    x->command = (int)c->type;
    if (c->type == SS_CMD_SCAN)
        return SS_OK; /* its pattern is no key: scan.c checks it */
    if (c->key.len > e->opt.max_key_len)
        return SS_E_QUOTA;
    if (c->type == SS_CMD_SET && e->opt.max_value_len && c->value.len > e->opt.max_value_len)
        return SS_E_QUOTA;
    return SS_OK;
}

void ss_engine_parse(ss_engine *e, ss_exec *x)
{
    x->command = 0;
    x->parse_rc = ss_engine__parse(e, x);
    x->parsed = true;
}

static int ss_engine__run(ss_engine *e, ss_exec *x)
{
    int rc;
    if (!x->parsed)
        ss_engine_parse(e, x);
    if (x->parse_rc != SS_OK)
        return x->parse_rc;
    const ss_command c = x->cmd;
    const ss_command_traits *traits = ss_command_traits_of(c.type);
    /* SCAN asks for each key it would list (ss_engine__scan). A
     * KEYNOTIFY ... STOP reveals nothing and only ends the caller's own
     * registration: allowed, so that one made before an ACL reload took
     * the key away can still be ended (and stops counting to its limits). */
    bool stop = c.type == SS_CMD_KEYNOTIFY && c.stop;
    if (e->opt.on_authorize && c.type != SS_CMD_SCAN && !stop) {
        enum ss_access need = traits->writes ? SS_ACCESS_WRITE : SS_ACCESS_READ;
        if (!e->opt.on_authorize(e->opt.authorize_ctx, x->caller, need, c.key, false))
            return SS_E_NOT_AUTHORIZED;
    }

    ss_hlc ts_buf, ft_buf;
    const ss_hlc *ts, *ft = NULL;
    if ((rc = ss_engine__stamp(x->ts, x->now_ms, SS_E_TS_FUTURE, &ts_buf, &ts)) != SS_OK)
        return rc;
    if (traits->needs_ts && ts == NULL)
        return SS_E_TS_MISSING;
    if (traits->fenced && (rc = ss_engine__stamp(x->ft, x->now_ms, SS_E_FT_FUTURE, &ft_buf, &ft)) != SS_OK)
        return rc;

    ss_engine_handler run = c.type < SS_ENGINE_HANDLERS ? ss_engine__handlers[c.type] : NULL;
    return run ? run(e, x, &c, ts, ft) : SS_E_UNKNOWN_COMMAND;
}

int ss_engine_exec(ss_engine *e, ss_exec *x)
{
    size_t mark = x->response->len;
    x->has_version = false;
    int rc = ss_engine__run(e, x);
    if (rc == SS_OK)
        return SS_OK;
    /* Anything half-written is replaced by the error answer. */
    x->response->len = mark;
    x->has_version = false;
    /* Not answered: the request runs again (a read under way, a write
     * decided on data that changed). */
    if (rc == SS_E_NOMEM || rc == SS_E_PENDING || rc == SS_E_CONFLICT)
        return rc;
    int answered = ss_err_is_wire(rc) ? rc : SS_E_IO;
    if (ss_codec_put_error(x->response, answered) != SS_OK)
        return SS_E_NOMEM;
    return answered;
}

int ss_engine_expire(ss_engine *e, uint64_t now_ms, unsigned max)
{
    ss_backend *be = e->be;
    if (max == 0 || be->ops->next_expiry(be->impl) > now_ms)
        return 0;
    int n = 0;
    while ((unsigned)n < max) {
        ss_hlc version;
        int rc = be->ops->pop_due(be->impl, now_ms, &e->key_scratch, &version);
        if (rc == SS_E_NOTFOUND)
            break;
        if (rc != SS_OK)
            return rc;
        n++;
    }
    return n;
}

int ss_engine_commit(ss_engine *e, uint64_t now_ms)
{
    return e->be->ops->commit(e->be->impl, now_ms);
}

void ss_engine_abort(ss_engine *e)
{
    e->be->ops->abort(e->be->impl);
}
