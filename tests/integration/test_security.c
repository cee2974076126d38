/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_security.c - topic protection and key authorization through a
 * real broker, with and without the broker's own acl_file. */
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

static const char *NOTIFY = "clients/statestore/v1/" GUID;

/* A spy subscribed to '#' sees ordinary traffic but no requests; nobody
 * can publish into the notification topics or subscribe to others'. */
static void check_protection(struct broker *b, bool expect_other_ok)
{
    struct client spy, c;
    client_connect(&spy, b->port, "spy", false);
    ASSERT_TRUE(client_subscribe_rc(&spy, "#") < 0x80);
    char r[64];
    client_connect_rr(&c, b->port, "user1", r, sizeof r);
    struct msg *m = request(&c, r, "1", NULL, NULL, W("SET", "secret", "value"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_EQ(client_publish(&c, "app/data", "hello", 5, 1, false, NULL), 0);
    int requests = 0, answers = 0, other = 0;
    while ((m = client_wait(&spy, 300)) != NULL) {
        if (strcmp(m->topic, REQ_TOPIC) == 0)
            requests++;
        else if (strcmp(m->topic, r) == 0)
            answers++;
        else if (strcmp(m->topic, "app/data") == 0)
            other++;
    }
    ASSERT_EQ(requests, 0);
    ASSERT_EQ(other, expect_other_ok ? 1 : 0);
    ASSERT_EQ(answers, 0); /* an answer goes to its requester alone */
    /* Spoofed notification. */
    char spoof[256];
    snprintf(spoof, sizeof spoof, "%s/7573657231/command/notify/6B", NOTIFY);
    ASSERT_EQ(client_publish(&spy, spoof, "x", 1, 1, false, NULL), 0);
    ASSERT_EQ(client_wait_puback(&spy, 2000), MQTT_RC_NOT_AUTHORIZED);
    /* Subscriptions: own notification topics yes, others' no. */
    char own[256], other_filter[256];
    snprintf(own, sizeof own, "%s/7573657231/command/notify/#", NOTIFY); /* HEX("user1") */
    snprintf(other_filter, sizeof other_filter, "%s/+/command/notify/#", NOTIFY);
    ASSERT_TRUE(client_subscribe_rc(&c, own) < 0x80);
    ASSERT_EQ(client_subscribe_rc(&c, other_filter), MQTT_RC_NOT_AUTHORIZED);
    ASSERT_EQ(client_subscribe_rc(&spy, own), MQTT_RC_NOT_AUTHORIZED);
    ASSERT_EQ(client_subscribe_rc(&spy, NOTIFY), MQTT_RC_NOT_AUTHORIZED);
    /* Shared subscriptions are checked as the filters they stand for. */
    char shared[300];
    snprintf(shared, sizeof shared, "$share/g/%s", other_filter);
    ASSERT_EQ(client_subscribe_rc(&c, shared), MQTT_RC_NOT_AUTHORIZED);
    snprintf(shared, sizeof shared, "$share/g/%s", own);
    ASSERT_EQ(client_subscribe_rc(&spy, shared), MQTT_RC_NOT_AUTHORIZED);
    snprintf(shared, sizeof shared, "$share/g/%s", own);
    ASSERT_TRUE(client_subscribe_rc(&c, shared) < 0x80);
    client_close(&spy);
    client_close(&c);
}

TEST(security_topic_protection_without_acl_file)
{
    struct broker b = {0};
    broker_start(&b);
    check_protection(&b, true);
    ASSERT_TRUE(broker_log_has(&b, "other topics are allowed"));
    broker_stop(&b);
}

TEST(security_topic_protection_with_acl_file)
{
    /* The broker's acl_file allows everything: the plugin still protects
     * its topics. */
    char acl[600];
    snprintf(acl, sizeof acl, "%s/broker.acl", test_tmpdir());
    FILE *f = fopen(acl, "w");
    fputs("topic readwrite #\n", f);
    fclose(f);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "acl_file %s\n", acl);
    broker_start(&b);
    check_protection(&b, true);
    ASSERT_TRUE(broker_log_has(&b, "other topics are left to the acl_file"));
    broker_stop(&b);
    /* An acl_file that does not grant app/data: the plugin does not
     * override the broker's denial. */
    f = fopen(acl, "w");
    fputs("topic readwrite statestore/#\ntopic readwrite clients/#\n", f);
    fclose(f);
    broker_start(&b);
    check_protection(&b, false);
    broker_stop(&b);
}

/* An answer goes into the requesting client's own session, on its
 * response topic: whoever else subscribes to that topic hears nothing,
 * and a request cannot make the plugin publish where its client may not
 * (the plugin's publications pass no ACL check). */
TEST(security_answers_go_only_to_the_requester)
{
    char acl[600];
    snprintf(acl, sizeof acl, "%s/broker.acl", test_tmpdir());
    FILE *f = fopen(acl, "w");
    ASSERT_TRUE(f != NULL);
    fputs("topic readwrite clients/#\n"
          "topic write " REQ_TOPIC "\n"
          "topic read devices/door/command\n", f);
    fclose(f);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "acl_file %s\n", acl);
    broker_start(&b);
    struct client spy, door, victim, mallory;
    client_connect(&spy, b.port, "spy", false);
    client_subscribe(&spy, "clients/victim/resp");
    client_connect(&door, b.port, "door", false);
    client_subscribe(&door, "devices/door/command");
    char rv[64];
    client_connect_rr(&victim, b.port, "victim", rv, sizeof rv);
    struct msg *m = request(&victim, rv, "1", NULL, NULL, W("SET", "k", "secret"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&victim, rv, "2", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$6\r\nsecret\r\n");
    ASSERT_EQ(client_drain(&spy, 300), 0);
    /* A response topic its client may not publish to: the answer reaches
     * the requester alone, which need not even subscribe to it. */
    client_connect(&mallory, b.port, "mallory", false);
    ASSERT_TRUE(client_publish(&mallory, "devices/door/command", "open", 4, 1, false, NULL) == MOSQ_ERR_SUCCESS);
    m = request(&mallory, "devices/door/command", "3", NULL, NULL, W("GET", "k"));
    ASSERT_TRUE(m != NULL);
    ASSERT_STR(m->topic, strlen(m->topic), "devices/door/command");
    PAYLOAD(m, "$6\r\nsecret\r\n");
    ASSERT_EQ(client_drain(&door, 300), 0);
    client_close(&spy);
    client_close(&door);
    client_close(&victim);
    client_close(&mallory);
    broker_stop(&b);
}

/* The plugin learns whether the broker has an acl_file by reading the
 * broker's configuration; Mosquitto reads it as root, then drops its
 * privileges before it loads the plugin. A file the plugin cannot read
 * might name an acl_file: other topics are deferred to it, never allowed
 * over it, and the log says so. (Run as root, as the partition tests.) */
TEST(security_other_topics_deferred_when_the_broker_config_cannot_be_read)
{
    ASSERT_EQ(getuid(), 0);
    struct passwd *pw = getpwnam("mosquitto");
    ASSERT_TRUE(pw != NULL);
    const char *dir = test_tmpdir();
    /* The broker, once it is the mosquitto user, reads the plugin, the
     * acl_file and its data directory here. */
    ASSERT_EQ(chown(dir, pw->pw_uid, pw->pw_gid), 0);
    ASSERT_EQ(chmod(dir, 0755), 0);
    struct broker b = {0};
    snprintf(b.plugin, sizeof b.plugin, "%s/statestore.so", dir);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", getenv("SS_PLUGIN"), b.plugin);
    ASSERT_EQ(system(cmd), 0);
    char acl[600], confd[600], secret[700];
    snprintf(acl, sizeof acl, "%s/broker.acl", dir);
    write_text(acl, "topic readwrite statestore/#\ntopic readwrite clients/#\n");
    snprintf(confd, sizeof confd, "%s/conf.d", dir);
    ASSERT_EQ(mkdir(confd, 0755), 0);
    snprintf(secret, sizeof secret, "%s/secret.conf", confd);
    char line[700];
    snprintf(line, sizeof line, "acl_file %s\n", acl);
    write_text(secret, line);
    ASSERT_EQ(chmod(secret, 0600), 0); /* root's alone, as for a bridge's password */
    snprintf(b.user, sizeof b.user, "mosquitto");
    snprintf(b.extra, sizeof b.extra, "include_dir %s\n", confd);
    broker_start(&b);
    /* app/data is not in the acl_file: denied, not allowed by the plugin. */
    check_protection(&b, false);
    char want[1000];
    snprintf(want, sizeof want, "cannot read the broker's configuration file %s: other topics are left to the "
             "acl_file and other plugins, which deny them when there are none; set plugin_opt_other_topics "
             "allow or defer to say which", secret);
    ASSERT_TRUE(broker_log_has(&b, want));
    ASSERT_TRUE(broker_log_has(&b, "other topics are left to the acl_file"));
    broker_stop(&b);
    /* Readable: the acl_file is found, and nothing is said. */
    ASSERT_EQ(chmod(secret, 0644), 0);
    broker_start(&b);
    check_protection(&b, false);
    ASSERT_TRUE(!broker_log_has(&b, "cannot read the broker's configuration"));
    ASSERT_TRUE(broker_log_has(&b, "other topics are left to the acl_file"));
    broker_stop(&b);
}

/* An acl_file added to the broker's configuration and loaded on SIGHUP
 * decides other topics from then on: the plugin reads the configuration
 * again on a reload. */
TEST(security_other_topics_follow_an_acl_file_added_on_reload)
{
    char acl[600], confd[600], extra[700];
    snprintf(acl, sizeof acl, "%s/broker.acl", test_tmpdir());
    write_text(acl, "topic readwrite statestore/#\ntopic readwrite clients/#\n");
    snprintf(confd, sizeof confd, "%s/conf.d", test_tmpdir());
    ASSERT_EQ(mkdir(confd, 0755), 0);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "include_dir %s\n", confd);
    broker_start(&b);
    check_protection(&b, true);
    ASSERT_TRUE(broker_log_has(&b, "other topics are allowed"));
    snprintf(extra, sizeof extra, "%s/acl.conf", confd);
    char line[700];
    snprintf(line, sizeof line, "acl_file %s\n", acl);
    write_text(extra, line);
    ASSERT_EQ(kill(b.pid, SIGHUP), 0);
    for (int i = 0; i < 100 && !broker_log_has(&b, "other topics are left to the acl_file"); i++)
        usleep(20 * 1000);
    ASSERT_TRUE(broker_log_has(&b, "other topics are left to the acl_file"));
    check_protection(&b, false);
    broker_stop(&b);
}

TEST(security_topic_protection_can_be_turned_off)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_topic_protection false\n");
    broker_start(&b);
    struct client spy, c;
    client_connect(&spy, b.port, "spy", false);
    client_subscribe(&spy, "#");
    char r[64];
    client_connect_rr(&c, b.port, "user1", r, sizeof r);
    request(&c, r, "1", NULL, NULL, W("GET", "k"));
    int requests = 0;
    struct msg *m;
    while ((m = client_wait(&spy, 300)) != NULL)
        requests += strcmp(m->topic, REQ_TOPIC) == 0;
    ASSERT_EQ(requests, 1);
    /* ...and answers are ordinary publications to their response topic,
     * which anyone subscribed to it receives. */
    m = request(&c, r, "2", NULL, NULL, W("GET", "k"));
    PAYLOAD(m, "$-1\r\n");
    int answers = 0;
    while ((m = client_wait(&spy, 300)) != NULL)
        answers += strcmp(m->topic, r) == 0;
    ASSERT_EQ(answers, 1);
    client_close(&spy);
    client_close(&c);
    broker_stop(&b);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs(text, f);
    fclose(f);
}

static void connect_user(struct client *c, int port, const char *id, const char *user, char *resp,
                         size_t n)
{
    client_connect_user(c, port, id, false, user, "pw");
    snprintf(resp, n, "clients/%s/resp", id);
    client_subscribe(c, resp);
}

/* New rules in acl, loaded on SIGHUP: waits until the log says so for
 * the times-th time ("N rules"). */
static void reload_rules(struct broker *b, const char *acl, const char *rules, const char *said, int times)
{
    write_file(acl, rules);
    kill(b->pid, SIGHUP);
    for (int i = 0; i < 200 && broker_log_count(b, said) < times; i++)
        usleep(10 * 1000);
    ASSERT_EQ(broker_log_count(b, said), times);
}

/* A KEYNOTIFY registration is told of a change only while its client may
 * read the key: rules reloaded to deny it stop its notifications, rules
 * that allow it again resume them (by its username, kept with it). */
TEST(security_keynotify_follows_the_rules_reloaded)
{
    char acl[600];
    snprintf(acl, sizeof acl, "%s/keys.acl", test_tmpdir());
    write_file(acl, "user alice readwrite *\nuser bob read watched/*\n");
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_acl_file %s\n", acl);
    broker_start(&b);
    struct client alice, bob;
    char ra[64], rb[64];
    connect_user(&alice, b.port, "alice-dev", "alice", ra, sizeof ra);
    connect_user(&bob, b.port, "bob-dev", "bob", rb, sizeof rb);
    struct msg *m = request(&bob, rb, "1", NULL, NULL, W("KEYNOTIFY", "watched/k"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&alice, ra, "2", NULL, NULL, W("SET", "watched/k", "1"));
    PAYLOAD(m, "+OK\r\n");
    m = client_wait(&bob, 2000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\n1\r\n");
    reload_rules(&b, acl, "user alice readwrite *\n", "1 rules", 1);
    m = request(&alice, ra, "3", NULL, NULL, W("SET", "watched/k", "2"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&alice, ra, "4", NULL, NULL, W("DEL", "watched/k"));
    PAYLOAD(m, ":1\r\n");
    ASSERT_EQ(client_drain(&bob, 300), 0);
    reload_rules(&b, acl, "user alice readwrite *\nuser bob read watched/*\n", "2 rules", 2);
    m = request(&alice, ra, "5", NULL, NULL, W("SET", "watched/k", "3"));
    PAYLOAD(m, "+OK\r\n");
    m = client_wait(&bob, 2000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\n3\r\n");
    /* Denied again, bob can still end his registration (STOP reveals
     * nothing): allowed once more, he is told nothing. */
    reload_rules(&b, acl, "user alice readwrite *\n", "1 rules", 2);
    m = request(&bob, rb, "6", NULL, NULL, W("KEYNOTIFY", "watched/k", "STOP"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&bob, rb, "7", NULL, NULL, W("KEYNOTIFY", "watched/k"));
    PAYLOAD(m, "-ERR not authorized\r\n");
    reload_rules(&b, acl, "user alice readwrite *\nuser bob read watched/*\n", "2 rules", 3);
    m = request(&alice, ra, "8", NULL, NULL, W("SET", "watched/k", "4"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_EQ(client_drain(&bob, 300), 0);
    client_close(&alice);
    client_close(&bob);
    broker_stop(&b);
}

TEST(security_key_authorization_and_reload)
{
    char acl[600];
    snprintf(acl, sizeof acl, "%s/keys.acl", test_tmpdir());
    write_file(acl, "user alice readwrite *\n"
                    "any read public/*\n"
                    "any readwrite own/%c/*\n");
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_acl_file %s\n", acl);
    broker_start(&b);
    ASSERT_TRUE(broker_log_has(&b, "3 rules"));
    struct client alice, anon;
    char ra[64], rn[64];
    connect_user(&alice, b.port, "alice-dev", "alice", ra, sizeof ra);
    client_connect_rr(&anon, b.port, "anon1", rn, sizeof rn);
    struct msg *m = request(&alice, ra, "1", NULL, NULL, W("SET", "public/x", "1"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&alice, ra, "2", NULL, NULL, W("SET", "private", "2"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&anon, rn, "3", NULL, NULL, W("GET", "public/x"));
    PAYLOAD(m, "$1\r\n1\r\n");
    m = request(&anon, rn, "4", NULL, NULL, W("SET", "public/x", "9"));
    PAYLOAD(m, "-ERR not authorized\r\n");
    /* A denial never says whether the key exists. */
    m = request(&anon, rn, "5", NULL, NULL, W("GET", "private"));
    PAYLOAD(m, "-ERR not authorized\r\n");
    ASSERT_TRUE(msg_user(m, "__ts") == NULL);
    m = request(&anon, rn, "6", NULL, NULL, W("GET", "private-absent"));
    PAYLOAD(m, "-ERR not authorized\r\n");
    m = request(&anon, rn, "7", NULL, NULL, W("KEYNOTIFY", "private"));
    PAYLOAD(m, "-ERR not authorized\r\n");
    m = request(&anon, rn, "8", NULL, NULL, W("SET", "own/anon1/state", "mine"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&anon, rn, "9", NULL, NULL, W("SET", "own/alice-dev/state", "theirs"));
    PAYLOAD(m, "-ERR not authorized\r\n");
    ASSERT_TRUE(broker_log_has(&b, "client anon1 (user -) not authorized to read"));
    /* A SCAN lists only the keys its client may read, and passes over
     * the others without a warning each (a listing is no refusal). */
    int warned = broker_log_count(&b, "not authorized");
    m = request(&anon, rn, "s", NULL, NULL, W("SCAN", "*"));
    PAYLOAD(m, "*1\r\n*2\r\n$15\r\nown/anon1/state\r\n$8\r\npublic/x\r\n");
    ASSERT_EQ(broker_log_count(&b, "not authorized"), warned);
    /* New rules on SIGHUP, without a restart. */
    write_file(acl, "any readwrite *\n");
    kill(b.pid, SIGHUP);
    for (int i = 0; i < 200 && !broker_log_has(&b, "1 rules"); i++)
        usleep(10000);
    m = request(&anon, rn, "a", NULL, NULL, W("GET", "private"));
    PAYLOAD(m, "$1\r\n2\r\n");
    /* A broken file on reload keeps the rules in force, and says why. */
    write_file(acl, "any readwrite *\nnonsense here\n");
    kill(b.pid, SIGHUP);
    for (int i = 0; i < 200 && !broker_log_has(&b, "keeping the previous rules"); i++)
        usleep(10000);
    ASSERT_TRUE(broker_log_has(&b, "line 2: a rule starts with user NAME, client ID or any"));
    m = request(&anon, rn, "b", NULL, NULL, W("GET", "private"));
    PAYLOAD(m, "$1\r\n2\r\n");
    client_close(&alice);
    client_close(&anon);
    broker_stop(&b);
    /* A broken file at startup stops the broker. */
    struct broker bad = {0};
    snprintf(bad.extra, sizeof bad.extra, "plugin_opt_acl_file %s\n", acl);
    ASSERT_TRUE(broker_start_fails(&bad) != 0);
    ASSERT_TRUE(broker_log_has(&bad, "line 2"));
}

/* The .NET SDK subscribes to PREFIX/<raw client id>/command/notify (raw,
 * not HEX; no wildcard: it can never match) before KEYNOTIFY, and its
 * observe call fails if that is refused. Every filter that cannot match
 * another client's notification topics is accepted, those that could are
 * refused, and notifications still reach only their own client. */
TEST(security_dotnet_notify_subscription)
{
    struct broker b = {0};
    broker_start(&b);
    struct client net, spy;
    char rn[64], rs[64], f[512];
    client_connect_rr(&net, b.port, "dotnet-client", rn, sizeof rn);
    client_connect_rr(&spy, b.port, "spy", rs, sizeof rs);
    /* The exact .NET filter, then KEYNOTIFY. */
    snprintf(f, sizeof f, "%s/dotnet-client/command/notify", NOTIFY);
    ASSERT_TRUE(client_subscribe_rc(&net, f) < 0x80);
    struct msg *m = request(&net, rn, "1", NULL, NULL, W("KEYNOTIFY", "k"));
    PAYLOAD(m, "+OK\r\n");
    /* The spy may subscribe to the same string (it matches nothing) and to
     * '#', but to nothing that could match the .NET client's notifications:
     * HEX("dotnet-client") is 646F746E65742D636C69656E74. */
    ASSERT_TRUE(client_subscribe_rc(&spy, f) < 0x80);
    ASSERT_TRUE(client_subscribe_rc(&spy, "#") < 0x80);
    static const char *const refused[] = {
        "/646F746E65742D636C69656E74/command/notify/6B",
        "/646F746E65742D636C69656E74/command/notify/+",
        "/646F746E65742D636C69656E74/command/#",
        "/646F746E65742D636C69656E74/+/+/+",
        "/646F746E65742D636C69656E74/#",
        "/+/command/notify/6B",
        "/+/+/+/+",
        "/#",
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(f, sizeof f, "%s%s", NOTIFY, refused[i]);
        ASSERT_EQ(client_subscribe_rc(&spy, f), MQTT_RC_NOT_AUTHORIZED);
    }
    /* Filters no notification topic can match: not upper-case hex pairs, a
     * level short, a level too many, a key that is no HEX(key). */
    static const char *const accepted[] = {
        "/dotnet-client/command/notify/#",
        "/646f746e65742d636c69656e74/command/notify/+",
        "/646F746E65742D636C69656E7/command/notify/+",
        "/646F746E65742D636C69656E74/command/notify",
        "/+/command/notify",
        "/646F746E65742D636C69656E74/command/notify/6B/x",
        "/+/command/notify/k",
        "/+/command/invoke/+",
        "/737079/command/notify/#", /* HEX("spy"): its own */
        "//command/notify/+",        /* no client id is empty (the broker names those without) */
        "/+/command/notify/",        /* nor is any key */
    };
    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++) {
        snprintf(f, sizeof f, "%s%s", NOTIFY, accepted[i]);
        ASSERT_TRUE(client_subscribe_rc(&spy, f) < 0x80);
    }
    /* A change: the .NET client is told, on its HEX topic; the spy, with all
     * those subscriptions, sees only its own answer. */
    m = request(&spy, rs, "2", NULL, NULL, W("SET", "k", "v"));
    PAYLOAD(m, "+OK\r\n");
    m = client_wait(&net, 2000);
    ASSERT_TRUE(m != NULL);
    snprintf(f, sizeof f, "%s/646F746E65742D636C69656E74/command/notify/6B", NOTIFY);
    ASSERT_MEM(m->topic, strlen(m->topic), f, strlen(f));
    PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n");
    int foreign = 0;
    while ((m = client_wait(&spy, 300)) != NULL)
        if (strncmp(m->topic, NOTIFY, strlen(NOTIFY)) == 0)
            foreign++;
    ASSERT_EQ(foreign, 0);
    client_close(&net);
    client_close(&spy);
    /* Its configuration was read whole: no warning that it could not be. */
    ASSERT_TRUE(!broker_log_has(&b, "cannot read the broker's configuration file"));
    broker_stop(&b);
}
