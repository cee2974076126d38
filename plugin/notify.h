/* notify.h - KEYNOTIFY registrations and the notifications they cause. */
#ifndef SS_NOTIFY_H
#define SS_NOTIFY_H

#include <stdbool.h>

#include "../core/engine.h"

/* The engine's callbacks (ctx: the plugin): a committed-to-be change of a
 * key, and a KEYNOTIFY (caller: struct ss_caller). */
void ss_on_engine_event(void *ctx, const ss_event *ev);
int ss_on_keynotify(void *ctx, void *caller, ss_bytes key, bool stop);
/* MOSQ_EVT_DISCONNECT: the client's registrations go. */
int ss_on_disconnect(int event, void *event_data, void *userdata);

#endif
