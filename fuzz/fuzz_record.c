/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fuzz_record.c - libFuzzer target over the stored record decoder (the
 * bytes LMDB hands back for a key). Checks, beyond "no crash": whatever
 * decodes lies within the input, and a record in canonical form (no
 * unknown flag, no expiry flag with a zero deadline) encodes back to
 * exactly the input bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int within(const uint8_t *p, size_t n, const uint8_t *data, size_t size)
{
    return n == 0 || (p >= data && p + n <= data + size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ss_record rec;
    ss_bytes tail;
    if (ss_record_decode(data, size, &rec, &tail) != SS_OK)
        return 0;
    if (!within(rec.value.data, rec.value.len, data, size) || !within(tail.data, tail.len, data, size))
        abort();
    uint8_t flags = data[0];
    bool is_long = (flags & SS_RECORD_LONG_KEY) != 0;
    size_t n = ss_record_size(&rec, tail.len, is_long);
    uint8_t *out = malloc(n ? n : 1);
    if (out == NULL)
        return 0;
    ss_record_encode(out, &rec, tail.data, tail.len, is_long);
    bool canonical = (flags & ~(SS_RECORD_FT | SS_RECORD_EXPIRY | SS_RECORD_LONG_KEY)) == 0 &&
                     (!(flags & SS_RECORD_EXPIRY) || rec.expiry_ms != 0);
    if (canonical && (n != size || memcmp(out, data, size) != 0))
        abort();
    /* Whatever was encoded decodes to the same record. */
    ss_record again;
    ss_bytes tail2;
    if (ss_record_decode(out, n, &again, &tail2) != SS_OK || again.value.len != rec.value.len ||
        tail2.len != tail.len || again.expiry_ms != rec.expiry_ms || again.has_ft != rec.has_ft ||
        ss_hlc_compare(&again.version, &rec.version) != 0 ||
        (rec.has_ft && ss_hlc_compare(&again.ft, &rec.ft) != 0))
        abort();
    free(out);
    return 0;
}
