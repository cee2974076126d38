/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_notify.c - KEYNOTIFY through a real broker: topics, payloads,
 * versions, delivery without subscription, disconnects, expiry. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"


/* HEX("watcher") and HEX("k\x01y") in upper case. */
#define WATCHER_TOPIC(keyhex) "clients/statestore/v1/" GUID "/77617463686572/command/notify/" keyhex

TEST(plugin_notifications_exact)
{
    struct broker b = {0};
    broker_start(&b);
    struct client w, s;
    char wr[64], sr[64];
    client_connect_rr(&w, b.port, "watcher", wr, sizeof wr);
    client_connect_rr(&s, b.port, "setter", sr, sizeof sr);
    /* The watcher registers, and has no subscription for notifications. */
    struct msg *m = request(&w, wr, "n1", NULL, NULL, W("KEYNOTIFY", "k\x01y"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&s, sr, "s1", NULL, NULL, W("SET", "k\x01y", "v\r\n1"));
    PAYLOAD(m, "+OK\r\n");
    char version[128];
    snprintf(version, sizeof version, "%s", msg_user(m, "__ts"));
    m = client_wait(&w, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_STR(m->topic, strlen(m->topic), WATCHER_TOPIC("6B0179"));
    PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$4\r\nv\r\n1\r\n");
    ASSERT_EQ(m->qos, 1);
    ASSERT_TRUE(m->corr == NULL);
    ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), version, strlen(version));
    /* DEL: DELETE with the removed value's version. */
    m = request(&s, sr, "s2", NULL, NULL, W("DEL", "k\x01y"));
    PAYLOAD(m, ":1\r\n");
    m = client_wait(&w, 2000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    ASSERT_MEM(msg_user(m, "__ts"), strlen(msg_user(m, "__ts")), version, strlen(version));
    /* Failed conditions and deletes of absent keys notify nobody. */
    request(&s, sr, "s3", NULL, NULL, W("DEL", "k\x01y"));
    request(&s, sr, "s4", NULL, NULL, W("SET", "k\x01y", "a"));
    request(&s, sr, "s5", NULL, NULL, W("SET", "k\x01y", "b", "NX"));
    request(&s, sr, "s6", NULL, NULL, W("VDEL", "k\x01y", "zzz"));
    ASSERT_EQ(client_drain(&w, 300), 1); /* only the SET of "a" */
    PAYLOAD(&w.last, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\na\r\n");
    client_close(&w);
    client_close(&s);
    broker_stop(&b);
}

/* A notification topic of exactly MQTT's 65,535 bytes is used; a key
 * whose topic would be longer cannot be observed (the quota answer).
 * The topic: 59 bytes of prefix and GUID with its '/', HEX of a 100-byte
 * client id, "/command/notify/", HEX of the key. */
TEST(plugin_keynotify_topic_at_mqtts_limit)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_max_key_length 32700\n");
    broker_start(&b);
    char id[101], wr[160];
    memset(id, 'c', 100);
    id[100] = '\0';
    struct client w;
    client_connect_rr(&w, b.port, id, wr, sizeof wr);
    enum { FITS = (65535 - 59 - 200 - 16) / 2 }; /* 32630 */
    static char key[FITS + 2];
    memset(key, 'k', FITS + 1);
    key[FITS + 1] = '\0';
    struct msg *m = request(&w, wr, "n2", NULL, NULL, W("KEYNOTIFY", key)); /* one byte more */
    PAYLOAD(m, "-ERR the quota has been exceeded\r\n");
    key[FITS] = '\0';
    m = request(&w, wr, "n1", NULL, NULL, W("KEYNOTIFY", key));
    PAYLOAD(m, "+OK\r\n");
    m = request(&w, wr, "s1", NULL, NULL, W("SET", key, "v"));
    PAYLOAD(m, "+OK\r\n");
    m = client_wait(&w, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_EQ(strlen(m->topic), 65535);
    ASSERT_TRUE(strncmp(m->topic + 65535 - 4, "6B6B", 4) == 0);
    PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n");
    client_close(&w);
    broker_stop(&b);
}

TEST(plugin_notifications_observers_own_changes_and_disconnect)
{
    struct broker b = {0};
    broker_start(&b);
    struct client o1, o2, s;
    char r1[64], r2[64], rs[64];
    client_connect_rr(&o1, b.port, "obs1", r1, sizeof r1);
    client_connect_rr(&o2, b.port, "obs2", r2, sizeof r2);
    client_connect_rr(&s, b.port, "self", rs, sizeof rs);
    request(&o1, r1, "a", NULL, NULL, W("KEYNOTIFY", "shared"));
    request(&o2, r2, "a", NULL, NULL, W("KEYNOTIFY", "shared"));
    request(&s, rs, "a", NULL, NULL, W("KEYNOTIFY", "shared"));
    /* The setter observes too: it is told of its own change. */
    struct msg *m = request(&s, rs, "b", NULL, NULL, W("SET", "shared", "1"));
    ASSERT_TRUE(m != NULL);
    bool got_answer = strcmp(m->topic, rs) == 0;
    m = client_wait(&s, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_TRUE(got_answer || strcmp(m->topic, rs) == 0);
    ASSERT_EQ(client_drain(&o1, 300), 1);
    ASSERT_EQ(client_drain(&o2, 300), 1);
    /* obs1 goes away and comes back with the same id and a persistent
     * session: its registration is gone, nothing was queued for it. */
    client_close(&o1);
    request(&s, rs, "c", NULL, NULL, W("SET", "shared", "2"));
    client_drain(&s, 100);
    ASSERT_EQ(client_drain(&o2, 300), 1);
    client_connect(&o1, b.port, "obs1", false);
    ASSERT_EQ(client_drain(&o1, 300), 0);
    request(&s, rs, "d", NULL, NULL, W("SET", "shared", "3"));
    ASSERT_EQ(client_drain(&o1, 300), 0);
    ASSERT_EQ(client_drain(&o2, 300), 1);
    /* STOP ends notifications. */
    m = request(&o2, r2, "e", NULL, NULL, W("KEYNOTIFY", "shared", "STOP"));
    PAYLOAD(m, "+OK\r\n");
    request(&s, rs, "f", NULL, NULL, W("SET", "shared", "4"));
    ASSERT_EQ(client_drain(&o2, 300), 0);
    client_close(&o1);
    client_close(&o2);
    client_close(&s);
    broker_stop(&b);
}

TEST(plugin_takeover_drops_registrations)
{
    struct broker b = {0};
    broker_start(&b);
    struct client old, s;
    char ro[64], rs[64];
    client_connect_rr(&old, b.port, "twin", ro, sizeof ro);
    client_connect_rr(&s, b.port, "writer", rs, sizeof rs);
    request(&old, ro, "a", NULL, NULL, W("KEYNOTIFY", "t"));
    /* A second connection with the same id takes over. */
    struct client fresh;
    client_connect(&fresh, b.port, "twin", false);
    request(&s, rs, "b", NULL, NULL, W("SET", "t", "1"));
    ASSERT_EQ(client_drain(&fresh, 300), 0);
    mosquitto_destroy(old.m); /* it was disconnected by the takeover */
    old.m = NULL;
    client_close(&old);
    client_close(&fresh);
    client_close(&s);
    broker_stop(&b);
}

/* MQTT resends a request only after a reconnect, and the disconnect
 * dropped the client's registrations: a resent KEYNOTIFY registers again
 * (answered as at first), or the client would believe it observes a key
 * it is told nothing of. A resent STOP keeps its first answer. */
TEST(plugin_keynotify_resent_after_a_reconnect_registers_again)
{
    struct broker b = {0};
    broker_start(&b);
    struct client w, s;
    char wr[64], sr[64];
    client_connect_rr(&w, b.port, "watcher", wr, sizeof wr);
    client_connect_rr(&s, b.port, "setter", sr, sizeof sr);
    /* A resend is the same request: the same properties, __ts too. */
    char ts[64];
    snprintf(ts, sizeof ts, "%llu:0:watcher", (unsigned long long)now_ms());
    struct msg *m = request(&w, wr, "kn", ts, NULL, W("KEYNOTIFY", "k\x01y"));
    PAYLOAD(m, "+OK\r\n");
    client_close(&w);
    client_connect_rr(&w, b.port, "watcher", wr, sizeof wr);
    m = request(&w, wr, "kn", ts, NULL, W("KEYNOTIFY", "k\x01y"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&s, sr, "s1", NULL, NULL, W("SET", "k\x01y", "v"));
    PAYLOAD(m, "+OK\r\n");
    m = client_wait(&w, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_STR(m->topic, strlen(m->topic), WATCHER_TOPIC("6B0179"));
    PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n");
    /* Resent on one connection: one registration, one notification. */
    m = request(&w, wr, "kn", ts, NULL, W("KEYNOTIFY", "k\x01y"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&s, sr, "s2", NULL, NULL, W("SET", "k\x01y", "w"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_EQ(client_drain(&w, 300), 1);
    PAYLOAD(&w.last, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nw\r\n");
    /* STOP resent after a reconnect: "+OK" again, not ":0" (a STOP of
     * nothing, as a new one answers). */
    m = request(&w, wr, "st", ts, NULL, W("KEYNOTIFY", "k\x01y", "STOP"));
    PAYLOAD(m, "+OK\r\n");
    client_close(&w);
    client_connect_rr(&w, b.port, "watcher", wr, sizeof wr);
    m = request(&w, wr, "st", ts, NULL, W("KEYNOTIFY", "k\x01y", "STOP"));
    PAYLOAD(m, "+OK\r\n");
    m = request(&w, wr, "st2", ts, NULL, W("KEYNOTIFY", "k\x01y", "STOP"));
    PAYLOAD(m, ":0\r\n");
    m = request(&s, sr, "s3", NULL, NULL, W("SET", "k\x01y", "x"));
    PAYLOAD(m, "+OK\r\n");
    ASSERT_EQ(client_drain(&w, 300), 0);
    client_close(&w);
    client_close(&s);
    broker_stop(&b);
}

TEST(plugin_expiry_notifies_promptly)
{
    struct broker b = {0};
    broker_start(&b);
    struct client w;
    char rw[64];
    client_connect_rr(&w, b.port, "exp", rw, sizeof rw);
    request(&w, rw, "a", NULL, NULL, W("KEYNOTIFY", "soon"));
    uint64_t worst = 0;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = now_ms();
        struct msg *m = request(&w, rw, "b", NULL, NULL, W("SET", "soon", "x", "PX", "300"));
        PAYLOAD(m, "+OK\r\n");
        /* The SET notification first. */
        m = client_wait(&w, 2000);
        ASSERT_TRUE(m != NULL);
        m = client_wait(&w, 3000);
        uint64_t t1 = now_ms();
        ASSERT_TRUE(m != NULL);
        PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
        /* Deadline is at most t0 + 300 (set after t0); the delay is
         * measured from there, so it is an upper bound. */
        uint64_t late = t1 - t0 > 300 ? t1 - t0 - 300 : 0;
        if (late > worst)
            worst = late;
    }
    fprintf(stderr, "  expiry DELETE arrived at most %llu ms after the deadline\n",
            (unsigned long long)worst);
    /* The bound is 100 ms; the test allows scheduling noise on a shared
     * machine and reports the figure. */
    ASSERT_TRUE(worst <= 250);
    client_close(&w);
    broker_stop(&b);
}

/* The DELETE of an expiry on an idle broker, with deadlines that do not
 * fall on the broker's 100 ms turns (PX 300 does: the SET itself starts
 * a turn, so plugin_expiry_notifies_promptly measures a few ms). These
 * deadlines fall 10 to 40 ms into a turn: waiting for the next turn
 * would make every DELETE 60 to 90 ms late. The median is asserted, so
 * that one round slowed by the machine does not fail the test. */
TEST(plugin_expiry_notifies_promptly_off_the_beat)
{
    struct broker b = {0};
    broker_start(&b);
    struct client w;
    char rw[64];
    client_connect_rr(&w, b.port, "exp2", rw, sizeof rw);
    request(&w, rw, "a", NULL, NULL, W("KEYNOTIFY", "soon"));
    static const char *const px[] = {"110", "220", "330", "140", "210", "320", "130", "240", "115"};
    enum { ROUNDS = sizeof px / sizeof px[0] };
    uint64_t late[ROUNDS];
    for (size_t round = 0; round < ROUNDS; round++) {
        char corr[16];
        snprintf(corr, sizeof corr, "b%zu", round);
        uint64_t t1 = now_ms(); /* the deadline is at most t1 + PX */
        struct msg *m = request(&w, rw, corr, NULL, NULL, W("SET", "soon", "x", "PX", px[round]));
        PAYLOAD(m, "+OK\r\n");
        m = client_wait(&w, 2000); /* the SET notification */
        ASSERT_TRUE(m != NULL);
        m = client_wait(&w, 3000);
        uint64_t t2 = now_ms();
        ASSERT_TRUE(m != NULL);
        PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
        uint64_t ms = (uint64_t)atoi(px[round]);
        late[round] = t2 - t1 > ms ? t2 - t1 - ms : 0;
    }
    for (size_t i = 1; i < ROUNDS; i++) /* sorted, to take the median */
        for (size_t j = i; j > 0 && late[j - 1] > late[j]; j--) {
            uint64_t t = late[j];
            late[j] = late[j - 1];
            late[j - 1] = t;
        }
    fprintf(stderr, "  off the beat: DELETE at most %llu ms after the deadline (median of %d), %llu at worst\n",
            (unsigned long long)late[ROUNDS / 2], (int)ROUNDS, (unsigned long long)late[ROUNDS - 1]);
    ASSERT_TRUE(late[ROUNDS / 2] <= 40);
    /* The worst round only bounds a stall: on etcd each DELETE is a Txn
     * through Raft, whose fsyncs share the disk with whatever else the
     * machine writes (CI saw one round at 647 ms while the sanitizer
     * builds ran beside it; the median was 1 ms). */
    ASSERT_TRUE(late[ROUNDS - 1] <= 1000);
    client_close(&w);
    broker_stop(&b);
}

/* A client registered for a key when a SET of it runs is told of it, even
 * if its KEYNOTIFY ... STOP runs right after in the same batch (as it
 * does when requests queue behind a commit: fsync always). PROTOCOL.md
 * §6: every applied SET is told to each client registered for its key.
 * The STOP holds for what comes after it. (On etcd, with the watch held
 * back on purpose: cluster_stop_waits_for_the_watch_to_tell_earlier_changes.) */
TEST(plugin_stop_after_a_set_in_one_batch_still_notifies_the_set)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_fsync always\n");
    broker_start(&b);
    struct client w;
    char rw[64];
    client_connect_rr(&w, b.port, "stopper", rw, sizeof rw);
    for (int round = 0; round < 3; round++) {
        ASSERT_REPLY(request(&w, rw, "kn", NULL, NULL, W("KEYNOTIFY", "lk")), "+OK\r\n");
        /* The first SET's commit is in flight while the next two arrive. */
        request_send(&w, rw, "o", NULL, NULL, W("SET", "other", "x"));
        request_send(&w, rw, "s", NULL, NULL, W("SET", "lk", "v"));
        request_send(&w, rw, "t", NULL, NULL, W("KEYNOTIFY", "lk", "STOP"));
        int notified = 0, answers = 0;
        for (struct msg *m; answers + notified < 4 && (m = client_wait(&w, 2000)) != NULL;) {
            if (strncmp(m->topic, "clients/statestore/v1/", 22) == 0) {
                PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\nv\r\n");
                notified++;
            } else {
                answers++;
            }
        }
        ASSERT_EQ(answers, 3);
        ASSERT_EQ(notified, 1);
        /* Stopped: the next SET is not told. */
        ASSERT_REPLY(request(&w, rw, "s2", NULL, NULL, W("SET", "lk", "w")), "+OK\r\n");
        ASSERT_REPLY(request(&w, rw, "g", NULL, NULL, W("GET", "other")), "$1\r\nx\r\n");
        ASSERT_TRUE(client_wait(&w, 200) == NULL);
    }
    client_close(&w);
    broker_stop(&b);
}
