/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* admin.c - administrative requests: KEYS and INSPECT (admin.h). */
#include "admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/codec.h"
#include "../core/errors.h"
#include "../core/hex.h"
#include "../core/protocol.h"
#include "../core/scan.h"
#include "backup.h"
#include "notify.h"
#include "outbox.h"
#include "request.h"
#include "plugin.h"

/* Keys per page by default and at most; keys examined per page at most
 * (a pattern that matches little still answers in bounded time, with a
 * cursor to go on from). */
#define SS_ADMIN_PAGE_DEFAULT 100u
#define SS_ADMIN_PAGE_MAX 1000u
#define SS_ADMIN_EXAMINE_MAX 10000u
/* Longest pattern (with the longest keys, one key's match stays in the
 * millions of steps). */
#define SS_ADMIN_PATTERN_MAX 256u
/* Pattern matching steps per page at most (about 5 ms), whatever the
 * keys and the pattern. */
#define SS_ADMIN_WORK_MAX 5000000u
/* EXPORT: value bytes per page, about (a larger value goes alone). */
#define SS_ADMIN_EXPORT_BYTES ((size_t)1 << 20)
/* Requests waiting for the end of a batch at most. */
#define SS_ADMIN_QUEUE_MAX 256u

struct ss_admin_req {
    uint8_t *payload;
    size_t len;
    char *client_id, *username;
    char *response_topic;
    uint8_t *corr;
    uint16_t corr_len;
};

struct ss_admin {
    struct ss_admin_req *q;
    size_t len, cap;
    ss_buf answer;
    ss_buf cursor;
    bool reading; /* the page of the first request is being read */
    /* the walk of the page so far (it may wait for the chunks of a
     * large value between records) */
    size_t mark;
    size_t got, bytes;
    uint64_t work;
};

/* Not answered yet: the request stays first until its page is read. */
static const char ss_admin__wait[] = "";

int ss_admin_new(struct ss_admin **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? SS_OK : SS_E_NOMEM;
}

static void ss_admin__req_free(struct ss_admin_req *r)
{
    free(r->payload);
    free(r->client_id);
    free(r->username);
    free(r->response_topic);
    free(r->corr);
}

void ss_admin_free(struct ss_admin *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->len; i++)
        ss_admin__req_free(&a->q[i]);
    free(a->q);
    ss_buf_free(&a->answer);
    ss_buf_free(&a->cursor);
    free(a);
}

void ss_admin_reply(struct ss_plugin *p, const char *client_id, const char *response_topic, const uint8_t *corr,
                    uint16_t corr_len, const uint8_t *text, size_t len)
{
    mosquitto_property *props = NULL;
    int rc = mosquitto_property_add_string(&props, MQTT_PROP_CONTENT_TYPE, "application/octet-stream");
    if (rc == MOSQ_ERR_SUCCESS && corr)
        rc = mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, corr_len);
    if (rc != MOSQ_ERR_SUCCESS) {
        mosquitto_property_free_all(&props);
        ss_log(p, MOSQ_LOG_WARNING, "out of memory: an administrative answer was dropped");
        return;
    }
    rc = ss_publish(ss_answer_to(p, client_id), response_topic, text, len, 1, false, props);
    if (rc != MOSQ_ERR_SUCCESS) {
        mosquitto_property_free_all(&props);
        ss_log(p, MOSQ_LOG_WARNING, "could not publish to %s: %s", response_topic, mosquitto_strerror(rc));
    }
}

/* Publish the answer (a->answer) to the request's response topic. */
static void ss_admin__answer(struct ss_plugin *p, const struct ss_admin_req *r, ss_buf *text)
{
    ss_admin_reply(p, r->client_id, r->response_topic, r->corr, r->corr_len, text->data, text->len);
}

/* One entry for key and rec: "key HEXKEY SIZE VERSION TTL_MS|- FT|-\n"
 * (KEYS, INSPECT), or with the value (EXPORT): "rec HEXKEY SIZE VERSION
 * EXPIRES_AT_MS|- FT|-\n", then the value's SIZE bytes as they are and
 * "\n". An export carries the absolute deadline (Unix ms), so that an
 * import keeps it; a listing shows the time left. */
static int ss_admin__entry(ss_buf *b, ss_bytes key, const ss_record *rec, uint64_t now_ms, bool with_value)
{
    char v[SS_HLC_TEXT_MAX], ft[SS_HLC_TEXT_MAX], when[32] = " - ", size[32];
    size_t vlen = ss_hlc_format(&rec->version, v), ftlen = rec->has_ft ? ss_hlc_format(&rec->ft, ft) : 0;
    if (rec->expiry_ms)
        snprintf(when, sizeof when, " %llu ",
                 (unsigned long long)(with_value ? rec->expiry_ms : rec->expiry_ms - now_ms));
    snprintf(size, sizeof size, " %zu ", rec->value.len);
    int rc = ss_buf_append_str(b, with_value ? "rec " : "key ");
    if (rc == SS_OK)
        rc = ss_hex_append(b, key.data, key.len, false);
    if (rc == SS_OK)
        rc = ss_buf_append_str(b, size);
    /* The version's and the token's node ids may hold spaces (a client
     * chooses its token's; the configured node id is any UTF-8 without
     * ':'): escaped, so that the fields stay apart. */
    if (rc == SS_OK)
        rc = ss_hex_field_append(b, (const uint8_t *)v, vlen);
    if (rc == SS_OK)
        rc = ss_buf_append_str(b, when);
    if (rc == SS_OK)
        rc = rec->has_ft ? ss_hex_field_append(b, (const uint8_t *)ft, ftlen) : ss_buf_append_str(b, "-");
    if (rc == SS_OK)
        rc = ss_buf_append_str(b, "\n");
    if (rc == SS_OK && with_value)
        rc = ss_buf_append(b, rec->value.data, rec->value.len);
    if (rc == SS_OK && with_value)
        rc = ss_buf_append_str(b, "\n");
    return rc;
}

static bool ss_admin__may_read(struct ss_plugin *p, const struct ss_admin_req *r, ss_bytes key)
{
    return p->acl == NULL || ss_acl_allows(p->acl, r->client_id, r->username, SS_ACCESS_READ, key);
}

struct ss_admin_page {
    struct ss_plugin *p;
    const struct ss_admin_req *r;
    ss_bytes pattern;
    uint64_t now_ms;
    size_t want, got;
    int rc;
    bool values;  /* EXPORT: records with their values */
    size_t bytes; /* EXPORT: value bytes in the page so far */
    uint64_t work; /* pattern matching steps so far, at most (key x pattern) */
};

static bool ss_admin__visit(void *ctx, ss_bytes key, const ss_record *rec)
{
    struct ss_admin_page *pg = ctx;
    /* The matcher takes up to len(key) x len(pattern) steps: a page stops
     * after SS_ADMIN_WORK_MAX of them, with a cursor to go on from (this
     * key is done first: the cursor names it as seen). */
    pg->work += (uint64_t)(key.len + 1) * (pg->pattern.len + 1);
    bool budget = pg->work <= SS_ADMIN_WORK_MAX;
    if (rec->expiry_ms && rec->expiry_ms <= pg->now_ms)
        return budget; /* expired: absent, whatever the sweep has done */
    if (!ss_glob_match((const char *)pg->pattern.data, pg->pattern.len, key.data, key.len) ||
        !ss_admin__may_read(pg->p, pg->r, key))
        return budget;
    if (pg->values) {
        pg->rc = ss_admin__entry(&pg->p->admin->answer, key, rec, pg->now_ms, true);
        pg->bytes += rec->value.len;
        /* A page carries about SS_ADMIN_EXPORT_BYTES of values (one
         * record at least, however large). */
        return pg->rc == SS_OK && ++pg->got < pg->want && pg->bytes < SS_ADMIN_EXPORT_BYTES && budget;
    }
    pg->rc = ss_admin__entry(&pg->p->admin->answer, key, rec, pg->now_ms, false);
    return pg->rc == SS_OK && ++pg->got < pg->want && budget;
}

/* The cursor a KEYS or EXPORT answer gives to go on from, as SCAN's
 * tokens are (core/scan.h): the key to start after, sealed under the
 * store's token key and bound to the pattern. Plain, it would name a key
 * the client may not read (the last one a page looked at), and a cursor
 * of the client's choosing would let it probe for such names. Hex of the
 * token into out; 0 or an error. */
static int ss_admin__cursor_seal(ss_backend *be, ss_bytes pattern, ss_bytes next, ss_buf *out)
{
    uint8_t tkey[16];
    ss_buf token = SS_BUF_INIT;
    int rc = be->ops->token_key(be->impl, tkey);
    if (rc == SS_OK)
        rc = ss_scan_token_encode(tkey, pattern, next, &token);
    if (rc == SS_OK)
        rc = ss_hex_append(out, token.data, token.len, false);
    ss_buf_free(&token);
    return rc;
}

/* A cursor (hex text) back into the key to start after (into *after). */
static int ss_admin__cursor_open(ss_backend *be, ss_bytes pattern, ss_bytes hex, ss_buf *after)
{
    uint8_t tkey[16];
    ss_buf token = SS_BUF_INIT;
    int rc = ss_hex_decode(&token, (const char *)hex.data, hex.len);
    if (rc == SS_OK)
        rc = be->ops->token_key(be->impl, tkey);
    if (rc == SS_OK)
        rc = ss_scan_token_decode(tkey, pattern, (ss_bytes){token.data, token.len}, after);
    ss_buf_free(&token);
    return rc == SS_E_SYNTAX ? SS_E_TOKEN_INVALID : rc;
}

/* KEYS (or EXPORT, values too) PATTERN CURSOR COUNT into a->answer. */
static const char *ss_admin__keys(struct ss_plugin *p, const struct ss_admin_req *r, const ss_request *q,
                                  uint64_t now_ms, bool values)
{
    struct ss_admin *a = p->admin;
    uint64_t count = SS_ADMIN_PAGE_DEFAULT;
    if (q->argc != 4)
        return values ? "usage: EXPORT PATTERN CURSOR COUNT (CURSOR: from the last answer, empty to start)"
                      : "usage: KEYS PATTERN CURSOR COUNT (CURSOR: from the last answer, empty to start)";
    /* (A page that waited for its read goes on from where it began.) */
    if (!a->reading)
        ss_buf_clear(&a->cursor);
    if (!a->reading && q->argv[2].len) {
        int crc = ss_admin__cursor_open(p->backend, q->argv[1], q->argv[2], &a->cursor);
        if (crc == SS_E_TOKEN_INVALID)
            return "CURSOR is not one that an answer for this PATTERN gave";
        if (crc != SS_OK)
            return ss_strerror(crc);
    }
    if (q->argv[3].len && ss_parse_u64(q->argv[3].data, q->argv[3].len, SS_ADMIN_PAGE_MAX, &count) != SS_OK)
        return "COUNT must be a number from 1 to 1000";
    if (count == 0)
        return "COUNT must be a number from 1 to 1000";
    if (q->argv[1].len > SS_ADMIN_PATTERN_MAX)
        return "a PATTERN has at most 256 bytes";
    struct ss_admin_page pg = {p, r, q->argv[1], now_ms, (size_t)count, 0, SS_OK, values, 0, 0};
    ss_buf next = SS_BUF_INIT;
    size_t mark = a->answer.len;
    if (a->reading) { /* the walk goes on where it waited */
        mark = a->mark;
        pg.got = a->got;
        pg.bytes = a->bytes;
        pg.work = a->work;
    }
    /* The cursor line comes first: leave room, fill it in after. */
    ss_bytes after = {a->cursor.data, a->cursor.len};
    size_t examine = count * 10 < SS_ADMIN_EXAMINE_MAX ? count * 10 : SS_ADMIN_EXAMINE_MAX;
    int rc;
    ss_backend *be = p->backend;
    if (!a->reading) { /* the page is asked for, then visited once read */
        if ((rc = be->ops->page_start(be->impl, after, false, examine, values)) != SS_OK)
            return ss_strerror(rc);
        a->reading = true;
        a->mark = mark;
        a->got = a->bytes = 0;
        a->work = 0;
    }
    if (be->ops->page_done(be->impl, ss_admin__visit, &pg, &next, &rc)) {
        a->reading = false;
    } else {
        a->got = pg.got;
        a->bytes = pg.bytes;
        a->work = pg.work;
        return ss_admin__wait;
    }
    if (rc == SS_OK)
        rc = pg.rc;
    if (rc != SS_OK) {
        ss_buf_free(&next);
        a->answer.len = mark;
        return ss_strerror(rc);
    }
    ss_buf lines = a->answer;
    a->answer = (ss_buf)SS_BUF_INIT;
    rc = ss_buf_append_str(&a->answer, "cursor ");
    if (rc == SS_OK)
        rc = next.len ? ss_admin__cursor_seal(p->backend, q->argv[1], (ss_bytes){next.data, next.len}, &a->answer)
                      : ss_buf_append_str(&a->answer, "-");
    if (rc == SS_OK)
        rc = ss_buf_append_str(&a->answer, "\n");
    if (rc == SS_OK)
        rc = ss_buf_append(&a->answer, lines.data, lines.len);
    ss_buf_free(&lines);
    ss_buf_free(&next);
    return rc == SS_OK ? NULL : ss_strerror(rc);
}

/* The one record INSPECT reads: a page of one from the key. */
struct ss_admin_one {
    ss_bytes key;
    ss_buf *answer;
    uint64_t now_ms;
    int rc;
    bool found;
};

static bool ss_admin__one(void *ctx, ss_bytes key, const ss_record *rec)
{
    struct ss_admin_one *o = ctx;
    if (key.len == o->key.len && memcmp(key.data, o->key.data, key.len) == 0 &&
        !(rec->expiry_ms && rec->expiry_ms <= o->now_ms)) {
        o->found = true;
        o->rc = ss_admin__entry(o->answer, key, rec, o->now_ms, false);
    }
    return false;
}

static const char *ss_admin__inspect_page(struct ss_plugin *p, ss_bytes key, uint64_t now_ms)
{
    struct ss_admin *a = p->admin;
    ss_backend *be = p->backend;
    int rc;
    if (!a->reading) {
        if ((rc = be->ops->page_start(be->impl, key, true, 1, false)) != SS_OK)
            return ss_strerror(rc);
        a->reading = true;
    }
    struct ss_admin_one one = {key, &a->answer, now_ms, SS_OK, false};
    ss_buf next = SS_BUF_INIT;
    if (!be->ops->page_done(be->impl, ss_admin__one, &one, &next, &rc))
        return ss_admin__wait;
    a->reading = false;
    ss_buf_free(&next);
    if (rc == SS_OK)
        rc = one.found ? one.rc : ss_buf_append_str(&a->answer, "absent\n");
    return rc == SS_OK ? NULL : ss_strerror(rc);
}

/* INSPECT KEY into a->answer. */
static const char *ss_admin__inspect(struct ss_plugin *p, const struct ss_admin_req *r, const ss_request *q,
                                     uint64_t now_ms)
{
    if (q->argc != 2)
        return "usage: INSPECT KEY";
    if (q->argv[1].len == 0) /* as GET of it answers */
        return ss_strerror(SS_E_KEY_EMPTY);
    ss_bytes key = q->argv[1];
    /* Asked once, before its page is read: a refusal on a later pass (the
     * rules reloaded meanwhile) would leave the page under way for the
     * next request to take as its own. */
    if (!p->admin->reading && !ss_admin__may_read(p, r, key))
        return ss_strerror(SS_E_NOT_AUTHORIZED);
    return ss_admin__inspect_page(p, key, now_ms);
}

/* BACKUP NAME: answered when the copy is done (backup.h). Under a key
 * ACL, only a client with a rule for every key (pattern "*") may copy
 * them all. */
static const char *ss_admin__backup(struct ss_plugin *p, const struct ss_admin_req *r, const ss_request *q)
{
    if (q->argc != 2)
        return "usage: BACKUP NAME";
    if (p->acl && !ss_acl_allows_every_key(p->acl, r->client_id, r->username, SS_ACCESS_READ))
        return ss_strerror(SS_E_NOT_AUTHORIZED);
    const char *error =
        ss_backup_start(p, q->argv[1].data, q->argv[1].len, r->client_id, r->response_topic, r->corr, r->corr_len);
    if (error == NULL)
        ss_buf_clear(&p->admin->answer); /* nothing now: the backup answers */
    return error;
}

/* Run r; false when it waits for a page being read (backend.h: page_done). */
static bool ss_admin__run(struct ss_plugin *p, const struct ss_admin_req *r, uint64_t now_ms)
{
    struct ss_admin *a = p->admin;
    if (!a->reading) /* a walk that waited keeps its lines */
        ss_buf_clear(&a->answer);
    ss_request q;
    size_t used;
    const char *error = NULL;
    ss_codec_limits lim = ss_codec_limits_default();
    if (ss_codec_decode_request(r->payload, r->len, &lim, &q, &used) != SS_OK || used != r->len || q.argc < 1)
        error = "syntax error: a RESP3 array of bulk strings is expected";
    else if (q.argv[0].len == 4 && memcmp(q.argv[0].data, "KEYS", 4) == 0)
        error = ss_admin__keys(p, r, &q, now_ms, false);
    else if (q.argv[0].len == 6 && memcmp(q.argv[0].data, "EXPORT", 6) == 0)
        error = ss_admin__keys(p, r, &q, now_ms, true);
    else if (q.argv[0].len == 7 && memcmp(q.argv[0].data, "INSPECT", 7) == 0)
        error = ss_admin__inspect(p, r, &q, now_ms);
    else if (q.argv[0].len == 6 && memcmp(q.argv[0].data, "BACKUP", 6) == 0)
        error = ss_admin__backup(p, r, &q);
    else
        error = "unknown command (KEYS, INSPECT, EXPORT, BACKUP, WATCH)";
    if (error == ss_admin__wait)
        return false;
    if (error) {
        ss_buf_clear(&a->answer);
        if (ss_buf_append_str(&a->answer, "error ") != SS_OK || ss_buf_append_str(&a->answer, error) != SS_OK ||
            ss_buf_append_str(&a->answer, "\n") != SS_OK)
            return true;
    }
    if (a->answer.len)
        ss_admin__answer(p, r, &a->answer);
    return true;
}

void ss_admin_serve(struct ss_plugin *p)
{
    /* One request per call (each settle): a queue of them never holds
     * the broker's thread for more than one page's work at a time. */
    struct ss_admin *a = p->admin;
    if (a->len == 0)
        return;
    if (!ss_admin__run(p, &a->q[0], ss_wall_ms())) /* read only with work to do: settle runs every tick */
        return; /* its page is being read: it stays first */
    ss_admin__req_free(&a->q[0]);
    memmove(&a->q[0], &a->q[1], (a->len - 1) * sizeof a->q[0]);
    a->len--;
    if (a->answer.cap > ((size_t)64 << 10))
        ss_buf_free(&a->answer);
}

static char *ss_admin__dup(const char *s, bool *failed)
{
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    *failed = *failed || d == NULL;
    return d;
}

int ss_admin_on_message(struct ss_plugin *p, struct mosquitto_evt_message *ed)
{
    struct ss_admin *a = p->admin;
    ed->retain = false;
    const char *client_id = mosquitto_client_id(ed->client);
    struct ss_admin_req r = {0};
    for (const mosquitto_property *pr = ed->properties; pr; pr = mosquitto_property_next(pr)) {
        int id = mosquitto_property_identifier(pr);
        if (id == MQTT_PROP_RESPONSE_TOPIC && r.response_topic == NULL)
            mosquitto_property_read_string(pr, MQTT_PROP_RESPONSE_TOPIC, &r.response_topic, false);
        else if (id == MQTT_PROP_CORRELATION_DATA && r.corr == NULL)
            mosquitto_property_read_binary(pr, MQTT_PROP_CORRELATION_DATA, (void **)&r.corr, &r.corr_len, false);
    }
    /* No answer can go out without a usable response topic: nothing to
     * run. The store's own topics are no place for it either. */
    if (!ss_request_usable_topic(r.response_topic) || ss_request_forbidden_topic(r.response_topic) ||
        strcmp(r.response_topic, SS_ADMIN_TOPIC) == 0) {
        ss_log(p, MOSQ_LOG_WARNING, "client %s: administrative request without a usable response topic ignored",
               client_id ? client_id : "");
        ss_admin__req_free(&r);
        return MOSQ_ERR_ACL_DENIED;
    }
    /* WATCH takes effect at once, while its client is surely connected
     * (a disconnect drops its patterns from then on); it reads nothing. */
    ss_request words;
    size_t used;
    ss_codec_limits lim = ss_codec_limits_default();
    if (ss_codec_decode_request(ed->payload, (size_t)ed->payloadlen, &lim, &words, &used) == SS_OK &&
        used == (size_t)ed->payloadlen && words.argc >= 1 && words.argv[0].len == 5 &&
        memcmp(words.argv[0].data, "WATCH", 5) == 0) {
        char text[256];
        size_t n = ss_notify_on_watch(p, client_id ? client_id : "", mosquitto_client_username(ed->client), &words,
                                      text, sizeof text);
        ss_admin_reply(p, client_id ? client_id : "", r.response_topic, r.corr, r.corr_len, (const uint8_t *)text,
                       n);
        ss_admin__req_free(&r);
        return MOSQ_ERR_SUCCESS;
    }
    bool failed = false;
    r.client_id = ss_admin__dup(client_id ? client_id : "", &failed);
    r.username = ss_admin__dup(mosquitto_client_username(ed->client), &failed);
    r.payload = malloc(ed->payloadlen ? (size_t)ed->payloadlen : 1);
    if (r.payload && ed->payloadlen) /* an empty payload is NULL */
        memcpy(r.payload, ed->payload, (size_t)ed->payloadlen);
    r.len = (size_t)ed->payloadlen;
    if (a->len == a->cap && a->cap < SS_ADMIN_QUEUE_MAX) {
        size_t cap = a->cap ? a->cap * 2 : 8;
        struct ss_admin_req *q = realloc(a->q, cap * sizeof *q);
        if (q) {
            a->q = q;
            a->cap = cap;
        }
    }
    if (failed || r.payload == NULL || a->len == a->cap) {
        const char *why = failed || r.payload == NULL ? "error out of memory\n"
                                                      : "error busy: too many administrative requests\n";
        ss_admin_reply(p, client_id ? client_id : "", r.response_topic, r.corr, r.corr_len, (const uint8_t *)why,
                       strlen(why));
        ss_admin__req_free(&r);
        return MOSQ_ERR_ACL_DENIED;
    }
    a->q[a->len++] = r;
    return MOSQ_ERR_SUCCESS; /* nobody may subscribe to it (protect.c) */
}
