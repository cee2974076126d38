/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* hlc.h - hybrid logical clock timestamps and the server clock.
 *
 * A timestamp is "<wallClockMs>:<counter>:<nodeId>". Parsing accepts padded
 * and unpadded numbers and rejects anything else; formatting is unpadded.
 * The server clock never goes backwards, never issues the same stamp twice,
 * and keeps its counter at most SS_HLC_COUNTER_MAX (the .NET SDK reads it as
 * a signed 32-bit integer).
 */
#ifndef SS_HLC_H
#define SS_HLC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define SS_HLC_NODE_MAX 255            /* bytes in a node id */
#define SS_HLC_COUNTER_MAX 2147483647u /* largest counter the server issues */
#define SS_HLC_MAX_SKEW_MS 60000u      /* how far ahead a request may be */
#define SS_HLC_MAX_LEAD_MS 100u        /* see ss_clock_issue */
#define SS_HLC_TEXT_MAX (20 + 1 + 10 + 1 + SS_HLC_NODE_MAX)
#define SS_HLC_NUM_DIGITS_MAX 24 /* digits per number, zero padding included */

typedef struct ss_hlc {
    uint64_t wall;    /* milliseconds since the Unix epoch */
    uint32_t counter; /* parsed stamps may carry up to UINT32_MAX */
    uint8_t node_len;
    char node[SS_HLC_NODE_MAX]; /* not NUL-terminated */
} ss_hlc;

/* Parse text of n bytes. 0 or SS_E_TS_MALFORMED (not exactly three parts,
 * an empty or non-digit number, a number out of range, a node id longer than
 * SS_HLC_NODE_MAX). The node id may be empty. */
int ss_hlc_parse(const uint8_t *text, size_t n, ss_hlc *out);

/* Write the unpadded text form into out (SS_HLC_TEXT_MAX bytes at least);
 * returns its length. No NUL is written. */
size_t ss_hlc_format(const ss_hlc *h, char *out);

/* Append the text form to b. 0 or SS_E_NOMEM. */
int ss_hlc_append(ss_buf *b, const ss_hlc *h);

/* <0, 0, >0 by wall clock, then counter, then node id as bytes. */
int ss_hlc_compare(const ss_hlc *a, const ss_hlc *b);

/* The server's clock. Plain data; one per engine. */
typedef struct ss_clock {
    uint64_t wall;
    uint32_t counter;
    uint8_t node_len;
    char node[SS_HLC_NODE_MAX];
} ss_clock;

/* Start a clock for node (1..SS_HLC_NODE_MAX bytes, no ':'), at zero.
 * 0 or SS_E_INVAL. */
int ss_clock_init(ss_clock *c, const char *node, size_t node_len);

/* Raise the clock to at least (wall, counter), e.g. the last stamp issued
 * before a restart. Never lowers it. */
void ss_clock_restore(ss_clock *c, uint64_t wall, uint32_t counter);

/* SS_E_TS_FUTURE-style skew check: 1 when h is more than SS_HLC_MAX_SKEW_MS
 * ahead of now_ms, else 0. */
bool ss_hlc_too_far_ahead(const ss_hlc *h, uint64_t now_ms);

/* Issue a new stamp by the HLC receive rule, merging the physical time now_ms
 * and the optional stamps a and b (NULL to omit): the result is strictly
 * greater than each of them and than every stamp issued before. Except at
 * the end of time, which no clock reaches but a stored stamp could (a
 * damaged or forged data file; requests and imports more than
 * SS_HLC_MAX_SKEW_MS ahead are refused): with the wall clock at UINT64_MAX
 * and its counter exhausted, the stamp stays (UINT64_MAX,
 * SS_HLC_COUNTER_MAX) and never wraps back to 0. */
ss_hlc ss_clock_next(ss_clock *c, uint64_t now_ms, const ss_hlc *a, const ss_hlc *b);

/* Issue a version: like ss_clock_next (strictly greater than a, b and every
 * stamp issued before), but with counter 0 whenever a later millisecond at
 * most SS_HLC_MAX_LEAD_MS ahead of now_ms can be used instead of a raised
 * counter. So a request stamped in the very millisecond it arrives gets
 * (its wall + 1, 0), as it would from a server a millisecond away, and the
 * counter of a version depends on load, not on sub-millisecond timing: the
 * SDKs' lease tests expect renewals seconds apart to differ only in the
 * wall clock. Only bursts beyond the lead (more than one version per
 * millisecond for a while) fall back to counting. */
ss_hlc ss_clock_issue(ss_clock *c, uint64_t now_ms, const ss_hlc *a, const ss_hlc *b);

#endif
