/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* journal.h - the store's write-ahead journal: frames of low-level writes.
 *
 * Each committed batch becomes one frame appended to the journal file; the
 * LMDB file itself is written only at checkpoints, with a full sync. A frame
 * reaches the operating system (one write) before the batch's answers go
 * out, so a crash of the process loses nothing; with fsync=always it is also
 * fsynced first. After a crash or power loss the store replays the frames
 * that follow its last checkpoint. See store_lmdb.h for the protocol.
 *
 * Frame layout (integers big endian):
 *   u32 payload length, u64 sequence number, u64 check, payload
 * check is a keyed SipHash of the length, the sequence number and the
 * payload: a torn or stale tail, or a frame of another store, fails it.
 * Payload: operations, each
 *   u8 kind (SS_JOP_PUT, SS_JOP_DEL), u8 database, u16 key length,
 *   [u32 value length], key, [value]
 */
#ifndef SS_JOURNAL_H
#define SS_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define SS_JFRAME_HEADER 20u

enum { SS_JOP_PUT = 1, SS_JOP_DEL = 2 };

/* One decoded operation; key and value point into the frame. */
struct ss_jop {
    uint8_t kind, db;
    ss_bytes key, value;
};

/* Start an empty frame in f (its header's room reserved). */
int ss_jframe_reset(ss_buf *f);
/* True if the frame holds no operation. */
bool ss_jframe_empty(const ss_buf *f);
/* Append one operation. SS_E_NOMEM, or SS_E_INVAL for a key over 65535. */
int ss_jframe_op(ss_buf *f, uint8_t kind, uint8_t db, const void *key, size_t klen,
                 const void *value, size_t vlen);
/* Fill the header: the frame is ready to write as it is. */
void ss_jframe_seal(ss_buf *f, uint64_t seq, const uint8_t key[16]);

typedef int (*ss_jop_fn)(void *ctx, const struct ss_jop *op);

/* Read fd's frames from offset 0 to limit (or to the end of the file if
 * limit is UINT64_MAX) and call apply for each operation of the frames with
 * a sequence number above after_seq, in order. Reading stops at the first
 * frame that is torn, fails its check, or does not follow its predecessor's
 * number: what follows it was never acknowledged as durable. *end gets the
 * offset after the last good frame and *last_seq the last number seen
 * (after_seq if none was above it). apply's failure is returned; else 0,
 * SS_E_IO or SS_E_NOMEM. */
int ss_journal_replay(int fd, uint64_t limit, const uint8_t key[16], uint64_t after_seq,
                      ss_jop_fn apply, void *ctx, uint64_t *end, uint64_t *last_seq);

/* Whether a whole frame whose check holds, numbered after after_seq (by at
 * most 2^20), starts at one of the offsets of buf: frames there came after
 * a damaged one (a torn tail from a crash has none). */
bool ss_journal_frames_follow(const uint8_t *buf, size_t n, const uint8_t key[16], uint64_t after_seq);

#endif
