/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_faults.c - the C client library when things go wrong: the
 * connection drops under calls in flight, calls made where they cannot
 * work, arguments refused before sending. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "delay_proxy.h"
#include "harness.h"

struct done_box {
    pthread_mutex_t mu;
    int calls;
    int status;
    uint64_t at;
};

static void done_cb(void *ud, const ss_client_result *r)
{
    struct done_box *d = ud;
    pthread_mutex_lock(&d->mu);
    d->calls++;
    d->status = r->status;
    d->at = now_ms();
    pthread_mutex_unlock(&d->mu);
}

static int done_calls(struct done_box *d)
{
    pthread_mutex_lock(&d->mu);
    int n = d->calls;
    pthread_mutex_unlock(&d->mu);
    return n;
}

struct blocked {
    ss_client *c;
    int rc;
    uint64_t at;
};

static void *blocked_get(void *arg)
{
    struct blocked *b = arg;
    b->rc = ss_client_get(b->c, "k", 1, NULL);
    b->at = now_ms();
    return NULL;
}

/* A broker without the plugin never answers; when it goes away, the
 * calls in flight (asynchronous and blocking) fail at once with
 * SS_E_CONNECTION instead of waiting for their 10 s timeout, and a call
 * made while disconnected fails the same way. */
TEST(client_calls_in_flight_fail_when_the_connection_drops)
{
    struct broker b = {.no_plugin = true};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "inflight",
                           .timeout_ms = 10000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    struct done_box d = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ASSERT_EQ(ss_client_get_async(c, "k", 1, done_cb, &d), SS_OK);
    struct blocked bl = {.c = c, .rc = 1};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, blocked_get, &bl), 0);
    usleep(200 * 1000); /* both sent, neither answered */
    ASSERT_EQ(done_calls(&d), 0);
    uint64_t cut = now_ms();
    broker_stop(&b);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(bl.rc, SS_E_CONNECTION);
    /* At once, not after the 10 s timeout: the bound leaves room for a
     * broker under valgrind closing its sockets late. */
    ASSERT_TRUE(bl.at - cut < 3000);
    for (int i = 0; i < 100 && done_calls(&d) == 0; i++)
        usleep(10000);
    ASSERT_EQ(done_calls(&d), 1);
    ASSERT_EQ(d.status, SS_E_CONNECTION);
    ASSERT_TRUE(d.at - cut < 3000);
    uint64_t t0 = now_ms();
    ASSERT_EQ(ss_client_get(c, "k", 1, NULL), SS_E_CONNECTION);
    ASSERT_TRUE(now_ms() - t0 < 100);
    ss_client_close(c);
    ASSERT_EQ(done_calls(&d), 1); /* once, not again at close */
}

/* A request whose call failed is never sent again: the client reaches
 * the broker through a proxy that holds what it sends; a SET goes out and
 * is held (no PUBACK); the proxy goes, and the call fails with
 * SS_E_CONNECTION. When the client has reconnected (through a new proxy on
 * the same port), libmosquitto would send the unacknowledged SET again on
 * the same handle, and it would run after its call had failed: the
 * client reconnects on a new handle instead, and the key stays absent. */
TEST(client_failed_call_is_not_sent_again_after_a_reconnect)
{
    struct broker b = {0};
    broker_start(&b);
    int via = free_port();
    struct delay_proxy *px = delay_proxy_start("127.0.0.1", via, "127.0.0.1", b.port);
    ss_client_options o = {.host = "127.0.0.1", .port = via, .client_id = "resender", .timeout_ms = 5000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    ss_client_set_reconnect_backoff(c, 100, 200);
    delay_proxy_hold(px, true);
    struct done_box d = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ASSERT_EQ(ss_client_set_async(c, "late", 4, "v", 1, NULL, done_cb, &d), SS_OK);
    usleep(200 * 1000); /* sent, and held */
    delay_proxy_stop(px);
    for (int i = 0; i < 300 && done_calls(&d) == 0; i++)
        usleep(10000);
    ASSERT_EQ(done_calls(&d), 1);
    ASSERT_EQ(d.status, SS_E_CONNECTION);
    px = delay_proxy_start("127.0.0.1", via, "127.0.0.1", b.port);
    /* Reconnected: a call goes through again. */
    int rc = SS_E_CONNECTION;
    for (int i = 0; i < 100 && rc != SS_OK; i++) {
        rc = ss_client_set(c, "after", 5, "w", 1, NULL, NULL);
        if (rc != SS_OK)
            usleep(50000);
    }
    ASSERT_EQ(rc, SS_OK);
    usleep(300 * 1000); /* time for a resend to arrive, were there one */
    ss_client_result r;
    ASSERT_EQ(ss_client_get(c, "late", 4, &r), SS_OK);
    ASSERT_TRUE(!r.found);
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_get(c, "after", 5, &r), SS_OK);
    ASSERT_TRUE(r.found);
    ss_client_result_free(&r);
    ss_client_close(c);
    delay_proxy_stop(px);
    broker_stop(&b);
}

/* What a callback saw when it made blocking calls. */
struct inner {
    ss_client *c;
    pthread_mutex_t mu;
    int calls;
    int get_rc, sub_rc;
    uint64_t took_ms;
};

static void blocking_inside(void *ud, const ss_client_result *r)
{
    (void)r;
    struct inner *in = ud;
    uint64_t t0 = now_ms();
    int get_rc = ss_client_get(in->c, "k", 1, NULL);
    int sub_rc = ss_client_subscribe(in->c, "app/#", 0);
    pthread_mutex_lock(&in->mu);
    in->get_rc = get_rc;
    in->sub_rc = sub_rc;
    in->took_ms = now_ms() - t0;
    in->calls++;
    pthread_mutex_unlock(&in->mu);
}

static void notified_inside(void *ud, const ss_notification *n)
{
    (void)n;
    blocking_inside(ud, NULL);
}

static bool inner_wait(struct inner *in, int calls)
{
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&in->mu);
        bool ok = in->calls >= calls;
        pthread_mutex_unlock(&in->mu);
        if (ok)
            return true;
        usleep(10000);
    }
    return false;
}

/* A blocking call made inside a callback (a completion, a notification,
 * a timeout's completion) is refused at once with SS_E_IN_CALLBACK: it
 * would stop the thread that delivers its answer for the whole timeout.
 * The same calls from the application's thread still work. */
TEST(client_blocking_call_inside_a_callback_is_refused)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "inside", .timeout_ms = 2000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    struct inner in = {.c = c, .mu = PTHREAD_MUTEX_INITIALIZER, .get_rc = 1, .sub_rc = 1};
    ASSERT_EQ(ss_client_set_async(c, "k", 1, "v", 1, NULL, blocking_inside, &in), SS_OK);
    ASSERT_TRUE(inner_wait(&in, 1));
    ASSERT_EQ(in.get_rc, SS_E_IN_CALLBACK);
    ASSERT_EQ(in.sub_rc, SS_E_IN_CALLBACK);
    ASSERT_TRUE(in.took_ms < 100);
    ss_client_set_notify_cb(c, notified_inside, &in);
    ASSERT_EQ(ss_client_keynotify(c, "k", 1, false, NULL), SS_OK);
    ASSERT_EQ(ss_client_set(c, "k", 1, "w", 1, NULL, NULL), SS_OK);
    ASSERT_TRUE(inner_wait(&in, 2));
    ASSERT_EQ(in.get_rc, SS_E_IN_CALLBACK);
    ASSERT_TRUE(in.took_ms < 100);
    ss_client_result r;
    ASSERT_EQ(ss_client_get(c, "k", 1, &r), SS_OK);
    ASSERT_STR(r.value, r.value_len, "w");
    ss_client_result_free(&r);
    ASSERT_EQ(ss_client_subscribe(c, "app/#", 0), SS_OK);
    ss_client_close(c);
    broker_stop(&b);

    /* A call that times out: its completion refuses them too. */
    struct broker plain = {.no_plugin = true};
    broker_start(&plain);
    o.port = plain.port;
    o.timeout_ms = 300;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    struct inner late = {.c = c, .mu = PTHREAD_MUTEX_INITIALIZER, .get_rc = 1, .sub_rc = 1};
    ASSERT_EQ(ss_client_get_async(c, "k", 1, blocking_inside, &late), SS_OK);
    ASSERT_TRUE(inner_wait(&late, 1));
    ASSERT_EQ(late.get_rc, SS_E_IN_CALLBACK);
    ASSERT_EQ(late.sub_rc, SS_E_IN_CALLBACK);
    ASSERT_TRUE(late.took_ms < 100);
    ss_client_close(c);
    broker_stop(&plain);
}

/* Make getrandom(2) fail with ENOSYS on the calling thread only (a seccomp
 * filter without TSYNC), as on a kernel without it. */
static int no_getrandom_here(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

struct no_random {
    ss_client *c;
    int port;
    int filter_rc, get_rc, connect_rc;
    char why[128];
};

static void *without_random(void *arg)
{
    struct no_random *n = arg;
    n->filter_rc = no_getrandom_here();
    if (n->filter_rc != 0)
        return NULL;
    n->get_rc = ss_client_get(n->c, "k", 1, NULL);
    ss_client_options o = {.host = "127.0.0.1", .port = n->port}; /* a random client id */
    ss_client *c = NULL;
    n->connect_rc = ss_client_connect_explain(&o, &c, n->why, sizeof n->why);
    ss_client_close(c);
    return NULL;
}

/* When the system gives no random bytes (for a request's correlation
 * data, for a client id), the error says so: SS_E_RANDOM, not a storage
 * error. */
TEST(client_no_random_bytes_is_its_own_error)
{
    struct broker b = {0};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "norandom", .timeout_ms = 2000};
    struct no_random n = {.port = b.port, .get_rc = 1, .connect_rc = 1};
    ASSERT_EQ(ss_client_connect(&o, &n.c), SS_OK);
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, without_random, &n), 0);
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(n.filter_rc, 0);
    ASSERT_EQ(n.get_rc, SS_E_RANDOM);
    ASSERT_EQ(n.connect_rc, SS_E_RANDOM);
    ASSERT_STR(n.why, strlen(n.why), "no random bytes for a client id");
    /* This thread still has them. */
    ASSERT_EQ(ss_client_get(n.c, "k", 1, NULL), SS_OK);
    ss_client_close(n.c);
    broker_stop(&b);
}

/* The threads callbacks ran on. */
struct threads_seen {
    pthread_mutex_t mu;
    pthread_t first;
    int calls, others; /* callbacks, and those on another thread than the first */
    int timeouts, lost, messages, downs;
};

static void thread_note(struct threads_seen *t)
{
    pthread_mutex_lock(&t->mu);
    if (t->calls++ == 0)
        t->first = pthread_self();
    else if (!pthread_equal(t->first, pthread_self()))
        t->others++;
    pthread_mutex_unlock(&t->mu);
}

static void thread_result(void *ud, const ss_client_result *r)
{
    struct threads_seen *t = ud;
    thread_note(t);
    pthread_mutex_lock(&t->mu);
    t->timeouts += r->status == SS_E_TIMEOUT;
    t->lost += r->status == SS_E_CONNECTION;
    pthread_mutex_unlock(&t->mu);
}

static void thread_message(void *ud, const char *topic, const void *payload, int len, bool retained)
{
    (void)topic;
    (void)payload;
    (void)len;
    (void)retained;
    struct threads_seen *t = ud;
    thread_note(t);
    pthread_mutex_lock(&t->mu);
    t->messages++;
    pthread_mutex_unlock(&t->mu);
}

/* (The first connection's report may come after ss_client_connect
 * returned: only losses are counted.) */
static void thread_connection(void *ud, bool connected, bool gap)
{
    (void)gap;
    struct threads_seen *t = ud;
    thread_note(t);
    pthread_mutex_lock(&t->mu);
    t->downs += !connected;
    pthread_mutex_unlock(&t->mu);
}

/* Results, messages and losses seen so far. */
static int threads_calls(struct threads_seen *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->timeouts + t->lost + t->messages + t->downs;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* Every callback of a client runs on its one network thread: messages,
 * completions of calls that timed out (interleaved with messages, so
 * that a timer thread of its own would show), of calls failed by a lost
 * connection, and the connection events. */
TEST(client_callbacks_run_on_the_network_thread_only)
{
    struct broker b = {.no_plugin = true};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "onethread", .timeout_ms = 200};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    struct threads_seen t = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client_set_message_cb(c, thread_message, &t);
    ss_client_set_connection_cb(c, thread_connection, &t);
    ASSERT_EQ(ss_client_subscribe(c, "app/#", 0), SS_OK);
    struct client pub;
    client_connect(&pub, b.port, "publisher", false);
    enum { ROUNDS = 5 };
    for (int i = 0; i < ROUNDS; i++) {
        ASSERT_EQ(client_publish(&pub, "app/x", "m", 1, 0, false, NULL), 0);
        ASSERT_EQ(ss_client_get_async(c, "k", 1, thread_result, &t), SS_OK);
        client_drain(&pub, 20);
    }
    for (int i = 0; i < 300 && threads_calls(&t) < 2 * ROUNDS; i++)
        usleep(10000);
    ASSERT_EQ(threads_calls(&t), 2 * ROUNDS);
    ASSERT_EQ(t.timeouts, ROUNDS);
    ASSERT_EQ(t.messages, ROUNDS);
    /* A call in flight when the broker goes: failed on the same thread,
     * as is the loss's report. */
    o.timeout_ms = 10000;
    ss_client_close(c);
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    struct threads_seen t2 = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client_set_message_cb(c, thread_message, &t2);
    ss_client_set_connection_cb(c, thread_connection, &t2);
    ASSERT_EQ(ss_client_subscribe(c, "app/#", 0), SS_OK);
    ASSERT_EQ(client_publish(&pub, "app/x", "m", 1, 0, false, NULL), 0);
    for (int i = 0; i < 300 && threads_calls(&t2) < 1; i++)
        usleep(10000);
    ASSERT_EQ(ss_client_get_async(c, "k", 1, thread_result, &t2), SS_OK);
    client_close(&pub);
    broker_stop(&b);
    for (int i = 0; i < 300 && threads_calls(&t2) < 3; i++)
        usleep(10000);
    ASSERT_EQ(threads_calls(&t2), 3);
    ASSERT_EQ(t2.lost, 1);
    ASSERT_EQ(t2.downs, 1);
    ss_client_close(c);
    ASSERT_EQ(t.others, 0);
    ASSERT_EQ(t2.others, 0);
}

struct reconnects {
    pthread_mutex_t mu;
    int ups;
    uint64_t up_at;
};

/* Counts reconnections (gap true: the first connection's report, which
 * may come after ss_client_connect returned, has none). */
static void count_up(void *ud, bool connected, bool gap)
{
    struct reconnects *r = ud;
    pthread_mutex_lock(&r->mu);
    if (connected && gap) {
        r->ups++;
        r->up_at = now_ms();
    }
    pthread_mutex_unlock(&r->mu);
}

/* Holds a loopback port while the broker is away, refusing every MQTT
 * connection at once (accept, close), so that no other program takes the
 * port and the client meets nothing but failures. */
struct port_holder {
    int fd;
    pthread_mutex_t mu;
    bool stop;
    pthread_t thread;
};

static void *port_holder_main(void *arg)
{
    struct port_holder *h = arg;
    for (int i = 0; i < 6000; i++) { /* at most 60 s */
        pthread_mutex_lock(&h->mu);
        bool stop = h->stop;
        pthread_mutex_unlock(&h->mu);
        if (stop)
            break;
        struct pollfd p = {.fd = h->fd, .events = POLLIN};
        if (poll(&p, 1, 10) == 1) {
            int s = accept(h->fd, NULL, NULL);
            if (s >= 0)
                close(s);
        }
    }
    return NULL;
}

static void port_hold(struct port_holder *h, int port)
{
    h->fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(h->fd >= 0);
    int one = 1;
    setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(bind(h->fd, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(h->fd, 16), 0);
    h->stop = false;
    pthread_mutex_init(&h->mu, NULL);
    ASSERT_EQ(pthread_create(&h->thread, NULL, port_holder_main, h), 0);
}

static void port_release(struct port_holder *h)
{
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    close(h->fd);
    pthread_mutex_destroy(&h->mu);
}

/* The reconnection backoff is the application's to set: with 50 ms
 * doubling to 200 ms, a client whose broker was away for 3.5 s is back
 * within 200 ms (and the scheduling's slack) of the broker's return,
 * where the default (attempts 1, 3 and 7 s after the loss) waits 3.5 s. */
TEST(client_reconnect_backoff_is_configurable)
{
    struct broker b = {.no_plugin = true};
    broker_start(&b);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "backoff", .timeout_ms = 2000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    ss_client_set_reconnect_backoff(c, 50, 200);
    struct reconnects r = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ss_client_set_connection_cb(c, count_up, &r);
    broker_stop(&b);
    struct port_holder h;
    port_hold(&h, b.port);
    usleep(3500 * 1000);
    uint64_t back = now_ms();
    port_release(&h);
    broker_start(&b); /* the same port */
    for (int i = 0; i < 500; i++) {
        pthread_mutex_lock(&r.mu);
        int ups = r.ups;
        pthread_mutex_unlock(&r.mu);
        if (ups)
            break;
        usleep(10000);
    }
    pthread_mutex_lock(&r.mu);
    int ups = r.ups;
    uint64_t took = r.up_at - back;
    pthread_mutex_unlock(&r.mu);
    ASSERT_EQ(ups, 1);
    fprintf(stderr, "  reconnected %llu ms after the broker's return\n", (unsigned long long)took);
    ASSERT_TRUE(took < 1000);
    ASSERT_EQ(ss_client_subscribe(c, "app/#", 0), SS_OK); /* usable again */
    ss_client_close(c);
    broker_stop(&b);
}
