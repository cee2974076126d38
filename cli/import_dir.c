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
 * takes on its data directory (datadir.c): a broker started on DIR during
 * the import refuses to start (the directory is in use), and so does a
 * second import, instead of building on the same files. DIR is looked at
 * again once the lock is held (an import that finished just before holds
 * no lock, but has put its store there), and the final rename never
 * replaces a data file.
 *
 * A killed import leaves DIR/import.partial and DIR/statestore.lock (and
 * DIR, if it made it). The next import or restore into DIR removes
 * import.partial once it holds the lock (datadir.c, cli_dir_begin): a DIR
 * holding nothing else is taken as empty. So does one into a DIR that
 * holds a store besides (a broker was started on DIR after the killed
 * import), which it then refuses as not empty. import.partial is only
 * ever an import's: one that is not a real directory (a symbolic link) is
 * refused, never followed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/errors.h"
#include "cli.h"

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

int import_dir_begin(const struct cli *cl, struct import_dir *d, const char *dir)
{
    memset(d, 0, sizeof *d);
    d->lock.fd = -1;
    int len = (int)strlen(dir); /* without trailing slashes, for the messages */
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (snprintf(d->partial, sizeof d->partial, "%.*s/%s", len, dir, CLI_DIR_PARTIAL) >= (int)sizeof d->partial ||
        snprintf(d->data, sizeof d->data, "%.*s/data.mdb", len, dir) >= (int)sizeof d->data) {
        cli_fail(cl, SS_E_INVAL, "import: %s: %s", dir, strerror(ENAMETOOLONG));
        return SS_EXIT_USAGE;
    }
    int exit_code = cli_dir_begin(cl, "import", dir, &d->lock, &d->made_dir);
    if (exit_code != SS_EXIT_OK)
        return exit_code;
    d->dir = dir; /* from here on, import_dir_undo has something to undo */
    return SS_EXIT_OK;
}

int import_dir_commit(struct import_dir *d, char *why, size_t n)
{
    char data[sizeof d->partial + 16], journal[sizeof d->partial + 16];
    snprintf(data, sizeof data, "%s/data.mdb", d->partial);
    snprintf(journal, sizeof journal, "%s/journal", d->partial);
    /* Before the close every batch was checkpointed into the data file
     * and the journal emptied (export.c, sink_close, which reports a
     * failure with its cause). Should the journal hold batches all the
     * same, the data file alone would be a store short of records. */
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
    if (cli_sync_file(data) != 0) {
        snprintf(why, n, "syncing %s: %s", data, strerror(errno));
        return SS_E_IO;
    }
    /* Never over a data file: DIR was found without one, and the lock
     * kept imports and brokers out since; one there now was put by
     * something that ignores the lock, and is not this import's to
     * replace. */
    if (cli_rename_noreplace(data, d->data) != 0) {
        if (errno == EEXIST)
            snprintf(why, n, "%s appeared during the import (something wrote in %s without its lock): it "
                     "is left as it is", d->data, d->dir);
        else
            snprintf(why, n, "renaming %s to %s: %s", data, d->data, strerror(errno));
        return SS_E_IO;
    }
    d->placed = true;
    /* The rename durable; and DIR's own entry when the import made it.
     * If that fails, the import fails (and import_dir_undo takes the
     * data file out again): a power loss could still undo it. */
    char parent[sizeof d->partial];
    parent_of(d->dir, parent, sizeof parent);
    const char *unsynced = cli_sync_dir(d->dir) != 0 ? d->dir : d->made_dir && cli_sync_dir(parent) != 0 ? parent : NULL;
    if (unsynced) {
        snprintf(why, n, "syncing %s: %s", unsynced, strerror(errno));
        return SS_E_IO;
    }
    /* What is left of the partial store (the empty journal, its lock):
     * the store in DIR does not need it. (Killed here, the import leaves
     * it beside a whole store, which a broker serves: it never looks in
     * import.partial.) */
    (void)cli_dir_remove(d->partial);
    (void)cli_sync_dir(d->dir);
    return SS_OK;
}

void import_dir_undo(struct import_dir *d)
{
    if (d->dir == NULL)
        return;
    /* Still holding the lock: nothing else opens DIR meanwhile. What a
     * killed import had left goes too: DIR ends empty, or absent (rmdir
     * removes it only if nothing else came into it). */
    (void)cli_dir_remove(d->partial);
    if (d->placed) /* a commit that failed after its rename */
        unlink(d->data);
    if (d->lock.made) /* one found there stays, as found */
        unlink(d->lock.path);
    if (d->made_dir)
        rmdir(d->dir);
    else
        (void)cli_sync_dir(d->dir);
}

void import_dir_end(struct import_dir *d)
{
    if (d->dir != NULL)
        cli_dir_lock_release(&d->lock, false);
}
