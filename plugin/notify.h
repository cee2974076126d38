/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* notify.h - KEYNOTIFY registrations and the notifications they cause. */
#ifndef SS_NOTIFY_H
#define SS_NOTIFY_H

#include <stdbool.h>

#include "../core/codec.h"
#include "../core/engine.h"

struct ss_plugin;

/* A committed change from the backend's feed (ctx: the plugin): the
 * notifications it causes go into the outbox. */
void ss_notify_change(void *ctx, const ss_change *c);
/* Hook p's registrations to its backend's change feed: only changes of
 * keys someone observes are kept, and its TOLD marks settle STOPs. */
void ss_notify_attach(struct ss_plugin *p);
/* The engine's KEYNOTIFY callback (caller: struct ss_caller). */
int ss_on_keynotify(void *ctx, void *caller, ss_bytes key, bool stop);
/* WATCH PATTERN [STOP] on the administrative topic (q: its words), from
 * a connected client: registers or unregisters at once and writes the
 * answer into text (cap bytes, 256 are enough): "ok\n", "absent\n" (STOP
 * of a pattern not registered) or "error TEXT\n". Returns its length. */
size_t ss_notify_on_watch(struct ss_plugin *p, const char *client_id, const char *username, const ss_request *q,
                          char *text, size_t cap);
/* MOSQ_EVT_DISCONNECT: the client's registrations go. */
int ss_on_disconnect(int event, void *event_data, void *userdata);

#endif
