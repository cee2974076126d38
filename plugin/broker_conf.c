/* broker_conf.c - the one broker setting the plugin must know that the
 * plugin API does not give: message_size_limit. It is read from the config
 * file named on the broker's command line (-c). Lines pulled in by
 * include_dir are not followed; without a config file, or without the
 * setting, the limit is MQTT's own maximum. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "plugin.h"

#define SS_MQTT_MAX_PAYLOAD 268435455u

/* The -c / --config-file argument of this process, or NULL. Owned by the
 * caller. */
static char *ss__config_path(void)
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

uint64_t ss_broker_message_size_limit(void)
{
    char *path = ss__config_path();
    if (path == NULL)
        return SS_MQTT_MAX_PAYLOAD;
    FILE *f = fopen(path, "r");
    free(path);
    if (f == NULL)
        return SS_MQTT_MAX_PAYLOAD;
    uint64_t limit = 0;
    char line[1024];
    static const char key[] = "message_size_limit";
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (strncmp(p, key, sizeof key - 1) != 0 || !isspace((unsigned char)p[sizeof key - 1]))
            continue;
        p += sizeof key - 1;
        while (isspace((unsigned char)*p))
            p++;
        size_t digits = strspn(p, "0123456789");
        uint64_t v;
        if (ss_parse_u64((const uint8_t *)p, digits, UINT64_MAX, &v) == SS_OK)
            limit = v; /* the last one wins, as in mosquitto */
    }
    fclose(f);
    return limit == 0 || limit > SS_MQTT_MAX_PAYLOAD ? SS_MQTT_MAX_PAYLOAD : limit;
}
