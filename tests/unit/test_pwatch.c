/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_pwatch.c - pattern watches: registration, limits, once per client,
 * and the prefix index that spares a change most patterns. */
#include <stdio.h>
#include <string.h>

#include "../../core/errors.h"
#include "../../core/pwatch.h"
#include "../test.h"

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

/* "id(user);" for each client told, in order. */
static void collect(void *ctx, ss_bytes client, const char *username)
{
    char *out = ctx;
    size_t n = strlen(out);
    snprintf(out + n, 512 - n, "%s(%s);", (const char *)client.data, username ? username : "-");
}

static const char *told(ss_pwatch *w, const char *key)
{
    static char out[512];
    out[0] = '\0';
    ss_pwatch_each(w, B(key), collect, out);
    return out;
}

#define ASSERT_TOLD(w, key, lit)                         \
    do {                                                 \
        const char *t_ = told((w), (key));               \
        ASSERT_MEM(t_, strlen(t_), lit, strlen(lit));    \
    } while (0)

TEST(pwatch_register_match_once_and_drop)
{
    ss_pwatch *w;
    ASSERT_EQ(ss_pwatch_new(3, 0, &w), SS_OK);
    ASSERT_EQ(ss_pwatch_any(w, B("sensor/1")), false);
    ASSERT_EQ(ss_pwatch_add(w, B("c1"), "alice", B("sensor/*")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("c1"), "alice", B("sensor/*")), 0); /* already */
    ASSERT_EQ(ss_pwatch_add(w, B("c1"), "alice", B("*/1")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("c2"), NULL, B("sensor/?")), 1);
    ASSERT_EQ(ss_pwatch_pattern_count(w), 3);
    /* c1 matches twice on sensor/1 and is told once. */
    ASSERT_TOLD(w, "sensor/1", "c2(-);c1(alice);"); /* prefixes first, then suffixes */
    ASSERT_TOLD(w, "sensor/12", "c1(alice);");
    ASSERT_TOLD(w, "room/1", "c1(alice);");
    ASSERT_TOLD(w, "room/2", "");
    ASSERT_TOLD(w, "sensor", "");
    ASSERT_EQ(ss_pwatch_any(w, B("room/1")), true);
    ASSERT_EQ(ss_pwatch_any(w, B("room/2")), false);
    /* The same pattern for two clients is compiled once. */
    ASSERT_EQ(ss_pwatch_add(w, B("c2"), NULL, B("sensor/*")), 1);
    ASSERT_EQ(ss_pwatch_pattern_count(w), 3);
    ASSERT_TOLD(w, "sensor/12", "c2(-);c1(alice);");
    /* Refused patterns: SCAN's refusals. */
    ASSERT_EQ(ss_pwatch_add(w, B("c3"), NULL, B("")), SS_E_PATTERN_EMPTY);
    ASSERT_EQ(ss_pwatch_add(w, B("c3"), NULL, B("a[b")), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(ss_pwatch_add(w, B("c3"), NULL, B("a***")), SS_E_PATTERN_STARS);
    ASSERT_EQ(ss_pwatch_client_count(w, B("c3")), 0);
    /* Per-client limit: 3. */
    ASSERT_EQ(ss_pwatch_add(w, B("c1"), "alice", B("x*")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("c1"), "alice", B("y*")), SS_E_QUOTA);
    ASSERT_EQ(ss_pwatch_add(w, B("c1"), "alice", B("x*")), 0); /* again, at the limit */
    ASSERT_EQ(ss_pwatch_client_count(w, B("c1")), 3);
    ASSERT_EQ(ss_pwatch_remove(w, B("c1"), B("x*")), 1);
    ASSERT_EQ(ss_pwatch_remove(w, B("c1"), B("x*")), 0);
    ASSERT_EQ(ss_pwatch_remove(w, B("nobody"), B("sensor/*")), 0);
    ASSERT_EQ(ss_pwatch_pattern_count(w), 3); /* x* went with its last client */
    /* A disconnect drops all of a client's patterns. */
    ASSERT_EQ(ss_pwatch_drop_client(w, B("c1")), 2);
    ASSERT_EQ(ss_pwatch_drop_client(w, B("c1")), 0);
    ASSERT_TOLD(w, "sensor/1", "c2(-);");
    ASSERT_TOLD(w, "room/1", "");
    ASSERT_EQ(ss_pwatch_count(w), 2);
    ASSERT_EQ(ss_pwatch_pattern_count(w), 2);
    ss_pwatch_free(w);
}

TEST(pwatch_total_limit)
{
    ss_pwatch *w;
    ASSERT_EQ(ss_pwatch_new(0, 2, &w), SS_OK);
    ASSERT_EQ(ss_pwatch_add(w, B("a"), NULL, B("k*")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("b"), NULL, B("k*")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("c"), NULL, B("k*")), SS_E_QUOTA);
    ASSERT_EQ(ss_pwatch_client_count(w, B("c")), 0);
    ASSERT_EQ(ss_pwatch_drop_client(w, B("a")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("c"), NULL, B("k*")), 1);
    ASSERT_TOLD(w, "k", "c(-);b(-);");
    ss_pwatch_free(w); /* with registrations left: nothing leaks (ASan) */
}

/* 1,000 patterns with distinct prefixes: a key is matched against the few
 * whose prefix it starts with, not all of them. */
TEST(pwatch_index_spares_unrelated_patterns)
{
    ss_pwatch *w;
    ASSERT_EQ(ss_pwatch_new(0, 0, &w), SS_OK);
    char pat[64];
    for (int i = 0; i < 1000; i++) {
        snprintf(pat, sizeof pat, "site/%d/*", i);
        ASSERT_EQ(ss_pwatch_add(w, B("c"), NULL, B(pat)), 1);
    }
    ASSERT_EQ(ss_pwatch_add(w, B("d"), NULL, B("*/temp")), 1); /* no prefix: by its suffix */
    ASSERT_EQ(ss_pwatch_add(w, B("f"), NULL, B("?x?")), 1);    /* neither: tried on every key */
    /* A prefix longer than the index's is cut: still matched exactly. */
    char longpat[200];
    memset(longpat, 'L', 150);
    memcpy(longpat + 150, "/*", 3);
    ASSERT_EQ(ss_pwatch_add(w, B("e"), NULL, B(longpat)), 1);
    uint64_t before = ss_pwatch_matches_tried(w);
    ASSERT_TOLD(w, "site/17/x", "c(-);");
    /* Only the pattern of site/17 and ?x? were tried. */
    ASSERT_EQ(ss_pwatch_matches_tried(w) - before, 2);
    before = ss_pwatch_matches_tried(w);
    ASSERT_TOLD(w, "other/temp", "d(-);");
    ASSERT_EQ(ss_pwatch_matches_tried(w) - before, 2); /* and its suffix's, and ?x? */
    ASSERT_TOLD(w, "axb", "f(-);");
    ASSERT_TOLD(w, "temp", "");
    char longkey[200];
    memset(longkey, 'L', 150);
    memcpy(longkey, "LLL", 3);
    memcpy(longkey + 150, "/x", 3);
    ASSERT_TOLD(w, longkey, "e(-);");
    longkey[100] = 'M'; /* same first 64 bytes, differs after: tried, no match */
    before = ss_pwatch_matches_tried(w);
    ASSERT_TOLD(w, longkey, "");
    ASSERT_EQ(ss_pwatch_matches_tried(w) - before, 2);
    ss_pwatch_free(w);
}

/* Patterns without a literal prefix are indexed by their literal suffix:
 * 1,000 of them cost a key only those whose suffix it ends with. A ']'
 * or '?' ends the suffix; a class is never taken for literal bytes. */
TEST(pwatch_suffix_index)
{
    ss_pwatch *w;
    ASSERT_EQ(ss_pwatch_new(0, 0, &w), SS_OK);
    char pat[64];
    for (int i = 0; i < 1000; i++) {
        snprintf(pat, sizeof pat, "*/%d", i);
        ASSERT_EQ(ss_pwatch_add(w, B("c"), NULL, B(pat)), 1);
    }
    uint64_t before = ss_pwatch_matches_tried(w);
    /* Its suffixes of the lengths in use (2 to 4 bytes): only "/17" is a
     * group's, and only its pattern is tried. */
    ASSERT_TOLD(w, "room/17", "c(-);");
    ASSERT_EQ(ss_pwatch_matches_tried(w) - before, 1);
    before = ss_pwatch_matches_tried(w);
    ASSERT_TOLD(w, "room/x", "");
    ASSERT_EQ(ss_pwatch_matches_tried(w) - before, 0);
    ASSERT_EQ(ss_pwatch_add(w, B("d"), NULL, B("*[ab]c")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("e"), NULL, B("*a]")), 1); /* ']' outside a class is itself */
    ASSERT_EQ(ss_pwatch_add(w, B("g"), NULL, B("**/x/**")), 1);
    ASSERT_TOLD(w, "zzbc", "d(-);");
    ASSERT_TOLD(w, "zzcc", "");
    ASSERT_TOLD(w, "za]", "e(-);");
    ASSERT_TOLD(w, "q/x/r", "g(-);");
    ASSERT_EQ(ss_pwatch_drop_client(w, B("c")), 1000);
    ASSERT_EQ(ss_pwatch_pattern_count(w), 3);
    ss_pwatch_free(w);
}

/* A leading "**" and its '/' may match nothing: the pattern "**" "/pw"
 * matches the key "pw" itself, which does not end with the "/pw" after
 * the last wildcard. The suffix index must not leave such a key untold. */
TEST(pwatch_leading_double_star_matches_the_bare_tail)
{
    ss_pwatch *w;
    ASSERT_EQ(ss_pwatch_new(0, 0, &w), SS_OK);
    ASSERT_EQ(ss_pwatch_add(w, B("a"), NULL, B("**/pw")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("b"), NULL, B("**/**/b/c")), 1);
    ASSERT_EQ(ss_pwatch_add(w, B("c"), NULL, B("*/**/q")), 1);
    ASSERT_TOLD(w, "pw", "a(-);");
    ASSERT_TOLD(w, "x/pw", "a(-);");
    ASSERT_TOLD(w, "x/y/pw", "a(-);");
    ASSERT_TOLD(w, "xpw", "");
    ASSERT_TOLD(w, "b/c", "b(-);");
    ASSERT_TOLD(w, "a/b/c", "b(-);");
    ASSERT_TOLD(w, "ab/c", "");
    ASSERT_TOLD(w, "/q", "c(-);"); /* "*" matches nothing, the '/' stays */
    ASSERT_TOLD(w, "q", "");
    ASSERT_TOLD(w, "r/s/q", "c(-);");
    ss_pwatch_free(w);
}

/* The work one change may cost is bounded: the heaviest group a key can
 * find at each indexed length, summed, times the longest key. Patterns
 * full of wildcards in one group reach it and the next is refused;
 * patterns spread over groups a key cannot find together (distinct
 * prefixes of one length) cost a change only the heaviest of them. */
TEST(pwatch_work_of_a_change_is_bounded)
{
    ss_pwatch *w;
    ASSERT_EQ(ss_pwatch_new(0, 0, &w), SS_OK);
    /* 20 million steps for a key of 32,000 bytes: 624 steps a character. */
    ss_pwatch_set_work_limit(w, 20000000, 32000);
    /* "*?" 100 times and a letter: 201 tokens, 202 steps a character, a
     * suffix of one byte. */
    char pat[256];
    for (int i = 0; i < 10; i++) {
        for (int k = 0; k < 100; k++)
            memcpy(pat + 2 * k, "*?", 2);
        snprintf(pat + 200, sizeof pat - 200, "%c", 'a' + i);
        ASSERT_EQ(ss_pwatch_add(w, B("c"), NULL, B(pat)), 1);
    }
    /* Suffixes "a" to "j" are of one length, and a key ends with one of
     * them at most: only the heaviest counts, so all ten fit. */
    ASSERT_EQ(ss_pwatch_work_bound(w, 32000), 202ull * 32001);
    /* In the group every key finds ("*?" 100 times: 201 steps; 99 times:
     * 199; 98 times: 197), two fit beside those (202 + 201 + 199 = 602),
     * the third would make it 799, past 624: refused, and not kept. */
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 100 - i; k++)
            memcpy(pat + 2 * k, "*?", 2);
        pat[2 * (100 - i)] = '\0';
        ASSERT_EQ(ss_pwatch_add(w, B("c"), NULL, B(pat)), i < 2 ? 1 : SS_E_LIMIT);
    }
    ASSERT_EQ(ss_pwatch_count(w), 12);
    ASSERT_EQ(ss_pwatch_pattern_count(w), 12);
    ASSERT_EQ(ss_pwatch_work_bound(w, 32000), 602ull * 32001);
    /* A text registered already adds no work: another client may have it. */
    for (int k = 0; k < 100; k++)
        memcpy(pat + 2 * k, "*?", 2);
    pat[200] = '\0';
    ASSERT_EQ(ss_pwatch_add(w, B("d"), NULL, B(pat)), 1);
    ASSERT_EQ(ss_pwatch_count(w), 13);
    ASSERT_EQ(ss_pwatch_pattern_count(w), 12);
    /* A thousand patterns with distinct prefixes of one length: a key
     * finds one of them at most, so they fit together. */
    for (int i = 0; i < 1000; i++) {
        snprintf(pat, sizeof pat, "dev/%04d/**", i);
        ASSERT_EQ(ss_pwatch_add(w, B("e"), NULL, B(pat)), 1);
    }
    /* Dropping a client's patterns gives their work back (but for the
     * one the other client keeps). */
    ASSERT_EQ(ss_pwatch_drop_client(w, B("c")), 12);
    uint64_t left = ss_pwatch_work_bound(w, 32000);
    ASSERT_TRUE(left > 201ull * 32001 && left < 230ull * 32001); /* and the heaviest dev pattern's */
    /* No limit: anything goes. */
    ss_pwatch_set_work_limit(w, 0, 32000);
    for (int i = 0; i < 5; i++) {
        for (int k = 0; k < 100; k++)
            memcpy(pat + 2 * k, "?*", 2);
        snprintf(pat + 200, sizeof pat - 200, "?%d?", i);
        ASSERT_EQ(ss_pwatch_add(w, B("f"), NULL, B(pat)), 1);
    }
    ss_pwatch_free(w);
}
