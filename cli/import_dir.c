/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* import_dir.c - the data directory that import FILE DIR writes, so that
 * an import stopped part-way leaves no store in DIR that a broker would
 * serve: not only when the tool catches the failure (a bad line, a full
 * disk), but also when it is killed (SIGTERM, SIGINT, the OOM killer, a
 * closed terminal), when none of its own code runs.
 *
 * The store is built in DIR/import.partial, a directory inside DIR: on
 * DIR's filesystem even when DIR is a mount point (one beside DIR might
 * not be, and a rename cannot cross filesystems), and DIR itself keeps
 * its owner and mode. When every record is in, the store is closed: its
 * journal checkpointed into the data file with LMDB's full sync, and
 * emptied. Then the data file is renamed to DIR/data.mdb, and DIR synced.
 * That one rename is the moment the store appears in DIR, whole, as
 * restore renames data.mdb.partial: before it, a broker on DIR finds no
 * data file and starts an empty store, as it would in the empty DIR it
 * was given. The journal and lock file of import.partial are not moved:
 * the journal is empty, and a broker makes both when it opens DIR.
 *
 * Meanwhile the import holds DIR's statestore.lock, the lock a broker
 * takes on its data directory: a broker started on DIR during the import
 * refuses to start (the directory is in use), and so does a second
 * import, instead of building on the same files.
 *
 * A killed import leaves DIR/import.partial and DIR/statestore.lock (and
 * DIR, if it made it). The next import into DIR removes them: a DIR
 * holding nothing else is taken as empty.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/errors.h"
#include "cli.h"

#define SS_IMPORT_PARTIAL "import.partial"
/* The broker's own lock file (core/store_lmdb_open.c). */
#define SS_IMPORT_LOCK "statestore.lock"

/* fsync what path names, opened with flags (O_DIRECTORY for a
 * directory: the entries made, renamed or removed in it become durable).
 * 0 or -1 (errno). */
static int sync_path(const char *path, int flags)
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

static int sync_dir(const char *path)
{
    return sync_path(path, O_DIRECTORY);
}

static int sync_file(const char *path)
{
    return sync_path(path, 0);
}

/* The directory that holds path (for DIR's own entry): "." for a bare
 * name, "/" for one at the root. */
static void parent_of(const char *path, char *out, size_t n)
{
    snprintf(out, n, "%s", path);
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/')
        out[--len] = '\0';
    char *slash = strrchr(out, '/');
    if (slash == NULL)
        snprintf(out, n, ".");
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
}

/* What DIR holds: 0 when it may be imported into (absent, empty, or
 * holding only what an import that did not finish leaves), 1 when it holds
 * anything else, -1 when it cannot be read (errno). */
static int dir_state(const char *path, bool *exists, bool *leftover)
{
    *exists = *leftover = false;
    DIR *d = opendir(path);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    *exists = true;
    int state = 0;
    struct dirent *e;
    while (state == 0 && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (strcmp(e->d_name, SS_IMPORT_PARTIAL) == 0 || strcmp(e->d_name, SS_IMPORT_LOCK) == 0)
            *leftover = true;
        else
            state = 1;
    }
    closedir(d);
    return state;
}

int import_dir_begin(const struct cli *cl, struct import_dir *d, const char *dir)
{
    memset(d, 0, sizeof *d);
    d->lock_fd = -1;
    int len = (int)strlen(dir); /* without trailing slashes, for the messages */
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (snprintf(d->partial, sizeof d->partial, "%.*s/%s", len, dir, SS_IMPORT_PARTIAL) >= (int)sizeof d->partial ||
        snprintf(d->lock, sizeof d->lock, "%.*s/%s", len, dir, SS_IMPORT_LOCK) >= (int)sizeof d->lock ||
        snprintf(d->data, sizeof d->data, "%.*s/data.mdb", len, dir) >= (int)sizeof d->data) {
        cli_fail(cl, SS_E_INVAL, "import: %s: %s", dir, strerror(ENAMETOOLONG));
        return SS_EXIT_USAGE;
    }
    bool exists, leftover;
    int state = dir_state(dir, &exists, &leftover);
    if (state < 0) {
        cli_fail(cl, SS_E_INVAL, "import: %s: %s", dir, strerror(errno));
        return SS_EXIT_USAGE;
    }
    if (state > 0) {
        cli_fail(cl, SS_E_INVAL, "import: %s is not empty: import into a new or empty data directory", dir);
        return SS_EXIT_USAGE;
    }
    if (!exists) {
        if (mkdir(dir, 0700) != 0) {
            cli_fail(cl, SS_E_IO, "import: cannot make %s: %s", dir, strerror(errno));
            return SS_EXIT_CONNECTION;
        }
        d->made_dir = true;
    }
    /* The broker's lock: held until the end, so that no broker opens
     * DIR, and no other import writes in it, meanwhile. flock is released
     * by the kernel when the process dies: a killed import holds nothing. */
    d->lock_fd = open(d->lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (d->lock_fd < 0 || flock(d->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        if (err == EWOULDBLOCK)
            cli_fail(cl, SS_E_INVAL, "import: %s is in use: a broker or another import holds it", dir);
        else
            cli_fail(cl, SS_E_IO, "import: cannot lock %s: %s", dir, strerror(err));
        if (d->lock_fd >= 0)
            close(d->lock_fd);
        d->lock_fd = -1;
        if (d->made_dir && err != EWOULDBLOCK) { /* what it made; a holder's lock file stays */
            unlink(d->lock);
            rmdir(dir);
        }
        return err == EWOULDBLOCK ? SS_EXIT_USAGE : SS_EXIT_CONNECTION;
    }
    d->dir = dir; /* from here on, import_dir_undo has something to undo */
    /* What a killed import left: it never reached DIR's data file. */
    if (leftover && access(d->partial, F_OK) == 0) {
        cli_dir_undo(d->partial, true);
        if (access(d->partial, F_OK) == 0) {
            cli_fail(cl, SS_E_IO, "import: cannot remove %s, left by an import that did not finish: remove it "
                     "and import again", d->partial);
            import_dir_undo(d);
            import_dir_end(d);
            d->dir = NULL;
            return SS_EXIT_CONNECTION;
        }
        out_error("import: removed %s, left by an import that did not finish", d->partial);
    }
    return SS_EXIT_OK;
}

int import_dir_commit(struct import_dir *d, char *why, size_t n)
{
    char data[sizeof d->partial + 16], journal[sizeof d->partial + 16];
    snprintf(data, sizeof data, "%s/data.mdb", d->partial);
    snprintf(journal, sizeof journal, "%s/journal", d->partial);
    /* The close checkpointed every batch into the data file and emptied
     * the journal. If that checkpoint failed (it says nothing), the
     * journal still holds batches the data file lacks: the data file
     * alone would be a store short of records. */
    struct stat st;
    if (stat(journal, &st) != 0) {
        snprintf(why, n, "%s: %s", journal, strerror(errno));
        return SS_E_IO;
    }
    if (st.st_size != 0) {
        snprintf(why, n, "the journal's last batches could not be checkpointed into the data file");
        return SS_E_IO;
    }
    /* LMDB's commit synced it; again here, so that the rename below never
     * makes a file visible whose pages are not on the disk. */
    if (sync_file(data) != 0) {
        snprintf(why, n, "syncing %s: %s", data, strerror(errno));
        return SS_E_IO;
    }
    if (rename(data, d->data) != 0) {
        snprintf(why, n, "renaming %s to %s: %s", data, d->data, strerror(errno));
        return SS_E_IO;
    }
    d->placed = true;
    /* The rename durable; and DIR's own entry when the import made it.
     * If that fails, the import fails (and import_dir_undo takes the
     * data file out again): a power loss could still undo it. */
    char parent[sizeof d->partial];
    parent_of(d->dir, parent, sizeof parent);
    const char *unsynced = sync_dir(d->dir) != 0 ? d->dir : d->made_dir && sync_dir(parent) != 0 ? parent : NULL;
    if (unsynced) {
        snprintf(why, n, "syncing %s: %s", unsynced, strerror(errno));
        return SS_E_IO;
    }
    /* What is left of the partial store (the empty journal, its lock):
     * the store in DIR does not need it. (Killed here, the import leaves
     * it beside a whole store, which a broker serves: it never looks in
     * import.partial.) */
    cli_dir_undo(d->partial, true);
    (void)sync_dir(d->dir);
    return SS_OK;
}

void import_dir_undo(struct import_dir *d)
{
    if (d->dir == NULL)
        return;
    /* Still holding the lock: nothing else opens DIR meanwhile. What a
     * killed import had left goes too: DIR ends empty, or absent (rmdir
     * removes it only if nothing else came into it). */
    cli_dir_undo(d->partial, true);
    if (d->placed) /* a commit that failed after its rename */
        unlink(d->data);
    unlink(d->lock);
    if (d->made_dir)
        rmdir(d->dir);
    else
        (void)sync_dir(d->dir);
}

void import_dir_end(struct import_dir *d)
{
    if (d->dir != NULL && d->lock_fd >= 0)
        close(d->lock_fd);
    d->lock_fd = -1;
}
