/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* protect.c - who may see and send what.
 *
 * Topic protection (MOSQ_EVT_ACL_CHECK): nobody receives the requests
 * published on the request topic (they carry values) or the
 * administrative topic, nobody publishes
 * into the notification topics (no spoofed notifications), and no client
 * subscribes to a filter that could match another client's notification
 * topics (notifications reach only their client anyway: see notify.c).
 * For every other topic the plugin must leave the broker's decision
 * alone. Mosquitto 2.0 asks the plugin first; a "defer" answer then goes
 * to the acl_file or the next plugin, but when nothing else decides, a
 * deferral is a denial. So other topics are deferred when the broker has
 * an acl_file or other plugins, and allowed otherwise
 * (plugin_opt_other_topics overrides the choice).
 *
 * Key authorization: the rules of plugin_opt_acl_file, re-read on SIGHUP
 * (MOSQ_EVT_RELOAD); a broken file keeps the previous rules.
 */
#include <stdio.h>
#include <string.h>

#include "../core/errors.h"
#include "broker_conf.h"
#include "plugin.h"
#include "protect.h"

static int ss_protect__other(const struct ss_plugin *p)
{
    return p->defer_other_topics ? MOSQ_ERR_PLUGIN_DEFER : MOSQ_ERR_SUCCESS;
}

/* One topic level: the n bytes at s. */
static bool ss_protect__level_is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* Could the level be HEX(x) for some non-empty x, as notification topics
 * write client ids and keys: an even number of upper-case hex digits? */
static bool ss_protect__level_is_hex(const char *s, size_t n)
{
    if (n == 0 || n % 2 != 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return true;
}

static bool ss_protect__level_is_own(const char *s, size_t n, const char *client_id)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t idlen = strlen(client_id);
    if (n != 2 * idlen)
        return false;
    for (size_t i = 0; i < idlen; i++) {
        unsigned char ch = (unsigned char)client_id[i];
        if (s[2 * i] != hex[ch >> 4] || s[2 * i + 1] != hex[ch & 15])
            return false;
    }
    return true;
}

/* Could filter (a subscription) match a notification topic of another
 * client, PREFIX/HEX(id)/command/notify/HEX(key) with id not the
 * subscriber's? Notifications are delivered to their client's session
 * whatever it subscribed to, so this refusal is a second line: it refuses
 * exactly the filters that could, and accepts the rest, such as the .NET
 * SDK's PREFIX/<raw client id>/command/notify (one level short of any
 * notification topic), which it subscribes to before KEYNOTIFY and without
 * which its observe call fails. Filters with wildcards above the prefix
 * ("#", "clients/+/...") are left to the broker; the prefix itself stays
 * refused, as nothing lives there. */
static bool ss_protect__foreign_notify_filter(const char *filter, const char *client_id)
{
    static const char prefix[] = SS_NOTIFY_PREFIX "/";
    size_t pl = sizeof prefix - 1;
    if (strncmp(filter, prefix, pl) != 0)
        return strcmp(filter, SS_NOTIFY_PREFIX) == 0;
    const char *s = filter + pl;
    for (int i = 0;; i++) {
        size_t n = strcspn(s, "/");
        if (ss_protect__level_is(s, n, "#"))
            return true; /* matches every topic below what matched so far */
        if (i == 4)
            return false; /* a level beyond the key: no notification topic */
        bool plus = ss_protect__level_is(s, n, "+");
        switch (i) {
        case 0: /* the client id */
            if (!plus && (!ss_protect__level_is_hex(s, n) || ss_protect__level_is_own(s, n, client_id)))
                return false;
            break;
        case 1:
            if (!plus && !ss_protect__level_is(s, n, "command"))
                return false;
            break;
        case 2:
            if (!plus && !ss_protect__level_is(s, n, "notify"))
                return false;
            break;
        default: /* the key */
            if (!plus && !ss_protect__level_is_hex(s, n))
                return false;
            break;
        }
        if (s[n] == '\0')
            return i == 3; /* a whole notification topic, or one level short */
        s += n + 1;
    }
}

/* The filter a subscription stands for: a shared one
 * ($share/GROUP/FILTER) is checked as FILTER, which it matches. */
static const char *ss_protect__unshared(const char *filter)
{
    static const char share[] = "$share/";
    if (strncmp(filter, share, sizeof share - 1) != 0)
        return filter;
    const char *slash = strchr(filter + sizeof share - 1, '/');
    return slash ? slash + 1 : filter;
}

int ss_on_acl_check(int event, void *event_data, void *userdata)
{
    (void)event;
    struct ss_plugin *p = userdata;
    struct mosquitto_evt_acl_check *ed = event_data;
    const char *topic = ed->topic;
    if (topic == NULL)
        return ss_protect__other(p);
    const char *id = mosquitto_client_id(ed->client);
    switch (ed->access) {
    case MOSQ_ACL_READ:
        if (strcmp(topic, SS_REQUEST_TOPIC) == 0 || strcmp(topic, SS_ADMIN_TOPIC) == 0)
            return MOSQ_ERR_ACL_DENIED; /* requests are for the store only */
        break;
    case MOSQ_ACL_WRITE:
        if (strncmp(topic, SS_NOTIFY_PREFIX, sizeof SS_NOTIFY_PREFIX - 1) == 0) {
            ss_log(p, MOSQ_LOG_WARNING, "client %s may not publish to %s", id ? id : "?", topic);
            return MOSQ_ERR_ACL_DENIED;
        }
        break;
    case MOSQ_ACL_SUBSCRIBE:
        if (ss_protect__foreign_notify_filter(ss_protect__unshared(topic), id ? id : "")) {
            ss_log(p, MOSQ_LOG_WARNING, "client %s may not subscribe to %s", id ? id : "?", topic);
            return MOSQ_ERR_ACL_DENIED;
        }
        break;
    default:
        break;
    }
    return ss_protect__other(p);
}

bool ss_authorize(void *ctx, void *caller, enum ss_access access, ss_bytes key, bool quietly)
{
    struct ss_plugin *p = ctx;
    const struct ss_caller *who = caller;
    if (p->acl == NULL)
        return true;
    if (ss_acl_allows(p->acl, who->id, who->username, access, key))
        return true;
    if (quietly) /* a SCAN passing over it: a warning per key flooded the log */
        return false;
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

void ss_other_topics_decide(struct ss_plugin *p, const struct ss_broker_conf *bc, bool at_start)
{
    bool was = p->defer_other_topics;
    bool unknown = p->opt.other_topics == SS_OTHER_TOPICS_AUTO && bc->unreadable > 0;
    /* A file that cannot be read might hold an acl_file line: allowing
     * would override it, so the guess is to defer (when nothing else
     * decides, other topics are then denied, which shows). */
    p->defer_other_topics = p->opt.other_topics == SS_OTHER_TOPICS_DEFER ||
                            (p->opt.other_topics == SS_OTHER_TOPICS_AUTO &&
                             (bc->has_acl_file || bc->other_plugins > 0 || bc->unreadable > 0));
    if (!p->opt.topic_protection)
        return; /* no ACL check of the plugin's: the broker decides alone */
    if (unknown)
        ss_log(p, MOSQ_LOG_WARNING, "cannot read the broker's configuration file %s%s: other topics are left to "
               "the acl_file and other plugins, which deny them when there are none; set "
               "plugin_opt_other_topics allow or defer to say which", bc->unreadable_path,
               bc->unreadable > 1 ? " (and others)" : "");
    if (at_start || was != p->defer_other_topics)
        ss_log(p, MOSQ_LOG_NOTICE, "topic protection on; other topics are %s",
               p->defer_other_topics ? "left to the acl_file and other plugins" : "allowed");
}

int ss_on_reload(int event, void *event_data, void *userdata)
{
    (void)event;
    (void)event_data;
    struct ss_plugin *p = userdata;
    ss_acl_reload(p);
    /* The broker read its configuration again: an acl_file may have come
     * or gone. */
    struct ss_broker_conf bc;
    ss_read_broker_conf(&bc);
    ss_other_topics_decide(p, &bc, false);
    return MOSQ_ERR_SUCCESS;
}
