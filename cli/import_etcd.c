/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* import_etcd.c - import FILE --etcd ENDPOINTS: records into a store on an
 * etcd cluster, in the layout of etcd/backend_etcd.h (k/<key> the record),
 * under a prefix no store uses yet. Deadlines need nothing more: a broker
 * reads every record's when it starts.
 *
 * Records go in Txns of up to SS_IMPORT_ETCD_KEYS keys, each put only if
 * the key is absent: an import never replaces a record, and one that
 * finds a key present stops and says so. An import that stops on a
 * failure it catches (a bad line, etcd's refusal, no answer) deletes what
 * it wrote (import_etcd_undo): the prefix held nothing when it began, so
 * its whole range goes, and a retry finds it empty. Checking the whole
 * input before the first Txn instead would not do: standard input cannot
 * be read twice, and etcd's failures come only with the Txns. One that is
 * killed leaves its complete Txns: docs/OPERATIONS.md says how to empty
 * the prefix before a retry. Brokers need nothing else: they read
 * records as they need them, merge the versions they read into their
 * clocks, and count the store for its limits when they first need to.
 * A record too large for one request goes as the backend stores it: its
 * value in chunks first, each in a request of its own, then its stub in
 * the Txn (backend_etcd_blob.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "../core/errors.h"
#include "../core/record.h"
#include "../etcd/backend_etcd.h"
#include "../etcd/grpc.h"
#include "../etcd/kv.h"
#include "cli.h"

/* Keys per Txn: a compare and a put each, well within etcd's default
 * --max-txn-ops of 128. */
#define SS_IMPORT_ETCD_KEYS 40
/* Bytes per Txn, within etcd's default --max-request-bytes (1.5 MiB). */
#define SS_IMPORT_ETCD_BYTES ((size_t)1 << 20)
#define SS_IMPORT_ETCD_TIMEOUT_MS 10000u

struct import_etcd {
    ss_grpc *g;
    const char *prefix;
    ss_etcd_txn t;
    size_t keys, bytes;
    ss_buf name, rec;
    uint64_t instance, blobs; /* blob ids: this run's instance and a count */
    ss_buf pending_blobs;     /* ids (32 bytes each) of the chunked values of the Txn being built */
    bool wrote;               /* a write was sent: the prefix may hold something of this import */
    bool contended;           /* a Txn found a key present: someone else writes under the prefix */
};

static int import_etcd__name(struct import_etcd *e, char part, ss_bytes key)
{
    return ss_backend_etcd_layout_key(&e->name, e->prefix, part, key);
}

static ss_bytes import_etcd__bytes(const ss_buf *b)
{
    ss_bytes v = {b->data, b->len};
    return v;
}

/* Every key under the prefix: from e->name (the prefix) to end. */
static int import_etcd__prefix_range(struct import_etcd *e, ss_buf *end)
{
    ss_bytes none = {NULL, 0};
    int rc = import_etcd__name(e, 'k', none);
    if (rc != SS_OK)
        return rc;
    e->name.len -= 2; /* the prefix alone */
    ss_buf_clear(end);
    rc = ss_buf_append(end, e->name.data, e->name.len);
    if (rc == SS_OK && end->len == 0)
        rc = ss_buf_append(end, "", 1); /* the whole keyspace: from "" to "\0" */
    else if (rc == SS_OK)
        end->data[end->len - 1]++;
    return rc;
}

/* Send c and wait: 0, or the failure with its cause in why. */
static int import_etcd__call(struct import_etcd *e, ss_grpc_call *c, char *why, size_t n)
{
    c->timeout_ms = SS_IMPORT_ETCD_TIMEOUT_MS;
    int rc = ss_grpc_call_wait(e->g, c);
    if (rc != SS_OK)
        snprintf(why, n, "%s", c->message[0] ? c->message : ss_strerror(rc));
    return rc;
}

static void import_etcd__drop_pending(struct import_etcd *e);

void import_etcd_close(struct import_etcd *e)
{
    if (e == NULL)
        return;
    /* An import that stopped before the Txn being built committed. */
    if (e->pending_blobs.len)
        import_etcd__drop_pending(e);
    ss_grpc_free(e->g);
    ss_etcd_txn_free(&e->t);
    ss_buf_free(&e->name);
    ss_buf_free(&e->rec);
    ss_buf_free(&e->pending_blobs);
    free(e);
}

int import_etcd_open(const struct cli *cl, struct import_etcd **out, char *why, size_t n)
{
    struct import_etcd *e = calloc(1, sizeof *e);
    if (e == NULL)
        return SS_E_NOMEM;
    e->prefix = cl->etcd_prefix ? cl->etcd_prefix : "statestore/";
    if (getrandom(&e->instance, sizeof e->instance, 0) != (ssize_t)sizeof e->instance)
        e->instance = (uint64_t)time(NULL);
    /* The login and TLS files of the command line alone (cl->etcd_*):
     * the options file's are the broker's. */
    ss_grpc_options o = {.endpoints = cl->etcd_endpoints, .ca_file = cl->etcd_cafile,
                         .cert_file = cl->etcd_cert, .key_file = cl->etcd_key};
    int rc = ss_grpc_new(&o, &e->g, why, n);
    ss_grpc_call c;
    memset(&c, 0, sizeof c);
    /* etcd's own user and password (-u, -P), when given. */
    if (rc == SS_OK && cl->etcd_user) {
        c.method = SS_ETCD_AUTHENTICATE_METHOD;
        char token[SS_GRPC_TOKEN_MAX];
        rc = ss_etcd_authenticate_pack(&c.request, cl->etcd_user, cl->etcd_password ? cl->etcd_password : "");
        if (rc == SS_OK && (rc = import_etcd__call(e, &c, why, n)) == SS_OK &&
            ((rc = ss_etcd_authenticate_unpack(&c.reply, token, sizeof token)) != SS_OK ||
             (rc = ss_grpc_set_token(e->g, token)) != SS_OK))
            snprintf(why, n, "etcd's answer to the login could not be used");
        ss_grpc_call_clear(&c);
        memset(&c, 0, sizeof c);
    }
    /* The prefix must hold no store yet: one key of it is enough to say.
     * (import_etcd_undo relies on it: all the prefix holds afterwards is
     * this import's.) */
    if (rc == SS_OK) {
        ss_buf end = SS_BUF_INIT;
        rc = import_etcd__prefix_range(e, &end);
        c.method = SS_ETCD_RANGE_METHOD;
        if (rc == SS_OK)
            rc = ss_etcd_range_keys_pack(&c.request, import_etcd__bytes(&e->name), import_etcd__bytes(&end), 1,
                                         false);
        ss_buf_free(&end);
        ss_etcd_reply r;
        size_t found = 0;
        if (rc == SS_OK && (rc = import_etcd__call(e, &c, why, n)) == SS_OK &&
            (rc = ss_etcd_range_unpack_all(&c.reply, &r, &found)) == SS_OK) {
            ss_etcd_reply_free(&r);
            if (found > 0) {
                snprintf(why, n, "the prefix %s already holds keys: import into a prefix no store uses "
                         "(--etcd-prefix)", e->prefix);
                rc = SS_E_INVAL;
            }
        }
        ss_grpc_call_clear(&c);
    }
    if (rc != SS_OK) {
        import_etcd_close(e);
        return rc;
    }
    *out = e;
    return SS_OK;
}

/* The Txn that would have referred to them did not commit: delete the
 * chunks written for it (best effort: a failure leaves them behind,
 * under this run's instance, as CLUSTER.md describes). */
static void import_etcd__drop_pending(struct import_etcd *e)
{
    ss_etcd_txn t = {0};
    ss_buf end = SS_BUF_INIT;
    int rc = SS_OK;
    for (size_t off = 0; rc == SS_OK && off + 32 <= e->pending_blobs.len; off += 32) {
        char blob[33];
        memcpy(blob, e->pending_blobs.data + off, 32);
        blob[32] = '\0';
        if ((rc = ss_backend_etcd_blob_range(&e->name, &end, e->prefix, blob)) == SS_OK)
            rc = ss_etcd_txn_delete_range(&t, import_etcd__bytes(&e->name), import_etcd__bytes(&end));
    }
    ss_grpc_call c;
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_TXN_METHOD;
    char why[200];
    if (rc == SS_OK && e->pending_blobs.len && ss_etcd_txn_pack(&t, &c.request) == SS_OK)
        (void)import_etcd__call(e, &c, why, sizeof why);
    ss_grpc_call_clear(&c);
    ss_etcd_txn_free(&t);
    ss_buf_free(&end);
    ss_buf_clear(&e->pending_blobs);
}

/* Commit the Txn being built. */
static int import_etcd__flush(struct import_etcd *e, char *why, size_t n)
{
    if (e->keys == 0)
        return SS_OK;
    ss_grpc_call c;
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_TXN_METHOD;
    /* Every commit to the store changes a commit marker under n/: brokers
     * that confirm their reads by the other brokers' markers (CLUSTER.md,
     * "How a request runs") must see this one too. No node id holds a
     * ':', so no broker has this marker. */
    static const char marker[] = ":import", id[] = "import";
    ss_bytes mk = {(const uint8_t *)marker, sizeof marker - 1}, mv = {(const uint8_t *)id, sizeof id - 1};
    int rc = import_etcd__name(e, 'n', mk);
    if (rc == SS_OK)
        rc = ss_etcd_txn_put(&e->t, import_etcd__bytes(&e->name), mv);
    if (rc == SS_OK)
        rc = ss_etcd_txn_pack(&e->t, &c.request);
    ss_etcd_reply r;
    e->wrote = e->wrote || rc == SS_OK; /* sent: it may commit even when no answer comes */
    if (rc == SS_OK && (rc = import_etcd__call(e, &c, why, n)) == SS_OK) {
        if ((rc = ss_etcd_txn_unpack(&c.reply, &r, NULL)) != SS_OK) {
            snprintf(why, n, "etcd's answer to a Txn could not be read");
        } else {
            if (!r.succeeded) {
                snprintf(why, n, "a key of this import is in the store already (written meanwhile?)");
                e->contended = true;
                rc = SS_E_INVAL;
            }
            ss_etcd_reply_free(&r);
        }
    }
    ss_grpc_call_clear(&c);
    ss_etcd_txn_clear(&e->t);
    e->keys = e->bytes = 0;
    if (rc != SS_OK)
        import_etcd__drop_pending(e);
    ss_buf_clear(&e->pending_blobs);
    return rc;
}

/* Write rec's value in chunks under a new blob id, and its stub into
 * e->rec. */
static int import_etcd__chunks(struct import_etcd *e, const ss_record *rec, char *why, size_t n)
{
    char blob[40];
    snprintf(blob, sizeof blob, "%016llx%016llx", (unsigned long long)e->instance,
             (unsigned long long)++e->blobs);
    /* Recorded first: if the Txn that refers to them never commits, the
     * chunks written go (import_etcd__drop_pending). */
    int rc = ss_buf_append(&e->pending_blobs, blob, 32);
    for (size_t off = 0, i = 0; rc == SS_OK && off < rec->value.len; off += SS_IMPORT_ETCD_BYTES, i++) {
        size_t len = rec->value.len - off < SS_IMPORT_ETCD_BYTES ? rec->value.len - off : SS_IMPORT_ETCD_BYTES;
        ss_bytes chunk = {rec->value.data + off, len};
        ss_etcd_txn t = {0};
        ss_grpc_call c;
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_TXN_METHOD;
        if ((rc = ss_backend_etcd_chunk_key(&e->name, e->prefix, blob, (uint32_t)i)) == SS_OK &&
            (rc = ss_etcd_txn_put(&t, import_etcd__bytes(&e->name), chunk)) == SS_OK &&
            (rc = ss_etcd_txn_pack(&t, &c.request)) == SS_OK) {
            e->wrote = true;
            rc = import_etcd__call(e, &c, why, n);
        }
        ss_etcd_txn_free(&t);
        ss_grpc_call_clear(&c);
    }
    return rc == SS_OK ? ss_backend_etcd_stub(&e->rec, rec, blob, SS_IMPORT_ETCD_BYTES) : rc;
}

int import_etcd_put(struct import_etcd *e, ss_bytes key, const ss_record *rec, char *why, size_t n)
{
    size_t size = ss_record_size(rec, 0, false);
    /* As the broker's rule: the key's deletion must fit in a Txn too. */
    size_t over = ss_backend_etcd_key_overhead(key.len, strlen(e->prefix));
    bool chunked = size + over > SS_IMPORT_ETCD_BYTES;
    if (chunked) {
        ss_record stub = *rec;
        stub.value.len = 64; /* at least the stub's */
        size = ss_record_size(&stub, 0, false);
    }
    size_t need = size + over;
    if (need > SS_IMPORT_ETCD_BYTES) {
        snprintf(why, n, "a key of %zu bytes does not fit in one etcd request", key.len);
        return SS_E_QUOTA;
    }
    int rc = SS_OK;
    if (e->keys == SS_IMPORT_ETCD_KEYS || e->bytes + need > SS_IMPORT_ETCD_BYTES)
        rc = import_etcd__flush(e, why, n);
    if (rc == SS_OK && chunked) {
        rc = import_etcd__chunks(e, rec, why, n);
    } else if (rc == SS_OK && (rc = ss_buf_reserve(&e->rec, size)) == SS_OK) {
        ss_record_encode(e->rec.data, rec, NULL, 0, false);
        e->rec.len = size;
    }
    if (rc != SS_OK)
        return rc;
    ss_bytes value = {e->rec.data, e->rec.len};
    if ((rc = import_etcd__name(e, 'k', key)) == SS_OK &&
        (rc = ss_etcd_txn_expect(&e->t, import_etcd__bytes(&e->name), 0)) == SS_OK)
        rc = ss_etcd_txn_put(&e->t, import_etcd__bytes(&e->name), value);
    if (rc != SS_OK)
        return rc;
    e->keys++;
    e->bytes += need;
    return SS_OK;
}

int import_etcd_finish(struct import_etcd *e, char *why, size_t n)
{
    return import_etcd__flush(e, why, n);
}

void import_etcd_undo(struct import_etcd *e)
{
    if (e == NULL || !e->wrote)
        return;
    /* Someone else writes under the prefix (a broker started on it too
     * soon?): deleting the range would delete their writes too. */
    if (e->contended) {
        out_error("import: the prefix %s holds keys another wrote meanwhile: the records this import wrote "
                  "stay; delete the prefix (etcdctl del --prefix %s) once nothing uses it, then import again",
                  e->prefix, e->prefix);
        return;
    }
    ss_etcd_txn t = {0};
    ss_buf end = SS_BUF_INIT;
    ss_grpc_call c;
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_TXN_METHOD;
    char why[200] = "";
    int rc = import_etcd__prefix_range(e, &end);
    if (rc == SS_OK)
        rc = ss_etcd_txn_delete_range(&t, import_etcd__bytes(&e->name), import_etcd__bytes(&end));
    if (rc == SS_OK)
        rc = ss_etcd_txn_pack(&t, &c.request);
    if (rc == SS_OK)
        rc = import_etcd__call(e, &c, why, sizeof why);
    else
        snprintf(why, sizeof why, "%s", ss_strerror(rc));
    ss_grpc_call_clear(&c);
    ss_etcd_txn_free(&t);
    ss_buf_free(&end);
    if (rc == SS_OK) {
        /* The chunks of a Txn that did not commit went with the range. */
        ss_buf_clear(&e->pending_blobs);
        out_error("import: the records written under %s were deleted: the prefix holds nothing again", e->prefix);
    } else {
        out_error("import: the records written under %s could not be deleted (%s): delete them (etcdctl del "
                  "--prefix %s) before importing again", e->prefix, why, e->prefix);
    }
}
