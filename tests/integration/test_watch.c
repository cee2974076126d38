/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_watch.c - pattern watches (WATCH PATTERN [STOP] on the
 * administrative topic) through a real broker: the answers' bytes, the
 * notifications' topic, payload and __ts (KEYNOTIFY's), one notification
 * per change however many registrations match, the key ACL, disconnects
 * and the limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test.h"
#include "harness.h"

/* HEX("pw") upper case: the notification topic of client "pw". */
#define PW_TOPIC(keyhex) "clients/statestore/v1/" GUID "/7077/command/notify/" keyhex

TEST(watch_pattern_answers_and_exact_notifications)
{
    struct broker b = {0};
    broker_start(&b);
    struct client w, s;
    char wr[64], sr[64];
    client_connect_rr(&w, b.port, "pw", wr, sizeof wr);
    client_connect_rr(&s, b.port, "setter", sr, sizeof sr);
    struct msg *m = admin_call(&w, wr, "w1", W("WATCH", "sensor/*"));
    PAYLOAD(m, "ok\n");
    ASSERT_STR(m->content_type, strlen(m->content_type), "application/octet-stream");
    ASSERT_REPLY(admin_call(&w, wr, "w2", W("WATCH", "sensor/*")), "ok\n"); /* again: still one */
    m = request(&s, sr, "s1", NULL, NULL, W("SET", "sensor/t\x01", "v\r\n1"));
    PAYLOAD(m, "+OK\r\n");
    char version[128];
    snprintf(version, sizeof version, "%s", msg_user(m, "__ts"));
    m = client_wait(&w, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_STR(m->topic, strlen(m->topic), PW_TOPIC("73656E736F722F7401"));
    PAYLOAD(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$4\r\nv\r\n1\r\n");
    ASSERT_EQ(m->qos, 1);
    ASSERT_TRUE(m->corr == NULL);
    USER(m, "__ts", version);
    ASSERT_EQ(client_drain(&w, 300), 0); /* once, although registered twice */
    /* Keys the pattern does not match: nothing. '*' crosses '/', the
     * whole key must match. */
    request(&s, sr, "s2", NULL, NULL, W("SET", "sensors/x", "1"));
    request(&s, sr, "s3", NULL, NULL, W("SET", "xsensor/y", "1"));
    request(&s, sr, "s4", NULL, NULL, W("SET", "sensor/a/b", "deep"));
    ASSERT_EQ(client_drain(&w, 300), 1);
    PAYLOAD(&w.last, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$4\r\ndeep\r\n");
    ASSERT_STR(w.last.topic, strlen(w.last.topic), PW_TOPIC("73656E736F722F612F62"));
    /* DEL: DELETE with the removed value's version. */
    ASSERT_REPLY(request(&s, sr, "s5", NULL, NULL, W("DEL", "sensor/t\x01")), ":1\r\n");
    m = client_wait(&w, 2000);
    ASSERT_TRUE(m != NULL);
    PAYLOAD(m, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    USER(m, "__ts", version);
    /* Expiry notifies too. */
    request(&s, sr, "s6", NULL, NULL, W("SET", "sensor/e", "x", "PX", "200"));
    ASSERT_EQ(client_drain_count(&w, 2, 3000), 2);
    PAYLOAD(&w.last, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    /* STOP ends it; a second STOP finds nothing. */
    ASSERT_REPLY(admin_call(&w, wr, "w3", W("WATCH", "sensor/*", "STOP")), "ok\n");
    ASSERT_REPLY(admin_call(&w, wr, "w4", W("WATCH", "sensor/*", "STOP")), "absent\n");
    request(&s, sr, "s7", NULL, NULL, W("SET", "sensor/t", "2"));
    ASSERT_EQ(client_drain(&w, 300), 0);
    /* Refusals, byte for byte: SCAN's pattern errors, the usage. */
    ASSERT_REPLY(admin_call(&w, wr, "e1", W("WATCH", "")), "error the pattern is empty\n");
    ASSERT_REPLY(admin_call(&w, wr, "e2", W("WATCH", "a[b")), "error invalid pattern: a '[' is not closed\n");
    ASSERT_REPLY(admin_call(&w, wr, "e3", W("WATCH", "a/**b")),
            "error invalid pattern: '**' must be a whole path segment and '***' is not a wildcard\n");
    ASSERT_REPLY(admin_call(&w, wr, "e4", W("WATCH", "\xff")), "error the pattern is not UTF-8\n");
    char longpat[1100];
    memset(longpat, 'a', 1025);
    longpat[1025] = '\0';
    ASSERT_REPLY(admin_call(&w, wr, "e5", W("WATCH", longpat)), "error the pattern is longer than 1024 bytes\n");
    ASSERT_REPLY(admin_call(&w, wr, "e6", W("WATCH")), "error usage: WATCH PATTERN [STOP]\n");
    ASSERT_REPLY(admin_call(&w, wr, "e7", W("WATCH", "a", "NOW")), "error usage: WATCH PATTERN [STOP]\n");
    ASSERT_REPLY(admin_call(&w, wr, "e8", W("WATCH", "a", "STOP", "x")), "error usage: WATCH PATTERN [STOP]\n");
    request(&s, sr, "s8", NULL, NULL, W("SET", "a", "1"));
    ASSERT_EQ(client_drain(&w, 300), 0);
    client_close(&w);
    client_close(&s);
    broker_stop(&b);
}

/* A key matched by a KEYNOTIFY and two patterns of one client is notified
 * once; another client's patterns do not change that. */
TEST(watch_pattern_once_with_keynotify_overlap)
{
    struct broker b = {0};
    broker_start(&b);
    struct client w, o, s;
    char wr[64], orr[64], sr[64];
    client_connect_rr(&w, b.port, "pw", wr, sizeof wr);
    client_connect_rr(&o, b.port, "other", orr, sizeof orr);
    client_connect_rr(&s, b.port, "setter", sr, sizeof sr);
    ASSERT_REPLY(request(&w, wr, "k", NULL, NULL, W("KEYNOTIFY", "room/1")), "+OK\r\n");
    ASSERT_REPLY(admin_call(&w, wr, "p1", W("WATCH", "room/*")), "ok\n");
    ASSERT_REPLY(admin_call(&w, wr, "p2", W("WATCH", "*/1")), "ok\n");
    ASSERT_REPLY(admin_call(&o, orr, "p3", W("WATCH", "room/?")), "ok\n");
    const char *keys[] = {"room/1", "room/2", "hall/1", "room/10"};
    int want_w[] = {1, 1, 1, 1}, want_o[] = {1, 1, 0, 0};
    for (int i = 0; i < 4; i++) {
        ASSERT_REPLY(request(&s, sr, "s", NULL, NULL, W("SET", keys[i], "v")), "+OK\r\n");
        ASSERT_EQ(client_drain(&w, 300), want_w[i]);
        ASSERT_EQ(client_drain(&o, 100), want_o[i]);
    }
    /* Without the patterns, the KEYNOTIFY still tells it; without the
     * KEYNOTIFY, a pattern does. */
    ASSERT_REPLY(admin_call(&w, wr, "p4", W("WATCH", "room/*", "STOP")), "ok\n");
    ASSERT_REPLY(admin_call(&w, wr, "p5", W("WATCH", "*/1", "STOP")), "ok\n");
    ASSERT_REPLY(request(&s, sr, "s", NULL, NULL, W("SET", "room/1", "again")), "+OK\r\n");
    ASSERT_EQ(client_drain(&w, 300), 1);
    ASSERT_REPLY(admin_call(&w, wr, "p6", W("WATCH", "room/*")), "ok\n");
    ASSERT_REPLY(request(&w, wr, "k2", NULL, NULL, W("KEYNOTIFY", "room/1", "STOP")), "+OK\r\n");
    ASSERT_REPLY(request(&s, sr, "s", NULL, NULL, W("DEL", "room/1")), ":1\r\n");
    ASSERT_EQ(client_drain(&w, 300), 1);
    PAYLOAD(&w.last, "*2\r\n$6\r\nNOTIFY\r\n$6\r\nDELETE\r\n");
    client_close(&w);
    client_close(&o);
    client_close(&s);
    broker_stop(&b);
}

/* Only keys the client may read: the key ACL at each delivery. */
TEST(watch_pattern_only_readable_keys)
{
    char acl[600];
    snprintf(acl, sizeof acl, "%s/keys.acl", test_tmpdir());
    FILE *f = fopen(acl, "w");
    ASSERT_TRUE(f != NULL);
    fputs("client writer readwrite *\nclient reader read pub/*\n", f);
    fclose(f);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_acl_file %s\n", acl);
    broker_start(&b);
    struct client w, r;
    char rw[64], rr[64];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&r, b.port, "reader", rr, sizeof rr);
    ASSERT_REPLY(admin_call(&r, rr, "1", W("WATCH", "*")), "ok\n");
    ASSERT_REPLY(request(&w, rw, "a", NULL, NULL, W("SET", "secret", "s")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "b", NULL, NULL, W("SET", "pub/a", "p")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "c", NULL, NULL, W("DEL", "secret")), ":1\r\n");
    ASSERT_EQ(client_drain(&r, 400), 1);
    ASSERT_STR(r.last.topic, strlen(r.last.topic),
               "clients/statestore/v1/" GUID "/726561646572/command/notify/7075622F61");
    PAYLOAD(&r.last, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n$1\r\np\r\n");
    client_close(&w);
    client_close(&r);
    broker_stop(&b);
}

/* A disconnect drops a client's patterns (and gives back their room in the
 * limits); the limits per client and in all are refused with their error. */
TEST(watch_pattern_disconnect_and_limits)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra,
             "plugin_opt_max_pattern_watches_per_client 2\nplugin_opt_max_pattern_watches 3\n");
    broker_start(&b);
    struct client a, c, s;
    char ra[64], rc[64], rs[64];
    client_connect_rr(&a, b.port, "pa", ra, sizeof ra);
    client_connect_rr(&c, b.port, "pc", rc, sizeof rc);
    client_connect_rr(&s, b.port, "setter", rs, sizeof rs);
    ASSERT_REPLY(admin_call(&a, ra, "1", W("WATCH", "x/*")), "ok\n");
    ASSERT_REPLY(admin_call(&a, ra, "2", W("WATCH", "y/*")), "ok\n");
    ASSERT_REPLY(admin_call(&a, ra, "3", W("WATCH", "z/*")),
            "error too many pattern watches for this client (max_pattern_watches_per_client)\n");
    ASSERT_REPLY(admin_call(&a, ra, "4", W("WATCH", "x/*")), "ok\n"); /* registered already: fine at the limit */
    ASSERT_REPLY(admin_call(&c, rc, "5", W("WATCH", "x/*")), "ok\n");
    ASSERT_REPLY(admin_call(&c, rc, "6", W("WATCH", "w/*")),
            "error too many pattern watches on this broker (max_pattern_watches)\n");
    ASSERT_TRUE(broker_log_has(&b, "client pa reached the pattern watches' limit per client"));
    ASSERT_REPLY(request(&s, rs, "s", NULL, NULL, W("SET", "z/1", "v")), "+OK\r\n");
    ASSERT_EQ(client_drain(&a, 300), 0); /* the refused one watches nothing */
    /* pa goes away; back with the same id and a persistent session, it
     * watches nothing, and its patterns no longer count. */
    client_close(&a);
    ASSERT_REPLY(request(&s, rs, "s", NULL, NULL, W("SET", "x/1", "v")), "+OK\r\n");
    ASSERT_EQ(client_drain(&c, 300), 1);
    client_connect_rr(&a, b.port, "pa", ra, sizeof ra);
    ASSERT_REPLY(request(&s, rs, "s", NULL, NULL, W("SET", "y/1", "v")), "+OK\r\n");
    ASSERT_EQ(client_drain(&a, 300), 0);
    ASSERT_REPLY(admin_call(&c, rc, "7", W("WATCH", "w/*")), "ok\n");
    ASSERT_REPLY(admin_call(&a, ra, "8", W("WATCH", "y/*")), "ok\n");
    ASSERT_REPLY(request(&s, rs, "s", NULL, NULL, W("SET", "y/2", "v")), "+OK\r\n");
    ASSERT_EQ(client_drain(&a, 300), 1);
    client_close(&a);
    client_close(&c);
    client_close(&s);
    broker_stop(&b);
}

/* The matching work one change may cost the pattern watches is bounded
 * (max_pattern_watch_work, 20 million steps by default, for keys of up to
 * max_key_length): a pattern of 1,024 wildcards is refused at once (with
 * a key of 32,000 bytes it took 0.15 s a change, and 100 of them
 * seconds); patterns of 200 wildcards that every key would try fit three
 * times, not four; a pattern in a group of its own is not held back by
 * them; 0 lifts the limit. */
TEST(watch_pattern_work_is_bounded)
{
    struct broker b = {0};
    broker_start(&b);
    struct client a, s;
    char ra[64], rs[64];
    client_connect_rr(&a, b.port, "pa", ra, sizeof ra);
    client_connect_rr(&s, b.port, "setter", rs, sizeof rs);
    static const char refusal[] = "error matching this pattern could make a change cost more than "
                                  "max_pattern_watch_work\n";
    char heavy[1025];
    for (int k = 0; k < 510; k++)
        memcpy(heavy + 2 * k, "*?", 2);
    memcpy(heavy + 1020, "[ab]", 4);
    heavy[1024] = '\0';
    ASSERT_REPLY(admin_call(&a, ra, "h", W("WATCH", heavy)), refusal);
    ASSERT_TRUE(broker_log_has(&b, "client pa: a pattern watch refused"));
    char pat[210];
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 100 - i; k++)
            memcpy(pat + 2 * k, "*?", 2);
        pat[2 * (100 - i)] = '\0';
        char corr[16];
        snprintf(corr, sizeof corr, "w%d", i);
        struct msg *m = admin_call(&a, ra, corr, W("WATCH", pat));
        if (i < 3)
            ASSERT_REPLY(m, "ok\n");
        else
            ASSERT_REPLY(m, refusal);
    }
    ASSERT_REPLY(admin_call(&a, ra, "p", W("WATCH", "devices/*/temp")), "ok\n");
    /* The watches accepted work: a key of 150 characters matches the
     * three (told once), and one under devices/ the fourth. */
    char key[151];
    memset(key, 'a', 150);
    key[150] = '\0';
    ASSERT_REPLY(request(&s, rs, "s1", NULL, NULL, W("SET", key, "v")), "+OK\r\n");
    ASSERT_REPLY(request(&s, rs, "s2", NULL, NULL, W("SET", "devices/7/temp", "21")), "+OK\r\n");
    ASSERT_EQ(client_drain(&a, 500), 2);
    client_close(&a);
    client_close(&s);
    broker_stop(&b);

    struct broker u = {0};
    snprintf(u.extra, sizeof u.extra, "plugin_opt_max_pattern_watch_work 0\n");
    broker_start(&u);
    client_connect_rr(&a, u.port, "pa", ra, sizeof ra);
    ASSERT_REPLY(admin_call(&a, ra, "h", W("WATCH", heavy)), "ok\n");
    client_close(&a);
    broker_stop(&u);
}
