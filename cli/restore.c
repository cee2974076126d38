/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* restore.c - restore FILE DIR: a backup (statestore backup) into an empty
 * data directory, offline: no broker is involved. The backup is a whole
 * LMDB data file; the store opens it as it is, with every version, fencing
 * token and expiry deadline (keys whose deadline passed meanwhile are
 * absent and swept at start). */
#include <dirent.h>
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

static bool dir_is_empty(const char *path, bool *exists)
{
    DIR *d = opendir(path);
    *exists = d != NULL || errno != ENOENT;
    if (d == NULL)
        return errno == ENOENT;
    struct dirent *e;
    bool empty = true;
    while (empty && (e = readdir(d)) != NULL)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

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

bool cli_dir_is_empty(const char *path, bool *exists)
{
    bool e;
    return dir_is_empty(path, exists ? exists : &e);
}

void cli_dir_undo(const char *path, bool remove_dir)
{
    DIR *d = opendir(path);
    if (d == NULL)
        return;
    struct dirent *e;
    char file[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        unlink(file);
    }
    closedir(d);
    if (remove_dir)
        rmdir(path);
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
    bool exists;
    if (!dir_is_empty(dir, &exists)) {
        cli_fail(cl, SS_E_INVAL, "restore: %s is not empty: restore into a new or empty data directory", dir);
        close(in);
        return SS_EXIT_USAGE;
    }
    if (!exists && mkdir(dir, 0700) != 0) {
        cli_fail(cl, SS_E_INVAL, "restore: %s: %s", dir, strerror(errno));
        close(in);
        return SS_EXIT_USAGE;
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    snprintf(tmp, sizeof tmp, "%s.partial", path);
    int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int rc = out < 0 || copy_fd(in, out) != 0 || fsync(out) != 0 ? -1 : 0;
    int err = errno;
    if (out >= 0)
        close(out);
    close(in);
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -1;
        err = errno;
    }
    if (rc != 0) {
        unlink(tmp);
        cli_fail(cl, SS_E_IO, "restore: writing %s: %s", path, strerror(err));
        return SS_EXIT_CONNECTION;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    /* The plugin takes an absolute data_dir only. */
    char abs[PATH_MAX];
    if (!cl->json)
        printf("restored into %s: start the broker with plugin_opt_data_dir %s\n", dir,
               realpath(dir, abs) ? abs : dir);
    else
        printf("{\"restored\":true}\n");
    return SS_EXIT_OK;
}
