/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* protect.h - topic protection (MOSQ_EVT_ACL_CHECK), key authorization,
 * and the ACL file reload (MOSQ_EVT_RELOAD). */
#ifndef SS_PROTECT_H
#define SS_PROTECT_H

#include <stdbool.h>

#include "../core/acl.h"
#include "../core/buf.h"

struct ss_plugin;

int ss_on_acl_check(int event, void *event_data, void *userdata);
int ss_on_reload(int event, void *event_data, void *userdata);
/* The engine's authorization callback (ctx: the plugin; caller: struct
 * ss_caller). */
bool ss_authorize(void *ctx, void *caller, enum ss_access access, ss_bytes key, bool quietly);
/* Load opt.acl_file into p->acl (replacing it only on success). */
int ss_acl_reload(struct ss_plugin *p);
/* Decide from bc (the broker's configuration, read at start and on each
 * reload) whether other topics are deferred, and log the choice when it
 * is made or changes. */
struct ss_broker_conf;
void ss_other_topics_decide(struct ss_plugin *p, const struct ss_broker_conf *bc, bool at_start);

#endif
