/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_scan.c - the C client's SCAN pager (ss_client_list_keys):
 * against the real broker, and against a fake server on a plain broker
 * that checks the bytes the pager sends and answers what a real server
 * would not. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mosquitto.h>
#include <mqtt_protocol.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

static ss_client *scan_connect(int port, const char *id)
{
    ss_client_options o = {.host = "127.0.0.1", .port = port, .client_id = id, .timeout_ms = 5000};
    ss_client *c = NULL;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    return c;
}

TEST(client_scan_pager_lists_every_key_once)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client *c = scan_connect(b.port, "pager");
    /* 1500 decoys sort before the 2500 keys, so the first page of a
     * pattern without a literal prefix ([k]/ and a star: a listing of k/
     * and a star starts at k/) looks at decoys only: a page with no key
     * that is not the last. Written by
     * a client that does not wait for each answer (one at a time, on
     * etcd, took 16 s). */
    enum { DECOYS = 1500, KEYS = 2500 };
    char key[32], wr[64];
    struct client w;
    client_connect_rr(&w, b.port, "filler", wr, sizeof wr);
    set_keys_pipelined(&w, wr, "a/", 4, 0, DECOYS);
    set_keys_pipelined(&w, wr, "k/", 4, DECOYS, KEYS);
    client_close(&w);
    ASSERT_EQ(ss_client_set(c, "k/\xc3\xa9t\xc3\xa9", 7, "v", 1, NULL, NULL), SS_OK);

    ss_client_pager *p;
    ASSERT_EQ(ss_client_list_keys(c, "[k]/*", 5, &p), SS_OK);
    int next = DECOYS, pages = 0, empty_pages = 0;
    bool accented = false;
    ss_client_page page;
    for (int guard = 0; guard < 100 && !ss_client_pager_done(p); guard++) {
        ASSERT_EQ(ss_client_pager_next(p, &page), SS_OK);
        ASSERT_TRUE(!page.end);
        pages++;
        if (page.count == 0 && !ss_client_pager_done(p))
            empty_pages++;
        for (size_t i = 0; i < page.count; i++) {
            if (next < DECOYS + KEYS) {
                int n = snprintf(key, sizeof key, "k/%04d", next++);
                ASSERT_MEM(page.keys[i], page.lens[i], key, (size_t)n);
            } else {
                ASSERT_STR(page.keys[i], page.lens[i], "k/\xc3\xa9t\xc3\xa9");
                ASSERT_TRUE(!accented);
                accented = true;
            }
        }
        ss_client_page_free(&page);
    }
    ASSERT_EQ(next, DECOYS + KEYS);
    ASSERT_TRUE(accented);
    ASSERT_TRUE(pages >= 5); /* 4001 keys, 1000 looked at per page */
    ASSERT_TRUE(empty_pages >= 1);
    /* After the last page: an end, without a request, as often as asked. */
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(ss_client_pager_next(p, &page), SS_OK);
        ASSERT_TRUE(page.end && page.count == 0 && page.keys == NULL);
    }
    ss_client_pager_free(p);

    /* Nothing matches: empty pages (1000 keys looked at each) to the end. */
    ASSERT_EQ(ss_client_list_keys(c, "[z]z*", 5, &p), SS_OK);
    pages = 0;
    for (int guard = 0; guard < 100 && !ss_client_pager_done(p); guard++, pages++) {
        ASSERT_EQ(ss_client_pager_next(p, &page), SS_OK);
        ASSERT_TRUE(!page.end && page.count == 0);
    }
    ASSERT_TRUE(ss_client_pager_done(p));
    /* On etcd a page's Range reaches as far as the pages before suggest
     * (docs/PROTOCOL.md): where the keys thin out, a page looks at fewer. */
    ASSERT_TRUE(pages >= 4 && pages <= (harness_on_etcd() ? 8 : 5));
    ss_client_pager_free(p);
    /* With a literal prefix no key has, the listing is one empty page. */
    ASSERT_EQ(ss_client_list_keys(c, "zz*", 3, &p), SS_OK);
    ASSERT_EQ(ss_client_pager_next(p, &page), SS_OK);
    ASSERT_TRUE(!page.end && page.count == 0);
    ASSERT_TRUE(ss_client_pager_done(p));
    ss_client_pager_free(p);

    /* The empty pattern is refused before anything is sent; a pattern the
     * server refuses is its error, with its text, and the pager stays
     * where it was. */
    p = (ss_client_pager *)&page; /* overwritten with NULL */
    ASSERT_EQ(ss_client_list_keys(c, "", 0, &p), SS_E_INVAL);
    ASSERT_TRUE(p == NULL);
    ASSERT_EQ(ss_client_list_keys(c, "k/[a", 4, &p), SS_OK);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(ss_client_pager_next(p, &page), SS_E_PATTERN_BRACKET);
        ASSERT_STR(page.error_text, strlen(page.error_text), "invalid pattern: a '[' is not closed");
        ASSERT_TRUE(!ss_client_pager_done(p));
        ss_client_page_free(&page);
    }
    ss_client_pager_free(p);
    ss_client_pager_free(NULL);
    ss_client_close(c);
    broker_stop(&b);
}

/* A pager's next page, run on a thread of its own while the fake server
 * answers. */
struct next_call {
    pthread_t thread;
    ss_client_pager *p;
    ss_client_page page;
    int rc;
};

static void *next_run(void *arg)
{
    struct next_call *n = arg;
    n->rc = ss_client_pager_next(n->p, &n->page);
    return NULL;
}

/* Start a next page, take its request (which must be want, want_len
 * bytes) and answer it with payload. */
static void fake_page(struct client *srv, struct next_call *n, const char *want, size_t want_len,
                      const char *payload, size_t len)
{
    ASSERT_EQ(pthread_create(&n->thread, NULL, next_run, n), 0);
    struct msg *m = client_wait(srv, 3000);
    ASSERT_TRUE(m != NULL);
    ASSERT_MEM(m->payload, (size_t)m->len, want, want_len);
    ASSERT_STR(m->topic, strlen(m->topic), REQ_TOPIC);
    mosquitto_property *props = NULL;
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, m->corr, (uint16_t)m->corr_len);
    mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__stat", "200");
    char topic[256];
    snprintf(topic, sizeof topic, "%s", m->response_topic);
    ASSERT_EQ(client_publish(srv, topic, payload, (int)len, 1, false, props), 0);
    mosquitto_property_free_all(&props);
    ASSERT_EQ(pthread_join(n->thread, NULL), 0);
}
#define FAKE_PAGE(srv, n, want, answer) \
    fake_page((srv), (n), (want), sizeof(want) - 1, (answer), sizeof(answer) - 1)

TEST(client_scan_pager_wire_and_retries)
{
    struct broker b = {.no_plugin = true};
    broker_start(&b);
    struct client srv;
    client_connect(&srv, b.port, "fake-server", false);
    client_subscribe(&srv, REQ_TOPIC);
    ss_client *c = scan_connect(b.port, "wire");
    struct next_call n = {0};
    ASSERT_EQ(ss_client_list_keys(c, "key*", 4, &n.p), SS_OK);
    ASSERT_EQ(client_drain(&srv, 200), 0); /* making a pager sends nothing */

    /* The first page: the pattern alone; a binary token comes back. */
    FAKE_PAGE(&srv, &n, "*2\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n",
              "*2\r\n*1\r\n$4\r\nkey1\r\n$3\r\n\x00\xffx\r\n");
    ASSERT_EQ(n.rc, SS_OK);
    ASSERT_EQ(n.page.count, 1);
    ASSERT_STR(n.page.keys[0], n.page.lens[0], "key1");
    ss_client_page_free(&n.page);
    /* The next carries the token as it came. A malformed answer and an
     * error leave it as it was: the retries send the same bytes. */
    static const char second[] = "*3\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n$3\r\n\x00\xffx\r\n";
    FAKE_PAGE(&srv, &n, second, "*2\r\n*0\r\n");
    ASSERT_EQ(n.rc, SS_E_PROTOCOL);
    ASSERT_TRUE(n.page.count == 0 && !n.page.end && !ss_client_pager_done(n.p));
    FAKE_PAGE(&srv, &n, second, "-ERR invalid continuation token\r\n");
    ASSERT_EQ(n.rc, SS_E_TOKEN_INVALID);
    ASSERT_STR(n.page.error_text, strlen(n.page.error_text), "invalid continuation token");
    ss_client_page_free(&n.page);
    /* An empty page with an empty token, then the last page. */
    FAKE_PAGE(&srv, &n, second, "*2\r\n*0\r\n$0\r\n\r\n");
    ASSERT_EQ(n.rc, SS_OK);
    ASSERT_TRUE(n.page.count == 0 && !n.page.end && !ss_client_pager_done(n.p));
    FAKE_PAGE(&srv, &n, "*3\r\n$4\r\nSCAN\r\n$4\r\nkey*\r\n$0\r\n\r\n",
              "*1\r\n*2\r\n$4\r\nkey2\r\n$4\r\nkey3\r\n");
    ASSERT_EQ(n.rc, SS_OK);
    ASSERT_EQ(n.page.count, 2);
    ASSERT_STR(n.page.keys[1], n.page.lens[1], "key3");
    ASSERT_TRUE(ss_client_pager_done(n.p));
    ss_client_page_free(&n.page);
    ASSERT_EQ(ss_client_pager_next(n.p, &n.page), SS_OK);
    ASSERT_TRUE(n.page.end);
    ASSERT_EQ(client_drain(&srv, 200), 0); /* and nothing was sent */
    ss_client_pager_free(n.p);
    ss_client_close(c);
    client_close(&srv);
    broker_stop(&b);
}
