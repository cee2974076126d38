/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* datadir.c - the data directory an offline command (restore, import)
 * fills: what it holds, its lock, and the few file operations both need
 * to put a store into it without harming what is there.
 *
 * The lock is the broker's own (statestore.lock, core/store_lmdb_open.c):
 * while a command holds it no broker opens DIR, and no other restore or
 * import writes in it; while a broker holds it the command is refused.
 * What DIR holds is looked at again once the lock is held: only then can
 * nothing else change it.
 *
 * Nothing here follows a symbolic link inside DIR: an entry named
 * import.partial that is not a real directory is not an import's leftover,
 * and the files of whatever it names are never removed.
 */
#define _GNU_SOURCE /* renameat2, RENAME_NOREPLACE */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Open the directory path to read its entries (flags: O_NOFOLLOW, or
 * 0); *fd is the stream's descriptor. NULL with errno. */
static DIR *open_dir(const char *path, int flags, int *fd)
{
    *fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
    if (*fd < 0)
        return NULL;
    DIR *d = fdopendir(*fd);
    if (d == NULL) {
        int err = errno;
        close(*fd);
        errno = err;
    }
    return d;
}

int cli_dir_scan(const char *dir, struct cli_dir_scan *out)
{
    memset(out, 0, sizeof *out);
    int fd;
    DIR *d = open_dir(dir, 0, &fd);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    out->exists = true;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (strcmp(e->d_name, CLI_DIR_LOCK) == 0) {
            out->lock = true;
        } else if (strcmp(e->d_name, CLI_DIR_PARTIAL) == 0) {
            /* lstat's view: a symbolic link to a directory is not one. */
            bool is_dir = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
            out->partial = is_dir;
            out->partial_odd = !is_dir;
        } else {
            out->other = true;
        }
    }
    closedir(d);
    return 0;
}

int cli_dir_lock_take(struct cli_dir_lock *l, const char *dir)
{
    l->made = false;
    int len = (int)strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (snprintf(l->path, sizeof l->path, "%.*s/%s", len, dir, CLI_DIR_LOCK) >= (int)sizeof l->path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    struct stat named, st;
    l->made = lstat(l->path, &named) != 0 && errno == ENOENT;
    /* O_NOFOLLOW: the lock is a file of DIR's own, never what a link names. */
    l->fd = open(l->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (l->fd < 0)
        return -1;
    if (flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        close(l->fd);
        l->fd = -1;
        errno = err;
        return -1;
    }
    /* The file locked must still be DIR's lock file: a command that ends
     * removes a lock file it made, and one opened just before that and
     * locked just after would be no lock at all (a broker would make and
     * lock a new one). */
    if (fstat(l->fd, &st) != 0 || lstat(l->path, &named) != 0 || st.st_ino != named.st_ino ||
        st.st_dev != named.st_dev) {
        close(l->fd);
        l->fd = -1;
        errno = EWOULDBLOCK;
        return -1;
    }
    return 0;
}

void cli_dir_lock_release(struct cli_dir_lock *l, bool remove_file)
{
    if (l->fd < 0)
        return;
    if (remove_file) /* while still held: nobody locks it meanwhile */
        unlink(l->path);
    close(l->fd);
    l->fd = -1;
}

int cli_dir_remove(const char *path)
{
    /* O_NOFOLLOW with O_DIRECTORY: a symbolic link fails (ELOOP or
     * ENOTDIR), whatever it names. */
    int fd;
    DIR *d = open_dir(path, O_NOFOLLOW, &fd);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            (void)unlinkat(fd, e->d_name, 0); /* a link itself, never its target; a directory stays */
    }
    closedir(d);
    return rmdir(path);
}

int cli_rename_noreplace(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    /* A filesystem without RENAME_NOREPLACE: a hard link is made only
     * where no name is, as atomically; then the old name goes. */
    if (link(from, to) == 0) {
        (void)unlink(from);
        return 0;
    }
    if (errno == EEXIST)
        return -1;
    /* No hard links either (some network and FUSE filesystems): the
     * caller holds DIR's lock, so only a writer that ignores it could put
     * a file there between this look and the rename. */
    struct stat st;
    if (lstat(to, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);
}

static int cli_sync_path(const char *path, int flags)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | flags);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

int cli_sync_dir(const char *path)
{
    return cli_sync_path(path, O_DIRECTORY);
}

int cli_sync_file(const char *path)
{
    return cli_sync_path(path, 0);
}
