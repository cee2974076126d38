/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_option.c - settings described by a table (core/option.h): each
 * kind's values at its bounds and one past them, the refusals worded to
 * the byte, and a refused value leaving the setting as it was. */
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"
#include "../../core/option.h"
#include "../test.h"

struct opt_owner {
    char *name;
    char *dir;
    uint64_t count;
    uint64_t big;
    bool on;
    int mode;
    int pair;
};

static const char *const opt_modes[] = {"always", "periodic", "never", NULL};
static const char *const opt_pair[] = {"yes", "no", NULL};
/* Longer in all than the refusal's list can hold (200 bytes). */
static const char *const opt_long[] = {
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc",
    "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
    "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
    NULL};

#define OPT_OFF(f) offsetof(struct opt_owner, f)
static const struct ss_option_spec opt_table[] = {
    {"name", SS_OPTION_STRING, OPT_OFF(name), 0, 0, NULL},
    {"dir", SS_OPTION_PATH, OPT_OFF(dir), 0, 0, NULL},
    {"count", SS_OPTION_U64, OPT_OFF(count), 5, 100, NULL},
    {"big", SS_OPTION_U64, OPT_OFF(big), 0, (uint64_t)1 << 62, NULL},
    {"on", SS_OPTION_BOOL, OPT_OFF(on), 0, 0, NULL},
    {"mode", SS_OPTION_WORD, OPT_OFF(mode), 0, 0, opt_modes},
    {"pair", SS_OPTION_WORD, OPT_OFF(pair), 0, 0, opt_pair},
    {"long", SS_OPTION_WORD, OPT_OFF(pair), 0, 0, opt_long},
};
#define OPT_N (sizeof opt_table / sizeof opt_table[0])

/* Set name to value; the answer and, on a refusal, its words. */
#define SET_OK(o, name, value) ASSERT_EQ(ss_option_set(opt_table, OPT_N, (o), (name), (value), why, sizeof why), SS_OK)
#define SET_BAD(o, name, value, want)                                                                   \
    do {                                                                                                \
        memset(why, '#', sizeof why);                                                                   \
        ASSERT_EQ(ss_option_set(opt_table, OPT_N, (o), (name), (value), why, sizeof why), SS_E_INVAL); \
        ASSERT_MEM(why, strlen(why) + 1, want, sizeof(want));                                           \
    } while (0)

TEST(option_numbers_at_their_bounds)
{
    struct opt_owner o = {.count = 7, .big = 9};
    char why[160];
    SET_OK(&o, "count", "5");
    ASSERT_EQ(o.count, 5);
    SET_OK(&o, "count", "100");
    ASSERT_EQ(o.count, 100);
    /* One below the least, one above the most, and what is not a number
     * of digits alone: refused, the value kept. */
    const char *bad[] = {"4", "101", "0", "", "-5", "+5", " 5", "5 ", "5x", "1e2", "0x10", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        SET_BAD(&o, "count", bad[i], "must be an integer from 5 to 100");
        ASSERT_EQ(o.count, 100);
    }
    SET_OK(&o, "big", "0");
    ASSERT_EQ(o.big, 0);
    SET_OK(&o, "big", "4611686018427387904");
    ASSERT_EQ(o.big, (uint64_t)1 << 62);
    SET_BAD(&o, "big", "4611686018427387905", "must be an integer from 0 to 4611686018427387904");
    ASSERT_EQ(o.big, (uint64_t)1 << 62);
}

TEST(option_strings_paths_booleans_and_words)
{
    struct opt_owner o = {0};
    char why[200];
    SET_OK(&o, "name", "first");
    ASSERT_STR(o.name, strlen(o.name), "first");
    SET_OK(&o, "name", "second"); /* replaces (and frees) the first */
    ASSERT_STR(o.name, strlen(o.name), "second");
    SET_BAD(&o, "name", "", "must not be empty");
    ASSERT_STR(o.name, strlen(o.name), "second");
    /* A name needs no slash; a path must start with one. */
    SET_OK(&o, "name", "rel/ative");
    SET_OK(&o, "dir", "/var/lib/x");
    ASSERT_STR(o.dir, strlen(o.dir), "/var/lib/x");
    SET_BAD(&o, "dir", "var/lib/x",
            "must be an absolute path (a relative one would depend on the directory the broker was started from)");
    SET_BAD(&o, "dir", "", "must not be empty");
    ASSERT_STR(o.dir, strlen(o.dir), "/var/lib/x");

    SET_OK(&o, "on", "true");
    ASSERT_TRUE(o.on);
    SET_OK(&o, "on", "false");
    ASSERT_TRUE(!o.on);
    const char *bad_bool[] = {"TRUE", "1", "yes", "", "true ", "fals"};
    for (size_t i = 0; i < sizeof bad_bool / sizeof bad_bool[0]; i++)
        SET_BAD(&o, "on", bad_bool[i], "must be true or false");
    ASSERT_TRUE(!o.on);

    /* A word's index in its list, the last one too. */
    o.mode = 1;
    SET_OK(&o, "mode", "always");
    ASSERT_EQ(o.mode, 0);
    SET_OK(&o, "mode", "never");
    ASSERT_EQ(o.mode, 2);
    SET_BAD(&o, "mode", "Always", "must be \"always\", \"periodic\" or \"never\"");
    SET_BAD(&o, "mode", "", "must be \"always\", \"periodic\" or \"never\"");
    ASSERT_EQ(o.mode, 2);
    SET_BAD(&o, "pair", "maybe", "must be \"yes\" or \"no\"");
    SET_OK(&o, "pair", "no");
    ASSERT_EQ(o.pair, 1);

    /* A refusal worded into a small buffer is cut, never overrun. */
    char small[12];
    memset(small, '#', sizeof small);
    ASSERT_EQ(ss_option_set(opt_table, OPT_N, &o, "mode", "x", small, sizeof small), SS_E_INVAL);
    ASSERT_MEM(small, sizeof small, "must be \"al\0", sizeof small);

    /* A list longer than its room is cut, the words after it left out. */
    char wide[300];
    memset(wide, '#', sizeof wide);
    ASSERT_EQ(ss_option_set(opt_table, OPT_N, &o, "long", "x", wide, sizeof wide), SS_E_INVAL);
    ASSERT_STR(wide, strlen(wide),
               "must be \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\", \"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\", \"dddddd");
    SET_OK(&o, "long", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
    ASSERT_EQ(o.pair, 4);

    ss_option_free(opt_table, OPT_N, &o);
    ASSERT_TRUE(o.name == NULL && o.dir == NULL);
    ss_option_free(opt_table, OPT_N, &o); /* twice: nothing left to free */
}

TEST(option_names_known_and_unknown)
{
    struct opt_owner o = {.count = 7};
    char why[80] = "untouched";
    ASSERT_TRUE(ss_option_known(opt_table, OPT_N, "count"));
    ASSERT_TRUE(ss_option_known(opt_table, OPT_N, "pair")); /* the table's last */
    ASSERT_TRUE(!ss_option_known(opt_table, OPT_N, "coun"));
    ASSERT_TRUE(!ss_option_known(opt_table, OPT_N, "counts"));
    ASSERT_TRUE(!ss_option_known(opt_table, OPT_N, ""));
    /* Only the first n entries are the table's. */
    ASSERT_TRUE(!ss_option_known(opt_table, 2, "count"));
    ASSERT_EQ(ss_option_set(opt_table, OPT_N, &o, "Count", "9", why, sizeof why), SS_E_NOTFOUND);
    ASSERT_EQ(ss_option_set(opt_table, 2, &o, "count", "9", why, sizeof why), SS_E_NOTFOUND);
    ASSERT_EQ(o.count, 7);
    ASSERT_STR(why, strlen(why), "untouched");
}
