/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* protocol.h - the state store protocol's fixed names, shared by the
 * plugin and the client library (docs/PROTOCOL.md section 1). */
#ifndef SS_PROTOCOL_H
#define SS_PROTOCOL_H

#define SS_GUID "FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8"
/* Where requests are published. */
#define SS_REQUEST_TOPIC "statestore/v1/" SS_GUID "/command/invoke"
/* Notification topics: SS_NOTIFY_PREFIX/HEX(client id)/command/notify/HEX(key). */
#define SS_NOTIFY_PREFIX "clients/statestore/v1/" SS_GUID
/* Administrative requests (listing keys, inspecting one): statestore's
 * own, outside the protocol's topics so that no future protocol verb can
 * collide with them (docs/OPERATIONS.md). */
#define SS_ADMIN_TOPIC "statestore/admin/v1/invoke"
/* Longest MQTT topic. */
#define SS_TOPIC_MAX 65535u

#endif
