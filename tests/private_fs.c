/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* private_fs.c - a small filesystem of a test's own (private_fs.h). */
#define _GNU_SOURCE /* unshare */
#include "private_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

static void private_fs__write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY);
    ASSERT_TRUE(fd >= 0);
    ASSERT_EQ(write(fd, text, strlen(text)), (long long)strlen(text));
    close(fd);
}

void private_tmpfs(const char *dir, const char *size, unsigned long flags)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (unshare(CLONE_NEWNS) != 0) {
        /* Not root: a user namespace of our own, mapping us to its root. */
        ASSERT_EQ(unshare(CLONE_NEWUSER | CLONE_NEWNS), 0);
        char map[64];
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        private_fs__write("/proc/self/uid_map", map);
        private_fs__write("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        private_fs__write("/proc/self/gid_map", map);
    }
    /* Source and type are ignored here; named, not NULL, for valgrind. */
    ASSERT_EQ(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL), 0);
    ASSERT_EQ(mkdir(dir, 0700), 0);
    char opts[64];
    snprintf(opts, sizeof opts, "size=%s,mode=0700", size);
    ASSERT_EQ(mount("tmpfs", dir, "tmpfs", flags, opts), 0);
}

void fill_filesystem(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    ASSERT_TRUE(fd >= 0);
    static char zeros[4096];
    while (write(fd, zeros, sizeof zeros) > 0) {
    }
    ASSERT_EQ(errno, ENOSPC);
    close(fd);
}
