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
 * A command killed part-way leaves its work beside the lock file: an
 * import the directory import.partial, a restore the file
 * data.mdb.partial. Neither is ever part of a store (a broker opens
 * data.mdb), so the next import or restore removes both once it holds the
 * lock, and says so.
 *
 * Nothing here follows a symbolic link inside DIR: an entry named
 * import.partial that is not a real directory, or data.mdb.partial that
 * is not a regular file, is not a leftover, and the files of whatever it
 * names are never removed.
 */
#define _GNU_SOURCE /* renameat2, RENAME_NOREPLACE */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/dirlock.h"
#include "../core/errors.h"
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
        } else if (strcmp(e->d_name, CLI_DIR_RESTORE_PARTIAL) == 0 &&
                   fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
            out->restore_partial = true; /* anything else by that name is someone's */
        } else if (strcmp(e->d_name, "data.mdb") == 0 || strcmp(e->d_name, "journal") == 0 ||
                   strcmp(e->d_name, "journal.discarded") == 0) {
            out->store = true; /* a store's own files (core/store_lmdb_open.c) */
        } else {
            out->other = true;
        }
    }
    closedir(d);
    return 0;
}

/* DIR's length without trailing slashes, for the names made in it. */
static int dir_len(const char *dir)
{
    int len = (int)strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    return len;
}

int cli_dir_lock_take(struct cli_dir_lock *l, const char *dir)
{
    l->made = false;
    if (snprintf(l->path, sizeof l->path, "%.*s/%s", dir_len(dir), dir, CLI_DIR_LOCK) >= (int)sizeof l->path) {
        l->fd = -1;
        errno = ENAMETOOLONG;
        return -1;
    }
    l->fd = ss_dirlock_take(l->path, &l->made); /* the broker's own lock (core/dirlock.c) */
    return l->fd < 0 ? -1 : 0;
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

/* Say why cmd cannot go into DIR as st shows it: 0 when it may (absent,
 * empty, or holding what a killed import or restore left, alone or beside
 * a store's files: cli_dir_begin removes the leftovers, then refuses the
 * store), else the exit code. A DIR holding anything else is refused as
 * it is, leftovers and all: it is not a data directory (it may be the
 * broker's backup directory, whose backups are written as NAME.partial),
 * and nothing in it is this command's to remove. */
static int dir_check(const struct cli *cl, const char *cmd, const char *dir, struct cli_dir_scan *st)
{
    if (cli_dir_scan(dir, st) != 0) {
        cli_fail(cl, SS_E_INVAL, "%s: %s: %s", cmd, dir, strerror(errno));
        return SS_EXIT_USAGE;
    }
    if (st->partial_odd) {
        cli_fail(cl, SS_E_INVAL, "%s: %.*s/%s is not a directory (a symbolic link?), so no import left it: remove "
                 "it and %s again", cmd, dir_len(dir), dir, CLI_DIR_PARTIAL, cmd);
        return SS_EXIT_USAGE;
    }
    if (st->other || (st->store && !st->partial && !st->restore_partial)) {
        cli_fail(cl, SS_E_INVAL, "%s: %s is not empty: %s into a new or empty data directory", cmd, dir, cmd);
        return SS_EXIT_USAGE;
    }
    return SS_EXIT_OK;
}

/* Remove name in DIR, left by a killed import (a directory) or restore (a
 * file). 0, or the exit code after saying why. */
static int dir_remove_leftover(const struct cli *cl, const char *cmd, const char *dir, const char *name,
                               const char *by)
{
    char path[4200];
    snprintf(path, sizeof path, "%.*s/%s", dir_len(dir), dir, name);
    int rc = strcmp(name, CLI_DIR_PARTIAL) == 0 ? cli_dir_remove(path) : unlink(path);
    if (rc != 0 && errno != ENOENT) {
        cli_fail(cl, SS_E_IO, "%s: cannot remove %s, left by %s that did not finish: %s: remove it and %s again",
                 cmd, path, by, strerror(errno), cmd);
        return SS_EXIT_CONNECTION;
    }
    out_error("%s: removed %s, left by %s that did not finish", cmd, path, by);
    return SS_EXIT_OK;
}

/* After a refusal with the lock held: DIR as it was found. */
static int dir_unmake(const char *dir, struct cli_dir_lock *l, bool made_dir, int exit_code)
{
    cli_dir_lock_release(l, l->made);
    if (made_dir)
        rmdir(dir);
    return exit_code;
}

int cli_dir_begin(const struct cli *cl, const char *cmd, const char *dir, struct cli_dir_lock *l, bool *made_dir)
{
    l->fd = -1;
    *made_dir = false;
    /* A first look before anything is made in DIR: a directory that
     * holds someone's files gets no lock file. */
    struct cli_dir_scan st;
    int exit_code = dir_check(cl, cmd, dir, &st);
    if (exit_code != SS_EXIT_OK)
        return exit_code;
    /* Made when absent; one made meanwhile (by another import or restore
     * started at the same moment) is looked at again once locked. */
    if (!st.exists) {
        int made = mkdir(dir, 0700);
        if (made != 0 && errno != EEXIST) {
            cli_fail(cl, SS_E_IO, "%s: cannot make %s: %s", cmd, dir, strerror(errno));
            return SS_EXIT_CONNECTION;
        }
        *made_dir = made == 0;
    }
    /* The broker's lock: held until the command ends, so that no broker
     * opens DIR, and no other import or restore writes in it, meanwhile.
     * flock is released by the kernel when the process dies: a killed
     * command holds nothing. */
    if (cli_dir_lock_take(l, dir) != 0) {
        int err = errno;
        if (err == EWOULDBLOCK)
            cli_fail(cl, SS_E_INVAL, "%s: %s is in use: a broker, an import or a restore holds it", cmd, dir);
        else
            cli_fail(cl, SS_E_IO, "%s: cannot lock %s: %s", cmd, dir, strerror(err));
        if (*made_dir && err != EWOULDBLOCK) { /* what it made; a holder's lock file stays */
            if (l->made)
                unlink(l->path);
            rmdir(dir);
        }
        return err == EWOULDBLOCK ? SS_EXIT_USAGE : SS_EXIT_CONNECTION;
    }
    /* Again, now that nothing else can change DIR: between the first look
     * and the lock, an import or a restore may have finished (its store in
     * DIR, its lock released) or a broker started and stopped. */
    if ((exit_code = dir_check(cl, cmd, dir, &st)) != SS_EXIT_OK)
        return dir_unmake(dir, l, *made_dir, exit_code);
    /* What a killed import or restore left: with the lock held, no other
     * uses it, and no broker ever looks at it. */
    if (st.partial && (exit_code = dir_remove_leftover(cl, cmd, dir, CLI_DIR_PARTIAL, "an import")) != SS_EXIT_OK)
        return dir_unmake(dir, l, *made_dir, exit_code);
    if (st.restore_partial &&
        (exit_code = dir_remove_leftover(cl, cmd, dir, CLI_DIR_RESTORE_PARTIAL, "a restore")) != SS_EXIT_OK)
        return dir_unmake(dir, l, *made_dir, exit_code);
    if (st.store) {
        cli_fail(cl, SS_E_INVAL, "%s: %s is not empty: %s into a new or empty data directory", cmd, dir, cmd);
        return dir_unmake(dir, l, *made_dir, SS_EXIT_USAGE);
    }
    return SS_EXIT_OK;
}

void cli_dir_abandon(const char *dir, struct cli_dir_lock *l, bool made_dir)
{
    (void)dir_unmake(dir, l, made_dir, 0);
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
