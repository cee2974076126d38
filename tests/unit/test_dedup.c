/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_dedup.c - the resend cache: what it finds and for how long, what
 * it keeps within its limits, and what a failed batch makes it forget. */
#include <stdio.h>
#include <string.h>

#include "../../core/dedup.h"
#include "../../core/errors.h"
#include "../test.h"

#define B(s) ((ss_bytes){(const uint8_t *)(s), strlen(s)})

/* Remember answer payload/version for (client, corr) at now_ms. */
static void put(ss_dedup *d, const char *client, const char *corr, uint64_t now_ms, const char *payload,
                const char *version)
{
    ss_dedup_answer a = {.payload = B(payload), .version = B(version)};
    uint64_t id = ss_dedup_id(d, B(client), B(corr), NULL, 0);
    ASSERT_EQ(ss_dedup_put(d, B(client), B(corr), id, now_ms, &a), SS_OK);
}

/* Whether (client, corr) is found at now_ms; its answer must then be
 * payload/version, byte for byte. */
static bool found(ss_dedup *d, const char *client, const char *corr, uint64_t now_ms, const char *payload,
                  const char *version)
{
    ss_dedup_answer a;
    uint64_t id = ss_dedup_id(d, B(client), B(corr), NULL, 0);
    if (!ss_dedup_find(d, B(client), B(corr), id, now_ms, &a))
        return false;
    ASSERT_MEM(a.payload.data, a.payload.len, payload, strlen(payload));
    ASSERT_MEM(a.version.data, a.version.len, version, strlen(version));
    return true;
}

TEST(dedup_finds_within_the_window_only)
{
    ss_dedup_limits lim = {.window_ms = 100, .max_entries = 10, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    put(d, "c1", "x", 1000, "+OK\r\n", "1:0:n");
    ASSERT_TRUE(found(d, "c1", "x", 1000, "+OK\r\n", "1:0:n"));
    ASSERT_TRUE(found(d, "c1", "x", 1099, "+OK\r\n", "1:0:n"));
    ASSERT_TRUE(!found(d, "c1", "x", 1100, "", ""));
    /* A clock that stepped back does not age the entry. */
    ASSERT_TRUE(found(d, "c1", "x", 900, "+OK\r\n", "1:0:n"));
    /* Another client, other correlation data, one a prefix of the other. */
    ASSERT_TRUE(!found(d, "c2", "x", 1000, "", ""));
    ASSERT_TRUE(!found(d, "c", "1x", 1000, "", ""));
    ASSERT_TRUE(!found(d, "c1", "xx", 1000, "", ""));
    /* Ids are hashes: should another client's request hash alike, its
     * client id still tells them apart. */
    ss_dedup_answer a;
    uint64_t id = ss_dedup_id(d, B("c1"), B("x"), NULL, 0);
    ASSERT_EQ(ss_dedup_find(d, B("c9"), B("x"), id, 1000, &a), 0);
    ASSERT_EQ(ss_dedup_find(d, B("c1"), B("y"), id, 1000, &a), 0);
    ASSERT_EQ(ss_dedup_find(d, B("c1"), B("x"), id, 1000, &a), 1);
    /* The same client and correlation data with another request. */
    ss_bytes other = B("GET k");
    ASSERT_EQ(ss_dedup_find(d, B("c1"), B("x"), ss_dedup_id(d, B("c1"), B("x"), &other, 1), 1000, &a), 0);
    /* Expiry drops what is as old as the window. */
    put(d, "c1", "y", 1050, "+OK\r\n", "");
    ss_dedup_expire(d, 1149);
    ASSERT_EQ(ss_dedup_count(d), 1);
    ASSERT_TRUE(found(d, "c1", "y", 1149, "+OK\r\n", ""));
    ss_dedup_expire(d, 1150);
    ASSERT_EQ(ss_dedup_count(d), 0);
    ASSERT_EQ(ss_dedup_bytes(d), 0);
    ss_dedup_free(d);
}

TEST(dedup_keeps_within_its_limits_oldest_out_first)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 100, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    /* Bytes count each entry's parts: a payload 5 bytes longer costs 5. */
    put(d, "c", "1", 0, "abcde", "vv");
    size_t one = ss_dedup_bytes(d);
    put(d, "c", "2", 0, "abcdefghij", "vv");
    ASSERT_EQ(ss_dedup_bytes(d) - 2 * one, 5);
    ss_dedup_free(d);

    /* max_bytes: room for three entries of that size. */
    lim.max_bytes = 3 * one;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    put(d, "c", "1", 0, "abcde", "vv");
    put(d, "c", "2", 0, "abcde", "vv");
    put(d, "c", "3", 0, "abcde", "vv");
    ASSERT_EQ(ss_dedup_count(d), 3);
    put(d, "c", "4", 0, "abcde", "vv");
    ASSERT_EQ(ss_dedup_count(d), 3);
    ASSERT_EQ(ss_dedup_bytes(d), 3 * one);
    ASSERT_TRUE(!found(d, "c", "1", 0, "", ""));
    ASSERT_TRUE(found(d, "c", "2", 0, "abcde", "vv"));
    ASSERT_TRUE(found(d, "c", "4", 0, "abcde", "vv"));
    /* An entry larger than max_bytes is not kept, and evicts nothing. */
    char big[600];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ASSERT_TRUE(sizeof big > 3 * one);
    put(d, "c", "5", 0, big, "");
    ASSERT_EQ(ss_dedup_count(d), 3);
    ASSERT_TRUE(!found(d, "c", "5", 0, "", ""));
    ss_dedup_free(d);

    /* max_entries, down to one and none. */
    for (size_t max = 0; max <= 2; max++) {
        lim = (ss_dedup_limits){.window_ms = 1000, .max_entries = max, .max_bytes = 1 << 20};
        ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
        put(d, "c", "1", 0, "+OK\r\n", "");
        put(d, "c", "2", 0, "+OK\r\n", "");
        put(d, "c", "3", 0, "+OK\r\n", "");
        ASSERT_EQ(ss_dedup_count(d), max);
        ASSERT_EQ(found(d, "c", "3", 0, "+OK\r\n", ""), max >= 1);
        ASSERT_EQ(found(d, "c", "2", 0, "+OK\r\n", ""), max >= 2);
        ASSERT_TRUE(!found(d, "c", "1", 0, "", ""));
        ss_dedup_free(d);
    }
}

/* Many entries fill many blocks; each answer comes back whole. */
TEST(dedup_many_entries_across_blocks)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 100000, .max_bytes = (size_t)64 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    char corr[16], payload[160];
    for (int i = 0; i < 20000; i++) {
        snprintf(corr, sizeof corr, "%d", i);
        snprintf(payload, sizeof payload, "$%d\r\n%0*d\r\n", i % 100 + 1, i % 100 + 1, i);
        put(d, "client", corr, (uint64_t)i / 100, payload, "1:0:n");
    }
    ASSERT_EQ(ss_dedup_count(d), 20000);
    for (int i = 0; i < 20000; i++) {
        snprintf(corr, sizeof corr, "%d", i);
        snprintf(payload, sizeof payload, "$%d\r\n%0*d\r\n", i % 100 + 1, i % 100 + 1, i);
        ASSERT_TRUE(found(d, "client", corr, 200, payload, "1:0:n"));
    }
    ss_dedup_expire(d, 1199); /* the entries of times 0 to 199 are 1000 ms old or more */
    ASSERT_EQ(ss_dedup_count(d), 0);
    ASSERT_EQ(ss_dedup_bytes(d), 0);
    ss_dedup_free(d);
}

TEST(dedup_forgets_a_failed_batch)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 100, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    put(d, "c", "1", 0, "a", "");
    put(d, "c", "2", 0, "b", "");
    uint64_t m2 = ss_dedup_mark(d);
    put(d, "c", "3", 0, "c", "");
    put(d, "c", "4", 0, "d", "");
    uint64_t m4 = ss_dedup_mark(d);
    put(d, "c", "5", 0, "e", "");
    /* The batch of entries 3 and 4 failed; the one after it did not. */
    ss_dedup_forget_range(d, m2, m4);
    ASSERT_EQ(ss_dedup_count(d), 3);
    ASSERT_TRUE(found(d, "c", "1", 0, "a", ""));
    ASSERT_TRUE(found(d, "c", "2", 0, "b", ""));
    ASSERT_TRUE(!found(d, "c", "3", 0, "", ""));
    ASSERT_TRUE(!found(d, "c", "4", 0, "", ""));
    ASSERT_TRUE(found(d, "c", "5", 0, "e", ""));
    /* Everything after a mark. */
    ss_dedup_forget_since(d, m2);
    ASSERT_EQ(ss_dedup_count(d), 2);
    ASSERT_TRUE(found(d, "c", "2", 0, "b", ""));
    ASSERT_TRUE(!found(d, "c", "5", 0, "", ""));
    ss_dedup_free(d);
}
