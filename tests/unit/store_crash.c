/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_crash.c - a store failing in a child, checked after (store_crash.h). */
#include "store_crash.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../test.h"

int store_crash_fail_syscall(long nr, int fd, int err)
{
    unsigned ret_err = SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA);
    struct sock_filter any[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, ret_err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_filter on_fd[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, ret_err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = fd < 0 ? (struct sock_fprog){sizeof any / sizeof any[0], any}
                                    : (struct sock_fprog){sizeof on_fd / sizeof on_fd[0], on_fd};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return -1;
    return 0;
}

int store_crash_put(ss_store *s, const char *key, uint64_t wall)
{
    int rc = ss_store_begin(s);
    if (rc != SS_OK)
        return rc;
    ss_record r;
    memset(&r, 0, sizeof r);
    r.value.data = (const uint8_t *)key;
    r.value.len = strlen(key);
    r.version.wall = wall;
    r.version.node_len = 1;
    r.version.node[0] = 'n';
    ss_bytes k = {(const uint8_t *)key, strlen(key)};
    if ((rc = ss_store_put(s, k, &r)) != SS_OK) {
        ss_store_abort(s);
        return rc;
    }
    return ss_store_commit(s, 1000 + wall);
}

void store_crash_then_check(const ss_store_options *o, int (*child)(ss_store *s), const char *const *keys,
                            size_t n)
{
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        ss_store *s = NULL;
        if (ss_store_open(o, &s) != SS_OK)
            _exit(2);
        _exit(child(s)); /* a crash: no close */
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    ss_store_options again = ss_store_options_default();
    again.path = o->path;
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&again, &s), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    for (size_t i = 0; i < n; i++) {
        ss_record got;
        ss_bytes k = {(const uint8_t *)keys[i], strlen(keys[i])};
        ASSERT_EQ(ss_store_get(s, k, &got), SS_OK);
        ASSERT_MEM(got.value.data, got.value.len, keys[i], strlen(keys[i]));
    }
    ss_store_abort(s);
    ss_store_close(s);
}
