/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* leader_example.c - leader election with the statestore C client: run it
 * twice (or more) and one copy leads; stop or kill that one and another
 * takes over within the lease time.
 *
 * Build:  cc leader_example.c $(pkg-config --cflags --libs statestore) -o leader_example
 * Run:    ./leader_example [HOST] [PORT] [ROLE] [LEASE_MS]
 *
 * It prints a line when what it knows changes ("leading TOKEN",
 * "following HOLDER", "no leader") and resigns on SIGINT or SIGTERM.
 */
#define _POSIX_C_SOURCE 200809L /* sigset_t, pthread_sigmask under -std=c11 too */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <statestore/client.h>
#include <statestore/errors.h>
#include <statestore/leader.h>

static void on_change(void *ud, const ss_leader_state *s)
{
    (void)ud;
    if (s->leading)
        printf("leading %s\n", s->token); /* fence every write with s->token */
    else if (s->leader[0])
        printf("following %s\n", s->leader);
    else
        printf("no leader\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    /* No client id and no holder given: both are generated, so that two
     * copies never share one. */
    ss_client_options opts = {
        .host = argc > 1 ? argv[1] : "localhost",
        .port = argc > 2 ? atoi(argv[2]) : 1883,
        .timeout_ms = 2000,
    };
    ss_leader_options lo = {
        .role = argc > 3 ? argv[3] : "example-leader",
        .lease_ms = argc > 4 ? strtoull(argv[4], NULL, 10) : 3000,
        .cb = on_change,
    };
    /* Wait for the signals here rather than in a handler. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);

    ss_client *c;
    ss_client_retry retry = {.give_up_ms = 30000};
    char why[200];
    int rc = ss_client_connect_retry(&opts, &retry, &c, why, sizeof why);
    if (rc != 0) {
        fprintf(stderr, "connect: %s\n", why);
        return 1;
    }
    ss_leader *l;
    rc = ss_leader_campaign(c, &lo, &l);
    if (rc != 0) {
        fprintf(stderr, "campaign: %s\n", ss_strerror(rc));
        ss_client_close(c);
        return 1;
    }
    printf("holder %s\n", ss_leader_holder(l));
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    rc = ss_leader_resign(l);
    printf("resigned\n");
    ss_client_close(c);
    return rc == 0 ? 0 : 1;
}
