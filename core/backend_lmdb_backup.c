/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_lmdb_backup.c - a consistent copy of the live store
 * (backend.h's backup_start, for the LMDB backend).
 *
 * Every write committed before the copy was asked for is in it: the
 * request makes a checkpoint due (the journal goes into the data file, on
 * the worker like any checkpoint), and once the data file holds every
 * commit, a thread of its own copies it (compacted) while clients go on;
 * their commits go into the journal, and no checkpoint runs until the copy
 * is done (it reads pages a checkpoint could reuse). One copy at a time.
 */
#define _GNU_SOURCE /* strdup */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "backend_lmdb_internal.h"
#include "errors.h"

int ss_backend_lmdb__backup_start(void *impl, const char *path, char *why, size_t why_len)
{
    struct ss_backend_lmdb *l = impl;
    struct ss_lmdb_backup *b = &l->backup;
    if (path == NULL)
        return SS_OK; /* backups are made here */
    if (b->state != SS_LMDB_BACKUP_IDLE) {
        snprintf(why, why_len, "busy: a backup is under way");
        return SS_E_BUSY;
    }
    /* Not without room for the copy: at most the data file's size (it is
     * compacted), and a margin. */
    char data[4096], dir[4096];
    snprintf(data, sizeof data, "%s/data.mdb", ss_store_options_get(l->store)->path);
    snprintf(dir, sizeof dir, "%s", path);
    struct stat st;
    struct statvfs fs;
    if (stat(data, &st) == 0 && statvfs(dirname(dir), &fs) == 0 &&
        (uint64_t)fs.f_bavail * fs.f_frsize < (uint64_t)st.st_size + ((uint64_t)1 << 20)) {
        snprintf(why, why_len, "not enough free space in plugin_opt_backup_dir for a copy of the data file");
        return SS_E_IO;
    }
    if ((b->path = strdup(path)) == NULL) {
        snprintf(why, why_len, "out of memory");
        return SS_E_NOMEM;
    }
    b->state = SS_LMDB_BACKUP_WAIT_CHECKPOINT;
    ss_store_checkpoint_soon(l->store);
    return SS_OK;
}

/* The copy, on a thread of its own: PATH.partial, synced, linked to PATH,
 * the directory synced: a file named PATH is always a whole backup. */
static void *ss_lmdb__backup_main(void *arg)
{
    struct ss_backend_lmdb *l = arg;
    struct ss_lmdb_backup *b = &l->backup;
    char tmp[4200], dir[4096];
    int rc = SS_OK, err = 0;
    uint64_t bytes = 0;
    snprintf(tmp, sizeof tmp, "%s.partial", b->path);
    snprintf(dir, sizeof dir, "%s", b->path);
    /* A file of its own: never one that is there (another backup), nor
     * one a symbolic link there names. */
    int fd = strlen(b->path) >= sizeof dir ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = SS_E_IO;
        err = strlen(b->path) >= sizeof dir ? ENAMETOOLONG : errno;
    } else {
        rc = ss_store_copy_fd(l->store, fd);
        err = rc != SS_OK ? errno : 0;
        struct stat st;
        if (rc == SS_OK && (fsync(fd) != 0 || fstat(fd, &st) != 0)) {
            rc = SS_E_IO;
            err = errno;
        } else if (rc == SS_OK) {
            bytes = (uint64_t)st.st_size;
        }
        close(fd);
        /* link, not rename: a file that appeared under the name meanwhile
         * is never replaced. */
        if (rc == SS_OK && link(tmp, b->path) != 0) {
            rc = SS_E_IO;
            err = errno;
        }
        unlink(tmp);
        int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rc == SS_OK && (dfd < 0 || fsync(dfd) != 0)) {
            rc = SS_E_IO;
            err = errno;
            unlink(b->path);
        }
        if (dfd >= 0)
            close(dfd);
    }
    pthread_mutex_lock(&b->mu);
    b->rc = rc;
    b->err = err;
    b->bytes = bytes;
    b->done = true;
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

void ss_backend_lmdb__backup_step(struct ss_backend_lmdb *l)
{
    struct ss_lmdb_backup *b = &l->backup;
    if (b->state == SS_LMDB_BACKUP_WAIT_CHECKPOINT && ss_store_file_current(l->store)) {
        b->done = false;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        ss_store_hold_checkpoints(l->store, true);
        int rc = pthread_create(&b->thread, NULL, ss_lmdb__backup_main, l);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            ss_store_hold_checkpoints(l->store, false);
            b->rc = SS_E_NOMEM;
            b->err = rc;
            b->bytes = 0;
            b->state = SS_LMDB_BACKUP_DONE;
            return;
        }
        b->state = SS_LMDB_BACKUP_COPYING;
        return;
    }
    if (b->state != SS_LMDB_BACKUP_COPYING)
        return;
    pthread_mutex_lock(&b->mu);
    bool done = b->done;
    pthread_mutex_unlock(&b->mu);
    if (!done)
        return;
    pthread_join(b->thread, NULL);
    ss_store_hold_checkpoints(l->store, false);
    b->state = SS_LMDB_BACKUP_DONE;
}

bool ss_backend_lmdb__backup_done(void *impl, int *rc, int *err, uint64_t *bytes)
{
    struct ss_backend_lmdb *l = impl;
    struct ss_lmdb_backup *b = &l->backup;
    if (b->state != SS_LMDB_BACKUP_DONE)
        return false;
    *rc = b->rc;
    *err = b->err;
    *bytes = b->bytes;
    free(b->path);
    b->path = NULL;
    b->state = SS_LMDB_BACKUP_IDLE;
    return true;
}

void ss_backend_lmdb__backup_stop(struct ss_backend_lmdb *l)
{
    struct ss_lmdb_backup *b = &l->backup;
    if (b->state == SS_LMDB_BACKUP_COPYING) {
        pthread_join(b->thread, NULL);
        ss_store_hold_checkpoints(l->store, false);
    }
    free(b->path);
    b->path = NULL;
    b->state = SS_LMDB_BACKUP_IDLE;
}
