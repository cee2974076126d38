/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* glob.h - the one glob dialect of the store, for key patterns (the ACL
 * file's rules, statestore keys): '*' any run of bytes, '?' one byte, '\'
 * takes the next byte as it is; everything else is itself. Over bytes:
 * keys may hold NUL. */
#ifndef SS_GLOB_H
#define SS_GLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when the n bytes of text match the pattern (plen bytes) as a
 * whole. The work is at most plen * n steps, whatever the pattern. */
bool ss_glob_match(const char *pat, size_t plen, const uint8_t *text, size_t n);

#endif
