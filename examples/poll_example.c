/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* poll_example.c - the statestore C client inside an application's own
 * poll(2) loop: no thread of the library's, every callback inside
 * ss_client_process.
 *
 * Build:  cc poll_example.c $(pkg-config --cflags --libs statestore) -o poll_example
 * Run:    ./poll_example [HOST] [PORT]
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <statestore/client.h>
#include <statestore/errors.h>

struct app {
    ss_client *c;
    int step; /* 0 connecting, 1 SET sent, 2 GET sent, 3 done */
    int status;
};

static void on_get(void *ud, const ss_client_result *r)
{
    struct app *a = ud;
    if (r->status == 0 && r->found)
        printf("get: %.*s\n", (int)r->value_len, (const char *)r->value);
    a->status = r->status;
    a->step = 3;
}

static void on_set(void *ud, const ss_client_result *r)
{
    struct app *a = ud;
    printf("set: %s\n", r->status == 0 && r->applied ? "applied" : ss_strerror(r->status));
    /* The next call starts from the callback: it is sent by the loop. */
    a->status = ss_client_get_async(a->c, "greeting", 8, on_get, a);
    a->step = a->status == 0 ? 2 : 3;
}

static void on_connection(void *ud, bool connected, bool gap)
{
    struct app *a = ud;
    (void)gap;
    printf("%s\n", connected ? "connected" : "connection lost");
    if (connected && a->step == 0) {
        /* A timeout of its own for this call: 2 s, whatever the client's. */
        ss_client_request set = {.op = SS_REQ_SET, .key = "greeting", .key_len = 8,
                                 .value = "hello", .value_len = 5, .px_ms = 60000, .timeout_ms = 2000};
        a->status = ss_client_call_async(a->c, &set, on_set, a);
        a->step = a->status == 0 ? 1 : 3;
    }
}

int main(int argc, char **argv)
{
    ss_client_options opts = {
        .host = argc > 1 ? argv[1] : "localhost",
        .port = argc > 2 ? atoi(argv[2]) : 1883,
        .timeout_ms = 5000,
    };
    struct app a = {0};
    int rc = ss_client_connect_start(&opts, &a.c);
    if (rc != 0) {
        fprintf(stderr, "connect: %s\n", ss_strerror(rc));
        return 1;
    }
    ss_client_set_connection_cb(a.c, on_connection, &a);
    /* The client retries the connection by itself; give up after 30 s. */
    time_t give_up = time(NULL) + 30;
    while (a.step != 3 && (a.step != 0 || time(NULL) < give_up)) {
        struct pollfd p = {.fd = ss_client_socket(a.c), .events = POLLIN};
        if (ss_client_want_write(a.c))
            p.events |= POLLOUT;
        int n = poll(&p, p.fd >= 0 ? 1 : 0, ss_client_timeout_ms(a.c));
        bool readable = n > 0 && (p.revents & (POLLIN | POLLERR | POLLHUP));
        bool writable = n > 0 && (p.revents & POLLOUT);
        ss_client_process(a.c, readable, writable);
    }
    if (a.step != 3)
        fprintf(stderr, "no connection\n");
    else if (a.status != 0)
        fprintf(stderr, "error: %s\n", ss_strerror(a.status));
    ss_client_close(a.c);
    return a.step == 3 && a.status == 0 ? 0 : 1;
}
