/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_utf8.c - the tool shows keys and values as UTF-8 where they
 * are: printable characters as they are, and as \xHH the bytes of what
 * is not printable (controls, invisible and direction-changing format
 * characters, line separators, bytes that are not UTF-8), in scan, keys
 * and watch, byte for byte. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

static const struct {
    const char *key;
    size_t len;
} utf8_keys[] = {
#define K(lit) {lit, sizeof(lit) - 1}
    K("u/caf\xc3\xa9"),          /* é */
    K("u/\xf0\x9f\x98\x80"),     /* an emoji, four bytes */
    K("u/\xe6\x97\xa5"),         /* a CJK character */
    K("u/nb\xc2\xa0sp"),         /* a no-break space */
    K("u/c1\xc2\x85"),           /* U+0085, a C1 control */
    K("u/rlo\xe2\x80\xae"),      /* U+202E, right-to-left override */
    K("u/zw\xe2\x80\x8b"),       /* U+200B, zero width space */
    K("u/ls\xe2\x80\xa8"),       /* U+2028, line separator */
    K("u/bom\xef\xbb\xbf"),      /* U+FEFF */
    K("u/bad\xff"),              /* not UTF-8: */
    K("u/over\xc0\xaf"),         /* an overlong '/' */
    K("u/sur\xed\xa0\x80"),      /* a surrogate */
    K("u/cut\xc3"),              /* cut short */
#undef K
};

/* The first field of every line ("KEY  size=..." gives KEY), each with a
 * newline, in place. */
static void first_fields(char *s)
{
    char *w = s;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        size_t field = strcspn(line, " \n");
        memmove(w, line, field);
        w += field;
        *w++ = '\n';
        line += len;
    }
    *w = '\0';
}

TEST(cli_keys_print_as_utf8)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "filler", .timeout_ms = 5000};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    for (size_t i = 0; i < sizeof utf8_keys / sizeof utf8_keys[0]; i++)
        ASSERT_EQ(ss_client_set(c, utf8_keys[i].key, utf8_keys[i].len, "v", 1, NULL, NULL), SS_OK);
    struct run r;
    /* scan: lines, so a no-break space stays; keys that are not UTF-8
     * are never listed by SCAN. */
    cli_words(&r, b.port, W("scan", "u/*"));
    ASSERT_EQ(r.status, 0);
    ASSERT_STR(r.out, r.out_len,
               "u/bom\\xef\\xbb\\xbf\n"
               "u/c1\\xc2\\x85\n"
               "u/caf\xc3\xa9\n"
               "u/ls\\xe2\\x80\\xa8\n"
               "u/nb\xc2\xa0sp\n"
               "u/rlo\\xe2\\x80\\xae\n"
               "u/zw\\xe2\\x80\\x8b\n"
               "u/\xe6\x97\xa5\n"
               "u/\xf0\x9f\x98\x80\n");
    run_free(&r);
    /* keys: fields, so a no-break space is escaped as a space is. */
    cli_words(&r, b.port, W("keys", "u/*"));
    ASSERT_EQ(r.status, 0);
    first_fields(r.out);
    ASSERT_STR(r.out, strlen(r.out),
               "u/bad\\xff\n"
               "u/bom\\xef\\xbb\\xbf\n"
               "u/c1\\xc2\\x85\n"
               "u/caf\xc3\xa9\n"
               "u/cut\\xc3\n"
               "u/ls\\xe2\\x80\\xa8\n"
               "u/nb\\xc2\\xa0sp\n"
               "u/over\\xc0\\xaf\n"
               "u/rlo\\xe2\\x80\\xae\n"
               "u/sur\\xed\\xa0\\x80\n"
               "u/zw\\xe2\\x80\\x8b\n"
               "u/\xe6\x97\xa5\n"
               "u/\xf0\x9f\x98\x80\n");
    run_free(&r);

    /* watch: key and value alike. */
    char out[600], err[600], port[16];
    snprintf(out, sizeof out, "%s/watch.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/watch.err", test_tmpdir());
    snprintf(port, sizeof port, "%d", b.port);
    char *argv[] = {(char *)cli_path(), "-p", port, "watch", "u/caf\xc3\xa9", NULL};
    pid_t w = spawn_cmd(argv, out, err);
    /* Set the key until the watch has registered and printed a line. */
    char *seen = NULL;
    for (int i = 0; i < 50; i++) {
        ASSERT_EQ(ss_client_set(c, utf8_keys[0].key, utf8_keys[0].len, "x", 1, NULL, NULL), SS_OK);
        usleep(100 * 1000);
        free(seen);
        seen = slurp(out, NULL);
        if (strchr(seen, '\n'))
            break;
    }
    /* A probe's line may still be on its way: let it land first. */
    usleep(200 * 1000);
    free(seen);
    seen = slurp(out, NULL);
    size_t before = strlen(seen);
    if (before == 0) {
        char *why = slurp(err, NULL);
        fprintf(stderr, "  watch wrote nothing; on stderr: \"%s\"\n", why);
        free(why);
    }
    ASSERT_TRUE(before > 0);
    static const char value[] = "na\xc3\xafve cr\xc3\xa8me\x01\xe2\x80\xae!\xff";
    ASSERT_EQ(ss_client_set(c, utf8_keys[0].key, utf8_keys[0].len, value, sizeof value - 1, NULL, NULL), SS_OK);
    for (int i = 0; i < 50; i++) {
        free(seen);
        seen = slurp(out, NULL);
        if (strstr(seen + before, " SET u/caf\xc3\xa9 na") != NULL && seen[strlen(seen) - 1] == '\n')
            break;
        usleep(100 * 1000);
    }
    /* The value's line (after its version), the last. */
    const char *line = strstr(seen + before, " SET u/caf\xc3\xa9 na");
    ASSERT_TRUE(line != NULL);
    ASSERT_STR(line, strlen(line),
               " SET u/caf\xc3\xa9 na\xc3\xafve\\x20cr\xc3\xa8me\\x01\\xe2\\x80\\xae!\\xff\n");
    free(seen);
    kill(w, SIGTERM);
    waitpid(w, NULL, 0);
    ss_client_close(c);
    broker_stop(&b);
}
