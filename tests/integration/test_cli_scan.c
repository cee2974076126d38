/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_scan.c - statestore scan PATTERN against the real broker: bare
 * keys one per line (fit for pipes), JSON lines, misses and refusals,
 * byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

static void scan_set(ss_client *c, const char *key, size_t len)
{
    ASSERT_EQ(ss_client_set(c, key, len, "v", 1, NULL, NULL), SS_OK);
}
#define SET_LIT(c, lit) scan_set((c), (lit), sizeof(lit) - 1)

TEST(cli_scan_lists_bare_keys)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "filler", .timeout_ms = 5000};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    SET_LIT(c, "sensor/1");
    SET_LIT(c, "sensor/2");
    SET_LIT(c, "sensor/a b");
    SET_LIT(c, "sensor/tab\t");
    SET_LIT(c, "sensor/x\\y");
    SET_LIT(c, "sensor/\xc3\xa9");
    SET_LIT(c, "other");
    struct run r;
    /* One key a line in the store's order; a space as it is, a control
     * character as \xHH, a backslash doubled; nothing on stderr. */
    cli_words(&r, b.port, W("scan", "sensor/*"));
    ASSERT_EQ(r.status, 0);
    ASSERT_STR(r.out, r.out_len,
               "sensor/1\nsensor/2\nsensor/a b\nsensor/tab\\x09\nsensor/x\\\\y\nsensor/\xc3\xa9\n");
    ASSERT_EQ(strlen(r.err), 0);
    run_free(&r);
    /* The glob crate's dialect, over whole keys. */
    cli_words(&r, b.port, W("scan", "sensor/[!0-9a]*"));
    ASSERT_EQ(r.status, 0);
    ASSERT_STR(r.out, r.out_len, "sensor/tab\\x09\nsensor/x\\\\y\nsensor/\xc3\xa9\n");
    run_free(&r);
    cli_words(&r, b.port, W("scan", "sensor/?"));
    ASSERT_EQ(r.status, 0);
    ASSERT_STR(r.out, r.out_len, "sensor/1\nsensor/2\nsensor/\xc3\xa9\n");
    run_free(&r);
    /* JSON lines: the key as text and as base64. */
    cli_words(&r, b.port, W("--json", "scan", "sensor/[2\xc3\xa9]"));
    ASSERT_EQ(r.status, 0);
    ASSERT_STR(r.out, r.out_len,
               "{\"key\":\"sensor/2\",\"key_base64\":\"c2Vuc29yLzI=\"}\n"
               "{\"key\":\"sensor/\xc3\xa9\",\"key_base64\":\"c2Vuc29yL8Op\"}\n");
    run_free(&r);
    /* None match: exit 1, nothing written where it is not a terminal. */
    cli_words(&r, b.port, W("scan", "nothing*"));
    ASSERT_EQ(r.status, 1);
    ASSERT_TRUE(r.out_len == 0 && strlen(r.err) == 0);
    run_free(&r);
    cli_words(&r, b.port, W("--json", "scan", "nothing*"));
    ASSERT_EQ(r.status, 1);
    ASSERT_TRUE(r.out_len == 0 && strlen(r.err) == 0);
    run_free(&r);
    /* On a terminal (script(1) gives it one), a word. */
    char line[1200];
    snprintf(line, sizeof line, "%s -p %d scan 'nothing*'", cli_path(), b.port);
    char *term[] = {"script", "-q", "-e", "-c", line, "/dev/null", NULL};
    run_cmd(term, NULL, 0, &r);
    ASSERT_EQ(r.status, 1);
    ASSERT_STR(r.out, r.out_len, "no keys match\r\n");
    run_free(&r);
    /* Refusals: the server's text and exit 3; an empty pattern is a usage
     * error before anything is sent. */
    cli_words(&r, b.port, W("scan", "sensor/[a"));
    ASSERT_EQ(r.status, 3);
    ASSERT_EQ(r.out_len, 0);
    ASSERT_STR(r.err, strlen(r.err), "statestore: scan: invalid pattern: a '[' is not closed\n");
    run_free(&r);
    cli_words(&r, b.port, W("scan", ""));
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: scan: the pattern is empty (* lists every key)\n"
               "Usage: statestore scan PATTERN\n");
    run_free(&r);
    cli_words(&r, b.port, W("scan", "a", "b"));
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    cli_words(&r, b.port, W("scan", "*", "--nx"));
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: --nx is an option of set; scan takes no options of its own\n"
               "Usage: statestore scan PATTERN\n");
    run_free(&r);

    /* Many pages: every key once, in order, exactly. */
    enum { MANY = 2100 };
    char *want = malloc(MANY * 16);
    ASSERT_TRUE(want != NULL);
    size_t used = 0;
    for (int i = 0; i < MANY; i++) {
        char key[16];
        int n = snprintf(key, sizeof key, "many/%04d", i);
        scan_set(c, key, (size_t)n);
        used += (size_t)snprintf(want + used, 16, "%s\n", key);
    }
    cli_words(&r, b.port, W("scan", "many/*"));
    ASSERT_EQ(r.status, 0);
    ASSERT_MEM(r.out, r.out_len, want, used);
    run_free(&r);
    free(want);
    ss_client_close(c);
    broker_stop(&b);
}

/* Run `statestore LIST | sed 'SED' | statestore` in a shell (the tool
 * with -p port each time) to completion. */
static void delete_pipe(struct run *r, int port, const char *list, const char *sed)
{
    char line[2000];
    snprintf(line, sizeof line, "'%s' -p %d %s | sed '%s' | '%s' -p %d", cli_path(), port, list, sed, cli_path(),
             port);
    char *argv[] = {"/bin/sh", "-c", line, NULL};
    run_cmd(argv, NULL, 0, r);
}

/* docs/CLIENT.md's recipe: scan's lines, each made into `del -- "KEY"`
 * (a quote as \x22), piped into the tool's prompt, delete exactly the
 * keys listed: scan prints a backslash as \\ and what is not printable
 * as \xHH, the escapes a "..." word of the prompt reads back. The recipe
 * it replaced (xargs -d '\n' -n1 statestore del) deleted "sensor/a\\b"
 * for "sensor/a\b", split nothing but read no escape. A key that is not
 * UTF-8 scan never lists; keys lists it, escaped the same way (a space
 * too: the key is the line's first field). */
TEST(cli_scan_piped_into_the_prompt_deletes_exactly_its_keys)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "filler", .timeout_ms = 5000};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    SET_LIT(c, "sensor/a\\b");
    SET_LIT(c, "sensor/a\\\\b");
    SET_LIT(c, "sensor/x\\x41");
    SET_LIT(c, "sensor/t\tb");
    SET_LIT(c, "sensor/n\nl");
    SET_LIT(c, "sensor/s p");
    SET_LIT(c, "sensor/q\"x");
    SET_LIT(c, "sensor/q'y");
    SET_LIT(c, "sensor/-h");
    SET_LIT(c, "sensor/zw\xe2\x80\x8b");
    SET_LIT(c, "sensor/ff\xff");
    SET_LIT(c, "other/a\\b");
    /* The recipe as the doc gives it (with -p here). */
    char *doc = slurp("docs/CLIENT.md", NULL);
    ASSERT_TRUE(strstr(doc, "statestore scan 'sensor/*' | sed 's/\"/\\\\x22/g; s/.*/del -- \"&\"/' | statestore") !=
                NULL);
    free(doc);
    struct run r;
    delete_pipe(&r, b.port, "scan 'sensor/*'", "s/\"/\\\\x22/g; s/.*/del -- \"&\"/");
    if (r.status != 0)
        fprintf(stderr, "  the pipe said: %s", r.err);
    ASSERT_EQ(r.status, 0);
    /* Each line deleted the key it named, which was there. */
    OUT_IS(r, "(integer) 1\n(integer) 1\n(integer) 1\n(integer) 1\n(integer) 1\n"
              "(integer) 1\n(integer) 1\n(integer) 1\n(integer) 1\n(integer) 1\n");
    ASSERT_STR(r.err, strlen(r.err), "");
    run_free(&r);
    cli_words(&r, b.port, W("scan", "sensor/*"));
    ASSERT_EQ(r.status, 1);
    run_free(&r);
    /* The key that is not UTF-8 is left: keys lists it. */
    delete_pipe(&r, b.port, "keys 'sensor/*'", "s/ .*//; s/\"/\\\\x22/g; s/.*/del -- \"&\"/");
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "(integer) 1\n");
    run_free(&r);
    cli_words(&r, b.port, W("keys", "sensor/*"));
    ASSERT_EQ(r.status, 1);
    run_free(&r);
    ss_client_result g;
    ASSERT_EQ(ss_client_get(c, "other/a\\b", 9, &g), SS_OK);
    ASSERT_TRUE(g.found);
    ss_client_result_free(&g);
    ss_client_close(c);
    broker_stop(&b);
}
