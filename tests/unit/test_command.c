/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_command.c - verbs, options and their errors. */
#include <string.h>

#include "../../core/command.h"
#include "../../core/errors.h"
#include "../test.h"

/* Parse a request given as words (argv of C strings). */
static int parse_words(ss_command *c, size_t argc, const char *const *words)
{
    ss_request r;
    r.argc = argc;
    for (size_t i = 0; i < argc; i++) {
        r.argv[i].data = (const uint8_t *)words[i];
        r.argv[i].len = strlen(words[i]);
    }
    memset(c, 0, sizeof *c);
    return ss_command_parse(&r, c);
}

#define PARSE(c, ...)                                                                   \
    parse_words((c), sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *),      \
                (const char *[]){__VA_ARGS__})

TEST(command_verbs)
{
    ss_command c;
    ASSERT_EQ(PARSE(&c, "SET", "k", "v"), SS_OK);
    ASSERT_EQ(c.type, SS_CMD_SET);
    ASSERT_STR(c.key.data, c.key.len, "k");
    ASSERT_STR(c.value.data, c.value.len, "v");
    ASSERT_EQ(c.cond, SS_COND_NONE);
    ASSERT_EQ(c.px, 0);
    ASSERT_EQ(PARSE(&c, "get", "k"), SS_OK);
    ASSERT_EQ(c.type, SS_CMD_GET);
    ASSERT_EQ(PARSE(&c, "Del", "k"), SS_OK);
    ASSERT_EQ(c.type, SS_CMD_DEL);
    ASSERT_EQ(PARSE(&c, "vDeL", "k", "v"), SS_OK);
    ASSERT_EQ(c.type, SS_CMD_VDEL);
    ASSERT_STR(c.value.data, c.value.len, "v");
    ASSERT_EQ(PARSE(&c, "keynotify", "k"), SS_OK);
    ASSERT_EQ(c.type, SS_CMD_KEYNOTIFY);
    ASSERT_TRUE(!c.stop);
    ASSERT_EQ(PARSE(&c, "KEYNOTIFY", "k", "stop"), SS_OK);
    ASSERT_TRUE(c.stop);
}

TEST(command_set_options_any_order)
{
    ss_command c;
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "NX", "PX", "1000"), SS_OK);
    ASSERT_EQ(c.cond, SS_COND_NX);
    ASSERT_EQ(c.px, 1000);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "px", "5", "nex"), SS_OK);
    ASSERT_EQ(c.cond, SS_COND_NEX);
    ASSERT_EQ(c.px, 5);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "Nex"), SS_OK);
    ASSERT_EQ(c.cond, SS_COND_NEX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "0009007199254740992"), SS_OK);
    ASSERT_EQ(c.px, SS_PX_MAX);
    /* Leading zeros, however many (past 19 characters too). */
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "000000000000000000000000000007"), SS_OK);
    ASSERT_EQ(c.px, 7);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "00000000000000000000000000000"), SS_E_SYNTAX); /* 0 */
    /* An option-like value or key is data, not an option. */
    ASSERT_EQ(PARSE(&c, "SET", "NX", "PX"), SS_OK);
    ASSERT_STR(c.key.data, c.key.len, "NX");
    ASSERT_STR(c.value.data, c.value.len, "PX");
    ASSERT_EQ(c.cond, SS_COND_NONE);
}

TEST(command_errors)
{
    ss_command c;
    ASSERT_EQ(PARSE(&c, "SETX", "k", "v"), SS_E_UNKNOWN_COMMAND);
    ASSERT_EQ(PARSE(&c, "", "k"), SS_E_UNKNOWN_COMMAND);
    ASSERT_EQ(PARSE(&c, "SCANX", "*"), SS_E_UNKNOWN_COMMAND);
    ASSERT_EQ(PARSE(&c, "SCAN"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "SCAN", "*", "t", "x"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "SCAN", ""), SS_E_PATTERN_EMPTY);
    ASSERT_EQ(PARSE(&c, "scan", "k*"), SS_OK);
    ASSERT_EQ(c.type, SS_CMD_SCAN);
    ASSERT_STR(c.key.data, c.key.len, "k*");
    ASSERT_TRUE(c.token.data == NULL);
    ASSERT_EQ(PARSE(&c, "SCAN", "k*", "tok"), SS_OK);
    ASSERT_STR(c.token.data, c.token.len, "tok");
    ASSERT_EQ(PARSE(&c, "SET", "k"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "SET"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "GET"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "GET", "k", "x"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "DEL", "k", "x"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "VDEL", "k"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "VDEL", "k", "v", "x"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "KEYNOTIFY"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "KEYNOTIFY", "k", "STOP", "x"), SS_E_ARITY);
    ASSERT_EQ(PARSE(&c, "GET", ""), SS_E_KEY_EMPTY);
    ASSERT_EQ(PARSE(&c, "SET", "", "v"), SS_E_KEY_EMPTY);
    ASSERT_EQ(PARSE(&c, "DEL", ""), SS_E_KEY_EMPTY);
    ASSERT_EQ(PARSE(&c, "VDEL", "", "v"), SS_E_KEY_EMPTY);
    ASSERT_EQ(PARSE(&c, "KEYNOTIFY", ""), SS_E_KEY_EMPTY);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "XX"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "NX", "NEX"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "NX", "NX"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "0"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "-5"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "+5"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "1.5"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", " 5"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", ""), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "99999999999999999999"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "9007199254740993"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "PX", "5", "PX", "6"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "SET", "k", "v", "NXX"), SS_E_SYNTAX);
    ASSERT_EQ(PARSE(&c, "KEYNOTIFY", "k", "STOPP"), SS_E_SYNTAX);
}

/* The command table's traits, verb by verb: key access for authorization,
 * fencing token, timestamp, and whether a resend gets its first answer. */
TEST(command_traits)
{
    const struct {
        int type;
        bool writes, fenced, needs_ts, remembered;
    } want[] = {
        {SS_CMD_SET, true, true, true, true},
        {SS_CMD_GET, false, false, false, false},
        {SS_CMD_DEL, true, true, false, true},
        {SS_CMD_VDEL, true, true, false, true},
        {SS_CMD_KEYNOTIFY, false, false, false, true},
        {SS_CMD_SCAN, false, false, false, false},
        {0, false, false, false, true}, /* did not parse: its error is remembered */
        {99, false, false, false, true},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ss_command_traits *t = ss_command_traits_of(want[i].type);
        ASSERT_TRUE(t != NULL);
        ASSERT_EQ(t->writes, want[i].writes);
        ASSERT_EQ(t->fenced, want[i].fenced);
        ASSERT_EQ(t->needs_ts, want[i].needs_ts);
        ASSERT_EQ(t->remembered, want[i].remembered);
        ss_command none = {0};
        if (want[i].type != SS_CMD_KEYNOTIFY)
            ASSERT_EQ(ss_command_remembered(want[i].type, &none), want[i].remembered);
    }
    /* A KEYNOTIFY that registers runs again when resent; a STOP keeps its
     * first answer. */
    ss_command kn = {.type = SS_CMD_KEYNOTIFY};
    ASSERT_TRUE(!ss_command_remembered(SS_CMD_KEYNOTIFY, &kn));
    kn.stop = true;
    ASSERT_TRUE(ss_command_remembered(SS_CMD_KEYNOTIFY, &kn));
}
