/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* committer.h - the thread that runs the commits that wait for the disk
 * and the periodic fsync of the journal (see committer.c for why, and for
 * how it wakes the broker). Used by batch.c only, on the broker's thread.
 */
#ifndef SS_COMMITTER_H
#define SS_COMMITTER_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "../core/store.h"

/* The committing thread's name, as /proc/PID/task/N/comm shows it. */
#define SS_COMMITTER_THREAD_NAME "ss-committer"

/* The signal that wakes the broker's thread (committer.c says why); its
 * handler is installed by ss_committer_start. */
#define SS_WAKE_SIGNAL SIGURG

enum { SS_JOB_COMMIT, SS_JOB_SYNC };

struct ss_committer {
    ss_store *store;
    pthread_t thread;
    pthread_t broker; /* woken when a commit is done */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;  /* under mu */
    int job;    /* under mu: SS_JOB_* */
    int result; /* under mu */
    uint64_t job_us; /* the last job's duration: written before it is marked
                        done, read after it is collected */
    bool stop;  /* under mu */
    bool resident; /* one thread for the plugin's life; else one per job */
    bool live;     /* a thread was started and not yet joined */
    bool started;
    bool pending; /* broker thread only: a commit submitted and not yet collected */
    bool syncing; /* broker thread only: a periodic sync submitted and not yet collected */
    struct sigaction old_action;
};

/* start installs the wake-up signal's handler and, when resident, starts
 * the thread (else each submit starts one, and collect joins it); submit
 * hands over a prepared batch (SS_JOB_COMMIT, after
 * ss_store_commit_prepare) or a periodic sync (SS_JOB_SYNC, after
 * ss_store_sync_start); collect returns true with the job's result once it
 * is done; stop completes a job under way (collect it afterwards) and ends
 * the thread; destroy frees everything (stopping first if needed). */
int ss_committer_start(struct ss_committer *c, ss_store *store, bool resident);
void ss_committer_submit(struct ss_committer *c, int job);
bool ss_committer_collect(struct ss_committer *c, int *rc);
/* Block until the submitted commit is done, then collect it. */
void ss_committer_wait(struct ss_committer *c, int *rc);
void ss_committer_stop(struct ss_committer *c);
void ss_committer_destroy(struct ss_committer *c);

#endif
