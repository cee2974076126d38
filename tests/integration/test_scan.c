/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_scan.c - SCAN against a real broker: the SDKs' wire format byte
 * for byte, paging through 10,000 keys with decoys, forged tokens,
 * expiry, key authorization, changes during a listing, and a listing
 * continued after a restart (LMDB) or through another broker (etcd). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/bigendian.h"
#include "../../core/buf.h"
#include "../../core/codec.h"
#include "../../core/scan.h"
#include "../../core/siphash.h"
#include "../lines.h"
#include "../test.h"
#include "etcd_cluster.h"
#include "harness.h"

/* Send SCAN pattern [token] (binary) and wait for the answer. */
static struct msg *scan_request(struct client *c, const char *resp, const char *pattern, const ss_buf *token)
{
    ss_bytes argv[3] = {{(const uint8_t *)"SCAN", 4}, {(const uint8_t *)pattern, strlen(pattern)}, {NULL, 0}};
    size_t argc = 2;
    if (token && token->len) {
        argv[2] = (ss_bytes){token->data, token->len};
        argc = 3;
    }
    ss_buf payload = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&payload, argc, argv), 0);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, "scan", 4);
    int rc = client_publish(c, REQ_TOPIC, payload.data, (int)payload.len, 1, false, props);
    ss_buf_free(&payload);
    mosquitto_property_free_all(&props);
    ASSERT_EQ(rc, MOSQ_ERR_SUCCESS);
    return client_wait(c, 10000);
}

/* Read a decimal number ending in CR LF at *p. */
static size_t number(const uint8_t **p, const uint8_t *end)
{
    size_t v = 0;
    while (*p < end && **p != '\r') {
        ASSERT_TRUE(**p >= '0' && **p <= '9');
        v = v * 10 + (size_t)(**p - '0');
        (*p)++;
    }
    ASSERT_TRUE(*p + 2 <= end);
    *p += 2;
    return v;
}

/* One page: its keys appended to keys (one a line), its token into
 * token (empty: the last page). The answer is parsed strictly. */
static size_t scan_page(struct client *c, const char *resp, const char *pattern, ss_buf *token, ss_buf *keys)
{
    struct msg *m = scan_request(c, resp, pattern, token);
    ASSERT_TRUE(m != NULL);
    const uint8_t *p = m->payload, *end = m->payload + m->len;
    ASSERT_TRUE(m->len >= 8 && p[0] == '*');
    p++;
    size_t parts = number(&p, end);
    ASSERT_TRUE(parts == 1 || parts == 2);
    ASSERT_TRUE(p < end && *p == '*');
    p++;
    size_t n = number(&p, end);
    for (size_t i = 0; i < n; i++) {
        ASSERT_TRUE(p < end && *p == '$');
        p++;
        size_t len = number(&p, end);
        ASSERT_TRUE(p + len + 2 <= end);
        ASSERT_EQ(ss_buf_append(keys, p, len), 0);
        ASSERT_EQ(ss_buf_append(keys, "\n", 1), 0);
        p += len + 2;
    }
    ss_buf_clear(token);
    if (parts == 2) {
        ASSERT_TRUE(p < end && *p == '$');
        p++;
        size_t len = number(&p, end);
        ASSERT_TRUE(len > 0 && p + len + 2 <= end);
        ASSERT_EQ(ss_buf_append(token, p, len), 0);
        p += len + 2;
    }
    ASSERT_TRUE(p == end);
    return n;
}

/* Every key of a whole listing, one a line; *pages: how many. */
static void scan_all(struct client *c, const char *resp, const char *pattern, ss_buf *keys, int *pages)
{
    ss_buf token = SS_BUF_INIT;
    *pages = 0;
    do {
        scan_page(c, resp, pattern, &token, keys);
        ASSERT_TRUE(++*pages < 10000);
    } while (token.len);
    ss_buf_free(&token);
}

/* SET each of n keys "<prefix><i, 5 digits>", pipelined. */
static void set_many(struct client *c, const char *resp, const char *prefix, int from, int n)
{
    set_keys_pipelined(c, resp, prefix, 5, from, n);
}

/* The lines set_many's keys from..to-1 make in a listing. */
static void want_lines(ss_buf *want, const char *prefix, int from, int to)
{
    char key[64];
    for (int i = from; i < to; i++) {
        snprintf(key, sizeof key, "%s%05d\n", prefix, i);
        ASSERT_EQ(ss_buf_append_str(want, key), 0);
    }
}

static void start(struct broker *b, struct client *c, char *resp)
{
    memset(b, 0, sizeof *b);
    broker_start(b);
    client_connect_rr(c, b->port, "scanner", resp, 64);
}

TEST(scan_wire_format_and_errors)
{
    struct broker b;
    struct client c;
    char r[64];
    start(&b, &c, r);
    const char *keys[] = {"scankey00", "scankey01", "scanke", "scankex00", "xscankey00", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ASSERT_REPLY(request(&c, r, "s", NULL, NULL, W("SET", keys[i], "v")), "+OK\r\n");
    /* The SDK's first page: "*2 SCAN pattern", no __ts needed. */
    struct msg *m = scan_request(&c, r, "scankey*", NULL);
    PAYLOAD(m, "*1\r\n*2\r\n$9\r\nscankey00\r\n$9\r\nscankey01\r\n");
    ASSERT_MEM(m->corr, (size_t)m->corr_len, "scan", 4);
    ASSERT_TRUE(msg_user(m, "__ts") == NULL);
    ASSERT_REPLY(scan_request(&c, r, "nomatch*", NULL), "*1\r\n*0\r\n");
    ASSERT_REPLY(scan_request(&c, r, "caf?", NULL), "*1\r\n*1\r\n$5\r\ncaf\xc3\xa9\r\n");
    ASSERT_REPLY(scan_request(&c, r, "scankey[!0]?", NULL), "*1\r\n*0\r\n");
    /* '^' is a member, not a negation: [^1] holds '^' and '1'. */
    ASSERT_REPLY(scan_request(&c, r, "scankey0[^1]", NULL), "*1\r\n*1\r\n$9\r\nscankey01\r\n");
    ASSERT_REPLY(scan_request(&c, r, "scankey[", NULL), "-ERR invalid pattern: a '[' is not closed\r\n");
    ASSERT_REPLY(scan_request(&c, r, "a**", NULL),
            "-ERR invalid pattern: '**' must be a whole path segment and '***' is not a wildcard\r\n");
    ASSERT_REPLY(scan_request(&c, r, "", NULL), "-ERR the pattern is empty\r\n");
    ss_buf forged = SS_BUF_INIT;
    ASSERT_EQ(ss_buf_append(&forged, "\x01" "12345678scankey00", 17), 0);
    ASSERT_REPLY(scan_request(&c, r, "scankey*", &forged), "-ERR invalid continuation token\r\n");
    ss_buf_clear(&forged);
    ASSERT_EQ(ss_buf_append(&forged, "\x00\xff" "x", 3), 0);
    ASSERT_REPLY(scan_request(&c, r, "scankey*", &forged), "-ERR invalid continuation token\r\n");
    ss_buf_free(&forged);
    ASSERT_REPLY(request(&c, r, "s", NULL, NULL, W("SCAN")), "-ERR wrong number of arguments\r\n");
    /* The broker is still there and answers. */
    ASSERT_REPLY(request(&c, r, "g", NULL, NULL, W("GET", "scankey00")), "$1\r\nv\r\n");
    client_close(&c);
    broker_stop(&b);
}

TEST(scan_pages_through_ten_thousand_keys_with_decoys)
{
    struct broker b;
    struct client c;
    char r[64];
    start(&b, &c, r);
    set_many(&c, r, "item", 0, 10000);
    set_many(&c, r, "iten", 0, 500);  /* sorts among them, never matches */
    set_many(&c, r, "xitem", 0, 500); /* contains the prefix */
    set_many(&c, r, "ite", 0, 100);   /* shorter than it */
    ss_buf keys = SS_BUF_INIT, want = SS_BUF_INIT;
    int pages;
    uint64_t t0 = now_ms();
    scan_all(&c, r, "item*", &keys, &pages);
    uint64_t ms = now_ms() - t0;
    want_lines(&want, "item", 0, 10000);
    /* Each key once, in key order, no decoy. */
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    printf("  10,000 keys of 11,100 listed in %d pages, %llu ms\n", pages, (unsigned long long)ms);
    ASSERT_TRUE(pages >= 11); /* at most 1000 keys looked at per page */
    ss_buf_free(&keys);
    ss_buf_free(&want);
    client_close(&c);
    broker_stop(&b);
}

TEST(scan_skips_expired_and_unreadable_keys)
{
    char acl[600];
    snprintf(acl, sizeof acl, "%s/keys.acl", test_tmpdir());
    FILE *f = fopen(acl, "w");
    ASSERT_TRUE(f != NULL);
    fputs("user alice readwrite *\nany read pub/*\n", f);
    fclose(f);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_acl_file %s\n", acl);
    broker_start(&b);
    struct client alice, anon;
    char ra[64], rn[64];
    client_connect_user(&alice, b.port, "alice-dev", false, "alice", "pw");
    snprintf(ra, sizeof ra, "clients/alice-dev/resp");
    client_subscribe(&alice, ra);
    client_connect_rr(&anon, b.port, "anon1", rn, sizeof rn);
    const char *keys[] = {"pub/a", "pub/b", "priv/a", "priv/b", "pub/c"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ASSERT_REPLY(request(&alice, ra, "s", NULL, NULL, W("SET", keys[i], "v")), "+OK\r\n");
    /* 2 s: listed by the SCANs below even under the sanitizers. */
    ASSERT_REPLY(request(&alice, ra, "s", NULL, NULL, W("SET", "pub/short", "v", "PX", "2000")), "+OK\r\n");
    ASSERT_REPLY(scan_request(&anon, rn, "*", NULL),
            "*1\r\n*4\r\n$5\r\npub/a\r\n$5\r\npub/b\r\n$5\r\npub/c\r\n$9\r\npub/short\r\n");
    ASSERT_REPLY(scan_request(&anon, rn, "priv*", NULL), "*1\r\n*0\r\n");
    ASSERT_REPLY(scan_request(&alice, ra, "p*/a", NULL), "*1\r\n*2\r\n$6\r\npriv/a\r\n$5\r\npub/a\r\n");
    usleep(2100 * 1000);
    ASSERT_REPLY(scan_request(&anon, rn, "*", NULL), "*1\r\n*3\r\n$5\r\npub/a\r\n$5\r\npub/b\r\n$5\r\npub/c\r\n");
    client_close(&alice);
    client_close(&anon);
    broker_stop(&b);
}

/* Keys deleted during a listing are not listed after their deletion;
 * keys that exist throughout are listed once each. */
TEST(scan_listing_with_changes_during_it)
{
    struct broker b;
    struct client c;
    char r[64];
    start(&b, &c, r);
    set_many(&c, r, "chg", 0, 3000);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    scan_page(&c, r, "chg*", &token, &keys);
    ASSERT_TRUE(token.len > 0);
    /* Delete the last 1000, add 500 after the end, change none of the others. */
    char key[64];
    for (int i = 2000; i < 3000; i++) {
        snprintf(key, sizeof key, "chg%05d", i);
        request_send(&c, r, "d", NULL, NULL, W("DEL", key));
        if (i % 200 == 199)
            await_answers(&c, 200, ":1\r\n");
    }
    set_many(&c, r, "chg", 5000, 500);
    int pages = 1;
    while (token.len) {
        scan_page(&c, r, "chg*", &token, &keys);
        ASSERT_TRUE(++pages < 100);
    }
    ss_buf want = SS_BUF_INIT;
    want_lines(&want, "chg", 0, 2000);
    want_lines(&want, "chg", 5000, 5500);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    ss_buf_free(&token);
    ss_buf_free(&keys);
    ss_buf_free(&want);
    client_close(&c);
    broker_stop(&b);
}

/* A token keeps working after a restart (LMDB: the same broker again;
 * etcd: the listing goes on through another broker on the same data,
 * which also sees a key written through the first). */
TEST(scan_token_through_restart_or_other_broker)
{
    struct broker a;
    struct client c;
    char r[64];
    memset(&a, 0, sizeof a);
    snprintf(a.name, sizeof a.name, "a");
    snprintf(a.extra, sizeof a.extra, "plugin_opt_node_id a\n");
    broker_start(&a);
    client_connect_rr(&c, a.port, "scanner", r, sizeof r);
    set_many(&c, r, "t", 0, 2500);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    scan_page(&c, r, "t*", &token, &keys);
    ASSERT_TRUE(token.len > 0);
    client_close(&c);
    struct broker other;
    memset(&other, 0, sizeof other);
    if (harness_on_etcd()) {
        snprintf(other.name, sizeof other.name, "b");
        snprintf(other.data, sizeof other.data, "%s", a.data);
        snprintf(other.extra, sizeof other.extra, "plugin_opt_node_id b\n");
        broker_start(&other);
        struct client ca;
        char rca[64];
        client_connect_rr(&ca, a.port, "writer", rca, sizeof rca);
        ASSERT_REPLY(request(&ca, rca, "s", NULL, NULL, W("SET", "t99999", "v")), "+OK\r\n");
        client_close(&ca);
        client_connect_rr(&c, other.port, "scanner", r, sizeof r);
    } else {
        broker_stop(&a);
        broker_start(&a);
        client_connect_rr(&c, a.port, "scanner", r, sizeof r);
    }
    int pages = 1;
    while (token.len) {
        scan_page(&c, r, "t*", &token, &keys);
        ASSERT_TRUE(++pages < 100);
    }
    ss_buf want = SS_BUF_INIT;
    want_lines(&want, "t", 0, 2500);
    if (harness_on_etcd())
        ASSERT_EQ(ss_buf_append_str(&want, "t99999\n"), 0);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    ss_buf_free(&token);
    ss_buf_free(&keys);
    ss_buf_free(&want);
    client_close(&c);
    if (harness_on_etcd())
        broker_stop(&other);
    broker_stop(&a);
}

/* The key that tokens on etcd once had: derived from the prefix alone, so
 * anyone who knew the prefix could forge a token. */
static void prefix_derived_key(const char *prefix, uint8_t out[16])
{
    static const uint8_t zero[16];
    for (uint8_t half = 0; half < 2; half++) {
        ss_bytes parts[] = {{(const uint8_t *)"SCAN continuation tokens", 24},
                            {(const uint8_t *)prefix, strlen(prefix)},
                            {&half, 1}};
        ss_put_be(out + 8 * half, ss_siphash_parts(zero, parts, 3), 8);
    }
}

/* On etcd the tokens' key is 16 random bytes kept at s/scan-token-key:
 * not derivable from the prefix (a token made with the prefix alone is
 * refused), the same for every broker, and made anew when deleted (the
 * tokens made with the old one are then refused). */
TEST(cluster_scan_token_key_kept_in_etcd)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    struct broker b;
    broker_on_etcd(&b, "tk", ec.endpoints, "plugin_opt_etcd_prefix tk/\n");
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "scanner", r, sizeof r);
    set_many(&c, r, "t", 0, 2500);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    scan_page(&c, r, "t*", &token, &keys);
    ASSERT_TRUE(token.len > 0);
    /* 16 bytes in etcd (24 characters of base64). */
    char out[4096];
    ASSERT_EQ(etcd_cluster_ctl(&ec, out, sizeof out, "get", "tk/s/scan-token-key", "-w", "json", NULL), 0);
    const char *v = strstr(out, "\"value\":\"");
    ASSERT_TRUE(v != NULL);
    ASSERT_EQ(strcspn(v + 9, "\""), 24);
    /* A well-made token under the prefix's key: refused. */
    uint8_t derived[16];
    prefix_derived_key("tk/", derived);
    ss_buf forged = SS_BUF_INIT;
    ss_bytes pattern = {(const uint8_t *)"t*", 2}, cursor = {(const uint8_t *)"t01000", 6};
    ASSERT_EQ(ss_scan_token_encode(derived, pattern, cursor, &forged), 0);
    ASSERT_REPLY(scan_request(&c, r, "t*", &forged), "-ERR invalid continuation token\r\n");
    /* The real token goes on. */
    ss_buf more = SS_BUF_INIT;
    ss_buf_clear(&keys);
    ASSERT_TRUE(scan_page(&c, r, "t*", &token, &keys) > 0);
    ASSERT_TRUE(token.len > 0);
    ASSERT_EQ(ss_buf_append(&more, token.data, token.len), 0);
    client_close(&c);
    /* Deleted, then a restart: a new key, the old tokens refused, new
     * listings whole. */
    ASSERT_EQ(etcd_cluster_ctl(&ec, out, sizeof out, "del", "tk/s/scan-token-key", NULL), 0);
    broker_stop(&b);
    broker_start(&b);
    client_connect_rr(&c, b.port, "scanner", r, sizeof r);
    ASSERT_REPLY(scan_request(&c, r, "t*", &more), "-ERR invalid continuation token\r\n");
    ss_buf_clear(&keys);
    int pages = 0;
    scan_all(&c, r, "t*", &keys, &pages);
    ss_buf want = SS_BUF_INIT;
    want_lines(&want, "t", 0, 2500);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    ASSERT_TRUE(pages > 1);
    ASSERT_EQ(etcd_cluster_ctl(&ec, out, sizeof out, "get", "tk/s/scan-token-key", "-w", "json", NULL), 0);
    ASSERT_TRUE(strstr(out, "\"value\":\"") != NULL);
    ss_buf_free(&forged);
    ss_buf_free(&more);
    ss_buf_free(&token);
    ss_buf_free(&keys);
    ss_buf_free(&want);
    client_close(&c);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}

/* scan_page_bytes bounds a page of several keys, for clients whose
 * Maximum Packet Size is small (Mosquitto 2.0 does not tell a plugin a
 * client's own limit): with 1024, every page of 600 keys is at most 1024
 * bytes and the listing is whole; a value below 256 stops the broker. */
TEST(scan_page_bytes_bounds_every_page)
{
    struct broker b;
    broker_named(&b, "small-pages");
    snprintf(b.extra, sizeof b.extra, "plugin_opt_scan_page_bytes 1024\n");
    broker_start(&b);
    ASSERT_TRUE(broker_log_has(&b, "scan_page_bytes=1024"));
    /* The line gives the limits in force: the store's bytes too, when
     * left out (LMDB's default; none on etcd). */
    ASSERT_TRUE(broker_log_has(&b, harness_on_etcd() ? "max_store_bytes=0 " : "max_store_bytes=1073741824 "));
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "scanner", r, sizeof r);
    set_many(&c, r, "p", 0, 600);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT;
    int pages = 0;
    do {
        scan_page(&c, r, "p*", &token, &keys);
        ASSERT_TRUE(c.last.len > 0 && c.last.len <= 1024);
        ASSERT_TRUE(++pages < 1000);
    } while (token.len);
    ss_buf want = SS_BUF_INIT;
    want_lines(&want, "p", 0, 600);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    /* 600 keys of 6 bytes are 7,200 bytes of answers at least. */
    ASSERT_TRUE(pages >= 8);
    ss_buf_free(&token);
    ss_buf_free(&keys);
    ss_buf_free(&want);
    client_close(&c);
    broker_stop(&b);
    broker_refuses("tiny-pages", "plugin_opt_scan_page_bytes 100\n", "plugin_opt_scan_page_bytes");
}

/* Under a lowered message_size_limit the broker takes no key that a page
 * of its own could not list with the token naming it (on etcd the token
 * holds the key again): max_key_length is lowered, with a warning. The
 * longest key it takes is listed, and the listing goes past it. */
TEST(scan_lists_the_longest_key_the_store_takes)
{
    struct broker b;
    broker_named(&b, "small-messages");
    snprintf(b.extra, sizeof b.extra, "message_size_limit 60000\n");
    broker_start(&b);
    char *log = slurp(b.log, NULL);
    const char *said = strstr(log, "max_key_length lowered from 32000 to ");
    ASSERT_TRUE(said != NULL);
    size_t n = (size_t)strtoul(said + strlen("max_key_length lowered from 32000 to "), NULL, 10);
    free(log);
    ASSERT_TRUE(n > 29000 && n < 30000);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "scanner", r, sizeof r);
    char *key = malloc(n + 2);
    ASSERT_TRUE(key != NULL);
    memset(key, 'K', n + 1);
    key[n + 1] = '\0';
    ASSERT_REPLY(request(&c, r, "long", NULL, NULL, W("SET", key, "v")), "-ERR the quota has been exceeded\r\n");
    key[n] = '\0';
    ASSERT_REPLY(request(&c, r, "most", NULL, NULL, W("SET", key, "v")), "+OK\r\n");
    ASSERT_REPLY(request(&c, r, "after", NULL, NULL, W("SET", "KL", "v")), "+OK\r\n");
    ss_buf keys = SS_BUF_INIT, want = SS_BUF_INIT;
    int pages = 0;
    scan_all(&c, r, "K*", &keys, &pages);
    ASSERT_EQ(ss_buf_append(&want, key, n), 0);
    ASSERT_EQ(ss_buf_append(&want, "\nKL\n", 4), 0);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    free(key);
    ss_buf_free(&keys);
    ss_buf_free(&want);
    client_close(&c);
    broker_stop(&b);
}

/* SET each key of the list, pipelined (keys of any length). */
#define SCAN_KEY_CAP 320
static void set_list(struct client *c, const char *resp, char (*keys)[SCAN_KEY_CAP], int n)
{
    for (int i = 0; i < n; i++) {
        request_send(c, resp, "s", NULL, NULL, W("SET", keys[i], "v"));
        if (i % 200 == 199 || i == n - 1)
            await_answers(c, i % 200 + 1, "+OK\r\n");
    }
}

/* The latest etcd/scan_reads and etcd/scan_keys_counted once the reads
 * are at least `reads` (the figures come every second). */
static void scan_figures(int port, uint64_t reads, uint64_t *got_reads, uint64_t *counted)
{
    struct client s;
    client_connect(&s, port, "figures", false);
    client_subscribe(&s, "$SYS/broker/statestore/etcd/#");
    *got_reads = 0;
    bool after = false; /* a count published after reads enough */
    uint64_t deadline = now_ms() + 10000;
    while (!after && now_ms() < deadline) {
        struct msg *m = client_wait(&s, 2000);
        if (m == NULL)
            continue;
        char v[32];
        snprintf(v, sizeof v, "%.*s", m->len, (const char *)m->payload);
        if (strcmp(m->topic, "$SYS/broker/statestore/etcd/scan_reads") == 0)
            *got_reads = strtoull(v, NULL, 10);
        else if (strcmp(m->topic, "$SYS/broker/statestore/etcd/scan_keys_counted") == 0 && *got_reads >= reads) {
            *counted = strtoull(v, NULL, 10);
            after = true;
        }
    }
    ASSERT_TRUE(after);
    client_close(&s);
}

/* The 16 bytes of SCAN's token key that etcd holds at name (etcdctl
 * prints them in base64 within its JSON). */
static void etcd_token_key(const struct etcd_cluster *ec, const char *name, uint8_t out[16])
{
    char json[4096];
    ASSERT_EQ(etcd_cluster_ctl(ec, json, sizeof json, "get", name, "-w", "json", NULL), 0);
    const char *v = strstr(json, "\"value\":\"");
    ASSERT_TRUE(v != NULL);
    v += 9;
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t acc = 0;
    int bits = 0, n = 0;
    for (; *v && *v != '"' && *v != '='; v++) {
        const char *p = strchr(b64, *v);
        ASSERT_TRUE(p != NULL);
        acc = (acc << 6) | (uint32_t)(p - b64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            ASSERT_TRUE(n < 16);
            out[n++] = (uint8_t)(acc >> bits);
        }
    }
    ASSERT_EQ(n, 16);
}

/* On etcd, which counts every key of a Range's interval even past its
 * limit, a listing reads each page over a bounded interval: etcd counts
 * each key a few times (at most 5 here: the first page is read to the
 * end, and decimal numbers are spread unevenly over the bytes, so a page
 * is sometimes read again), not the rest of the store at every page
 * (20,000 keys: over 200,000 counts, n^2 / 2000). Keys of every
 * shape are listed once each, in order: dense runs, a long common
 * prefix, keys that are prefixes of each other, a wide gap, and keys
 * near the top of the byte order. */
TEST(cluster_scan_reads_bounded_pages)
{
    struct etcd_cluster ec;
    etcd_cluster_start(&ec, 1);
    struct broker b;
    broker_on_etcd(&b, "bounded", ec.endpoints, "sys_interval 1\nplugin_opt_etcd_prefix bp/\n");
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "scanner", r, sizeof r);
    /* In byte order: d/, p/xxx..., q..., z/, U+10FFFF... */
    enum { DENSE = 16000, LONG = 50, PREFIXES = 30, SPARSE = 4000, TOP = 20 };
    int n = 0;
    char(*keys)[SCAN_KEY_CAP] = calloc(DENSE + LONG + PREFIXES + SPARSE + TOP, sizeof *keys);
    ASSERT_TRUE(keys != NULL);
    for (int i = 0; i < DENSE; i++)
        snprintf(keys[n++], sizeof keys[0], "d/%05d", i);
    for (int i = 0; i < LONG; i++)
        snprintf(keys[n++], sizeof keys[0], "p/%0300d/%03d", 0, i);
    for (int i = 0; i < PREFIXES; i++)
        snprintf(keys[n++], sizeof keys[0], "q%.*s", i, "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq");
    for (int i = 0; i < SPARSE; i++)
        snprintf(keys[n++], sizeof keys[0], "z/%05d", i * 7);
    for (int i = 0; i < TOP; i++)
        snprintf(keys[n++], sizeof keys[0], "\xf4\x8f\xbf\xbf%02d", i);
    set_list(&c, r, keys, n);
    ss_buf got = SS_BUF_INIT, want = SS_BUF_INIT;
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(ss_buf_append_str(&want, keys[i]), 0);
        ASSERT_EQ(ss_buf_append_str(&want, "\n"), 0);
    }
    int pages = 0;
    scan_all(&c, r, "*", &got, &pages);
    ASSERT_MEM(got.data, got.len, want.data, want.len);
    ASSERT_TRUE(pages >= n / 1000);
    uint64_t reads = 0, counted = 0;
    scan_figures(b.port, (uint64_t)pages, &reads, &counted);
    printf("  %d keys listed in %d pages, %llu Ranges, %llu keys counted by etcd\n", n, pages,
           (unsigned long long)reads, (unsigned long long)counted);
    ASSERT_TRUE(counted >= (uint64_t)n);
    ASSERT_TRUE(counted <= 5 * (uint64_t)n);
    ASSERT_TRUE(reads <= 4 * (uint64_t)pages);
    /* statestore keys (the administrative pages, 10,000 keys looked at
     * each) lists them all too, over bounded Ranges. */
    struct run out;
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    cli_tool(&out, "-p", port, "keys", "*", NULL);
    ASSERT_EQ(out.status, 0);
    ss_buf_clear(&got); /* each line's key, before its figures */
    for (const char *line = out.out; *line; line = strchr(line, '\n') + 1) {
        const char *gap = strstr(line, "  size=");
        ASSERT_TRUE(gap != NULL && gap < strchr(line, '\n'));
        ASSERT_EQ(ss_buf_append(&got, line, (size_t)(gap - line)), 0);
        ASSERT_EQ(ss_buf_append_str(&got, "\n"), 0);
    }
    ASSERT_MEM(got.data, got.len, want.data, want.len);
    run_free(&out);
    uint64_t reads2 = 0, counted2 = 0;
    scan_figures(b.port, reads + 3, &reads2, &counted2);
    printf("  and by statestore keys: %llu Ranges, %llu keys counted\n", (unsigned long long)(reads2 - reads),
           (unsigned long long)(counted2 - counted));
    ASSERT_TRUE(counted2 - counted >= (uint64_t)n);
    ASSERT_TRUE(counted2 - counted <= 5 * (uint64_t)n);
    /* A token whose position is a key alone, as tokens were before pages
     * carried their span: the listing goes on after that key. */
    uint8_t tkey[16];
    etcd_token_key(&ec, "bp/s/scan-token-key", tkey);
    ss_buf old = SS_BUF_INIT, page = SS_BUF_INIT;
    ss_bytes star = {(const uint8_t *)"*", 1}, at = {(const uint8_t *)"d/00099", 7};
    ASSERT_EQ(ss_scan_token_encode(tkey, star, at, &old), 0);
    ASSERT_TRUE(scan_page(&c, r, "*", &old, &page) > 0);
    ASSERT_TRUE(page.len > 8 && memcmp(page.data, "d/00100\n", 8) == 0);
    ss_buf_free(&old);
    ss_buf_free(&page);
    free(keys);
    ss_buf_free(&got);
    ss_buf_free(&want);
    client_close(&c);
    broker_stop(&b);
    etcd_cluster_stop(&ec);
}

/* SET each of the n keys (any bytes but NUL, any length), pipelined. */
static void set_strings(struct client *c, const char *resp, const char *const *keys, int n)
{
    for (int i = 0; i < n; i++) {
        request_send(c, resp, "s", NULL, NULL, W("SET", keys[i], "v"));
        if (i % 200 == 199 || i == n - 1)
            await_answers(c, i % 200 + 1, "+OK\r\n");
    }
}

/* A listing keeps to its pattern's literal prefix: it starts at the first
 * key with it and ends past the last, so that p/'s 10 keys in a store of
 * 8,000 (those just before p/ and after it included) are one page, the
 * last, and not 8 pages of 1,000 keys looked at (the official Rust SDK
 * gives up after 64 pages: a store of 64,000 keys was too many for any
 * listing). On etcd its Range covers p/'s keys alone: etcd counts those
 * 10, not the rest of the store. A listing of several pages goes on from
 * within the prefix's keys and ends with their last; long keys with the
 * prefix (on LMDB, stored by their first 480 bytes and a hash), a prefix
 * longer than that, and a prefix ending in the greatest UTF-8 character
 * are listed whole; a pattern without a literal prefix ([p]/ *) still
 * walks the whole store. */
TEST(scan_keeps_to_the_patterns_prefix)
{
    struct broker b;
    memset(&b, 0, sizeof b);
    snprintf(b.extra, sizeof b.extra, "sys_interval 1\n");
    broker_start(&b);
    struct client c;
    char r[64];
    client_connect_rr(&c, b.port, "scanner", r, sizeof r);
    /* In byte order: a..., p.... (just before p/), p/ (10), p0... (just
     * after it), xp/... (with p/, not at the start). */
    set_many(&c, r, "a", 0, 2490);
    set_many(&c, r, "p.", 0, 2500);
    const char *match[] = {"p/",  "p/0", "p/00001", "p/a",          "p/a/b",
                           "p/m", "p/z", "p/~",     "p/\xc3\xa9", "p/\xf4\x8f\xbf\xbf"};
    enum { MATCH = sizeof match / sizeof match[0] };
    set_strings(&c, r, match, MATCH);
    set_many(&c, r, "p", 0, 1500);
    set_many(&c, r, "xp/", 0, 1500);
    ss_buf token = SS_BUF_INIT, keys = SS_BUF_INIT, want = SS_BUF_INIT;
    for (int i = 0; i < MATCH; i++) {
        ASSERT_EQ(ss_buf_append_str(&want, match[i]), 0);
        ASSERT_EQ(ss_buf_append_str(&want, "\n"), 0);
    }
    ASSERT_EQ(scan_page(&c, r, "p/*", &token, &keys), (size_t)MATCH);
    ASSERT_EQ(token.len, 0); /* one page, the last */
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    if (harness_on_etcd()) {
        uint64_t reads = 0, counted = 0;
        scan_figures(b.port, 1, &reads, &counted);
        printf("  p/*: %llu Range, %llu keys counted by etcd\n", (unsigned long long)reads,
               (unsigned long long)counted);
        ASSERT_EQ(reads, 1);
        ASSERT_EQ(counted, MATCH);
    }

    /* Without a literal prefix: the same keys, over the whole store. */
    ss_buf_clear(&keys);
    int pages = 0;
    scan_all(&c, r, "[p]/*", &keys, &pages);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    ASSERT_TRUE(pages >= 8);

    /* 2,500 keys: three pages of up to 1,000, each after the last key of
     * the one before (on etcd, a page bounded by its span may look at
     * fewer, and the last one then finds nothing more). */
    set_many(&c, r, "s/", 0, 2500);
    ss_buf_clear(&keys);
    ss_buf_clear(&want);
    scan_all(&c, r, "s/*", &keys, &pages);
    want_lines(&want, "s/", 0, 2500);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    printf("  s/*: 2,500 keys of 10,500 in %d pages\n", pages);
    if (harness_on_etcd())
        ASSERT_TRUE(pages >= 3 && pages <= 5);
    else
        ASSERT_EQ(pages, 3);

    /* Long keys: L/ and 600 bytes (on LMDB they share their first 480
     * bytes: in the hash's order), between long keys before and after
     * L/; and a prefix of 600 bytes, which 8 of them have and 2 keys that
     * share their first 480 bytes do not. */
    enum { LONG = 5, LONGER = 3, DECOYS = 2 };
    static char lk[LONG + LONGER + DECOYS + 2][640];
    const char *lks[LONG + LONGER + DECOYS + 2];
    int nk = 0;
    for (int i = 0; i < LONG; i++, nk++) {
        memset(lk[nk], 'x', 602);
        memcpy(lk[nk], "L/", 2);
        lk[nk][602] = (char)('1' + i);
    }
    for (int i = 0; i < LONGER; i++, nk++) {
        memset(lk[nk], 'x', 600);
        memcpy(lk[nk], "L/", 2);
        snprintf(lk[nk] + 600, 16, "~%d", i);
    }
    for (int i = 0; i < DECOYS; i++, nk++) {
        memset(lk[nk], 'x', 500);
        memcpy(lk[nk], "L/", 2);
        snprintf(lk[nk] + 500, 16, "Y%d", i);
    }
    memset(lk[nk], 'x', 600); /* before L/ and after it */
    memcpy(lk[nk++], "L.", 2);
    memset(lk[nk], 'x', 600);
    memcpy(lk[nk++], "L0", 2);
    for (int i = 0; i < nk; i++)
        lks[i] = lk[i];
    set_strings(&c, r, lks, nk);
    ss_buf_clear(&keys);
    ss_buf_clear(&want);
    for (int i = 0; i < LONG + LONGER + DECOYS; i++) {
        ASSERT_EQ(ss_buf_append_str(&want, lk[i]), 0);
        ASSERT_EQ(ss_buf_append_str(&want, "\n"), 0);
    }
    test_sort_lines(&want);
    ASSERT_EQ(scan_page(&c, r, "L/*", &token, &keys), (size_t)(LONG + LONGER + DECOYS));
    ASSERT_EQ(token.len, 0);
    test_sort_lines(&keys);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    char pattern[620];
    snprintf(pattern, sizeof pattern, "%.600s*", lk[LONG]);
    ss_buf_clear(&keys);
    ss_buf_clear(&want);
    for (int i = 0; i < LONG + LONGER; i++) {
        ASSERT_EQ(ss_buf_append_str(&want, lk[i]), 0);
        ASSERT_EQ(ss_buf_append_str(&want, "\n"), 0);
    }
    test_sort_lines(&want);
    scan_all(&c, r, pattern, &keys, &pages);
    test_sort_lines(&keys);
    ASSERT_MEM(keys.data, keys.len, want.data, want.len);
    ASSERT_TRUE(pages <= 3); /* matching keys of 600 bytes against 601 tokens is most of a page's work */

    /* A prefix ending in U+10FFFF, the last UTF-8 character (a pattern is
     * UTF-8: it never ends in 0xff): its keys end where U+10FFFF's last
     * byte is one more; the keys after are not UTF-8, never listed. */
    const char *top[] = {"\xf4\x8f\xbf\xbe" "9", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf" "1", "\xf4\x8f\xbf\xbf" "2",
                   "\xf4\x8f\xbf\xc0", "\xf5" "x"};
    set_strings(&c, r, top, 6);
    ss_buf_clear(&keys);
    ASSERT_EQ(scan_page(&c, r, "\xf4\x8f\xbf\xbf*", &token, &keys), 3);
    ASSERT_EQ(token.len, 0);
    ASSERT_STR(keys.data, keys.len, "\xf4\x8f\xbf\xbf\n\xf4\x8f\xbf\xbf" "1\n\xf4\x8f\xbf\xbf" "2\n");
    ss_buf_free(&token);
    ss_buf_free(&keys);
    ss_buf_free(&want);
    client_close(&c);
    broker_stop(&b);
}
