/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_blob.c - values too large for one etcd request, stored in
 * chunks (backend_etcd_state.h).
 *
 * etcd refuses a request over its --max-request-bytes (1.5 MiB by
 * default), and a Txn is one request. A record that would not fit in one
 * is stored as a stub at k/<key>: the record's header with
 * SS_RECORD_CHUNKED and, as its value, a blob id, the value's length and
 * the number of chunks. The value itself goes to c/<blob id>/<index, 8
 * hex>, a chunk per request.
 *
 * The chunks are written before the batch's Txn, under a blob id that
 * nobody else uses (this process's instance and a count): until the Txn
 * commits, nothing refers to them. The Txn writes the stub with the
 * usual compares and deletes the chunks of the record it replaces. A
 * reader reads the stub, then the chunks as they were at the revision of
 * that read: etcd's history keeps them there even after a later change
 * deleted them, so a reader never sees half of one value and half of
 * another.
 *
 * Chunks of a Txn that did not commit are deleted. A broker that dies
 * between its chunks and its Txn leaves them behind, under its instance
 * (CLUSTER.md says how to find them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/bigendian.h"
#include "../core/errors.h"
#include "../core/record.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_calls.h"
#include "backend_etcd_commit.h"

/* The stub's value: blob id, u64 length, u32 chunks (big endian). */
#define SS_ETCD_STUB_VALUE (SS_ETCD_BLOB_ID_LEN + 12)
/* A read of chunks may take this long per KiB beyond the call timeout
 * (1 ms per 8 KiB: 8 MB/s at the least). */
#define SS_ETCD_BLOB_KIB_PER_MS 8u

size_t ss_etcd__chunk_bytes(const struct ss_backend_etcd *e)
{
    return e->max_request_bytes - SS_ETCD_REQUEST_SLACK;
}

bool ss_etcd__stub(ss_bytes raw, const ss_record *rec, struct ss_etcd_stub *stub)
{
    if (raw.len == 0 || !(raw.data[0] & SS_RECORD_CHUNKED) || rec->value.len != SS_ETCD_STUB_VALUE)
        return false;
    const uint8_t *v = rec->value.data;
    memcpy(stub->blob, v, SS_ETCD_BLOB_ID_LEN);
    stub->blob[SS_ETCD_BLOB_ID_LEN] = '\0';
    stub->len = ss_get_be(v + SS_ETCD_BLOB_ID_LEN, 8);
    stub->chunks = (uint32_t)ss_get_be(v + SS_ETCD_BLOB_ID_LEN + 8, 4);
    return true;
}

uint64_t ss_etcd__value_len(ss_bytes raw, const ss_record *rec)
{
    struct ss_etcd_stub stub;
    return ss_etcd__stub(raw, rec, &stub) ? stub.len : rec->value.len;
}

size_t ss_etcd__stub_size(const ss_record *rec)
{
    ss_record r = *rec;
    r.value.len = SS_ETCD_STUB_VALUE;
    return ss_record_size(&r, 0, false);
}

/* rec as stored (no key tail), into out (replaced). */
static int ss_etcd__encode(const ss_record *rec, ss_buf *out)
{
    size_t size = ss_record_size(rec, 0, false);
    ss_buf_clear(out);
    int rc = ss_buf_reserve(out, size);
    if (rc != SS_OK)
        return rc;
    ss_record_encode(out->data, rec, NULL, 0, false);
    out->len = size;
    return SS_OK;
}

void ss_etcd__blob_new(struct ss_backend_etcd *e, char blob[SS_ETCD_BLOB_ID_LEN + 1])
{
    snprintf(blob, SS_ETCD_BLOB_ID_LEN + 1, "%016llx%016llx", (unsigned long long)e->incarnation,
             (unsigned long long)++e->blob_seq);
}

int ss_etcd__stub_make(const ss_buf *full, const char *blob, size_t chunk_bytes, ss_buf *out)
{
    ss_record rec;
    ss_bytes tail;
    if (ss_record_decode(full->data, full->len, &rec, &tail) != SS_OK)
        return SS_E_CORRUPT;
    return ss_backend_etcd_stub(out, &rec, blob, chunk_bytes);
}

int ss_backend_etcd_stub(ss_buf *out, const ss_record *whole, const char *blob, size_t chunk_bytes)
{
    ss_record rec = *whole;
    uint8_t v[SS_ETCD_STUB_VALUE];
    memcpy(v, blob, SS_ETCD_BLOB_ID_LEN);
    ss_put_be(v + SS_ETCD_BLOB_ID_LEN, rec.value.len, 8);
    ss_put_be(v + SS_ETCD_BLOB_ID_LEN + 8, (rec.value.len + chunk_bytes - 1) / chunk_bytes, 4);
    rec.value.data = v;
    rec.value.len = sizeof v;
    int rc = ss_etcd__encode(&rec, out);
    if (rc == SS_OK)
        out->data[0] |= SS_RECORD_CHUNKED;
    return rc;
}

int ss_etcd__unstub(ss_bytes raw, ss_bytes value, ss_buf *out)
{
    ss_record rec;
    ss_bytes tail;
    if (ss_record_decode(raw.data, raw.len, &rec, &tail) != SS_OK)
        return SS_E_CORRUPT;
    rec.value = value;
    return ss_etcd__encode(&rec, out);
}

int ss_backend_etcd_chunk_key(ss_buf *out, const char *prefix, const char *blob, uint32_t i)
{
    char name[SS_ETCD_BLOB_ID_LEN + 16];
    int n = snprintf(name, sizeof name, "%s/%08x", blob, (unsigned)i);
    ss_bytes k = {(const uint8_t *)name, (size_t)n};
    return ss_backend_etcd_layout_key(out, prefix, 'c', k);
}

static int ss_etcd__chunk_key(struct ss_backend_etcd *e, ss_buf *out, const char *blob, uint32_t i)
{
    return ss_backend_etcd_chunk_key(out, e->prefix, blob, i);
}

int ss_backend_etcd_blob_range(ss_buf *start, ss_buf *end, const char *prefix, const char *blob)
{
    char name[SS_ETCD_BLOB_ID_LEN + 2];
    int n = snprintf(name, sizeof name, "%s/", blob);
    ss_bytes k = {(const uint8_t *)name, (size_t)n};
    int rc = ss_backend_etcd_layout_key(start, prefix, 'c', k);
    if (rc == SS_OK)
        rc = ss_backend_etcd_layout_key(end, prefix, 'c', k);
    if (rc == SS_OK)
        end->data[end->len - 1] = '/' + 1;
    return rc;
}

/* The range of blob's chunks in e->scratch and e->scratch2. */
static int ss_etcd__blob_range(struct ss_backend_etcd *e, const char *blob)
{
    return ss_backend_etcd_blob_range(&e->scratch, &e->scratch2, e->prefix, blob);
}

int ss_etcd__blob_delete(struct ss_backend_etcd *e, ss_etcd_txn *t, const char *blob)
{
    int rc = ss_etcd__blob_range(e, blob);
    return rc == SS_OK ? ss_etcd_txn_delete_range(t, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(&e->scratch2))
                       : rc;
}

struct ss_etcd_op *ss_etcd__blob_read(struct ss_backend_etcd *e, enum ss_op_kind kind,
                                      const struct ss_etcd_stub *stub, int64_t revision)
{
    struct ss_etcd_op *op = ss_etcd__op_new(e, kind, SS_ETCD_RANGE_METHOD);
    int rc = op ? ss_etcd__blob_range(e, stub->blob) : SS_E_NOMEM;
    if (rc == SS_OK)
        rc = ss_etcd_range_all_at_pack(&op->call.request, ss_etcd__bytes(&e->scratch),
                                       ss_etcd__bytes(&e->scratch2), 0, revision);
    if (rc != SS_OK) {
        if (op)
            ss_etcd__op_free(op);
        return NULL;
    }
    uint64_t extra = stub->len / 1024u / SS_ETCD_BLOB_KIB_PER_MS;
    op->call.timeout_ms = e->call_timeout_ms + (unsigned)(extra > 600000u ? 600000u : extra);
    return op;
}

int ss_etcd__blob_value(const ss_buf *reply, const struct ss_etcd_stub *stub, ss_buf *out)
{
    ss_etcd_reply r;
    size_t n = 0;
    if (ss_etcd_range_unpack_all(reply, &r, &n) != SS_OK)
        return SS_E_PROTOCOL;
    int rc = n == stub->chunks ? SS_OK : SS_E_CORRUPT;
    ss_buf_clear(out);
    if (rc == SS_OK && stub->len)
        rc = ss_buf_reserve(out, (size_t)stub->len);
    for (size_t i = 0; rc == SS_OK && i < n; i++) {
        ss_etcd_kv kv;
        ss_bytes key;
        ss_etcd_range_kv(&r, i, &kv, &key);
        char want[16];
        snprintf(want, sizeof want, "/%08x", (unsigned)i);
        /* In key order, which is the chunks' order: each in its place. */
        if (key.len < 9 || memcmp(key.data + key.len - 9, want, 9) != 0 || out->len + kv.value.len > stub->len)
            rc = SS_E_CORRUPT;
        else
            rc = ss_buf_append(out, kv.value.data, kv.value.len);
    }
    if (rc == SS_OK && out->len != stub->len)
        rc = SS_E_CORRUPT;
    ss_etcd_reply_free(&r);
    return rc;
}

static void ss_etcd__drop_later(struct ss_backend_etcd *e, const char *blob);

/* ---- writing chunks before the commit ---------------------------------- */

/* A call of kind that sends t, which it frees (NULL: rc was a failure,
 * or out of memory). */
static struct ss_etcd_op *ss_etcd__txn_call(struct ss_backend_etcd *e, enum ss_op_kind kind, ss_etcd_txn *t, int rc)
{
    struct ss_etcd_op *op = rc == SS_OK ? ss_etcd__op_new(e, kind, SS_ETCD_TXN_METHOD) : NULL;
    if (op && ss_etcd_txn_pack(t, &op->call.request) != SS_OK) {
        ss_etcd__op_free(op);
        op = NULL;
    }
    ss_etcd_txn_free(t);
    return op;
}

/* The entry of flight f whose value goes in chunks and still has one to
 * write, from the one the upload is at. */
static struct ss_etcd_entry *ss_etcd__uploading(struct ss_backend_etcd *e, struct ss_etcd_flight *f,
                                                ss_bytes *value)
{
    for (; f->upload_at < f->b.ntouched; f->upload_at++) {
        struct ss_etcd_entry *x = f->b.touched[f->upload_at];
        if (x->change != SS_CHANGE_PUT || x->next_blob[0] == '\0')
            continue;
        ss_record rec;
        ss_bytes tail;
        if (ss_record_decode(x->next_rec.data, x->next_rec.len, &rec, &tail) != SS_OK)
            continue; /* cannot be: encoded here */
        if ((uint64_t)x->uploaded * ss_etcd__chunk_bytes(e) < rec.value.len) {
            *value = rec.value;
            return x;
        }
    }
    return NULL;
}

bool ss_etcd__uploads(const struct ss_etcd_batch *b)
{
    for (size_t i = 0; i < b->ntouched; i++)
        if (b->touched[i]->change == SS_CHANGE_PUT && b->touched[i]->next_blob[0] != '\0')
            return true;
    return false;
}

void ss_etcd__upload_next(struct ss_backend_etcd *e, struct ss_etcd_flight *f)
{
    f->upload_retry_ms = 0;
    ss_bytes value;
    struct ss_etcd_entry *x = ss_etcd__uploading(e, f, &value);
    if (x == NULL) {
        ss_etcd__commit_send(e, f); /* every chunk is there: the Txn */
        return;
    }
    size_t cb = ss_etcd__chunk_bytes(e);
    size_t off = x->uploaded * cb;
    ss_bytes chunk = {value.data + off, value.len - off < cb ? value.len - off : cb};
    ss_etcd_txn t = {0};
    int rc = ss_etcd__chunk_key(e, &e->scratch, x->next_blob, (uint32_t)x->uploaded);
    if (rc == SS_OK)
        rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), chunk);
    struct ss_etcd_op *op = ss_etcd__txn_call(e, SS_OP_UPLOAD, &t, rc);
    if (op == NULL) {
        f->upload_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS; /* out of memory: later */
        return;
    }
    op->flight = f;
    ss_etcd__submit(e, op);
}

void ss_etcd__upload_done(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    struct ss_etcd_flight *f = op->flight;
    ss_grpc_call *c = &op->call;
    if (f->state != SS_COMMIT_UPLOADING)
        return;
    if (c->rc == SS_OK) {
        f->b.touched[f->upload_at]->uploaded++;
        e->stats.chunks_written++;
        ss_etcd__upload_next(e, f);
        return;
    }
    if (ss_etcd__out_of_space(e, c)) {
        /* Nothing of the batch was stored (its Txn was not sent): it runs
         * again, where the large value is refused and the rest goes on. */
        ss_etcd__commit_failed(e, f, SS_E_CONFLICT);
        return;
    }
    if (ss_etcd__refused(c) && !(c->rc == SS_E_SERVER && c->status == SS_ETCD_UNAUTHENTICATED)) {
        ss_etcd__log(e, SS_LOG_ERR, "etcd refused a chunk of a large value: %s", ss_etcd__why(c));
        ss_etcd__commit_failed(e, f, c->status == 8 ? SS_E_QUOTA : SS_E_IO);
        return;
    }
    /* A put of a key nobody else writes: sent again, it does no harm. */
    if (ss_etcd__mono_ms() - f->upload_started_ms >= e->unavailable_ms) {
        ss_etcd__log(e, SS_LOG_WARNING, "etcd did not take the chunks of a large value for %u ms "
                     "(%s): its batch is answered \"the store is unavailable\"",
                     e->unavailable_ms, ss_etcd__why(c));
        ss_etcd__commit_failed(e, f, SS_E_UNAVAILABLE);
        return;
    }
    f->upload_retry_ms = ss_etcd__mono_ms() + SS_ETCD_RETRY_MS;
}

void ss_etcd__blob_drop(struct ss_backend_etcd *e, const char *blob)
{
    ss_etcd_txn t = {0};
    struct ss_etcd_op *op = ss_etcd__txn_call(e, SS_OP_BLOB_DROP, &t, ss_etcd__blob_delete(e, &t, blob));
    if (op == NULL) {
        ss_etcd__drop_later(e, blob);
        return;
    }
    memcpy(op->blob, blob, sizeof op->blob);
    ss_etcd__submit(e, op);
}

/* Try the deletion of blob's chunks again later. */
static void ss_etcd__drop_later(struct ss_backend_etcd *e, const char *blob)
{
    if (ss_buf_append(&e->drops, blob, SS_ETCD_BLOB_ID_LEN) != SS_OK) {
        ss_etcd__log(e, SS_LOG_WARNING, "out of memory: the chunks c/%s/ of a value that was not "
                     "stored are left behind", blob);
        return;
    }
    if (e->drop_retry_ms == 0)
        e->drop_retry_ms = ss_etcd__mono_ms() + SS_ETCD_MARKER_RETRY_MS;
}

void ss_etcd__blob_dropped(struct ss_backend_etcd *e, struct ss_etcd_op *op)
{
    if (op->call.rc == SS_OK)
        return;
    if (ss_etcd__refused(&op->call) && !(op->call.rc == SS_E_SERVER && op->call.status == SS_ETCD_UNAUTHENTICATED)) {
        ss_etcd__log(e, SS_LOG_WARNING, "etcd refused to delete the chunks c/%s/ of a value that was "
                     "not stored (%s): they are left behind (see CLUSTER.md)", op->blob, ss_etcd__why(&op->call));
        return;
    }
    ss_etcd__drop_later(e, op->blob); /* the cluster did not answer: again, until it does */
}

void ss_etcd__drop_step(struct ss_backend_etcd *e)
{
    if (e->drops.len == 0 || ss_etcd__mono_ms() < e->drop_retry_ms)
        return;
    ss_buf ids = e->drops;
    e->drops = (ss_buf)SS_BUF_INIT;
    e->drop_retry_ms = 0;
    for (size_t off = 0; off + SS_ETCD_BLOB_ID_LEN <= ids.len; off += SS_ETCD_BLOB_ID_LEN) {
        char blob[SS_ETCD_BLOB_ID_LEN + 1];
        memcpy(blob, ids.data + off, SS_ETCD_BLOB_ID_LEN);
        blob[SS_ETCD_BLOB_ID_LEN] = '\0';
        ss_etcd__blob_drop(e, blob);
    }
    ss_buf_free(&ids);
}
