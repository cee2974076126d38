/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* batch.h - the life of a request, from its arrival to its answer.
 *
 * A request that request.c accepted runs in the engine inside the open
 * batch (or waits in a queue while a commit is under way). Its answer, and
 * the notifications it causes, wait in the outbox; at the broker's next
 * tick the batch is committed and only then is the outbox published:
 * nothing is acknowledged before it is durable. Notifications come from
 * the backend's change feed once a commit has settled (backend.h), after
 * the answers of that commit. Every message in the
 * outbox records the commit it waits for; if that commit fails, answers
 * become errors and notifications are dropped, while an answer that waits
 * for nothing (a refusal, the first answer of a request committed earlier)
 * goes out as it is. How a commit is made (a worker thread, Txns in
 * flight) is the backend's business (core/backend.h): the lifecycle is
 * the same for every backend.
 *
 * All functions run on the broker's thread.
 */
#ifndef SS_BATCH_H
#define SS_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mosquitto.h>

struct ss_plugin;
struct ss_batch;

/* What a request carried besides its payload, copied out of the broker's
 * structures (heap strings, NULL when absent). */
struct ss_request_props {
    char *response_topic;
    void *corr; /* NULL when absent; present but empty: not NULL, corr_len 0 */
    uint16_t corr_len;
    bool has_corr;
    char *ts, *ft, *prot_ver;
};

/* Free what r holds (and clear it). */
void ss_request_props_free(struct ss_request_props *r);

/* Where a request comes from; borrowed for the call. */
struct ss_request_from {
    const uint8_t *payload;
    size_t len;
    const char *client_id;
    const char *username; /* NULL when none */
};

/* Start the lifecycle for p (its backend, engine and dedup must exist).
 * 0, or SS_E_NOMEM. */
int ss_batch_new(struct ss_plugin *p, struct ss_batch **out);

/* Shutting down: queued requests are dropped; on a backend that may block,
 * a commit under way completes and the open batch is committed, its
 * answers not sent (the broker no longer delivers messages during a
 * plugin's cleanup); on one that never blocks, the open batch is dropped.
 * NULL: no-op. */
void ss_batch_free(struct ss_batch *b);

/* Run a request in the open batch, or queue it while a commit is under way
 * or while the answers held for commits reach max_queued_bytes (a full
 * queue, max_queued_bytes too, waits for the commit here, committing the
 * open batch here too when its answers hold the queue; or is refused on a
 * backend that never blocks). Takes what r holds. A request resent
 * within the resend window gets its first answer. */
void ss_batch_submit(struct ss_batch *b, const struct ss_request_from *from, struct ss_request_props *r);

/* Answer client_id's request with a status other than 200 (400, 505) and
 * run nothing. extra: user property name/value pairs, NULL-terminated;
 * "__stMsg" is also the payload. Takes the response topic and
 * correlation data of r. */
void ss_batch_refuse(struct ss_batch *b, const char *client_id, struct ss_request_props *r, const char *stat,
                     const char *const *extra);

/* A notification of a committed change (from the backend's change feed),
 * for client_id; takes every argument (heap memory), also on failure. */
void ss_batch_notify(struct ss_batch *b, char *client_id, char *topic, uint8_t *payload, size_t len,
                     mosquitto_property *props);

/* The broker's tick: take the commits that ended and publish what waited
 * for them, run the queue, sweep expired keys, start committing the open
 * batch. */
void ss_batch_tick(struct ss_batch *b, uint64_t now_ms);

/* A client disconnected: its queued requests still run, but a KEYNOTIFY
 * among them registers nothing (its registrations were just dropped). */
void ss_batch_client_gone(struct ss_batch *b, const char *client_id);
/* The number of the open batch, which requests run now belong to. */
uint64_t ss_batch_open_seq(const struct ss_batch *b);

#endif
