/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* wswake.c - turn the broker's loop often while its websockets listeners
 * are in use (wswake.h). */
#define _GNU_SOURCE /* pipe2 */
#include "wswake.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/latency.h"
#include "waker.h"

/* How often the broker's descriptors are looked through until the
 * listening sockets are found, and for how long: the broker opens its
 * listeners just after the plugin starts. */
#define SS_WSWAKE_SCAN_MS 50
#define SS_WSWAKE_SCAN_FOR_MS 10000
/* A connection that waits to be accepted for good (the broker out of
 * descriptors): looked at again this often, not in a spin. */
#define SS_WSWAKE_PENDING_MS 1000

static uint64_t ss_wswake__now_ms(void)
{
    return ss_mono_us() / 1000;
}

/* The port fd listens on, or 0 when it is not a listening TCP socket. */
static uint16_t ss_wswake__listening_port(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
        return 0;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
        return 0;
    struct sockaddr_storage ss;
    len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

/* Copies of this process's listening sockets on w's ports, into fds (the
 * broker's thread: the descriptors are its own). */
static int ss_wswake__scan(const struct ss_wswake *w, int *fds, int max)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    while (n < max && (e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end != '\0' || end == e->d_name || fd == dirfd(d) || fd == w->pipe[0] || fd == w->pipe[1])
            continue;
        uint16_t port = ss_wswake__listening_port((int)fd);
        for (int i = 0; port && i < w->nports; i++) {
            if (w->ports[i] == port) {
                int copy = fcntl((int)fd, F_DUPFD_CLOEXEC, 0);
                if (copy >= 0)
                    fds[n++] = copy;
                break;
            }
        }
    }
    closedir(d);
    return n;
}

bool ss_wswake_tick(struct ss_wswake *w)
{
    uint64_t now = ss_wswake__now_ms();
    if (now < w->next_scan_ms)
        return true;
    if (now - w->started_ms >= SS_WSWAKE_SCAN_FOR_MS) {
        w->looking = false; /* the broker opens its listeners at start: none will come */
        return false;
    }
    w->next_scan_ms = now + SS_WSWAKE_SCAN_MS;
    int fds[SS_WSWAKE_FDS_MAX];
    int n = ss_wswake__scan(w, fds, SS_WSWAKE_FDS_MAX);
    if (n == 0)
        return true;
    pthread_mutex_lock(&w->mu);
    memcpy(w->fds, fds, (size_t)n * sizeof *fds);
    w->nfds = n;
    pthread_mutex_unlock(&w->mu);
    w->looking = false;
    char b = 1;
    if (write(w->pipe[1], &b, 1) != 1) {
        /* a full pipe already says the same */
    }
    return true;
}

static void ss_wswake__wake(struct ss_wswake *w)
{
    pthread_kill(w->broker, SS_WAKE_SIGNAL);
    atomic_fetch_add_explicit(&w->wakes, 1, memory_order_relaxed);
}

static void ss_wswake__extend(struct ss_wswake *w)
{
    atomic_store_explicit(&w->fast_until_ms, ss_wswake__now_ms() + SS_WSWAKE_WINDOW_MS, memory_order_relaxed);
}

/* The pipe is readable: true when it says stop (its write end closed);
 * otherwise take the new descriptors into fds[1...]. */
static bool ss_wswake__news(struct ss_wswake *w, struct pollfd *fds, int *n)
{
    char b[16];
    ssize_t r = read(w->pipe[0], b, sizeof b);
    if (r == 0)
        return true;
    if (r < 0)
        return errno != EINTR && errno != EAGAIN;
    pthread_mutex_lock(&w->mu);
    for (int i = 0; i < w->nfds; i++) {
        fds[1 + i].fd = w->fds[i];
        fds[1 + i].events = POLLIN;
    }
    *n = w->nfds;
    pthread_mutex_unlock(&w->mu);
    return false;
}

static void *ss_wswake__main(void *arg)
{
    struct ss_wswake *w = arg;
    /* fds[0]: the pipe; then the copies of the listening sockets. */
    struct pollfd fds[1 + SS_WSWAKE_FDS_MAX];
    fds[0].fd = w->pipe[0];
    fds[0].events = POLLIN;
    int n = 0;
    bool pending = false; /* a connection waited to be accepted at the last look */
    for (;;) {
        bool fast = ss_wswake__now_ms() < atomic_load_explicit(&w->fast_until_ms, memory_order_relaxed);
        /* Fast: sleep wake_ms, wake the broker, then look at the listeners
         * without waiting. Otherwise wait for a connection, or for news
         * (descriptors found, a message over WebSockets that opens the
         * window, the end). The listeners are not waited on while a
         * connection that was there at the last look is still there: that
         * poll would end at once, again and again. */
        bool wait_on_listeners = !fast && !pending;
        int ready = poll(fds, wait_on_listeners ? (nfds_t)(1 + n) : 1,
                         fast ? (int)w->wake_ms : pending ? SS_WSWAKE_PENDING_MS : -1);
        if (ready > 0 && fds[0].revents) {
            if (ss_wswake__news(w, fds, &n))
                break;
            continue;
        }
        if (fast)
            ss_wswake__wake(w);
        if (!wait_on_listeners)
            ready = n ? poll(fds + 1, (nfds_t)n, 0) : 0;
        bool now_pending = false;
        for (int i = 1; ready > 0 && i <= n; i++)
            now_pending |= (fds[i].revents & POLLIN) != 0;
        /* A connection arrives: the window opens (or goes on). One that
         * stays unaccepted does not keep it open. */
        if (now_pending && !pending) {
            ss_wswake__extend(w);
            if (!fast)
                ss_wswake__wake(w);
        }
        pending = now_pending;
    }
    return NULL;
}

int ss_wswake_start(struct ss_wswake *w, const uint16_t *ports, int n, unsigned wake_ms)
{
    memset(w, 0, sizeof *w);
    w->pipe[0] = w->pipe[1] = -1;
    if (n <= 0 || wake_ms == 0)
        return SS_OK;
    w->broker = pthread_self();
    w->wake_ms = wake_ms;
    w->nports = n < SS_WSWAKE_PORTS_MAX ? n : SS_WSWAKE_PORTS_MAX;
    memcpy(w->ports, ports, (size_t)w->nports * sizeof *ports);
    w->started_ms = ss_wswake__now_ms();
    if (pipe2(w->pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return SS_E_NOMEM;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        close(w->pipe[0]);
        close(w->pipe[1]);
        return SS_E_NOMEM;
    }
    /* The broker's thread alone takes the wake signal. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, ss_wswake__main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_mutex_destroy(&w->mu);
        close(w->pipe[0]);
        close(w->pipe[1]);
        w->pipe[0] = w->pipe[1] = -1;
        return SS_E_NOMEM;
    }
    w->live = true;
    w->looking = true;
    return SS_OK;
}

void ss_wswake_used(struct ss_wswake *w)
{
    if (!w->live)
        return;
    uint64_t now = ss_wswake__now_ms();
    uint64_t until = atomic_exchange_explicit(&w->fast_until_ms, now + SS_WSWAKE_WINDOW_MS, memory_order_relaxed);
    char b = 0;
    if (now >= until && write(w->pipe[1], &b, 1) != 1) {
        /* a full pipe wakes the thread all the same */
    }
}

void ss_wswake_stop(struct ss_wswake *w)
{
    if (!w->live)
        return;
    close(w->pipe[1]); /* the thread sees the pipe's end */
    pthread_join(w->thread, NULL);
    close(w->pipe[0]);
    for (int i = 0; i < w->nfds; i++)
        close(w->fds[i]);
    pthread_mutex_destroy(&w->mu);
    w->pipe[0] = w->pipe[1] = -1;
    w->nfds = 0;
    w->live = false;
    w->looking = false;
}
