/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* delay_proxy.h - a TCP proxy that delays what it forwards, for links
 * made slow on purpose (this kernel has no netem). Every chunk of bytes
 * read from one side is written to the other delay_ms +- jitter_ms later,
 * in order. It runs on a thread of its own, which lives in the network
 * namespace of the thread that starts it (netns.h). */
#ifndef SS_DELAY_PROXY_H
#define SS_DELAY_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct delay_proxy;

/* Listen on listen_addr:listen_port and forward each connection to
 * to_addr:to_port. Fails the test if it cannot listen. */
struct delay_proxy *delay_proxy_start(const char *listen_addr, int listen_port, const char *to_addr, int to_port);
/* From now on, hold each chunk for delay_ms +- jitter_ms (0, 0: forward
 * at once). */
void delay_proxy_set(struct delay_proxy *p, int delay_ms, int jitter_ms);
/* Hold what clients send (nothing more reaches the server) until
 * released; then it goes, in order. */
void delay_proxy_hold(struct delay_proxy *p, bool hold);
/* Hold what the servers send on the streams a client keeps open (gRPC's
 * streaming calls: etcd's watch), the other streams going on, until
 * released; then it goes, in order. */
void delay_proxy_lag(struct delay_proxy *p, bool lag);
/* From now on, keep a copy of every gRPC message a client sends (its
 * HTTP/2 DATA, without the gRPC framing; 64 at most) of at least min_len
 * bytes (0: none by length) or holding the bytes of needle (NULL: none
 * by content), for a test to deliver again. */
void delay_proxy_tap(struct delay_proxy *p, size_t min_len, const char *needle);
/* A copy of the i-th message kept, in *msg (the caller frees it); its
 * length, 0 if there is no such message. */
size_t delay_proxy_tapped(struct delay_proxy *p, size_t i, uint8_t **msg);
/* From the first gRPC message a client sends that holds both needle1 and
 * needle2, after one that held the bytes of after (NULL: from now on),
 * everything the servers send is dropped (the message is forwarded):
 * its answer, and every later one, is lost, the connections staying
 * open. NULL, NULL, NULL: nothing is dropped any more. */
void delay_proxy_mute_after(struct delay_proxy *p, const char *after, const char *needle1, const char *needle2);
/* Stop the thread and close every connection. */
void delay_proxy_stop(struct delay_proxy *p);

#endif
