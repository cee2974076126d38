/* siphash.h - SipHash-2-4, a keyed 64-bit hash (Aumasson and Bernstein).
 *
 * Used to name long keys inside LMDB: with a secret per-store key an
 * attacker cannot choose keys that all collide. */
#ifndef SS_SIPHASH_H
#define SS_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t ss_siphash(const uint8_t key[16], const uint8_t *data, size_t len);

#endif
