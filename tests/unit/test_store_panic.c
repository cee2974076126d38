/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store_panic.c - LMDB stops an environment for good once the write
 * of its meta page failed (MDB_PANIC): every later transaction is
 * refused. The store opens its data file again and goes on from the last
 * checkpoint and the journal, as a restart would. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"

/* The descriptor LMDB writes its meta pages through: the data file
 * opened for writing with O_DSYNC. -1 if there is none. */
static int meta_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int found = -1;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        char path[300], target[512], info[300], line[128];
        snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
        ssize_t n = readlink(path, target, sizeof target - 1);
        if (n < 9)
            continue;
        target[n] = '\0';
        if (strcmp(target + n - 9, "/data.mdb") != 0)
            continue;
        snprintf(info, sizeof info, "/proc/self/fdinfo/%s", de->d_name);
        FILE *f = fopen(info, "r");
        unsigned long flags = 0;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "flags: %lo", &flags) == 1)
                break;
        if (f)
            fclose(f);
        if (flags & O_DSYNC)
            found = atoi(de->d_name);
    }
    closedir(d);
    return found;
}

/* From here, every pwrite through descriptor fd fails with EIO. */
static int fail_writes_through(int fd)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pwrite64, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)fd, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EIO & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        return -1;
    return 0;
}

/* Commit one batch that puts key (its value the key too). */
static int put_one(ss_store *s, const char *key, uint64_t wall)
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

/* In a child (the filter cannot be taken back), which ends without
 * closing the store (a crash); the store is opened again here. */
TEST(store_meta_write_failure_opens_the_data_file_again)
{
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        ss_store_options o = ss_store_options_default();
        o.sync = SS_SYNC_PERIODIC;
        o.checkpoint_interval_ms = 3600000;
        o.path = test_tmpdir();
        ss_store *s = NULL;
        if (ss_store_open(&o, &s) != SS_OK)
            _exit(2);
        if (put_one(s, "a", 1) != SS_OK || put_one(s, "b", 2) != SS_OK)
            _exit(3);
        int fd = meta_fd();
        if (fd < 0 || fail_writes_through(fd) != 0)
            _exit(4);
        /* The checkpoint that carries "c" fails on the meta page: LMDB
         * stops that environment; "c" goes into the journal instead. */
        ss_store_checkpoint_soon(s);
        if (put_one(s, "c", 3) != SS_OK)
            _exit(5);
        if (strstr(ss_store_cause(s), "the data file was opened again") == NULL)
            _exit(6);
        if (put_one(s, "d", 4) != SS_OK)
            _exit(7);
        /* The data file opened again takes checkpoints (once the
         * failed one's backoff has passed: an hour later here). */
        ss_store_checkpoint_soon(s);
        if (put_one(s, "e", 7200000) != SS_OK || ss_store_journal_bytes(s) != 0)
            _exit(8);
        if (put_one(s, "f", 7200001) != SS_OK)
            _exit(9);
        _exit(0);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    ss_store_options o = ss_store_options_default();
    o.path = test_tmpdir();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    const char *keys[] = {"a", "b", "c", "d", "e", "f"};
    for (int i = 0; i < 6; i++) {
        ss_record got;
        ss_bytes k = {(const uint8_t *)keys[i], 1};
        ASSERT_EQ(ss_store_get(s, k, &got), SS_OK);
        ASSERT_MEM(got.value.data, got.value.len, keys[i], 1);
    }
    ss_store_abort(s);
    ss_store_close(s);
}
