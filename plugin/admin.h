/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* admin.h - administrative requests of statestore's own, on
 * SS_ADMIN_TOPIC: KEYS PATTERN CURSOR COUNT lists keys page by page,
 * INSPECT KEY shows one, each with its size, version, remaining TTL and
 * fencing token, to a client that may read the key (the key ACL).
 *
 * A request is a RESP3 array of bulk strings, as the protocol's; the
 * answer is text, one line per item (docs/OPERATIONS.md); BACKUP NAME
 * starts a backup (backup.h), answered "backup NAME BYTES" when done:
 *   cursor HEX|-          (KEYS: where the next page starts; - at the end)
 *   key HEXKEY SIZE VERSION TTL_MS|- FENCING_TOKEN|-
 *   absent                (INSPECT of a key that does not exist)
 *   rec HEXKEY SIZE VERSION EXPIRES_AT_MS|- FT|-, newline, SIZE bytes of value, newline
 *                         (EXPORT PATTERN CURSOR COUNT: records with values)
 *   error TEXT
 * WATCH PATTERN [STOP] is not queued: it registers at once (notify.h).
 * Requests are answered between batches, from what is committed, one per
 * settle, and a page's work is bounded (keys examined, matching steps,
 * value bytes): other clients wait a few milliseconds at most.
 */
#ifndef SS_ADMIN_H
#define SS_ADMIN_H

#include <stdint.h>

#include <mosquitto.h>
#include <mosquitto_broker.h>

struct ss_plugin;
struct ss_admin;

int ss_admin_new(struct ss_admin **out);
void ss_admin_free(struct ss_admin *a);
/* A message on SS_ADMIN_TOPIC: checked and queued (or refused at once). */
int ss_admin_on_message(struct ss_plugin *p, struct mosquitto_evt_message *ed);
/* Between batches (no batch open, no commit running): answer what is
 * queued. */
void ss_admin_serve(struct ss_plugin *p);
/* Publish an administrative answer (len bytes) to client_id's
 * response_topic with corr, into the session ss_answer_to says. */
void ss_admin_reply(struct ss_plugin *p, const char *client_id, const char *response_topic, const uint8_t *corr,
                    uint16_t corr_len, const uint8_t *text, size_t len);

#endif
