/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* lock.c - `statestore lock NAME -- COMMAND...`: run COMMAND while holding
 * a lease, like flock(1) or `etcdctl lock`.
 *
 * The lease is renewed in the background while COMMAND runs and released
 * when it ends; the exit status is COMMAND's. COMMAND gets the fencing
 * token in STATESTORE_LOCK_TOKEN. If the lease is lost (a renewal refused,
 * or none answered within the lease time), COMMAND is terminated: mutual
 * exclusion no longer holds. COMMAND is also terminated if this process
 * dies (PR_SET_PDEATHSIG), so the lease then simply expires.
 *
 * COMMAND runs in a process group of its own, and what is signalled is
 * the group: a shell script's own children (`sh -c 'a; b'`, pipelines,
 * background jobs) hold the lock as much as COMMAND does, and must not
 * outlive it. SIGTERM first, SIGKILL after SS_LOCK_GRACE_MS. When COMMAND
 * ends by itself, whatever it left running in its group is stopped the
 * same way before the lease is released. On a terminal the group is
 * given the terminal while it runs, so that COMMAND can read it and
 * Ctrl-C reaches it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../client/lease.h"
#include "../core/errors.h"
#include "cli.h"

#define SS_LOCK_TTL_DEFAULT 10000u
/* From SIGTERM to SIGKILL, for a group that does not stop. */
#define SS_LOCK_GRACE_MS 5000u

static uint64_t lock_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Is a process of group pgid still running? Zombies do not count: those
 * COMMAND left are reaped by whoever inherits them, which a container's
 * first process may never do, and kill(-pgid, 0) counts them. */
static bool group_alive(pid_t pgid)
{
    if (kill(-pgid, 0) != 0 && errno == ESRCH)
        return false;
    DIR *d = opendir("/proc");
    if (d == NULL)
        return true;
    bool alive = false;
    struct dirent *e;
    while (!alive && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], line[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t n = fread(line, 1, sizeof line - 1, f);
        fclose(f);
        line[n] = '\0';
        /* "pid (comm) state ppid pgrp ...": comm may hold anything. */
        const char *rp = strrchr(line, ')');
        char state;
        long ppid, pgrp;
        if (rp && sscanf(rp + 1, " %c %ld %ld", &state, &ppid, &pgrp) == 3)
            alive = pgrp == (long)pgid && state != 'Z' && state != 'X';
    }
    closedir(d);
    return alive;
}

/* Stop what is left of group pgid (COMMAND reaped already): SIGTERM,
 * then SIGKILL after the grace period. */
static void stop_group(pid_t pgid)
{
    if (!group_alive(pgid))
        return;
    kill(-pgid, SIGTERM);
    kill(-pgid, SIGCONT); /* a stopped job would never see SIGTERM */
    uint64_t until = lock_now_ms() + SS_LOCK_GRACE_MS;
    while (group_alive(pgid)) {
        if (lock_now_ms() >= until) {
            kill(-pgid, SIGKILL);
            return;
        }
        struct timespec nap = {0, 20 * 1000000L};
        nanosleep(&nap, NULL);
    }
}

/* The terminal's foreground group goes to COMMAND's group and back. The
 * call from what is then a background group would stop us (SIGTTOU). */
static void give_terminal(int tty, pid_t pgid)
{
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(tty, pgid);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Is a SIGINT or SIGTERM waiting (blocked, so pending)? */
static bool stop_pending(void *ud)
{
    (void)ud;
    sigset_t pending;
    return sigpending(&pending) == 0 && (sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1);
}

int cmd_lock(struct cli *cl, ss_client *c)
{
    const char *name = cl->args[0];
    /* The lease's NEX accepts an equal value: a holder shared by two
     * invocations would let both hold the lock. A generated client id is
     * unique; one given with --id may be given to every invocation (it
     * names the principal of authorization rules), so the holder then
     * gets a random suffix of its own. */
    char unique[512];
    const char *holder = cl->holder ? cl->holder : ss_client_id(c);
    if (cl->holder == NULL && cl->conn.client_id != NULL) {
        uint8_t r[8];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
            report_failure(cl, "lock", SS_E_RANDOM, NULL);
            return exit_for(SS_E_RANDOM);
        }
        int k = snprintf(unique, sizeof unique, "%.400s.", ss_client_id(c));
        for (int i = 0; i < 8; i++)
            k += snprintf(unique + k, sizeof unique - (size_t)k, "%02x", r[i]);
        holder = unique;
    }
    uint64_t ttl = cl->ttl_ms ? cl->ttl_ms : SS_LOCK_TTL_DEFAULT;
    unsigned wait = cl->wait_ms && cl->wait_ms < UINT_MAX ? (unsigned)cl->wait_ms : UINT_MAX;
    char token[SS_LEASE_TOKEN_MAX];
    /* SIGINT and SIGTERM are blocked (main.c): while the lock is awaited
     * they end the wait, COMMAND not run. */
    int st = ss_lease_acquire_wait_cancel(c, name, holder, ttl, wait, token, stop_pending, NULL);
    if (st == SS_E_CANCELLED) {
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        struct timespec none = {0, 0};
        int sig = sigtimedwait(&stop, NULL, &none);
        cli_fail(cl, SS_E_CANCELLED, "lock: stopped while waiting for %s", name);
        if (sig == SIGTERM) /* as for a watch: the program ends too (commands.c) */
            raise(SIGTERM);
        return 128 + (sig > 0 ? sig : SIGTERM);
    }
    /* A timeout is the wait's (the lock held all along) or a request's
     * (no store answered): a store that answers a read now says which. */
    bool held = false;
    if (st == SS_E_TIMEOUT && cl->wait_ms) {
        ss_client_result r;
        int alive = ss_lease_holder(c, name, &r);
        ss_client_result_free(&r);
        held = alive == SS_OK;
        if (!held)
            st = alive;
    }
    if (held) {
        out_error("lock: %s is held by someone else (waited %llu ms)", name,
                  (unsigned long long)cl->wait_ms);
        if (cl->json) {
            printf("{\"lock\":");
            out_json_string((const uint8_t *)name, strlen(name));
            printf(",\"acquired\":false}\n");
        }
        return SS_EXIT_CONDITION;
    }
    if (st != SS_OK) {
        report_failure(cl, "lock", st, NULL);
        return exit_for(st);
    }
    ss_lease_keeper *keeper;
    if ((st = ss_lease_keep(c, name, holder, ttl, &keeper)) != SS_OK) {
        ss_lease_release(c, name, holder, NULL);
        report_failure(cl, "lock", st, NULL);
        return exit_for(st);
    }
    if (ss_lease_keeper_lost(keeper)) {
        /* Its first renewal was refused (someone else holds it now), or
         * the lease ran out before: COMMAND never runs without it. */
        ss_lease_keeper_stop(keeper);
        out_error("lock: the lease on %s was lost before %s started", name, cl->rest[0]);
        if (cl->json) { /* as for a lock held by someone else: COMMAND never ran under it */
            printf("{\"lock\":");
            out_json_string((const uint8_t *)name, strlen(name));
            printf(",\"acquired\":false}\n");
        }
        return SS_EXIT_CONDITION;
    }
    setenv("STATESTORE_LOCK_TOKEN", token, 1);
    /* On the terminal's foreground: COMMAND's group takes it over. The
     * controlling terminal, whatever stdin is: COMMAND may open /dev/tty
     * (a password prompt), which a background group may not read. */
    int tty = open("/dev/tty", O_RDWR | O_CLOEXEC);
    bool terminal = tty >= 0 && tcgetpgrp(tty) == getpgrp();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        if (terminal)
            give_terminal(tty, getpid());
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        sigset_t all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        execvp(cl->rest[0], cl->rest);
        fprintf(stderr, "statestore: lock: cannot run %s: %s\n", cl->rest[0], strerror(errno));
        _exit(127);
    }
    int rc = SS_EXIT_OK;
    bool lost = false;
    if (pid < 0) {
        cli_fail(cl, SS_E_INVAL, "lock: cannot start %s", cl->rest[0]);
        rc = SS_EXIT_USAGE;
    } else {
        setpgid(pid, pid); /* as the child does: whichever runs first */
        /* Wait for COMMAND; pass on SIGINT/SIGTERM; watch the lease. */
        uint64_t lost_at = 0;
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        for (;;) {
            int status;
            pid_t w = waitpid(pid, &status, WNOHANG | WUNTRACED);
            if (w == pid && WIFSTOPPED(status)) {
                /* Ctrl-Z (or SIGTTIN/SIGTTOU) stopped COMMAND's group:
                 * stop too, so that the shell sees the job stopped and
                 * gets the terminal back; on SIGCONT (fg, bg), COMMAND
                 * goes on, on the terminal again if we are on it. */
                if (terminal)
                    give_terminal(tty, getpgrp());
                kill(getpid(), SIGSTOP);
                if (terminal && tcgetpgrp(tty) == getpgrp())
                    give_terminal(tty, pid);
                kill(-pid, SIGCONT);
                continue;
            }
            if (w == pid) {
                rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                break;
            }
            struct timespec nap = {0, 50 * 1000000L};
            int sig = sigtimedwait(&sigs, NULL, &nap);
            if (sig > 0) {
                kill(-pid, sig);
                kill(-pid, SIGCONT); /* a stopped group would never see it */
            }
            if (!lost && ss_lease_keeper_lost(keeper)) {
                lost = true;
                lost_at = lock_now_ms();
                out_error("lock: the lease on %s was lost; stopping %s", name, cl->rest[0]);
                kill(-pid, SIGTERM);
                kill(-pid, SIGCONT);
            }
            if (lost && lock_now_ms() - lost_at >= SS_LOCK_GRACE_MS)
                kill(-pid, SIGKILL);
        }
        if (terminal && tcgetpgrp(tty) == pid) /* not when bg took it from us */
            give_terminal(tty, getpgrp());
        /* What COMMAND left running in its group still acts under the
         * lock: it goes before the lease does. */
        stop_group(pid);
    }
    if (tty >= 0)
        close(tty);
    ss_lease_keeper_stop(keeper);
    if (!lost)
        ss_lease_release(c, name, holder, NULL);
    if (cl->json) {
        printf("{\"lock\":");
        out_json_string((const uint8_t *)name, strlen(name));
        printf(",\"holder\":");
        out_json_string((const uint8_t *)holder, strlen(holder));
        printf(",\"token\":");
        out_json_string((const uint8_t *)token, strlen(token));
        printf(",\"lost\":%s,\"exit_status\":%d}\n", lost ? "true" : "false", rc);
    }
    return lost ? SS_EXIT_CONDITION : rc;
}
