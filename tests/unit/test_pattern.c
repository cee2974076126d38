/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_pattern.c - SCAN's patterns: the glob crate's dialect, byte exact.
 * Each case's answer is the crate's (glob 0.3, Pattern::new and
 * Pattern::matches); tests/interop/globdiff checks many more at random. */
#include <stdio.h>
#include <string.h>

#include "../../core/errors.h"
#include "../../core/pattern.h"
#include "../test.h"

/* 1: matches, 0: does not, or the compile error. */
static int m(const char *pat, const char *key)
{
    ss_pattern *p;
    int rc = ss_pattern_compile((const uint8_t *)pat, strlen(pat), &p);
    if (rc != SS_OK)
        return rc;
    bool r = ss_pattern_match(p, (const uint8_t *)key, strlen(key));
    ss_pattern_free(p);
    return r ? 1 : 0;
}

TEST(pattern_wildcards)
{
    ASSERT_EQ(m("abc", "abc"), 1);
    ASSERT_EQ(m("abc", "abcd"), 0);
    ASSERT_EQ(m("abcd", "abc"), 0);
    ASSERT_EQ(m("*", "a/b/c"), 1); /* '/' is an ordinary character */
    ASSERT_EQ(m("*", ""), 1);
    ASSERT_EQ(m("k*", "k"), 1);
    ASSERT_EQ(m("a*c", "abbbc"), 1);
    ASSERT_EQ(m("a*c", "abbbcd"), 0);
    ASSERT_EQ(m("a?c", "abc"), 1);
    ASSERT_EQ(m("a?c", "a/c"), 1);
    ASSERT_EQ(m("a?c", "ac"), 0);
    ASSERT_EQ(m("xscankey*", "scankey1"), 0); /* anchored at the start */
    ASSERT_EQ(m("scankey*", "xscankey1"), 0);
    ASSERT_EQ(m("*c", "abc"), 1);
    ASSERT_EQ(m("*c", "abcd"), 0);
    /* '\' and '^' and '!' outside brackets are themselves. */
    ASSERT_EQ(m("a\\*", "a\\xyz"), 1);
    ASSERT_EQ(m("a\\*", "a*"), 0);
    ASSERT_EQ(m("^a!", "^a!"), 1);
    ASSERT_EQ(m("]", "]"), 1);
}

TEST(pattern_classes)
{
    ASSERT_EQ(m("p[ab]", "pa"), 1);
    ASSERT_EQ(m("p[ab]", "pc"), 0);
    ASSERT_EQ(m("p[0-9]", "p5"), 1);
    ASSERT_EQ(m("p[0-9]", "pa"), 0);
    ASSERT_EQ(m("p[!0-9]", "pa"), 1);
    ASSERT_EQ(m("p[!0-9]", "p5"), 0);
    ASSERT_EQ(m("p[^0-9]", "p5"), 1); /* '^' is a member, not a negation */
    ASSERT_EQ(m("p[^0-9]", "p^"), 1);
    ASSERT_EQ(m("p[^0-9]", "pa"), 0);
    ASSERT_EQ(m("p[*]lit", "p*lit"), 1);
    ASSERT_EQ(m("p[*]lit", "pxlit"), 0);
    ASSERT_EQ(m("[?]", "?"), 1);
    ASSERT_EQ(m("[?]", "x"), 0);
    ASSERT_EQ(m("[[]", "["), 1);
    ASSERT_EQ(m("[]]", "]"), 1);     /* ']' first is a member */
    ASSERT_EQ(m("[]a]", "a"), 1);
    ASSERT_EQ(m("[!]]", "]"), 0);    /* and after '!' too */
    ASSERT_EQ(m("[!]]", "x"), 1);
    ASSERT_EQ(m("[-a]", "-"), 1);    /* '-' first or last is itself */
    ASSERT_EQ(m("[a-]", "-"), 1);
    ASSERT_EQ(m("[a-]", "b"), 0);
    ASSERT_EQ(m("[z-a]", "m"), 0);   /* a reversed range holds nothing */
    ASSERT_EQ(m("[a-c-e]", "-"), 1); /* a-c, then '-' and 'e' */
    ASSERT_EQ(m("[a-c-e]", "d"), 0);
    ASSERT_EQ(m("[]-a]", "^"), 1);   /* the range ']'..'a' */
    ASSERT_EQ(m("[!a]", "/"), 1);    /* classes take '/' */
    ASSERT_EQ(m("[\\]", "\\"), 1);
    ASSERT_EQ(m("[ab][cd]", "ad"), 1);
    ASSERT_EQ(m("[!a]b", "b"), 0);
}

TEST(pattern_utf8)
{
    /* One character is one UTF-8 character. */
    ASSERT_EQ(m("caf?", "caf\xc3\xa9"), 1);
    ASSERT_EQ(m("caf??", "caf\xc3\xa9"), 0);
    ASSERT_EQ(m("caf[\xc3\xa9\xc3\xa8]", "caf\xc3\xa8"), 1);
    ASSERT_EQ(m("[\xce\xb1-\xcf\x89]", "\xce\xbb"), 1); /* alpha-omega holds lambda */
    ASSERT_EQ(m("[!\xce\xb1-\xcf\x89]", "\xce\xbb"), 0);
    ASSERT_EQ(m("?", "\xf0\x9f\x98\x80"), 1);           /* four bytes, one character */
    /* A key that is not UTF-8 matches nothing, not even "*". */
    ASSERT_EQ(m("*", "a\xff"), 0);
    ASSERT_EQ(m("*", "\xc0\x80"), 0);         /* overlong NUL */
    ASSERT_EQ(m("*", "\xed\xa0\x80"), 0);     /* a surrogate */
    ASSERT_EQ(m("*", "\xf4\x90\x80\x80"), 0); /* above U+10FFFF */
    ASSERT_EQ(m("a*", "b\xff"), 0);
    ASSERT_EQ(m("\xff*", "\xff"), SS_E_PATTERN_UTF8);
    ASSERT_EQ(m("a\xc3", "a"), SS_E_PATTERN_UTF8); /* cut short */
    /* A NUL is a character like any other. */
    ss_pattern *p;
    ASSERT_EQ(ss_pattern_compile((const uint8_t *)"a?b", 3, &p), SS_OK);
    ASSERT_TRUE(ss_pattern_match(p, (const uint8_t *)"a\0b", 3));
    ss_pattern_free(p);
}

TEST(pattern_refused)
{
    ASSERT_EQ(m("", "x"), SS_E_PATTERN_EMPTY);
    ASSERT_EQ(m("abc[def", "x"), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(m("abc[!def", "x"), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(m("abc[", "x"), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(m("abc[!", "x"), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(m("abc[]", "x"), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(m("abc[!]", "x"), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(m("[!]", "x"), SS_E_PATTERN_BRACKET);
    ASSERT_EQ(m("a**b", "x"), SS_E_PATTERN_STARS);
    ASSERT_EQ(m("a/**b", "x"), SS_E_PATTERN_STARS);
    ASSERT_EQ(m("a/bc**", "x"), SS_E_PATTERN_STARS);
    ASSERT_EQ(m("a/*****", "x"), SS_E_PATTERN_STARS);
    ASSERT_EQ(m("***", "x"), SS_E_PATTERN_STARS);
    char longest[SS_PATTERN_MAX + 1];
    memset(longest, 'a', sizeof longest);
    ss_pattern *p;
    ASSERT_EQ(ss_pattern_compile((const uint8_t *)longest, SS_PATTERN_MAX, &p), SS_OK);
    ss_pattern_free(p);
    ASSERT_EQ(ss_pattern_compile((const uint8_t *)longest, SS_PATTERN_MAX + 1, &p), SS_E_PATTERN_LONG);
    ASSERT_TRUE(p == NULL);
}

TEST(pattern_recursive_wildcard)
{
    /* "**" alone, or as a segment: the empty run, a run ending in '/', or
     * the whole rest of the key. */
    ASSERT_EQ(m("**", "abc"), 1);
    ASSERT_EQ(m("**", ""), 1);
    ASSERT_EQ(m("**/b", "b"), 1);
    ASSERT_EQ(m("**/b", "x/y/b"), 1);
    ASSERT_EQ(m("**/b", "xb"), 0);
    ASSERT_EQ(m("a/**", "a/"), 1);
    ASSERT_EQ(m("a/**", "a/x/y"), 1);
    ASSERT_EQ(m("a/**", "a"), 0);
    ASSERT_EQ(m("a/**/b", "a/b"), 1);
    ASSERT_EQ(m("a/**/b", "a/x/y/b"), 1);
    ASSERT_EQ(m("a/**/b", "a/xb"), 0);
    ASSERT_EQ(m("**/**", "x"), 1);
    ASSERT_EQ(m("**/*", "x/y"), 1);
}

TEST(pattern_prefix_and_cost)
{
    ss_pattern *p;
    ASSERT_EQ(ss_pattern_compile((const uint8_t *)"scan\xc3\xa9key[0-9]*", 16, &p), SS_OK);
    ss_bytes pre = ss_pattern_prefix(p);
    ASSERT_STR(pre.data, pre.len, "scan\xc3\xa9key");
    ss_pattern_free(p);
    ASSERT_EQ(ss_pattern_compile((const uint8_t *)"*x", 2, &p), SS_OK);
    ASSERT_EQ(ss_pattern_prefix(p).len, 0);
    ASSERT_EQ(ss_pattern_cost(p, 10), 3 * 11);
    ss_pattern_free(p);
}

TEST(pattern_no_backtracking)
{
    /* The crate's recursion takes ages here; the automaton does not. */
    char key[4001];
    memset(key, 'a', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    ASSERT_EQ(m("*a*a*a*a*a*a*a*a*a*a*a*b", key), 0);
    key[sizeof key - 2] = 'b';
    ASSERT_EQ(m("*a*a*a*a*a*a*a*a*a*a*a*b", key), 1);
}

/* The matcher against the plainest reading of '*' and '?': every pattern
 * of up to four characters among a, /, * and ? (but those with "**",
 * which have rules of their own, above) against every key of up to six
 * characters among a, b and /. The short ones matter most: a pattern of
 * one or two tokens keeps its whole state in a few bytes, and a key that
 * matched a few characters before its end must not match at its end. */
static bool naive(const char *p, const char *k)
{
    if (*p == '\0')
        return *k == '\0';
    if (*p == '*')
        return naive(p + 1, k) || (*k != '\0' && naive(p, k + 1));
    if (*k == '\0')
        return false;
    return (*p == '?' || *p == *k) && naive(p + 1, k + 1);
}

/* The string of n characters of alphabet whose digits (base strlen) are
 * those of i; returns false when i is past the last one. */
static bool nth_word(const char *alphabet, size_t n, size_t i, char *out)
{
    size_t base = strlen(alphabet);
    for (size_t j = 0; j < n; j++, i /= base)
        out[j] = alphabet[i % base];
    out[n] = '\0';
    return i == 0;
}

TEST(pattern_agrees_with_a_naive_matcher)
{
    char pat[5], key[7];
    size_t compared = 0;
    for (size_t pn = 1; pn <= 4; pn++)
        for (size_t pi = 0; nth_word("a/*?", pn, pi, pat); pi++) {
            if (strstr(pat, "**") != NULL)
                continue;
            ss_pattern *p;
            ASSERT_EQ(ss_pattern_compile((const uint8_t *)pat, pn, &p), SS_OK);
            for (size_t kn = 0; kn <= 6; kn++)
                for (size_t ki = 0; nth_word("ab/", kn, ki, key); ki++) {
                    bool got = ss_pattern_match(p, (const uint8_t *)key, kn);
                    if (got != naive(pat, key)) {
                        char what[64];
                        snprintf(what, sizeof what, "pattern \"%s\", key \"%s\": %s", pat, key,
                                 got ? "matched" : "did not match");
                        test_fail(__FILE__, __LINE__, what);
                    }
                    compared++;
                }
            ss_pattern_free(p);
        }
    ASSERT_EQ(compared, 292 * 1093); /* 292 patterns, 1093 keys */
}
