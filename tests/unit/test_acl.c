/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_acl.c - key access rules. */
#include <string.h>

#include "../../core/acl.h"
#include "../../core/errors.h"
#include "../test.h"

static ss_bytes K(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static bool glob(const char *pat, const char *text)
{
    return ss_glob_match(pat, strlen(pat), (const uint8_t *)text, strlen(text));
}

TEST(acl_glob)
{
    ASSERT_TRUE(glob("abc", "abc"));
    ASSERT_TRUE(!glob("abc", "abcd"));
    ASSERT_TRUE(!glob("abcd", "abc"));
    ASSERT_TRUE(glob("*", ""));
    ASSERT_TRUE(glob("*", "anything/at all"));
    ASSERT_TRUE(glob("a*c", "ac"));
    ASSERT_TRUE(glob("a*c", "abbbc"));
    ASSERT_TRUE(!glob("a*c", "abbbd"));
    ASSERT_TRUE(glob("a?c", "abc"));
    ASSERT_TRUE(!glob("a?c", "ac"));
    ASSERT_TRUE(glob("*/x/*", "a/x/b"));
    ASSERT_TRUE(glob("a*b*c", "a-b-b-c"));
    ASSERT_TRUE(!glob("a*b*c", "a-c-b"));
    ASSERT_TRUE(glob("a\\*b", "a*b"));
    ASSERT_TRUE(!glob("a\\*b", "axb"));
    ASSERT_TRUE(glob("a\\?", "a?"));
    ASSERT_TRUE(!glob("a\\?", "ab"));
    ASSERT_TRUE(glob("h[ae]llo", "h[ae]llo")); /* no classes: '[' is itself */
    ASSERT_TRUE(!glob("h[ae]llo", "hallo"));
    /* Keys are bytes. */
    ASSERT_TRUE(ss_glob_match("k*", 2, (const uint8_t *)"k\0\xff", 3));
    ASSERT_TRUE(ss_glob_match("k?\xff", 3, (const uint8_t *)"k\0\xff", 3));
    /* Pathological patterns stay linear-ish: this must not take ages. */
    char text[2000];
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    ASSERT_TRUE(!glob("*a*a*a*a*a*a*a*a*a*b", text));
}

TEST(acl_rules)
{
    static const char rules[] = "# comment\n"
                                "\n"
                                "user alice readwrite *\n"
                                "client gw-01 read config/*\n"
                                "user bob client bob-laptop write bob/*\n"
                                "any readwrite clients/%c/*\n"
                                "any read users/%u\r\n"
                                "  any   read   public/with space  \n";
    ss_acl *a;
    char err[128];
    ASSERT_EQ(ss_acl_parse(rules, sizeof rules - 1, &a, err, sizeof err), SS_OK);
    ASSERT_EQ(ss_acl_rule_count(a), 6);
    ASSERT_TRUE(ss_acl_allows(a, "x", "alice", SS_ACCESS_WRITE, K("anything")));
    ASSERT_TRUE(!ss_acl_allows(a, "x", "mallory", SS_ACCESS_READ, K("anything")));
    ASSERT_TRUE(!ss_acl_allows(a, "x", NULL, SS_ACCESS_READ, K("anything")));
    ASSERT_TRUE(ss_acl_allows(a, "gw-01", NULL, SS_ACCESS_READ, K("config/a")));
    ASSERT_TRUE(!ss_acl_allows(a, "gw-01", NULL, SS_ACCESS_WRITE, K("config/a")));
    ASSERT_TRUE(!ss_acl_allows(a, "gw-02", NULL, SS_ACCESS_READ, K("config/a")));
    /* Both principals must match. */
    ASSERT_TRUE(ss_acl_allows(a, "bob-laptop", "bob", SS_ACCESS_WRITE, K("bob/x")));
    ASSERT_TRUE(!ss_acl_allows(a, "other", "bob", SS_ACCESS_WRITE, K("bob/x")));
    ASSERT_TRUE(!ss_acl_allows(a, "bob-laptop", "eve", SS_ACCESS_WRITE, K("bob/x")));
    ASSERT_TRUE(!ss_acl_allows(a, "bob-laptop", "bob", SS_ACCESS_READ, K("bob/x")));
    /* Substitution, literal even when the id holds glob characters. */
    ASSERT_TRUE(ss_acl_allows(a, "c1", NULL, SS_ACCESS_WRITE, K("clients/c1/state")));
    ASSERT_TRUE(!ss_acl_allows(a, "c1", NULL, SS_ACCESS_WRITE, K("clients/c2/state")));
    ASSERT_TRUE(ss_acl_allows(a, "*", NULL, SS_ACCESS_READ, K("clients/*/x")));
    ASSERT_TRUE(!ss_acl_allows(a, "*", NULL, SS_ACCESS_READ, K("clients/c2/x")));
    ASSERT_TRUE(ss_acl_allows(a, "z", "u1", SS_ACCESS_READ, K("users/u1")));
    ASSERT_TRUE(!ss_acl_allows(a, "z", NULL, SS_ACCESS_READ, K("users/")));
    ASSERT_TRUE(!ss_acl_allows(a, "z", NULL, SS_ACCESS_READ, K("users/%u")));
    ASSERT_TRUE(ss_acl_allows(a, "z", NULL, SS_ACCESS_READ, K("public/with space")));
    /* A name with a '/' never takes a substituting rule: "c1/x" would
     * own keys of "c1" (clients/c1/x/...), "u1/x" read users/u1/x. */
    ASSERT_TRUE(!ss_acl_allows(a, "c1/x", NULL, SS_ACCESS_WRITE, K("clients/c1/x/state")));
    ASSERT_TRUE(!ss_acl_allows(a, "c1/x", NULL, SS_ACCESS_WRITE, K("clients/c1/x/")));
    ASSERT_TRUE(!ss_acl_allows(a, "z", "u1/x", SS_ACCESS_READ, K("users/u1/x")));
    ASSERT_TRUE(ss_acl_allows(a, "c1/x", "u1", SS_ACCESS_READ, K("users/u1"))); /* its username's rule */
    ss_acl_free(a);
    /* An escaped "%" is a literal one: "\%c" is the key "%c", whatever the
     * client's id (one starting with a star too). */
    static const char esc[] = "any read a\\%c\n";
    ASSERT_EQ(ss_acl_parse(esc, sizeof esc - 1, &a, err, sizeof err), SS_OK);
    ASSERT_TRUE(ss_acl_allows(a, "c1", NULL, SS_ACCESS_READ, K("a%c")));
    ASSERT_TRUE(!ss_acl_allows(a, "c1", NULL, SS_ACCESS_READ, K("a\\c1")));
    ASSERT_TRUE(!ss_acl_allows(a, "*", NULL, SS_ACCESS_READ, K("a\\anything")));
    ASSERT_TRUE(ss_acl_allows(a, "*", NULL, SS_ACCESS_READ, K("a%c")));
    ss_acl_free(a);
}

TEST(acl_parse_errors_name_the_line)
{
    static const struct {
        const char *text;
        const char *err;
    } bad[] = {
        {"user alice\n", "line 1: missing access and key pattern"},
        {"# ok\nuser alice rw *\n", "line 2: access must be read, write or readwrite"},
        {"alice read *\n", "line 1: a rule starts with user NAME, client ID or any"},
        {"any read\n", "line 1: missing key pattern"},
        {"any user x read *\n", "line 1: any cannot be combined with user or client"},
        {"user\n", "line 1: user needs a name"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ss_acl *a = NULL;
        char err[128] = "";
        ASSERT_EQ(ss_acl_parse(bad[i].text, strlen(bad[i].text), &a, err, sizeof err), SS_E_SYNTAX);
        ASSERT_MEM(err, strlen(err), bad[i].err, strlen(bad[i].err));
        ASSERT_TRUE(a == NULL);
    }
    /* A NUL byte would cut a pattern short ("*" of "* /x"): refused, in a
     * pattern or a name. */
    static const char nul[][24] = {"any read *\0/x\n", "user al\0ice read x\n"};
    static const size_t nul_len[] = {14, 19};
    for (size_t i = 0; i < 2; i++) {
        ss_acl *a = NULL;
        char err[128] = "";
        ASSERT_EQ(ss_acl_parse(nul[i], nul_len[i], &a, err, sizeof err), SS_E_SYNTAX);
        ASSERT_STR(err, strlen(err), "line 1: a NUL byte");
        ASSERT_TRUE(a == NULL);
    }
    ss_acl *a;
    char err[128];
    ASSERT_EQ(ss_acl_load("/nonexistent/acl", &a, err, sizeof err), SS_E_IO);
    /* An empty file denies everything. */
    ASSERT_EQ(ss_acl_parse("", 0, &a, err, sizeof err), SS_OK);
    ASSERT_TRUE(!ss_acl_allows(a, "c", "u", SS_ACCESS_READ, K("k")));
    ss_acl_free(a);
}

/* A key pattern is the rest of the line with only spaces and tabs around
 * it taken off (and a CRLF file's '\r'): keys are bytes, and a pattern may
 * begin or end with any other byte, a control character too. */
TEST(acl_pattern_keeps_every_byte_but_the_blanks_around_it)
{
    static const char rules[] = "any read \t\x01k*\n"
                                "any write \x0b" "v\x1f \t\r\n";
    ss_acl *a;
    char err[128];
    ASSERT_EQ(ss_acl_parse(rules, sizeof rules - 1, &a, err, sizeof err), SS_OK);
    ASSERT_EQ(ss_acl_rule_count(a), 2);
    ASSERT_TRUE(ss_acl_allows(a, "c", NULL, SS_ACCESS_READ, K("\x01k1")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_READ, K("k1")));
    ASSERT_TRUE(ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("\x0bv\x1f")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("v\x1f")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("\x0bv")));
    ss_acl_free(a);
    /* A blank escaped with a backslash is the pattern's last byte; after
     * an escaped backslash it is a trailing blank again. */
    static const char escaped[] = "any read foo\\  \n"
                                  "any write bar\\\\ \t\n";
    ASSERT_EQ(ss_acl_parse(escaped, sizeof escaped - 1, &a, err, sizeof err), SS_OK);
    ASSERT_TRUE(ss_acl_allows(a, "c", NULL, SS_ACCESS_READ, K("foo ")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_READ, K("foo\\")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_READ, K("foo")));
    ASSERT_TRUE(ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("bar\\")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("bar\\ ")));
    ss_acl_free(a);
}

/* A CRLF file's '\r' ends the line whatever comes before it: a pattern
 * ending in a backslash does not escape it (`foo\` is the key "foo\",
 * not "foo\r"), and an escaped blank before it stays. */
TEST(acl_crlf_line_end_is_never_escaped)
{
    static const char rules[] = "any read foo\\\r\n"
                                "any write bar\\ \r\n"
                                "any readwrite baz \t\r\n";
    ss_acl *a;
    char err[128];
    ASSERT_EQ(ss_acl_parse(rules, sizeof rules - 1, &a, err, sizeof err), SS_OK);
    ASSERT_EQ(ss_acl_rule_count(a), 3);
    ASSERT_TRUE(ss_acl_allows(a, "c", NULL, SS_ACCESS_READ, K("foo\\")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_READ, K("foo\r")));
    ASSERT_TRUE(ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("bar ")));
    ASSERT_TRUE(!ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("bar \r")));
    ASSERT_TRUE(ss_acl_allows(a, "c", NULL, SS_ACCESS_WRITE, K("baz")));
    ss_acl_free(a);
}

/* What needs every key at once (BACKUP) is allowed only by a rule whose
 * pattern is stars alone, for the access asked, whose principals match:
 * "*?", "a*", or "%c*" allow many keys, not every key. */
TEST(acl_every_key_only_for_a_pattern_of_stars)
{
    static const char rules[] = "user root read *\n"
                                "user ops readwrite ***\n"
                                "user w write *\n"
                                "user q read *?\n"
                                "user p read a*\n"
                                "user s read %c*\n"
                                "user both client gw read *\n";
    ss_acl *a;
    char err[128];
    ASSERT_EQ(ss_acl_parse(rules, sizeof rules - 1, &a, err, sizeof err), SS_OK);
    ASSERT_TRUE(ss_acl_allows_every_key(a, "c", "root", SS_ACCESS_READ));
    ASSERT_TRUE(ss_acl_allows_every_key(a, "c", "ops", SS_ACCESS_READ));
    ASSERT_TRUE(ss_acl_allows_every_key(a, "c", "ops", SS_ACCESS_WRITE));
    ASSERT_TRUE(!ss_acl_allows_every_key(a, "c", "root", SS_ACCESS_WRITE));
    ASSERT_TRUE(ss_acl_allows_every_key(a, "c", "w", SS_ACCESS_WRITE));
    ASSERT_TRUE(!ss_acl_allows_every_key(a, "c", "w", SS_ACCESS_READ));
    ASSERT_TRUE(!ss_acl_allows_every_key(a, "c", "q", SS_ACCESS_READ));
    ASSERT_TRUE(!ss_acl_allows_every_key(a, "c", "p", SS_ACCESS_READ));
    ASSERT_TRUE(!ss_acl_allows_every_key(a, "*", "s", SS_ACCESS_READ));
    ASSERT_TRUE(ss_acl_allows_every_key(a, "gw", "both", SS_ACCESS_READ));
    ASSERT_TRUE(!ss_acl_allows_every_key(a, "other", "both", SS_ACCESS_READ));
    ASSERT_TRUE(!ss_acl_allows_every_key(a, "c", NULL, SS_ACCESS_READ));
    ss_acl_free(a);
}
