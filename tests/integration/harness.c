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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../core/buf.h"
#include "../../core/codec.h"
#include "../test.h"
#include "etcd_cluster.h"

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
 * it can be bound now; none is handed out twice by one process. */
int free_port(void)
{
    static int given[256];
    static int ngiven;
    static unsigned seed;
    if (seed == 0)
        seed = (unsigned)getpid() ^ (unsigned)now_ms();
    for (int tries = 0; tries < 10000; tries++) {
        int p = 20000 + (int)(rand_r(&seed) % 12000);
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
    const char *plugin = getenv("SS_PLUGIN");
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
    fprintf(f,
            "%slistener %d 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"
            "log_type all\n%s%s\n%s%s\n%s%s",
            getuid() == 0 ? "user root\n" : "", b->port, b->no_plugin ? "#" : "plugin ", plugin,
            b->no_plugin ? "#" : "plugin_opt_data_dir ", b->data, etcd, b->extra);
    fclose(f);
}

/* Mosquitto 2.0.11 never frees what it allocates for a websockets
 * listener (mosq_websockets_init): a leak of the broker's own at its exit,
 * which LeakSanitizer and valgrind would report. For a broker with such a
 * listener (child side of spawn): suppressions of exactly that, written
 * beside its log; LeakSanitizer's through the environment (with full
 * stacks, which it cannot take in the broker otherwise), valgrind's as an
 * option into supp ("" when none). */
static void broker_leak_suppressions(const struct broker *b, char *supp, size_t n)
{
    supp[0] = '\0';
    if (strstr(b->extra, "protocol websockets") == NULL)
        return;
    char lsan[560], vg[560];
    snprintf(lsan, sizeof lsan, "%s.lsan.supp", b->log);
    snprintf(vg, sizeof vg, "%s.valgrind.supp", b->log);
    write_text(lsan, "leak:mosq_websockets_init\n");
    write_text(vg, "{\n   mosquitto-2.0-websockets-listener\n   Memcheck:Leak\n   match-leak-kinds: definite\n"
                   "   fun:calloc\n   fun:mosquitto__calloc\n   fun:mosq_websockets_init\n}\n");
    /* Added to what the environment says already. */
    const char *had_lsan = getenv("LSAN_OPTIONS"), *had_asan = getenv("ASAN_OPTIONS");
    char opt[1600];
    snprintf(opt, sizeof opt, "%s%ssuppressions=%s", had_lsan ? had_lsan : "", had_lsan ? ":" : "", lsan);
    setenv("LSAN_OPTIONS", opt, 1);
    snprintf(opt, sizeof opt, "%s%sfast_unwind_on_malloc=0", had_asan ? had_asan : "", had_asan ? ":" : "");
    setenv("ASAN_OPTIONS", opt, 1);
    snprintf(supp, n, "--suppressions=%s", vg);
}

static void spawn(struct broker *b)
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
        if (getenv("SS_BROKER_VALGRIND"))
            execlp("valgrind", "valgrind", "-q", "--leak-check=full", "--errors-for-leak-kinds=definite",
                   "--error-exitcode=99", supp[0] ? supp : "--leak-check=full", "mosquitto", "-c", b->conf,
                   (char *)NULL);
        else
            execlp("mosquitto", "mosquitto", "-c", b->conf, (char *)NULL);
        _exit(127);
    }
}

/* Start the broker and wait (up to 30 s) until its port answers or it
 * exits. Returns -1 if it is running, else its exit status. */
static int start_and_wait(struct broker *b)
{
    write_conf(b);
    spawn(b);
    for (int i = 0; i < 3000; i++) {
        int status;
        if (waitpid(b->pid, &status, WNOHANG) == b->pid) {
            b->pid = 0;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        }
        if (port_open(b->port))
            return -1;
        usleep(10000);
    }
    return -2;
}

void broker_start(struct broker *b)
{
    int rc = start_and_wait(b);
    if (rc >= 0)
        test_fail(__FILE__, __LINE__, "mosquitto exited at start (see broker.log)");
    if (rc == -2)
        test_fail(__FILE__, __LINE__, "mosquitto did not open its port");
}

int broker_start_fails(struct broker *b)
{
    int rc = start_and_wait(b);
    if (rc >= 0)
        return rc;
    broker_kill9(b); /* it came up: not the failure expected */
    return 0;
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

void broker_stop(struct broker *b)
{
    /* A clean stop exits 0: under the sanitizers a leak or memory error in
     * the plugin would make it exit otherwise. */
    int status = stop_with(b, SIGTERM);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        test_fail(__FILE__, __LINE__, "mosquitto did not exit cleanly (see broker.log)");
}

void broker_kill9(struct broker *b)
{
    stop_with(b, SIGKILL);
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

bool broker_log_has(const struct broker *b, const char *text)
{
    FILE *f = fopen(b->log, "r");
    if (f == NULL)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, text) != NULL;
    fclose(f);
    return found;
}

/* ---- client --------------------------------------------------------- */

static void msg_free(struct msg *m)
{
    free(m->topic);
    free(m->payload);
    free(m->corr);
    free(m->content_type);
    free(m->response_topic);
    for (int i = 0; i < m->nuser; i++) {
        free(m->user[i][0]);
        free(m->user[i][1]);
    }
    memset(m, 0, sizeof *m);
}

static void on_connect(struct mosquitto *m, void *ud, int rc, int flags, const mosquitto_property *p)
{
    (void)m;
    (void)flags;
    (void)p;
    struct client *c = ud;
    if (rc == 0)
        c->connected = true;
}

static void on_disconnect(struct mosquitto *m, void *ud, int rc, const mosquitto_property *p)
{
    (void)m;
    (void)p;
    struct client *c = ud;
    c->disconnected = true;
    c->connected = false;
    c->disconnect_rc = rc;
}

static void on_publish(struct mosquitto *m, void *ud, int mid, int rc, const mosquitto_property *p)
{
    (void)m;
    (void)mid;
    (void)p;
    struct client *c = ud;
    c->last_puback_rc = rc;
    c->pubacks++;
}

static void on_subscribe(struct mosquitto *m, void *ud, int mid, int n, const int *granted,
                         const mosquitto_property *p)
{
    (void)m;
    (void)mid;
    (void)p;
    struct client *c = ud;
    c->last_suback = n > 0 ? granted[0] : -1;
    c->subacks++;
}

static void on_message(struct mosquitto *m, void *ud, const struct mosquitto_message *mm,
                       const mosquitto_property *props)
{
    (void)m;
    struct client *c = ud;
    if (c->count == c->cap) {
        /* Never drop one: a test that sends many requests before reading
         * the answers gets them all. */
        int cap = c->cap ? 2 * c->cap : 256;
        struct msg *q = calloc((size_t)cap, sizeof *q);
        ASSERT_TRUE(q != NULL);
        for (int i = 0; i < c->count; i++)
            q[i] = c->queue[(c->head + i) % c->cap];
        free(c->queue);
        c->queue = q;
        c->head = 0;
        c->cap = cap;
    }
    struct msg *x = &c->queue[(c->head + c->count++) % c->cap];
    memset(x, 0, sizeof *x);
    x->topic = strdup(mm->topic);
    x->len = mm->payloadlen;
    x->payload = malloc((size_t)mm->payloadlen + 1);
    memcpy(x->payload, mm->payload, (size_t)mm->payloadlen);
    x->payload[mm->payloadlen] = 0;
    x->qos = mm->qos;
    x->retain = mm->retain;
    x->expiry = -1;
    x->format = -1;
    for (const mosquitto_property *p = props; p; p = mosquitto_property_next(p)) {
        int id = mosquitto_property_identifier(p);
        if (id == MQTT_PROP_CORRELATION_DATA) {
            void *v;
            uint16_t n;
            mosquitto_property_read_binary(p, id, &v, &n, false);
            x->corr = v;
            x->corr_len = n;
        } else if (id == MQTT_PROP_CONTENT_TYPE) {
            mosquitto_property_read_string(p, id, &x->content_type, false);
        } else if (id == MQTT_PROP_RESPONSE_TOPIC) {
            mosquitto_property_read_string(p, id, &x->response_topic, false);
        } else if (id == MQTT_PROP_MESSAGE_EXPIRY_INTERVAL) {
            uint32_t v;
            mosquitto_property_read_int32(p, id, &v, false);
            x->expiry = (long)v;
        } else if (id == MQTT_PROP_PAYLOAD_FORMAT_INDICATOR) {
            uint8_t v;
            mosquitto_property_read_byte(p, id, &v, false);
            x->format = v;
        } else if (id == MQTT_PROP_USER_PROPERTY && x->nuser < 16) {
            mosquitto_property_read_string_pair(p, id, &x->user[x->nuser][0], &x->user[x->nuser][1],
                                                false);
            x->nuser++;
        }
    }
}

void client_connect(struct client *c, int port, const char *id, bool v311)
{
    client_connect_user(c, port, id, v311, NULL, NULL);
}

void client_connect_user(struct client *c, int port, const char *id, bool v311, const char *user,
                         const char *password)
{
    struct client_options o = {.port = port, .id = id, .v311 = v311, .user = user, .password = password};
    client_connect_with(c, &o);
}

void client_connect_with(struct client *c, const struct client_options *o)
{
    static int lib_ready;
    if (!lib_ready) {
        mosquitto_lib_init();
        lib_ready = 1;
    }
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", o->id);
    c->m = mosquitto_new(o->id, !o->session_expiry_s, c);
    ASSERT_TRUE(c->m != NULL);
    mosquitto_int_option(c->m, MOSQ_OPT_PROTOCOL_VERSION, o->v311 ? MQTT_PROTOCOL_V311 : MQTT_PROTOCOL_V5);
    mosquitto_int_option(c->m, MOSQ_OPT_TCP_NODELAY, 1);
    mosquitto_connect_v5_callback_set(c->m, on_connect);
    mosquitto_disconnect_v5_callback_set(c->m, on_disconnect);
    mosquitto_publish_v5_callback_set(c->m, on_publish);
    mosquitto_message_v5_callback_set(c->m, on_message);
    mosquitto_subscribe_v5_callback_set(c->m, on_subscribe);
    c->last_suback = -1;
    if (o->user)
        mosquitto_username_pw_set(c->m, o->user, o->password);
    mosquitto_property *props = NULL;
    if (o->session_expiry_s)
        ASSERT_EQ(mosquitto_property_add_int32(&props, MQTT_PROP_SESSION_EXPIRY_INTERVAL, o->session_expiry_s), 0);
    int rc = mosquitto_connect_bind_v5(c->m, o->host ? o->host : "127.0.0.1", o->port, 60, NULL, props);
    mosquitto_property_free_all(&props);
    ASSERT_EQ(rc, MOSQ_ERR_SUCCESS);
    client_wait_connected(c);
}

void client_wait_connected(struct client *c)
{
    uint64_t end = now_ms() + 5000;
    while (!c->connected && !c->disconnected && now_ms() < end)
        mosquitto_loop(c->m, 20, 1);
    ASSERT_TRUE(c->connected);
}

void client_connect_rr(struct client *c, int port, const char *id, char *resp, size_t n)
{
    client_connect(c, port, id, false);
    snprintf(resp, n, "clients/%s/resp", id);
    client_subscribe(c, resp);
}

void client_close(struct client *c)
{
    if (c->m && c->connected) {
        mosquitto_disconnect(c->m);
        for (int i = 0; i < 10 && !c->disconnected; i++)
            mosquitto_loop(c->m, 10, 1);
    }
    if (c->m)
        mosquitto_destroy(c->m);
    c->m = NULL;
    msg_free(&c->last);
    while (c->count) {
        msg_free(&c->queue[c->head]);
        c->head = (c->head + 1) % c->cap;
        c->count--;
    }
    free(c->queue);
    c->queue = NULL;
    c->cap = 0;
}

void client_subscribe(struct client *c, const char *topic)
{
    ASSERT_EQ(mosquitto_subscribe_v5(c->m, NULL, topic, 1, 0, NULL), MOSQ_ERR_SUCCESS);
    /* A round trip makes sure the SUBACK is in. */
    for (int i = 0; i < 10; i++)
        mosquitto_loop(c->m, 10, 1);
}

int client_subscribe_rc(struct client *c, const char *topic)
{
    int before = c->subacks;
    ASSERT_EQ(mosquitto_subscribe_v5(c->m, NULL, topic, 1, 0, NULL), MOSQ_ERR_SUCCESS);
    uint64_t end = now_ms() + 3000;
    while (c->subacks == before && now_ms() < end)
        mosquitto_loop(c->m, 5, 1);
    return c->subacks == before ? -1 : c->last_suback;
}

int client_publish(struct client *c, const char *topic, const void *payload, int len, int qos,
                   bool retain, const mosquitto_property *props)
{
    return mosquitto_publish_v5(c->m, NULL, topic, len, payload, qos, retain, props);
}

struct msg *client_wait(struct client *c, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    /* At least one pass of the network loop, even for ms == 0. */
    if (c->count == 0 && !c->disconnected)
        mosquitto_loop(c->m, 0, 1);
    while (c->count == 0 && now_ms() < end && !c->disconnected)
        mosquitto_loop(c->m, 5, 1);
    if (c->count == 0)
        return NULL;
    msg_free(&c->last);
    c->last = c->queue[c->head];
    c->head = (c->head + 1) % c->cap;
    c->count--;
    return &c->last;
}

int client_drain(struct client *c, int ms)
{
    int n = 0;
    uint64_t end = now_ms() + (uint64_t)ms;
    while (now_ms() < end) {
        if (client_wait(c, (int)(end - now_ms())))
            n++;
        if (c->disconnected)
            break;
    }
    return n;
}

int client_drain_count(struct client *c, int want, int ms)
{
    int n = 0;
    uint64_t end = now_ms() + (uint64_t)ms;
    while (n < want && now_ms() < end && !c->disconnected)
        if (client_wait(c, (int)(end - now_ms())))
            n++;
    return n + client_drain(c, 100); /* and none more */
}

int client_wait_puback(struct client *c, int ms)
{
    int before = c->pubacks;
    uint64_t end = now_ms() + (uint64_t)ms;
    while (c->pubacks == before && now_ms() < end && !c->disconnected)
        mosquitto_loop(c->m, 5, 1);
    return c->pubacks == before ? -1 : c->last_puback_rc;
}

const char *msg_user(const struct msg *m, const char *name)
{
    for (int i = 0; i < m->nuser; i++)
        if (strcmp(m->user[i][0], name) == 0)
            return m->user[i][1];
    return NULL;
}

void admin_send(struct client *c, const char *resp, const char *corr, const char *const *words)
{
    uint8_t payload[4096];
    int len = encode_request(payload, sizeof payload, words, NULL);
    ASSERT_TRUE(len > 0);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    ASSERT_EQ(mosquitto_publish_v5(c->m, NULL, ADMIN_TOPIC, len, payload, 1, false, props), MOSQ_ERR_SUCCESS);
    mosquitto_property_free_all(&props);
}

struct msg *admin_call(struct client *c, const char *resp, const char *corr, const char *const *words)
{
    admin_send(c, resp, corr, words);
    struct msg *m = client_wait(c, 20000);
    ASSERT_TRUE(m != NULL);
    ASSERT_MEM(m->corr, (size_t)m->corr_len, corr, strlen(corr));
    return m;
}

int encode_request(uint8_t *buf, int cap, const char *const *words, const int *lens)
{
    ss_bytes argv[16];
    size_t argc = 0;
    for (; words[argc]; argc++) {
        argv[argc].data = (const uint8_t *)words[argc];
        argv[argc].len = lens ? (size_t)lens[argc] : strlen(words[argc]);
    }
    ss_buf b = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&b, argc, argv), 0);
    ASSERT_TRUE(b.len <= (size_t)cap);
    memcpy(buf, b.data, b.len);
    int n = (int)b.len;
    ss_buf_free(&b);
    return n;
}

void request_send(struct client *c, const char *resp, const char *corr, const char *ts,
                  const char *ft, const char *const *words)
{
    /* Any size: a value may be tens of MiB. */
    ss_bytes argv[16];
    size_t argc = 0;
    for (; words[argc]; argc++)
        argv[argc] = (ss_bytes){(const uint8_t *)words[argc], strlen(words[argc])};
    ss_buf payload = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&payload, argc, argv), 0);
    mosquitto_property *props = NULL;
    mosquitto_property_add_string(&props, MQTT_PROP_RESPONSE_TOPIC, resp);
    if (corr)
        mosquitto_property_add_binary(&props, MQTT_PROP_CORRELATION_DATA, corr, (uint16_t)strlen(corr));
    char tsbuf[64];
    if (ts == NULL) {
        snprintf(tsbuf, sizeof tsbuf, "%015llu:%05d:%s", (unsigned long long)now_ms(), 0, "client");
        ts = tsbuf;
    }
    if (ts[0])
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ts", ts);
    if (ft)
        mosquitto_property_add_string_pair(&props, MQTT_PROP_USER_PROPERTY, "__ft", ft);
    int rc = client_publish(c, REQ_TOPIC, payload.data, (int)payload.len, 1, false, props);
    ss_buf_free(&payload);
    mosquitto_property_free_all(&props);
    ASSERT_EQ(rc, MOSQ_ERR_SUCCESS);
}

struct msg *request(struct client *c, const char *resp, const char *corr, const char *ts,
                    const char *ft, const char *const *words)
{
    request_send(c, resp, corr, ts, ft, words);
    return client_wait(c, 5000);
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

pid_t spawn_cmd(char *const argv[], const char *out_path, const char *err_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);
        dup2(in, 0);
        dup2(o, 1);
        dup2(e, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
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

void cli_tool(struct run *r, ...)
{
    char *argv[40];
    int n = 0;
    argv[n++] = (char *)cli_path();
    va_list ap;
    va_start(ap, r);
    char *a;
    while ((a = va_arg(ap, char *)) != NULL && n < 39)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    run_cmd(argv, NULL, 0, r);
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

/* A figure of the broker on port under $SYS/broker/statestore/, once one
 * satisfying want came (10 s at most); false if none did. */
bool sys_figure_until(int port, const char *name, bool (*want)(const char *v), char *out, size_t n)
{
    struct client s;
    client_connect(&s, port, "figures", false);
    char topic[128];
    snprintf(topic, sizeof topic, "$SYS/broker/statestore/%s", name);
    client_subscribe(&s, topic);
    bool got = false;
    for (uint64_t t0 = now_ms(); !got && now_ms() - t0 < 10000;) {
        struct msg *m = client_wait(&s, 1500);
        if (m == NULL)
            continue;
        snprintf(out, n, "%.*s", m->len, (const char *)m->payload);
        got = want(out);
    }
    client_close(&s);
    return got;
}
