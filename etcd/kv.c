/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* kv.c - etcd's KV messages (kv.h), with the protobuf-c code generated
 * from etcd's own .proto files. */
#include "kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb-c.h"

enum ss_etcd_item_kind {
    SS_ETCD_EXPECT,
    SS_ETCD_EXPECT_BELOW,
    SS_ETCD_EXPECT_PRESENT,
    SS_ETCD_PUT,
    SS_ETCD_DELETE,
    SS_ETCD_GET,
    SS_ETCD_FAILURE_GET
};

/* Offsets into t->bytes: it moves when it grows. */
struct ss_etcd_txn_item {
    enum ss_etcd_item_kind kind;
    size_t key_off, key_len, value_off, value_len;
    int64_t rev;   /* SS_ETCD_EXPECT, SS_ETCD_EXPECT_BELOW */
    int64_t lease; /* SS_ETCD_PUT: 0 for none */
};

static ProtobufCBinaryData ss_etcd__bin(ss_bytes b)
{
    ProtobufCBinaryData d = {b.len, (uint8_t *)b.data};
    return d;
}

/* Pack any message into out. */
static int ss_etcd__pack(const ProtobufCMessage *m, ss_buf *out)
{
    ss_buf_clear(out);
    size_t n = protobuf_c_message_get_packed_size(m);
    int rc = ss_buf_reserve(out, n ? n : 1);
    if (rc != SS_OK)
        return rc;
    out->len = protobuf_c_message_pack(m, out->data);
    return SS_OK;
}

int ss_etcd_range_pack(ss_buf *out, ss_bytes key, bool serializable)
{
    Etcdserverpb__RangeRequest r = ETCDSERVERPB__RANGE_REQUEST__INIT;
    r.key = ss_etcd__bin(key);
    r.serializable = serializable;
    return ss_etcd__pack(&r.base, out);
}

int ss_etcd_range_at_pack(ss_buf *out, ss_bytes key, int64_t revision)
{
    Etcdserverpb__RangeRequest r = ETCDSERVERPB__RANGE_REQUEST__INIT;
    r.key = ss_etcd__bin(key);
    r.revision = revision;
    return ss_etcd__pack(&r.base, out);
}

int ss_etcd_range_keys_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t limit, bool serializable)
{
    Etcdserverpb__RangeRequest r = ETCDSERVERPB__RANGE_REQUEST__INIT;
    r.key = ss_etcd__bin(key);
    r.range_end = ss_etcd__bin(end);
    r.limit = limit;
    r.keys_only = true;
    r.serializable = serializable;
    return ss_etcd__pack(&r.base, out);
}

int ss_etcd_range_all_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t limit)
{
    return ss_etcd_range_all_at_pack(out, key, end, limit, 0);
}

int ss_etcd_range_all_at_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t limit, int64_t revision)
{
    Etcdserverpb__RangeRequest r = ETCDSERVERPB__RANGE_REQUEST__INIT;
    r.key = ss_etcd__bin(key);
    r.range_end = ss_etcd__bin(end);
    r.limit = limit;
    r.revision = revision;
    return ss_etcd__pack(&r.base, out);
}

static void ss_etcd__kv(const Mvccpb__KeyValue *m, ss_etcd_kv *kv)
{
    kv->found = true;
    kv->value.data = m->value.data;
    kv->value.len = m->value.len;
    kv->mod_revision = m->mod_revision;
    kv->create_revision = m->create_revision;
}

int ss_etcd_range_unpack_all(const ss_buf *reply, ss_etcd_reply *r, size_t *n)
{
    memset(r, 0, sizeof *r);
    *n = 0;
    Etcdserverpb__RangeResponse *m = etcdserverpb__range_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    r->msg = m;
    r->revision = m->header ? m->header->revision : 0;
    r->count = m->count;
    *n = m->n_kvs;
    return SS_OK;
}

void ss_etcd_range_kv(const ss_etcd_reply *r, size_t i, ss_etcd_kv *kv, ss_bytes *key)
{
    const Etcdserverpb__RangeResponse *m = r->msg;
    ss_etcd__kv(m->kvs[i], kv);
    key->data = m->kvs[i]->key.data;
    key->len = m->kvs[i]->key.len;
}

int ss_etcd_range_unpack(const ss_buf *reply, ss_etcd_reply *r, ss_etcd_kv *kv)
{
    memset(kv, 0, sizeof *kv);
    size_t n;
    int rc = ss_etcd_range_unpack_all(reply, r, &n);
    if (rc == SS_OK && n > 1) {
        ss_etcd_reply_free(r);
        return SS_E_PROTOCOL;
    }
    if (rc == SS_OK && n == 1) {
        ss_bytes key;
        ss_etcd_range_kv(r, 0, kv, &key);
    }
    return rc;
}

int ss_etcd_txn_unpack(const ss_buf *reply, ss_etcd_reply *r, ss_etcd_kv *kv)
{
    memset(r, 0, sizeof *r);
    if (kv)
        memset(kv, 0, sizeof *kv);
    Etcdserverpb__TxnResponse *m = etcdserverpb__txn_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    r->msg = m;
    r->revision = m->header ? m->header->revision : 0;
    r->succeeded = m->succeeded;
    /* The failure branch's one Range, if it had one. A response is a
     * oneof (a union in protobuf-c): anything but a Range there is not
     * what was asked, and reading it as one would follow another
     * member's fields as pointers. */
    if (kv && !m->succeeded && m->n_responses == 1) {
        const Etcdserverpb__ResponseOp *op = m->responses[0];
        if (op->response_case != ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_RANGE ||
            op->response_range == NULL || op->response_range->n_kvs > 1) {
            ss_etcd_reply_free(r);
            return SS_E_PROTOCOL;
        }
        if (op->response_range->n_kvs == 1)
            ss_etcd__kv(op->response_range->kvs[0], kv);
    }
    return SS_OK;
}

void ss_etcd_reply_free(ss_etcd_reply *r)
{
    if (r->msg)
        protobuf_c_message_free_unpacked(r->msg, NULL);
    memset(r, 0, sizeof *r);
}

int ss_etcd_status_unpack(const ss_buf *reply, uint64_t *leader, char *version, size_t version_len)
{
    Etcdserverpb__StatusResponse *m = etcdserverpb__status_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    *leader = m->leader;
    if (version_len)
        snprintf(version, version_len, "%s", m->version ? m->version : "");
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return SS_OK;
}

uint64_t ss_etcd_status_member(const ss_buf *reply)
{
    Etcdserverpb__StatusResponse *m = etcdserverpb__status_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return 0;
    uint64_t id = m->header ? m->header->member_id : 0;
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return id;
}

int ss_etcd_status_read(const ss_buf *reply, ss_etcd_status *out)
{
    Etcdserverpb__StatusResponse *m = etcdserverpb__status_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    memset(out, 0, sizeof *out);
    out->member = m->header ? m->header->member_id : 0;
    out->leader = m->leader;
    snprintf(out->version, sizeof out->version, "%s", m->version ? m->version : "");
    out->db_size = m->dbsize > 0 ? (uint64_t)m->dbsize : 0;
    out->raft_term = m->raftterm;
    out->raft_index = m->raftindex;
    out->learner = m->islearner;
    out->nerrors = m->n_errors;
    if (m->n_errors > 0 && m->errors[0])
        snprintf(out->error, sizeof out->error, "%s", m->errors[0]);
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return SS_OK;
}

/* ---- Txn ---------------------------------------------------------------- */

static int ss_etcd__add(ss_etcd_txn *t, enum ss_etcd_item_kind kind, ss_bytes key, ss_bytes value,
                        int64_t rev)
{
    if (t->len == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        struct ss_etcd_txn_item *items = realloc(t->items, cap * sizeof *items);
        if (items == NULL)
            return SS_E_NOMEM;
        t->items = items;
        t->cap = cap;
    }
    size_t mark = t->bytes.len;
    struct ss_etcd_txn_item *it = &t->items[t->len];
    it->kind = kind;
    it->rev = rev;
    it->lease = 0;
    it->key_off = t->bytes.len;
    it->key_len = key.len;
    int rc = ss_buf_append(&t->bytes, key.data, key.len);
    it->value_off = t->bytes.len;
    it->value_len = value.len;
    if (rc == SS_OK && value.len)
        rc = ss_buf_append(&t->bytes, value.data, value.len);
    if (rc != SS_OK) {
        t->bytes.len = mark;
        return rc;
    }
    t->len++;
    return SS_OK;
}

int ss_etcd_txn_expect(ss_etcd_txn *t, ss_bytes key, int64_t rev)
{
    ss_bytes none = {NULL, 0};
    return ss_etcd__add(t, SS_ETCD_EXPECT, key, none, rev);
}

int ss_etcd_txn_expect_below(ss_etcd_txn *t, ss_bytes key, ss_bytes end, int64_t rev)
{
    /* The range's end travels as the item's value. */
    return ss_etcd__add(t, SS_ETCD_EXPECT_BELOW, key, end, rev);
}

int ss_etcd_txn_expect_present(ss_etcd_txn *t, ss_bytes key)
{
    ss_bytes none = {NULL, 0};
    return ss_etcd__add(t, SS_ETCD_EXPECT_PRESENT, key, none, 0);
}

int ss_etcd_txn_put(ss_etcd_txn *t, ss_bytes key, ss_bytes value)
{
    return ss_etcd__add(t, SS_ETCD_PUT, key, value, 0);
}

int ss_etcd_txn_put_leased(ss_etcd_txn *t, ss_bytes key, ss_bytes value, int64_t lease)
{
    int rc = ss_etcd__add(t, SS_ETCD_PUT, key, value, 0);
    if (rc == SS_OK)
        t->items[t->len - 1].lease = lease;
    return rc;
}

int ss_etcd_txn_get(ss_etcd_txn *t, ss_bytes key)
{
    ss_bytes none = {NULL, 0};
    return ss_etcd__add(t, SS_ETCD_GET, key, none, 0);
}

int ss_etcd_txn_on_failure_get(ss_etcd_txn *t, ss_bytes key)
{
    ss_bytes none = {NULL, 0};
    return ss_etcd__add(t, SS_ETCD_FAILURE_GET, key, none, 0);
}

int ss_etcd_txn_delete(ss_etcd_txn *t, ss_bytes key)
{
    ss_bytes none = {NULL, 0};
    return ss_etcd__add(t, SS_ETCD_DELETE, key, none, 0);
}

int ss_etcd_txn_delete_range(ss_etcd_txn *t, ss_bytes key, ss_bytes end)
{
    /* The range's end travels as the item's value. */
    return ss_etcd__add(t, SS_ETCD_DELETE, key, end, 0);
}

size_t ss_etcd_txn_ops(const ss_etcd_txn *t)
{
    return t->len;
}

int ss_etcd_txn_pack(const ss_etcd_txn *t, ss_buf *out)
{
    size_t n = t->len ? t->len : 1;
    /* All the message structs of one Txn in one allocation each. */
    Etcdserverpb__Compare *cmp = calloc(n, sizeof *cmp);
    Etcdserverpb__Compare **cmpp = calloc(n, sizeof *cmpp);
    Etcdserverpb__RequestOp *ops = calloc(n, sizeof *ops);
    Etcdserverpb__RequestOp **opsp = calloc(n, sizeof *opsp);
    Etcdserverpb__PutRequest *puts = calloc(n, sizeof *puts);
    Etcdserverpb__DeleteRangeRequest *dels = calloc(n, sizeof *dels);
    Etcdserverpb__RangeRequest *gets = calloc(n, sizeof *gets);
    Etcdserverpb__RangeRequest failure_get = ETCDSERVERPB__RANGE_REQUEST__INIT;
    Etcdserverpb__RequestOp failure_op = ETCDSERVERPB__REQUEST_OP__INIT;
    Etcdserverpb__RequestOp *failure_ops[1] = {&failure_op};
    int rc = SS_E_NOMEM;
    if (cmp && cmpp && ops && opsp && puts && dels && gets) {
        Etcdserverpb__TxnRequest txn = ETCDSERVERPB__TXN_REQUEST__INIT;
        for (size_t i = 0; i < t->len; i++) {
            const struct ss_etcd_txn_item *it = &t->items[i];
            ss_bytes key = {t->bytes.data + it->key_off, it->key_len};
            ss_bytes value = {t->bytes.data + it->value_off, it->value_len};
            if (it->kind == SS_ETCD_EXPECT) {
                Etcdserverpb__Compare *c = &cmp[txn.n_compare];
                etcdserverpb__compare__init(c);
                c->key = ss_etcd__bin(key);
                c->result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL;
                /* An absent key has create_revision 0; a present one the
                 * mod_revision it was read at. */
                if (it->rev == 0) {
                    c->target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE;
                    c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION;
                    c->create_revision = 0;
                } else {
                    c->target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD;
                    c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
                    c->mod_revision = it->rev;
                }
                cmpp[txn.n_compare++] = c;
                continue;
            }
            if (it->kind == SS_ETCD_EXPECT_BELOW) {
                /* Every key of [key, end) has mod_revision < rev; a range
                 * without keys holds (etcd compares an empty record). */
                Etcdserverpb__Compare *c = &cmp[txn.n_compare];
                etcdserverpb__compare__init(c);
                c->key = ss_etcd__bin(key);
                c->range_end = ss_etcd__bin(value);
                c->result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__LESS;
                c->target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD;
                c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_MOD_REVISION;
                c->mod_revision = it->rev;
                cmpp[txn.n_compare++] = c;
                continue;
            }
            if (it->kind == SS_ETCD_EXPECT_PRESENT) {
                /* create_revision > 0: an absent key compares as an
                 * empty record, whose create_revision is 0. */
                Etcdserverpb__Compare *c = &cmp[txn.n_compare];
                etcdserverpb__compare__init(c);
                c->key = ss_etcd__bin(key);
                c->result = ETCDSERVERPB__COMPARE__COMPARE_RESULT__GREATER;
                c->target = ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE;
                c->target_union_case = ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION;
                c->create_revision = 0;
                cmpp[txn.n_compare++] = c;
                continue;
            }
            if (it->kind == SS_ETCD_FAILURE_GET) {
                failure_get.key = ss_etcd__bin(key);
                failure_op.request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE;
                failure_op.request_range = &failure_get;
                txn.failure = failure_ops;
                txn.n_failure = 1;
                continue;
            }
            Etcdserverpb__RequestOp *op = &ops[txn.n_success];
            etcdserverpb__request_op__init(op);
            if (it->kind == SS_ETCD_GET) {
                etcdserverpb__range_request__init(&gets[i]);
                gets[i].key = ss_etcd__bin(key);
                op->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE;
                op->request_range = &gets[i];
            } else if (it->kind == SS_ETCD_PUT) {
                etcdserverpb__put_request__init(&puts[i]);
                puts[i].key = ss_etcd__bin(key);
                puts[i].value = ss_etcd__bin(value);
                puts[i].lease = it->lease;
                op->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT;
                op->request_put = &puts[i];
            } else {
                etcdserverpb__delete_range_request__init(&dels[i]);
                dels[i].key = ss_etcd__bin(key);
                if (value.len)
                    dels[i].range_end = ss_etcd__bin(value);
                op->request_case = ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_DELETE_RANGE;
                op->request_delete_range = &dels[i];
            }
            opsp[txn.n_success++] = op;
        }
        txn.compare = cmpp;
        txn.success = opsp;
        rc = ss_etcd__pack(&txn.base, out);
    }
    free(cmp);
    free(cmpp);
    free(ops);
    free(opsp);
    free(puts);
    free(dels);
    free(gets);
    return rc;
}

int ss_etcd_cas_pack(ss_buf *out, ss_bytes key, int64_t rev, ss_bytes value, int64_t lease)
{
    ss_etcd_txn t = {0};
    int rc = ss_etcd_txn_expect(&t, key, rev);
    if (rc == SS_OK)
        rc = ss_etcd_txn_put_leased(&t, key, value, lease);
    if (rc == SS_OK)
        rc = ss_etcd_txn_on_failure_get(&t, key);
    if (rc == SS_OK)
        rc = ss_etcd_txn_pack(&t, out);
    ss_etcd_txn_free(&t);
    return rc;
}

void ss_etcd_txn_clear(ss_etcd_txn *t)
{
    t->len = 0;
    ss_buf_clear(&t->bytes);
}

void ss_etcd_txn_free(ss_etcd_txn *t)
{
    free(t->items);
    ss_buf_free(&t->bytes);
    memset(t, 0, sizeof *t);
}

/* ---- leases ------------------------------------------------------------ */

int ss_etcd_lease_grant_pack(ss_buf *out, int64_t ttl)
{
    Etcdserverpb__LeaseGrantRequest r = ETCDSERVERPB__LEASE_GRANT_REQUEST__INIT;
    r.ttl = ttl;
    return ss_etcd__pack(&r.base, out);
}

int ss_etcd_lease_grant_unpack(const ss_buf *reply, int64_t *id, int64_t *ttl)
{
    Etcdserverpb__LeaseGrantResponse *m =
        etcdserverpb__lease_grant_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    *id = m->id;
    *ttl = m->ttl;
    bool refused = m->error && m->error[0];
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return refused || *id == 0 ? SS_E_PROTOCOL : SS_OK;
}

/* LeaseKeepAliveRequest and LeaseRevokeRequest both carry only the id
 * (field 1), so they pack alike. */
int ss_etcd_lease_id_pack(ss_buf *out, int64_t id)
{
    Etcdserverpb__LeaseKeepAliveRequest r = ETCDSERVERPB__LEASE_KEEP_ALIVE_REQUEST__INIT;
    r.id = id;
    return ss_etcd__pack(&r.base, out);
}

int ss_etcd_lease_keepalive_unpack(const ss_buf *reply, int64_t *ttl)
{
    Etcdserverpb__LeaseKeepAliveResponse *m =
        etcdserverpb__lease_keep_alive_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    *ttl = m->ttl;
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return SS_OK;
}

/* ---- authentication ---------------------------------------------------- */

int ss_etcd_authenticate_pack(ss_buf *out, const char *name, const char *password)
{
    Etcdserverpb__AuthenticateRequest r = ETCDSERVERPB__AUTHENTICATE_REQUEST__INIT;
    r.name = (char *)name;
    r.password = (char *)password;
    return ss_etcd__pack(&r.base, out);
}

int ss_etcd_authenticate_unpack(const ss_buf *reply, char *token, size_t token_len)
{
    Etcdserverpb__AuthenticateResponse *m =
        etcdserverpb__authenticate_response__unpack(NULL, reply->len, reply->data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    /* No token: refused. One too long to keep is not the password's fault:
     * a limit of this client. */
    int rc = m->token == NULL ? SS_E_INVAL : strlen(m->token) < token_len ? SS_OK : SS_E_LIMIT;
    if (rc == SS_OK)
        snprintf(token, token_len, "%s", m->token);
    protobuf_c_message_free_unpacked(&m->base, NULL);
    return rc;
}

int ss_etcd_watch_pack(ss_buf *out, ss_bytes key, ss_bytes end, int64_t start_revision)
{
    Etcdserverpb__WatchCreateRequest c = ETCDSERVERPB__WATCH_CREATE_REQUEST__INIT;
    c.key = ss_etcd__bin(key);
    c.range_end = ss_etcd__bin(end);
    c.start_revision = start_revision;
    c.progress_notify = true;
    /* A backlog of revisions is sent in pieces no larger than etcd's
     * --max-request-bytes, rather than in one message of up to ~1000
     * revisions: with large values that passed the client's largest
     * message, and the watch, reset, was sent the same message again for
     * good. */
    c.fragment = true;
    Etcdserverpb__WatchRequest r = ETCDSERVERPB__WATCH_REQUEST__INIT;
    r.request_union_case = ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_CREATE_REQUEST;
    r.create_request = &c;
    return ss_etcd__pack(&r.base, out);
}

int ss_etcd_watch_unpack(ss_bytes msg, ss_etcd_watch *w)
{
    memset(w, 0, sizeof *w);
    Etcdserverpb__WatchResponse *m = etcdserverpb__watch_response__unpack(NULL, msg.len, msg.data);
    if (m == NULL)
        return SS_E_PROTOCOL;
    w->msg = m;
    w->revision = m->header ? m->header->revision : 0;
    w->created = m->created;
    w->canceled = m->canceled;
    w->compact_revision = m->compact_revision;
    w->cancel_reason = m->cancel_reason ? m->cancel_reason : "";
    w->n_events = m->n_events;
    w->fragment = m->fragment;
    for (size_t i = 0; i < m->n_events; i++) {
        if (m->events[i]->kv == NULL) {
            ss_etcd_watch_free(w);
            return SS_E_PROTOCOL;
        }
    }
    return SS_OK;
}

void ss_etcd_watch_event(const ss_etcd_watch *w, size_t i, ss_etcd_event *ev)
{
    const Etcdserverpb__WatchResponse *m = w->msg;
    const Mvccpb__Event *e = m->events[i];
    memset(ev, 0, sizeof *ev);
    ev->deleted = e->type == MVCCPB__EVENT__EVENT_TYPE__DELETE;
    ev->key.data = e->kv->key.data;
    ev->key.len = e->kv->key.len;
    ss_etcd__kv(e->kv, &ev->kv);
}

void ss_etcd_watch_free(ss_etcd_watch *w)
{
    if (w->msg)
        protobuf_c_message_free_unpacked(w->msg, NULL);
    memset(w, 0, sizeof *w);
}
