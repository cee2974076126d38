/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_txn.c - a flight's batch as one etcd Txn: each key's
 * compare and put, the markers' compares that confirm reads, the
 * sentinel, the claim and the commit marker (backend_etcd_txn.h). Its
 * outcome is backend_etcd_commit.c's. */
#include <stdio.h>
#include <string.h>

#include "../core/errors.h"
#include "backend_etcd_state.h"
#include "backend_etcd_base.h"
#include "backend_etcd_blob.h"
#include "backend_etcd_quota.h"
#include "backend_etcd_txn.h"
#include "backend_etcd_upload.h"

bool ss_etcd__writes(const struct ss_etcd_batch *b)
{
    for (size_t i = 0; i < b->ntouched; i++)
        if (b->touched[i]->change != SS_CHANGE_NONE)
            return true;
    return false;
}

/* Does the batch put anything (a record or a tombstone)? Out of space,
 * deletions purge and puts are refused at once, so only a batch whose
 * requests ran before etcd said it was full can. */
bool ss_etcd__puts(const struct ss_etcd_batch *b)
{
    for (size_t i = 0; i < b->ntouched; i++)
        if (b->touched[i]->change == SS_CHANGE_PUT || b->touched[i]->change == SS_CHANGE_DEL)
            return true;
    return false;
}

/* Can x, which the batch only read, go without a compare of its own in a
 * Txn that confirms its reads by the markers (ss_etcd__build_solo)? Only
 * if every change of it up to the watch's revision is known: none was
 * told while it could not go (stale_rev), and it was known after any
 * history the watch lost. */
static bool ss_etcd__read_confirmed(const struct ss_backend_etcd *e, const struct ss_etcd_entry *x)
{
    return x->change == SS_CHANGE_NONE && x->stale_rev <= x->rev && x->seen_rev >= e->watch_gap_rev;
}

static int ss_etcd__build_entry(struct ss_backend_etcd *e, ss_etcd_txn *t, struct ss_etcd_entry *x, bool solo)
{
    if (solo && ss_etcd__read_confirmed(e, x))
        return SS_OK;
    ss_bytes key = ss_etcd__bytes(&x->key);
    int rc = ss_etcd__key(e, &e->scratch, 'k', key);
    if (rc == SS_OK)
        rc = ss_etcd_txn_expect(t, ss_etcd__bytes(&e->scratch), x->rev); /* a tombstone's too */
    if (rc != SS_OK || x->change == SS_CHANGE_NONE)
        return rc;
    /* A deletion writes a tombstone (backend_etcd_tombstone.c), on a
     * lease or with an end of its own, like a record that expires; a
     * purge removes one of the latter. No expiry index: every broker
     * knows every deadline (backend_etcd_sweep.c). */
    bool purge = x->change == SS_CHANGE_PURGE;
    const ss_buf *rec = &x->next_rec;
    bool chunked = x->change == SS_CHANGE_PUT && x->next_blob[0] != '\0';
    if (chunked) { /* its chunks are written */
        rc = ss_etcd__stub_make(&x->next_rec, x->next_blob, ss_etcd__chunk_bytes(e), &e->stub);
        rec = &e->stub;
    }
    if (rc == SS_OK && purge)
        rc = ss_etcd_txn_delete(t, ss_etcd__bytes(&e->scratch));
    else if (rc == SS_OK && x->change == SS_CHANGE_DEL && x->next_lease)
        rc = ss_etcd_txn_put_leased(t, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(rec), x->next_lease);
    else if (rc == SS_OK)
        rc = ss_etcd_txn_put(t, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(rec));
    /* The chunks of the value it replaces go with it. */
    if (rc == SS_OK && x->found && x->blob[0] != '\0')
        rc = ss_etcd__blob_delete(e, t, x->blob);
    /* Its chunks' guard (backend_etcd_upload.c): still there, so every
     * chunk is; gone with the commit. */
    if (rc == SS_OK && chunked)
        rc = ss_etcd__guard_commit(e, t, x->next_blob);
    return rc;
}

int ss_etcd__marker_key(struct ss_backend_etcd *e, unsigned slot)
{
    if (slot == 0)
        return ss_etcd__named(e, 'n', e->node_id);
    char name[300];
    snprintf(name, sizeof name, "%u/%s", slot, e->node_id);
    return ss_etcd__named(e, 'm', name);
}

/* The sentinel: a key that is there while every deletion comes with a
 * commit marker. Out of space, etcd takes no put, so a broker deletes
 * without a marker then; it deletes the sentinel in the same Txn. */
static int ss_etcd__sentinel_key(struct ss_backend_etcd *e)
{
    return ss_etcd__named(e, 's', "marked");
}

/* Does this broker confirm a write Txn's reads by the markers now? Only
 * while no other broker seems to write (each of their commits changes a
 * marker, and would make such a Txn fail), while it is not out of space
 * itself, and once its watch has passed its own put of the sentinel: a
 * deletion without a marker made before that put is told by the watch
 * alone (one made after it deletes the sentinel, which the Txn compares).
 * A restarted watch must have caught up too. */
static bool ss_etcd__solo(const struct ss_backend_etcd *e, const struct ss_etcd_flight *f)
{
    return e->solo_ms > 0 && f->writes && !f->nospace && !e->nospace_said && e->watch_created &&
           e->watch_rev > 0 && e->watch_rev >= e->watch_caught_rev && e->marked_rev > 0 &&
           e->watch_rev >= e->marked_rev && ss_etcd__mono_ms() - e->foreign_ms >= e->solo_ms;
}

/* The keys a read may rest on changed only through commits, and every
 * commit of every broker changes its marker (slot 0: n/<node id>, the
 * others m/<slot>/<node id>). So when no marker of another broker changed
 * after the watch's revision, neither did any key this broker knows as of
 * that revision: the watch told it of every change up to there (an entry
 * it could not drop then is compared, ss_etcd__read_confirmed). One
 * compare per interval of [m/, n0) between this broker's own markers,
 * which its other flight may move meanwhile. */
/* The slots' markers sort m/1/ .. m/9/, then n/: past ten, m/10/ would
 * sort before m/2/ and the intervals below would be wrong. */
_Static_assert(SS_BACKEND_ETCD_FLIGHTS <= 10, "marker intervals assume single-digit slots");

static int ss_etcd__build_solo(struct ss_backend_etcd *e, ss_etcd_txn *t)
{
    ss_bytes none = {NULL, 0};
    int rc = ss_etcd__key(e, &e->scratch2, 'm', none); /* from m/ */
    for (unsigned slot = 1; rc == SS_OK && slot <= SS_BACKEND_ETCD_FLIGHTS; slot++) {
        /* up to this broker's marker of the slot (n/<node id> last) */
        rc = ss_etcd__marker_key(e, slot % SS_BACKEND_ETCD_FLIGHTS);
        if (rc == SS_OK)
            rc = ss_etcd_txn_expect_below(t, ss_etcd__bytes(&e->scratch2), ss_etcd__bytes(&e->scratch),
                                          e->watch_rev + 1);
        /* the next interval starts right after it */
        if (rc == SS_OK && (rc = ss_buf_append(&e->scratch, "", 1)) == SS_OK) {
            ss_buf spare = e->scratch2;
            e->scratch2 = e->scratch;
            e->scratch = spare;
        }
    }
    if (rc == SS_OK && (rc = ss_etcd__key(e, &e->scratch, 'n', none)) == SS_OK) {
        e->scratch.data[e->scratch.len - 1] = '/' + 1; /* up to n0 */
        rc = ss_etcd_txn_expect_below(t, ss_etcd__bytes(&e->scratch2), ss_etcd__bytes(&e->scratch),
                                      e->watch_rev + 1);
    }
    /* and no broker deleted without a marker since the watch's revision:
     * the sentinel is there, and was not put again after it (by this
     * broker's other flight, whose marker the intervals leave out: it
     * may have put it back after such a deletion). */
    if (rc == SS_OK && (rc = ss_etcd__sentinel_key(e)) == SS_OK)
        rc = ss_etcd_txn_expect_present(t, ss_etcd__bytes(&e->scratch));
    if (rc == SS_OK) {
        ss_buf_clear(&e->scratch2); /* [s/marked, the key right after it) */
        if ((rc = ss_buf_append(&e->scratch2, e->scratch.data, e->scratch.len)) == SS_OK &&
            (rc = ss_buf_append(&e->scratch2, "", 1)) == SS_OK)
            rc = ss_etcd_txn_expect_below(t, ss_etcd__bytes(&e->scratch), ss_etcd__bytes(&e->scratch2),
                                          e->watch_rev + 1);
    }
    return rc;
}

/* Flight f's batch as a Txn, in op's request. */
int ss_etcd__build(struct ss_backend_etcd *e, struct ss_etcd_flight *f, struct ss_etcd_op *op)
{
    const struct ss_etcd_batch *b = &f->b;
    ss_etcd_txn t = {0};
    f->known_rev = e->high_rev > e->watch_rev ? e->high_rev : e->watch_rev;
    f->known_backs = e->stats.revisions_went_back;
    /* Out of space, etcd takes no put at all: no counter, no marker. */
    f->nospace = e->nospace;
    /* Only a batch with a key it only read gains from the markers' three
     * compares (and only it may fail on another broker's commit). */
    bool solo = false;
    for (size_t i = 0; i < b->ntouched && !solo; i++)
        solo = ss_etcd__read_confirmed(e, b->touched[i]);
    solo = solo && ss_etcd__solo(e, f);
    f->solo = solo;
    int rc = solo ? ss_etcd__build_solo(e, &t) : SS_OK;
    for (size_t i = 0; rc == SS_OK && i < b->ntouched; i++)
        rc = ss_etcd__build_entry(e, &t, b->touched[i], solo);
    if (rc == SS_OK && solo)
        e->stats.txns_solo++;
    if (rc == SS_OK && (!f->writes || f->nospace)) {
        /* Compares alone would be answered from the member's own state,
         * which may lag: the marker's Range makes the read linearizable. */
        if ((rc = ss_etcd__named(e, 'n', e->node_id)) == SS_OK)
            rc = ss_etcd_txn_get(&t, ss_etcd__bytes(&e->scratch));
    }
    if (rc == SS_OK && !f->nospace)
        rc = ss_etcd__build_usage(e, &f->b, &t);
    /* The sentinel: put again by a broker that may confirm its reads by
     * the markers and does not know it to be there; deleted by every
     * write out of space, whether it took effect or not. */
    ss_bytes empty = {NULL, 0};
    f->marks = rc == SS_OK && f->writes && !f->nospace && e->solo_ms > 0 && e->marked_rev == 0;
    if (f->marks && (rc = ss_etcd__sentinel_key(e)) == SS_OK)
        rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), empty);
    if (rc == SS_OK && f->writes && f->nospace && (rc = ss_etcd__sentinel_key(e)) == SS_OK) {
        rc = ss_etcd_txn_delete(&t, ss_etcd__bytes(&e->scratch));
        e->marked_rev = 0;
    }
    /* A write goes through only while this broker's claim on its node id
     * is the one it made: a broker that stalled past its lease, and was
     * replaced by another with the same node id, writes nothing. */
    if (rc == SS_OK && f->writes && (rc = ss_etcd__named(e, 'l', e->node_id)) == SS_OK)
        rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), e->claim_rev);
    if (rc == SS_OK && f->writes && !f->nospace) {
        f->txn_seq = ++e->txn_seq;
        snprintf(f->txn_id, sizeof f->txn_id, "%s %016llx %llu", e->node_id,
                 (unsigned long long)e->incarnation, (unsigned long long)f->txn_seq);
        ss_bytes id = {(const uint8_t *)f->txn_id, strlen(f->txn_id)};
        if ((rc = ss_etcd__marker_key(e, f->slot)) == SS_OK &&
            (rc = ss_etcd_txn_expect(&t, ss_etcd__bytes(&e->scratch), f->marker_rev)) == SS_OK &&
            (rc = ss_etcd_txn_put(&t, ss_etcd__bytes(&e->scratch), id)) == SS_OK)
            rc = ss_etcd_txn_on_failure_get(&t, ss_etcd__bytes(&e->scratch));
    }
    if (rc == SS_OK)
        rc = ss_etcd_txn_pack(&t, &op->call.request);
    ss_etcd_txn_free(&t);
    return rc;
}
