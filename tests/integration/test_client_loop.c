/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_client_loop.c - the C client driven by the application's poll(2)
 * loop (no thread of the library's), per-call timeouts, and the retry of
 * the first connection. */
#include <dirent.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../client/client.h"
#include "../../core/errors.h"
#include "../test.h"
#include "harness.h"

/* The threads of this process, from /proc. */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    ASSERT_TRUE(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* One turn of an application's loop around the client; *inside is true
 * while ss_client_process runs. */
static void turn(ss_client *c, bool *inside)
{
    struct pollfd p = {.fd = ss_client_socket(c), .events = POLLIN};
    if (ss_client_want_write(c))
        p.events |= POLLOUT;
    int n = poll(&p, p.fd >= 0 ? 1 : 0, ss_client_timeout_ms(c));
    *inside = true;
    ASSERT_EQ(ss_client_process(c, n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP)),
                                n > 0 && (p.revents & POLLOUT)),
              SS_OK);
    *inside = false;
}

struct pump;
/* One call's own context: its number, to check its answer exactly. */
struct pump_call {
    struct pump *p;
    int i;
};

struct pump {
    ss_client *c;
    struct pump_call calls[5000];
    pthread_t loop_thread;
    bool inside;        /* in ss_client_process */
    int threads;        /* the process's threads before connecting */
    int sent, done, failed, wrong, outside;
    int total, window;
    bool getting;       /* second phase: GETs that check the values */
};

static void pump_next(struct pump *p);

static void pump_done(void *ud, const ss_client_result *r)
{
    struct pump_call *call = ud;
    struct pump *p = call->p;
    /* Every callback on the loop's thread, inside ss_client_process, and
     * no thread of the library's anywhere. */
    if (!p->inside || !pthread_equal(pthread_self(), p->loop_thread) || thread_count() != p->threads)
        p->outside++;
    p->done++;
    if (r->status != SS_OK)
        p->failed++;
    else if (p->getting) {
        char want[32];
        int wn = snprintf(want, sizeof want, "v%d", call->i);
        if (!r->found || r->value_len != (size_t)wn || memcmp(r->value, want, (size_t)wn) != 0)
            p->wrong++;
    } else if (!r->applied) {
        p->wrong++;
    }
    pump_next(p); /* a new call from inside the callback */
}

static void pump_next(struct pump *p)
{
    while (p->sent < p->total && p->sent - p->done < p->window) {
        char key[32], value[32];
        struct pump_call *call = &p->calls[p->sent];
        call->p = p;
        call->i = p->sent;
        int kn = snprintf(key, sizeof key, "k%d", call->i);
        int vn = snprintf(value, sizeof value, "v%d", call->i);
        int rc = p->getting ? ss_client_get_async(p->c, key, (size_t)kn, pump_done, call)
                            : ss_client_set_async(p->c, key, (size_t)kn, value, (size_t)vn, NULL, pump_done, call);
        ASSERT_EQ(rc, SS_OK);
        p->sent++;
    }
}

struct exact_get {
    int calls;
    bool ok;
};

static void exact_get_done(void *ud, const ss_client_result *r)
{
    struct exact_get *g = ud;
    g->calls++;
    g->ok = r->status == SS_OK && r->found && r->value_len == 5 && memcmp(r->value, "v4321", 5) == 0;
}

/* 10,000 asynchronous calls (5,000 SETs, then 5,000 GETs), 100 in flight,
 * each new one started from a completion callback, driven by poll(2) on
 * the test's thread: every callback runs there, inside
 * ss_client_process, and the process never gains a thread. */
TEST(client_event_loop_ten_thousand_calls)
{
    struct broker b = {0};
    broker_start(&b);
    struct pump *p = calloc(1, sizeof *p); /* 5,000 calls' contexts */
    ASSERT_TRUE(p != NULL);
    p->loop_thread = pthread_self();
    p->window = 100;
    p->threads = thread_count();
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "evloop", .timeout_ms = 20000};
    ASSERT_EQ(ss_client_connect_start(&o, &p->c), SS_OK);
    ASSERT_EQ(thread_count(), p->threads);
    ASSERT_TRUE(!ss_client_is_ready(p->c));
    /* Blocking calls cannot work without a thread to deliver answers. */
    ASSERT_EQ(ss_client_get(p->c, "k", 1, NULL), SS_E_IN_CALLBACK);
    uint64_t end = now_ms() + 10000;
    while (!ss_client_is_ready(p->c) && now_ms() < end)
        turn(p->c, &p->inside);
    ASSERT_TRUE(ss_client_is_ready(p->c));
    uint64_t t0 = now_ms();
    p->total = 5000;
    pump_next(p);
    end = now_ms() + 120000;
    while (p->done < 5000 && now_ms() < end)
        turn(p->c, &p->inside);
    ASSERT_EQ(p->done, 5000);
    p->getting = true;
    p->sent = p->done = 0;
    pump_next(p);
    while (p->done < 5000 && now_ms() < end)
        turn(p->c, &p->inside);
    ASSERT_EQ(p->done, 5000);
    uint64_t took = now_ms() - t0;
    ASSERT_EQ(p->failed, 0);
    ASSERT_EQ(p->wrong, 0);
    ASSERT_EQ(p->outside, 0);
    ASSERT_EQ(thread_count(), p->threads);
    fprintf(stderr, "  10000 calls in %llu ms from one poll loop\n", (unsigned long long)took);
    /* And one value exactly, byte for byte. */
    struct exact_get g = {0};
    ASSERT_EQ(ss_client_get_async(p->c, "k4321", 5, exact_get_done, &g), SS_OK);
    while (g.calls == 0 && now_ms() < end)
        turn(p->c, &p->inside);
    ASSERT_EQ(g.calls, 1);
    ASSERT_TRUE(g.ok);
    ss_client_close(p->c);
free(p);
    broker_stop(&b);
}

struct conn_events {
    int ups, downs;
    bool gap;
};

static void conn_event(void *ud, bool connected, bool gap)
{
    struct conn_events *e = ud;
    if (connected) {
        e->ups++;
        e->gap = gap;
    } else {
        e->downs++;
    }
}

/* An event-loop client started while nothing listens keeps trying with
 * its backoff (50 ms doubling to 200 ms here) and connects within that
 * of the broker's arrival; after a loss it comes back, with gap = true. */
TEST(client_event_loop_first_connect_and_reconnect)
{
    struct broker b = {0};
    b.port = free_port();
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "evretry", .timeout_ms = 2000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect_start(&o, &c), SS_OK);
    ss_client_set_reconnect_backoff(c, 50, 200);
    struct conn_events e = {0};
    ss_client_set_connection_cb(c, conn_event, &e);
    bool inside = false;
    uint64_t until = now_ms() + 1000;
    while (now_ms() < until)
        turn(c, &inside);
    ASSERT_TRUE(!ss_client_is_ready(c));
    ASSERT_EQ(ss_client_get_async(c, "k", 1, NULL, NULL), SS_E_CONNECTION);
    broker_start(&b);
    uint64_t back = now_ms();
    while (e.ups == 0 && now_ms() < back + 5000)
        turn(c, &inside);
    ASSERT_EQ(e.ups, 1);
    ASSERT_TRUE(!e.gap);
    uint64_t took = now_ms() - back;
    fprintf(stderr, "  connected %llu ms after the broker came\n", (unsigned long long)took);
    ASSERT_TRUE(took < 1000);
    broker_stop(&b);
    until = now_ms() + 5000;
    while (e.downs == 0 && now_ms() < until)
        turn(c, &inside);
    ASSERT_EQ(e.downs, 1);
    broker_start(&b);
    back = now_ms();
    while (e.ups == 1 && now_ms() < back + 5000)
        turn(c, &inside);
    ASSERT_EQ(e.ups, 2);
    ASSERT_TRUE(e.gap);
    ASSERT_TRUE(ss_client_is_ready(c));
    ss_client_close(c);
    broker_stop(&b);
}

struct timed {
    pthread_mutex_t mu;
    int calls, status;
    uint64_t at;
};

static void timed_done(void *ud, const ss_client_result *r)
{
    struct timed *t = ud;
    pthread_mutex_lock(&t->mu);
    t->calls++;
    t->status = r->status;
    t->at = now_ms();
    pthread_mutex_unlock(&t->mu);
}

static int timed_calls(struct timed *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->calls;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* A call's own timeout: against a broker that never answers, a blocking
 * GET given 300 ms and an asynchronous SET given 200 ms time out then,
 * while a call on the client's 20 s is still waiting; the request's
 * message expiry follows the call's timeout (1 s and 5 s, rounded up). */
TEST(client_per_call_timeout)
{
    struct broker b = {.no_plugin = true};
    broker_start(&b);
    struct client spy;
    client_connect(&spy, b.port, "spy", false);
    client_subscribe(&spy, REQ_TOPIC);
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "percall", .timeout_ms = 20000};
    ss_client *c;
    ASSERT_EQ(ss_client_connect(&o, &c), SS_OK);
    struct timed slow = {.mu = PTHREAD_MUTEX_INITIALIZER}, quick = {.mu = PTHREAD_MUTEX_INITIALIZER};
    ASSERT_EQ(ss_client_get_async(c, "slow", 4, timed_done, &slow), SS_OK);
    uint64_t t0 = now_ms();
    ss_client_request q = {.op = SS_REQ_SET, .key = "k", .key_len = 1, .value = "v", .value_len = 1,
                           .timeout_ms = 200};
    ASSERT_EQ(ss_client_call_async(c, &q, timed_done, &quick), SS_OK);
    ss_client_request g = {.op = SS_REQ_GET, .key = "k", .key_len = 1, .timeout_ms = 300};
    ss_client_result r;
    ASSERT_EQ(ss_client_call(c, &g, &r), SS_E_TIMEOUT);
    ASSERT_EQ(r.status, SS_E_TIMEOUT);
    ss_client_result_free(&r);
    uint64_t took = now_ms() - t0;
    ASSERT_EQ(timed_calls(&quick), 1);
    ASSERT_EQ(quick.status, SS_E_TIMEOUT);
    printf("  the GET of 300 ms timed out after %llu ms, the SET of 200 ms after %lld ms\n", (unsigned long long)took,
           (long long)(quick.at - t0));
    /* The client counts on the monotonic clock, these times the wall
     * clock: each cut to whole milliseconds at its own phase, they may
     * differ by one. */
    ASSERT_TRUE(took + 1 >= 300 && took < 1300);
    ASSERT_TRUE(quick.at + 1 >= t0 + 200 && quick.at - t0 < 1200);
    ASSERT_EQ(timed_calls(&slow), 0);
    /* The expiry of each request: GET slow (20 s), SET (1 s), GET (1 s). */
    long expiry[3];
    for (int i = 0; i < 3; i++) {
        struct msg *m = client_wait(&spy, 2000);
        ASSERT_TRUE(m != NULL);
        expiry[i] = m->expiry;
    }
    ASSERT_EQ(expiry[0], 20);
    ASSERT_EQ(expiry[1], 1);
    ASSERT_EQ(expiry[2], 1);
    ss_client_request g5 = {.op = SS_REQ_GET, .key = "k", .key_len = 1, .timeout_ms = 4001};
    ASSERT_EQ(ss_client_call_async(c, &g5, NULL, NULL), SS_OK);
    struct msg *m = client_wait(&spy, 2000);
    ASSERT_TRUE(m != NULL);
    ASSERT_EQ(m->expiry, 5);
    /* An operation out of the list is refused before anything is sent. */
    ss_client_request bad = {.op = (enum ss_client_op)99, .key = "k", .key_len = 1};
    ASSERT_EQ(ss_client_call(c, &bad, NULL), SS_E_INVAL);
    ss_client_close(c);
    ASSERT_EQ(timed_calls(&slow), 1);
    ASSERT_EQ(slow.status, SS_E_CONNECTION);
    client_close(&spy);
    broker_stop(&b);
}

struct late_broker {
    struct broker *b;
    unsigned after_ms;
    uint64_t up_at; /* when it answered */
};

static void *late_start(void *arg)
{
    struct late_broker *l = arg;
    usleep(l->after_ms * 1000);
    broker_start(l->b);
    l->up_at = now_ms();
    return NULL;
}

/* The first connection retried: a broker that comes 1.5 s late is
 * reached (attempts 100, 200, 400, 400... ms apart); with nobody there,
 * the retries end after give_up_ms with the last reason; a broker that
 * refuses us ends them at once. */
TEST(client_first_connect_is_retried)
{
    struct broker b = {0};
    b.port = free_port();
    ss_client_options o = {.host = "127.0.0.1", .port = b.port, .client_id = "retry", .timeout_ms = 2000};
    ss_client_retry retry = {.first_ms = 100, .max_ms = 400, .give_up_ms = 700};
    char why[200];
    ss_client *c = NULL;
    uint64_t t0 = now_ms();
    ASSERT_EQ(ss_client_connect_retry(&o, &retry, &c, why, sizeof why), SS_E_CONNECTION);
    uint64_t took = now_ms() - t0;
    ASSERT_TRUE(took + 1 >= 700 && took < 1700); /* on the client's monotonic clock: a millisecond apart */
    ASSERT_STR(why, strlen(why), "Connection refused");
    /* Once, as before: the plain connect does not retry. */
    t0 = now_ms();
    ASSERT_EQ(ss_client_connect(&o, &c), SS_E_CONNECTION);
    ASSERT_TRUE(now_ms() - t0 < 500);

    struct late_broker l = {&b, 1500, 0};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, late_start, &l), 0);
    retry.give_up_ms = 15000;
    t0 = now_ms();
    ASSERT_EQ(ss_client_connect_retry(&o, &retry, &c, why, sizeof why), SS_OK);
    uint64_t connected = now_ms();
    took = connected - t0;
    ASSERT_EQ(pthread_join(t, NULL), 0);
    /* Within one delay (400 ms at most) of the broker's answering, and
     * what the scheduling adds. */
    uint64_t after = connected > l.up_at ? connected - l.up_at : 0;
    fprintf(stderr, "  connected after %llu ms, %llu ms after the broker answered\n", (unsigned long long)took,
            (unsigned long long)after);
    ASSERT_TRUE(took >= 1500);
    ASSERT_TRUE(after < 1000);
    ASSERT_EQ(ss_client_set(c, "k", 1, "v", 1, NULL, NULL), SS_OK);
    ss_client_close(c);
    broker_stop(&b);

    /* Refused by the broker: no retry. */
    struct broker closed = {0};
    snprintf(closed.extra, sizeof closed.extra, "allow_anonymous false\n");
    broker_start(&closed);
    o.port = closed.port;
    t0 = now_ms();
    ASSERT_EQ(ss_client_connect_retry(&o, &retry, &c, why, sizeof why), SS_E_CONNECTION);
    ASSERT_TRUE(now_ms() - t0 < 1000);
    ASSERT_STR(why, strlen(why), "the broker refused the connection: Not authorized");
    broker_stop(&closed);
}

/* examples/poll_example.c, started before its broker: it keeps trying,
 * connects when the broker comes, and its SET (with a timeout of its own)
 * and GET complete from its poll loop, in order. */
TEST(client_poll_example_runs)
{
    const char *example = getenv("SS_EXAMPLE");
    ASSERT_TRUE(example != NULL);
    char dir[600], exe[700], port[16], out[600], err[600];
    snprintf(dir, sizeof dir, "%s", example);
    snprintf(exe, sizeof exe, "%s/poll_example", dirname(dir));
    struct broker b = {0};
    b.port = free_port();
    snprintf(port, sizeof port, "%d", b.port);
    snprintf(out, sizeof out, "%s/poll.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/poll.err", test_tmpdir());
    char *argv[] = {exe, "127.0.0.1", port, NULL};
    pid_t pid = spawn_cmd(argv, out, err);
    ASSERT_TRUE(pid > 0);
    usleep(500 * 1000); /* its first attempt fails */
    broker_start(&b);
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    size_t len;
    char *text = slurp(out, &len);
    ASSERT_STR(text, len, "connected\nset: applied\nget: hello\n");
    free(text);
    broker_stop(&b);
}
