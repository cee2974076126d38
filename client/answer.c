/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* answer.c - what an answer means: the status, the payload and the
 * version of a state store answer turned into a call's result (answer.h).
 * Pure: no I/O, no client state. */
#include "answer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/errors.h"

/* The payload, once __stat said 200. */
static void ss_answer__payload(enum ss_answer_kind kind, const uint8_t *payload, size_t len,
                               ss_client_result *r)
{
    ss_reply rep;
    if (ss_codec_decode_reply(payload, len, &rep) != SS_OK) {
        r->status = SS_E_PROTOCOL;
        return;
    }
    if (rep.kind == SS_REPLY_ERROR) {
        const char *t = (const char *)rep.str.data;
        size_t n = rep.str.len;
        if (n >= 4 && memcmp(t, "ERR ", 4) == 0) {
            t += 4;
            n -= 4;
        }
        r->error_text = strndup(t, n);
        r->status = ss_err_from_wire(t, n);
        return;
    }
    bool ok = false;
    switch (kind) {
    case SS_ANSWER_SET:
        ok = (rep.kind == SS_REPLY_SIMPLE && rep.str.len == 2 && memcmp(rep.str.data, "OK", 2) == 0) ||
             (rep.kind == SS_REPLY_INT && rep.num == -1);
        r->applied = rep.kind == SS_REPLY_SIMPLE;
        break;
    case SS_ANSWER_GET:
        ok = rep.kind == SS_REPLY_BULK || rep.kind == SS_REPLY_NIL;
        if (rep.kind == SS_REPLY_BULK) {
            r->found = true;
            r->value = malloc(rep.str.len + 1);
            if (r->value == NULL) {
                r->status = SS_E_NOMEM;
                return;
            }
            if (rep.str.len)
                memcpy(r->value, rep.str.data, rep.str.len);
            r->value[rep.str.len] = 0;
            r->value_len = rep.str.len;
        }
        break;
    case SS_ANSWER_DEL:
    case SS_ANSWER_VDEL:
        ok = rep.kind == SS_REPLY_INT && rep.num >= -1 && rep.num <= 1;
        r->count = rep.num;
        r->applied = rep.num == 1;
        break;
    case SS_ANSWER_KEYNOTIFY:
        ok = rep.kind == SS_REPLY_SIMPLE || (rep.kind == SS_REPLY_INT && rep.num == 0);
        r->applied = rep.kind == SS_REPLY_SIMPLE;
        break;
    case SS_ANSWER_ADMIN:
        break; /* not RESP3: see ss_answer__admin */
    }
    if (!ok)
        r->status = SS_E_PROTOCOL;
}

void ss_client_result_free(ss_client_result *r)
{
    if (r == NULL)
        return;
    free(r->value);
    free(r->error_text);
    memset(r, 0, sizeof *r);
}

/* An administrative answer: lines of text (plugin/admin.h); one that
 * starts with "error " is the server's refusal. */
static void ss_answer__admin(const uint8_t *payload, size_t len, ss_client_result *r)
{
    if (len >= 6 && memcmp(payload, "error ", 6) == 0) {
        size_t n = len - 6;
        while (n && (payload[6 + n - 1] == '\n'))
            n--;
        r->error_text = strndup((const char *)payload + 6, n);
        r->status = r->error_text ? SS_E_SERVER : SS_E_NOMEM;
        return;
    }
    r->value = malloc(len + 1);
    if (r->value == NULL) {
        r->status = SS_E_NOMEM;
        return;
    }
    memcpy(r->value, payload, len);
    r->value[len] = 0;
    r->value_len = len;
    r->found = true;
}

void ss_answer_interpret(enum ss_answer_kind kind, const char *stat, const char *ts,
                         const uint8_t *payload, size_t len, ss_client_result *r)
{
    memset(r, 0, sizeof *r);
    if (kind == SS_ANSWER_ADMIN) {
        ss_answer__admin(payload, len, r);
        return;
    }
    /* A status other than 200 is a transport failure, not a state store
     * answer, whatever the payload says (as the SDKs read it). */
    if (stat == NULL || strcmp(stat, "200") != 0)
        r->status = SS_E_STATUS;
    else
        ss_answer__payload(kind, payload, len, r);
    if (ts)
        snprintf(r->version, sizeof r->version, "%s", ts);
}
