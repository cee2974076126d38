/* test_security.c - topic protection and key authorization through a
 * real broker, with and without the broker's own acl_file. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
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
    (void)answers; /* response topics are ordinary topics: the broker's ACL decides */
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
