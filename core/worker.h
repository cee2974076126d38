/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* worker.h - one job at a time off the owner's thread: a backend's work
 * that waits for the disk (LMDB's commits with fsync=always, checkpoints,
 * the periodic fsync of the journal). See worker.c for why, and for how
 * it wakes the owner. Every function but the job itself runs on the
 * owner's thread.
 */
#ifndef SS_WORKER_H
#define SS_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* A job: its kind (the backend's), on the worker's thread. Returns its
 * result. */
typedef int (*ss_worker_job_fn)(void *ctx, int job);
typedef void (*ss_worker_wake_fn)(void *ctx);

struct ss_worker {
    ss_worker_job_fn run;
    void *ctx;
    ss_worker_wake_fn wake; /* called until a job that wakes is collected */
    void *wake_ctx;
    const char *name; /* the thread's, as top -H shows it */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;  /* under mu */
    int job;    /* under mu */
    bool wakes; /* under mu: the job's owner waits for it */
    int result; /* under mu */
    uint64_t job_us; /* the last job's duration: written before it is marked
                        done, read after it is collected */
    bool stop;  /* under mu */
    bool resident; /* one thread for the worker's life; else one per job */
    bool live;     /* a thread was started and not yet joined */
    bool started;
    bool busy; /* owner only: a job submitted and not yet collected */
};

/* Ready the worker; when resident, start its thread (else each submit
 * starts one, and collect joins it). wake may be NULL (set it before the
 * first job that wakes). 0 or SS_E_NOMEM. */
int ss_worker_start(struct ss_worker *w, const char *name, bool resident, ss_worker_job_fn run, void *ctx);
/* Run job; wakes: call the wake hook once it is done, again every 200 us
 * until it is collected (an owner asleep must notice). Should no thread
 * start, the job runs here: a stall, not a lost job. */
void ss_worker_submit(struct ss_worker *w, int job, bool wakes);
/* True with the job's result once the submitted job is done. */
bool ss_worker_collect(struct ss_worker *w, int *rc);
/* Block until the submitted job is done, then collect it. */
void ss_worker_wait(struct ss_worker *w, int *rc);
/* Complete a job under way (collect it afterwards) and end the thread. */
void ss_worker_stop(struct ss_worker *w);
/* Free everything (stopping first if needed). */
void ss_worker_destroy(struct ss_worker *w);

#endif
