/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_readme.c - the README's tour, run verbatim against a real broker:
 * what a new user pastes must work and print what the README says. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

/* The shell blocks of the README's section that starts with heading and
 * ends at the next "## " heading, each as a malloc'ed string. */
static int readme_blocks(const char *heading, char **blocks, int max)
{
    size_t n;
    char *readme = slurp("README.md", &n);
    ASSERT_TRUE(n > 0);
    char *p = strstr(readme, heading);
    ASSERT_TRUE(p != NULL);
    char *end = strstr(p + strlen(heading), "\n## ");
    int count = 0;
    while (count < max && (p = strstr(p, "```sh\n")) != NULL && (end == NULL || p < end)) {
        p += 6;
        char *close = strstr(p, "```\n");
        ASSERT_TRUE(close != NULL);
        blocks[count++] = strndup(p, (size_t)(close - p));
        p = close + 4;
    }
    free(readme);
    return count;
}

/* Replace every version stamp (13+ digits ':' digits ':' node) by "V",
 * in place, so that output can be compared exactly. */
static void mask_versions(char *s)
{
    char *out = s;
    for (char *p = s; *p;) {
        size_t d = strspn(p, "0123456789");
        size_t c = d >= 13 && p[d] == ':' ? strspn(p + d + 1, "0123456789") : 0;
        size_t node = c && p[d + 1 + c] == ':' ? strspn(p + d + c + 2,
                                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "abcdefghijklmnopqrstuvwxyz0123456789_-")
                                               : 0;
        if (node > 0) {
            *out++ = 'V';
            p += d + c + 2 + node;
        } else {
            *out++ = *p++;
        }
    }
    *out = '\0';
}

/* The size of a backup, "written: 12345 bytes", as "written: N bytes". */
static void mask_size(char *s)
{
    char *p = strstr(s, "written: ");
    if (p == NULL)
        return;
    p += 9;
    size_t d = strspn(p, "0123456789");
    if (d == 0)
        return;
    *p = 'N';
    memmove(p + 1, p + d, strlen(p + d) + 1);
}

TEST(readme_tour_runs_verbatim)
{
    char *blocks[4];
    int nblocks = readme_blocks("## A 60-second tour", blocks, 4);
    ASSERT_EQ(nblocks, 2);
    struct broker b = {0};
    char backups[600];
    snprintf(backups, sizeof backups, "%s/backups", test_tmpdir());
    ASSERT_EQ(mkdir(backups, 0700), 0);
    snprintf(b.extra, sizeof b.extra, "plugin_opt_backup_dir %s\n", backups); /* as make run sets it */
    broker_start(&b);
    /* The tour's alias is $PWD/build/plain/statestore: give it that path
     * in a directory of our own, pointing at the tool under test. */
    char dir[600], link[700], cfg[700], port[16];
    snprintf(dir, sizeof dir, "%s/repo", test_tmpdir());
    snprintf(link, sizeof link, "%s/build/plain", dir);
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && ln -s %s %s/statestore", link, getenv("SS_CLI"), link);
    ASSERT_EQ(system(cmd), 0);
    /* The tour names no port: the CLI takes it from STATESTORE_PORT, and
     * mosquitto_rr from its options file. */
    snprintf(port, sizeof port, "%d", b.port);
    ASSERT_EQ(setenv("STATESTORE_PORT", port, 1), 0);
    snprintf(cfg, sizeof cfg, "%s/config", test_tmpdir());
    ASSERT_EQ(mkdir(cfg, 0700), 0);
    ASSERT_EQ(setenv("XDG_CONFIG_HOME", cfg, 1), 0);
    char rr[800];
    snprintf(rr, sizeof rr, "%s/mosquitto_rr", cfg);
    FILE *f = fopen(rr, "w");
    ASSERT_TRUE(f != NULL);
    fprintf(f, "-p %d\n", b.port);
    fclose(f);
    ASSERT_EQ(chdir(dir), 0);

    /* The watch runs beside the SET that it reports: its SET line may come
     * before or after that SET's own "OK". */
#define TOUR_HEAD                                                                       \
    "OK\n"                                                                               \
    "hello2\n"                                                                           \
    "{\"found\":true,\"value\":\"hello\",\"value_base64\":\"aGVsbG8=\",\"version\":\"V\"}\n"    \
    "OK\n"
#define RR_PROPS "__stat:200 __protVer:1.0 __ts:V\n"
#define TOUR_TAIL "V DELETE greeting\ninside, token V\nOK\n1\ntemperature  size=2  version=V\n" \
                  "backup tour written: N bytes\nbackend                          lmdb\n" \
                  "health             ok\nbackend            lmdb\nOK\n\"Paris\"\n"
    static const char *const expected[2][2] = {
        {TOUR_HEAD "OK\nV SET greeting hi\n" TOUR_TAIL, TOUR_HEAD "V SET greeting hi\nOK\n" TOUR_TAIL},
        {"+OK\r\n   " RR_PROPS "$5\r\nhello\r\n   " RR_PROPS, ""},
    };
    for (int i = 0; i < nblocks; i++) {
        char script[4096];
        snprintf(script, sizeof script, "shopt -s expand_aliases\n%s", blocks[i]);
        char *argv[] = {"bash", "-c", script, NULL};
        struct run r;
        run_cmd(argv, NULL, 0, &r);
        if (r.status != 0)
            fprintf(stderr, "  block %d: exit %d\n--- stdout\n%s--- stderr\n%s---\n", i, r.status,
                    r.out, r.err);
        ASSERT_EQ(r.status, 0);
        mask_versions(r.out);
        mask_size(r.out);
        const char *want = strcmp(r.out, expected[i][1]) == 0 ? expected[i][1] : expected[i][0];
        ASSERT_MEM(r.out, strlen(r.out), want, strlen(want));
        run_free(&r);
        free(blocks[i]);
    }
    broker_stop(&b);
}

/* The session of the `make run` or `make run-cluster` a test started:
 * setsid puts it out of the test's process group, which is all the runner
 * stops when the test ends (tests/main.c). So the test stops it itself,
 * however it ends: at exit (a failed assertion exits; after a clean stop
 * nothing is left, and the kill finds no one) and at the runner's time
 * limit (SIGALRM, whose default action ends the test without running
 * atexit's handlers). One is enough: each test runs in a process of its
 * own. sig_atomic_t: the SIGALRM handler reads it. */
static volatile sig_atomic_t readme_session;

static void stop_readme_session(void)
{
    if (readme_session > 0)
        kill(-(pid_t)readme_session, SIGKILL);
}

static void readme_timed_out(int sig)
{
    stop_readme_session();
    /* Then ended by the signal as before, which the runner reports as a
     * time-out. */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Run `setsid make ...` (argv), its output into out and err, in a session
 * that is stopped however the test ends. Returns make's pid, which is
 * also its session's and process group's. */
static pid_t start_make_session(char *const argv[], const char *out, const char *err)
{
    atexit(stop_readme_session);
    signal(SIGALRM, readme_timed_out);
    /* As a user types it, not as a part of this make's run. */
    unsetenv("MAKEFLAGS");
    unsetenv("MFLAGS");
    unsetenv("MAKELEVEL");
    pid_t pid = spawn_cmd(argv, out, err);
    ASSERT_TRUE(pid > 0);
    readme_session = pid;
    /* setsid(1) makes the session before it runs make; until then it is
     * in the test's process group, which the runner stops. Waited for, so
     * that no failure of the test falls in between (1 s at most: if it
     * exits instead, wait_for_make sees that). */
    for (int i = 0; i < 1000 && getsid(pid) != pid; i++)
        usleep(1000);
    return pid;
}

/* When a wait of the test gives up: with a tenth of the runner's time
 * limit (an alarm, tests/main.c) still left, so that the test can say what
 * it saw before the limit ends it (12 s of the usual 120 s); in 100 s when
 * there is no limit. */
static uint64_t deadline_before_time_limit(void)
{
    struct itimerval left;
    uint64_t ms = 100000;
    if (getitimer(ITIMER_REAL, &left) == 0 && (left.it_value.tv_sec > 0 || left.it_value.tv_usec > 0)) {
        ms = (uint64_t)left.it_value.tv_sec * 1000u + (uint64_t)left.it_value.tv_usec / 1000u;
        ms -= ms / 10;
    }
    return now_ms() + ms;
}

/* The file at path on stderr, under a heading, each line indented as the
 * harness shows a broker's log. */
static void print_indented(const char *heading, const char *path)
{
    char *text = slurp(path, NULL);
    fprintf(stderr, "  %s:\n", heading);
    for (char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        fprintf(stderr, "  | %.*s\n", (int)n, line);
        line += n + (line[n] == '\n');
    }
    free(text);
}

/* Wait until make (pid, started by start_make_session) has printed text
 * into out and, unless port is 0, port answers. Fails the test, showing
 * what make printed, as soon as make has exited (a port in use, a failed
 * build) or when the time runs out. */
static void wait_for_make(pid_t pid, const char *out, const char *err, const char *text, int port)
{
    uint64_t deadline = deadline_before_time_limit();
    for (;;) {
        char *printed = slurp(out, NULL);
        bool up = strstr(printed, text) != NULL && (port == 0 || port_open(port));
        free(printed);
        if (up)
            return;
        int status;
        const char *why = NULL;
        if (waitpid(pid, &status, WNOHANG) == pid)
            why = "make exited before what it started was up";
        else if (now_ms() > deadline)
            why = "what make started was not up in time";
        if (why != NULL) {
            print_indented("make printed", out);
            print_indented("and on stderr", err);
            test_fail(__FILE__, __LINE__, why);
        }
        usleep(100000);
    }
}

/* make run builds the CLI too, and its hint is an alias that works as
 * pasted (with -p for a port other than 1883). */
TEST(readme_make_run_builds_the_cli_and_prints_the_alias)
{
    char cwd[512], data[600], out[600], err[600], portarg[32], consolearg[32], dataarg[700];
    ASSERT_TRUE(getcwd(cwd, sizeof cwd) != NULL);
    snprintf(data, sizeof data, "%s/data", test_tmpdir());
    snprintf(out, sizeof out, "%s/make.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/make.err", test_tmpdir());
    int p = free_port(), cp = free_port();
    snprintf(portarg, sizeof portarg, "PORT=%d", p);
    snprintf(consolearg, sizeof consolearg, "CONSOLE_PORT=%d", cp);
    snprintf(dataarg, sizeof dataarg, "DATA=%s", data);
    /* In a session of its own, so that make and the broker it runs stop
     * together. */
    char *argv[] = {"setsid", "make", "--no-print-directory", "run", portarg, consolearg, dataarg, NULL};
    pid_t pid = start_make_session(argv, out, err);
    wait_for_make(pid, out, err, "mosquitto on 127.0.0.1:", p);
    size_t n;
    char *text = slurp(out, &n);
    char alias[900];
    snprintf(alias, sizeof alias, "  alias statestore='%s/build/plain/statestore -p %d'\n", cwd, p);
    ASSERT_TRUE(strstr(text, alias) != NULL);
    free(text);
    /* The tour's first command, through the alias as printed. */
    char script[1200];
    snprintf(script, sizeof script,
             "shopt -s expand_aliases\nalias statestore='%s/build/plain/statestore -p %d'\n"
             "statestore set greeting hello && statestore get greeting",
             cwd, p);
    char *sh[] = {"bash", "-c", script, NULL};
    struct run r;
    run_cmd(sh, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    ASSERT_STR(r.out, r.out_len, "OK\nhello");
    run_free(&r);
    ASSERT_EQ(kill(-pid, SIGTERM), 0);
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
}

/* A port p with p + 1 also free, and an etcd base b with b+1..b+3 and
 * b+11..b+13 free (run-cluster's fixed layout). free_port's ports are
 * below the ephemeral range, so nothing else takes them meanwhile. */
static int free_pair(void)
{
    for (;;) {
        int p = free_port();
        if (p < 31990 && !port_open(p + 1))
            return p;
    }
}

static int free_etcd_base(void)
{
    for (;;) {
        int b = free_port();
        bool ok = b < 31980;
        for (int i = 1; ok && i <= 13; i++)
            ok = !port_open(b + i);
        if (ok)
            return b;
    }
}

/* `make run-cluster` starts 3 etcd members and 2 brokers; the README's
 * block (its ports replaced by the free ones used here) shows a watch on
 * one broker seeing a SET made through the other; Ctrl-C stops it all. */
TEST(readme_run_cluster_block_runs)
{
    char *blocks[2];
    ASSERT_EQ(readme_blocks("## Several brokers, one store", blocks, 2), 1);
    char out[600], err[600], portarg[32], consolearg[32], basearg[32], dirarg[700];
    snprintf(out, sizeof out, "%s/make.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/make.err", test_tmpdir());
    int p = free_pair(), cp = free_pair(), base = free_etcd_base();
    snprintf(portarg, sizeof portarg, "PORT=%d", p);
    snprintf(consolearg, sizeof consolearg, "CONSOLE_PORT=%d", cp);
    snprintf(basearg, sizeof basearg, "ETCD_PORT_BASE=%d", base);
    snprintf(dirarg, sizeof dirarg, "CLUSTER_DIR=%s/cluster", test_tmpdir());
    char *argv[] = {"setsid", "make", "--no-print-directory", "run-cluster", portarg, consolearg, basearg, dirarg, NULL};
    pid_t pid = start_make_session(argv, out, err);
    wait_for_make(pid, out, err, "Ctrl-C stops everything", 0);
    /* The block, with the free ports for 1883 and 1884. */
    char script[4000], from_a[16], from_b[16], to_a[16], to_b[16];
    snprintf(from_a, sizeof from_a, "-p 1883");
    snprintf(from_b, sizeof from_b, "-p 1884");
    snprintf(to_a, sizeof to_a, "-p %d", p);
    snprintf(to_b, sizeof to_b, "-p %d", p + 1);
    size_t used = (size_t)snprintf(script, sizeof script, "shopt -s expand_aliases\nset -m\n");
    for (const char *s = blocks[0]; *s && used + 16 < sizeof script;) {
        if (strncmp(s, from_a, 7) == 0 || strncmp(s, from_b, 7) == 0) {
            used += (size_t)snprintf(script + used, sizeof script - used, "%s", s[6] == '3' ? to_a : to_b);
            s += 7;
        } else {
            script[used++] = *s++;
            script[used] = '\0';
        }
    }
    free(blocks[0]);
    /* The alias names $PWD/build/plain/statestore: run it from a
     * directory where that is the tool under test. */
    char dir[600], cmd[1600];
    snprintf(dir, sizeof dir, "%s/repo", test_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p %s/build/plain && ln -s %s %s/build/plain/statestore", dir,
             getenv("SS_CLI"), dir);
    ASSERT_EQ(system(cmd), 0);
    char wrapped[5000];
    snprintf(wrapped, sizeof wrapped, "cd %s && %s\nsleep 0.5\n", dir, script);
    char *sh[] = {"bash", "-c", wrapped, NULL};
    struct run r;
    run_cmd(sh, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    mask_versions(r.out);
    /* The SET's "OK" and the watch's line race each other; the GET
     * comes after both. */
    const char *a = "OK\nV SET greeting hello\nhello", *b = "V SET greeting hello\nOK\nhello";
    if (strcmp(r.out, b) != 0)
        ASSERT_MEM(r.out, strlen(r.out), a, strlen(a));
    run_free(&r);
    /* Ctrl-C: everything it started stops. */
    ASSERT_EQ(kill(-pid, SIGINT), 0);
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    /* What it left running, if the checks below find any, is stopped at
     * the test's exit (readme_session stays set). */
    for (int i = 0; i < 100 && (port_open(p) || port_open(p + 1) || port_open(base + 1)); i++)
        usleep(100000);
    ASSERT_TRUE(!port_open(p) && !port_open(p + 1) && !port_open(base + 1) && !port_open(base + 2) &&
                !port_open(base + 3));
    size_t n;
    char *text = slurp(out, &n);
    ASSERT_TRUE(strstr(text, "run-cluster: stopping") != NULL);
    free(text);
}
