/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* dirlock.c - the exclusive lock of a data directory (dirlock.h).
 *
 * flock is released by the kernel when the process dies, so a crash
 * leaves no stale lock. The file locked must still be the one the name
 * leads to: an import or a restore that fails removes a lock file it made
 * (cli/datadir.c), and a process that opened it just before that and
 * locked it just after would hold a lock nobody else sees (the next one
 * would make and lock a new file, and write beside it). So the name is
 * looked up again once locked, and a replaced file opened again. A file
 * replaced every time (only a process that ignores the lock could) is
 * taken as held elsewhere. */
#include "dirlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int ss_dirlock_take(const char *path, bool *made)
{
    for (int tries = 0; tries < 8; tries++) {
        struct stat named, held;
        bool absent = lstat(path, &named) != 0 && errno == ENOENT;
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return -1;
        if (made)
            *made = absent;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int err = errno;
            close(fd);
            errno = err;
            return -1;
        }
        if (fstat(fd, &held) == 0 && lstat(path, &named) == 0 && held.st_ino == named.st_ino &&
            held.st_dev == named.st_dev)
            return fd;
        close(fd); /* removed or replaced meanwhile: the lock is the file there now */
    }
    errno = EWOULDBLOCK;
    return -1;
}
