/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* held.h - a child process held at a system call (ptrace), so that a test
 * makes a race happen instead of hoping for it: what another party does
 * in that window is done while the child waits there. */
#ifndef SS_HELD_H
#define SS_HELD_H

#include <stddef.h>
#include <sys/types.h>

/* In the child, before its exec: it is traced by its parent from there. */
void held_prepare(void);
/* In the parent, after the child's fork: run it until it enters one of
 * the system calls nrs (n of them), and hold it there; returns the call's
 * first argument. Fails the test if it ends first. */
long held_until(pid_t pid, const long *nrs, size_t n);
/* Let it go on from there, untraced. */
void held_release(pid_t pid);

#endif
