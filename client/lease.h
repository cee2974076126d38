/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* lease.h - leases and locks on the state store, like the SDKs' helpers.
 *
 * A lease is the key `name` holding the value `holder`, set with
 * SET name holder NEX PX ttl: only one holder at a time, renewed by
 * repeating the same SET, released by VDEL name holder, and gone by itself
 * when its holder stops renewing. Each acquisition or renewal returns a
 * fencing token (the version of the lock key) that protects writes made
 * under the lock. All calls block (see client.h for threads and errors).
 */
#ifndef SS_LEASE_H
#define SS_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "client.h"

#define SS_LEASE_TOKEN_MAX 300

/* Try once. 0 with *acquired true and token filled (the fencing token), or
 * *acquired false when someone else holds it; SS_E_INVAL for a ttl_ms of
 * 0 (here and in every call below). Renewing = acquiring again. */
int ss_lease_acquire(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                     bool *acquired, char token[SS_LEASE_TOKEN_MAX]);

/* Acquire, waiting up to wait_ms for the current holder to release or
 * expire. When the lease is taken it registers KEYNOTIFY on name and
 * retries on each notification instead of polling, and unregisters before
 * returning; those notifications also reach the client's notification
 * callback. 0 when acquired, SS_E_TIMEOUT when the wait ran out. */
int ss_lease_acquire_wait(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                          unsigned wait_ms, char token[SS_LEASE_TOKEN_MAX]);

/* The same, and while it waits it asks cancelled(ud) at least every
 * 100 ms: true ends the wait with SS_E_CANCELLED, the lease not taken
 * (a program stopped by a signal while it waits for a lock, say). */
int ss_lease_acquire_wait_cancel(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                                 unsigned wait_ms, char token[SS_LEASE_TOKEN_MAX], bool (*cancelled)(void *ud),
                                 void *ud);

/* Release if holder holds it: *released tells whether it did. */
int ss_lease_release(ss_client *c, const char *name, const char *holder, bool *released);

/* The current holder: r->found and r->value (see client.h). */
int ss_lease_holder(ss_client *c, const char *name, ss_client_result *r);

/* Keep a held lease alive: a thread of the keeper's own renews it every
 * ttl_ms / 3 until ss_lease_keeper_stop.
 *
 * ss_lease_keep renews once before returning, so the keeper starts with a
 * fencing token (greater than the acquisition's). If that renewal cannot
 * reach the server it returns its error (SS_E_TIMEOUT, SS_E_CONNECTION,
 * ...) and no keeper; if the lease is held by someone else the keeper is
 * returned already lost.
 *
 * The lost rule: the lease is lost, from the holder's side, when a renewal
 * is refused (someone else holds it) or when the last successful renewal
 * plus ttl_ms has passed without another, connected or not (the time is
 * counted from the renewal's sending, so the holder's view ends before
 * the server's; on the monotonic clock, so that a step of the wall clock
 * changes nothing). Once lost, the keeper stops renewing for good; acquire
 * again to lead again. The flag is only a hint that comes late by up to
 * the network's delay: what makes writes safe is the fencing token sent
 * with each of them, which the server refuses once a newer holder wrote. */
typedef struct ss_lease_keeper ss_lease_keeper;
int ss_lease_keep(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                  ss_lease_keeper **out);
/* The same, and lost_cb(ud) runs once, on the keeper's thread, when the
 * lease is lost (not when the keeper is stopped). It may call
 * ss_lease_keeper_lost and _token, not ss_lease_keeper_stop. */
typedef void (*ss_lease_lost_cb)(void *ud);
int ss_lease_keep_notify(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                         ss_lease_lost_cb lost_cb, void *ud, ss_lease_keeper **out);
bool ss_lease_keeper_lost(ss_lease_keeper *k);
/* The latest fencing token ("" when the lease was never held). */
void ss_lease_keeper_token(ss_lease_keeper *k, char token[SS_LEASE_TOKEN_MAX]);
/* Stop renewing and free the keeper (the lease is not released).
 *
 * The client may be closed before its keepers are stopped (and before its
 * leader participants resign): the keeper then finds the lease lost at
 * its next renewal (lost_cb runs), and the client's memory lives on until
 * the last of them is stopped. A lease wait under way on another thread
 * returns SS_E_CONNECTION. */
void ss_lease_keeper_stop(ss_lease_keeper *k);

/* Edit key under the lock: acquire (waiting up to wait_ms), read key, let
 * fn decide, write the new value or delete the key with the fencing token,
 * release. fn gets the current value (found false: absent) and sets either
 * *new_value (malloc'ed, freed by the library) and *new_len, or *delete;
 * leaving both untouched changes nothing. fn returning non-zero aborts
 * (that value is returned). */
typedef int (*ss_edit_fn)(void *ud, const uint8_t *value, size_t len, bool found,
                          uint8_t **new_value, size_t *new_len, bool *delete_key);
int ss_lease_edit(ss_client *c, const char *name, const char *holder, uint64_t ttl_ms,
                  unsigned wait_ms, const void *key, size_t key_len, ss_edit_fn fn, void *ud);

#ifdef __cplusplus
}
#endif

#endif
