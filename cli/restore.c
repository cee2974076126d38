/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* restore.c - restore FILE DIR: a backup (statestore backup) into an empty
 * data directory, offline: no broker is involved. The backup is a whole
 * LMDB data file; the store opens it as it is, with every version, fencing
 * token and expiry deadline (keys whose deadline passed meanwhile are
 * absent and swept at start). It is copied into DIR/data.mdb.partial and
 * renamed to DIR/data.mdb, never over a file there, while the restore
 * holds DIR's lock, as a broker and an import do (datadir.c): a broker
 * started on DIR meanwhile refuses to start, and one that runs on DIR
 * makes the restore refuse. A killed restore leaves data.mdb.partial,
 * which the next restore or import into DIR removes once it holds the
 * lock (datadir.c, cli_dir_begin). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "../core/errors.h"
#include "cli.h"

/* LMDB's meta page: a 16-byte page header, then the magic (host order). */
#define SS_LMDB_MAGIC 0xBEEFC0DEu

static int copy_fd(int in, int out)
{
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return -1;
            off += w;
        }
    }
}

int cmd_restore(struct cli *cl, ss_client *c)
{
    (void)c;
    const char *file = cl->args[0], *dir = cl->args[1];
    int in = open(file, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        cli_fail(cl, SS_E_INVAL, "restore: %s: %s", file, strerror(errno));
        return SS_EXIT_USAGE;
    }
    uint8_t head[20];
    uint32_t magic = 0;
    if (pread(in, head, sizeof head, 0) == (ssize_t)sizeof head)
        memcpy(&magic, head + 16, 4);
    if (magic != SS_LMDB_MAGIC) {
        cli_fail(cl, SS_E_INVAL, "restore: %s is not a statestore backup", file);
        close(in);
        return SS_EXIT_USAGE;
    }
    /* A backup is a compacted copy: its pages end where its meta page
     * says. One cut short (an interrupted copy) would make the broker
     * fault on the first read past its end. */
    struct stat fst;
    MDB_env *env = NULL;
    MDB_envinfo info;
    MDB_stat mst;
    bool whole = fstat(in, &fst) == 0 && mdb_env_create(&env) == 0 &&
                 mdb_env_open(env, file, MDB_RDONLY | MDB_NOSUBDIR | MDB_NOLOCK, 0600) == 0 &&
                 mdb_env_info(env, &info) == 0 && mdb_env_stat(env, &mst) == 0 &&
                 (uint64_t)fst.st_size >= ((uint64_t)info.me_last_pgno + 1) * mst.ms_psize;
    if (env)
        mdb_env_close(env);
    if (!whole) {
        cli_fail(cl, SS_E_INVAL, "restore: %s is not a whole statestore backup (cut short?)", file);
        close(in);
        return SS_EXIT_USAGE;
    }
    /* DIR must be empty (a lock file alone, which a broker or an earlier
     * command leaves, counts as empty, and so does what a killed import
     * or restore left); looked at again once its lock is held, as import
     * does (datadir.c): a broker started on DIR meanwhile would otherwise
     * have made a store there, serving and acknowledging writes, that the
     * rename below would replace. */
    struct cli_dir_lock lock;
    bool made_dir;
    int exit_code = cli_dir_begin(cl, "restore", dir, &lock, &made_dir);
    if (exit_code != SS_EXIT_OK) {
        close(in);
        return exit_code;
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    snprintf(tmp, sizeof tmp, "%s/%s", dir, CLI_DIR_RESTORE_PARTIAL);
    int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = out < 0 || copy_fd(in, out) != 0 || fsync(out) != 0 ? -1 : 0;
    int err = errno;
    if (out >= 0)
        close(out);
    close(in);
    if (rc == 0 && cli_rename_noreplace(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        cli_fail(cl, SS_E_IO, "restore: writing %s: %s", path, strerror(err));
        cli_dir_abandon(dir, &lock, made_dir);
        return SS_EXIT_CONNECTION;
    }
    (void)cli_sync_dir(dir);
    /* The restored store is in place: the lock file stays, as a broker
     * leaves it, and the lock goes. */
    cli_dir_lock_release(&lock, false);
    /* The plugin takes an absolute data_dir only. */
    char abs[PATH_MAX];
    if (!cl->json)
        printf("restored into %s: start the broker with plugin_opt_data_dir %s\n", dir,
               realpath(dir, abs) ? abs : dir);
    else
        printf("{\"restored\":true}\n");
    return SS_EXIT_OK;
}
