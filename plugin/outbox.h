/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* outbox.h - messages that wait for a batch's commit, then go out.
 *
 * Ownership: the outbox owns every payload, property list and string it
 * holds (handed over by ss_outbox_push, not copied).
 */
#ifndef SS_OUTBOX_H
#define SS_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mosquitto.h>

struct ss_plugin;

/* A message waiting for a commit. */
struct ss_outmsg {
    /* The client whose session it goes into, straight (no subscription
     * needed, nobody else receives it): an answer's requester, a
     * notification's observer. NULL (an answer with topic protection
     * off): routed to the topic's subscribers like any publication. */
    char *clientid;
    bool answer; /* an answer (else a notification) */
    bool registers; /* a registering KEYNOTIFY's +OK (ss_outbox_registers) */
    /* Such an answer's requester when clientid is NULL (topic protection
     * off), so that it goes with its client all the same; else NULL. */
    char *requester;
    char *topic;
    uint8_t *payload;
    size_t payload_len;
    mosquitto_property *props;
    uint8_t *corr; /* responses: correlation data, kept to rebuild the answer on failure */
    uint16_t corr_len;
    uint64_t commit; /* the batch whose commit it waits for; 0: none */
    bool final;      /* an answer that holds whatever becomes of that
                        commit (KEYNOTIFY's): it waits, so that a client's
                        answers keep their order, but is never failed or
                        dropped with the batch */
    size_t size;     /* what it holds, roughly (counted in bytes below) */
};

struct ss_outbox {
    struct ss_outmsg *msgs;
    size_t len, cap;
    /* What the messages waiting here hold, roughly (payloads, topics,
     * client ids, correlation data, and their properties and structure
     * at a flat estimate): the batch bounds it (max_queued_bytes), as
     * one GET of a large value holds a copy of it here until its commit. */
    uint64_t bytes;
};

/* Queue a message; takes ownership of clientid, topic, payload, props and
 * corr, all heap memory (freed on failure too; a NULL topic, or a NULL
 * clientid for a notification, is a failure). answer, final: see struct
 * ss_outmsg. 0 or MOSQ_ERR_NOMEM. */
int ss_outbox_push(struct ss_outbox *ob, char *clientid, bool answer, char *topic, uint8_t *payload, size_t len,
                   mosquitto_property *props, uint8_t *corr, uint16_t corr_len, uint64_t commit, bool final);
/* The answer just pushed (the caller knows it was: ss_outbox_push
 * succeeded) tells client_id that a KEYNOTIFY registered: should the
 * client go before it is sent, it goes too (the registration went with
 * the client, and a persistent session would be told +OK of a
 * registration it does not have). client_id is borrowed (copied when the
 * answer goes to no session in particular). 0, or MOSQ_ERR_NOMEM: not
 * marked. */
int ss_outbox_registers(struct ss_outbox *ob, const char *client_id);
/* Messages waiting for the commit of batch number commit. */
size_t ss_outbox_count(const struct ss_outbox *ob, uint64_t commit);
/* The commit of batch number commit failed with err: its answers become
 * "-ERR <text of err>"; messages that wait for nothing (refusals, answers
 * of requests committed earlier, notifications of committed changes) stay
 * as they are. */
void ss_outbox_fail(struct ss_outbox *ob, uint64_t commit, int err);
/* The batch number commit runs again (its commit found data changed by
 * someone else): forget its messages, which the run replaces. */
void ss_outbox_drop(struct ss_outbox *ob, uint64_t commit);
/* Client client_id disconnected: its notifications waiting here are
 * dropped (its registrations went with the connection, and nothing is
 * queued for an absent client, whose session may outlive it), and its
 * answers that told of a registration (ss_outbox_registers). Returns how
 * many notifications. */
size_t ss_outbox_client_gone(struct ss_outbox *ob, const char *client_id);
/* Publish everything and empty the outbox. */
void ss_outbox_flush(struct ss_outbox *ob, struct ss_plugin *p);
/* The same, except the messages of batches numbered from on (the open
 * batch, and those whose commit, or an earlier batch's, has not ended),
 * and the notifications queued after one of those: they stay, in order,
 * so that a batch's answers never overtake an earlier one's, nor
 * notifications the answers they follow. Answers that wait for no batch
 * (commit 0: refusals) go. */
void ss_outbox_flush_from(struct ss_outbox *ob, struct ss_plugin *p, uint64_t from);
void ss_outbox_free(struct ss_outbox *ob);
/* The session an answer to client_id's request goes into: that client's
 * with topic protection (the default), so that nobody else subscribed to
 * its response topic hears it and no request makes the plugin publish
 * where its client may not (a plugin's publication passes no ACL check);
 * NULL with it off: routed to the topic's subscribers. */
const char *ss_answer_to(const struct ss_plugin *p, const char *client_id);
/* Response properties: correlation data (when corr is not NULL, even if
 * empty), __stat, content type, __protVer, and __ts when version is
 * non-NULL. NULL on allocation failure. */
mosquitto_property *ss_response_props(const uint8_t *corr, uint16_t corr_len, const char *stat,
                                      const char *version);

/* Publish a copy of payload (len bytes) made with the broker's allocator
 * (mosquitto_broker_publish frees it with the broker's): the broker owns
 * props on success. A MOSQ_ERR_ code; payload stays the caller's. */
int ss_publish(const char *clientid, const char *topic, const void *payload, size_t len, int qos, bool retain,
               mosquitto_property *props);

#endif
