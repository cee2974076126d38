/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_crash.h - a store that fails in a child process of the test and
 * ends there without being closed (a crash), then opened again by the
 * test to find what was acknowledged. The child may install seccomp
 * filters (they cannot be taken back) to fail system calls. */
#ifndef SS_TEST_STORE_CRASH_H
#define SS_TEST_STORE_CRASH_H

#include <stddef.h>
#include <stdint.h>

#include "../../core/store.h"

/* From here, system call nr fails with err in this process; when fd >= 0,
 * only the calls whose first argument is fd. 0, or -1 if the filter could
 * not be installed. */
int store_crash_fail_syscall(long nr, int fd, int err);
/* Commit one batch that puts key, its value the key too, at version wall
 * (committed at 1000 + wall ms). 0 or the first failure. */
int store_crash_put(ss_store *s, const char *key, uint64_t wall);
/* Open the store with o in a forked child and run child on it: a nonzero
 * result is the child's exit status (the step that went wrong). It ends
 * without closing the store. Then open the store here again and check
 * that each of the n keys holds its own name. */
void store_crash_then_check(const ss_store_options *o, int (*child)(ss_store *s), const char *const *keys,
                            size_t n);

#endif
