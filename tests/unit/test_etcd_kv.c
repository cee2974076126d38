/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_etcd_kv.c - the etcd backend's reading of Txn replies (etcd/kv.h)
 * from their bytes: what a member, or anything listening where one was
 * configured, sends back is untrusted. */
#include <string.h>

#include "../../core/buf.h"
#include "../../core/errors.h"
#include "../../etcd/kv.h"
#include "../test.h"

/* Unpack the bytes as a Txn reply asking for the failure branch's key. */
static int unpack(const uint8_t *bytes, size_t n, ss_etcd_reply *r, ss_etcd_kv *kv)
{
    ss_buf b = SS_BUF_INIT;
    ASSERT_EQ(ss_buf_append(&b, bytes, n), SS_OK);
    int rc = ss_etcd_txn_unpack(&b, r, kv);
    ss_buf_free(&b);
    return rc;
}

/* A failed Txn's one response read as the Range it asked for: a
 * response of another kind (the oneof holds a DeleteRange: its count
 * would be read as the Range's number of keys, its next field as their
 * array) is a protocol error, not a key. */
TEST(etcd_txn_reply_read_only_as_the_range_it_asked_for)
{
    ss_etcd_reply r;
    ss_etcd_kv kv;
    /* responses { response_delete_range { deleted: 1 } }, not succeeded */
    static const uint8_t del[] = {0x1a, 0x04, 0x1a, 0x02, 0x10, 0x01};
    ASSERT_EQ(unpack(del, sizeof del, &r, &kv), SS_E_PROTOCOL);
    ASSERT_TRUE(r.msg == NULL);
    ASSERT_TRUE(!kv.found);
    /* The same with succeeded: the failure branch is not read at all. */
    static const uint8_t del_ok[] = {0x10, 0x01, 0x1a, 0x04, 0x1a, 0x02, 0x10, 0x01};
    ASSERT_EQ(unpack(del_ok, sizeof del_ok, &r, &kv), SS_OK);
    ASSERT_TRUE(r.succeeded && !kv.found);
    ss_etcd_reply_free(&r);
    /* header { revision: 7 }, responses { response_range { kvs { key: "k",
     * create_revision: 3, mod_revision: 5, value: "v" } } } */
    static const uint8_t one[] = {0x0a, 0x02, 0x18, 0x07, 0x1a, 0x0e, 0x0a, 0x0c, 0x12, 0x0a, 0x0a,
                                  0x01, 'k',  0x10, 0x03, 0x18, 0x05, 0x2a, 0x01, 'v'};
    ASSERT_EQ(unpack(one, sizeof one - 1, &r, &kv), SS_E_PROTOCOL); /* cut short */
    ASSERT_EQ(unpack(one, sizeof one, &r, &kv), SS_OK);
    ASSERT_TRUE(!r.succeeded && kv.found);
    ASSERT_EQ(r.revision, 7);
    ASSERT_EQ(kv.mod_revision, 5);
    ASSERT_EQ(kv.create_revision, 3);
    ASSERT_MEM(kv.value.data, kv.value.len, "v", 1);
    ss_etcd_reply_free(&r);
    /* An empty Range: the key is absent. */
    static const uint8_t none[] = {0x1a, 0x02, 0x0a, 0x00};
    ASSERT_EQ(unpack(none, sizeof none, &r, &kv), SS_OK);
    ASSERT_TRUE(!kv.found);
    ss_etcd_reply_free(&r);
    /* Two keys where one was asked for. */
    static const uint8_t two[] = {0x1a, 0x0c, 0x0a, 0x0a, 0x12, 0x03, 0x0a, 0x01,
                                  'a',  0x12, 0x03, 0x0a, 0x01, 'b'};
    ASSERT_EQ(unpack(two, sizeof two, &r, &kv), SS_E_PROTOCOL);
    ASSERT_TRUE(!kv.found);
}

/* The watch asks etcd to split a large message into pieces (fragment:
 * the create request's field 8), and a piece says more of its last
 * revision follows (the response's field 7). */
TEST(etcd_watch_asks_for_and_reads_fragments)
{
    ss_buf req = SS_BUF_INIT;
    ss_bytes key = {(const uint8_t *)"p/", 2}, end = {(const uint8_t *)"p0", 2};
    ASSERT_EQ(ss_etcd_watch_pack(&req, key, end, 5), SS_OK);
    bool fragment = false;
    for (size_t i = 0; i + 1 < req.len; i++)
        fragment = fragment || (req.data[i] == 0x40 && req.data[i + 1] == 0x01);
    ASSERT_TRUE(fragment);
    ss_buf_free(&req);
    /* header { revision: 9 }, fragment: true, events { kv { key: "k",
     * mod_revision: 9 } } */
    static const uint8_t piece[] = {0x0a, 0x02, 0x18, 0x09, 0x38, 0x01, 0x5a, 0x07,
                                    0x12, 0x05, 0x0a, 0x01, 'k',  0x18, 0x09};
    ss_etcd_watch w;
    ASSERT_EQ(ss_etcd_watch_unpack((ss_bytes){piece, sizeof piece}, &w), SS_OK);
    ASSERT_TRUE(w.fragment);
    ASSERT_EQ(w.revision, 9);
    ASSERT_EQ(w.n_events, 1);
    ss_etcd_event ev;
    ss_etcd_watch_event(&w, 0, &ev);
    ASSERT_TRUE(!ev.deleted);
    ASSERT_MEM(ev.key.data, ev.key.len, "k", 1);
    ASSERT_EQ(ev.kv.mod_revision, 9);
    ss_etcd_watch_free(&w);
    /* The last piece, or a message etcd did not split: no fragment. */
    ASSERT_EQ(ss_etcd_watch_unpack((ss_bytes){piece, 4}, &w), SS_OK);
    ASSERT_TRUE(!w.fragment);
    ss_etcd_watch_free(&w);
}
