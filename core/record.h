/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* record.h - the byte layout of a stored record (the LMDB backend's value
 * for a key).
 *
 * Layout (integers big endian):
 *   u8 flags (SS_RECORD_FT, SS_RECORD_EXPIRY, SS_RECORD_LONG_KEY)
 *   stamp version: u64 wall, u32 counter, u8 node length, node bytes
 *   [stamp fencing token] [u64 expiry ms] [u32 tail length, key tail]
 *   value bytes to the end
 * The key tail holds what a long key keeps beyond the part that is the
 * LMDB key (store_lmdb.h).
 */
#ifndef SS_RECORD_H
#define SS_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define SS_RECORD_FT 1u
#define SS_RECORD_EXPIRY 2u
#define SS_RECORD_LONG_KEY 4u
/* The etcd backend's stub of a value kept in chunks: the value bytes
 * refer to them (etcd/backend_etcd_blob.c). */
#define SS_RECORD_CHUNKED 8u
/* The etcd backend's tombstone: what a deletion leaves at the key for a
 * while, the version it removed (etcd/backend_etcd_tombstone.c). */
#define SS_RECORD_TOMBSTONE 16u

/* Decode the n bytes at p. On success rec->value, and *tail (the long-key
 * tail; empty for an inline key), borrow p. SS_E_CORRUPT if the bytes are
 * not a record; flags this version does not know are ignored. */
int ss_record_decode(const uint8_t *p, size_t n, ss_record *rec, ss_bytes *tail);

/* Bytes ss_record_encode writes for rec (with a key tail when is_long). */
size_t ss_record_size(const ss_record *rec, size_t tail_len, bool is_long);

/* Write rec into p, which has ss_record_size bytes. An expiry of 0 is
 * written as none. */
void ss_record_encode(uint8_t *p, const ss_record *rec, const uint8_t *tail, size_t tail_len,
                      bool is_long);

#endif
