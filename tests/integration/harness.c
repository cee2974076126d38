/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* harness.c - see harness.h. */
#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../core/buf.h"
#include "../../core/codec.h"
#include "../test.h"
#include "etcd_cluster.h"
#include "held.h"

uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Ports are taken from 20000-31999, below Linux's ephemeral range
 * (32768-60999): a port the kernel hands out there may become the local
 * port of some outgoing connection (etcd members dial each other) before
 * the server that was meant to listen on it binds it. A port is free when
 * it can be bound now; none is handed out twice by one process. Runs of
 * the tests side by side (CI) give each its own part of that range,
 * SS_PORT_RANGE=LOW-HIGH: a port one run found free and has not bound yet,
 * or freed between a broker's stop and its restart, is never the other's. */
static void port_range(int *low, int *high)
{
    *low = 20000;
    *high = 31999;
    const char *r = getenv("SS_PORT_RANGE");
    int l, h;
    if (r != NULL && sscanf(r, "%d-%d", &l, &h) == 2 && l >= 1024 && h <= 32767 && h - l >= 99) {
        *low = l;
        *high = h;
    }
}

int free_port(void)
{
    static int given[256];
    static int ngiven;
    static unsigned seed;
    if (seed == 0)
        seed = (unsigned)getpid() ^ (unsigned)now_ms();
    int low, high;
    port_range(&low, &high);
    for (int tries = 0; tries < 10000; tries++) {
        int p = low + (int)(rand_r(&seed) % (unsigned)(high - low + 1));
        bool used = false;
        for (int i = 0; i < ngiven; i++)
            used = used || given[i] == p;
        if (used)
            continue;
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0)
            close(fd);
        if (!ok)
            continue;
        if (ngiven < 256)
            given[ngiven++] = p;
        return p;
    }
    test_fail(__FILE__, __LINE__, "no free port");
    return -1;
}

bool port_open(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    return ok;
}

bool harness_on_etcd(void)
{
    const char *be = getenv("SS_BACKEND");
    return be && strcmp(be, "etcd") == 0;
}

/* With SS_BACKEND=etcd, every broker of a test runs on one 3-member
 * cluster started with the test's first broker (its members are stopped
 * with the test's process group). Each data directory names a prefix of
 * its own, so that a restarted broker finds its data, and two brokers of
 * one test on the same directory share it. */
static const char *harness_etcd_lines(const struct broker *b, char *out, size_t n)
{
    static struct etcd_cluster cluster;
    static bool started;
    if (!started) {
        etcd_cluster_start(&cluster, 3);
        started = true;
    }
    snprintf(out, n, "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix %s/\n",
             cluster.endpoints, b->data);
    return out;
}

static void write_conf(struct broker *b)
{
    const char *plugin = b->plugin[0] ? b->plugin : getenv("SS_PLUGIN");
    if (plugin == NULL)
        test_fail(__FILE__, __LINE__, "SS_PLUGIN is not set");
    if (b->port == 0)
        b->port = free_port();
    if (b->data[0] == '\0')
        snprintf(b->data, sizeof b->data, "%s/data", test_tmpdir());
    if (b->name[0]) {
        snprintf(b->conf, sizeof b->conf, "%s/%s.conf", test_tmpdir(), b->name);
        snprintf(b->log, sizeof b->log, "%s/%s.log", test_tmpdir(), b->name);
    } else {
        snprintf(b->conf, sizeof b->conf, "%s/mosquitto.conf", test_tmpdir());
        snprintf(b->log, sizeof b->log, "%s/broker.log", test_tmpdir());
    }
    char etcd[1200] = "";
    if (harness_on_etcd() && !b->no_plugin)
        harness_etcd_lines(b, etcd, sizeof etcd);
    FILE *f = fopen(b->conf, "w");
    ASSERT_TRUE(f != NULL);
    char user[48] = "";
    if (getuid() == 0)
        snprintf(user, sizeof user, "user %s\n", b->user[0] ? b->user : "root");
    fprintf(f,
            "%s%slistener %d 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"
            "log_type all\n%s%s\n%s%s\n%s%s",
            b->head, user, b->port, b->no_plugin ? "#" : "plugin ", plugin,
            b->no_plugin ? "#" : "plugin_opt_data_dir ", b->data, etcd, b->extra);
    fclose(f);
}

/* Child side of spawn: opt added to the sanitizer options in variable
 * var, after what the environment says already. */
static void add_sanitizer_option(const char *var, const char *opt)
{
    const char *had = getenv(var);
    char both[1600];
    snprintf(both, sizeof both, "%s%s%s", had ? had : "", had ? ":" : "", opt);
    setenv(var, both, 1);
}

/* Mosquitto 2.0.11 never frees what it allocates for a websockets
 * listener (mosq_websockets_init): a leak of the broker's own at its exit,
 * which LeakSanitizer and valgrind would report. For a broker with such a
 * listener (child side of spawn): suppressions of exactly that, written
 * beside its log; LeakSanitizer's through the environment (with full
 * stacks, which it cannot take in the broker otherwise), valgrind's as an
 * option into supp ("" when none). A test that meets another leak of
 * Mosquitto's own names its function (b->mosquitto_leak): LeakSanitizer
 * is told of it the same way (those tests do not run under valgrind). */
static void broker_leak_suppressions(const struct broker *b, char *supp, size_t n)
{
    supp[0] = '\0';
    bool ws = strstr(b->extra, "protocol websockets") != NULL;
    if (!ws && b->mosquitto_leak == NULL)
        return;
    char lsan[560], vg[560], rules[200];
    snprintf(lsan, sizeof lsan, "%s.lsan.supp", b->log);
    snprintf(vg, sizeof vg, "%s.valgrind.supp", b->log);
    snprintf(rules, sizeof rules, "%s%s%s%s", ws ? "leak:mosq_websockets_init\n" : "",
             b->mosquitto_leak ? "leak:" : "", b->mosquitto_leak ? b->mosquitto_leak : "",
             b->mosquitto_leak ? "\n" : "");
    write_text(lsan, rules);
    write_text(vg, "{\n   mosquitto-2.0-websockets-listener\n   Memcheck:Leak\n   match-leak-kinds: definite\n"
                   "   fun:calloc\n   fun:mosquitto__calloc\n   fun:mosq_websockets_init\n}\n");
    char opt[600];
    snprintf(opt, sizeof opt, "suppressions=%s", lsan);
    add_sanitizer_option("LSAN_OPTIONS", opt);
    add_sanitizer_option("ASAN_OPTIONS", "fast_unwind_on_malloc=0");
    snprintf(supp, n, "--suppressions=%s", vg);
}

/* full_stacks: a broker expected to refuse to start (broker_start_fails),
 * whose leak report is read for the plugin's frames. Mosquitto is built
 * without frame pointers: AddressSanitizer's fast unwinding stops in its
 * allocation wrappers (mosquitto__strdup), before any caller, the plugin's
 * calls of mosquitto_malloc and the like included. A refused start is
 * short, so the slow unwinding costs little there. */
static void spawn(struct broker *b, bool full_stacks)
{
    /* Each start has a log of its own. */
    FILE *f = fopen(b->log, "w");
    if (f)
        fclose(f);
    fflush(NULL);
    b->pid = fork();
    if (b->pid == 0) {
        int fd = open(b->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        /* A sanitizer build of the plugin needs its runtime loaded first. */
        const char *preload = getenv("SS_BROKER_PRELOAD");
        char libs[2048];
        snprintf(libs, sizeof libs, "%s %s", preload ? preload : "", b->preload);
        if (libs[strspn(libs, " ")] != '\0')
            setenv("LD_PRELOAD", libs, 1);
        char supp[600];
        broker_leak_suppressions(b, supp, sizeof supp);
        if (full_stacks)
            add_sanitizer_option("ASAN_OPTIONS", "fast_unwind_on_malloc=0");
        if (b->held_at_lock)
            held_prepare();
        if (getenv("SS_BROKER_VALGRIND"))
            execlp("valgrind", "valgrind", "-q", "--leak-check=full", "--errors-for-leak-kinds=definite",
                   "--error-exitcode=99", supp[0] ? supp : "--leak-check=full", "mosquitto", "-c", b->conf,
                   (char *)NULL);
        else
            execlp("mosquitto", "mosquitto", "-c", b->conf, (char *)NULL);
        _exit(127);
    }
}

/* True when the broker serves: its port answers and its log says it is
 * running. Mosquitto 2.0 opens its listeners in turn and serves none
 * before the last is open, and the port of the first answers (the kernel
 * queues the connection) before then. A websockets listener is the slow
 * one: libwebsockets loads the system's CA certificates first, over 5 s
 * under AddressSanitizer with full stacks. Its log is asked, not its port:
 * a connection to a websockets listener is a use of it, which changes what
 * the plugin does (test_websockets.c). */
static bool broker_serves(const struct broker *b)
{
    return port_open(b->port) && broker_log_has(b, " running\n");
}

/* Start the broker and wait (up to 30 s) until it serves or it exits.
 * Returns -1 if it is running, -2 if it neither serves nor exited, else
 * its exit status. full_stacks: see spawn. */
static int start_and_wait(struct broker *b, bool full_stacks)
{
    write_conf(b);
    spawn(b, full_stacks);
    if (b->held_at_lock) {
        static const long lock[] = {SYS_flock};
        long fd = held_until(b->pid, lock, 1);
        /* Held at the lock of its data directory, not some other flock. */
        char link[64], target[1024];
        snprintf(link, sizeof link, "/proc/%d/fd/%ld", (int)b->pid, fd);
        ssize_t len = readlink(link, target, sizeof target - 1);
        ASSERT_TRUE(len > 0);
        target[len] = '\0';
        ASSERT_TRUE(len >= 16 && strcmp(target + len - 16, "/statestore.lock") == 0);
        b->held_at_lock(b->held_ctx);
        held_release(b->pid);
    }
    for (int i = 0; i < 3000; i++) {
        int status;
        if (waitpid(b->pid, &status, WNOHANG) == b->pid) {
            b->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        }
        if (broker_serves(b))
            return -1;
        usleep(10000);
    }
    return -2;
}

/* A broker's log, where the test's output shows it when the broker ended
 * at start or did not stop cleanly: the test's directory, and the log, are
 * gone once the test has ended. A sanitizer's report is printed from its
 * first line (200 lines at most); otherwise the log's last 30 lines. */
static void broker_print_log(const struct broker *b, const char *how, int code)
{
    fprintf(stderr, "  mosquitto (%s) %s %d; its log:\n", b->name[0] ? b->name : "broker", how, code);
    FILE *f = fopen(b->log, "r");
    if (f == NULL)
        return;
    char line[1024];
    long report = -1, lines = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (report < 0 && (strstr(line, "Sanitizer") != NULL || strstr(line, "runtime error:") != NULL))
            report = lines;
        lines++;
    }
    long from = report >= 0 ? report : (lines > 30 ? lines - 30 : 0), to = report >= 0 ? report + 200 : lines;
    rewind(f);
    for (long n = 0; fgets(line, sizeof line, f) != NULL && n < to; n++)
        if (n >= from)
            fprintf(stderr, "  | %s", line);
    fclose(f);
}

void broker_start(struct broker *b)
{
    int rc = start_and_wait(b, false);
    if (rc >= 0) {
        broker_print_log(b, "exited at start with", rc);
        test_fail(__FILE__, __LINE__, "mosquitto exited at start");
    }
    if (rc == -2)
        test_fail(__FILE__, __LINE__, "mosquitto did not open its port");
}

/* True when a frame line of a sanitizer's report (a line "#N 0x... in
 * function file:line", or "(object+0x...)" without symbols) is in the
 * plugin: its shared object, or a source file of what is linked into it. */
static bool frame_in_plugin(const char *line)
{
    const char *p = line + strspn(line, " \t");
    if (*p != '#')
        return false;
    static const char *const marks[] = {"statestore.so", "plugin/", "core/", "etcd/", "backends/"};
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (strstr(p, marks[i]) != NULL)
            return true;
    return false;
}

/* True when the broker's log has a sanitizer's report that is not
 * Mosquitto's own: a memory error, undefined behaviour or a data race
 * anywhere, or a leak report with a frame in the plugin. Mosquitto 2.0
 * leaks its configuration and the plugin's entry on every refused start
 * (frames of its own only: mosquitto__strdup, mosquitto__calloc,
 * config__read, plugin__load_v5): that report is no fault of ours, and is
 * not counted. */
static bool broker_log_has_sanitizer_report(const struct broker *b)
{
    FILE *f = fopen(b->log, "r");
    if (f == NULL)
        return false;
    char line[4096];
    bool in_leak_report = false, found = false;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        if (strstr(line, "ERROR: AddressSanitizer") != NULL || strstr(line, "runtime error:") != NULL ||
            strstr(line, "WARNING: ThreadSanitizer") != NULL)
            found = true;
        else if (strstr(line, "ERROR: LeakSanitizer") != NULL)
            in_leak_report = true;
        else if (in_leak_report && frame_in_plugin(line))
            found = true;
    }
    fclose(f);
    return found;
}

int broker_start_fails(struct broker *b)
{
    int rc = start_and_wait(b, true);
    if (rc < 0) {
        broker_kill9(b); /* it came up: not the failure expected */
        return 0;
    }
    /* The exit status alone passes a refusal that a sanitizer ended (an
     * AddressSanitizer abort exits non-zero too), and a leak on the way
     * out. */
    if (broker_log_has_sanitizer_report(b)) {
        broker_print_log(b, "refused to start with a sanitizer's report, exit status", rc);
        test_fail(__FILE__, __LINE__, "a sanitizer reported on the broker's refused start");
    }
    return rc;
}

static int stop_with(struct broker *b, int sig)
{
    if (b->pid <= 0)
        return 0;
    kill(b->pid, sig);
    int status = 0;
    /* Mosquitto 2.0 loses a SIGTERM that arrives after it installs its
     * handler but before it enters its loop (it sets its run flag only
     * then); under valgrind that window is wide. Asking again each second
     * is harmless: the handler only clears that flag. */
    for (int waited_ms = 0;; waited_ms += 10) {
        pid_t r = waitpid(b->pid, &status, WNOHANG);
        if (r == b->pid || (r < 0 && errno != EINTR))
            break;
        if (waited_ms > 0 && waited_ms % 1000 == 0)
            kill(b->pid, sig);
        usleep(10000);
    }
    b->pid = 0;
    return status;
}

/* Wait up to 2 s for the broker on port to answer an MQTT CONNECT:
 * Mosquitto 2.0 opens its port before it installs its SIGTERM handler,
 * and answers only from its loop, after. A SIGTERM in between ends it by
 * the signal, not by a clean stop. Best effort: a listener that does not
 * speak plain MQTT is not waited for longer. */
static void wait_for_loop(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    static const uint8_t connect_packet[] = {0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 5, 0, 0, 0};
    uint8_t ack[64];
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        write(fd, connect_packet, sizeof connect_packet) == (ssize_t)sizeof connect_packet)
        (void)read(fd, ack, sizeof ack);
    close(fd);
}

void broker_stop(struct broker *b)
{
    /* A clean stop exits 0: under the sanitizers a leak or memory error in
     * the plugin would make it exit otherwise. */
    if (b->pid > 0)
        wait_for_loop(b->port);
    int status = stop_with(b, SIGTERM);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status))
            broker_print_log(b, "exited with", WEXITSTATUS(status));
        else
            broker_print_log(b, "ended by signal", WTERMSIG(status));
        test_fail(__FILE__, __LINE__, "mosquitto did not exit cleanly");
    }
}

/* A broker that ended by itself while the test took it to be running
 * (an AddressSanitizer abort, a crash, an exit on an error): its log, and
 * the test fails. */
static void broker_ended_by_itself(const struct broker *b, int status)
{
    if (WIFEXITED(status))
        broker_print_log(b, "had exited by itself with", WEXITSTATUS(status));
    else
        broker_print_log(b, "had been ended by signal", WTERMSIG(status));
    test_fail(__FILE__, __LINE__, "mosquitto ended by itself before it was killed");
}

void broker_kill9(struct broker *b)
{
    if (b->pid <= 0)
        return;
    /* A SIGKILL's status says nothing of how the broker was doing: one
     * that had already ended by itself would pass for one killed here.
     * Asked first without waiting (0 while it runs; a stopped one too,
     * without WUNTRACED). */
    int status = 0;
    pid_t r;
    while ((r = waitpid(b->pid, &status, WNOHANG)) < 0 && errno == EINTR)
        ;
    if (r == b->pid) {
        b->pid = 0;
        broker_ended_by_itself(b, status);
    }
    /* One that ends by itself between that look and the kill (a zombie
     * takes no signal) keeps its own status. stop_with returns 0 when
     * waitpid gave none, so an exit 0 in that instant is not told apart. */
    status = stop_with(b, SIGKILL);
    if (status != 0 && !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL))
        broker_ended_by_itself(b, status);
}

void broker_named(struct broker *b, const char *name)
{
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    snprintf(b->data, sizeof b->data, "%s/data-%s", test_tmpdir(), name);
}

void broker_refuses(const char *name, const char *extra, const char *text)
{
    struct broker b;
    broker_named(&b, name);
    snprintf(b.extra, sizeof b.extra, "%s", extra);
    ASSERT_TRUE(broker_start_fails(&b) != 0);
    if (!broker_log_has(&b, text))
        test_fail(__FILE__, __LINE__, "the refusing broker's log does not say why");
}

void broker_on_etcd(struct broker *b, const char *name, const char *endpoints, const char *more)
{
    broker_named(b, name);
    snprintf(b->extra, sizeof b->extra, "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\n%s", endpoints,
             more);
    broker_start(b);
}

const char *status_line(const char *out, const char *name, char *value, size_t cap)
{
    char head[40];
    snprintf(head, sizeof head, "%-18s ", name);
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, head, strlen(head)) == 0) {
            size_t n = strcspn(line + strlen(head), "\n");
            snprintf(value, cap, "%.*s", (int)n, line + strlen(head));
            return value;
        }
    }
    return NULL;
}

int broker_log_count(const struct broker *b, const char *text)
{
    FILE *f = fopen(b->log, "r");
    if (f == NULL)
        return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, text) != NULL;
    fclose(f);
    return n;
}

bool broker_log_has(const struct broker *b, const char *text)
{
    return broker_log_count(b, text) > 0;
}

/* ---- raw MQTT 5, for what libmosquitto will not send ---------------- */

void raw_put_varint(uint8_t *b, size_t *n, size_t v)
{
    do {
        uint8_t byte = v % 128;
        v /= 128;
        b[(*n)++] = (uint8_t)(byte | (v ? 0x80 : 0));
    } while (v);
}

void raw_put_str(uint8_t *b, size_t *n, const void *s, size_t len)
{
    b[(*n)++] = (uint8_t)(len >> 8);
    b[(*n)++] = (uint8_t)len;
    memcpy(b + *n, s, len);
    *n += len;
}

int raw_connect(int port, const char *id)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT_EQ(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    uint8_t body[256], pkt[300];
    size_t n = 0, m = 0;
    raw_put_str(body, &n, "MQTT", 4);
    body[n++] = 5;    /* protocol version */
    body[n++] = 0x02; /* clean start */
    body[n++] = 0;
    body[n++] = 60; /* keepalive */
    body[n++] = 0;  /* no properties */
    raw_put_str(body, &n, id, strlen(id));
    pkt[m++] = 0x10;
    raw_put_varint(pkt, &m, n);
    memcpy(pkt + m, body, n);
    ASSERT_EQ(write(fd, pkt, m + n), (ssize_t)(m + n));
    uint8_t ack[64];
    ASSERT_TRUE(read(fd, ack, sizeof ack) >= 4);
    ASSERT_EQ(ack[0], 0x20);
    return fd;
}

size_t raw_request(uint8_t *out, size_t cap, uint16_t packet_id, const char *resp, const char *corr,
                   const char *const *words)
{
    static uint8_t body[2 << 20];
    size_t n = 0, m = 0, pn = 0;
    uint8_t props[1024];
    props[pn++] = 0x08; /* response topic */
    raw_put_str(props, &pn, resp, strlen(resp));
    props[pn++] = 0x09; /* correlation data */
    raw_put_str(props, &pn, corr, strlen(corr));
    char ts[64];
    snprintf(ts, sizeof ts, "%015llu:00000:raw", (unsigned long long)now_ms());
    props[pn++] = 0x26; /* user property __ts */
    raw_put_str(props, &pn, "__ts", 4);
    raw_put_str(props, &pn, ts, strlen(ts));
    raw_put_str(body, &n, REQ_TOPIC, strlen(REQ_TOPIC));
    body[n++] = (uint8_t)(packet_id >> 8);
    body[n++] = (uint8_t)packet_id;
    raw_put_varint(body, &n, pn);
    memcpy(body + n, props, pn);
    n += pn;
    int plen = encode_request(body + n, (int)(sizeof body - n), words, NULL);
    ASSERT_TRUE(plen > 0);
    n += (size_t)plen;
    ASSERT_TRUE(n + 5 <= cap);
    out[m++] = 0x32; /* PUBLISH, QoS 1 */
    raw_put_varint(out, &m, n);
    memcpy(out + m, body, n);
    return m + n;
}

/* ---- running programs -------------------------------------------------- */

char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    size_t n = 0, cap = 1024;
    char *buf = malloc(cap);
    if (f) {
        size_t got;
        while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
            n += got;
            if (n + 1 == cap)
                buf = realloc(buf, cap *= 2);
        }
        fclose(f);
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

pid_t spawn_cmd_from(char *const argv[], int in_fd, const char *out_path, const char *err_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

pid_t spawn_cmd(char *const argv[], const char *out_path, const char *err_path)
{
    return spawn_cmd_from(argv, -1, out_path, err_path);
}

void run_cmd(char *const argv[], const void *in, size_t inlen, struct run *r)
{
    char out_path[600], err_path[600], in_path[600];
    snprintf(out_path, sizeof out_path, "%s/run.out", test_tmpdir());
    snprintf(err_path, sizeof err_path, "%s/run.err", test_tmpdir());
    snprintf(in_path, sizeof in_path, "%s/run.in", test_tmpdir());
    FILE *f = fopen(in_path, "wb");
    if (inlen)
        fwrite(in, 1, inlen, f);
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int i = open(in_path, O_RDONLY);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(i, 0);
        dup2(o, 1);
        dup2(e, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    uint64_t end = now_ms() + 20000;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (now_ms() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            test_fail(__FILE__, __LINE__, "command did not finish in 20 s");
        }
        usleep(2000);
    }
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->out = slurp(out_path, &r->out_len);
    r->err = slurp(err_path, NULL);
}

void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

bool test_quick(void)
{
    const char *q = getenv("SS_TEST_QUICK");
    return q != NULL && strcmp(q, "1") == 0;
}

const char *cli_path(void)
{
    const char *p = getenv("SS_CLI");
    if (p == NULL)
        test_fail(__FILE__, __LINE__, "SS_CLI is not set");
    return p;
}

/* Run the tool: "-p PORT" unless port is 0, then the arguments of ap. */
static void cli_run_v(struct run *r, int port, const void *in, size_t inlen, va_list ap)
{
    char *argv[64];
    char portbuf[16];
    int n = 0;
    argv[n++] = (char *)cli_path();
    if (port) {
        argv[n++] = "-p";
        snprintf(portbuf, sizeof portbuf, "%d", port);
        argv[n++] = portbuf;
    }
    char *a;
    while ((a = va_arg(ap, char *)) != NULL && n < 63)
        argv[n++] = a;
    argv[n] = NULL;
    run_cmd(argv, in, inlen, r);
}

void cli_tool(struct run *r, ...)
{
    va_list ap;
    va_start(ap, r);
    cli_run_v(r, 0, NULL, 0, ap);
    va_end(ap);
}

void cli_run(struct run *r, int port, const void *in, size_t inlen, ...)
{
    va_list ap;
    va_start(ap, inlen);
    cli_run_v(r, port, in, inlen, ap);
    va_end(ap);
}

void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ASSERT_TRUE(f != NULL);
    fputs(text, f);
    fclose(f);
}

void tls_certs(const char *dir, const char *san, bool client)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd %s && exec >openssl.log 2>&1 && "
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca && "
             "printf 'subjectAltName=%s' > san.ext && "
             "for who in server %s; do "
             "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $who.key "
             "-out $who.csr -subj /CN=$who && "
             "openssl x509 -req -in $who.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $who.crt "
             "-days 2 -extfile san.ext || exit 1; done",
             dir, san, client ? "client" : "");
    ASSERT_EQ(system(cmd), 0);
}

void cli_words(struct run *r, int port, const char *const *words)
{
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%d", port);
    char *argv[16] = {(char *)cli_path(), "-p", portbuf};
    int n = 3;
    for (int i = 0; words[i]; i++) {
        if (n == 15)
            test_fail(__FILE__, __LINE__, "cli_words: more than 12 words");
        argv[n++] = (char *)words[i];
    }
    argv[n] = NULL;
    run_cmd(argv, NULL, 0, r);
}

long long broker_figure(int port, const char *name)
{
    struct run r;
    cli_words(&r, port, W("stats"));
    ASSERT_EQ(r.status, 0);
    long long v = 0;
    char want[80];
    snprintf(want, sizeof want, "\n%s ", name);
    const char *at = r.out ? strstr(r.out, want) : NULL;
    if (at)
        v = atoll(at + strlen(want) + strspn(at + strlen(want), " "));
    run_free(&r);
    return v;
}
