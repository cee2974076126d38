/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* request.h - MOSQ_EVT_MESSAGE: the MQTT checks of a state store request,
 * which then goes to the batch (batch.h). */
#ifndef SS_REQUEST_H
#define SS_REQUEST_H

#include <stdbool.h>

int ss_on_message(int event, void *event_data, void *userdata);

/* A response topic the broker will publish to (no wildcard, not empty, in
 * the broker's length and level limits)? One of the store's own topics,
 * where no answer may go (the client is disconnected for it)? */
bool ss_request_usable_topic(const char *t);
bool ss_request_forbidden_topic(const char *t);

#endif
