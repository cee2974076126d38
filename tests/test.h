/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test.h - a small test framework: one function per test, one line per
 * test in tests/list.h, each run in its own process with a time limit.
 * Assertions print both sides and end the test at the first failure. */
#ifndef SS_TEST_H
#define SS_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define TEST(name)             \
    void test_##name(void); \
    void test_##name(void)

void test_fail_int(const char *file, int line, const char *a_txt, const char *b_txt, long long a,
                   long long b);
void test_fail_mem(const char *file, int line, const char *a_txt, const void *a, size_t an,
                   const void *b, size_t bn);
void test_fail(const char *file, int line, const char *what);
/* A fresh empty directory for this test; removed when the test ends. */
const char *test_tmpdir(void);

#define ASSERT_TRUE(c)                                                                  \
    do {                                                                                \
        if (!(c))                                                                       \
            test_fail(__FILE__, __LINE__, #c);                                          \
    } while (0)

#define ASSERT_EQ(a, b)                                                                 \
    do {                                                                                \
        long long a_ = (long long)(a), b_ = (long long)(b);                             \
        if (a_ != b_)                                                                   \
            test_fail_int(__FILE__, __LINE__, #a, #b, a_, b_);                          \
    } while (0)

/* Memory equal to a string literal or buffer of the given length. */
#define ASSERT_MEM(p, n, q, m)                                                          \
    do {                                                                                \
        const void *p_ = (p), *q_ = (q);                                                \
        size_t n_ = (n), m_ = (m);                                                      \
        if (n_ != m_ || (n_ && memcmp(p_, q_, n_) != 0))                                \
            test_fail_mem(__FILE__, __LINE__, #p, p_, n_, q_, m_);                      \
    } while (0)

#define ASSERT_STR(p, n, lit) ASSERT_MEM((p), (n), (lit), sizeof(lit) - 1)
#define ASSERT_BUF(buf, lit) ASSERT_STR((buf).data, (buf).len, lit)

#endif
