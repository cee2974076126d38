/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* siphash.h - SipHash, a keyed 64-bit hash (Aumasson and Bernstein).
 *
 * With a secret key an attacker cannot choose inputs that all collide.
 * SipHash-2-4 checks the journal's frames and names long keys inside
 * LMDB: what is on disk keeps it. The in-memory tables (the resend cache
 * hashes every write request with it) use SipHash-1-3, the reduced-round
 * variant that hash tables commonly use (Rust's standard HashMap, the
 * Linux kernel's hsiphash on 64-bit): about half the rounds. The streaming
 * form hashes several pieces as if they were one run of bytes, without
 * copying them together. */
#ifndef SS_SIPHASH_H
#define SS_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

typedef struct ss_siphash_state {
    uint64_t v0, v1, v2, v3;
    uint64_t tail; /* up to 7 bytes not yet compressed, little-endian */
    size_t len;    /* bytes seen so far */
} ss_siphash_state;

void ss_siphash_init(ss_siphash_state *s, const uint8_t key[16]);
void ss_siphash_update(ss_siphash_state *s, const void *data, size_t len);
uint64_t ss_siphash_final(const ss_siphash_state *s);

/* The hash of several byte runs taken together, fast and unambiguous: the
 * SipHash of the count and every length as 8-byte little-endian words,
 * then of each run padded with zero bytes to a whole number of words (so
 * ("ab", "c") and ("a", "bc") differ). */
uint64_t ss_siphash_parts(const uint8_t key[16], const ss_bytes *parts, size_t n);

/* The hash of one run of bytes: init, update, final. */
uint64_t ss_siphash(const uint8_t key[16], const uint8_t *data, size_t len);

/* The same two with SipHash-1-3. */
uint64_t ss_siphash13(const uint8_t key[16], const uint8_t *data, size_t len);
uint64_t ss_siphash13_parts(const uint8_t key[16], const ss_bytes *parts, size_t n);

#endif
