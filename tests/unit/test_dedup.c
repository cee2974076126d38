/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_dedup.c - the resend cache: what it finds and for how long, what
 * it keeps within its limits, and what a failed batch makes it forget. */
#include <malloc.h>
#include <stdint.h>
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

/* A request resent past its window runs again and is remembered again,
 * while its first entry waits for the next expiry. Either entry may come
 * first in its chain (a resize reverses the chains): the live one is
 * found whatever the order, as more entries make the table grow. */
TEST(dedup_finds_a_request_remembered_again_past_its_window)
{
    ss_dedup_limits lim = {.window_ms = 100, .max_entries = 1000, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    put(d, "c1", "x", 1000, ":1\r\n", "1:0:n");
    ASSERT_TRUE(!found(d, "c1", "x", 1100, "", ""));
    put(d, "c1", "x", 1100, ":0\r\n", "");
    for (int i = 0; i < 200; i++) {
        char corr[16];
        snprintf(corr, sizeof corr, "o%d", i);
        put(d, "c2", corr, 1100, "+OK\r\n", "");
        ASSERT_TRUE(found(d, "c1", "x", 1100, ":0\r\n", ""));
    }
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

/* A failed batch that spans the newest blocks: forgetting it empties them
 * from the tail while the block it began in keeps its older entries. The
 * blocks that remain stay chained, oldest first, so that expiring every
 * entry afterwards (head first: the oldest block empties before the one
 * the batch began in) frees them all. */
TEST(dedup_forgets_whole_blocks_then_expires_the_rest)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 1000, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    /* Entries of about 1.1 KiB: some 58 to a 64 KiB block, so 200 of them
     * fill three blocks and start a fourth; the batch from entry 101 on
     * begins in the second one. */
    char corr[16], payload[1001];
    uint64_t mark = 0;
    size_t kept = 0;
    for (int i = 0; i < 200; i++) {
        if (i == 101) {
            mark = ss_dedup_mark(d);
            kept = ss_dedup_bytes(d);
        }
        snprintf(corr, sizeof corr, "c%d", i);
        memset(payload, 'a' + i % 26, sizeof payload - 1);
        payload[sizeof payload - 1] = '\0';
        put(d, "client", corr, (uint64_t)i, payload, "1:0:n");
    }
    ss_dedup_forget_since(d, mark);
    ASSERT_EQ(ss_dedup_count(d), 101);
    ASSERT_EQ(ss_dedup_bytes(d), kept);
    for (int i = 0; i < 200; i++) {
        snprintf(corr, sizeof corr, "c%d", i);
        memset(payload, 'a' + i % 26, sizeof payload - 1);
        ASSERT_EQ(found(d, "client", corr, 200, payload, "1:0:n"), i < 101);
    }
    ss_dedup_expire(d, 1100); /* times 0 to 100: all of them */
    ASSERT_EQ(ss_dedup_count(d), 0);
    ASSERT_EQ(ss_dedup_bytes(d), 0);
    /* And the cache works on. */
    put(d, "client", "again", 2000, "+OK\r\n", "2:0:n");
    ASSERT_TRUE(found(d, "client", "again", 2000, "+OK\r\n", "2:0:n"));
    ASSERT_EQ(ss_dedup_count(d), 1);
    ss_dedup_free(d);
}

/* A failed batch whose last answer is final (a KEYNOTIFY STOP) empties
 * the blocks it filled but for the newest, which keeps that answer: the
 * emptied blocks lie in the middle of the chain. They must leave it
 * without cutting the newer block off, so that expiring everything later
 * frees every block (the newer one's release walked off the chain's end
 * and crashed). */
static void put_final(ss_dedup *d, const char *client, const char *corr, uint64_t now_ms,
                      const char *payload)
{
    ss_dedup_answer a = {.payload = B(payload), .final = true};
    uint64_t id = ss_dedup_id(d, B(client), B(corr), NULL, 0);
    ASSERT_EQ(ss_dedup_put(d, B(client), B(corr), id, now_ms, &a), SS_OK);
}

TEST(dedup_forgets_blocks_in_the_middle_behind_a_final_answer)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 1000, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    put(d, "client", "before", 0, "+OK\r\n", "1:0:n"); /* committed: kept */
    uint64_t mark = ss_dedup_mark(d);
    char corr[16], payload[1001];
    /* 120 entries of about 1.1 KiB fill the first block and a second one
     * and start a third. */
    for (int i = 0; i < 120; i++) {
        snprintf(corr, sizeof corr, "c%d", i);
        memset(payload, 'a' + i % 26, sizeof payload - 1);
        payload[sizeof payload - 1] = '\0';
        put(d, "client", corr, 1, payload, "2:0:n");
    }
    put_final(d, "client", "stop", 2, ":1\r\n");
    ss_dedup_forget_since(d, mark);
    ASSERT_EQ(ss_dedup_count(d), 2);
    ASSERT_TRUE(found(d, "client", "before", 3, "+OK\r\n", "1:0:n"));
    ASSERT_TRUE(found(d, "client", "stop", 3, ":1\r\n", ""));
    ASSERT_TRUE(!found(d, "client", "c0", 3, "", ""));
    /* New entries go after the final one, in its block or newer ones. */
    for (int i = 0; i < 120; i++) {
        snprintf(corr, sizeof corr, "n%d", i);
        memset(payload, 'A' + i % 26, sizeof payload - 1);
        put(d, "client", corr, 4, payload, "3:0:n");
    }
    ASSERT_EQ(ss_dedup_count(d), 122);
    ss_dedup_expire(d, 1002); /* times 0 to 2: the first and the final one */
    ASSERT_EQ(ss_dedup_count(d), 120);
    ASSERT_TRUE(found(d, "client", "n119", 1002, payload, "3:0:n"));
    ss_dedup_expire(d, 2000);
    ASSERT_EQ(ss_dedup_count(d), 0);
    ASSERT_EQ(ss_dedup_bytes(d), 0);
    put(d, "client", "again", 3000, "+OK\r\n", "4:0:n");
    ASSERT_TRUE(found(d, "client", "again", 3000, "+OK\r\n", "4:0:n"));
    ss_dedup_free(d);
}

/* The room of an entry that expires before a newer one of its block is
 * not given again: only the newest entry's room is (a forgotten one's).
 * New entries of the same size as the expired one would otherwise be cut
 * over it and then over the live entry after it. */
TEST(dedup_expired_room_is_not_reused_under_live_entries)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 100, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    put(d, "c", "a", 0, "1111", "1:0:n");
    put(d, "c", "b", 50, "2222", "2:0:n");
    ss_dedup_expire(d, 1000); /* a only */
    ASSERT_EQ(ss_dedup_count(d), 1);
    put(d, "c", "c", 1000, "3333", "3:0:n");
    put(d, "c", "d", 1000, "4444", "4:0:n");
    put(d, "c", "e", 1000, "5555", "5:0:n");
    ASSERT_EQ(ss_dedup_count(d), 4);
    ASSERT_TRUE(!found(d, "c", "a", 1000, "", ""));
    ASSERT_TRUE(found(d, "c", "b", 1000, "2222", "2:0:n"));
    ASSERT_TRUE(found(d, "c", "c", 1000, "3333", "3:0:n"));
    ASSERT_TRUE(found(d, "c", "d", 1000, "4444", "4:0:n"));
    ASSERT_TRUE(found(d, "c", "e", 1000, "5555", "5:0:n"));
    ss_dedup_expire(d, 1050); /* b */
    ASSERT_EQ(ss_dedup_count(d), 3);
    ASSERT_TRUE(found(d, "c", "e", 1050, "5555", "5:0:n"));
    ss_dedup_expire(d, 2000);
    ASSERT_EQ(ss_dedup_count(d), 0);
    ASSERT_EQ(ss_dedup_bytes(d), 0);
    ss_dedup_free(d);
}

/* The heap in use: chunks of the arenas and mapped chunks (glibc's counts;
 * 0 under a tool that replaces the allocator, where the bound below is
 * then trivially met). */
static size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* The memory an answer takes is about its size: entries are cut from
 * blocks back to back, each rounded up only to the next alignment unit, so
 * the heap grows by about the counted bytes (with the block being filled). */
TEST(dedup_memory_follows_its_byte_count)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 10000, .max_bytes = 64 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    size_t before = heap_in_use();
    char corr[16], payload[201];
    memset(payload, 'p', sizeof payload - 1);
    payload[sizeof payload - 1] = '\0';
    for (int i = 0; i < 1000; i++) {
        snprintf(corr, sizeof corr, "%d", i);
        put(d, "client", corr, 0, payload, "1:0:n");
    }
    size_t grown = heap_in_use() - before;
    ASSERT_EQ(ss_dedup_count(d), 1000);
    /* Under the counted bytes plus one block and the table, doubled. */
    ASSERT_TRUE(grown <= 2 * (ss_dedup_bytes(d) + ((size_t)64 << 10) + 1000 * 16));
    ss_dedup_free(d);
}

/* Entries are cut from a block aligned, one after the other, each rounded
 * up to the alignment unit: an entry's header holds pointers and 64-bit
 * numbers, and is a whole number of words long, so an answer whose client
 * id and correlation data are whole words (8 bytes each here) starts on a
 * word too. A misaligned entry shows as a misaligned answer. */
TEST(dedup_entries_are_aligned)
{
    ss_dedup_limits lim = {.window_ms = 1000, .max_entries = 100, .max_bytes = 1 << 20};
    ss_dedup *d;
    ASSERT_EQ(ss_dedup_new(&lim, &d), SS_OK);
    char corr[16];
    for (int round = 0; round < 2; round++) {
        /* Answers of every length from 1 to 20: most do not end on a word. */
        for (int i = 0; i < 20; i++) {
            snprintf(corr, sizeof corr, "corr%04d", i);
            ss_dedup_answer a = {.payload = {(const uint8_t *)"abcdefghijklmnopqrst", (size_t)i + 1},
                                 .version = B("1:0:n")};
            uint64_t id = ss_dedup_id(d, B("client01"), B(corr), NULL, 0);
            ASSERT_EQ(ss_dedup_put(d, B("client01"), B(corr), id, (uint64_t)round * 1000, &a), SS_OK);
        }
        for (int i = 0; i < 20; i++) {
            snprintf(corr, sizeof corr, "corr%04d", i);
            ss_dedup_answer got;
            uint64_t id = ss_dedup_id(d, B("client01"), B(corr), NULL, 0);
            ASSERT_EQ(ss_dedup_find(d, B("client01"), B(corr), id, (uint64_t)round * 1000, &got), 1);
            ASSERT_MEM(got.payload.data, got.payload.len, "abcdefghijklmnopqrst", (size_t)i + 1);
            ASSERT_EQ((uintptr_t)got.payload.data % sizeof(void *), 0);
        }
        /* All of them expire: the next round starts a block again (the
         * spare one). */
        ss_dedup_expire(d, (uint64_t)round * 1000 + 1000);
        ASSERT_EQ(ss_dedup_count(d), 0);
    }
    ss_dedup_free(d);
}
