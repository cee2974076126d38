/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_engine_remote.c - the engine on a backend like one reached over
 * the network (remote_like, around the LMDB one): a read under way or a
 * write that conflicts leaves the request to run again; versions the
 * backend reports ahead of the engine's clock are passed. */
#include <string.h>

#include "../../core/backend_lmdb.h"
#include "../../core/errors.h"
#include "../test.h"
#include "engine_fixture.h"

/* A backend that stands for one reached over the network, wrapping the
 * LMDB one: the first read of "slow" is under way (SS_E_PENDING), the
 * first write of "raced" finds the key changed (SS_E_CONFLICT). */
struct remote_like {
    ss_backend base;
    ss_backend *inner;
    int slow_reads[3], raced_writes;
};

static bool is_key(ss_bytes k, const char *s)
{
    return k.len == strlen(s) && memcmp(k.data, s, k.len) == 0;
}

/* Besides: "slow", "slowget" and "slowdel" are pending at their first
 * read; what
 * is stored under "ahead" and "far" reads as written by a clock 50 ms and
 * 10 s ahead of ours; "gone" reads as deleted at a version ahead of ours
 * (by another broker, say); reading "broken" fails. */
static int rl_read(void *impl, ss_bytes key, ss_record *rec, ss_revision *rev)
{
    struct remote_like *r = impl;
    static const char *const pending_once[] = {"slow", "slowget", "slowdel"};
    for (int i = 0; i < 3; i++)
        if (is_key(key, pending_once[i]) && r->slow_reads[i]++ == 0)
            return SS_E_PENDING;
    int rc = r->inner->ops->read(r->inner->impl, key, rec, rev);
    if (rc == SS_OK && (is_key(key, "ahead") || is_key(key, "far"))) {
        rec->version.wall += is_key(key, "ahead") ? 50 : 10000;
        rec->version.counter = 7;
    }
    if (is_key(key, "broken"))
        return SS_E_IO;
    if (rc == SS_E_NOTFOUND && is_key(key, "gone")) {
        rec->version = (ss_hlc){.wall = T0 + 20000, .counter = 3, .node_len = 5};
        memcpy(rec->version.node, "other", 5);
    }
    return rc;
}

static int rl_put(void *impl, ss_bytes key, const ss_record *rec, ss_revision decided_on)
{
    struct remote_like *r = impl;
    if (is_key(key, "raced") && r->raced_writes++ == 0)
        return SS_E_CONFLICT;
    return r->inner->ops->put(r->inner->impl, key, rec, decided_on);
}

static int rl_del(void *impl, const ss_change *c, ss_revision decided_on)
{
    struct remote_like *r = impl;
    return r->inner->ops->del(r->inner->impl, c, decided_on);
}

static uint64_t rl_next_expiry(void *impl)
{
    struct remote_like *r = impl;
    return r->inner->ops->next_expiry(r->inner->impl);
}

static int rl_pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    struct remote_like *r = impl;
    return r->inner->ops->pop_due(r->inner->impl, now_ms, key, version);
}

static int rl_save_clock(void *impl, uint64_t wall, uint32_t counter)
{
    struct remote_like *r = impl;
    return r->inner->ops->save_clock(r->inner->impl, wall, counter);
}

static void rl_load_clock(void *impl, uint64_t *wall, uint32_t *counter)
{
    struct remote_like *r = impl;
    r->inner->ops->load_clock(r->inner->impl, wall, counter);
}

static int rl_commit(void *impl, uint64_t now_ms)
{
    struct remote_like *r = impl;
    return r->inner->ops->commit(r->inner->impl, now_ms);
}

static void rl_abort(void *impl)
{
    struct remote_like *r = impl;
    r->inner->ops->abort(r->inner->impl);
}

static void rl_settled(void *impl, int rc, uint64_t upto)
{
    struct remote_like *r = impl;
    r->inner->ops->settled(r->inner->impl, rc, upto);
}

static const struct ss_backend_ops rl_ops = {
    .name = "remote-like", .read = rl_read, .put = rl_put, .del = rl_del,
    .next_expiry = rl_next_expiry, .pop_due = rl_pop_due, .save_clock = rl_save_clock,
    .load_clock = rl_load_clock, .commit = rl_commit, .abort = rl_abort, .settled = rl_settled};

/* Through the interface: a request whose read is under way, or whose write
 * was decided on data that changed, is not answered and changes nothing;
 * run again, it is answered as if it had run once. */
/* An engine on the LMDB backend seen through remote_like. */
static void rl_open(struct fx *f, struct remote_like *rl)
{
    memset(f, 0, sizeof *f);
    f->so = ss_store_options_default();
    f->now = T0;
    f->so.path = test_tmpdir();
    ASSERT_EQ(ss_store_open(&f->so, &f->store), SS_OK);
    ASSERT_EQ(ss_backend_lmdb_new(f->store, &f->be), SS_OK);
    *rl = (struct remote_like){.base = {.ops = &rl_ops}, .inner = f->be};
    rl->base.impl = rl;
    ASSERT_EQ(ss_engine_new(&rl->base, NULL, &f->eng), SS_OK);
}

static void rl_close(struct fx *f)
{
    ASSERT_EQ(ss_engine_commit(f->eng, f->now), SS_OK);
    ss_engine_free(f->eng);
    ss_backend_lmdb_free(f->be);
    ss_store_close(f->store);
    ss_buf_free(&f->resp);
}

TEST(engine_request_runs_again_after_pending_read_or_conflict)
{
    struct fx f;
    struct remote_like rl;
    rl_open(&f, &rl);

    run(&f, now_ts(&f), NULL, "SET", "slow", "v1", NULL);
    ASSERT_EQ(f.status, SS_E_PENDING);
    ASSERT_EQ(f.resp.len, 0);
    NO_VERSION(&f);
    EVENTS(&f, "");
    run(&f, now_ts(&f), NULL, "SET", "slow", "v1", NULL);
    RESP(&f, "+OK\r\n");
    EVENTS(&f, "SET slow=v1 @1700000000001:0:StateStore\n");

    run(&f, now_ts(&f), NULL, "SET", "raced", "r", NULL);
    ASSERT_EQ(f.status, SS_E_CONFLICT);
    ASSERT_EQ(f.resp.len, 0);
    NO_VERSION(&f);
    EVENTS(&f, "");
    run(&f, NULL, NULL, "GET", "raced", NULL);
    RESP(&f, "$-1\r\n");
    run(&f, now_ts(&f), NULL, "SET", "raced", "r", NULL);
    RESP(&f, "+OK\r\n");
    /* Versions still increase: the one issued to the conflicting run is
     * never seen, the next is above it. */
    VERSION(&f, "1700000000003:0:StateStore");
    EVENTS(&f, "SET raced=r @1700000000003:0:StateStore\n");
    ASSERT_EQ(rl.slow_reads[0], 2);
    ASSERT_EQ(rl.raced_writes, 2);
    /* A GET or DEL whose read is pending answers nothing yet either. */
    run(&f, NULL, NULL, "GET", "slowget", NULL);
    ASSERT_EQ(f.status, SS_E_PENDING);
    ASSERT_EQ(f.resp.len, 0);
    run(&f, NULL, NULL, "GET", "slowget", NULL);
    RESP(&f, "$-1\r\n");
    run(&f, NULL, NULL, "DEL", "slowdel", NULL);
    ASSERT_EQ(f.status, SS_E_PENDING);
    ASSERT_EQ(f.resp.len, 0);
    run(&f, NULL, NULL, "DEL", "slowdel", NULL);
    RESP(&f, ":0\r\n");
    rl_close(&f);
}

/* A version the backend reports (of a stored record, or of the deletion
 * of an absent key) that is ahead of the engine's clock is still
 * exceeded by the next write: by a raised wall clock when it is close
 * (hlc.h's SS_HLC_MAX_LEAD_MS), by the counter when it is far. */
TEST(engine_versions_pass_those_the_backend_reports)
{
    struct fx f;
    struct remote_like rl;
    rl_open(&f, &rl);
    const char *ts = now_ts(&f);
    run(&f, ts, NULL, "SET", "ahead", "v1", NULL);
    VERSION(&f, "1700000000001:0:StateStore");
    run(&f, ts, NULL, "SET", "ahead", "v2", NULL); /* reads 1700000000051:7 */
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1700000000052:0:StateStore");
    run(&f, ts, NULL, "SET", "far", "v1", NULL);
    VERSION(&f, "1700000000053:0:StateStore");
    run(&f, ts, NULL, "SET", "far", "v2", NULL); /* reads 1700000010053:7 */
    VERSION(&f, "1700000010053:8:StateStore");
    run(&f, ts, NULL, "SET", "gone", "v", "NX", NULL); /* absent; deleted at 1700000020000:3:other */
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1700000020000:4:StateStore");
    ss_hlc last = ss_engine_clock(f.eng);
    char text[SS_HLC_TEXT_MAX + 1];
    text[ss_hlc_format(&last, text)] = '\0';
    ASSERT_STR(text, strlen(text), "1700000020000:4:StateStore");
    /* A read that fails fails the write: it is not taken for absence. */
    run(&f, ts, NULL, "SET", "broken", "v", NULL);
    ASSERT_EQ(f.status, SS_E_IO);
    NO_VERSION(&f);
    EVENTS(&f, "SET ahead=v1 @1700000000001:0:StateStore\nSET ahead=v2 @1700000000052:0:StateStore\n"
               "SET far=v1 @1700000000053:0:StateStore\nSET far=v2 @1700000010053:8:StateStore\n"
               "SET gone=v @1700000020000:4:StateStore\n");
    rl_close(&f);
}
