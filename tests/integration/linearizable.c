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
 * read ended), and a key may be absent after such a deletion.
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
                "client %d\n", i, o->kind, o->key, o->value, (unsigned long long)o->invoked,
                (unsigned long long)o->done, o->ok, (long long)o->count, v, o->got, o->unknown, o->client);
    }
    fclose(f);
    fprintf(stderr, "  the history: %s\n", path);
}

static int by_version(const void *a, const void *b)
{
    const struct state *x = a, *y = b;
    return ss_hlc_compare(&x->w->version, &y->w->version);
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
    ASSERT_TRUE(kv->st != NULL && kv->unknown_writes != NULL);
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
    }
    qsort(kv->st, (size_t)kv->nw, sizeof *kv->st, by_version);
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

/* A VDEL that deleted (1) removed a state holding exactly its value; one
 * answered -1 met, at some point while it ran, a state holding another
 * value. Returns the violations. */
static int check_vdel(const struct key_view *kv, const struct lin_op *o)
{
    if (o->count == 1) {
        int s = find_state(kv, &o->version);
        if (s >= 0 && strcmp(kv->st[s].w->value, o->value) != 0) {
            report("VDEL deleted a state holding another value", o);
            report("  the write of that state", kv->st[s].w);
            return 1;
        }
        return 0;
    }
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
            if (o->kind == LIN_VDEL && o->count != 0)
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

static void issue(struct lin_load *l, int i)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4096;
        l->ops = realloc(l->ops, (size_t)l->cap * sizeof *l->ops);
        ASSERT_TRUE(l->ops != NULL);
    }
    struct lin_op *o = &l->ops[l->n];
    memset(o, 0, sizeof *o);
    l->current[i] = l->n++;
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

/* Records the answer m to client i's request in flight. */
static void take(struct lin_load *l, int i, const struct msg *m)
{
    struct lin_op *o = &l->ops[l->current[i]];
    char corr[16];
    int cn = snprintf(corr, sizeof corr, "op%d", l->current[i]);
    ASSERT_MEM(m->corr, (size_t)m->corr_len, corr, (size_t)cn);
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
        if (m != NULL && l->current[i] >= 0)
            take(l, i, m);
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
    for (int i = 0; i < l->nclients; i++)
        if (!l->off[i])
            client_close(&l->c[i]);
    free(l->ops);
    l->ops = NULL;
    return l->unknown;
}
