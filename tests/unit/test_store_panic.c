/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store_panic.c - LMDB stops an environment for good once the write
 * of its meta page failed (MDB_PANIC): every later transaction is
 * refused. The store opens its data file again and goes on from the last
 * checkpoint and the journal, as a restart would. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"
#include "store_crash.h"

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

/* The child: a, b committed; then LMDB's meta writes fail. */
static int meta_failure_child(ss_store *s)
{
    if (store_crash_put(s, "a", 1) != SS_OK || store_crash_put(s, "b", 2) != SS_OK)
        return 3;
    int fd = meta_fd();
    if (fd < 0 || store_crash_fail_syscall(__NR_pwrite64, fd, EIO) != 0)
        return 4;
    /* The checkpoint that carries "c" fails on the meta page: LMDB stops
     * that environment; "c" goes into the journal instead. */
    ss_store_checkpoint_soon(s);
    if (store_crash_put(s, "c", 3) != SS_OK)
        return 5;
    if (strstr(ss_store_cause(s), "the data file was opened again") == NULL)
        return 6;
    if (store_crash_put(s, "d", 4) != SS_OK)
        return 7;
    /* The data file opened again takes checkpoints (once the failed
     * one's backoff has passed: an hour later here). */
    ss_store_checkpoint_soon(s);
    if (store_crash_put(s, "e", 7200000) != SS_OK || ss_store_journal_bytes(s) != 0)
        return 8;
    if (store_crash_put(s, "f", 7200001) != SS_OK)
        return 9;
    return 0;
}

TEST(store_meta_write_failure_opens_the_data_file_again)
{
    ss_store_options o = ss_store_options_default();
    o.sync = SS_SYNC_PERIODIC;
    o.checkpoint_interval_ms = 3600000;
    o.path = test_tmpdir();
    const char *keys[] = {"a", "b", "c", "d", "e", "f"};
    store_crash_then_check(&o, meta_failure_child, keys, 6);
}
