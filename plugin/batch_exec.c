/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* batch_exec.c - one request run in the open batch: the resend cache
 * asked first, then the engine, the refusal logged, the answer queued
 * (batch_internal.h). Queueing and commits are batch.c's. */
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "batch_internal.h"
#include "plugin.h"

/* Answer buffer memory kept between requests. */
#define SS_SCRATCH_KEEP ((size_t)64 << 10)

static ss_bytes ss_batch__str(const char *s)
{
    ss_bytes b = {(const uint8_t *)(s ? s : ""), s ? strlen(s) : 0};
    return b;
}

/* The batch whose fate an answer remembered at dedup mark seq shares: the
 * open one, one in flight, or none (0: committed before). */
static uint64_t ss_batch__remembered_in(const struct ss_batch *b, uint64_t seq)
{
    if (seq > b->dedup_mark)
        return b->seq;
    for (size_t i = 0; i < b->nflights; i++) {
        const struct ss_flight *f = &b->flights[i];
        if (f->used && seq > f->dedup_after && seq <= f->dedup_upto)
            return f->seq;
    }
    return 0;
}

/* The resend cache's identity of a request: client, correlation data and
 * everything else it carried. */
static uint64_t ss_batch__request_id(struct ss_plugin *p, ss_bytes client, ss_bytes corr,
                                     const struct ss_request_from *in, const struct ss_request_props *r)
{
    /* Absent and empty differ. */
    uint8_t flags = (uint8_t)((r->ts != NULL) | (r->ft != NULL) << 1 | (r->prot_ver != NULL) << 2);
    ss_bytes parts[6] = {{in->payload, in->len},       ss_batch__str(r->response_topic),
                         ss_batch__str(r->ts),         ss_batch__str(r->ft),
                         ss_batch__str(r->prot_ver),   {&flags, 1}};
    return ss_dedup_id(p->dedup, client, corr, parts, 6);
}

/* The backend's words on a failure, or the error's own text. */
static const char *ss_batch__cause(ss_backend *be, int rc)
{
    const char *cause = be->ops->cause(be->impl);
    return cause && cause[0] ? cause : ss_strerror(rc);
}

/* Run one request. False when it must run again later (its read is under
 * way, or the key changed after it was decided): nothing was answered.
 * *held: its answer shares the open batch's fate (command.h); one that
 * does not was answered for good and never runs again. */
bool ss_batch__execute(struct ss_batch *b, const struct ss_request_from *in, bool gone,
                       struct ss_request_props *r, bool *held)
{
    struct ss_plugin *p = b->p;
    const char *client_id = in->client_id;
    ss_bytes client = ss_batch__str(client_id);
    ss_bytes corr = {r->corr, r->corr_len};
    uint64_t now = ss_wall_ms();
    struct ss_caller who = {client_id, in->username, gone};
    ss_exec x = {.payload = in->payload, .payload_len = in->len, .ts = ss_batch__str(r->ts),
                 .ft = ss_batch__str(r->ft), .now_ms = now, .caller = &who,
                 .response = &b->scratch};
    if (r->ts == NULL)
        x.ts.data = NULL;
    if (r->ft == NULL)
        x.ft.data = NULL;
    /* What is never remembered (GETs, below) never finds an entry either:
     * it skips the cache, half of a typical load. */
    ss_engine_parse(p->engine, &x);
    const ss_command_traits *traits = ss_command_traits_of(x.command);
    bool cached = ss_command_remembered(x.command, &x.cmd);
    *held = traits->held;
    uint64_t id = cached ? ss_batch__request_id(p, client, corr, in, r) : 0;
    ss_dedup_answer prior;
    if (cached && ss_dedup_find(p->dedup, client, corr, id, now, &prior)) {
        char version[SS_HLC_TEXT_MAX + 1];
        memcpy(version, prior.version.data, prior.version.len);
        version[prior.version.len] = '\0';
        ss_log(p, MOSQ_LOG_DEBUG, "client %s resent a request: answered again", client_id);
        p->metrics.resends++;
        /* Remembered before the open batch: its request was committed, so
         * its answer is final whatever becomes of this batch (a failed
         * commit must not tell the client that a durable write failed).
         * Remembered in the open batch: it shares that batch's fate. */
        ss_batch__answer(b, client_id, r, &prior.payload, prior.version.len ? version : NULL,
                         ss_batch__remembered_in(b, prior.seq), prior.final);
        return true;
    }
    ss_buf_clear(&b->scratch);
    int rc = ss_engine_exec(p->engine, &x);
    if (rc == SS_E_PENDING || rc == SS_E_CONFLICT)
        return false;
    if (rc == SS_E_NOMEM) {
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: a request from %s was not answered", client_id);
        return true;
    }
    ss_metrics_request(&p->metrics, x.command, rc, b->scratch.data, b->scratch.len);
    /* Each limit's refusal names its own limit (the engine's checks, in
     * their order); a KEYNOTIFY refused for its registration limits or
     * for its notification topic's length was logged where it was
     * refused (notify.c: ss_on_keynotify), and the backend's cause (a key
     * count, bytes stored, the disk) is a write's only. */
    if (rc == SS_E_QUOTA && x.cmd.type == SS_CMD_SET && x.cmd.value.len > p->opt.max_value_bytes)
        ss_log(p, MOSQ_LOG_WARNING,
               "request from %s refused: a value may have at most %llu bytes so that its "
               "notifications fit the broker's message_size_limit",
               client_id, (unsigned long long)p->opt.max_value_bytes);
    else if (rc == SS_E_QUOTA && x.cmd.key.len > p->opt.max_key_length)
        ss_log(p, MOSQ_LOG_NOTICE, "request from %s refused: a key of %zu bytes is longer than "
               "max_key_length (%llu)", client_id, x.cmd.key.len,
               (unsigned long long)p->opt.max_key_length);
    else if (rc == SS_E_QUOTA && x.cmd.type == SS_CMD_SET)
        ss_log(p, MOSQ_LOG_NOTICE, "request from %s refused: %s", client_id,
               ss_batch__cause(p->backend, rc));
    else if (rc == SS_E_QUOTA && x.cmd.type != SS_CMD_KEYNOTIFY)
        ss_log(p, MOSQ_LOG_NOTICE, "request from %s refused: %s", client_id, ss_strerror(rc));
    else if (rc != SS_OK)
        ss_log(p, MOSQ_LOG_INFO, "request from %s refused: %s", client_id, ss_strerror(rc));
    char version[SS_HLC_TEXT_MAX + 1] = "";
    if (x.has_version)
        version[ss_hlc_format(&x.version, version)] = '\0';
    ss_bytes answer = {b->scratch.data, b->scratch.len};
    /* A KEYNOTIFY whose client went before it ran registered nothing (the
     * disconnect dropped its registrations): no +OK to its session, which
     * a persistent one would be told on its return. Its client, asking
     * again, registers. */
    bool registers = x.cmd.type == SS_CMD_KEYNOTIFY && !x.cmd.stop && rc == SS_OK;
    if (registers && gone)
        return true;
    /* Which answers are remembered is the command table's choice
     * (core/command.c). Remembered before answering, as the answer takes
     * over the correlation data. */
    ss_dedup_answer a = {.payload = answer, .version = ss_batch__str(version), .final = !*held};
    if (cached && ss_dedup_put(p->dedup, client, corr, id, now, &a) != SS_OK)
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: a request will not be recognised if resent");
    /* An answer that does not depend on the commit still waits for it, so
     * that a client's answers keep the order of its requests. */
    bool queued = ss_batch__answer(b, client_id, r, &answer, x.has_version ? version : NULL, b->seq, !*held);
    if (queued && registers && ss_outbox_registers(&b->outbox, client_id) != MOSQ_ERR_SUCCESS)
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: the +OK of a KEYNOTIFY from %s is sent even if "
               "its client goes first", client_id);
    /* The answer was copied. A GET of a huge value grew the buffer to the
     * value's size (rounded up): give that memory back, so that one big
     * read does not keep the broker large for good. */
    if (b->scratch.cap > SS_SCRATCH_KEEP)
        ss_buf_free(&b->scratch);
    return true;
}
