/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* command.c - the command table and the parsers of each verb. */
#include "command.h"

#include <stddef.h>

#include "errors.h"

static bool ss_command__word_is(ss_bytes w, const char *upper)
{
    size_t i = 0;
    for (; upper[i] != '\0'; i++) {
        if (i >= w.len)
            return false;
        uint8_t c = w.data[i];
        if (c >= 'a' && c <= 'z')
            c = (uint8_t)(c - 'a' + 'A');
        if (c != (uint8_t)upper[i])
            return false;
    }
    return i == w.len;
}

int ss_parse_u64(const uint8_t *p, size_t n, uint64_t max, uint64_t *out)
{
    /* Leading zeros, however many, count for nothing (SEMANTICS.md). */
    while (n > 1 && p[0] == '0') {
        p++;
        n--;
    }
    if (n == 0 || n > 19)
        return SS_E_SYNTAX;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return SS_E_SYNTAX;
        v = v * 10 + (uint64_t)(p[i] - '0'); /* 19 digits cannot overflow */
    }
    if (v > max)
        return SS_E_SYNTAX;
    *out = v;
    return SS_OK;
}

static int ss_command__parse_set(const ss_request *req, ss_command *cmd)
{
    cmd->value = req->argv[2];
    bool have_px = false;
    for (size_t i = 3; i < req->argc; i++) {
        ss_bytes opt = req->argv[i];
        if (ss_command__word_is(opt, "NX") || ss_command__word_is(opt, "NEX")) {
            if (cmd->cond != SS_COND_NONE)
                return SS_E_SYNTAX;
            cmd->cond = opt.len == 2 ? SS_COND_NX : SS_COND_NEX;
        } else if (ss_command__word_is(opt, "PX")) {
            if (have_px || i + 1 >= req->argc)
                return SS_E_SYNTAX;
            i++;
            int rc = ss_parse_u64(req->argv[i].data, req->argv[i].len, SS_PX_MAX, &cmd->px);
            if (rc != SS_OK || cmd->px == 0)
                return SS_E_SYNTAX;
            have_px = true;
        } else {
            return SS_E_SYNTAX;
        }
    }
    return SS_OK;
}

static int ss_command__parse_vdel(const ss_request *req, ss_command *cmd)
{
    cmd->value = req->argv[2];
    return SS_OK;
}

static int ss_command__parse_keynotify(const ss_request *req, ss_command *cmd)
{
    if (req->argc == 3) {
        if (!ss_command__word_is(req->argv[2], "STOP"))
            return SS_E_SYNTAX;
        cmd->stop = true;
    }
    return SS_OK;
}

static int ss_command__parse_scan(const ss_request *req, ss_command *cmd)
{
    if (req->argc == 3)
        cmd->token = req->argv[2];
    return SS_OK;
}

struct ss_cmd_spec {
    const char *name; /* upper case */
    enum ss_cmd_type type;
    size_t min_argc; /* including the verb */
    size_t max_argc;
    int (*parse)(const ss_request *req, ss_command *cmd); /* NULL: key only */
    ss_command_traits traits;
    int empty; /* the answer to an empty key (argument 1) */
};

/* Everything the server needs to know of a verb, in one place: how it is
 * read, which key access it needs, whether it takes a fencing token or
 * needs a timestamp, and whether a resend gets its first answer. */
static const struct ss_cmd_spec ss_cmd_table[] = {
    /* name, type, arity, parser, {writes, fenced, needs_ts, remembered, held}, empty key */
    {"SET", SS_CMD_SET, 3, SS_REQUEST_MAX_ARGS, ss_command__parse_set, {true, true, true, true, true},
     SS_E_KEY_EMPTY},
    /* A resent GET simply runs again: it answers as any later read would.
     * Held: it may read what its batch wrote. */
    {"GET", SS_CMD_GET, 2, 2, NULL, {false, false, false, false, true}, SS_E_KEY_EMPTY},
    {"DEL", SS_CMD_DEL, 2, 2, NULL, {true, true, false, true, true}, SS_E_KEY_EMPTY},
    {"VDEL", SS_CMD_VDEL, 3, 3, ss_command__parse_vdel, {true, true, false, true, true}, SS_E_KEY_EMPTY},
    /* Remembered: a resent KEYNOTIFY STOP must not turn "+OK" into ":0"
     * (one that registers runs again: ss_command_remembered). Not held: a
     * registration lives in the broker's memory, not in the store, so it
     * took effect when it ran whatever becomes of the commit; an error
     * answer would be untrue. */
    {"KEYNOTIFY", SS_CMD_KEYNOTIFY, 2, 3, ss_command__parse_keynotify, {false, false, false, true, false},
     SS_E_KEY_EMPTY},
    /* SCAN PATTERN [TOKEN]: a read of keys it authorizes one by one; a
     * resend runs again, as a GET does, and like a GET it may read what
     * its batch wrote. */
    {"SCAN", SS_CMD_SCAN, 2, 3, ss_command__parse_scan, {false, false, false, false, true}, SS_E_PATTERN_EMPTY},
};

/* A request that did not parse: its error answer is remembered too. */
static const ss_command_traits ss_cmd_unparsed = {false, false, false, true, true};

const ss_command_traits *ss_command_traits_of(int type)
{
    for (size_t i = 0; i < sizeof ss_cmd_table / sizeof ss_cmd_table[0]; i++)
        if ((int)ss_cmd_table[i].type == type)
            return &ss_cmd_table[i].traits;
    return &ss_cmd_unparsed;
}

bool ss_command_remembered(int type, const ss_command *c)
{
    if (type == SS_CMD_KEYNOTIFY && !c->stop)
        return false;
    return ss_command_traits_of(type)->remembered;
}

int ss_command_parse(const ss_request *req, ss_command *cmd)
{
    if (req->argc == 0)
        return SS_E_SYNTAX;
    const struct ss_cmd_spec *spec = NULL;
    for (size_t i = 0; i < sizeof ss_cmd_table / sizeof ss_cmd_table[0]; i++) {
        if (ss_command__word_is(req->argv[0], ss_cmd_table[i].name)) {
            spec = &ss_cmd_table[i];
            break;
        }
    }
    if (spec == NULL)
        return SS_E_UNKNOWN_COMMAND;
    if (req->argc < spec->min_argc || req->argc > spec->max_argc)
        return SS_E_ARITY;
    ss_command c = {.type = spec->type, .key = req->argv[1]};
    if (c.key.len == 0)
        return spec->empty;
    if (spec->parse != NULL) {
        int rc = spec->parse(req, &c);
        if (rc != SS_OK)
            return rc;
    }
    *cmd = c;
    return SS_OK;
}
