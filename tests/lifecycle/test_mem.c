/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_mem.c - the in-memory backend itself, through its table: the
 * lifecycle tests are only as good as its revisions, pages and sweep. */
#include <string.h>

#include "../../core/errors.h"
#include "../test.h"
#include "fixture.h"

static ss_bytes lc_b(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static void lc_put(ss_backend *be, const char *key, const char *value, uint64_t expiry_ms, ss_revision on)
{
    ss_record rec;
    memset(&rec, 0, sizeof rec);
    rec.value = lc_b(value);
    rec.version.wall = 1;
    rec.expiry_ms = expiry_ms;
    ASSERT_EQ(be->ops->put(be->impl, lc_b(key), &rec, on), SS_OK);
}

/* Keys seen by a page or a scan, space-separated. */
static bool lc_page_key(void *ctx, ss_bytes key, const ss_record *rec)
{
    (void)rec;
    ss_buf *seen = ctx;
    ASSERT_EQ(ss_buf_append(seen, key.data, key.len), SS_OK);
    ASSERT_EQ(ss_buf_append(seen, " ", 1), SS_OK);
    return true;
}

static bool lc_scan_key(void *ctx, ss_bytes key, ss_bytes cursor, const ss_record *rec)
{
    ASSERT_MEM(cursor.data, cursor.len, key.data, key.len);
    return lc_page_key(ctx, key, rec);
}

TEST(mem_backend_revisions_decide_conflicts)
{
    ss_backend *be;
    ASSERT_EQ(ss_mem_new(&lc_shared, &be), SS_OK);
    ss_record rec;
    ss_revision rev = 99;
    memset(&rec, 0, sizeof rec);
    ASSERT_EQ(be->ops->read(be->impl, lc_b("a"), &rec, &rev), SS_E_NOTFOUND);
    ASSERT_EQ(rev, 0);
    lc_put(be, "a", "1", 0, 0);
    ASSERT_EQ(be->ops->commit(be->impl, 0), SS_OK);
    ASSERT_EQ(be->ops->read(be->impl, lc_b("a"), &rec, &rev), SS_OK);
    ASSERT_EQ(rev, 1);
    ASSERT_MEM(rec.value.data, rec.value.len, "1", 1);
    lc_put(be, "a", "2", 0, 1);
    ASSERT_EQ(ss_mem_set_behind(be, "a", "other"), SS_OK); /* revision 2 */
    ASSERT_EQ(be->ops->commit(be->impl, 0), SS_E_CONFLICT);
    ASSERT_STR(ss_mem_value(be, "a"), 5, "other");
    /* A deletion leaves its revision and the version it removed. */
    ss_change gone = {.type = SS_CHANGE_DELETE, .key = lc_b("a"), .version = {.wall = 7}};
    ASSERT_EQ(be->ops->del(be->impl, &gone, 2), SS_OK);
    ASSERT_EQ(be->ops->commit(be->impl, 0), SS_OK);
    memset(&rec, 0, sizeof rec);
    ASSERT_EQ(be->ops->read(be->impl, lc_b("a"), &rec, &rev), SS_E_NOTFOUND);
    ASSERT_EQ(rev, 3);
    ASSERT_EQ(rec.version.wall, 7);
    be->ops->destroy(be);
}

TEST(mem_backend_pages_scans_and_sweep)
{
    ss_backend *be;
    ASSERT_EQ(ss_mem_new(&lc_shared, &be), SS_OK);
    lc_put(be, "a", "1", 0, 0);
    lc_put(be, "b", "2", 0, 0);
    lc_put(be, "c", "3", 50, 0);
    lc_put(be, "d", "4", 0, 0);
    ASSERT_EQ(be->ops->commit(be->impl, 0), SS_OK);
    ss_change gone = {.type = SS_CHANGE_DELETE, .key = lc_b("b")};
    ASSERT_EQ(be->ops->del(be->impl, &gone, 2), SS_OK);
    ASSERT_EQ(be->ops->commit(be->impl, 0), SS_OK);
    /* Pages of records: b's trace is skipped, not counted. */
    ss_buf seen = SS_BUF_INIT, next = SS_BUF_INIT;
    int rc = -1;
    ASSERT_EQ(be->ops->page_start(be->impl, lc_b(""), false, 2, true), SS_OK);
    ASSERT_EQ(be->ops->page_start(be->impl, lc_b(""), false, 2, true), SS_E_BUSY);
    ASSERT_TRUE(be->ops->page_done(be->impl, lc_page_key, &seen, &next, &rc));
    ASSERT_EQ(rc, SS_OK);
    ASSERT_BUF(seen, "a c ");
    ASSERT_BUF(next, "c");
    ss_buf_clear(&seen);
    ASSERT_EQ(be->ops->page_start(be->impl, lc_b("c"), false, 2, true), SS_OK);
    ASSERT_TRUE(be->ops->page_done(be->impl, lc_page_key, &seen, &next, &rc));
    ASSERT_BUF(seen, "d ");
    ASSERT_EQ(next.len, 0);
    ss_buf_clear(&seen);
    ASSERT_EQ(be->ops->page_start(be->impl, lc_b("c"), true, 1, true), SS_OK);
    ASSERT_TRUE(be->ops->page_done(be->impl, lc_page_key, &seen, &next, &rc));
    ASSERT_BUF(seen, "c ");
    /* No page asked for: nothing done. */
    ASSERT_TRUE(!be->ops->page_done(be->impl, lc_page_key, &seen, &next, &rc));
    /* SCAN's walk counts b's trace, and sees the open batch. */
    lc_put(be, "bb", "5", 0, 0);
    ss_buf_clear(&seen);
    ASSERT_EQ(be->ops->scan(be->impl, lc_b(""), lc_b(""), 2, lc_scan_key, &seen, &next), SS_OK);
    ASSERT_BUF(seen, "a ");
    ASSERT_BUF(next, "b");
    ASSERT_EQ(be->ops->scan(be->impl, lc_b("b"), lc_b(""), 10, lc_scan_key, &seen, &next), SS_OK);
    ASSERT_BUF(seen, "a bb c d ");
    ASSERT_EQ(next.len, 0);
    /* With a prefix: from it (b's trace counts), to the end of its keys. */
    ss_buf_clear(&seen);
    ASSERT_EQ(be->ops->scan(be->impl, lc_b("a"), lc_b("b"), 1, lc_scan_key, &seen, &next), SS_OK);
    ASSERT_EQ(seen.len, 0);
    ASSERT_BUF(next, "b");
    ASSERT_EQ(be->ops->scan(be->impl, lc_b("b"), lc_b("b"), 10, lc_scan_key, &seen, &next), SS_OK);
    ASSERT_BUF(seen, "bb ");
    ASSERT_EQ(next.len, 0);
    be->ops->abort(be->impl);
    /* The sweep: c is due at 50. */
    ASSERT_EQ(be->ops->next_expiry(be->impl), 50);
    ss_buf key = SS_BUF_INIT;
    ss_hlc version;
    ASSERT_EQ(be->ops->pop_due(be->impl, 49, &key, &version), SS_E_NOTFOUND);
    ASSERT_EQ(be->ops->pop_due(be->impl, 50, &key, &version), SS_OK);
    ASSERT_BUF(key, "c");
    ASSERT_EQ(version.wall, 1);
    ASSERT_EQ(be->ops->pop_due(be->impl, 50, &key, &version), SS_E_NOTFOUND);
    ASSERT_EQ(be->ops->commit(be->impl, 0), SS_OK);
    ASSERT_TRUE(ss_mem_value(be, "c") == NULL);
    ASSERT_EQ(be->ops->next_expiry(be->impl), UINT64_MAX);
    ss_buf_free(&key);
    ss_buf_free(&seen);
    ss_buf_free(&next);
    be->ops->destroy(be);
}
