/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* held.c - a child process held at a system call (held.h). */
#define _GNU_SOURCE /* ptrace's syscall info */
#include "held.h"

#include <signal.h>
#include <stdbool.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "../test.h"

void held_prepare(void)
{
    ptrace(PTRACE_TRACEME, 0, NULL, NULL);
}

long held_until(pid_t pid, const long *nrs, size_t n)
{
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid); /* stopped at its exec */
    ASSERT_TRUE(WIFSTOPPED(status));
    long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
    ASSERT_EQ(ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)opts), 0);
    bool held = false;
    int sig = 0;
    long arg0 = 0;
    while (!held) {
        ASSERT_EQ(ptrace(PTRACE_SYSCALL, pid, NULL, (void *)(long)sig), 0);
        sig = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSTOPPED(status)); /* it ended without the call */
        if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8)))
            continue; /* a sanitizer's runtime (or valgrind) runs it again */
        if (WSTOPSIG(status) != (SIGTRAP | 0x80)) {
            sig = WSTOPSIG(status); /* its own signal: delivered */
            continue;
        }
        struct __ptrace_syscall_info info;
        if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof info, &info) <= 0 ||
            info.op != PTRACE_SYSCALL_INFO_ENTRY)
            continue;
        for (size_t i = 0; i < n; i++)
            held = held || (long)info.entry.nr == nrs[i];
        arg0 = (long)info.entry.args[0];
    }
    return arg0;
}

void held_release(pid_t pid)
{
    ASSERT_EQ(ptrace(PTRACE_DETACH, pid, NULL, NULL), 0);
}
