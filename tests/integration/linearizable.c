/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* linearizable.c - the history checker and the load that makes histories
 * (linearizable.h). */
#include "linearizable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/codec.h"
#include "../test.h"

uint64_t lin_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- the checker ------------------------------------------------------ */

/* A register per key, its states ordered by version (the server's
 * linearization order), checked against real time. Operations of unknown
 * outcome take no part, except that they may have happened: a read may
 * have seen what such a write wrote (the same value, begun before the
 * read ended), a deletion may have deleted it (alike), and a key may be
 * absent after such a deletion.
 *
 * Per key, each state (a write that created it) carries the earliest
 * start and end of a deletion of it, and suffix minima over the states
 * after it, so that every check is a look-up or one pass over the
 * states: histories of tens of thousands of operations check in a
 * moment. */

struct state {
    const struct lin_op *w;
    uint64_t del_invoked, del_done; /* earliest deletion of this state; UINT64_MAX: none */
    uint64_t later_done;            /* earliest end of a write of this or a later version */
    uint64_t gap_del_invoked;       /* earliest deletion of a version between this state and the
                                       next (an unknown write's) */
    uint64_t later_del_invoked;     /* earliest start of a deletion of this or a later state */
};

struct key_view {
    struct state *st;
    int nw;
    const struct lin_op **dels; /* the deletions answered 1, by version, then by end */
    int ndels;
    const struct lin_op **unknown_writes;
    int nuw;
    uint64_t unknown_del_invoked; /* earliest deletion of unknown outcome */
};

static void report(const char *why, const struct lin_op *o)
{
    char v[SS_HLC_TEXT_MAX + 1] = "";
    if (o->has_version)
        v[ss_hlc_format(&o->version, v)] = '\0';
    fprintf(stderr, "  violation: %s: op kind %d key %d value %s [%llu, %llu] ok %d count %lld version %s "
            "client %d\n", why, o->kind, o->key, o->value, (unsigned long long)o->invoked,
            (unsigned long long)o->done, o->ok, (long long)o->count, v, o->client);
}

/* The whole history, for a look at a violation (kept with SS_KEEP_TMP). */
static void dump_history(const struct lin_op *ops, int n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/history.txt", test_tmpdir());
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    for (int i = 0; i < n; i++) {
        const struct lin_op *o = &ops[i];
        char v[SS_HLC_TEXT_MAX + 1] = "";
        if (o->has_version)
            v[ss_hlc_format(&o->version, v)] = '\0';
        fprintf(f, "%d kind %d key %d value %s [%llu, %llu] ok %d count %lld version %s got %s unknown %d "
                "client %d stray %d\n", i, o->kind, o->key, o->value, (unsigned long long)o->invoked,
                (unsigned long long)o->done, o->ok, (long long)o->count, v, o->got, o->unknown, o->client,
                o->stray);
    }
    fclose(f);
    fprintf(stderr, "  the history: %s\n", path);
}

static int by_version(const void *a, const void *b)
{
    const struct state *x = a, *y = b;
    return ss_hlc_compare(&x->w->version, &y->w->version);
}

/* Deletions by the version they deleted, then by their end: the first of
 * a version is the one that ended first. */
static int by_version_then_done(const void *a, const void *b)
{
    const struct lin_op *x = *(const struct lin_op *const *)a, *y = *(const struct lin_op *const *)b;
    int c = ss_hlc_compare(&x->version, &y->version);
    if (c != 0)
        return c;
    return x->done < y->done ? -1 : x->done > y->done;
}

/* The state written with version v, or -1. */
static int find_state(const struct key_view *kv, const ss_hlc *v)
{
    int lo = 0, hi = kv->nw - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int c = ss_hlc_compare(&kv->st[mid].w->version, v);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* The last state with a version below v, or -1. */
static int state_below(const struct key_view *kv, const ss_hlc *v)
{
    int lo = 0, hi = kv->nw - 1, below = -1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (ss_hlc_compare(&kv->st[mid].w->version, v) < 0) {
            below = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return below;
}

static bool is_write(const struct lin_op *o)
{
    return o->kind == LIN_SET || o->kind == LIN_SETNX;
}

static bool is_delete(const struct lin_op *o)
{
    return o->kind == LIN_DEL || o->kind == LIN_VDEL;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static bool unknown_write_may_explain(const struct key_view *kv, uint64_t by, const char *value, bool other);

/* The states of key k, their deletions and the suffix minima. */
static void key_view_build(struct key_view *kv, const struct lin_op *ops, int n, int k)
{
    memset(kv, 0, sizeof *kv);
    kv->st = calloc((size_t)n + 1, sizeof *kv->st);
    kv->unknown_writes = calloc((size_t)n + 1, sizeof *kv->unknown_writes);
    kv->dels = calloc((size_t)n + 1, sizeof *kv->dels);
    ASSERT_TRUE(kv->st != NULL && kv->unknown_writes != NULL && kv->dels != NULL);
    kv->unknown_del_invoked = UINT64_MAX;
    for (int i = 0; i < n; i++) {
        const struct lin_op *o = &ops[i];
        if (o->key != k)
            continue;
        if (o->unknown && is_write(o))
            kv->unknown_writes[kv->nuw++] = o;
        else if (o->unknown && is_delete(o))
            kv->unknown_del_invoked = min_u64(kv->unknown_del_invoked, o->invoked);
        else if (is_write(o) && o->ok)
            kv->st[kv->nw++] = (struct state){
                .w = o, .del_invoked = UINT64_MAX, .del_done = UINT64_MAX, .gap_del_invoked = UINT64_MAX};
        else if (is_delete(o) && o->count == 1 && o->has_version)
            kv->dels[kv->ndels++] = o;
    }
    qsort(kv->st, (size_t)kv->nw, sizeof *kv->st, by_version);
    qsort(kv->dels, (size_t)kv->ndels, sizeof *kv->dels, by_version_then_done);
    for (int i = 0; i < n; i++) {
        const struct lin_op *o = &ops[i];
        if (o->key != k || o->unknown || !is_delete(o) || o->count != 1)
            continue;
        int s = find_state(kv, &o->version);
        if (s >= 0) {
            kv->st[s].del_invoked = min_u64(kv->st[s].del_invoked, o->invoked);
            kv->st[s].del_done = min_u64(kv->st[s].del_done, o->done);
        } else if ((s = state_below(kv, &o->version)) >= 0 &&
                   unknown_write_may_explain(kv, o->done, o->kind == LIN_VDEL ? o->value : NULL, false)) {
            /* It removed the version of a write of unknown outcome (which
             * so took effect): a deletion of a state after the known
             * ones up to s. (A version no write could have made explains
             * nothing: the reads after it are checked as before.) */
            kv->st[s].gap_del_invoked = min_u64(kv->st[s].gap_del_invoked, o->invoked);
        }
    }
    uint64_t done = UINT64_MAX, del = UINT64_MAX;
    for (int j = kv->nw - 1; j >= 0; j--) {
        done = min_u64(done, kv->st[j].w->done);
        del = min_u64(del, min_u64(kv->st[j].del_invoked, kv->st[j].gap_del_invoked));
        kv->st[j].later_done = done;
        kv->st[j].later_del_invoked = del;
    }
}

static void key_view_free(struct key_view *kv)
{
    free(kv->st);
    free(kv->unknown_writes);
    free(kv->dels);
}

/* The earliest end of a write of a version after state s. */
static uint64_t overwritten_at(const struct key_view *kv, int s)
{
    return s + 1 < kv->nw ? kv->st[s + 1].later_done : UINT64_MAX;
}

/* A write of unknown outcome, begun before `by`, that may have written
 * `value` (NULL: any) or, with `other`, any value but it. */
static bool unknown_write_may_explain(const struct key_view *kv, uint64_t by, const char *value, bool other)
{
    for (int j = 0; j < kv->nuw; j++) {
        const struct lin_op *u = kv->unknown_writes[j];
        if (u->invoked > by)
            continue;
        if (value == NULL || (strcmp(u->value, value) == 0) != other)
            return true;
    }
    return false;
}

/* The deletion answered 1 of version v that ended first (v has one: the
 * deletion asking). */
static const struct lin_op *first_deletion(const struct key_view *kv, const ss_hlc *v)
{
    int lo = 0, hi = kv->ndels;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ss_hlc_compare(&kv->dels[mid]->version, v) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return kv->dels[lo];
}

/* A DEL or VDEL that deleted (1) removed the state with its version, at
 * some point while it ran. So that state was written: by a write with
 * that version, or by one of unknown outcome begun before the deletion
 * ended (which so took effect; the same value for a VDEL). It was not
 * deleted already by another deletion that ended before this one began
 * (a version is written once, so its state can go once), whatever wrote
 * it. And for a state of a known write: it held the VDEL's value, its
 * write began before the deletion ended, and no write of a later version
 * ended before the deletion began (that one replaced it for good, in the
 * server's order of versions). A state of a write of unknown outcome is
 * checked no further, as a read of one is (check_read): when and where
 * in the order of versions such a write took effect is not known. */
static int check_deleted(const struct key_view *kv, const struct lin_op *o)
{
    if (!o->has_version) {
        report("deleted, and no version of what it deleted", o);
        return 1;
    }
    int violations = 0;
    const struct lin_op *first = first_deletion(kv, &o->version);
    if (first != o && first->done < o->invoked) {
        report("deleted a state that another deletion had deleted before it began", o);
        report("  that deletion", first);
        violations++;
    }
    int s = find_state(kv, &o->version);
    if (s < 0) {
        if (unknown_write_may_explain(kv, o->done, o->kind == LIN_VDEL ? o->value : NULL, false))
            return violations;
        report("deleted a version nobody wrote", o);
        return violations + 1;
    }
    const struct state *st = &kv->st[s];
    if (o->kind == LIN_VDEL && strcmp(st->w->value, o->value) != 0) {
        report("VDEL deleted a state holding another value", o);
        report("  the write of that state", st->w);
        violations++;
    }
    if (st->w->invoked > o->done) {
        report("deleted a state from the future", o);
        report("  the write of that state", st->w);
        violations++;
    }
    if (overwritten_at(kv, s) < o->invoked) {
        report("deleted a state that a newer write had replaced before it began", o);
        report("  the write of that state", st->w);
        violations++;
    }
    return violations;
}

/* A VDEL answered -1 met, at some point while it ran, a state holding
 * another value. Returns the violations. */
static int check_vdel(const struct key_view *kv, const struct lin_op *o)
{
    for (int j = 0; j < kv->nw; j++) {
        const struct state *s = &kv->st[j];
        if (strcmp(s->w->value, o->value) == 0 || s->w->invoked > o->done)
            continue;
        if (overwritten_at(kv, j) < o->invoked || s->del_done < o->invoked)
            continue; /* overwritten or deleted before the VDEL began */
        return 0;
    }
    if (unknown_write_may_explain(kv, o->done, o->value, true))
        return 0;
    report("VDEL answered -1 with no other value present while it ran", o);
    return 1;
}

/* A read (GET, or a SET NX that found the key) of the state with o's
 * version. */
static int check_read(const struct key_view *kv, const struct lin_op *o)
{
    int s = find_state(kv, &o->version);
    if (s < 0) {
        if (unknown_write_may_explain(kv, o->done, o->kind == LIN_GET ? o->got : NULL, false))
            return 0;
        report("a version nobody wrote", o);
        return 1;
    }
    int violations = 0;
    const struct state *st = &kv->st[s];
    if (o->kind == LIN_GET && strcmp(o->got, st->w->value) != 0) {
        report("value of another version", o);
        violations++;
    }
    if (st->w->invoked > o->done) {
        report("read from the future", o);
        violations++;
    }
    if (overwritten_at(kv, s) < o->invoked) {
        report("stale read: a newer write finished before", o);
        report("  the write it saw", st->w);
        violations++;
    }
    if (st->del_done < o->invoked) {
        report("read a value deleted before it began", o);
        violations++;
    }
    return violations;
}

/* Absent must have been possible at some point of [invoked, done]: not
 * after a write that finished before the read began, unless that state
 * or a later one was deleted by an op begun before the read ended. */
static int check_absent(const struct key_view *kv, const struct lin_op *o)
{
    int last = -1;
    for (int j = kv->nw - 1; j >= 0 && last < 0; j--)
        if (kv->st[j].w->done < o->invoked)
            last = j;
    if (last < 0 || kv->st[last].later_del_invoked <= o->done || kv->unknown_del_invoked <= o->done)
        return 0;
    report("absent, but a write finished before and was not deleted", o);
    report("  that write", kv->st[last].w);
    return 1;
}

void lin_check(struct lin_op *ops, int n, int keys)
{
    int violations = 0;
    /* Each request has one answer, and it comes while the request is in
     * flight: any other is a duplicate or someone else's. */
    for (int i = 0; i < n; i++) {
        if (ops[i].stray) {
            fprintf(stderr, "  violation: an answer with no request of its own in flight: client %d at %llu, "
                    "correlation data %s, payload %s\n", ops[i].client, (unsigned long long)ops[i].done,
                    ops[i].value, ops[i].got);
            violations++;
        }
    }
    for (int k = 0; k < keys; k++) {
        struct key_view kv;
        key_view_build(&kv, ops, n, k);
        /* Versions respect real time, and are unique. */
        for (int i = 0; i + 1 < kv.nw; i++) {
            if (ss_hlc_compare(&kv.st[i].w->version, &kv.st[i + 1].w->version) == 0) {
                report("two writes with one version", kv.st[i].w);
                violations++;
            }
            if (kv.st[i + 1].later_done < kv.st[i].w->invoked) {
                report("a later version finished before an earlier one began", kv.st[i].w);
                violations++;
            }
        }
        for (int i = 0; i < n; i++) {
            const struct lin_op *o = &ops[i];
            if (o->key != k || o->unknown)
                continue;
            if (is_delete(o) && o->count == 1)
                violations += check_deleted(&kv, o);
            else if (o->kind == LIN_VDEL && o->count != 0)
                violations += check_vdel(&kv, o);
            bool is_read = o->kind == LIN_GET || (o->kind == LIN_SETNX && !o->ok);
            bool reads_absent = (o->kind == LIN_GET && !o->ok) || (is_delete(o) && o->count == 0);
            if (is_read && o->has_version)
                violations += check_read(&kv, o);
            else if (reads_absent)
                violations += check_absent(&kv, o);
        }
        key_view_free(&kv);
    }
    if (violations)
        dump_history(ops, n);
    ASSERT_EQ(violations, 0);
}

/* ---- the load --------------------------------------------------------- */

/* The values written and named by VDEL: of different lengths, each a
 * prefix of others, the empty one included, so that a comparison of fewer
 * bytes than both values hold deletes what it must not. */
static const char *const VALUES[] = {"v", "vv", "", "v1", "vvv", "v10", "v100"};
#define NVALUES (int)(sizeof VALUES / sizeof VALUES[0])

void lin_load_init(struct lin_load *l, int nclients, int keys, const char *prefix, int limit, bool may_refuse)
{
    ASSERT_TRUE(nclients > 0 && nclients <= LIN_CLIENTS_MAX);
    memset(l, 0, sizeof *l);
    l->nclients = nclients;
    l->keys = keys;
    l->prefix = prefix;
    l->limit = limit;
    l->may_refuse = may_refuse;
    l->seed = 7;
    l->mark = -1;
    for (int i = 0; i < nclients; i++)
        l->current[i] = -1;
}

void lin_load_connect(struct lin_load *l, int i, int port)
{
    char id[32];
    snprintf(id, sizeof id, "lin-%s%02d", l->prefix, i);
    client_connect_rr(&l->c[i], port, id, l->resp[i], sizeof l->resp[i]);
    l->off[i] = false;
}

/* The request in flight of client i (if any) never answered. */
static void never_answered(struct lin_load *l, int i)
{
    if (l->current[i] < 0)
        return;
    struct lin_op *o = &l->ops[l->current[i]];
    o->unknown = true;
    o->done = UINT64_MAX;
    l->unknown++;
    l->current[i] = -1;
}

void lin_load_drop(struct lin_load *l, int i)
{
    never_answered(l, i);
    client_close(&l->c[i]);
    l->off[i] = true;
}

/* A new operation at the end of the history; its index is l->n - 1. */
static struct lin_op *new_op(struct lin_load *l)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4096;
        l->ops = realloc(l->ops, (size_t)l->cap * sizeof *l->ops);
        ASSERT_TRUE(l->ops != NULL);
    }
    struct lin_op *o = &l->ops[l->n++];
    memset(o, 0, sizeof *o);
    return o;
}

static void issue(struct lin_load *l, int i)
{
    struct lin_op *o = new_op(l);
    l->current[i] = l->n - 1;
    o->client = i;
    o->kind = (enum lin_kind)(rand_r(&l->seed) % 5);
    o->key = (int)(rand_r(&l->seed) % (unsigned)l->keys);
    snprintf(o->value, sizeof o->value, "%s", VALUES[l->vcount++ % NVALUES]);
    char key[32];
    snprintf(key, sizeof key, "%s%d", l->prefix, o->key);
    const char *const *w = o->kind == LIN_SET     ? W("SET", key, o->value)
                           : o->kind == LIN_SETNX ? W("SET", key, o->value, "NX")
                           : o->kind == LIN_GET   ? W("GET", key)
                           : o->kind == LIN_DEL   ? W("DEL", key)
                                                  : W("VDEL", key, o->value);
    /* Fresh correlation data for every request, as the SDKs do (a repeat
     * of the same request would be answered once). */
    char corr[16];
    snprintf(corr, sizeof corr, "op%d", l->current[i]);
    o->invoked = lin_now_us();
    request_send(&l->c[i], l->resp[i], corr, NULL, NULL, w);
}

/* Is m the answer to client i's request in flight (its correlation data)? */
static bool answers_current(const struct lin_load *l, int i, const struct msg *m)
{
    if (l->current[i] < 0)
        return false;
    char corr[16];
    int cn = snprintf(corr, sizeof corr, "op%d", l->current[i]);
    return m->corr_len == cn && memcmp(m->corr, corr, (size_t)cn) == 0;
}

/* At most n - 1 bytes of src, its bytes that are not printable as dots
 * (the history is written a line per operation). */
static void printable(char *dst, size_t n, const void *src, size_t len)
{
    const unsigned char *b = src;
    size_t j = 0;
    for (; j + 1 < n && j < len; j++)
        dst[j] = b[j] >= 0x20 && b[j] < 0x7f ? (char)b[j] : '.';
    dst[j] = '\0';
}

/* Records m, an answer that came to client i with no request of its own
 * in flight (a second answer to one, or to a request of someone else):
 * the server must not send it, and lin_check fails the history for it.
 * It belongs to no key. */
static void stray(struct lin_load *l, int i, const struct msg *m)
{
    struct lin_op *o = new_op(l);
    o->client = i;
    o->key = -1;
    o->stray = true;
    o->invoked = o->done = lin_now_us();
    printable(o->value, sizeof o->value, m->corr, m->corr ? (size_t)m->corr_len : 0);
    printable(o->got, sizeof o->got, m->payload, (size_t)m->len);
}

/* Records the answer m to client i's request in flight. */
static void take(struct lin_load *l, int i, const struct msg *m)
{
    struct lin_op *o = &l->ops[l->current[i]];
    o->done = lin_now_us();
    l->current[i] = -1;
    const char *v = msg_user(m, "__ts");
    o->has_version = v != NULL;
    if (v)
        ASSERT_EQ(ss_hlc_parse((const uint8_t *)v, strlen(v), &o->version), 0);
    ss_reply rep;
    ASSERT_EQ(ss_codec_decode_reply(m->payload, (size_t)m->len, &rep), 0);
    const char *quota = "-ERR the quota has been exceeded\r\n";
    if (l->may_be_full && (o->kind == LIN_SET || o->kind == LIN_SETNX) && m->len == (int)strlen(quota) &&
        memcmp(m->payload, quota, strlen(quota)) == 0) {
        /* Refused, not done: a write that was not, and no read. */
        o->ok = false;
        o->has_version = false;
        l->full++;
        return;
    }
    if (l->may_refuse && rep.kind == SS_REPLY_ERROR) {
        /* Only the cluster's refusal is an acceptable error. */
        if (m->len != 31 || memcmp(m->payload, "-ERR the store is unavailable\r\n", 31) != 0)
            fprintf(stderr, "  a request (kind %d, key %d, value %s) answered %.*s", o->kind, o->key, o->value,
                    m->len, (const char *)m->payload);
        ASSERT_STR(m->payload, (size_t)m->len, "-ERR the store is unavailable\r\n");
        o->unknown = true;
        o->has_version = false;
        l->unknown++;
        return;
    }
    switch (o->kind) {
    case LIN_SET:
    case LIN_SETNX:
        o->ok = rep.kind == SS_REPLY_SIMPLE;
        ASSERT_TRUE(o->ok || (o->kind == LIN_SETNX && rep.kind == SS_REPLY_INT && rep.num == -1));
        ASSERT_TRUE(o->has_version);
        break;
    case LIN_GET:
        o->ok = rep.kind == SS_REPLY_BULK;
        ASSERT_TRUE(o->ok || rep.kind == SS_REPLY_NIL);
        ASSERT_TRUE(o->ok == o->has_version);
        if (o->ok)
            snprintf(o->got, sizeof o->got, "%.*s", (int)rep.str.len, (const char *)rep.str.data);
        break;
    case LIN_DEL:
    case LIN_VDEL:
        ASSERT_EQ(rep.kind, SS_REPLY_INT);
        o->count = rep.num;
        o->ok = rep.num == 1;
        ASSERT_TRUE(o->ok == o->has_version);
        break;
    }
}

void lin_load_step(struct lin_load *l)
{
    for (int i = 0; i < l->nclients; i++) {
        if (l->off[i])
            continue;
        if (l->current[i] < 0 && l->n < l->limit)
            issue(l, i);
        struct msg *m = client_wait(&l->c[i], 0);
        if (m != NULL && answers_current(l, i, m))
            take(l, i, m);
        else if (m != NULL)
            stray(l, i, m);
    }
}

int lin_load_finish(struct lin_load *l, int ms)
{
    int limit = l->limit;
    l->limit = 0; /* nothing more issued */
    uint64_t end = lin_now_us() + (uint64_t)ms * 1000u;
    for (bool busy = true; busy && lin_now_us() < end;) {
        lin_load_step(l);
        busy = false;
        for (int i = 0; i < l->nclients; i++)
            busy = busy || l->current[i] >= 0;
    }
    l->limit = limit;
    for (int i = 0; i < l->nclients; i++)
        never_answered(l, i);
    lin_check(l->ops, l->n, l->keys);
    l->answered = 0;
    for (int i = l->mark; l->mark >= 0 && i < l->n; i++)
        l->answered += !l->ops[i].unknown && !l->ops[i].stray;
    for (int i = 0; i < l->nclients; i++)
        if (!l->off[i])
            client_close(&l->c[i]);
    free(l->ops);
    l->ops = NULL;
    return l->unknown;
}
