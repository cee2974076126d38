/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* powerloss.h - a power-loss simulator for the broker's data directory:
 * what the preloaded library (shim.c) records and what the cut (cut.c)
 * makes of it.
 *
 * The library is preloaded into the broker with two variables set:
 *   SS_POWERLOSS_DIR    the data directory (its files are watched; names
 *                       below it are taken as durable at once)
 *   SS_POWERLOSS_STATE  a directory of the simulator's own, elsewhere
 * For each file NAME of the data directory it keeps, in the state
 * directory:
 *   NAME.durable  what a disk holds for certain: the file as of its last
 *                 completed fsync/fdatasync (or as it was when first
 *                 opened), plus writes made through a descriptor opened
 *                 with O_DSYNC or O_SYNC
 *   NAME.pending  every change since then, in order: a record (struct
 *                 pl_record) per write (its bytes follow) or truncation,
 *                 appended before the call and completed after it
 *   NAME.syncs    how many fsyncs/fdatasyncs of the file have completed,
 *                 as decimal text
 * At each completed sync the pending changes move into NAME.durable, which
 * must then equal the file byte for byte: a change made in a way the
 * library does not see (a mapping, a call it does not wrap) stops the
 * broker with a message in its log rather than go unnoticed.
 *
 * The power cut is SIGKILL (the process stops between two calls, with
 * nothing more reaching the files), then pl_cut(): each file becomes what
 * a disk could hold after losing power at that moment. */
#ifndef SS_POWERLOSS_H
#define SS_POWERLOSS_H

#include <stddef.h>
#include <stdint.h>

enum { PL_WRITE = 1, PL_TRUNCATE = 2 };
enum { PL_DONE = 1, PL_FAILED = 2, PL_SYNCED = 4 }; /* pl_record.state */

/* One change; a write's len bytes follow it in NAME.pending. */
struct pl_record {
    uint32_t kind;  /* PL_WRITE or PL_TRUNCATE */
    uint32_t state; /* 0 while the call runs; PL_DONE, PL_FAILED; PL_SYNCED */
    uint64_t off;   /* a write's offset; a truncation's new size */
    uint64_t len;   /* a write's bytes */
    uint64_t done;  /* the bytes the write wrote, once PL_DONE */
};

#define PL_PAGE 4096u

/* What one cut did, summed over the files. */
struct pl_cut_report {
    unsigned files;     /* files with unsynced changes */
    unsigned kept;      /* changes kept whole */
    unsigned torn;      /* changes kept in part (a write cut at a byte or page) */
    unsigned dropped;   /* changes lost */
    uint64_t lost_bytes; /* bytes of writes lost or torn away */
    char detail[512];    /* per file with unsynced changes: "NAME kept/torn/lost; " */
};

/* Rebuild every watched file of data_dir from state_dir as a disk could
 * hold it after a power loss: its durable image, then of its pending
 * changes a random number kept whole (0 to all), the next one torn at a
 * random byte or page boundary (a truncation: made or not), the rest
 * lost; writes made through O_DSYNC descriptors are kept whatever the
 * choice. seed drives the choices (updated). Empties state_dir for the
 * next run. Returns 0, or -1 with errno (report filled as far as it got). */
int pl_cut(const char *data_dir, const char *state_dir, unsigned *seed, struct pl_cut_report *report);

/* The completed syncs of data_dir's file name (NAME.syncs), 0 if none. */
uint64_t pl_syncs(const char *state_dir, const char *name);

#endif
