/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* batch_internal.h - what batch.c, batch_exec.c and batch_answer.c
 * share: the batch and its commits in flight. */
#ifndef SS_BATCH_INTERNAL_H
#define SS_BATCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/buf.h"
#include "../core/table.h"
#include "batch.h"
#include "outbox.h"
#include "queue.h"

/* Commits in flight at once at most, whatever a backend says. */
#define SS_BATCH_FLIGHTS_MAX 4u
/* A batch whose commit is in flight (backend.h: commit_start). */
struct ss_flight {
    bool used;
    unsigned id;         /* the backend's name for its commit */
    uint64_t seq;        /* the batch's number */
    struct ss_qlist ran; /* its requests, to run again on a conflict */
    uint64_t dedup_after, dedup_upto; /* its resend cache entries: (after, upto] */
};

/* A client whose SCAN waits for its page while the queue runs
 * (ss_batch__run_queue). */
struct ss_batch_lister {
    ss_table_node node;
    const char *client_id; /* borrowed from its queued SCAN */
};

struct ss_batch {
    struct ss_plugin *p;
    struct ss_outbox outbox;
    struct ss_qlist queue;
    uint64_t queue_bytes; /* payloads and properties held */
    size_t prefetched;    /* queued requests whose keys were read ahead */
    /* Copies of the requests run in the open batch, to run again if its
     * commit finds that someone else changed their keys (backend.h:
     * may_conflict). */
    struct ss_qlist ran;
    /* What the copies in ran and in the flights' ran hold, by
     * ss_queued_size: they count with the outbox's bytes against
     * max_queued_bytes (batch.c: ss_batch__answers_full). */
    uint64_t copy_bytes;
    struct ss_flight flights[SS_BATCH_FLIGHTS_MAX];
    size_t nflights; /* the backend's max_flights */
    uint64_t seq;        /* number of the open batch */
    uint64_t dedup_mark; /* resend cache entries after it belong to the open batch */
    ss_buf scratch;      /* the engine's answer */
    /* The listing clients during one run of the queue, in lister_room
     * (made as SCANs need it: batch.c, ss_batch__lister_room). Empty
     * between runs. */
    ss_table listers;
    struct ss_batch_lister *lister_room;
    size_t lister_cap;
};

/* Queue an answer to client_id's request (for the session ss_answer_to
 * says), waiting for commit (0: none; final: it waits but holds whatever
 * becomes of the commit, outbox.h): the request's response topic and
 * correlation data are handed over to it, not copied. False when memory
 * ran out (logged): nothing was queued. */
bool ss_batch__push(struct ss_batch *b, const char *client_id, struct ss_request_props *r, uint8_t *payload,
                    size_t len, mosquitto_property *props, uint64_t commit, bool final);
/* The same with a copy of payload, as a status 200 answer (version: its
 * __ts, NULL for none). */
bool ss_batch__answer(struct ss_batch *b, const char *client_id, struct ss_request_props *r,
                      const ss_bytes *payload, const char *version, uint64_t commit, bool final);

/* Run one request. False when it must run again later (its read is under
 * way, or the key changed after it was decided): nothing was answered.
 * *held: its answer shares the open batch's fate (command.h); one that
 * does not was answered for good and never runs again. gone: its client
 * disconnected before it ran. */
bool ss_batch__execute(struct ss_batch *b, const struct ss_request_from *in, bool gone,
                       struct ss_request_props *r, bool *held);

#endif
