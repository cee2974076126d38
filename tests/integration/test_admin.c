/* test_admin.c - statestore's administrative requests (KEYS, INSPECT) on
 * statestore/admin/v1/invoke: pages, patterns, expiry, bounded work, the
 * key ACL, topic protection, refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

#define ADMIN_TOPIC "statestore/admin/v1/invoke"

/* Publish an administrative request (words as for request()) with
 * response topic resp and correlation data corr; wait for the answer. */
static struct msg *admin(struct client *c, const char *resp, const char *corr, const char *const *words)
{
    uint8_t payload[4096];
    int len = encode_request(payload, sizeof payload, words, NULL);
    ASSERT_TRUE(len > 0);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    ASSERT_EQ(mosquitto_publish_v5(c->m, NULL, ADMIN_TOPIC, len, payload, 1, false, props), MOSQ_ERR_SUCCESS);
    mosquitto_property_free_all(&props);
    struct msg *m = client_wait(c, 5000);
    ASSERT_TRUE(m != NULL);
    ASSERT_MEM(m->corr, (size_t)m->corr_len, corr, strlen(corr));
    return m;
}

/* Lines of an answer that start with "key ", and the cursor line's value. */
static int key_lines(const struct msg *m, char *cursor, size_t n, char *keys, size_t kn)
{
    char *text = strndup((const char *)m->payload, (size_t)m->len);
    int count = 0;
    size_t used = 0;
    cursor[0] = '\0';
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strncmp(l, "cursor ", 7) == 0) {
            snprintf(cursor, n, "%s", l + 7);
        } else {
            ASSERT_TRUE(strncmp(l, "key ", 4) == 0);
            count++;
            /* The hex key, for the caller's list. */
            size_t hl = strcspn(l + 4, " ");
            if (used + hl + 2 < kn) {
                memcpy(keys + used, l + 4, hl);
                used += hl;
                keys[used++] = ',';
                keys[used] = '\0';
            }
        }
    }
    free(text);
    return count;
}

/* KEYS pattern through every page: the number of keys, and the pages. */
static int keys_all(struct client *c, const char *resp, const char *pattern, int *pages)
{
    static char cursor[1200], page[600 * 12];
    cursor[0] = '\0';
    int total = 0;
    *pages = 0;
    do {
        char corr[16];
        snprintf(corr, sizeof corr, "all%d", *pages);
        char after[1200];
        snprintf(after, sizeof after, "%s", cursor);
        struct msg *m = admin(c, resp, corr, W("KEYS", pattern, after, "100"));
        total += key_lines(m, cursor, sizeof cursor, page, sizeof page);
        ++*pages;
    } while (strcmp(cursor, "-") != 0 && *pages < 100);
    ASSERT_STR(cursor, strlen(cursor), "-");
    return total;
}

TEST(admin_keys_pages_patterns_and_inspect)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    char resp[256];
    client_connect_rr(&c, b.port, "admin", resp, sizeof resp);
    char key[16], val[16];
    for (int i = 0; i < 1200; i++) {
        snprintf(key, sizeof key, "k%04d", i);
        snprintf(val, sizeof val, "v%d", i);
        request_send(&c, resp, "s", NULL, NULL, W("SET", key, val));
    }
    ASSERT_EQ(client_drain(&c, 3000), 1200);
    ASSERT_REPLY(request(&c, resp, "e", NULL, NULL, W("SET", "e1", "gone soon", "PX", "100")), "+OK\r\n");
    ASSERT_REPLY(request(&c, resp, "f", NULL, "1700000000000:0:lock",
                         W("SET", "fenced", "x")), "+OK\r\n");
    usleep(300000);

    /* Every key once, in order, in pages of 500. */
    static char all[1300 * 12], page[600 * 12];
    char cursor[1200] = "";
    int total = 0, pages = 0;
    all[0] = '\0';
    do {
        char corr[16];
        snprintf(corr, sizeof corr, "p%d", pages);
        struct msg *m = admin(&c, resp, corr, W("KEYS", "k*", cursor, "500"));
        int n = key_lines(m, cursor, sizeof cursor, page, sizeof page);
        ASSERT_TRUE(n <= 500);
        total += n;
        strcat(all, page);
        pages++;
    } while (strcmp(cursor, "-") != 0 && pages < 10);
    ASSERT_EQ(total, 1200);
    ASSERT_EQ(pages, 3);
    char want[13];
    snprintf(want, sizeof want, "6b30303030,"); /* k0000 first */
    ASSERT_TRUE(strncmp(all, want, strlen(want)) == 0);
    ASSERT_TRUE(strstr(all, "6b31313939,") != NULL); /* k1199 */

    /* A pattern: a page examines at most ten keys per key asked for (1000
     * here), so a rare match takes more than one page. */
    int npages;
    ASSERT_EQ(keys_all(&c, resp, "k119?", &npages), 10);
    ASSERT_EQ(npages, 2);
    /* An expired key is absent, swept or not. */
    ASSERT_EQ(keys_all(&c, resp, "e*", &npages), 0);
    ASSERT_EQ(keys_all(&c, resp, "fenced", &npages), 1);
    struct msg *m;
    m = admin(&c, resp, "i", W("INSPECT", "k0001"));
    ASSERT_TRUE(m->len > 20 && strncmp((const char *)m->payload, "key 6b30303031 2 ", 17) == 0);
    ASSERT_TRUE(memcmp(m->payload + m->len - 5, " - -\n", 5) == 0); /* no TTL, no token */
    m = admin(&c, resp, "j", W("INSPECT", "fenced"));
    ASSERT_TRUE(strncmp((const char *)m->payload, "key 66656e636564 1 ", 19) == 0);
    ASSERT_TRUE(m->len > 24 && memcmp(m->payload + m->len - 24, " - 1700000000000:0:lock\n", 24) == 0);
    m = admin(&c, resp, "a", W("INSPECT", "nope"));
    PAYLOAD(m, "absent\n");

    /* Bounded work: a pattern that matches nothing examines ten keys per
     * key asked for, then answers with a cursor to go on from. */
    m = admin(&c, resp, "b", W("KEYS", "zzz*", "", "1"));
    ASSERT_EQ(key_lines(m, cursor, sizeof cursor, page, sizeof page), 0);
    ASSERT_TRUE(strcmp(cursor, "-") != 0 && strlen(cursor) > 0);

    /* Refusals. */
    m = admin(&c, resp, "r1", W("KEYS"));
    PAYLOAD(m, "error usage: KEYS PATTERN CURSOR COUNT (CURSOR: hex, empty to start)\n");
    m = admin(&c, resp, "r2", W("KEYS", "*", "xyz", "10"));
    PAYLOAD(m, "error usage: KEYS PATTERN CURSOR COUNT (CURSOR: hex, empty to start)\n");
    m = admin(&c, resp, "r3", W("KEYS", "*", "", "0"));
    PAYLOAD(m, "error COUNT must be a number from 1 to 1000\n");
    m = admin(&c, resp, "r4", W("KEYS", "*", "", "1001"));
    PAYLOAD(m, "error COUNT must be a number from 1 to 1000\n");
    m = admin(&c, resp, "r5", W("FLUSHALL"));
    PAYLOAD(m, "error unknown command (KEYS, INSPECT)\n");
    /* The broker goes on. */
    ASSERT_REPLY(request(&c, resp, "g", NULL, NULL, W("GET", "k0002")), "$2\r\nv2\r\n");
    client_close(&c);
    broker_stop(&b);
}

TEST(admin_respects_the_key_acl_and_topic_protection)
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
    struct client w, r, spy;
    char rw[256], rr[256];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&r, b.port, "reader", rr, sizeof rr);
    client_connect(&spy, b.port, "spy", false);
    /* Nobody receives others' administrative requests. */
    client_subscribe(&spy, ADMIN_TOPIC);
    ASSERT_REPLY(request(&w, rw, "1", NULL, NULL, W("SET", "pub/a", "1")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "2", NULL, NULL, W("SET", "secret", "2")), "+OK\r\n");
    char cursor[64], page[256];
    struct msg *m = admin(&r, rr, "k", W("KEYS", "*", "", "100"));
    ASSERT_EQ(key_lines(m, cursor, sizeof cursor, page, sizeof page), 1);
    ASSERT_STR(page, strlen(page), "7075622f61,"); /* pub/a only */
    m = admin(&r, rr, "i", W("INSPECT", "secret"));
    PAYLOAD(m, "error not authorized\n");
    m = admin(&w, rw, "k", W("KEYS", "*", "", "100"));
    ASSERT_EQ(key_lines(m, cursor, sizeof cursor, page, sizeof page), 2);
    ASSERT_EQ(client_drain(&spy, 300), 0);
    client_close(&spy);
    client_close(&r);
    client_close(&w);
    broker_stop(&b);
}
