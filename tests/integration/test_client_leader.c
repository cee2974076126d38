/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_leader.c - leader election (client/leader.h): copies of
 * examples/leader_example as separate processes, killed (-9) and frozen
 * (SIGSTOP) while they lead; and participants of one process that share
 * a holder id. */
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../client/leader.h"
#include "../../core/errors.h"
#include "../../core/hlc.h"
#include "../test.h"
#include "harness.h"

#define LEASE_MS 2000
/* A new leader within the lease time plus one renewal, and what the
 * machine adds: a notification's delivery, an acquisition's round trip,
 * a loaded scheduler. */
#define TAKEOVER_MAX_MS (LEASE_MS + LEASE_MS / 3 + 700)

struct copy {
    pid_t pid;
    char out[600];
};

/* Start a copy of the example; it dies with the test. */
static void copy_start(struct copy *p, int port, const char *name)
{
    const char *example = getenv("SS_EXAMPLE");
    ASSERT_TRUE(example != NULL);
    char dir[600], exe[700], portbuf[16], lease[16];
    snprintf(dir, sizeof dir, "%s", example);
    snprintf(exe, sizeof exe, "%s/leader_example", dirname(dir));
    snprintf(portbuf, sizeof portbuf, "%d", port);
    snprintf(lease, sizeof lease, "%d", LEASE_MS);
    snprintf(p->out, sizeof p->out, "%s/%s.out", test_tmpdir(), name);
    fflush(NULL);
    p->pid = fork();
    ASSERT_TRUE(p->pid >= 0);
    if (p->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int o = open(p->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(o, 2);
        execl(exe, exe, "127.0.0.1", portbuf, "role", lease, (char *)NULL);
        _exit(127);
    }
}

/* The last line of the copy's output that starts with prefix, copied
 * (without the prefix) into rest; false if none. */
/* The last whole line of the copy's output that starts with prefix
 * (without it) into rest; with skip, one that does not start with skip
 * either. */
static bool copy_last_but(const struct copy *p, const char *prefix, const char *skip, char *rest, size_t n)
{
    size_t len;
    char *all = slurp(p->out, &len);
    bool found = false;
    size_t pl = strlen(prefix);
    for (char *line = all, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next == NULL)
            break; /* a line still being written */
        *next++ = '\0';
        if (strncmp(line, prefix, pl) == 0 && (skip == NULL || strncmp(line, skip, strlen(skip)) != 0)) {
            snprintf(rest, n, "%s", line + pl);
            found = true;
        }
    }
    free(all);
    return found;
}

static bool copy_last(const struct copy *p, const char *prefix, char *rest, size_t n)
{
    return copy_last_but(p, prefix, NULL, rest, n);
}

/* The copy's state: the last line of its output but the "holder" line
 * ("" if none). Its main thread prints that line once the campaign has
 * started, while the client's thread may have printed the state already. */
static void copy_state(const struct copy *p, char *line, size_t n)
{
    line[0] = '\0';
    copy_last_but(p, "", "holder ", line, n);
}

/* Wait up to ms for the copy's last line to start with prefix; returns
 * when it did (0 if it never did). */
static uint64_t copy_wait(const struct copy *p, const char *prefix, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    char line[600];
    do {
        copy_state(p, line, sizeof line);
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            return now_ms();
        usleep(10 * 1000);
    } while (now_ms() < end);
    return 0;
}

/* The copy's holder id, waiting up to 5 s for its line. */
static bool copy_holder(const struct copy *p, char *holder, size_t n)
{
    uint64_t end = now_ms() + 5000;
    while (!copy_last(p, "holder ", holder, n)) {
        if (now_ms() >= end)
            return false;
        usleep(10 * 1000);
    }
    return true;
}

static int token_cmp(const char *a, const char *b)
{
    ss_hlc ha, hb;
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)a, strlen(a), &ha), SS_OK);
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)b, strlen(b), &hb), SS_OK);
    return ss_hlc_compare(&ha, &hb);
}

/* Three processes campaign for one role with a 2 s lease. The first
 * leads; killed with -9, the second leads within the lease time plus one
 * renewal; frozen with SIGSTOP, the third does the same, and the second,
 * thawed, says at once that it no longer leads and follows the third.
 * Each term has one leader and a token greater than the term before. */
TEST(client_leader_election_across_processes)
{
    struct broker b = {0};
    broker_start(&b);
    struct copy a, bb, c;
    char holder_a[300], holder_b[300], holder_c[300], tok_a[300], tok_b[300], tok_c[300], line[600];
    copy_start(&a, b.port, "a");
    ASSERT_TRUE(copy_wait(&a, "leading ", 5000) != 0);
    ASSERT_TRUE(copy_holder(&a, holder_a, sizeof holder_a));
    ASSERT_TRUE(copy_last(&a, "leading ", tok_a, sizeof tok_a));
    copy_start(&bb, b.port, "b");
    ASSERT_TRUE(copy_wait(&bb, "following ", 5000) != 0);
    ASSERT_TRUE(copy_holder(&bb, holder_b, sizeof holder_b));
    ASSERT_TRUE(strcmp(holder_a, holder_b) != 0);
    copy_state(&bb, line, sizeof line);
    ASSERT_MEM(line + 10, strlen(line + 10), holder_a, strlen(holder_a));

    /* kill -9 of the leader. */
    uint64_t t0 = now_ms();
    kill(a.pid, SIGKILL);
    waitpid(a.pid, NULL, 0);
    uint64_t t1 = copy_wait(&bb, "leading ", TAKEOVER_MAX_MS + 3000);
    ASSERT_TRUE(t1 != 0);
    fprintf(stderr, "  after kill -9: a new leader in %llu ms (lease %d ms)\n", (unsigned long long)(t1 - t0),
            LEASE_MS);
    ASSERT_TRUE(t1 - t0 <= TAKEOVER_MAX_MS);
    ASSERT_TRUE(copy_last(&bb, "leading ", tok_b, sizeof tok_b));
    ASSERT_TRUE(token_cmp(tok_a, tok_b) < 0);

    copy_start(&c, b.port, "c");
    ASSERT_TRUE(copy_wait(&c, "following ", 5000) != 0);
    ASSERT_TRUE(copy_holder(&c, holder_c, sizeof holder_c));
    copy_state(&c, line, sizeof line);
    ASSERT_MEM(line + 10, strlen(line + 10), holder_b, strlen(holder_b));

    /* SIGSTOP of the leader. */
    t0 = now_ms();
    kill(bb.pid, SIGSTOP);
    t1 = copy_wait(&c, "leading ", TAKEOVER_MAX_MS + 3000);
    ASSERT_TRUE(t1 != 0);
    fprintf(stderr, "  after SIGSTOP: a new leader in %llu ms\n", (unsigned long long)(t1 - t0));
    ASSERT_TRUE(t1 - t0 <= TAKEOVER_MAX_MS);
    ASSERT_TRUE(copy_last(&c, "leading ", tok_c, sizeof tok_c));
    ASSERT_TRUE(token_cmp(tok_b, tok_c) < 0);
    /* Thawed, the old leader finds its lease time passed: it stops
     * leading before anything else (its renewal can only be refused: the
     * role holds another holder), then follows the new one. */
    kill(bb.pid, SIGCONT);
    uint64_t thawed = now_ms();
    ASSERT_TRUE(copy_wait(&bb, "following ", 3000) != 0);
    fprintf(stderr, "  thawed: the old leader follows after %llu ms\n", (unsigned long long)(now_ms() - thawed));
    size_t len;
    char *out_b = slurp(bb.out, &len);
    char *lead = strstr(out_b, "leading ");
    ASSERT_TRUE(lead != NULL);
    char *after = strchr(lead, '\n') + 1;
    ASSERT_TRUE(strncmp(after, "no leader\n", 10) == 0 || strncmp(after, "following ", 10) == 0);
    ASSERT_TRUE(strstr(after, "leading ") == NULL);
    free(out_b);
    copy_state(&bb, line, sizeof line);
    ASSERT_MEM(line + 10, strlen(line + 10), holder_c, strlen(holder_c));
    /* The new leader was never disturbed. */
    char want[600];
    snprintf(want, sizeof want, "leading %s", tok_c);
    copy_state(&c, line, sizeof line);
    ASSERT_MEM(line, strlen(line), want, strlen(want));

    /* Resigning hands over at once, through the KEYNOTIFY (well within the
     * lease time). */
    t0 = now_ms();
    kill(c.pid, SIGTERM);
    int status;
    waitpid(c.pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    t1 = copy_wait(&bb, "leading ", 3000);
    ASSERT_TRUE(t1 != 0);
    ASSERT_TRUE(t1 - t0 < LEASE_MS);
    kill(bb.pid, SIGTERM);
    waitpid(bb.pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    broker_stop(&b);
}

struct seen {
    pthread_mutex_t mu;
    ss_leader_state last;
    int changes;
};

static void seen_cb(void *ud, const ss_leader_state *s)
{
    struct seen *v = ud;
    pthread_mutex_lock(&v->mu);
    v->last = *s;
    v->changes++;
    pthread_mutex_unlock(&v->mu);
}

static bool wait_leading(ss_leader *l, bool leading, unsigned ms)
{
    uint64_t end = now_ms() + ms;
    ss_leader_state s;
    do {
        ss_leader_get(l, &s);
        if (s.leading == leading)
            return true;
        usleep(10 * 1000);
    } while (now_ms() < end);
    return false;
}

/* Two participants given the same holder id: the role is acquired with
 * NX, so only one leads; the other follows a leader of its own name
 * without believing it leads. A generated holder is unique. */
TEST(client_leader_same_holder_leads_once)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .timeout_ms = 5000};
    ss_client *c1, *c2;
    ASSERT_EQ(ss_client_connect(&o, &c1), SS_OK);
    ASSERT_EQ(ss_client_connect(&o, &c2), SS_OK);
    struct seen v1 = {.mu = PTHREAD_MUTEX_INITIALIZER}, v2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_leader_options lo = {.role = "same-role", .holder = "worker", .lease_ms = 1500, .cb = seen_cb, .ud = &v1};
    ss_leader *l1, *l2;
    ASSERT_EQ(ss_leader_campaign(c1, &lo, &l1), SS_OK);
    ASSERT_TRUE(wait_leading(l1, true, 3000));
    lo.ud = &v2;
    ASSERT_EQ(ss_leader_campaign(c2, &lo, &l2), SS_OK);
    for (int i = 0; i < 300; i++) {
        pthread_mutex_lock(&v2.mu);
        int n = v2.changes;
        pthread_mutex_unlock(&v2.mu);
        if (n)
            break;
        usleep(10 * 1000);
    }
    usleep(2 * 1500 * 1000); /* two lease times: renewals go on */
    ss_leader_state s1, s2;
    ss_leader_get(l1, &s1);
    ss_leader_get(l2, &s2);
    ASSERT_TRUE(s1.leading);
    ASSERT_TRUE(!s2.leading);
    ASSERT_STR(s2.leader, strlen(s2.leader), "worker");
    ASSERT_EQ(s2.token[0], '\0');
    pthread_mutex_lock(&v2.mu);
    ASSERT_TRUE(!v2.last.leading);
    pthread_mutex_unlock(&v2.mu);
    pthread_mutex_lock(&v1.mu);
    ASSERT_EQ(v1.changes, 1);
    ASSERT_TRUE(v1.last.leading);
    ASSERT_MEM(v1.last.token, strlen(v1.last.token), s1.token, strlen(s1.token));
    pthread_mutex_unlock(&v1.mu);
    /* The holder resigns: the other takes the role. */
    ASSERT_EQ(ss_leader_resign(l1), SS_OK);
    ASSERT_TRUE(wait_leading(l2, true, 1000));
    ss_leader_get(l2, &s2);
    ASSERT_TRUE(token_cmp(s1.token, s2.token) < 0);
    ASSERT_EQ(ss_leader_resign(l2), SS_OK);

    /* Generated holders: the client's id, a dot, 16 hex digits. */
    ss_leader_options g = {.role = "gen-role"};
    ASSERT_EQ(ss_leader_campaign(c1, &g, &l1), SS_OK);
    ASSERT_EQ(ss_leader_campaign(c1, &g, &l2), SS_OK);
    const char *h1 = ss_leader_holder(l1), *h2 = ss_leader_holder(l2);
    size_t idn = strlen(ss_client_id(c1));
    ASSERT_EQ(strlen(h1), idn + 17);
    ASSERT_TRUE(strncmp(h1, ss_client_id(c1), idn) == 0 && h1[idn] == '.');
    ASSERT_TRUE(strcmp(h1, h2) != 0);
    ASSERT_EQ(ss_leader_resign(l1), SS_OK);
    ASSERT_EQ(ss_leader_resign(l2), SS_OK);
    ASSERT_EQ(ss_leader_resign(NULL), SS_OK);
    /* Refused before anything starts. */
    ss_leader_options bad = {.role = ""};
    ASSERT_EQ(ss_leader_campaign(c1, &bad, &l1), SS_E_INVAL);
    ss_client_close(c1);
    ss_client_close(c2);
    broker_stop(&b);
}

/* The documented example (docs/CLIENT.md) run as two copies at once,
 * three times: each copy's client id and lock holder are its own, so
 * neither takes the other's connection over nor enters the lock beside
 * it, and the counter it increments under the lock ends at exactly 6. */
TEST(client_documented_example_is_safe_to_run_twice)
{
    const char *exe = getenv("SS_EXAMPLE");
    ASSERT_TRUE(exe != NULL);
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    char *argv[] = {(char *)exe, "127.0.0.1", port, NULL};
    for (int round = 0; round < 3; round++) {
        pid_t pid[2];
        char out[2][600], err[600];
        for (int i = 0; i < 2; i++) {
            snprintf(out[i], sizeof out[i], "%s/copy%d.out", test_tmpdir(), i);
            snprintf(err, sizeof err, "%s/copy%d.err", test_tmpdir(), i);
            pid[i] = spawn_cmd(argv, out[i], err);
            ASSERT_TRUE(pid[i] > 0);
        }
        for (int i = 0; i < 2; i++) {
            int status;
            ASSERT_EQ(waitpid(pid[i], &status, 0), pid[i]);
            ASSERT_TRUE(WIFEXITED(status));
            ASSERT_EQ(WEXITSTATUS(status), 0);
            size_t len;
            char *text = slurp(out[i], &len);
            ASSERT_TRUE(strstr(text, "increment: success\n") != NULL);
            free(text);
        }
    }
    struct run g;
    char *gargv[] = {(char *)cli_path(), "-p", port, "get", "counter", NULL};
    run_cmd(gargv, NULL, 0, &g);
    ASSERT_STR(g.out, g.out_len, "6");
    run_free(&g);
    broker_stop(&b);
}
