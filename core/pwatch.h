/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* pwatch.h - pattern watches: which clients observe the keys matching
 * which patterns (SCAN's dialect, pattern.h).
 *
 * In memory only, per (client id, pattern). Client ids, user names and
 * patterns are copied in; one compiled pattern serves every client that
 * registered the same text. Bounded: at most max_per_client patterns per
 * client and max_total in all.
 *
 * A change does not try every pattern: patterns are indexed by their
 * literal prefix (its first SS_PWATCH_INDEX_MAX bytes at most), or, when
 * they have none, by their literal suffix (its last SS_PWATCH_INDEX_MAX
 * bytes), and a key looks up each of its own prefixes and suffixes of a
 * length some pattern is indexed by: at most 2 x (SS_PWATCH_INDEX_MAX + 1)
 * lookups, whatever the number of patterns. Only the patterns found are
 * matched; a pattern with neither (such as "?x?") is matched against
 * every key.
 *
 * Matching a key of n characters against a pattern of t tokens costs up
 * to (t + 1) x (n + 1) steps (pattern.h: ss_pattern_cost), and nothing in
 * the patterns' number bounds that: 100 patterns of 1,024 wildcards and a
 * key of 32,000 bytes held the broker's thread for seconds. So the work
 * one change may cost is bounded too (ss_pwatch_set_work_limit): the
 * heaviest group a key can find at each indexed length, summed, times
 * the longest key; a pattern that would raise it past the limit is
 * refused.
 */
#ifndef SS_PWATCH_H
#define SS_PWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define SS_PWATCH_INDEX_MAX 64u

typedef struct ss_pwatch ss_pwatch;

/* 0 means no limit. Errors: SS_E_NOMEM, SS_E_IO (no randomness). */
int ss_pwatch_new(size_t max_per_client, size_t max_total, ss_pwatch **out);
void ss_pwatch_free(ss_pwatch *w);
/* At most max_work matching steps for one change of a key of at most
 * max_key_len bytes (0: no limit), checked when a pattern is added. */
void ss_pwatch_set_work_limit(ss_pwatch *w, uint64_t max_work, size_t max_key_len);
/* The most steps one change may cost with the patterns registered now. */
uint64_t ss_pwatch_work_bound(const ss_pwatch *w, size_t max_key_len);

/* Register client (with its user name, NULL when none: kept for the
 * key authorization of each delivery) for the keys matching pattern.
 * 1 when added, 0 when it was already registered, SS_E_QUOTA when a limit
 * is reached (ss_pwatch_client_count tells which), SS_E_LIMIT when a new
 * pattern would raise the work of a change past the work limit, a
 * refusal of the pattern (ss_pattern_compile's SS_E_PATTERN_*), or
 * SS_E_NOMEM. */
int ss_pwatch_add(ss_pwatch *w, ss_bytes client, const char *username, ss_bytes pattern);
/* Unregister. 1 when it was registered, 0 when not. */
int ss_pwatch_remove(ss_pwatch *w, ss_bytes client, ss_bytes pattern);
/* Drop every pattern of client (it disconnected). Returns how many. */
size_t ss_pwatch_drop_client(ss_pwatch *w, ss_bytes client);

/* Call fn once for each client with at least one pattern matching key,
 * however many of its patterns match. client.data is NUL-terminated,
 * username NULL when none; both valid during the call. fn must not change
 * w. Not reentrant: w holds the matchers' scratch states. */
typedef void (*ss_pwatch_fn)(void *ctx, ss_bytes client, const char *username);
void ss_pwatch_each(ss_pwatch *w, ss_bytes key, ss_pwatch_fn fn, void *ctx);
/* Does any pattern match key? */
bool ss_pwatch_any(ss_pwatch *w, ss_bytes key);

/* Patterns registered in all, and by one client. */
size_t ss_pwatch_count(const ss_pwatch *w);
size_t ss_pwatch_client_count(const ss_pwatch *w, ss_bytes client);
/* Patterns compiled (distinct texts), and pattern matches tried since
 * creation (for tests of the index). */
size_t ss_pwatch_pattern_count(const ss_pwatch *w);
uint64_t ss_pwatch_matches_tried(const ss_pwatch *w);

#endif
