/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_messages.c - the statestore tool never misleads: an option of
 * another command is refused with a message naming its command, a failed
 * import leaves the target as it found it, and a person at a terminal is
 * told of a miss and of the figures' age. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

#define ERR_IS(r, lit) ASSERT_MEM((r).err, strlen((r).err), lit, sizeof(lit) - 1)

/* Refused before connecting: no broker is needed, and none is reached
 * (the port is one nobody listens on). */
TEST(cli_options_belong_to_their_commands)
{
    struct run r;
    cli_tool(&r, "-p", "1", "set", "k", "v", "--ttl", "5000", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_EQ(r.out_len, 0);
    ERR_IS(r, "statestore: --ttl is an option of lock; set takes -f FILE, --nx, --nex, --px MS "
              "and --fencing-token HLC\n"
              "Usage: statestore set KEY VALUE|-|-f FILE [--nx|--nex] [--px MS] [--fencing-token HLC]\n");
    run_free(&r);
    cli_tool(&r, "-p", "1", "get", "k", "--px", "5", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_IS(r, "statestore: --px is an option of set; get takes no options of its own\n"
              "Usage: statestore get KEY\n");
    run_free(&r);
    cli_tool(&r, "-p", "1", "set", "k", "v", "--wait", "5", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strncmp(r.err, "statestore: --wait is an option of lock; set takes ", 51) == 0);
    run_free(&r);
    cli_tool(&r, "-p", "1", "ping", "--nx", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_IS(r, "statestore: --nx is an option of set; ping takes no options of its own\n"
              "Usage: statestore ping\n");
    run_free(&r);
    /* Before the command too, and by its short name. */
    cli_tool(&r, "-p", "1", "-f", "value.txt", "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_IS(r, "statestore: -f is an option of set and vdel; get takes no options of its own\n"
              "Usage: statestore get KEY\n");
    run_free(&r);
    cli_tool(&r, "-p", "1", "del", "k", "--ttl", "1", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_IS(r, "statestore: --ttl is an option of lock; del takes --fencing-token HLC\n"
              "Usage: statestore del KEY [--fencing-token HLC]\n");
    run_free(&r);
    cli_tool(&r, "-p", "1", "stats", "--holder", "me", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_IS(r, "statestore: --holder is an option of lock; stats takes --watch\n"
              "Usage: statestore stats [--watch] [--json]\n");
    run_free(&r);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int entries(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

/* A failed import creates nothing, or removes what it created: a retry
 * into the same directory works. */
TEST(cli_failed_import_leaves_the_target_as_it_was)
{
    char dir[4096], in[4096], bad[4096], empty[4096];
    snprintf(dir, sizeof dir, "%s/imported", test_tmpdir());
    snprintf(in, sizeof in, "%s/records.jsonl", test_tmpdir());
    snprintf(bad, sizeof bad, "%s/bad.jsonl", test_tmpdir());
    snprintf(empty, sizeof empty, "%s/empty-dir", test_tmpdir());
    struct run r;
    /* A wrong input path: refused before DIR is made. */
    cli_tool(&r, "import", in, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "No such file or directory") != NULL);
    ASSERT_TRUE(!exists(dir));
    run_free(&r);
    /* A bad line after good ones: the store made for it is removed. */
    FILE *f = fopen(bad, "w");
    ASSERT_TRUE(f != NULL);
    fputs("{\"key_base64\":\"aw==\",\"value_base64\":\"dg==\",\"version\":\"1700000000000:0:n\"}\n"
          "{\"key\":\"no base64\"}\n", f);
    fclose(f);
    cli_tool(&r, "import", bad, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "line 2") != NULL);
    ASSERT_TRUE(!exists(dir));
    run_free(&r);
    /* An empty directory that existed stays, empty. */
    ASSERT_EQ(mkdir(empty, 0700), 0);
    cli_tool(&r, "import", bad, empty, NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_EQ(entries(empty), 0);
    run_free(&r);
    /* And the retry with a good file works. */
    f = fopen(in, "w");
    ASSERT_TRUE(f != NULL);
    fputs("{\"key_base64\":\"aw==\",\"value_base64\":\"dg==\",\"version\":\"1700000000000:0:n\"}\n", f);
    fclose(f);
    cli_tool(&r, "import", in, dir, NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.err, "1 records imported") != NULL);
    run_free(&r);
    cli_tool(&r, "import", in, empty, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
}

/* Run the tool on a terminal (script(1) gives it one): stdout and stderr
 * both go to the terminal, which run_cmd reads as stdout. */
static void tool_on_terminal(struct run *r, int port, const char *args)
{
    char line[1200];
    snprintf(line, sizeof line, "%s -p %d %s", cli_path(), port, args);
    char *argv[] = {"script", "-q", "-e", "-c", line, "/dev/null", NULL};
    run_cmd(argv, NULL, 0, r);
}

/* The line of figure name in stats' output, or NULL. */
static const char *figure(const char *out, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return p + n;
    return NULL;
}

TEST(cli_misses_and_figures_age_are_said)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    struct run r;
    /* A miss: exit 1, nothing on stdout; on a terminal, a word. */
    cli_tool(&r, "-p", port, "get", "absent", NULL);
    ASSERT_EQ(r.status, 1);
    ASSERT_EQ(r.out_len, 0);
    ASSERT_EQ(strlen(r.err), 0);
    run_free(&r);
    tool_on_terminal(&r, b.port, "get absent");
    ASSERT_EQ(r.status, 1);
    ASSERT_MEM(r.out, r.out_len, "(not found)\r\n", 13);
    run_free(&r);
    tool_on_terminal(&r, b.port, "inspect absent");
    ASSERT_EQ(r.status, 1);
    ASSERT_MEM(r.out, r.out_len, "(not found)\r\n", 13);
    run_free(&r);
    tool_on_terminal(&r, b.port, "keys 'nothing*'");
    ASSERT_EQ(r.status, 1);
    ASSERT_MEM(r.out, r.out_len, "no keys match\r\n", 15);
    run_free(&r);
    /* The figures say how old they are: the broker's published_ms, and
     * the tool's age_ms from it (the broker published at start, less than
     * the test's time ago). */
    cli_tool(&r, "-p", port, "stats", NULL);
    ASSERT_EQ(r.status, 0);
    const char *p = figure(r.out, "age_ms");
    ASSERT_TRUE(p != NULL);
    ASSERT_TRUE(figure(r.out, "published_ms") != NULL);
    unsigned long long age = strtoull(p, NULL, 10);
    ASSERT_TRUE(age < 60000);
    run_free(&r);
    broker_stop(&b);
    /* No broker there: with --json the failure is the JSON error object
     * on stdout too, as a command's own failures are. */
    char none[16];
    snprintf(none, sizeof none, "%d", free_port());
    cli_tool(&r, "-p", none, "--json", "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strncmp(r.out, "{\"error\":\"", 10) == 0);
    const char *tail = "\",\"code\":\"CONNECTION\"}\n";
    ASSERT_TRUE(r.out_len > strlen(tail) && strcmp(r.out + r.out_len - strlen(tail), tail) == 0);
    ASSERT_TRUE(strstr(r.err, "cannot connect to localhost:") != NULL);
    run_free(&r);
}

/* A request the broker refuses (its PUBACK's reason code) fails at once
 * with what the broker said, instead of waiting for an answer that cannot
 * come and then blaming the plugin; one larger than the Maximum Packet
 * Size of the broker's CONNACK is refused before it is sent. */
TEST(cli_request_refused_by_the_broker_said_at_once)
{
    static char value[2001];
    memset(value, 'v', sizeof value - 1);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "message_size_limit 1000\n");
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    struct run r;
    uint64_t t0 = now_ms();
    cli_tool(&r, "-p", port, "set", "k", value, NULL);
    ASSERT_TRUE(now_ms() - t0 < 3000);
    ASSERT_EQ(r.status, 3);
    ERR_IS(r, "statestore: set: the broker refused the request (packet too large: over its "
              "message_size_limit)\n");
    run_free(&r);
    cli_tool(&r, "-p", port, "set", "k", "small", NULL); /* the connection is fine */
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    broker_stop(&b);

    struct broker m = {0};
    snprintf(m.extra, sizeof m.extra, "max_packet_size 1500\n");
    broker_start(&m);
    snprintf(port, sizeof port, "%d", m.port);
    t0 = now_ms();
    cli_tool(&r, "-p", port, "set", "k", value, NULL);
    ASSERT_TRUE(now_ms() - t0 < 3000);
    ASSERT_EQ(r.status, 3);
    ERR_IS(r, "statestore: set: the broker refused the request (packet too large: its limit is 1500 "
              "bytes)\n");
    run_free(&r);
    ASSERT_TRUE(!broker_log_has(&m, "exceeded maximum packet size")); /* nothing too large was sent */
    broker_stop(&m);
}

/* With --json a failure is {"error":TEXT,"code":NAME} on stdout, TEXT
 * the first line said on stderr after "statestore: " (JSON-escaped):
 * asserts it for r and code. */
static void json_failure_is(const struct run *r, const char *code)
{
    const char *text = r->err;
    if (strncmp(text, "statestore: ", 12) != 0)
        fprintf(stderr, "  stderr: \"%s\"\n", text);
    ASSERT_TRUE(strncmp(text, "statestore: ", 12) == 0);
    text += 12;
    char want[2000];
    size_t n = (size_t)snprintf(want, sizeof want, "{\"error\":\"");
    for (; *text && *text != '\n' && n < sizeof want - 100; text++) {
        if (*text == '"' || *text == '\\')
            want[n++] = '\\';
        want[n++] = *text;
    }
    n += (size_t)snprintf(want + n, sizeof want - n, "\",\"code\":\"%s\"}\n", code);
    if (r->out_len != n || memcmp(r->out, want, n) != 0)
        fprintf(stderr, "  stdout: \"%s\"\n  wanted: \"%s\"\n", r->out, want);
    ASSERT_MEM(r->out, r->out_len, want, n);
}

/* --json: every failure is the JSON error object, not only a request's:
 * stats and status that get no figures, restore and import of a file
 * that is not there, a value file that cannot be read, usage errors
 * (--json before or after them, or in the options file before them), and
 * a line refused at the prompt. They used to leave stdout empty. */
TEST(cli_json_failures_are_json_objects)
{
    struct broker quiet = {0};
    snprintf(quiet.extra, sizeof quiet.extra, "sys_interval 0\n");
    broker_start(&quiet);
    char port[16], dir[600];
    snprintf(port, sizeof port, "%d", quiet.port);
    snprintf(dir, sizeof dir, "%s/target", test_tmpdir());
    struct run r;
    cli_tool(&r, "-p", port, "--timeout", "1000", "--json", "stats", NULL);
    ASSERT_EQ(r.status, 4);
    json_failure_is(&r, "TIMEOUT");
    run_free(&r);
    cli_tool(&r, "-p", port, "--timeout", "1000", "--json", "status", NULL);
    ASSERT_EQ(r.status, 4);
    json_failure_is(&r, "TIMEOUT");
    run_free(&r);
    cli_tool(&r, "--json", "restore", "/nonexistent", dir, NULL);
    ASSERT_EQ(r.status, 64);
    json_failure_is(&r, "INVAL");
    ASSERT_TRUE(strstr(r.out, "restore: /nonexistent: No such file or directory") != NULL);
    run_free(&r);
    cli_tool(&r, "--json", "import", "/nonexist", dir, NULL);
    ASSERT_EQ(r.status, 64);
    json_failure_is(&r, "INVAL");
    run_free(&r);
    cli_tool(&r, "-p", port, "--json", "set", "k", "-f", "/nonexistent", NULL);
    ASSERT_EQ(r.status, 64);
    json_failure_is(&r, "INVAL");
    run_free(&r);
    /* Usage errors, whether --json comes before or after what is wrong. */
    cli_tool(&r, "-p", port, "--json", "get", NULL);
    ASSERT_EQ(r.status, 64);
    OUT_IS(r, "{\"error\":\"get: wrong number of arguments\",\"code\":\"INVAL\"}\n");
    run_free(&r);
    cli_tool(&r, "-p", port, "frob", "--json", NULL);
    ASSERT_EQ(r.status, 64);
    OUT_IS(r, "{\"error\":\"unknown command \\\"frob\\\"\",\"code\":\"INVAL\"}\n");
    run_free(&r);
    cli_tool(&r, "-p", port, "get", "k", "--ttl", "5", "--json", NULL);
    ASSERT_EQ(r.status, 64);
    json_failure_is(&r, "INVAL");
    run_free(&r);
    cli_tool(&r, "-p", "x", "--json", "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    json_failure_is(&r, "INVAL");
    run_free(&r);
    /* After "--" it is a word: no JSON. */
    cli_tool(&r, "-p", port, "get", "--", "k", "--json", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_EQ(r.out_len, 0);
    run_free(&r);
    /* The options file (XDG_CONFIG_HOME is the test's directory). */
    char conf[700];
    snprintf(conf, sizeof conf, "%s/statestore", test_tmpdir());
    write_text(conf, "--json\n--timeout 0\n");
    cli_tool(&r, "-p", port, "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    json_failure_is(&r, "INVAL");
    ASSERT_TRUE(strstr(r.out, "/statestore:2: --timeout needs an integer from 1 to 3600000") != NULL);
    run_free(&r);
    ASSERT_EQ(remove(conf), 0);
    /* A line refused at the prompt, among commands from a pipe. */
    static const char in[] = "get \"open\nfrob\n";
    cli_run(&r, quiet.port, in, sizeof in - 1, "--json", NULL);
    ASSERT_EQ(r.status, 64);
    OUT_IS(r, "{\"error\":\"a quote (\\\") is not closed\",\"code\":\"INVAL\"}\n"
              "{\"error\":\"unknown command \\\"frob\\\"\",\"code\":\"INVAL\"}\n");
    run_free(&r);
    broker_stop(&quiet);
}
