/* protect.c - who may see and send what.
 *
 * Topic protection (MOSQ_EVT_ACL_CHECK): nobody receives the requests
 * published on the request topic (they carry values), nobody publishes
 * into the notification topics (no spoofed notifications), and a client
 * subscribes only to its own notification topics. For every other topic
 * the plugin must leave the broker's decision alone. Mosquitto 2.0 asks
 * the plugin first; a "defer" answer then goes to the acl_file or the next
 * plugin, but when nothing else decides, a deferral is a denial. So other
 * topics are deferred when the broker has an acl_file or other plugins,
 * and allowed otherwise (plugin_opt_other_topics overrides the choice).
 *
 * Key authorization: the rules of plugin_opt_acl_file, re-read on SIGHUP
 * (MOSQ_EVT_RELOAD); a broken file keeps the previous rules.
 */
#include <stdio.h>
#include <string.h>

#include "../core/errors.h"
#include "plugin.h"

static int ss__other(const struct ss_plugin *p)
{
    return p->defer_other_topics ? MOSQ_ERR_PLUGIN_DEFER : MOSQ_ERR_SUCCESS;
}

/* Does filter (a subscription) name another client's notifications? Only
 * filters under the notification prefix are looked at; there, the level
 * after the GUID must be the subscriber's own HEX(client id). */
static bool ss__foreign_notify_filter(const char *filter, const char *client_id)
{
    static const char prefix[] = SS_NOTIFY_PREFIX "/";
    size_t pl = sizeof prefix - 1;
    if (strncmp(filter, prefix, pl) != 0) {
        /* "clients/statestore/v1/<GUID>" itself, or wildcards above it. */
        return strcmp(filter, SS_NOTIFY_PREFIX) == 0;
    }
    const char *level = filter + pl;
    size_t n = strcspn(level, "/");
    size_t idlen = strlen(client_id);
    if (n != 2 * idlen)
        return true;
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < idlen; i++) {
        unsigned char ch = (unsigned char)client_id[i];
        if (level[2 * i] != hex[ch >> 4] || level[2 * i + 1] != hex[ch & 15])
            return true;
    }
    return false;
}

int ss_on_acl_check(int event, void *event_data, void *userdata)
{
    (void)event;
    struct ss_plugin *p = userdata;
    struct mosquitto_evt_acl_check *ed = event_data;
    const char *topic = ed->topic;
    if (topic == NULL)
        return ss__other(p);
    const char *id = mosquitto_client_id(ed->client);
    switch (ed->access) {
    case MOSQ_ACL_READ:
        if (strcmp(topic, SS_REQUEST_TOPIC) == 0)
            return MOSQ_ERR_ACL_DENIED; /* requests are for the store only */
        break;
    case MOSQ_ACL_WRITE:
        if (strncmp(topic, SS_NOTIFY_PREFIX, sizeof SS_NOTIFY_PREFIX - 1) == 0) {
            ss_log(p, MOSQ_LOG_WARNING, "client %s may not publish to %s", id ? id : "?", topic);
            return MOSQ_ERR_ACL_DENIED;
        }
        break;
    case MOSQ_ACL_SUBSCRIBE:
        if (ss__foreign_notify_filter(topic, id ? id : "")) {
            ss_log(p, MOSQ_LOG_WARNING, "client %s may not subscribe to %s", id ? id : "?", topic);
            return MOSQ_ERR_ACL_DENIED;
        }
        break;
    default:
        break;
    }
    return ss__other(p);
}

bool ss_authorize(void *ctx, void *caller, enum ss_access access, ss_bytes key)
{
    struct ss_plugin *p = ctx;
    const struct ss_caller *who = caller;
    if (p->acl == NULL)
        return true;
    if (ss_acl_allows(p->acl, who->id, who->username, access, key))
        return true;
    ss_log(p, MOSQ_LOG_WARNING, "client %s (user %s) not authorized to %s a key of %zu bytes",
           who->id, who->username ? who->username : "-", access == SS_ACCESS_READ ? "read" : "write",
           key.len);
    return false;
}

int ss_acl_reload(struct ss_plugin *p)
{
    if (p->opt.acl_file == NULL)
        return SS_OK;
    ss_acl *fresh;
    char err[256];
    int rc = ss_acl_load(p->opt.acl_file, &fresh, err, sizeof err);
    if (rc != SS_OK) {
        ss_log(p, MOSQ_LOG_ERR, "acl_file %s: %s%s", p->opt.acl_file, err,
               p->acl ? "; keeping the previous rules" : "");
        return rc;
    }
    ss_acl_free(p->acl);
    p->acl = fresh;
    ss_log(p, MOSQ_LOG_NOTICE, "acl_file %s: %zu rules", p->opt.acl_file, ss_acl_rule_count(fresh));
    return SS_OK;
}

int ss_on_reload(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)event_data;
    ss_acl_reload(userdata);
    return MOSQ_ERR_SUCCESS;
}
