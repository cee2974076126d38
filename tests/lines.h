/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* lines.h - a listing's keys, one a line, put in byte order: on LMDB,
 * long keys that share their first 480 bytes are listed in the order of
 * a hash (PROTOCOL.md 9.2), so tests of such listings compare them sorted.
 * For the unit and the integration tests alike. */
#ifndef SS_TEST_LINES_H
#define SS_TEST_LINES_H

#include <stdlib.h>
#include <string.h>

#include "../core/buf.h"
#include "test.h"

static inline int test_line_cmp(const void *a, const void *b)
{
    const ss_bytes *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->data, y->data, n) : 0;
    return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

/* The lines of keys ('\n' after each), sorted in place. */
static inline void test_sort_lines(ss_buf *keys)
{
    size_t n = 0;
    for (size_t i = 0; i < keys->len; i++)
        n += keys->data[i] == '\n';
    ss_bytes *lines = calloc(n ? n : 1, sizeof *lines);
    ASSERT_TRUE(lines != NULL);
    size_t at = 0, k = 0;
    for (size_t i = 0; i < keys->len; i++)
        if (keys->data[i] == '\n') {
            lines[k++] = (ss_bytes){keys->data + at, i - at};
            at = i + 1;
        }
    qsort(lines, n, sizeof *lines, test_line_cmp);
    ss_buf out = SS_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(ss_buf_append(&out, lines[i].data, lines[i].len), 0);
        ASSERT_EQ(ss_buf_append(&out, "\n", 1), 0);
    }
    free(lines);
    ss_buf_free(keys);
    *keys = out;
}

#endif
