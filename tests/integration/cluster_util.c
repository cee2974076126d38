/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* cluster_util.c - what the tests of the store on an etcd cluster share
 * (cluster_util.h). */
#include "cluster_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"

/* A broker named name (its node id too) on cluster c under prefix. */
void cluster_broker(struct broker *b, const struct etcd_cluster *c, const char *name,
                    const char *more)
{
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    snprintf(b->data, sizeof b->data, "%s/data-%s", test_tmpdir(), name);
    snprintf(b->extra, sizeof b->extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix race/\n"
             "plugin_opt_node_id %s\n%s",
             c->endpoints, name, more ? more : "");
    broker_start(b);
}

/* A 3-member cluster, a broker on it and a client of that broker
 * (r: its response topic, 64 bytes). */
void cluster_with_a_client(struct etcd_cluster *c, struct broker *b, const char *name, const char *more,
                           struct client *cl, char *r)
{
    etcd_cluster_start(c, 3);
    cluster_broker(b, c, name, more);
    client_connect_rr(cl, b->port, "client", r, 64);
}

bool payload_is(const struct msg *m, const char *lit)
{
    return m && (size_t)m->len == strlen(lit) && memcmp(m->payload, lit, (size_t)m->len) == 0;
}

/* Send a on client ca and b on client cb at once; wait for both. */
void race(struct client *ca, const char *ra, const char *fta, const char *const *a,
          struct client *cb, const char *rb, const char *ftb, const char *const *b,
          char *out_a, char *out_b, size_t n)
{
    request_send(ca, ra, "a", NULL, fta, a);
    request_send(cb, rb, "b", NULL, ftb, b);
    struct msg *m = client_wait(ca, 10000);
    ASSERT_TRUE(m != NULL);
    snprintf(out_a, n, "%.*s", m->len, (const char *)m->payload);
    m = client_wait(cb, 10000);
    ASSERT_TRUE(m != NULL);
    snprintf(out_b, n, "%.*s", m->len, (const char *)m->payload);
}

/* A value of n bytes that changes along its length (no NUL). */
char *patterned(size_t n, unsigned seed)
{
    char *v = malloc(n + 1);
    ASSERT_TRUE(v != NULL);
    for (size_t i = 0; i < n; i++)
        v[i] = (char)('a' + (i * 7 + i / 1000 + seed) % 26);
    v[n] = '\0';
    return v;
}

/* m's payload is exactly prefix, then value as a bulk string. */
void assert_bulk(const struct msg *m, const char *prefix, const char *value)
{
    ASSERT_TRUE(m != NULL);
    size_t len = strlen(value);
    char head[96];
    size_t h = (size_t)snprintf(head, sizeof head, "%s$%zu\r\n", prefix, len);
    ASSERT_EQ((size_t)m->len, h + len + 2);
    ASSERT_TRUE(memcmp(m->payload, head, h) == 0);
    ASSERT_TRUE(memcmp(m->payload + h, value, len) == 0);
    ASSERT_TRUE(memcmp(m->payload + h + len, "\r\n", 2) == 0);
}

/* GET key answers exactly value. */
void assert_get(struct client *c, const char *r, const char *key, const char *value)
{
    assert_bulk(request(c, r, "g", NULL, NULL, W("GET", key)), "", value);
}

/* The next notification is a SET of key to value at version ts. */
void assert_set_note(struct client *o, const char *value, const char *ts)
{
    struct msg *m = client_wait(o, 10000);
    assert_bulk(m, "*4\r\n$6\r\nNOTIFY\r\n$3\r\nSET\r\n$5\r\nVALUE\r\n", value);
    const char *got = msg_user(m, "__ts");
    ASSERT_TRUE(got != NULL);
    ASSERT_MEM(got, strlen(got), ts, strlen(ts));
}

/* The end of a test with two clients and an observer on two brokers. */
void three_clients_two_brokers_down(struct client *ca, struct client *cb, struct client *ob, struct broker *a,
                                    struct broker *b, struct etcd_cluster *c)
{
    client_close(ca);
    client_close(cb);
    client_close(ob);
    broker_stop(a);
    broker_stop(b);
    etcd_cluster_stop(c);
}

/* Wait (5 s at most) until the cluster holds n keys under prefix. */
void await_keys(const struct etcd_cluster *c, const char *prefix, int n)
{
    int got = -1;
    for (int i = 0; i < 200 && (got = etcd_cluster_count_keys(c, prefix)) != n; i++)
        usleep(50 * 1000);
    ASSERT_EQ(got, n);
}

/* The value GET key answers, into a malloc'ed string (NULL: absent). */
char *get_value(struct client *c, const char *r, const char *key)
{
    struct msg *m = request(c, r, "g", NULL, NULL, W("GET", key));
    ASSERT_TRUE(m != NULL);
    if (m->len == 5 && memcmp(m->payload, "$-1\r\n", 5) == 0)
        return NULL;
    const char *crlf = memchr(m->payload, '\n', (size_t)m->len);
    ASSERT_TRUE(m->payload[0] == '$' && crlf != NULL);
    size_t h = (size_t)(crlf + 1 - (const char *)m->payload);
    ASSERT_TRUE((size_t)m->len >= h + 2);
    size_t len = (size_t)m->len - h - 2;
    char *v = malloc(len + 1);
    ASSERT_TRUE(v != NULL);
    memcpy(v, m->payload + h, len);
    v[len] = '\0';
    return v;
}

ss_hlc answer_version(const struct msg *m)
{
    ss_hlc h;
    ASSERT_TRUE(m != NULL);
    const char *ts = msg_user(m, "__ts");
    ASSERT_TRUE(ts != NULL);
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)ts, strlen(ts), &h), 0);
    return h;
}

void proxied_brokers_up(struct proxied_brokers *t, const char *b_more)
{
    proxied_brokers_up_with(t, NULL, b_more);
}

void proxied_brokers_up_with(struct proxied_brokers *t, const char *etcd_opts, const char *b_more)
{
    if (etcd_opts)
        etcd_cluster_start_with(&t->ec, 1, etcd_opts);
    else
        etcd_cluster_start(&t->ec, 1);
    int via = free_port();
    t->px = delay_proxy_start("127.0.0.1", via, "127.0.0.1", t->ec.client_port[0]);
    char slow[64], more[1024];
    snprintf(slow, sizeof slow, "http://127.0.0.1:%d", via);
    snprintf(more, sizeof more, "plugin_opt_node_id b\n%s", b_more);
    broker_on_etcd(&t->a, "a", t->ec.endpoints, "plugin_opt_node_id a\n");
    broker_on_etcd(&t->b, "b", slow, more);
}

void proxied_brokers_down(struct proxied_brokers *t)
{
    broker_stop(&t->a);
    broker_stop(&t->b);
    delay_proxy_stop(t->px);
    etcd_cluster_stop(&t->ec);
}
