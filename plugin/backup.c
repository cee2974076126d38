/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backup.c - a consistent copy of the live store (backup.h). */
#include "backup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../core/errors.h"
#include "admin.h"
#include "plugin.h"

enum ss_backup_state { SS_BACKUP_IDLE, SS_BACKUP_WAIT_CHECKPOINT, SS_BACKUP_COPYING };

struct ss_backup {
    enum ss_backup_state state;
    char *dir; /* the backup directory */
    char *name;
    char *response_topic;
    uint8_t *corr;
    uint16_t corr_len;
    ss_store *store;
    pthread_t thread;
    pthread_mutex_t mu;
    bool done;       /* under mu: the thread finished */
    int rc, err;     /* the thread's result and errno */
    uint64_t bytes;
    uint64_t started_ms;
};

int ss_backup_new(struct ss_backup **out)
{
    struct ss_backup *b = calloc(1, sizeof *b);
    if (b == NULL)
        return SS_E_NOMEM;
    pthread_mutex_init(&b->mu, NULL);
    *out = b;
    return SS_OK;
}

static void ss_backup__clear(struct ss_backup *b)
{
    free(b->dir);
    free(b->name);
    free(b->response_topic);
    free(b->corr);
    b->dir = b->name = b->response_topic = NULL;
    b->corr = NULL;
    b->corr_len = 0;
    b->state = SS_BACKUP_IDLE;
}

void ss_backup_free(struct ss_backup *b)
{
    if (b == NULL)
        return;
    if (b->state == SS_BACKUP_COPYING) {
        pthread_join(b->thread, NULL);
        ss_store_hold_checkpoints(b->store, false);
    }
    ss_backup__clear(b);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* A plain file name: letters, digits, '.', '_', '-', not starting with '.'. */
static bool ss_backup__name_ok(const uint8_t *n, size_t len)
{
    if (len == 0 || len > 200 || n[0] == '.')
        return false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

const char *ss_backup_start(struct ss_plugin *p, const uint8_t *name, size_t len, const char *response_topic,
                            const uint8_t *corr, uint16_t corr_len)
{
    struct ss_backup *b = p->backup;
    if (p->opt.backup_dir == NULL)
        return "backups are off: set plugin_opt_backup_dir";
    if (!ss_backup__name_ok(name, len))
        return "a backup name is a plain file name (letters, digits, '.', '_', '-')";
    if (b->state != SS_BACKUP_IDLE)
        return "busy: a backup is under way";
    /* Never over an earlier backup, and not without room for the copy (at
     * most the data file's size: it is compacted). */
    char final[4096], data[4096];
    struct stat st;
    snprintf(final, sizeof final, "%s/%.*s", p->opt.backup_dir, (int)len, (const char *)name);
    if (stat(final, &st) == 0)
        return "a backup of that name exists: choose another name or remove it";
    snprintf(data, sizeof data, "%s/data.mdb", p->opt.data_dir);
    struct statvfs fs;
    if (stat(data, &st) == 0 && statvfs(p->opt.backup_dir, &fs) == 0 &&
        (uint64_t)fs.f_bavail * fs.f_frsize < (uint64_t)st.st_size + ((uint64_t)1 << 20))
        return "not enough free space in plugin_opt_backup_dir for a copy of the data file";
    b->name = strndup((const char *)name, len);
    b->dir = strdup(p->opt.backup_dir);
    b->response_topic = strdup(response_topic);
    b->corr = corr_len ? malloc(corr_len) : NULL;
    if (b->name == NULL || b->dir == NULL || b->response_topic == NULL || (corr_len && b->corr == NULL)) {
        ss_backup__clear(b);
        return "out of memory";
    }
    if (corr_len)
        memcpy(b->corr, corr, corr_len);
    b->corr_len = corr_len;
    b->store = p->store;
    b->started_ms = ss_wall_ms();
    b->state = SS_BACKUP_WAIT_CHECKPOINT;
    ss_store_checkpoint_soon(p->store);
    ss_log(p, MOSQ_LOG_NOTICE, "backup %s/%s: waiting for a checkpoint", b->dir, b->name);
    return NULL;
}

/* The copy, on a thread of its own: NAME.partial, synced, renamed to NAME,
 * the directory synced: a file named NAME is always a whole backup. */
static void *ss_backup__main(void *arg)
{
    struct ss_backup *b = arg;
    char tmp[4200], final[4096];
    int rc = SS_OK, err = 0;
    uint64_t bytes = 0;
    int fd = -1;
    if ((size_t)snprintf(final, sizeof final, "%s/%s", b->dir, b->name) >= sizeof final) {
        rc = SS_E_IO;
        err = ENAMETOOLONG;
    } else {
        snprintf(tmp, sizeof tmp, "%s.partial", final);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    }
    if (rc != SS_OK) {
        /* said above */
    } else if (fd < 0) {
        rc = SS_E_IO;
        err = errno;
    } else {
        rc = ss_store_copy_fd(b->store, fd);
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
        if (rc == SS_OK && link(tmp, final) != 0) {
            rc = SS_E_IO;
            err = errno;
        }
        unlink(tmp);
        int dfd = open(b->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rc == SS_OK && (dfd < 0 || fsync(dfd) != 0)) {
            rc = SS_E_IO;
            err = errno;
            unlink(final);
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

static void ss_backup__answer(struct ss_plugin *p, struct ss_backup *b, const char *text)
{
    ss_admin_reply(p, b->response_topic, b->corr, b->corr_len, (const uint8_t *)text, strlen(text));
}

void ss_backup_step(struct ss_plugin *p)
{
    struct ss_backup *b = p->backup;
    if (p->store == NULL)
        return; /* etcd: no backups here (admin.c refuses them) */
    if (b->state == SS_BACKUP_WAIT_CHECKPOINT && ss_store_file_current(p->store)) {
        b->done = false;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        /* The copy reads pages the next checkpoint may reuse. */
        ss_store_hold_checkpoints(p->store, true);
        int rc = pthread_create(&b->thread, NULL, ss_backup__main, b);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            ss_store_hold_checkpoints(p->store, false);
            ss_backup__answer(p, b, "error cannot start the backup's thread\n");
            ss_backup__clear(b);
            return;
        }
        b->state = SS_BACKUP_COPYING;
        return;
    }
    if (b->state != SS_BACKUP_COPYING)
        return;
    pthread_mutex_lock(&b->mu);
    bool done = b->done;
    pthread_mutex_unlock(&b->mu);
    if (!done)
        return;
    pthread_join(b->thread, NULL);
    ss_store_hold_checkpoints(p->store, false);
    char text[600];
    if (b->rc == SS_OK) {
        snprintf(text, sizeof text, "backup %s %llu\n", b->name, (unsigned long long)b->bytes);
        ss_log(p, MOSQ_LOG_NOTICE, "backup %s/%s: %llu bytes in %llu ms", b->dir, b->name,
               (unsigned long long)b->bytes, (unsigned long long)(ss_wall_ms() - b->started_ms));
    } else {
        snprintf(text, sizeof text, "error backup %s failed: %s\n", b->name, strerror(b->err));
        ss_log(p, MOSQ_LOG_ERR, "backup %s/%s failed: %s", b->dir, b->name, strerror(b->err));
    }
    ss_backup__answer(p, b, text);
    ss_backup__clear(b);
}
