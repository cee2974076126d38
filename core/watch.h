/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* watch.h - KEYNOTIFY registrations: which clients observe which keys.
 *
 * In memory only, per (client id, exact key). Client ids and keys are
 * byte runs, copied in. Bounded: at most max_per_client registrations per
 * client and max_total in all, and (ss_watch_set_max_bytes) at most so
 * many bytes of keys, each registration counting its key's: keys may be
 * long, so a count alone bounds no memory. */
#ifndef SS_WATCH_H
#define SS_WATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef struct ss_watch ss_watch;

/* 0 means no limit. Errors: SS_E_NOMEM, SS_E_IO (no randomness). */
int ss_watch_new(size_t max_per_client, size_t max_total, ss_watch **out);
void ss_watch_free(ss_watch *w);
/* At most max_bytes of keys over all registrations (0: no limit). */
void ss_watch_set_max_bytes(ss_watch *w, size_t max_bytes);

/* Register client for key. 1 when added, 0 when it was already registered,
 * SS_E_QUOTA when a limit is reached, SS_E_NOMEM. */
int ss_watch_add(ss_watch *w, ss_bytes client, ss_bytes key);
/* The limits ss_watch_add refuses at. */
typedef enum {
    SS_WATCH_LIMIT_NONE,
    SS_WATCH_LIMIT_PER_CLIENT, /* max_per_client of ss_watch_new */
    SS_WATCH_LIMIT_TOTAL,      /* max_total of ss_watch_new */
    SS_WATCH_LIMIT_BYTES,      /* ss_watch_set_max_bytes */
} ss_watch_limit;
/* Which limit the last ss_watch_add refused at (NONE if it did not). */
ss_watch_limit ss_watch_refused(const ss_watch *w);
/* Unregister. 1 when it was registered, 0 when not. */
int ss_watch_remove(ss_watch *w, ss_bytes client, ss_bytes key);
/* KEYNOTIFY ... STOP run in batch seq (> 0): 1 when it was registered, 0
 * when not (or stopped already). The registration goes at
 * ss_watch_settle, once the changes made before the stop have been told:
 * until then it is still walked by ss_watch_each, but counts toward no
 * limit. A ss_watch_add meanwhile takes it back (1). */
int ss_watch_stop(ss_watch *w, ss_bytes client, ss_bytes key, uint64_t seq);
/* Remove the registrations stopped in batches before `before` (every
 * change made up to their stop has been told). Returns how many. */
size_t ss_watch_settle(ss_watch *w, uint64_t before);
/* Keep username (NULL: none) with client's registrations, which must
 * exist (else SS_E_INVAL): whose rules a notification to it is checked
 * against, when the rules can change while it observes (ss_watch_each
 * hands it over). 0 or SS_E_NOMEM (then the one kept before stays). */
int ss_watch_set_user(ss_watch *w, ss_bytes client, const char *username);
/* Drop every registration of client (it disconnected). Returns how many. */
size_t ss_watch_drop_client(ss_watch *w, ss_bytes client);

/* A key of a client (ss_watch_each_of_client), valid during the call;
 * fn must not change w. */
typedef void (*ss_watch_fn)(void *ctx, ss_bytes name);
/* A client registered for a key (ss_watch_each), its id NUL-terminated (a
 * C string then), with the username kept with its registrations (NULL:
 * none); both valid during the call, and fn must not change w. */
typedef void (*ss_watch_client_fn)(void *ctx, ss_bytes client, const char *username);

/* Call fn for every key client is registered for. */
void ss_watch_each_of_client(const ss_watch *w, ss_bytes client, ss_watch_fn fn, void *ctx);

/* Call fn for every client registered for key. */
void ss_watch_each(const ss_watch *w, ss_bytes key, ss_watch_client_fn fn, void *ctx);

/* Is client registered for key? */
bool ss_watch_has(const ss_watch *w, ss_bytes client, ss_bytes key);

/* Registrations in all, and of one client. */
size_t ss_watch_count(const ss_watch *w);
size_t ss_watch_client_count(const ss_watch *w, ss_bytes client);

#endif
