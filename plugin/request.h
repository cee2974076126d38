/* request.h - MOSQ_EVT_MESSAGE: the MQTT checks of a state store request,
 * which then goes to the batch (batch.h). */
#ifndef SS_REQUEST_H
#define SS_REQUEST_H

int ss_on_message(int event, void *event_data, void *userdata);

#endif
