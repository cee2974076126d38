/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* broker_conf.c - what the plugin must know of the broker's configuration
 * that the plugin API does not give: message_size_limit, and whether
 * anything else decides access (acl_file, password-less ACL plugins...).
 * It is read from the config file named on the broker's command line (-c)
 * and the files its include_dir lines pull in (*.conf, in alphabetical
 * order, where the line stands, as Mosquitto reads them: Debian's default
 * configuration keeps everything in /etc/mosquitto/conf.d). Without a
 * config file, the limit is MQTT's own maximum and nothing else decides
 * access. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "broker_conf.h"
#include "plugin.h"

#define SS_MQTT_MAX_PAYLOAD 268435455u

/* The -c / --config-file argument of this process, or NULL. Owned by the
 * caller. */
static char *ss_broker_conf__config_path(void)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (f == NULL)
        return NULL;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *path = NULL;
    for (size_t i = 0; i < n && path == NULL;) {
        const char *arg = buf + i;
        size_t len = strlen(arg);
        if ((strcmp(arg, "-c") == 0 || strcmp(arg, "--config-file") == 0) && i + len + 1 < n)
            path = strdup(arg + len + 1);
        i += len + 1;
    }
    return path;
}

/* If line is "<key> <value>", return the value (trimmed), else NULL. */
static char *ss_broker_conf__setting(char *line, const char *key)
{
    while (isspace((unsigned char)*line))
        line++;
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || !isspace((unsigned char)line[k]))
        return NULL;
    char *v = line + k;
    while (isspace((unsigned char)*v))
        v++;
    char *end = v + strlen(v);
    while (end > v && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return v;
}

/* Any object of this library: dladdr finds the file it was loaded from. */
static const char ss_anchor = 0;

/* True when path names this very shared object. */
static bool ss_broker_conf__is_us(const char *path)
{
    Dl_info info;
    if (dladdr(&ss_anchor, &info) == 0 || info.dli_fname == NULL)
        return false;
    char a[PATH_MAX], b[PATH_MAX];
    return realpath(path, a) && realpath(info.dli_fname, b) && strcmp(a, b) == 0;
}

/* include_dir nests at most this deep (a loop of includes ends). */
#define SS_INCLUDE_DEPTH_MAX 4

static int ss_broker_conf__is_conf(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && strcmp(e->d_name + n - 5, ".conf") == 0;
}

static void ss_broker_conf__read(struct ss_broker_conf *bc, const char *path, uint64_t *limit, int depth);

static void ss_broker_conf__unreadable(struct ss_broker_conf *bc, const char *path)
{
    if (bc->unreadable++ == 0)
        snprintf(bc->unreadable_path, sizeof bc->unreadable_path, "%s", path);
}

/* The *.conf files of dir, in alphabetical order. */
static void ss_broker_conf__read_dir(struct ss_broker_conf *bc, const char *dir, uint64_t *limit, int depth)
{
    struct dirent **list;
    int n = scandir(dir, &list, ss_broker_conf__is_conf, alphasort);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, list[i]->d_name) < sizeof path)
            ss_broker_conf__read(bc, path, limit, depth + 1);
        free(list[i]);
    }
    if (n >= 0)
        free(list);
    else
        ss_broker_conf__unreadable(bc, dir);
}

/* "listener PORT [address]": the port, or 0. */
static uint16_t ss_broker_conf__port(const char *v)
{
    size_t digits = strspn(v, "0123456789");
    uint64_t n;
    if (digits == 0 || ss_parse_u64((const uint8_t *)v, digits, 65535, &n) != SS_OK)
        return 0;
    return (uint16_t)n;
}

static void ss_broker_conf__read(struct ss_broker_conf *bc, const char *path, uint64_t *limit, int depth)
{
    if (depth > SS_INCLUDE_DEPTH_MAX)
        return;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        ss_broker_conf__unreadable(bc, path);
        return;
    }
    char line[4096];
    uint16_t listener = 0; /* the listener the lines are about now */
    while (fgets(line, sizeof line, f)) {
        char *v;
        if ((v = ss_broker_conf__setting(line, "listener")) != NULL ||
            (v = ss_broker_conf__setting(line, "port")) != NULL) { /* port: the default listener's */
            listener = ss_broker_conf__port(v);
        } else if ((v = ss_broker_conf__setting(line, "protocol")) != NULL) {
            int max = (int)(sizeof bc->ws_ports / sizeof bc->ws_ports[0]);
            if (strcmp(v, "websockets") == 0 && listener != 0 && bc->ws_nports < max)
                bc->ws_ports[bc->ws_nports++] = listener;
        } else if ((v = ss_broker_conf__setting(line, "message_size_limit")) != NULL) {
            size_t digits = strspn(v, "0123456789");
            uint64_t n;
            if (ss_parse_u64((const uint8_t *)v, digits, UINT64_MAX, &n) == SS_OK)
                *limit = n; /* the last one wins, as in mosquitto */
        } else if ((v = ss_broker_conf__setting(line, "sys_interval")) != NULL) {
            size_t digits = strspn(v, "0123456789");
            uint64_t n;
            if (digits && ss_parse_u64((const uint8_t *)v, digits, 65535, &n) == SS_OK)
                bc->sys_interval = n;
        } else if ((v = ss_broker_conf__setting(line, "per_listener_settings")) != NULL) {
            bc->per_listener_settings = strcmp(v, "true") == 0; /* the last one wins */
        } else if (ss_broker_conf__setting(line, "mount_point") != NULL) {
            bc->mount_points++;
        } else if (ss_broker_conf__setting(line, "acl_file") != NULL) {
            bc->has_acl_file = true;
        } else if ((v = ss_broker_conf__setting(line, "plugin")) != NULL ||
                   (v = ss_broker_conf__setting(line, "auth_plugin")) != NULL) {
            if (!ss_broker_conf__is_us(v))
                bc->other_plugins++;
        } else if ((v = ss_broker_conf__setting(line, "include_dir")) != NULL) {
            char *dir = strdup(v);
            if (dir)
                ss_broker_conf__read_dir(bc, dir, limit, depth);
            free(dir);
        }
    }
    fclose(f);
}

void ss_read_broker_conf(struct ss_broker_conf *bc)
{
    memset(bc, 0, sizeof *bc);
    bc->message_size_limit = SS_MQTT_MAX_PAYLOAD;
    bc->sys_interval = 10; /* mosquitto's default */
    char *path = ss_broker_conf__config_path();
    if (path == NULL)
        return;
    uint64_t limit = 0;
    ss_broker_conf__read(bc, path, &limit, 0);
    free(path);
    if (limit != 0 && limit <= SS_MQTT_MAX_PAYLOAD)
        bc->message_size_limit = limit;
}
