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
 * it wrote and nothing else (import_etcd_undo): the prefix held nothing
 * when it began, but a broker started on it meanwhile may have written
 * its claim, its marker and its clients' records since. So the import
 * keeps the keys of its Txns with the revision each committed at, and
 * deletes each key only while it still holds that revision; a Txn that
 * got no answer is judged by reading its keys back. Checking the whole
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
    /* What undo deletes, as lists of entries (struct import_etcd_entry,
     * then the key, then the value): batch, the records of the Txn being
     * built (with their values); written, those of the Txns that
     * committed (with their revisions, no values). */
    ss_buf batch, written;
    bool unsure;              /* batch went in a Txn that got no answer: it may have committed */
    int64_t last_revision;    /* of the last Txn that committed: the marker's */
};

/* An entry of batch or written. */
struct import_etcd_entry {
    uint32_t key_len, value_len;
    int64_t revision;  /* the Txn's that wrote it (0: not known) */
    bool chunked;      /* its value is in the chunks of blob */
    char blob[32];
};

static int import_etcd__entry_add(ss_buf *list, const struct import_etcd_entry *h, ss_bytes key, ss_bytes value)
{
    struct import_etcd_entry copy = *h;
    copy.key_len = (uint32_t)key.len;
    copy.value_len = (uint32_t)value.len;
    int rc = ss_buf_append(list, &copy, sizeof copy);
    if (rc == SS_OK)
        rc = ss_buf_append(list, key.data, key.len);
    if (rc == SS_OK && value.len)
        rc = ss_buf_append(list, value.data, value.len);
    return rc;
}

/* The entry at *off, which moves past it; false at the end. key and value
 * borrow list. */
static bool import_etcd__entry_next(const ss_buf *list, size_t *off, struct import_etcd_entry *h, ss_bytes *key,
                                    ss_bytes *value)
{
    if (*off + sizeof *h > list->len)
        return false;
    memcpy(h, list->data + *off, sizeof *h);
    key->data = list->data + *off + sizeof *h;
    key->len = h->key_len;
    value->data = key->data + h->key_len;
    value->len = h->value_len;
    *off += sizeof *h + h->key_len + h->value_len;
    return true;
}

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

/* Does the prefix hold any key? *found: 0, or 1 when it does. */
static int import_etcd__prefix_holds(struct import_etcd *e, size_t *found, char *why, size_t n)
{
    ss_buf end = SS_BUF_INIT;
    ss_grpc_call c;
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_RANGE_METHOD;
    int rc = import_etcd__prefix_range(e, &end);
    if (rc == SS_OK)
        rc = ss_etcd_range_keys_pack(&c.request, import_etcd__bytes(&e->name), import_etcd__bytes(&end), 1, false);
    ss_buf_free(&end);
    ss_etcd_reply r;
    *found = 0;
    if (rc == SS_OK && (rc = import_etcd__call(e, &c, why, n)) == SS_OK &&
        (rc = ss_etcd_range_unpack_all(&c.reply, &r, found)) == SS_OK)
        ss_etcd_reply_free(&r);
    else if (rc != SS_OK && why[0] == '\0')
        snprintf(why, n, "%s", ss_strerror(rc));
    ss_grpc_call_clear(&c);
    return rc;
}

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
    ss_buf_free(&e->batch);
    ss_buf_free(&e->written);
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
    /* The prefix must hold no store yet: one key of it is enough to say. */
    size_t found = 0;
    if (rc == SS_OK && (rc = import_etcd__prefix_holds(e, &found, why, n)) == SS_OK && found > 0) {
        snprintf(why, n, "the prefix %s already holds keys: import into a prefix no store uses "
                 "(--etcd-prefix)", e->prefix);
        rc = SS_E_INVAL;
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
    bool sent = rc == SS_OK, answered = false;
    e->wrote = e->wrote || sent; /* it may commit even when no answer comes */
    if (rc == SS_OK && (rc = import_etcd__call(e, &c, why, n)) == SS_OK) {
        if ((rc = ss_etcd_txn_unpack(&c.reply, &r, NULL)) != SS_OK) {
            snprintf(why, n, "etcd's answer to a Txn could not be read");
        } else {
            answered = true;
            if (!r.succeeded) {
                snprintf(why, n, "a key of this import is in the store already (written meanwhile?)");
                rc = SS_E_INVAL;
            } else {
                /* Its puts hold the Txn's revision: what undo deletes. */
                size_t off = 0;
                struct import_etcd_entry h;
                ss_bytes key, value, none = {NULL, 0};
                while (rc == SS_OK && import_etcd__entry_next(&e->batch, &off, &h, &key, &value)) {
                    h.revision = r.revision;
                    rc = import_etcd__entry_add(&e->written, &h, key, none);
                }
                e->last_revision = r.revision;
                if (rc != SS_OK)
                    snprintf(why, n, "%s", ss_strerror(rc));
            }
            ss_etcd_reply_free(&r);
        }
    }
    /* Sent without an answer: it may have committed (or still may); undo
     * reads its keys back. Otherwise nothing of it is left to know. */
    e->unsure = sent && !answered;
    if (!e->unsure)
        ss_buf_clear(&e->batch);
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
    struct import_etcd_entry h = {.chunked = chunked};
    if (chunked) /* import_etcd__chunks added its blob id last */
        memcpy(h.blob, e->pending_blobs.data + e->pending_blobs.len - sizeof h.blob, sizeof h.blob);
    if ((rc = import_etcd__name(e, 'k', key)) == SS_OK &&
        (rc = ss_etcd_txn_expect(&e->t, import_etcd__bytes(&e->name), 0)) == SS_OK &&
        (rc = ss_etcd_txn_put(&e->t, import_etcd__bytes(&e->name), value)) == SS_OK)
        rc = import_etcd__entry_add(&e->batch, &h, key, value);
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

/* Send t (a Txn of deletions under compares) and say whether its
 * compares held. */
static int import_etcd__send(struct import_etcd *e, const ss_etcd_txn *t, bool *succeeded, char *why, size_t n)
{
    ss_grpc_call c;
    memset(&c, 0, sizeof c);
    c.method = SS_ETCD_TXN_METHOD;
    ss_etcd_reply r;
    int rc = ss_etcd_txn_pack(t, &c.request);
    if (rc != SS_OK)
        snprintf(why, n, "%s", ss_strerror(rc));
    else if ((rc = import_etcd__call(e, &c, why, n)) == SS_OK &&
             (rc = ss_etcd_txn_unpack(&c.reply, &r, NULL)) != SS_OK)
        snprintf(why, n, "etcd's answer to a Txn could not be read");
    if (rc == SS_OK) {
        *succeeded = r.succeeded;
        ss_etcd_reply_free(&r);
    }
    ss_grpc_call_clear(&c);
    return rc;
}

/* The Txn that deletes the entries of written in [from, to): each record
 * (and the chunks of its value) only while it holds the revision this
 * import wrote it at. */
static int import_etcd__delete_txn(struct import_etcd *e, size_t from, size_t to, ss_etcd_txn *t, ss_buf *end)
{
    struct import_etcd_entry h;
    ss_bytes key, value;
    int rc = SS_OK;
    ss_etcd_txn_clear(t);
    for (size_t off = from; rc == SS_OK && off < to && import_etcd__entry_next(&e->written, &off, &h, &key, &value);) {
        if ((rc = import_etcd__name(e, 'k', key)) == SS_OK &&
            (rc = ss_etcd_txn_expect(t, import_etcd__bytes(&e->name), h.revision)) == SS_OK)
            rc = ss_etcd_txn_delete(t, import_etcd__bytes(&e->name));
        if (rc == SS_OK && h.chunked) {
            char blob[sizeof h.blob + 1];
            memcpy(blob, h.blob, sizeof h.blob);
            blob[sizeof h.blob] = '\0';
            if ((rc = ss_backend_etcd_blob_range(&e->name, end, e->prefix, blob)) == SS_OK)
                rc = ss_etcd_txn_delete_range(t, import_etcd__bytes(&e->name), import_etcd__bytes(end));
        }
    }
    return rc;
}

/* Delete the records of written still as this import wrote them, in Txns
 * of bounded size; a Txn whose compares fail (another changed one of its
 * records) goes again a record at a time. *deleted and *kept count them. */
static int import_etcd__delete_written(struct import_etcd *e, size_t *deleted, size_t *kept, char *why, size_t n)
{
    ss_etcd_txn t = {0};
    ss_buf end = SS_BUF_INIT;
    struct import_etcd_entry h;
    ss_bytes key, value;
    int rc = SS_OK;
    size_t off = 0;
    while (rc == SS_OK && off < e->written.len) {
        /* The group: as many records as a Txn of the import held. */
        size_t from = off, keys = 0, bytes = 0, next = off;
        while (keys < SS_IMPORT_ETCD_KEYS && import_etcd__entry_next(&e->written, &next, &h, &key, &value)) {
            size_t cost = ss_backend_etcd_key_overhead(key.len, strlen(e->prefix));
            if (keys > 0 && bytes + cost > SS_IMPORT_ETCD_BYTES)
                break;
            keys++;
            bytes += cost;
            off = next;
        }
        bool succeeded = false;
        if ((rc = import_etcd__delete_txn(e, from, off, &t, &end)) == SS_OK)
            rc = import_etcd__send(e, &t, &succeeded, why, n);
        if (rc == SS_OK && succeeded) {
            *deleted += keys;
            continue;
        }
        for (size_t one = from; rc == SS_OK && one < off;) {
            size_t at = one;
            import_etcd__entry_next(&e->written, &one, &h, &key, &value);
            if ((rc = import_etcd__delete_txn(e, at, one, &t, &end)) == SS_OK &&
                (rc = import_etcd__send(e, &t, &succeeded, why, n)) == SS_OK)
                *(succeeded ? deleted : kept) += 1;
        }
    }
    if (rc != SS_OK && why[0] == '\0')
        snprintf(why, n, "%s", ss_strerror(rc));
    ss_etcd_txn_free(&t);
    ss_buf_free(&end);
    return rc;
}

/* The Txn that got no answer: those of its records found as this import
 * wrote them go into written (it committed). *pending: none was found,
 * and it may still be applied. */
static int import_etcd__resolve(struct import_etcd *e, bool *pending, char *why, size_t n)
{
    struct import_etcd_entry h;
    ss_bytes key, value, none = {NULL, 0};
    bool committed = false;
    int rc = SS_OK;
    for (size_t off = 0; rc == SS_OK && import_etcd__entry_next(&e->batch, &off, &h, &key, &value);) {
        ss_grpc_call c;
        memset(&c, 0, sizeof c);
        c.method = SS_ETCD_RANGE_METHOD;
        ss_etcd_reply r;
        ss_etcd_kv kv;
        if ((rc = import_etcd__name(e, 'k', key)) == SS_OK &&
            (rc = ss_etcd_range_pack(&c.request, import_etcd__bytes(&e->name), false)) == SS_OK &&
            (rc = import_etcd__call(e, &c, why, n)) == SS_OK &&
            (rc = ss_etcd_range_unpack(&c.reply, &r, &kv)) == SS_OK) {
            if (kv.found && kv.value.len == value.len && memcmp(kv.value.data, value.data, value.len) == 0) {
                committed = true;
                h.revision = kv.mod_revision;
                if (h.revision > e->last_revision)
                    e->last_revision = h.revision;
                rc = import_etcd__entry_add(&e->written, &h, key, none);
            }
            ss_etcd_reply_free(&r);
        }
        ss_grpc_call_clear(&c);
    }
    if (rc != SS_OK && why[0] == '\0')
        snprintf(why, n, "%s", ss_strerror(rc));
    *pending = !committed;
    return rc;
}

/* The commit marker of the import's Txns, while the last of them holds it. */
static int import_etcd__delete_marker(struct import_etcd *e, char *why, size_t n)
{
    if (e->last_revision == 0)
        return SS_OK;
    static const char marker[] = ":import";
    ss_bytes mk = {(const uint8_t *)marker, sizeof marker - 1};
    ss_etcd_txn t = {0};
    bool succeeded;
    int rc = import_etcd__name(e, 'n', mk);
    if (rc == SS_OK && (rc = ss_etcd_txn_expect(&t, import_etcd__bytes(&e->name), e->last_revision)) == SS_OK &&
        (rc = ss_etcd_txn_delete(&t, import_etcd__bytes(&e->name))) == SS_OK)
        rc = import_etcd__send(e, &t, &succeeded, why, n);
    else if (rc != SS_OK)
        snprintf(why, n, "%s", ss_strerror(rc));
    ss_etcd_txn_free(&t);
    return rc;
}

void import_etcd_undo(struct import_etcd *e)
{
    if (e == NULL || !e->wrote)
        return;
    /* The chunks of the Txn being built, which never went. */
    if (e->pending_blobs.len)
        import_etcd__drop_pending(e);
    char why[200] = "";
    bool pending = false;
    size_t deleted = 0, kept = 0, found = 0;
    int rc = e->unsure ? import_etcd__resolve(e, &pending, why, sizeof why) : SS_OK;
    if (rc == SS_OK)
        rc = import_etcd__delete_written(e, &deleted, &kept, why, sizeof why);
    if (rc == SS_OK)
        rc = import_etcd__delete_marker(e, why, sizeof why);
    /* What the prefix holds now, read again rather than assumed. */
    if (rc == SS_OK)
        rc = import_etcd__prefix_holds(e, &found, why, sizeof why);
    const char *later = pending ? "; etcd did not answer its last Txn, which may still be applied: check the "
                                  "prefix (etcdctl get --prefix --keys-only) before importing again"
                                : "";
    if (rc != SS_OK) {
        out_error("import: the records written under %s could not all be deleted (%s; %zu were): delete "
                  "them (etcdctl del --prefix %s, once nothing else uses the prefix) before importing again",
                  e->prefix, why, deleted, e->prefix);
    } else if (found == 0) {
        out_error("import: the records written under %s were deleted: the prefix holds nothing%s%s", e->prefix,
                  pending ? " now" : " again", later);
    } else {
        char changed[120] = "";
        if (kept)
            snprintf(changed, sizeof changed, " (%zu of them records of this import that another changed since)",
                     kept);
        out_error("import: %zu records written under %s were deleted; the prefix holds keys another wrote "
                  "meanwhile (a broker started on it?), left as they are%s%s",
                  deleted, e->prefix, changed, later);
    }
}
