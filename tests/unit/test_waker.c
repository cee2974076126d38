/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_waker.c - the signal that wakes the broker's thread (plugin/waker.c):
 * repeated until seen, and silent once the broker's loop has ended. The
 * test thread stands for the broker's: it blocks the signal and takes what
 * is pending with sigtimedwait, so each signal the waker sends is seen. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "../../core/errors.h"
#include "../../plugin/waker.h"
#include "../test.h"

/* A wake signal pending or arriving within ms: true if one came. */
static bool wake_within(const sigset_t *set, long ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    int sig;
    do
        sig = sigtimedwait(set, NULL, &t);
    while (sig < 0 && errno == EINTR);
    return sig == SS_WAKE_SIGNAL;
}

/* The test thread as the broker's, with the signal held for sigtimedwait. */
static void block_wake_signal(sigset_t *set, sigset_t *old)
{
    sigemptyset(set);
    sigaddset(set, SS_WAKE_SIGNAL);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, set, old), 0);
}

TEST(waker_repeats_until_seen_and_is_quiet_after_the_loop)
{
    sigset_t set, old;
    block_wake_signal(&set, &old);
    struct ss_waker w;
    ASSERT_EQ(ss_waker_start(&w, true), SS_OK);
    ASSERT_TRUE(!wake_within(&set, 0)); /* nothing before a poke */

    ss_waker_poke(&w);
    ASSERT_TRUE(wake_within(&set, 2000));
    ASSERT_TRUE(wake_within(&set, 2000)); /* again: not seen yet */
    ASSERT_TRUE(wake_within(&set, 2000));

    ss_waker_seen(&w);
    (void)wake_within(&set, 0); /* one sent before it, still pending */
    ASSERT_TRUE(!wake_within(&set, 30));

    ss_waker_poke(&w); /* woken again after seen */
    ASSERT_TRUE(wake_within(&set, 2000));

    /* The loop has ended with a poke unseen: nothing more, even when poked
     * again (the backend's threads may still finish calls). */
    ss_waker_quiet(&w);
    (void)wake_within(&set, 0);
    ASSERT_TRUE(!wake_within(&set, 30));
    ss_waker_poke(&w);
    ASSERT_TRUE(!wake_within(&set, 30));

    ss_waker_stop(&w);
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
}

TEST(waker_without_thread_signals_once_per_poke)
{
    sigset_t set, old;
    block_wake_signal(&set, &old);
    struct ss_waker w;
    ASSERT_EQ(ss_waker_start(&w, false), SS_OK);
    ss_waker_poke(&w);
    ASSERT_TRUE(wake_within(&set, 0)); /* sent at once, by the poke itself */
    ASSERT_TRUE(!wake_within(&set, 30)); /* the caller repeats, not the waker */
    ss_waker_quiet(&w); /* harmless without the thread */
    ss_waker_poke(&w);
    ASSERT_TRUE(wake_within(&set, 0));
    ss_waker_stop(&w);
    ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, NULL), 0);
}
