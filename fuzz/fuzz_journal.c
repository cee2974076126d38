/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fuzz_journal.c - libFuzzer target over the journal's replay (the bytes
 * a crash or a damaged disk can leave in the journal file). The input is
 * the file. Checks, beyond "no crash" and no read past the file: replay
 * reports an end within the file and a last sequence number not below the
 * checkpoint's; every operation it hands over lies within a frame, has a
 * known kind and a key; and replaying only up to the reported end gives
 * the same operations. (A frame whose check holds but whose operations do
 * not decode gives SS_E_CORRUPT: only a broken writer makes one.) */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/journal.h"
#include "../core/siphash.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The seeds in fuzz/corpus/journal were sealed with this key. */
static const uint8_t fuzz_key[16] = {'s', 't', 'a', 't', 'e', 's', 't', 'o',
                                     'r', 'e', '-', 'f', 'u', 'z', 'z', '!'};

struct tally {
    uint64_t ops;
    uint64_t digest; /* of every operation, in order */
};

static int count_op(void *ctx, const struct ss_jop *op)
{
    struct tally *t = ctx;
    if ((op->kind != SS_JOP_PUT && op->kind != SS_JOP_DEL) || op->key.len == 0 ||
        (op->kind == SS_JOP_DEL && op->value.len != 0))
        abort();
    uint8_t head[2] = {op->kind, op->db};
    t->digest = ss_siphash(fuzz_key, head, 2) ^ (t->digest * 31);
    t->digest ^= ss_siphash(fuzz_key, op->key.data, op->key.len);
    if (op->value.len)
        t->digest ^= ss_siphash(fuzz_key, op->value.data, op->value.len) * 7;
    t->ops++;
    return SS_OK;
}

static int replay_of(int fd, uint64_t limit, uint64_t after, struct tally *t, uint64_t *end,
                     uint64_t *last)
{
    memset(t, 0, sizeof *t);
    return ss_journal_replay(fd, limit, fuzz_key, after, count_op, t, end, last);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("journal", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    /* The checkpoint's number: from the input, so frames before and after
     * it are both exercised. */
    uint64_t after = size ? data[size - 1] % 4 : 0;
    struct tally a, b;
    uint64_t end = 0, last = 0, end2 = 0, last2 = 0;
    int rc = replay_of(fd, UINT64_MAX, after, &a, &end, &last);
    if (rc == SS_OK) {
        if (end > size || last < after)
            abort();
        if (replay_of(fd, end, after, &b, &end2, &last2) != SS_OK || end2 != end || last2 != last ||
            b.ops != a.ops || b.digest != a.digest)
            abort();
    } else if (rc != SS_E_NOMEM && rc != SS_E_IO && rc != SS_E_CORRUPT) {
        abort();
    }
    close(fd);
    return 0;
}
