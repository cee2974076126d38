/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* pattern.h - SCAN's key patterns, in the dialect of the Rust `glob`
 * crate's Pattern (its default MatchOptions), which the official SDKs and
 * Azure IoT Operations' own broker use. PROTOCOL.md §7 says it in full:
 *
 *   *      any run of characters, '/' included, the empty run too
 *   ?      exactly one character
 *   [..]   one character of the class: members and ranges a-z; '!' first
 *          negates it; a ']' first (after the '!' if any) is a member, a '-'
 *          first or last is itself; '*', '?' and '[' inside are themselves
 *   **     as a whole path segment (alone, after a slash, before one): the empty
 *          run, any run ending in '/', or the whole rest of the key
 *   else   itself ('\' and '^' included; no escapes)
 *
 * A character is one UTF-8 character: a pattern that is not UTF-8 is
 * refused; a key that is not UTF-8 matches no pattern. Refused, as the
 * crate refuses them: an unclosed '[' (and "[]", "[!]"), "***", and "**"
 * beside anything but '/' or an end.
 *
 * Matching simulates the pattern's automaton over the key, one set of
 * states per character: at most (tokens + 1) x (characters of the key)
 * steps, whatever the pattern (no backtracking).
 */
#ifndef SS_PATTERN_H
#define SS_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Longest pattern SCAN accepts, in bytes. */
#define SS_PATTERN_MAX 1024u

typedef struct ss_pattern ss_pattern;

/* Compile pat (n bytes; at most SS_PATTERN_MAX). 0 and *out (owned by the
 * caller, freed by ss_pattern_free), or the reason it is refused:
 * SS_E_PATTERN_EMPTY, SS_E_PATTERN_LONG, SS_E_PATTERN_UTF8,
 * SS_E_PATTERN_BRACKET (an unclosed class), SS_E_PATTERN_STARS (a "**"
 * not a whole segment, or "***"), or SS_E_NOMEM. */
int ss_pattern_compile(const uint8_t *pat, size_t n, ss_pattern **out);
void ss_pattern_free(ss_pattern *p);

/* True when the whole key (n bytes) matches. p holds the matcher's
 * scratch states: one thread at a time. */
bool ss_pattern_match(ss_pattern *p, const uint8_t *key, size_t n);

/* An upper bound of the steps ss_pattern_match takes for a key of n
 * bytes (for the work budget of a page). */
uint64_t ss_pattern_cost(const ss_pattern *p, size_t n);

/* The literal bytes every matching key starts with (possibly none): a
 * listing need only look at keys with that prefix. Borrowed from p. */
ss_bytes ss_pattern_prefix(const ss_pattern *p);

/* Decode one UTF-8 character at s (n > 0 bytes left), strictly as Rust's
 * str does (no overlong forms, no surrogates, nothing above U+10FFFF):
 * its length (1-4) and *cp, or 0 if the bytes there are not UTF-8. */
size_t ss_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

#endif
