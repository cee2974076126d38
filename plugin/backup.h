/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backup.h - a consistent copy of the live store, asked for with the
 * administrative request BACKUP NAME (statestore backup NAME).
 *
 * Every write acknowledged before the request is in the copy: the request
 * makes a checkpoint due (the journal goes into the data file, on the
 * committing thread like any checkpoint), and once the data file holds
 * every commit, a thread of its own copies it (compacted) into
 * plugin_opt_backup_dir/NAME while clients go on; their commits go into
 * the journal, and no checkpoint runs until the copy is done. The answer
 * comes when the copy is on disk. One backup at a time.
 */
#ifndef SS_BACKUP_H
#define SS_BACKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ss_plugin;
struct ss_backup;

int ss_backup_new(struct ss_backup **out);
/* Waits for a copy under way. NULL: no-op. */
void ss_backup_free(struct ss_backup *b);
/* Start a backup into NAME (a plain file name) for client_id, answered
 * later on response_topic with corr. NULL when started, else the reason
 * to answer now. */
const char *ss_backup_start(struct ss_plugin *p, const uint8_t *name, size_t len, const char *client_id,
                            const char *response_topic, const uint8_t *corr, uint16_t corr_len);
/* Between batches: start the copy when the data file is current; answer
 * when it is done. */
void ss_backup_step(struct ss_plugin *p);

#endif
