/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backup.c - a consistent copy of the live store (backup.h). */
#include "backup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../core/errors.h"
#include "admin.h"
#include "plugin.h"

struct ss_backup {
    bool running;
    char *path;
    char *name;
    char *client_id; /* who asked: the answer goes to its session */
    char *response_topic;
    uint8_t *corr;
    uint16_t corr_len;
    uint64_t started_ms;
    char why[300]; /* the backend's refusal */
};

int ss_backup_new(struct ss_backup **out)
{
    struct ss_backup *b = calloc(1, sizeof *b);
    if (b == NULL)
        return SS_E_NOMEM;
    *out = b;
    return SS_OK;
}

static void ss_backup__clear(struct ss_backup *b)
{
    free(b->path);
    free(b->name);
    free(b->client_id);
    free(b->response_topic);
    free(b->corr);
    b->path = b->name = b->client_id = b->response_topic = NULL;
    b->corr = NULL;
    b->corr_len = 0;
    b->running = false;
}

void ss_backup_free(struct ss_backup *b)
{
    if (b == NULL)
        return;
    ss_backup__clear(b); /* the backend waits for a copy under way */
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

const char *ss_backup_start(struct ss_plugin *p, const uint8_t *name, size_t len, const char *client_id,
                            const char *response_topic,
                            const uint8_t *corr, uint16_t corr_len)
{
    struct ss_backup *b = p->backup;
    ss_backend *be = p->backend;
    /* A backend without backups says so first: the option is beside the
     * point there. */
    if (be->ops->backup_start(be->impl, NULL, b->why, sizeof b->why) != SS_OK)
        return b->why;
    if (p->opt.backup_dir == NULL)
        return "backups are off: set plugin_opt_backup_dir";
    if (!ss_backup__name_ok(name, len))
        return "a backup name is a plain file name: 1 to 200 letters, digits, '.', '_' and '-', not starting with '.'";
    if (b->running)
        return "busy: a backup is under way";
    /* Never over an earlier backup. */
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%.*s", p->opt.backup_dir, (int)len, (const char *)name);
    if (stat(path, &st) == 0)
        return "a backup of that name exists: choose another name or remove it";
    /* Nor over what would be its copy under way (NAME.partial), which may
     * be a backup of its own. */
    char partial[4200];
    snprintf(partial, sizeof partial, "%s.partial", path);
    if (lstat(partial, &st) == 0)
        return "a file NAME.partial exists, where the copy is made: choose another name or remove it";
    if (be->ops->backup_start(be->impl, path, b->why, sizeof b->why) != SS_OK)
        return b->why;
    b->path = strdup(path);
    b->name = strndup((const char *)name, len);
    b->client_id = strdup(client_id);
    b->response_topic = strdup(response_topic);
    b->corr = corr ? malloc(corr_len ? corr_len : 1) : NULL; /* present, perhaps empty */
    if (corr_len && b->corr)
        memcpy(b->corr, corr, corr_len);
    b->corr_len = corr_len;
    b->started_ms = ss_wall_ms();
    b->running = true;
    /* Out of memory for the answer's details: the copy goes on, and the
     * log says how it ended. */
    ss_log(p, MOSQ_LOG_NOTICE, "backup %s: waiting for a checkpoint", path);
    return NULL;
}

static void ss_backup__answer(struct ss_plugin *p, struct ss_backup *b, const char *text)
{
    if (b->response_topic && b->client_id)
        ss_admin_reply(p, b->client_id, b->response_topic, b->corr, b->corr_len, (const uint8_t *)text,
                       strlen(text));
}

void ss_backup_step(struct ss_plugin *p)
{
    struct ss_backup *b = p->backup;
    int rc, err;
    uint64_t bytes;
    if (!b->running || !p->backend->ops->backup_done(p->backend->impl, &rc, &err, &bytes))
        return;
    char text[600];
    const char *name = b->name ? b->name : "";
    const char *path = b->path ? b->path : name;
    if (rc == SS_OK) {
        snprintf(text, sizeof text, "backup %s %llu\n", name, (unsigned long long)bytes);
        ss_log(p, MOSQ_LOG_NOTICE, "backup %s: %llu bytes in %llu ms", path, (unsigned long long)bytes,
               (unsigned long long)(ss_wall_ms() - b->started_ms));
    } else {
        snprintf(text, sizeof text, "error backup %s failed: %s\n", name, strerror(err));
        ss_log(p, MOSQ_LOG_ERR, "backup %s failed: %s", path, strerror(err));
    }
    ss_backup__answer(p, b, text);
    ss_backup__clear(b);
}
