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
 * Writing the chunks, and deleting those of a Txn that did not commit,
 * is backend_etcd_upload.c's.
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
    /* The chunks' bytes, counted before anything is reserved: a stub (put
     * there by hand, say) may claim any length, which must not become an
     * allocation, nor an out-of-memory that answers nothing. */
    uint64_t total = 0;
    for (size_t i = 0; rc == SS_OK && i < n; i++) {
        ss_etcd_kv kv;
        ss_bytes key;
        ss_etcd_range_kv(&r, i, &kv, &key);
        total += kv.value.len;
    }
    if (rc == SS_OK && total != stub->len)
        rc = SS_E_CORRUPT;
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
