/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* cluster_util.h - what the tests of the store on an etcd cluster share:
 * brokers on a cluster, races between two clients, large values. */
#ifndef SS_CLUSTER_UTIL_H
#define SS_CLUSTER_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "../../core/hlc.h"
#include "delay_proxy.h"
#include "etcd_cluster.h"
#include "harness.h"

#define UNAVAILABLE "-ERR the store is unavailable\r\n"

/* A broker named name (its node id too) on cluster c under the prefix
 * race/; more: lines of its configuration beside (or NULL). */
void cluster_broker(struct broker *b, const struct etcd_cluster *c, const char *name, const char *more);
/* A 3-member cluster, a broker on it and a client of that broker
 * (r: its response topic, 64 bytes). */
void cluster_with_a_client(struct etcd_cluster *c, struct broker *b, const char *name, const char *more,
                           struct client *cl, char *r);
/* The version an answer carries (its __ts), parsed; fails the test when
 * m is NULL or has none. */
ss_hlc answer_version(const struct msg *m);
/* m's payload is exactly lit. */
bool payload_is(const struct msg *m, const char *lit);
/* Send a on client ca and b on client cb at once; wait for both, their
 * payloads into out_a and out_b (n bytes each). */
void race(struct client *ca, const char *ra, const char *fta, const char *const *a, struct client *cb,
          const char *rb, const char *ftb, const char *const *b, char *out_a, char *out_b, size_t n);

/* A one-member cluster, broker a (node id a) on it and broker b (node id
 * b, more: its other configuration) through a proxy that can delay or
 * drop what passes (px). */
struct proxied_brokers {
    struct etcd_cluster ec;
    struct delay_proxy *px;
    struct broker a, b;
};
void proxied_brokers_up(struct proxied_brokers *t, const char *b_more);
/* The same, etcd's member started with etcd_opts (one argument). */
void proxied_brokers_up_with(struct proxied_brokers *t, const char *etcd_opts, const char *b_more);
void proxied_brokers_down(struct proxied_brokers *t);

/* A value of n bytes that changes along its length (no NUL), malloc'ed. */
char *patterned(size_t n, unsigned seed);
/* m's payload is exactly prefix, then value as a bulk string. */
void assert_bulk(const struct msg *m, const char *prefix, const char *value);
/* GET key answers exactly value. */
void assert_get(struct client *c, const char *r, const char *key, const char *value);
/* The next notification is a SET of key to value at version ts. */
void assert_set_note(struct client *o, const char *value, const char *ts);
/* The value GET key answers, malloc'ed (NULL: absent). */
char *get_value(struct client *c, const char *r, const char *key);
/* Wait (5 s at most) until the cluster holds n keys under prefix. */
void await_keys(const struct etcd_cluster *c, const char *prefix, int n);
/* The end of a test with two clients and an observer on two brokers. */
void three_clients_two_brokers_down(struct client *ca, struct client *cb, struct client *ob, struct broker *a,
                                    struct broker *b, struct etcd_cluster *c);

#endif
