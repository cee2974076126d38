/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_nemesis.c - faults of the brokers themselves under the nemesis
 * load (nemesis.h): one stalled past its claim's lease, one killed with
 * its Txns in flight, one whose wall clock jumps. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test.h"
#include "nemesis.h"

/* Broker A stopped (SIGSTOP) for 4 s, past its claim's 3 s lease, with
 * requests in flight; then resumed. */
static void a_stalled(struct nemesis_fixture *f, bool on)
{
    ASSERT_EQ(kill(f->a.pid, on ? SIGSTOP : SIGCONT), 0);
    if (on)
        return;
    /* The stall did outlast the claim, and A took it back (under load,
     * 10 s at most). */
    for (uint64_t t0 = now_ms(); broker_log_count(&f->a, "is this broker's again") < f->round;) {
        ASSERT_TRUE(now_ms() - t0 < 10000);
        nemesis_load(f, 100);
    }
    ASSERT_EQ(broker_log_count(&f->a, "the claim on node id a lapsed"), f->round);
}

/* A broker that stalled past its claim: when it resumes, what it had in
 * flight is answered truly (done, or "unavailable" when its outcome is
 * unknown), it claims its node id again and goes on; nothing
 * acknowledged is lost, and the history stays linearizable. */
TEST(nemesis_broker_stalled_past_its_claim)
{
    nemesis_test("A stopped past its claim's lease", a_stalled, 4000, 0);
}

/* Broker A killed with SIGKILL (a write, lock step and requests in
 * flight), down for the fault, then started again with the same node id. */
static void a_killed(struct nemesis_fixture *f, bool on)
{
    if (on)
        nemesis_broker_kill(f, 0);
    else
        nemesis_broker_restart(f, 0);
}

/* A broker's kill -9: what it acknowledged is there, its Txns in flight
 * settle either way (the history stays linearizable with them of unknown
 * outcome), the other broker goes on, and the one started again takes
 * its node id back once the old claim lapses. */
TEST(nemesis_broker_killed_with_txns_in_flight)
{
    nemesis_test("A killed, then started again", a_killed, 3000, 0);
}

/* Broker A's wall clock 2 s ahead in odd rounds, 2 s behind in even
 * ones, true between them: a jump each way at every fault and heal. */
static void a_clock_jumps(struct nemesis_fixture *f, bool on)
{
    nemesis_clock_a(f, !on ? "+0s" : f->round % 2 ? "+2s" : "-2s");
}

/* Clocks that disagree and jump: versions still follow real time on
 * every key (the history is linearizable with versions as its order),
 * fenced writes stay in token order, nothing acknowledged is lost. */
TEST(nemesis_broker_clock_jumps)
{
    nemesis_test("A's clock 2 s off", a_clock_jumps, 4000, NEMESIS_CLOCK_A);
}

/* etcd out of space (its NOSPACE alarm raised by a filler's writes),
 * then freed by an operator's steps. */
static void etcd_full(struct nemesis_fixture *f, bool on)
{
    if (on)
        nemesis_fill(f);
    else
        nemesis_free(f);
}

/* A full cluster: writes that would store something are answered "quota
 * exceeded" and not done; reads, deletions (the locks' releases) and
 * expiries (the locks' deadlines) go on; once freed, writes come back by
 * themselves. The history stays linearizable with the refused writes as
 * writes that did not happen. */
TEST(nemesis_etcd_out_of_space)
{
    nemesis_test("etcd out of space", etcd_full, 3000, NEMESIS_QUOTA);
}
