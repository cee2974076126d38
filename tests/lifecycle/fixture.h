/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fixture.h - the plugin's lifecycle (plugin/batch.c) on the in-memory
 * backend, without a broker.
 *
 * A struct ss_plugin is assembled as plugin.c does it, on mem_backend.h;
 * the test hands requests to ss_batch_submit and ticks by hand. The few
 * broker functions the plugin calls are provided here: publishing
 * records every message, in order, so that a test asserts exactly what
 * went out and when.
 */
#ifndef SS_LIFECYCLE_FIXTURE_H
#define SS_LIFECYCLE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "../../plugin/plugin.h"
#include "mem_backend.h"

/* A message the plugin published. */
struct lc_msg {
    char *clientid; /* the session it goes into (NULL: routed to subscribers) */
    char *topic;
    ss_buf payload;
    ss_buf corr;    /* correlation data */
    char stat[8];   /* __stat, "" when absent */
    char ts[64];    /* __ts, "" when absent */
};

struct lc {
    struct ss_plugin *p;
    ss_backend *be;
    uint64_t ts_wall; /* the clients' __ts: an hour behind the server's clock */
};

/* etcd's shape: two commits in flight, conflicts, a broker's thread that
 * never waits. */
extern const struct ss_mem_options lc_shared;
/* LMDB's shape: one commit at a time, requests queued meanwhile, a full
 * queue waits for it. */
extern const struct ss_mem_options lc_single;

/* The plugin on a new mem backend with options o. */
void lc_open(struct lc *f, const struct ss_mem_options *o);
/* Free everything (the batch as the plugin's cleanup does). */
void lc_close(struct lc *f);

/* Client `client` sends the request given as words separated by single
 * spaces ("SET k v"), with correlation data corr and a __ts of its own;
 * answers go to "resp/<client>". The same arguments again are a resend. */
void lc_send(struct lc *f, const char *client, const char *corr, const char *words);
/* The same on the administrative topic (plugin/admin.h): answers go to
 * "resp/<client>". */
void lc_admin(struct lc *f, const char *client, const char *corr, const char *words);
/* The broker's DISCONNECT event for client. */
void lc_disconnect(struct lc *f, const char *client);
/* The broker's tick, now, or at wall clock now_ms (the expiry sweep's
 * time; requests always run at the real clock). */
void lc_tick(struct lc *f);
void lc_tick_at(struct lc *f, uint64_t now_ms);

/* Messages published so far, and the i-th of them (from 0). */
size_t lc_published(void);
const struct lc_msg *lc_msg(size_t i);
/* The i-th message is the answer to client's request corr: payload
 * exactly, status 200. */
void lc_expect_answer(size_t i, const char *client, const char *corr, const char *payload);
/* The i-th message is a notification to client about key, payload exactly. */
void lc_expect_notify(size_t i, const char *client, const char *key, const char *payload);
/* Did the plugin log a line containing text? */
bool lc_logged(const char *text);

#endif
