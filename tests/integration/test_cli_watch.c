/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_watch.c - statestore watch and statestore lock against the real
 * broker: the changes of a key or a pattern printed in order, across
 * expiry and a broker's restart, and two contenders for one lock. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

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
        cli_run(&r, port, NULL, 0, "set", key, "probe", NULL);
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
    cli_run(&r, b.port, NULL, 0, "set", "w1", "hello world", NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "del", "w1", NULL);
    run_free(&r);
    cli_run(&r, b.port, "x\ny", 3, "set", "w 2", "-", "--px", "100", NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "other", "1", NULL);
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
        cli_run(&r, b.port, NULL, 0, "set", "w1", "again", NULL);
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
        cli_run(&r, b.port, NULL, 0, "set", "w1", "j", NULL);
        run_free(&r);
        s = wait_lines(out, 1, 500);
        bool got = s[0] != '\0';
        free(s);
        if (got)
            break;
    }
    s = slurp(out, NULL);
    static const char head[] = "{\"key\":\"w1\",\"key_base64\":\"dzE=\",\"operation\":\"SET\",\"value\":\"j\","
                               "\"value_base64\":\"ag==\",\"version\":\"";
    ASSERT_MEM(s, sizeof head - 1, head, sizeof head - 1);
    free(s);
    kill(j, SIGTERM);
    waitpid(j, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    broker_stop(&b);
}

/* How many times text occurs in the file at path. */
static int count_in_file(const char *path, const char *text)
{
    char *s = slurp(path, NULL);
    int n = 0;
    for (const char *p = s; (p = strstr(p, text)) != NULL; p += strlen(text))
        n++;
    free(s);
    return n;
}

/* Wait (ms at most) until the file at path holds text at least n times. */
static bool wait_count(const char *path, const char *text, int n, int ms)
{
    for (uint64_t end = now_ms() + (uint64_t)ms; now_ms() < end; usleep(20000))
        if (count_in_file(path, text) >= n)
            return true;
    return count_in_file(path, text) >= n;
}

/* stats --watch after a broker restart: the subscription to the figures
 * is not kept across a reconnect (the session starts clean), so it
 * subscribes again, says so on stderr as watch does, and the figures of
 * the new broker are printed (they used to stop for good). */
TEST(cli_stats_watch_goes_on_after_a_broker_restart)
{
    /* Mosquitto 2.0.11 leaks a subscription's allocation (sub__add, 41
     * bytes, frames of its own only) when it stops with this client
     * subscribed to its $SYS figures, in about half the runs under
     * AddressSanitizer: not counted. */
    struct broker b = {.mosquitto_leak = "sub__add"};
    snprintf(b.extra, sizeof b.extra, "sys_interval 1\n");
    broker_start(&b);
    char port[16], out[600], err[600];
    snprintf(port, sizeof port, "%d", b.port);
    snprintf(out, sizeof out, "%s/stats.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/stats.err", test_tmpdir());
    char *argv[] = {(char *)cli_path(), "-p", port, "stats", "--watch", NULL};
    pid_t w = spawn_cmd(argv, out, err);
    /* Each printing of the figures holds one published_ms line: the
     * retained ones, then at least one publication more. */
    ASSERT_TRUE(wait_count(out, "\npublished_ms ", 2, 15000));
    broker_stop(&b);
    /* What came before the stop is printed by now (300 ms of quiet ends
     * a batch of figures). */
    usleep(1000 * 1000);
    int before = count_in_file(out, "\npublished_ms ");
    broker_start(&b); /* the same port and data */
    ASSERT_TRUE(wait_count(out, "\npublished_ms ", before + 1, 20000));
    ASSERT_TRUE(wait_count(err, "statestore: connection lost; reconnecting\n", 1, 5000));
    ASSERT_TRUE(wait_count(err, "statestore: reconnected\n", 1, 5000));
    kill(w, SIGTERM);
    int status;
    ASSERT_EQ(waitpid(w, &status, 0), w);
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
        cli_run(&r, b.port, NULL, 0, "set", sets[i][0], sets[i][1], NULL);
        run_free(&r);
    }
    cli_run(&r, b.port, NULL, 0, "del", "sensor/1", NULL);
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
        cli_run(&r, b.port, NULL, 0, "set", "hall/t", "again", NULL);
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
    cli_run(&r, b.port, NULL, 0, "watch", "--pattern", "a[b", NULL);
    ASSERT_EQ(r.status, 3);
    ASSERT_STR(r.err, strlen(r.err), "statestore: watch: invalid pattern: a '[' is not closed\n");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "watch", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "watch: give a KEY or --pattern PATTERN") != NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "get", "k", "--pattern", "x", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "--pattern is an option of watch") != NULL);
    run_free(&r);
    broker_stop(&b);
}

/* A key whose registration the broker refuses after a reconnect (a limit
 * lowered meanwhile) ends the watch with the refusal, naming the key:
 * going on would watch less than asked without a word. */
TEST(cli_watch_ends_when_a_key_is_refused_after_a_reconnect)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_max_registrations_per_client 2\n");
    broker_start(&b);
    char out[600], err[600], portbuf[16];
    snprintf(out, sizeof out, "%s/watch.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/watch.err", test_tmpdir());
    snprintf(portbuf, sizeof portbuf, "%d", b.port);
    char *argv[] = {(char *)cli_path(), "-p", portbuf, "watch", "k1", "k2", NULL};
    pid_t w = spawn_cmd(argv, out, err);
    probe_watch(b.port, out, "k2");
    broker_stop(&b);
    snprintf(b.extra, sizeof b.extra, "plugin_opt_max_registrations_per_client 1\n");
    broker_start(&b);
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 1500 && done == 0; i++) {
        done = waitpid(w, &status, WNOHANG);
        if (done == 0)
            usleep(10000);
    }
    if (done == 0) {
        kill(w, SIGKILL);
        waitpid(w, &status, 0);
    }
    ASSERT_EQ(done, w);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 3);
    char *e = slurp(err, NULL);
    const char *tail = "statestore: watch: the quota has been exceeded (a limit of the server: key or value "
                       "length, number of keys, store size or disk space; the broker's log names which)\n";
    bool named = strstr(e, "statestore: watch: the broker refused to register k1 again after the reconnect\n") ||
                 strstr(e, "statestore: watch: the broker refused to register k2 again after the reconnect\n");
    bool ends = strlen(e) > strlen(tail) && strcmp(e + strlen(e) - strlen(tail), tail) == 0;
    if (!named || !ends)
        fprintf(stderr, "  stderr: %s\n", e);
    free(e);
    ASSERT_TRUE(named);
    ASSERT_TRUE(ends);
    broker_stop(&b);
}

/* The lease's time is the monotonic clock's: a lock holder whose wall
 * clock steps back a minute (NTP, an operator) while COMMAND runs goes on
 * renewing, so nobody else takes the lease meanwhile, and COMMAND ends
 * on its own. (On the wall clock, the keeper waited a minute for its next
 * renewal while believing it still held the lease, which another client
 * took after the TTL.) Debian's libfaketime moves the holder's wall clock
 * only, by what a file says. */
TEST(cli_lock_holds_through_a_wall_clock_step)
{
    static const char lib[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
    ASSERT_TRUE(access(lib, R_OK) == 0); /* make test installs faketime */
    struct broker b = {0};
    broker_start(&b);
    char clock[600], out[600], err[600], port[16];
    snprintf(clock, sizeof clock, "%s/clock", test_tmpdir());
    snprintf(out, sizeof out, "%s/lock.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/lock.err", test_tmpdir());
    snprintf(port, sizeof port, "%d", b.port);
    FILE *f = fopen(clock, "w");
    fputs("+0\n", f);
    fclose(f);
    setenv("LD_PRELOAD", lib, 1);
    setenv("FAKETIME_TIMESTAMP_FILE", clock, 1);
    setenv("FAKETIME_NO_CACHE", "1", 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    char *argv[] = {(char *)cli_path(), "-p", port, "lock", "L", "--ttl", "1500", "--holder", "stepper",
                    "--", "sleep", "4", NULL};
    pid_t pid = spawn_cmd(argv, out, err);
    unsetenv("LD_PRELOAD");
    unsetenv("FAKETIME_TIMESTAMP_FILE");
    unsetenv("FAKETIME_NO_CACHE");
    unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "other", r, sizeof r);
    bool held = false;
    for (int i = 0; i < 100 && !held; i++) {
        struct msg *m = request(&c, r, "g", NULL, NULL, W("GET", "L"));
        held = m->len == 13 && memcmp(m->payload, "$7\r\nstepper\r\n", 13) == 0;
        if (!held)
            usleep(20000);
    }
    ASSERT_TRUE(held);
    f = fopen(clock, "w");
    fputs("-60s\n", f);
    fclose(f);
    /* 3 s, twice the lease's time: it is renewed all along. */
    uint64_t end = now_ms() + 3000;
    int tries = 0;
    while (now_ms() < end) {
        char corr[16];
        snprintf(corr, sizeof corr, "t%d", tries++);
        struct msg *m = request(&c, r, corr, NULL, NULL, W("SET", "L", "other", "NX", "PX", "1500"));
        ASSERT_REPLY(m, ":-1\r\n");
        usleep(100 * 1000);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_REPLY(request(&c, r, "after", NULL, NULL, W("GET", "L")), "$-1\r\n"); /* released */
    client_close(&c);
    broker_stop(&b);
}

/* Is pid a live process (not a zombie, which a container's first
 * process may leave unreaped)? */
static bool pid_running(pid_t pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *rp = strrchr(line, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* The pid a lock's COMMAND wrote to path (0 until it did). */
static pid_t pid_from(const char *path)
{
    char *s = slurp(path, NULL);
    pid_t pid = (pid_t)atoi(s);
    free(s);
    return pid;
}

/* lock signals COMMAND's whole process group: what a script started
 * (here a background sleep) holds the lock too. It is stopped when the
 * lease is lost, and when COMMAND ends before the lease is released;
 * only COMMAND itself was signalled before, and the sleep ran on. */
TEST(cli_lock_stops_what_command_started)
{
    struct broker b = {0};
    broker_start(&b);
    char pidfile[600], script[2000], out[600], err[600], port[16];
    snprintf(pidfile, sizeof pidfile, "%s/bg.pid", test_tmpdir());
    snprintf(out, sizeof out, "%s/lock.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/lock.err", test_tmpdir());
    snprintf(port, sizeof port, "%d", b.port);
    /* COMMAND ends and leaves its sleep behind. */
    snprintf(script, sizeof script, "sleep 30 & echo $! > %s.tmp && mv %s.tmp %s", pidfile, pidfile, pidfile);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "lock", "L1", "--", "sh", "-c", script, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    pid_t bg = pid_from(pidfile);
    ASSERT_TRUE(bg > 0);
    ASSERT_TRUE(!pid_running(bg));
    unlink(pidfile);
    /* The lease is lost (the broker frozen past the TTL) while COMMAND
     * waits for its sleep. */
    snprintf(script, sizeof script, "sleep 30 & echo $! > %s.tmp && mv %s.tmp %s; wait", pidfile, pidfile,
             pidfile);
    char *argv[] = {(char *)cli_path(), "-p", port, "lock", "L2", "--ttl", "1000", "--", "sh", "-c", script, NULL};
    pid_t holder = spawn_cmd(argv, out, err);
    for (int i = 0; i < 500 && (bg = pid_from(pidfile)) == 0; i++)
        usleep(10000);
    ASSERT_TRUE(bg > 0 && pid_running(bg));
    kill(b.pid, SIGSTOP);
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 1000 && done == 0; i++) {
        done = waitpid(holder, &status, WNOHANG);
        if (done == 0)
            usleep(10000);
    }
    kill(b.pid, SIGCONT);
    if (done == 0) {
        kill(holder, SIGKILL);
        waitpid(holder, &status, 0);
    }
    ASSERT_EQ(done, holder);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    char *e = slurp(err, NULL);
    bool said = strstr(e, "statestore: lock: the lease on L2 was lost; stopping sh\n") != NULL;
    free(e);
    ASSERT_TRUE(said);
    for (int i = 0; i < 100 && pid_running(bg); i++)
        usleep(10000);
    bool sleeping = pid_running(bg);
    if (sleeping)
        kill(bg, SIGKILL);
    ASSERT_TRUE(!sleeping);
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
    cli_run(&r, b.port, NULL, 0, "lock", "L", "--", "sh", "-c", "exit 7", NULL);
    ASSERT_EQ(r.status, 7);
    run_free(&r);
    /* --holder names the holder (the lock key's value); --json reports. */
    char inner[700];
    snprintf(inner, sizeof inner, "%s -p %s get L", cli_path(), port);
    cli_run(&r, b.port, NULL, 0, "--json", "lock", "L", "--holder", "me-123", "--", "sh", "-c", inner, NULL);
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
        cli_run(&r, b.port, NULL, 0, "get", "L", NULL);
        int got = r.status;
        run_free(&r);
        if (got == 0)
            break;
        usleep(50 * 1000);
    }
    cli_run(&r, b.port, NULL, 0, "--json", "lock", "L", "--wait", "300", "--", "true", NULL);
    ASSERT_EQ(r.status, 2);
    OUT_IS(r, "{\"lock\":\"L\",\"acquired\":false}\n");
    run_free(&r);
    /* The holder is killed: its lease expires and the next one gets in. */
    kill(p3, SIGKILL);
    waitpid(p3, &s1, 0);
    uint64_t t0 = now_ms();
    cli_run(&r, b.port, NULL, 0, "lock", "L", "--wait", "5000", "--", "true", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(now_ms() - t0 < 2000);
    run_free(&r);
    broker_stop(&b);
    /* No state store answers (a broker without the plugin): the wait ends
     * with the first request's timeout, a failure to reach the store
     * (exit 4), not a lock said to be held for a wait that did not run. */
    struct broker plain = {.no_plugin = true};
    broker_start(&plain);
    const char *waits[] = {"5000", "500"}; /* a wait longer and one shorter than the timeout */
    for (int i = 0; i < 2; i++) {
        cli_run(&r, plain.port, NULL, 0, "--timeout", "1000", "lock", "L", "--wait", waits[i], "--", "true", NULL);
        ASSERT_EQ(r.status, 4);
        ASSERT_TRUE(strstr(r.err, "lock: no state store answered within 1000 ms") != NULL);
        ASSERT_TRUE(strstr(r.err, "held by someone else") == NULL);
        run_free(&r);
    }
    broker_stop(&plain);
}

/* Waiting for a lock another holds, `statestore lock` ends on SIGTERM or
 * SIGINT within the library's 100 ms poll, COMMAND not run, with the
 * signal's exit status (it used to wait on until the lock was free, and
 * then start COMMAND only to stop it). */
TEST(cli_lock_wait_ends_on_a_signal)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "set", "L", "someone-else", "--px", "60000", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    char port[16], ran[600], out[600], err[600], cmd[700];
    snprintf(port, sizeof port, "%d", b.port);
    snprintf(ran, sizeof ran, "%s/ran", test_tmpdir());
    snprintf(out, sizeof out, "%s/w.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/w.err", test_tmpdir());
    snprintf(cmd, sizeof cmd, "touch '%s'", ran);
    const int sigs[] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        char *argv[] = {(char *)cli_path(), "-p", port, "lock", "L", "--", "sh", "-c", cmd, NULL};
        pid_t p = spawn_cmd(argv, out, err);
        usleep(700 * 1000); /* waiting by now: connected, refused once, watching L */
        uint64_t t0 = now_ms();
        ASSERT_EQ(kill(p, sigs[i]), 0);
        int status = 0;
        pid_t done = 0;
        while ((done = waitpid(p, &status, WNOHANG)) == 0 && now_ms() - t0 < 5000)
            usleep(10 * 1000);
        if (done == 0) {
            kill(p, SIGKILL);
            waitpid(p, &status, 0);
        }
        ASSERT_EQ(done, p);
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 128 + sigs[i]);
        ASSERT_TRUE(now_ms() - t0 < 2000);
        ASSERT_TRUE(access(ran, F_OK) != 0);
    }
    broker_stop(&b);
}
