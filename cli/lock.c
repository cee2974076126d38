/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* lock.c - `statestore lock NAME -- COMMAND...`: run COMMAND while holding
 * a lease, like flock(1) or `etcdctl lock`.
 *
 * The lease is renewed in the background while COMMAND runs and released
 * when it ends; the exit status is COMMAND's. COMMAND gets the fencing
 * token in STATESTORE_LOCK_TOKEN. If the lease is lost (a renewal refused,
 * or none answered within the lease time), COMMAND is terminated: mutual exclusion no longer holds. COMMAND is also
 * terminated if this process dies (PR_SET_PDEATHSIG), so the lease then
 * simply expires.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../client/lease.h"
#include "../core/errors.h"
#include "cli.h"

#define SS_LOCK_TTL_DEFAULT 10000u

int cmd_lock(struct cli *cl, ss_client *c)
{
    const char *name = cl->args[0];
    const char *holder = cl->holder ? cl->holder : ss_client_id(c);
    uint64_t ttl = cl->ttl_ms ? cl->ttl_ms : SS_LOCK_TTL_DEFAULT;
    unsigned wait = cl->wait_ms && cl->wait_ms < UINT_MAX ? (unsigned)cl->wait_ms : UINT_MAX;
    char token[SS_LEASE_TOKEN_MAX];
    int st = ss_lease_acquire_wait(c, name, holder, ttl, wait, token);
    if (st == SS_E_TIMEOUT && cl->wait_ms) {
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
        return SS_EXIT_CONDITION;
    }
    setenv("STATESTORE_LOCK_TOKEN", token, 1);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
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
        out_error("lock: cannot start %s", cl->rest[0]);
        rc = SS_EXIT_USAGE;
    } else {
        /* Wait for COMMAND; pass on SIGINT/SIGTERM; watch the lease. */
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        for (;;) {
            int status;
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid) {
                rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                break;
            }
            struct timespec nap = {0, 50 * 1000000L};
            int sig = sigtimedwait(&sigs, NULL, &nap);
            if (sig > 0)
                kill(pid, sig);
            if (!lost && ss_lease_keeper_lost(keeper)) {
                lost = true;
                out_error("lock: the lease on %s was lost; stopping %s", name, cl->rest[0]);
                kill(pid, SIGTERM);
            }
        }
    }
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
