/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* main.c - the test runner: runs every test of tests/list.h (or those
 * named on the command line) each in a child process with a time limit,
 * and ends with "N passed, N failed". */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define X(name) void test_##name(void);
#define X_ONCE(name) X(name)
#include "list.h"
#undef X
#undef X_ONCE

struct test_entry {
    const char *name;
    void (*fn)(void);
    bool once; /* not again in the run on etcd (list.h) */
};

static const struct test_entry tests[] = {
#define X(name) {#name, test_##name, false},
#define X_ONCE(name) {#name, test_##name, true},
#include "list.h"
#undef X
#undef X_ONCE
};

static char tmpdir[4096];

static void print_escaped(const void *p, size_t n)
{
    const unsigned char *s = p;
    size_t shown = n > 200 ? 200 : n;
    fputc('"', stderr);
    for (size_t i = 0; i < shown; i++) {
        if (s[i] == '\r')
            fputs("\\r", stderr);
        else if (s[i] == '\n')
            fputs("\\n", stderr);
        else if (s[i] < 0x20 || s[i] >= 0x7f || s[i] == '"' || s[i] == '\\')
            fprintf(stderr, "\\x%02x", s[i]);
        else
            fputc(s[i], stderr);
    }
    fputc('"', stderr);
    if (shown < n)
        fprintf(stderr, "... (%zu bytes)", n);
}

void test_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "  %s:%d: assertion failed: %s\n", file, line, what);
    exit(1);
}

void test_fail_int(const char *file, int line, const char *a_txt, const char *b_txt, long long a,
                   long long b)
{
    fprintf(stderr, "  %s:%d: %s == %s failed: %lld != %lld\n", file, line, a_txt, b_txt, a, b);
    exit(1);
}

void test_fail_mem(const char *file, int line, const char *a_txt, const void *a, size_t an,
                   const void *b, size_t bn)
{
    fprintf(stderr, "  %s:%d: %s differs\n    got:    ", file, line, a_txt);
    print_escaped(a, an);
    fprintf(stderr, "\n    wanted: ");
    print_escaped(b, bn);
    fputc('\n', stderr);
    exit(1);
}

const char *test_tmpdir(void)
{
    return tmpdir;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The network namespaces a test process made (tests/integration/netns.h
 * names them "sst<pid>-..."), removed as `ip netns del` does, whether
 * the test ended well or not. */
static void remove_netns_left_by(pid_t pid)
{
    DIR *d = opendir("/run/netns");
    if (d == NULL)
        return;
    char prefix[32], path[300];
    int len = snprintf(prefix, sizeof prefix, "sst%d-", (int)pid);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strncmp(e->d_name, prefix, (size_t)len) != 0)
            continue;
        snprintf(path, sizeof path, "/run/netns/%s", e->d_name);
        umount2(path, MNT_DETACH);
        unlink(path);
    }
    closedir(d);
}

static int run_one(const struct test_entry *t, unsigned timeout_s)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ss-test-%s-XXXXXX", t->name);
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    fflush(NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        /* Its own process group: whatever the test starts (brokers,
         * commands) is stopped with it, even when an assertion fails. */
        setpgid(0, 0);
        /* The tool's options file is looked for here (none), not in the
         * home of whoever runs the tests. */
        setenv("XDG_CONFIG_HOME", tmpdir, 1);
        alarm(timeout_s);
        t->fn();
        exit(0);
    }
    setpgid(pid, pid);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    kill(-pid, SIGKILL);
    while (waitpid(-pid, NULL, 0) > 0 || errno == EINTR)
        ;
    remove_netns_left_by(pid);
    if (getenv("SS_KEEP_TMP") == NULL)
        nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    /* The time each test took, so that a slow suite shows where. */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("ok   %s (%.1f s)\n", t->name, took);
        return 0;
    }
    if (WIFSIGNALED(status))
        printf("FAIL %s (%.1f s, signal %d%s)\n", t->name, took, WTERMSIG(status),
               WTERMSIG(status) == SIGALRM ? ": timed out" : "");
    else
        printf("FAIL %s (%.1f s)\n", t->name, took);
    return 1;
}

/* SS_TEST_SKIP: space-separated prefixes of test names to leave out (a
 * variant such as valgrind may leave out what another variant covers). */
static bool skipped_by_env(const char *name)
{
    const char *list = getenv("SS_TEST_SKIP");
    if (list == NULL)
        return false;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, " ");
        if (n > 0 && strncmp(name, p, n) == 0)
            return true;
        p += n;
        p += strspn(p, " ");
    }
    return false;
}

/* True when name is a test of this runner (of tests/list.h, whether the
 * run on etcd leaves it out or not). */
static bool known_test(const char *name)
{
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (strcmp(tests[i].name, name) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    unsigned timeout_s = 120;
    const char *env = getenv("SS_TEST_TIMEOUT");
    if (env && atoi(env) > 0)
        timeout_s = (unsigned)atoi(env);
    size_t n = sizeof tests / sizeof tests[0];
    /* A name that is no test (a typo, a test renamed or removed) would
     * otherwise be left out without a word, and a run of the others pass:
     * refused before anything runs. */
    int unknown = 0;
    for (int a = 1; a < argc; a++) {
        if (!known_test(argv[a])) {
            fprintf(stderr, "%s: no test named %s\n", argv[0], argv[a]);
            unknown++;
        }
    }
    if (unknown > 0)
        return 2;
    int passed = 0, failed = 0, skipped = 0;
    const char *backend = getenv("SS_BACKEND");
    bool again = backend && strcmp(backend, "etcd") == 0;
    for (size_t i = 0; i < n; i++) {
        if (again && tests[i].once)
            continue;
        if (argc > 1) {
            int wanted = 0;
            for (int a = 1; a < argc; a++)
                if (strcmp(argv[a], tests[i].name) == 0)
                    wanted = 1;
            if (!wanted)
                continue;
        }
        if (skipped_by_env(tests[i].name)) {
            printf("skip %s (SS_TEST_SKIP)\n", tests[i].name);
            skipped++;
            continue;
        }
        if (run_one(&tests[i], timeout_s) == 0)
            passed++;
        else
            failed++;
    }
    if (skipped)
        printf("%d left out by SS_TEST_SKIP\n", skipped);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
}
