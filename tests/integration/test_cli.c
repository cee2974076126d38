/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli.c - the statestore command-line tool against the real broker:
 * every subcommand and flag, exit codes, binary data, watch and lock. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"


/* Run the CLI with the arguments of ap (NULL-terminated), after "-p PORT"
 * unless port is 0. */
static void cli_v(struct run *r, int port, const void *in, size_t inlen, va_list ap)
{
    char *argv[64];
    char portbuf[16];
    int n = 0;
    argv[n++] = (char *)cli_path();
    if (port) {
        argv[n++] = "-p";
        snprintf(portbuf, sizeof portbuf, "%d", port);
        argv[n++] = portbuf;
    }
    char *a;
    while ((a = va_arg(ap, char *)) != NULL && n < 63)
        argv[n++] = a;
    argv[n] = NULL;
    run_cmd(argv, in, inlen, r);
}

/* Run the CLI with "-p PORT" and the given arguments (NULL-terminated). */
static void cli(struct run *r, int port, const void *in, size_t inlen, ...)
{
    va_list ap;
    va_start(ap, inlen);
    cli_v(r, port, in, inlen, ap);
    va_end(ap);
}

#define OUT(r, lit) ASSERT_MEM((r).out, (r).out_len, lit, sizeof(lit) - 1)

TEST(cli_commands_flags_and_exit_codes)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    cli(&r, b.port, NULL, 0, "set", "k", "v1", NULL);
    ASSERT_EQ(r.status, 0);
    OUT(r, "OK\n");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT(r, "v1");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "k", "v2", "--nx", NULL);
    ASSERT_EQ(r.status, 2);
    OUT(r, "");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "k", "v1", "--nex", "--px", "60000", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--json", "set", "k", "v3", "--nex", NULL);
    ASSERT_EQ(r.status, 2);
    ASSERT_TRUE(strncmp(r.out, "{\"applied\":false,\"version\":\"", 28) == 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "get", "absent", NULL);
    ASSERT_EQ(r.status, 1);
    OUT(r, "");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--json", "get", "absent", NULL);
    ASSERT_EQ(r.status, 1);
    OUT(r, "{\"found\":false,\"version\":null}\n");
    run_free(&r);
    /* Binary values through stdin and stdout, and from a file. */
    static const char bin[] = "a\0b\r\n\xff\x80 z";
    cli(&r, b.port, bin, sizeof bin - 1, "set", "bin", "-", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "get", "bin", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_MEM(r.out, r.out_len, bin, sizeof bin - 1);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--json", "get", "bin", NULL);
    ASSERT_TRUE(strstr(r.out, "\"value\":\"a\\u0000b\\u000d\\u000a\\u00ff\\u0080 z\"") != NULL);
    ASSERT_TRUE(strstr(r.out, "\"value_base64\":\"YQBiDQr/gCB6\"") != NULL);
    run_free(&r);
    char path[600];
    snprintf(path, sizeof path, "%s/value.bin", test_tmpdir());
    FILE *f = fopen(path, "wb");
    fwrite(bin, 1, sizeof bin - 1, f);
    fclose(f);
    cli(&r, b.port, NULL, 0, "set", "file", "-f", path, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "vdel", "file", "-f", path, NULL);
    ASSERT_EQ(r.status, 0);
    OUT(r, "1\n");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "vdel", "bin", "nope", NULL);
    ASSERT_EQ(r.status, 2);
    OUT(r, "-1\n");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--json", "vdel", "bin", "nope", NULL);
    ASSERT_EQ(r.status, 2);
    OUT(r, "{\"deleted\":-1,\"version\":null}\n");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--json", "del", "bin", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"deleted\":1,\"version\":\"", 24) == 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "del", "bin", NULL);
    ASSERT_EQ(r.status, 1);
    OUT(r, "0\n");
    run_free(&r);
    /* Fencing tokens. */
    cli(&r, b.port, NULL, 0, "--json", "set", "lock", "me", "--nex", NULL);
    char token[128];
    const char *v = strstr(r.out, "\"version\":\"");
    ASSERT_TRUE(v != NULL);
    snprintf(token, sizeof token, "%.*s", (int)strcspn(v + 11, "\""), v + 11);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "res", "x", "--fencing-token", token, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "res", "y", NULL);
    ASSERT_EQ(r.status, 3);
    ASSERT_TRUE(strstr(r.err, "a fencing token is required for this request") != NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--json", "del", "res", "--fencing-token", "1:0:old", NULL);
    ASSERT_EQ(r.status, 3);
    ASSERT_TRUE(strstr(r.out, "\"code\":\"FT_LOWER\"") != NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "del", "res", "--fencing-token", token, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    /* Connection flags: client id, username and password, timeout. */
    cli(&r, b.port, NULL, 0, "-i", "cli-id", "-u", "user", "-P", "secret", "--timeout", "2000", "get",
        "k", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    ASSERT_TRUE(broker_log_has(&b, "as cli-id (p5"));
    ASSERT_TRUE(broker_log_has(&b, "u'user'"));
    /* Usage errors, help and version. */
    cli(&r, b.port, NULL, 0, "frob", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "k", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "k", "v", "--nx", "--nex", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "k", "v", "--px", "soon", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    static const char *subs[] = {"set", "get", "del", "vdel", "watch", "lock"};
    for (int i = 0; i < 6; i++) {
        cli(&r, b.port, NULL, 0, subs[i], "--help", NULL);
        ASSERT_EQ(r.status, 0);
        ASSERT_TRUE(strncmp(r.out, "Usage: statestore ", 18) == 0);
        ASSERT_TRUE(strstr(r.out, subs[i]) != NULL);
        run_free(&r);
    }
    cli(&r, b.port, NULL, 0, "--help", NULL);
    ASSERT_TRUE(strstr(r.out, "Exit status") != NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--version", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "statestore ", 11) == 0);
    run_free(&r);
    broker_stop(&b);
    /* Nobody listening: connection failure, with the reason. */
    cli(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.err, ": Connection refused\n") != NULL);
    run_free(&r);
    /* A broker without the state store: timeout, also a connection failure. */
    struct broker plain = {.no_plugin = true};
    broker_start(&plain);
    cli(&r, plain.port, NULL, 0, "--timeout", "300", "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.err, "statestore: get: no state store answered within 300 ms: is the "
                              "statestore plugin loaded in the broker?") != NULL);
    run_free(&r);
    broker_stop(&plain);
}

static char *const *watch_argv(int port, bool json)
{
    static char portbuf[16];
    static char *argv[10];
    snprintf(portbuf, sizeof portbuf, "%d", port);
    int n = 0;
    argv[n++] = (char *)cli_path();
    argv[n++] = "-p";
    argv[n++] = portbuf;
    if (json)
        argv[n++] = "--json";
    argv[n++] = "watch";
    argv[n++] = "w1";
    argv[n++] = "w 2";
    argv[n] = NULL;
    return argv;
}

/* Wait until file holds at least `lines` lines (or `ms`); returns it. */
static char *wait_lines(const char *path, int lines, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        char *s = slurp(path, NULL);
        int n = 0;
        for (char *p = s; *p; p++)
            n += *p == '\n';
        if (n >= lines)
            return s;
        free(s);
        usleep(10000);
    }
    return slurp(path, NULL);
}

/* Set `key` to "probe" until the watch writing to `out` shows it (it has
 * registered by then; a fixed sleep is too short under the sanitizers),
 * and return how many lines the probes left in `out`. */
static int probe_watch(int port, const char *out, const char *key)
{
    char want[300];
    snprintf(want, sizeof want, "SET %s probe", key);
    bool seen = false;
    for (int i = 0; i < 50 && !seen; i++) {
        struct run r;
        cli(&r, port, NULL, 0, "set", key, "probe", NULL);
        run_free(&r);
        char *s = wait_lines(out, 1, 500);
        seen = strstr(s, want) != NULL;
        free(s);
    }
    ASSERT_TRUE(seen);
    usleep(200 * 1000);
    char *s = slurp(out, NULL);
    int lines = 0;
    for (char *p = s; *p; p++)
        lines += *p == '\n';
    free(s);
    return lines;
}

/* Drop the version (first word) of every line. */
static void strip_versions(char *s)
{
    char *w = s;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
        char *sp = memchr(line, ' ', len);
        char *from = sp ? sp + 1 : line;
        size_t n = len - (size_t)(from - line);
        memmove(w, from, n);
        w += n;
        line += len;
    }
    *w = '\0';
}

TEST(cli_watch_set_delete_expiry_and_restart)
{
    struct broker b = {0};
    broker_start(&b);
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/watch.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/watch.err", test_tmpdir());
    pid_t w = spawn_cmd(watch_argv(b.port, false), out, err);
    int probes = probe_watch(b.port, out, "w1");
    struct run r;
    char *s;
    /* w1 is deleted before "w 2" is set, so that the order of the four
     * changes does not hang on how soon "w 2" expires (its 100 ms can end
     * before the next command has started, on a slow machine). */
    cli(&r, b.port, NULL, 0, "set", "w1", "hello world", NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "del", "w1", NULL);
    run_free(&r);
    cli(&r, b.port, "x\ny", 3, "set", "w 2", "-", "--px", "100", NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "other", "1", NULL);
    run_free(&r);
    s = wait_lines(out, probes + 4, 5000);
    /* Each line starts with the version "<ms>:<n>:StateStore ". */
    ASSERT_TRUE(strstr(s, ":StateStore SET w1 hello\\x20world\n") != NULL);
    strip_versions(s);
    char *rest = s;
    for (int i = 0; i < probes; i++) {
        ASSERT_TRUE(strncmp(rest, "SET w1 probe\n", 13) == 0);
        rest += 13;
    }
    ASSERT_STR(rest, strlen(rest), "SET w1 hello\\x20world\nDELETE w1\nSET w\\x202 x\\x0ay\nDELETE w\\x202\n");
    free(s);
    /* The broker restarts: watch reconnects, says so, and goes on. */
    broker_stop(&b);
    broker_start(&b);
    char *e = NULL;
    for (int i = 0; i < 1500; i++) {
        e = slurp(err, NULL);
        if (strstr(e, "notifications may have been missed"))
            break;
        free(e);
        e = NULL;
        usleep(10000);
    }
    ASSERT_TRUE(e != NULL);
    free(e);
    for (int i = 0; i < 50; i++) {
        cli(&r, b.port, NULL, 0, "set", "w1", "again", NULL);
        run_free(&r);
        s = wait_lines(out, probes + 5, 500);
        bool got = strstr(s, "SET w1 again") != NULL;
        free(s);
        if (got)
            break;
    }
    s = slurp(out, NULL);
    ASSERT_TRUE(strstr(s, "SET w1 again\n") != NULL);
    free(s);
    kill(w, SIGINT);
    int status;
    waitpid(w, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* JSON lines. */
    pid_t j = spawn_cmd(watch_argv(b.port, true), out, err);
    /* Set until the watch shows it (registered by then); every line is
     * the same but for its version. */
    for (int i = 0; i < 50; i++) {
        cli(&r, b.port, NULL, 0, "set", "w1", "j", NULL);
        run_free(&r);
        s = wait_lines(out, 1, 500);
        bool got = s[0] != '\0';
        free(s);
        if (got)
            break;
    }
    s = slurp(out, NULL);
    static const char head[] = "{\"key\":\"w1\",\"operation\":\"SET\",\"value\":\"j\","
                               "\"value_base64\":\"ag==\",\"version\":\"";
    ASSERT_MEM(s, sizeof head - 1, head, sizeof head - 1);
    free(s);
    kill(j, SIGTERM);
    waitpid(j, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    broker_stop(&b);
}

/* watch --pattern: every key a pattern matches, once per change (a KEY
 * that a pattern matches too is told once), again after a broker restart;
 * a refused pattern and --pattern elsewhere are errors. */
TEST(cli_watch_pattern)
{
    struct broker b = {0};
    broker_start(&b);
    char out[600], err[600], portbuf[16];
    snprintf(out, sizeof out, "%s/watch.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/watch.err", test_tmpdir());
    snprintf(portbuf, sizeof portbuf, "%d", b.port);
    char *argv[] = {(char *)cli_path(), "-p", portbuf, "watch", "sensor/1", "--pattern", "sensor/*",
                    "--pattern=*/t", NULL};
    pid_t w = spawn_cmd(argv, out, err);
    int probes = probe_watch(b.port, out, "sensor/0");
    struct run r;
    char *s;
    const char *const sets[][2] = {{"sensor/1", "a"}, {"room/t", "b"}, {"room/x", "no"}, {"sensor/t", "c"}};
    for (int i = 0; i < 4; i++) {
        cli(&r, b.port, NULL, 0, "set", sets[i][0], sets[i][1], NULL);
        run_free(&r);
    }
    cli(&r, b.port, NULL, 0, "del", "sensor/1", NULL);
    run_free(&r);
    s = wait_lines(out, probes + 4, 5000);
    usleep(200 * 1000);
    free(s);
    s = slurp(out, NULL);
    strip_versions(s);
    /* The probes, then each change once. */
    char *rest = s;
    for (int i = 0; i < probes; i++) {
        ASSERT_TRUE(strncmp(rest, "SET sensor/0 probe\n", 19) == 0);
        rest += 19;
    }
    ASSERT_STR(rest, strlen(rest), "SET sensor/1 a\nSET room/t b\nSET sensor/t c\nDELETE sensor/1\n");
    free(s);
    /* The broker restarts: the patterns are registered again. */
    broker_stop(&b);
    broker_start(&b);
    bool got = false;
    for (int i = 0; i < 100 && !got; i++) {
        cli(&r, b.port, NULL, 0, "set", "hall/t", "again", NULL);
        run_free(&r);
        usleep(50 * 1000);
        s = slurp(out, NULL);
        got = strstr(s, "SET hall/t again\n") != NULL;
        free(s);
    }
    ASSERT_TRUE(got);
    kill(w, SIGINT);
    int status;
    waitpid(w, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* Refusals. */
    cli(&r, b.port, NULL, 0, "watch", "--pattern", "a[b", NULL);
    ASSERT_EQ(r.status, 3);
    ASSERT_STR(r.err, strlen(r.err), "statestore: watch: invalid pattern: a '[' is not closed\n");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "watch", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "watch: give a KEY or --pattern PATTERN") != NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "get", "k", "--pattern", "x", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "--pattern is an option of watch") != NULL);
    run_free(&r);
    broker_stop(&b);
}

/* Two contenders appending "in"/"out" to one file: never both inside. */
TEST(cli_lock_two_contenders)
{
    struct broker b = {0};
    broker_start(&b);
    char log[600], script[1400], port[16];
    snprintf(log, sizeof log, "%s/critical.log", test_tmpdir());
    snprintf(port, sizeof port, "%d", b.port);
    snprintf(script, sizeof script,
             "echo \"$1 in $STATESTORE_LOCK_TOKEN\" >> %s; sleep 0.4; echo \"$1 out\" >> %s", log, log);
    char out1[600], err1[600], out2[600], err2[600];
    snprintf(out1, sizeof out1, "%s/l1.out", test_tmpdir());
    snprintf(err1, sizeof err1, "%s/l1.err", test_tmpdir());
    snprintf(out2, sizeof out2, "%s/l2.out", test_tmpdir());
    snprintf(err2, sizeof err2, "%s/l2.err", test_tmpdir());
    char *a1[] = {(char *)cli_path(), "-p", port, "lock", "L", "--ttl", "1000", "--", "sh", "-c", script, "sh", "A", NULL};
    char *a2[] = {(char *)cli_path(), "-p", port, "lock", "L", "--ttl", "1000", "--", "sh", "-c", script, "sh", "B", NULL};
    pid_t p1 = spawn_cmd(a1, out1, err1);
    pid_t p2 = spawn_cmd(a2, out2, err2);
    int s1, s2;
    waitpid(p1, &s1, 0);
    waitpid(p2, &s2, 0);
    ASSERT_TRUE(WIFEXITED(s1) && WEXITSTATUS(s1) == 0);
    ASSERT_TRUE(WIFEXITED(s2) && WEXITSTATUS(s2) == 0);
    char *s = slurp(log, NULL);
    /* "X in TOKEN\nX out\nY in TOKEN\nY out\n" */
    char x = s[0], y = x == 'A' ? 'B' : 'A';
    char want_tail[64];
    snprintf(want_tail, sizeof want_tail, "%c out\n%c in ", x, y);
    ASSERT_TRUE(strstr(s, want_tail) != NULL);
    ASSERT_TRUE(strstr(s, ":StateStore\n") != NULL);
    free(s);
    /* The command's exit status is passed on; --wait gives up (exit 2). */
    struct run r;
    cli(&r, b.port, NULL, 0, "lock", "L", "--", "sh", "-c", "exit 7", NULL);
    ASSERT_EQ(r.status, 7);
    run_free(&r);
    /* --holder names the holder (the lock key's value); --json reports. */
    char inner[700];
    snprintf(inner, sizeof inner, "%s -p %s get L", cli_path(), port);
    cli(&r, b.port, NULL, 0, "--json", "lock", "L", "--holder", "me-123", "--", "sh", "-c", inner, NULL);
    ASSERT_EQ(r.status, 0);
    static const char head[] = "me-123{\"lock\":\"L\",\"holder\":\"me-123\",\"token\":\"";
    ASSERT_MEM(r.out, sizeof head - 1, head, sizeof head - 1);
    ASSERT_TRUE(strstr(r.out, "\",\"lost\":false,\"exit_status\":0}\n") != NULL);
    run_free(&r);
    char hold[] = "sleep 3";
    char *a3[] = {(char *)cli_path(), "-p", port, "lock", "L", "--ttl", "600", "--", "sh", "-c", hold, NULL};
    pid_t p3 = spawn_cmd(a3, out1, err1);
    /* Held once L exists (a fixed sleep can end before the holder, under
     * the sanitizers, has taken it). */
    for (int i = 0; i < 100; i++) {
        cli(&r, b.port, NULL, 0, "get", "L", NULL);
        int got = r.status;
        run_free(&r);
        if (got == 0)
            break;
        usleep(50 * 1000);
    }
    cli(&r, b.port, NULL, 0, "--json", "lock", "L", "--wait", "300", "--", "true", NULL);
    ASSERT_EQ(r.status, 2);
    OUT(r, "{\"lock\":\"L\",\"acquired\":false}\n");
    run_free(&r);
    /* The holder is killed: its lease expires and the next one gets in. */
    kill(p3, SIGKILL);
    waitpid(p3, &s1, 0);
    uint64_t t0 = now_ms();
    cli(&r, b.port, NULL, 0, "lock", "L", "--wait", "5000", "--", "true", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(now_ms() - t0 < 2000);
    run_free(&r);
    broker_stop(&b);
}

/* The example program of docs/CLIENT.md: the document shows exactly the
 * file that is compiled, and the program does what the document says. */
TEST(client_documented_example_runs)
{
    size_t doc_len, src_len;
    char *doc = slurp("docs/CLIENT.md", &doc_len);
    char *src = slurp("examples/client_example.c", &src_len);
    ASSERT_TRUE(src_len > 100);
    ASSERT_TRUE(strstr(doc, src) != NULL);
    free(doc);
    free(src);
    const char *exe = getenv("SS_EXAMPLE");
    ASSERT_TRUE(exe != NULL);
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    char *argv[] = {(char *)exe, "127.0.0.1", port, NULL};
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    /* Notifications arrive on the network thread: their lines may come
     * before or after the answers' lines. */
    static const char *lines[] = {"notified: greeting set\n", "set: applied\n", "get: hello\n",
                                  "increment: success\n", "del: 1\n", "notified: greeting deleted\n"};
    size_t total = 0;
    for (int i = 0; i < 6; i++) {
        if (strstr(r.out, lines[i]) == NULL)
            test_fail_mem(__FILE__, __LINE__, "example output", r.out, r.out_len, lines[i],
                          strlen(lines[i]));
        total += strlen(lines[i]);
    }
    ASSERT_EQ(r.out_len, total);
    ASSERT_TRUE(strstr(r.out, "set: applied\nget: hello\n") != NULL ||
                strstr(r.out, "set: applied\nnotified: greeting set\nget: hello\n") != NULL);
    run_free(&r);
    run_cmd(argv, NULL, 0, &r);
    run_free(&r);
    /* The counter went up once per run. */
    struct run g;
    char *gargv[] = {(char *)cli_path(), "-p", port, "get", "counter", NULL};
    run_cmd(gargv, NULL, 0, &g);
    ASSERT_STR(g.out, g.out_len, "2");
    run_free(&g);
    broker_stop(&b);
}

/* TLS: a listener that requires client certificates; --cafile, --capath,
 * --cert and --key. Certificates are made for the test with openssl. */
TEST(cli_tls_flags)
{
    const char *d = test_tmpdir();
    tls_certs(d, "DNS:localhost,IP:127.0.0.1", true);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cd %s && mkdir capath && cp ca.crt capath/ && openssl rehash capath", d);
    ASSERT_EQ(system(cmd), 0);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra,
             "# TLS for the listener above\ncafile %s/ca.crt\ncertfile %s/server.crt\n"
             "keyfile %s/server.key\nrequire_certificate true\n",
             d, d, d);
    broker_start(&b);
    char ca[600], capath[600], cert[600], key[600];
    snprintf(ca, sizeof ca, "%s/ca.crt", d);
    snprintf(capath, sizeof capath, "%s/capath", d);
    snprintf(cert, sizeof cert, "%s/client.crt", d);
    snprintf(key, sizeof key, "%s/client.key", d);
    struct run r;
    cli(&r, b.port, NULL, 0, "-h", "127.0.0.1", "--cafile", ca, "--cert", cert, "--key", key, "set",
        "tls", "yes", NULL);
    ASSERT_EQ(r.status, 0);
    OUT(r, "OK\n");
    run_free(&r);
    cli(&r, b.port, NULL, 0, "-h", "localhost", "--capath", capath, "--cert", cert, "--key", key,
        "get", "tls", NULL);
    ASSERT_EQ(r.status, 0);
    OUT(r, "yes");
    run_free(&r);
    /* Without a client certificate, or without TLS, no connection. */
    cli(&r, b.port, NULL, 0, "-h", "127.0.0.1", "--cafile", ca, "--timeout", "1000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "-h", "127.0.0.1", "--timeout", "1000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    broker_stop(&b);
}

/* Run the CLI without -p: the port comes from STATESTORE_PORT. */
static void cli_env(struct run *r, ...)
{
    va_list ap;
    va_start(ap, r);
    cli_v(r, 0, NULL, 0, ap);
    va_end(ap);
}

#define ERR_HAS(r, text) ASSERT_TRUE(strstr((r).err, text) != NULL)

/* Values that start with '-' (negative readings), "--" as the end of the
 * options, usage errors that say what was wrong, and STATESTORE_PORT. */
TEST(cli_dash_values_usage_errors_and_environment)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    ASSERT_EQ(setenv("STATESTORE_PORT", port, 1), 0);
    struct run r;
    cli_env(&r, "set", "temp", "-5", NULL);
    ASSERT_EQ(r.status, 0);
    OUT(r, "OK\n");
    run_free(&r);
    cli_env(&r, "get", "temp", NULL);
    OUT(r, "-5");
    run_free(&r);
    /* On a terminal (script(1) gives it one) a newline follows the value. */
    char line[1200];
    snprintf(line, sizeof line, "%s get temp", cli_path());
    char *tty[] = {"script", "-q", "-e", "-c", line, "/dev/null", NULL};
    run_cmd(tty, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    OUT(r, "-5\r\n");
    run_free(&r);
    cli_env(&r, "vdel", "temp", "-5", NULL);
    ASSERT_EQ(r.status, 0);
    OUT(r, "1\n");
    run_free(&r);
    cli_env(&r, "set", "-x", "-1.5e3", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_env(&r, "get", "-x", NULL);
    OUT(r, "-1.5e3");
    run_free(&r);
    /* After "--" even an option's spelling is a value. */
    cli_env(&r, "set", "--", "k", "--nx", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_env(&r, "get", "k", NULL);
    OUT(r, "--nx");
    run_free(&r);
    cli_env(&r, "vdel", "--", "k", "--nx", NULL);
    OUT(r, "1\n");
    run_free(&r);
    /* Usage errors: a message, then the command's usage line only. */
    cli_env(&r, "-p", "70000", "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: -p needs an integer from 1 to 65535, not \"70000\"\n"
               "Usage: statestore [OPTIONS] COMMAND [ARGS]   (statestore --help for more)\n");
    run_free(&r);
    cli_env(&r, "get", "k", "--port=0", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: --port needs an integer from 1 to 65535, not \"0\"\n"
               "Usage: statestore get KEY\n");
    run_free(&r);
    cli_env(&r, "del", "k", "--fencing-token", "garbage", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: --fencing-token needs a version like 1700000000000:0:node, not \"garbage\"\n");
    run_free(&r);
    cli_env(&r, "set", "k", "--bogus", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "unknown option --bogus");
    run_free(&r);
    cli_env(&r, "set", "k", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: set needs a value (an argument, -f FILE, or - for standard input)\n"
               "Usage: statestore set KEY VALUE|-|-f FILE [--nx|--nex] [--px MS] [--fencing-token HLC]\n");
    run_free(&r);
    cli_env(&r, "lock", "name", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: lock: give a COMMAND after --\n");
    run_free(&r);
    cli_env(&r, "set", "k", "-f", "/nonexistent/value", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: cannot open /nonexistent/value: No such file or directory\n");
    run_free(&r);
    cli_env(&r, "--timeout", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: --timeout needs a value\n");
    run_free(&r);
    ASSERT_EQ(setenv("STATESTORE_PORT", "port", 1), 0);
    cli_env(&r, "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: STATESTORE_PORT needs an integer from 1 to 65535, not \"port\"\n");
    run_free(&r);
    /* -p wins over the environment. */
    cli_env(&r, "-p", port, "get", "-x", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    ASSERT_EQ(setenv("STATESTORE_HOST", "no-such-host.invalid", 1), 0);
    cli_env(&r, "-p", port, "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, "cannot connect to no-such-host.invalid:");
    ERR_HAS(r, ": unknown host no-such-host.invalid\n");
    run_free(&r);
    unsetenv("STATESTORE_HOST");
    unsetenv("STATESTORE_PORT");
    broker_stop(&b);
}

/* ping: a round trip, exit 0; no broker: exit 4. stats: the figures, as
 * text and JSON; none published: exit 4 with the reason. */
TEST(cli_ping_and_stats)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "sys_interval 1\n");
    broker_start(&b);
    struct run r;
    cli(&r, b.port, NULL, 0, "ping", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "answered in ", 12) == 0 && strstr(r.out, " ms\n") != NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "ping", "--json", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"ok\":true,\"ms\":", 16) == 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    usleep(1300000); /* the next publication counts the SET */
    cli(&r, b.port, NULL, 0, "stats", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.out, "backend                          lmdb\n") != NULL);
    ASSERT_TRUE(strstr(r.out, "\nkeys                             1\n") != NULL);
    ASSERT_TRUE(strstr(r.out, "\nrequests/set/ok                  1\n") != NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "stats", "--json", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"age_ms\":", 10) == 0); /* sorted first */
    ASSERT_TRUE(strstr(r.out, ",\"backend\":\"lmdb\",") != NULL);
    ASSERT_TRUE(strstr(r.out, ",\"keys\":1,") != NULL);
    ASSERT_TRUE(r.out_len > 2 && strcmp(r.out + r.out_len - 2, "}\n") == 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "stats", "extra", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    broker_stop(&b);

    cli(&r, b.port, NULL, 0, "--timeout", "1000", "ping", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);

    struct broker quiet = {0};
    snprintf(quiet.extra, sizeof quiet.extra, "sys_interval 0\n");
    broker_start(&quiet);
    cli(&r, quiet.port, NULL, 0, "--timeout", "1500", "stats", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.err, "no figures under $SYS/broker/statestore/ within 1500 ms") != NULL);
    run_free(&r);
    broker_stop(&quiet);
}

/* keys and inspect: text and JSON lines, paging through many keys, exit 1
 * when nothing matches. */
TEST(cli_keys_and_inspect)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    cli(&r, b.port, NULL, 0, "set", "sensor/1", "20", NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "sensor/2", "21", "--px", "600000", NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "set", "lock", "x", "--fencing-token", "1700000000000:3:me", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "keys", "sensor/*", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "sensor/1  size=2  version=", 26) == 0);
    ASSERT_TRUE(strstr(r.out, "\nsensor/2  size=2  version=") != NULL);
    ASSERT_TRUE(strstr(r.out, "  ttl=") != NULL && strstr(r.out, "ms\n") != NULL);
    ASSERT_TRUE(strstr(r.out, "lock") == NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "--json", "inspect", "lock", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"key\":\"lock\",\"key_base64\":\"bG9jaw==\",\"size\":1,\"version\":\"", 57) == 0);
    ASSERT_TRUE(strstr(r.out, "\",\"ttl_ms\":null,\"fencing_token\":\"1700000000000:3:me\"}\n") != NULL);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "inspect", "nothing", NULL);
    ASSERT_EQ(r.status, 1);
    ASSERT_EQ(r.out_len, 0);
    run_free(&r);
    cli(&r, b.port, NULL, 0, "keys", "nothing*", NULL);
    ASSERT_EQ(r.status, 1);
    run_free(&r);
    /* More keys than a page: every one, once. */
    struct client c;
    char resp[256];
    client_connect_rr(&c, b.port, "filler", resp, sizeof resp);
    for (int i = 0; i < 1100; i++) {
        char key[24];
        snprintf(key, sizeof key, "many/%04d", i);
        request_send(&c, resp, "s", NULL, NULL, W("SET", key, "v"));
    }
    ASSERT_EQ(client_drain_count(&c, 1100, 30000), 1100);
    client_close(&c);
    cli(&r, b.port, NULL, 0, "keys", "many/*", NULL);
    ASSERT_EQ(r.status, 0);
    int lines = 0;
    for (size_t i = 0; i < r.out_len; i++)
        lines += r.out[i] == '\n';
    ASSERT_EQ(lines, 1100);
    ASSERT_TRUE(strstr(r.out, "many/1099  size=1") != NULL);
    run_free(&r);
    broker_stop(&b);
}

/* The bash completion offers commands, options by command, and files
 * where an option takes one. */
TEST(cli_bash_completion)
{
    static const char script[] =
        "source completion/statestore.bash\n"
        "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _statestore;"
        " echo \"${COMPREPLY[*]}\"; }\n"
        "t statestore s\n"
        "t statestore --j\n"
        "t statestore -p 1884 --timeout 5 k\n"
        "t statestore set --n\n"
        "t statestore stats --w\n"
        "t statestore watch k --p\n"
        "t statestore watch --pattern s\n"
        "t statestore -p 1884 get\n"
        "t statestore --cafile completion/statestore.ba\n"
        "t statestore --tls-version tlsv1.\n"
        "t statestore -L mqtt://127.0.0.1 --in\n"
        "t statestore -d stat\n";
    char *argv[] = {"bash", "-c", (char *)script, NULL};
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    OUT(r, "set scan stats status\n--json\nkeys\n--nx --nex\n--watch\n--port --password --pattern\n\nget\n"
           "completion/statestore.bash\ntlsv1.3 tlsv1.2 tlsv1.1\n--insecure\nstats status\n");
    run_free(&r);
}

/* export writes every record as a JSON line; import puts them into a new
 * data directory with their versions, tokens and deadlines, leaving out
 * those past their deadline; a broker on it serves the same records and
 * issues versions above them. */
/* A broker (on LMDB) with a plain record, one with a deadline in 10
 * minutes, a fenced one, a binary key and value, and with soon one whose
 * deadline is 300 ms away; their export into *exp and into file
 * (test_tmpdir()/export.jsonl). */
static void export_sample(bool soon, struct run *exp, char *file, size_t file_len)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    /* Larger than one etcd request: on etcd it goes in chunks. (First,
     * and last in key order: it takes a while under the sanitizers, and
     * "soon" must still be there when the export reads it.) */
    size_t large_len = (size_t)3 << 20;
    char *large = malloc(large_len);
    ASSERT_TRUE(large != NULL);
    for (size_t i = 0; i < large_len; i++)
        large[i] = (char)(i * 31 + i / 4096);
    cli(&r, b.port, large, large_len, "set", "zlarge", "-", NULL);
    free(large);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    const char *sets[][6] = {
        {"set", "plain", "1", NULL},
        {"set", "ttl", "two words", "--px", "600000", NULL},
        {"set", "fenced", "3", "--fencing-token", "1700000000000:1:x", NULL},
        {"set", "soon", "gone", "--px", "1500", NULL},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0] - (soon ? 0 : 1); i++) {
        cli(&r, b.port, NULL, 0, sets[i][0], sets[i][1], sets[i][2], sets[i][3], sets[i][4], sets[i][5], NULL);
        ASSERT_EQ(r.status, 0);
        run_free(&r);
    }
    cli(&r, b.port, "v\0\xff", 3, "set", "bin\x01key", "-", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli(exp, b.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp->status, 0);
    broker_stop(&b);
    snprintf(file, file_len, "%s/export.jsonl", test_tmpdir());
    FILE *f = fopen(file, "w");
    ASSERT_TRUE(f != NULL);
    fwrite(exp->out, 1, exp->out_len, f);
    fclose(f);
}

TEST(cli_export_import_round_trip)
{
    struct run r, exp1;
    char file[400], dir[400];
    export_sample(true, &exp1, file, sizeof file);
    ASSERT_TRUE(strstr(exp1.err, "6 records exported") != NULL);
    ASSERT_TRUE(strstr(exp1.out, "{\"key\":\"bin\\u0001key\",\"key_base64\":\"YmluAWtleQ==\","
                                 "\"value_base64\":\"dgD/\",\"version\":\"") != NULL);
    ASSERT_TRUE(strstr(exp1.out, "\"fencing_token\":\"1700000000000:1:x\",\"expires_at_ms\":null}\n") != NULL);
    /* "soon" is past its deadline now. Its 1.5 s outlasts the two commands
     * between its SET and the export even under the sanitizers. */
    usleep(1600 * 1000);
    snprintf(dir, sizeof dir, "%s/imported", test_tmpdir());
    cli(&r, 0, NULL, 0, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.err, "5 records imported") != NULL && strstr(r.err, "(1 past their deadline left out)"));
    run_free(&r);
    cli(&r, 0, NULL, 0, "import", file, dir, NULL); /* not empty now */
    ASSERT_EQ(r.status, 64);
    run_free(&r);

    struct broker b2 = {0};
    snprintf(b2.data, sizeof b2.data, "%s", dir);
    broker_start(&b2);
    struct run exp2;
    cli(&exp2, b2.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp2.status, 0);
    /* The same lines, without the one that expired. */
    char *soon = strstr(exp1.out, "{\"key\":\"soon\"");
    ASSERT_TRUE(soon != NULL);
    char *soon_end = strchr(soon, '\n') + 1;
    size_t before = (size_t)(soon - exp1.out), after = exp1.out_len - (size_t)(soon_end - exp1.out);
    ASSERT_EQ(exp2.out_len, before + after);
    ASSERT_TRUE(memcmp(exp2.out, exp1.out, before) == 0 && memcmp(exp2.out + before, soon_end, after) == 0);
    /* New versions come after every imported one. */
    struct client c;
    char resp[256];
    client_connect_rr(&c, b2.port, "after", resp, sizeof resp);
    struct msg *m = request(&c, resp, "n", "1:0:oldclock", NULL, W("SET", "new", "v"));
    PAYLOAD(m, "+OK\r\n");
    const char *v = msg_user(m, "__ts");
    const char *newest = strstr(exp1.out, "\"version\":\"");
    for (const char *p = newest; p; p = strstr(p + 1, "\"version\":\""))
        if (strncmp(p + 11, newest + 11, 13) > 0)
            newest = p;
    ASSERT_TRUE(v != NULL && strncmp(v, newest + 11, 13) > 0);
    client_close(&c);
    broker_stop(&b2);
    run_free(&exp1);
    run_free(&exp2);

    /* A line that is not a record: refused with its number. */
    FILE *f = fopen(file, "w");
    fputs("{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"}\n{\"key_base64\":7}\n", f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/bad", test_tmpdir());
    cli(&r, 0, NULL, 0, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "export.jsonl line 2: key_base64, value_base64 and version are required") != NULL);
    run_free(&r);
}

/* import --etcd puts an export into a store on an etcd cluster under a
 * prefix that holds nothing yet; a broker on that prefix exports the same
 * lines; a second import into it is refused, and so is --etcd with DIR. */
TEST(cli_import_into_an_etcd_cluster)
{
    struct run r, exp1;
    char file[400];
    export_sample(false, &exp1, file, sizeof file);

    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    cli(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "imp/", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.err, "5 records imported into http://127.0.0.1:") != NULL &&
                strstr(r.err, ", prefix imp/ (0 past their deadline left out)") != NULL);
    run_free(&r);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/c/"), 3); /* the large value's chunks of 1 MiB */
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/n/:import"), 1); /* its commit marker */
    /* An import that stops (a bad line) after a large value's chunks were
     * written, before its Txn: the chunks go, nothing refers to them. */
    char bad[450];
    snprintf(bad, sizeof bad, "%s.bad", file);
    FILE *f = fopen(bad, "w");
    ASSERT_TRUE(f != NULL);
    const char *zl = strstr(exp1.out, "{\"key\":\"zlarge\"");
    ASSERT_TRUE(zl != NULL);
    fwrite(zl, 1, strcspn(zl, "\n") + 1, f);
    fputs("{\"key\": not json\n", f);
    fclose(f);
    cli(&r, 0, NULL, 0, "import", bad, "--etcd", c.endpoints, "--etcd-prefix", "imp2/", NULL);
    ASSERT_TRUE(r.status != 0);
    run_free(&r);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp2/"), 0);
    cli(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "imp/", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "the prefix imp/ already holds keys") != NULL);
    run_free(&r);
    cli(&r, 0, NULL, 0, "import", file, "somedir", "--etcd", c.endpoints, NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);

    struct broker e = {0};
    snprintf(e.extra, sizeof e.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix imp/\n", c.endpoints);
    broker_start(&e);
    struct run exp2;
    cli(&exp2, e.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp2.status, 0);
    ASSERT_MEM(exp2.out, exp2.out_len, exp1.out, exp1.out_len);
    run_free(&exp1);
    run_free(&exp2);
    broker_stop(&e);
    etcd_cluster_stop(&c);
}
