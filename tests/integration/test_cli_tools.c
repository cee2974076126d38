/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_tools.c - what users of mosquitto_pub and etcdctl reach for in
 * the statestore tool: -L URL, the TLS options, -d, the options file,
 * status; and a broker's DISCONNECT with a reason code said at once. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

#define ERR_IS(r, lit) ASSERT_MEM((r).err, strlen((r).err), lit, sizeof(lit) - 1)
#define ERR_STARTS(r, lit) ASSERT_MEM((r).err, sizeof(lit) - 1, lit, sizeof(lit) - 1)

/* A usage error: exit 64, nothing on stdout, exactly this on stderr. */
#define USAGE_IS(r, lit)                                                                \
    do {                                                                                \
        ASSERT_EQ((r).status, 64);                                                      \
        ASSERT_EQ((r).out_len, 0);                                                      \
        ERR_IS(r, lit);                                                                 \
    } while (0)

/* -L with mqtt://: host and port, USER:PASSWORD percent-decoded (checked
 * by a broker with a password file), an IPv6 address in brackets, and a
 * precise usage error for each way a URL can be wrong. */
TEST(cli_url_option)
{
    const char *d = test_tmpdir();
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "mosquitto_passwd -c -b %s/passwd 'us@er' 'p:ss w%%rd' >%s/passwd.log 2>&1",
             d, d);
    ASSERT_EQ(system(cmd), 0);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "password_file %s/passwd\nallow_anonymous false\n", d);
    broker_start(&b);
    char url[200];
    struct run r;
    snprintf(url, sizeof url, "mqtt://us%%40er:p%%3Ass%%20w%%25rd@127.0.0.1:%d/", b.port);
    cli_tool(&r, "-L", url, "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "OK\n");
    run_free(&r);
    snprintf(url, sizeof url, "mqtt://us%%40er:p%%3Ass%%20w%%25rd@localhost:%d", b.port);
    cli_tool(&r, "--url", url, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v");
    run_free(&r);
    /* The password matters: a wrong one is refused. */
    snprintf(url, sizeof url, "mqtt://us%%40er:wrong@127.0.0.1:%d", b.port);
    cli_tool(&r, "-L", url, "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, ": the broker refused the connection: Not authorized\n");
    run_free(&r);
    /* Options after -L override it, and -L overrides those before. */
    snprintf(url, sizeof url, "mqtt://us%%40er:p%%3Ass%%20w%%25rd@127.0.0.1:1/");
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    cli_tool(&r, "-L", url, "-p", port, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    /* A second -L without a user drops the first one's user and password
     * (whose text is gone with it), and keeps -u and -P. */
    char bare[100];
    snprintf(bare, sizeof bare, "mqtt://127.0.0.1:%d", b.port);
    cli_tool(&r, "-L", url, "-L", bare, "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, ": the broker refused the connection: Not authorized\n");
    run_free(&r);
    cli_tool(&r, "-u", "us@er", "-P", "p:ss w%rd", "-L", bare, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v");
    run_free(&r);
    /* An IPv6 address in brackets (the broker listens on 127.0.0.1 only:
     * the connection to ::1 is what shows it was parsed). */
    snprintf(url, sizeof url, "mqtt://[::1]:%d", b.port);
    cli_tool(&r, "-L", url, "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    char want[100];
    snprintf(want, sizeof want, "statestore: cannot connect to ::1:%d: ", b.port);
    ASSERT_TRUE(strncmp(r.err, want, strlen(want)) == 0);
    run_free(&r);
    broker_stop(&b);

    static const struct {
        const char *url, *err;
    } bad[] = {
        {"http://h", "statestore: -L: the scheme is mqtt:// or mqtts://, not http:// "
                     "(mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/])\n"},
        {"localhost:1883", "statestore: -L: a URL starts with mqtt:// or mqtts:// "
                           "(mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/])\n"},
        {"mqtt://", "statestore: -L: the URL names no host (mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/])\n"},
        {"mqtt://u:p@:1883", "statestore: -L: the URL names no host "
                             "(mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/])\n"},
        {"mqtt://h:0", "statestore: -L: the port is a number from 1 to 65535, not \"0\"\n"},
        {"mqtt://h:65536", "statestore: -L: the port is a number from 1 to 65535, not \"65536\"\n"},
        {"mqtt://h:", "statestore: -L: the port is a number from 1 to 65535, not \"\"\n"},
        {"mqtts://h:x1", "statestore: -L: the port is a number from 1 to 65535, not \"x1\"\n"},
        {"mqtt://[::1:1883", "statestore: -L: an IPv6 address opened with \"[\" needs its \"]\"\n"},
        {"mqtt://[::1]1883", "statestore: -L: after \"]\" come \":PORT\", \"/\" or nothing, not \"1883\"\n"},
        {"mqtt://h:1883/sensors/#", "statestore: -L: nothing may follow HOST:PORT but \"/\" (no topic), "
                                    "not \"/sensors/#\"\n"},
        {"mqtt://@h", "statestore: -L: the user name before \"@\" is empty\n"},
        {"mqtt://:secret@h", "statestore: -L: the user name before \"@\" is empty\n"},
        {"mqtt://u%zz@h", "statestore: -L: the user name holds a bad %-escape \"%zz\" (%HH, not %00)\n"},
        {"mqtt://u:top%2@h", "statestore: -L: the password holds a bad %-escape \"%2\" (%HH, not %00)\n"},
        {"mqtt://u:%00@h", "statestore: -L: the password holds a bad %-escape \"%00\" (%HH, not %00)\n"},
        {"mqtt://u:se/cret@h", "statestore: -L: a \"/\" in the user name or password is written %2F\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cli_tool(&r, "-L", bad[i].url, "get", "k", NULL);
        ASSERT_EQ(r.status, 64);
        ASSERT_EQ(r.out_len, 0);
        char expect[400];
        snprintf(expect, sizeof expect, "%sUsage: statestore [OPTIONS] COMMAND [ARGS]   "
                                        "(statestore --help for more)\n", bad[i].err);
        ASSERT_MEM(r.err, strlen(r.err), expect, strlen(expect));
        run_free(&r);
    }
    /* After the command, the command's usage follows. */
    cli_tool(&r, "get", "k", "--url", "mqtt://h/t", NULL);
    USAGE_IS(r, "statestore: --url: nothing may follow HOST:PORT but \"/\" (no topic), not \"/t\"\n"
                "Usage: statestore get KEY\n");
    run_free(&r);
}

/* mqtts:// turns TLS on (port 8883 unless given; the system's CAs unless
 * --cafile); --insecure skips the host name check and nothing else;
 * --tls-version is passed on; both without TLS are usage errors. */
TEST(cli_url_tls_insecure_and_tls_version)
{
    const char *d = test_tmpdir();
    tls_certs(d, "IP:127.0.0.1", false); /* not for the name localhost */
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra,
             "# TLS for the listener above\ncafile %s/ca.crt\ncertfile %s/server.crt\n"
             "keyfile %s/server.key\ntls_version tlsv1.2\n",
             d, d, d);
    broker_start(&b);
    char ca[600], url[200], url_name[200];
    snprintf(ca, sizeof ca, "%s/ca.crt", d);
    snprintf(url, sizeof url, "mqtts://127.0.0.1:%d", b.port);
    snprintf(url_name, sizeof url_name, "mqtts://localhost:%d/", b.port);
    struct run r;
    cli_tool(&r, "-L", url, "--cafile", ca, "set", "tls", "on", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "OK\n");
    run_free(&r);
    /* Without --cafile: the system's authorities, which do not know ours.
     * Said as such, not as a timeout (the handshake ends on the network
     * thread, and the wait did not hear of it). */
    cli_tool(&r, "-L", url, "--timeout", "2000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, "A TLS error occurred.");
    run_free(&r);
    /* The certificate does not name localhost: refused, unless --insecure. */
    cli_tool(&r, "-L", url_name, "--cafile", ca, "--timeout", "2000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    cli_tool(&r, "-L", url_name, "--cafile", ca, "--insecure", "get", "tls", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "on");
    run_free(&r);
    /* --insecure still checks the chain: a CA it does not trust fails. */
    cli_tool(&r, "-L", url_name, "--insecure", "--timeout", "2000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    /* --tls-version is the lowest version accepted, as in mosquitto_pub. */
    cli_tool(&r, "-L", url, "--cafile", ca, "--tls-version", "tlsv1.2", "get", "tls", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "on");
    run_free(&r);
    /* Plain MQTT to a TLS listener gets nowhere. */
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%d", b.port);
    cli_tool(&r, "-L", url, "--timeout", "1000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    broker_stop(&b);

    /* Against a TLS server that speaks 1.2 only (openssl s_server, which
     * logs each handshake refused for its version): --tls-version tlsv1.3
     * is refused for it, tlsv1.2 is not. */
    char server_out[700], server_err[700], key[600], crt[600], accept[32];
    snprintf(server_out, sizeof server_out, "%s/s_server.out", d);
    snprintf(server_err, sizeof server_err, "%s/s_server.err", d);
    snprintf(key, sizeof key, "%s/server.key", d);
    snprintf(crt, sizeof crt, "%s/server.crt", d);
    int port = free_port();
    snprintf(accept, sizeof accept, "127.0.0.1:%d", port);
    char *server[] = {"openssl", "s_server", "-rev", "-accept", accept, "-cert", crt, "-key", key,
                      "-tls1_2", NULL};
    pid_t pid = spawn_cmd(server, server_out, server_err);
    for (int i = 0; i < 100 && !port_open(port); i++)
        usleep(50000);
    snprintf(url, sizeof url, "mqtts://127.0.0.1:%d", port);
    cli_tool(&r, "-L", url, "--cafile", ca, "--tls-version", "tlsv1.3", "--timeout", "800", "ping", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    usleep(300000);
    char *seen = slurp(server_err, NULL);
    int refused = 0;
    for (const char *p = seen; (p = strstr(p, "unsupported protocol")) != NULL; p++)
        refused++;
    free(seen);
    ASSERT_TRUE(refused >= 1);
    cli_tool(&r, "-L", url, "--cafile", ca, "--tls-version", "tlsv1.2", "--timeout", "800", "ping", NULL);
    ASSERT_EQ(r.status, 4);
    ERR_STARTS(r, "statestore: cannot connect to 127.0.0.1:");
    ERR_HAS(r, ": no MQTT 5 answer from the broker within 800 ms\n");
    run_free(&r);
    usleep(300000);
    seen = slurp(server_err, NULL);
    int after = 0;
    for (const char *p = seen; (p = strstr(p, "unsupported protocol")) != NULL; p++)
        after++;
    free(seen);
    ASSERT_EQ(after, refused);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);

    cli_tool(&r, "-p", "1", "--insecure", "get", "k", NULL);
    USAGE_IS(r, "statestore: --insecure applies to TLS: give --cafile, --capath, --cert or an mqtts:// URL\n"
                "Usage: statestore get KEY\n");
    run_free(&r);
    cli_tool(&r, "-L", "mqtt://h", "--tls-version", "tlsv1.2", "ping", NULL);
    USAGE_IS(r, "statestore: --tls-version applies to TLS: give --cafile, --capath, --cert or an mqtts:// URL\n"
                "Usage: statestore ping\n");
    run_free(&r);
    cli_tool(&r, "--tls-version", "tlsv1", "ping", NULL);
    USAGE_IS(r, "statestore: --tls-version takes tlsv1.3, tlsv1.2 or tlsv1.1, not \"tlsv1\"\n"
                "Usage: statestore [OPTIONS] COMMAND [ARGS]   (statestore --help for more)\n");
    run_free(&r);
}

/* -d prints libmosquitto's lines for each packet on standard error, as
 * mosquitto_pub -d does; standard output is the same as without it. */
TEST(cli_debug_prints_the_mqtt_traffic)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    struct run r;
    cli_tool(&r, "-p", port, "-i", "dbg", "-d", "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "OK\n");
    ERR_STARTS(r, "Client dbg sending CONNECT\n"
              "Client dbg received CONNACK (0)\n"
              "Client dbg sending SUBSCRIBE (Mid: 1, Topic: "
              "clients/dbg/services/statestore/_any_/command/invoke/response, QoS: 1, Options: 0x00)\n"
              "Client dbg received SUBACK\n"
              "Client dbg sending PUBLISH (d0, q1, r0, m2, 'statestore/v1/" GUID "/command/invoke', ... ");
    ERR_HAS(r, "Client dbg received PUBLISH (d0, q1, r0, m1, "
               "'clients/dbg/services/statestore/_any_/command/invoke/response', ... (5 bytes))\n");
    ERR_HAS(r, "Client dbg received PUBACK (Mid: 2, RC:");
    const char *tail = "Client dbg sending DISCONNECT\n";
    size_t n = strlen(r.err);
    ASSERT_TRUE(n > strlen(tail) && strcmp(r.err + n - strlen(tail), tail) == 0);
    run_free(&r);
    cli_tool(&r, "-p", port, "-i", "dbg", "get", "k", NULL); /* without -d: nothing on stderr */
    OUT_IS(r, "v");
    ERR_IS(r, "");
    run_free(&r);
    broker_stop(&b);
}

/* The options file: $XDG_CONFIG_HOME/statestore, else
 * ~/.config/statestore; one option a line; comments and blank lines;
 * the command line wins; a bad line names the file and the line. */
TEST(cli_options_file)
{
    struct broker b = {0};
    broker_start(&b);
    const char *d = test_tmpdir();
    char dir[600], path[900], text[400];
    snprintf(dir, sizeof dir, "%s/xdg", d);
    ASSERT_EQ(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/statestore", dir);
    snprintf(text, sizeof text,
             "# statestore's options\n"
             "\n"
             "   -p %d  \r\n"
             "--id=from-file\n"
             "--json\n"
             "\t--timeout 5000\n",
             b.port);
    write_text(path, text);
    ASSERT_EQ(setenv("XDG_CONFIG_HOME", dir, 1), 0);
    struct run r;
    cli_tool(&r, "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"applied\":true,\"version\":\"", 27) == 0);
    run_free(&r);
    /* The command line overrides the file: a port nobody listens on. */
    cli_tool(&r, "-p", "1", "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ERR_IS(r, "statestore: cannot connect to localhost:1: Connection refused\n");
    run_free(&r);
    /* Without XDG_CONFIG_HOME: ~/.config/statestore. */
    ASSERT_EQ(unsetenv("XDG_CONFIG_HOME"), 0);
    char home[600], conf[700];
    snprintf(home, sizeof home, "%s/home", d);
    snprintf(conf, sizeof conf, "%s/.config", home);
    ASSERT_EQ(mkdir(home, 0755), 0);
    ASSERT_EQ(mkdir(conf, 0755), 0);
    snprintf(path, sizeof path, "%s/statestore", conf);
    snprintf(text, sizeof text, "-L mqtt://127.0.0.1:%d\n", b.port);
    write_text(path, text);
    ASSERT_EQ(setenv("HOME", home, 1), 0);
    cli_tool(&r, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v");
    run_free(&r);

    /* Bad lines. */
    static const struct {
        const char *text, *err;
    } bad[] = {
        {"-p 1\n--nx\n", "statestore: PATH:2: --nx is an option of set; the options file takes connection "
                         "and output options only\n"},
        {"--frobnicate 3\n", "statestore: PATH:1: unknown option --frobnicate\n"},
        {"# x\nlocalhost\n", "statestore: PATH:2: \"localhost\" is not an option (one option a line, such as "
                             "-h HOST or --cafile FILE)\n"},
        {"-p\n", "statestore: PATH:1: -p needs a value\n"},
        {"--port=\n", "statestore: PATH:1: --port needs a value\n"},
        {"-p 70000\n", "statestore: PATH:1: -p needs an integer from 1 to 65535, not \"70000\"\n"},
        {"--json yes\n", "statestore: PATH:1: --json takes no value\n"},
        {"--help\n", "statestore: PATH:1: --help has no place in the options file\n"},
        {"\n\n-L http://h\n", "statestore: PATH:3: -L: the scheme is mqtt:// or mqtts://, not http:// "
                              "(mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/])\n"},
        {"--tls-version 1.2\n", "statestore: PATH:1: --tls-version takes tlsv1.3, tlsv1.2 or tlsv1.1, "
                                "not \"1.2\"\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i].text);
        cli_tool(&r, "-p", "1", "get", "k", NULL);
        ASSERT_EQ(r.status, 64);
        ASSERT_EQ(r.out_len, 0);
        char expect[1400];
        const char *at = strstr(bad[i].err, "PATH");
        snprintf(expect, sizeof expect, "%.*s%s%s", (int)(at - bad[i].err), bad[i].err, path, at + 4);
        ASSERT_MEM(r.err, strlen(r.err), expect, strlen(expect));
        run_free(&r);
    }
    /* A file that cannot be read is an error too, not silently skipped. */
    ASSERT_EQ(remove(path), 0);
    ASSERT_EQ(mkdir(path, 0755), 0);
    cli_tool(&r, "-p", "1", "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    char expect[1100];
    snprintf(expect, sizeof expect, "statestore: cannot read the options file %s: Is a directory\n", path);
    ASSERT_MEM(r.err, strlen(r.err), expect, strlen(expect));
    run_free(&r);
    broker_stop(&b);
}

/* Whether status's output has endpoint lines 1..n, each healthy: each
 * endpoint is asked every 2 s, the first time at the start, and a member
 * of a cluster just started may answer that it has no leader yet. */
static bool all_endpoints_healthy(const char *out, int n)
{
    for (int i = 1; i <= n; i++) {
        char name[32], v[300];
        snprintf(name, sizeof name, "etcd_endpoint_%d", i);
        if (status_line(out, name, v, sizeof v) == NULL || strstr(v, " healthy") == NULL)
            return false;
    }
    return true;
}

/* status: the health, the backend (on etcd its endpoint and whether the
 * cluster answers), the store's and the broker's own figures, in a fixed
 * order; --json; a broker without the plugin is said to be one. */
TEST(cli_status)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "sys_interval 1\n");
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    struct run r;
    cli_tool(&r, "-p", port, "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    /* The figures are published every second: wait for those after the
     * SET (on etcd the key count is not kept without a limit, and the
     * first figures may predate the broker's first answer from etcd). */
    bool etcd = harness_on_etcd();
    char v[300];
    for (int i = 0; i < 60; i++) {
        cli_tool(&r, "-p", port, "status", NULL);
        if (etcd ? r.status == 0 && status_line(r.out, "etcd_leader", v, sizeof v) && strcmp(v, "none") != 0 &&
                       all_endpoints_healthy(r.out, 3)
                 : status_line(r.out, "keys", v, sizeof v) && strcmp(v, "1") == 0)
            break;
        run_free(&r);
        usleep(250000);
    }
    ASSERT_EQ(r.status, 0);
    ERR_IS(r, "");
    /* The names, in order: each line's name is one of them, in this order. */
    static const char *const order[] = {
        "health", "backend", "etcd_endpoint", "etcd_reachable", "etcd_nospace", "etcd_leader",
        "etcd_endpoint_1", "etcd_endpoint_2", "etcd_endpoint_3", "keys", "bytes",
        "requests", "broker", "uptime", "clients_connected", "clients_total", "messages_received",
        "messages_sent", "heap_bytes", "age_ms",
    };
    size_t k = 0;
    int lines = 0;
    for (const char *line = r.out; *line; line = strchr(line, '\n') + 1, lines++) {
        size_t n = strcspn(line, " ");
        while (k < sizeof order / sizeof order[0] &&
               !(strlen(order[k]) == n && strncmp(line, order[k], n) == 0))
            k++;
        ASSERT_TRUE(k < sizeof order / sizeof order[0]);
        ASSERT_TRUE(strchr(line, '\n') != NULL);
    }
    ASSERT_TRUE(strncmp(r.out, "health             ok\nbackend            ", 40) == 0);
    ASSERT_TRUE(status_line(r.out, "backend", v, sizeof v) != NULL);
    ASSERT_MEM(v, strlen(v), etcd ? "etcd" : "lmdb", 4);
    ASSERT_EQ(strlen(v), 4);
    ASSERT_TRUE(status_line(r.out, "broker", v, sizeof v) != NULL);
    ASSERT_TRUE(strncmp(v, "mosquitto version ", 18) == 0);
    ASSERT_TRUE(status_line(r.out, "clients_connected", v, sizeof v) != NULL);
    ASSERT_TRUE(status_line(r.out, "uptime", v, sizeof v) != NULL);
    ASSERT_TRUE(strstr(v, " seconds") != NULL);
    ASSERT_TRUE(status_line(r.out, "age_ms", v, sizeof v) != NULL);
    ASSERT_TRUE(strtoull(v, NULL, 10) < 60000);
    if (etcd) {
        ASSERT_TRUE(status_line(r.out, "etcd_endpoint", v, sizeof v) != NULL);
        ASSERT_TRUE(strncmp(v, "http://127.0.0.1:", 17) == 0);
        ASSERT_TRUE(status_line(r.out, "etcd_reachable", v, sizeof v) != NULL);
        ASSERT_STR(v, strlen(v), "1");
        ASSERT_TRUE(status_line(r.out, "etcd_nospace", v, sizeof v) != NULL);
        ASSERT_STR(v, strlen(v), "0");
        ASSERT_TRUE(status_line(r.out, "keys", v, sizeof v) == NULL); /* no limit set: not counted */
        /* Each endpoint of the harness's cluster, healthy; one leads. */
        char leader[300];
        ASSERT_TRUE(status_line(r.out, "etcd_leader", leader, sizeof leader) != NULL);
        int leads = 0;
        for (int i = 1; i <= 3; i++) {
            char name[32];
            snprintf(name, sizeof name, "etcd_endpoint_%d", i);
            ASSERT_TRUE(status_line(r.out, name, v, sizeof v) != NULL);
            ASSERT_TRUE(strncmp(v, "http://127.0.0.1:", 17) == 0);
            ASSERT_TRUE(strstr(v, " healthy") != NULL);
            if (strstr(v, " healthy, leader, ") != NULL) {
                leads++;
                ASSERT_TRUE(strncmp(v, leader, strlen(leader)) == 0 && v[strlen(leader)] == ' ');
            }
        }
        ASSERT_EQ(leads, 1);
    } else {
        ASSERT_TRUE(status_line(r.out, "etcd_endpoint", v, sizeof v) == NULL);
        ASSERT_TRUE(status_line(r.out, "keys", v, sizeof v) != NULL);
        ASSERT_STR(v, strlen(v), "1");
        ASSERT_TRUE(status_line(r.out, "bytes", v, sizeof v) != NULL);
        ASSERT_STR(v, strlen(v), "66"); /* "k", "v" and 64 */
    }
    run_free(&r);
    cli_tool(&r, "-p", port, "--json", "status", NULL);
    ASSERT_EQ(r.status, 0);
    if (etcd)
        ASSERT_TRUE(strncmp(r.out, "{\"health\":\"ok\",\"backend\":\"etcd\",\"etcd_endpoint\":\"http://", 56) == 0);
    else
        ASSERT_TRUE(strncmp(r.out, "{\"health\":\"ok\",\"backend\":\"lmdb\",\"keys\":1,\"bytes\":66,", 52) == 0);
    ASSERT_TRUE(strstr(r.out, ",\"broker\":\"mosquitto version ") != NULL);
    ASSERT_TRUE(r.out_len > 2 && memcmp(r.out + r.out_len - 2, "}\n", 2) == 0);
    run_free(&r);
    cli_tool(&r, "-p", port, "status", "--watch", NULL);
    USAGE_IS(r, "statestore: --watch is an option of stats; status takes no options of its own\n"
                "Usage: statestore status [--json]\n");
    run_free(&r);
    broker_stop(&b);

    /* A broker without the plugin: its own figures, and what is missing. */
    struct broker plain = {0};
    plain.no_plugin = true;
    snprintf(plain.extra, sizeof plain.extra, "sys_interval 1\n");
    broker_start(&plain);
    snprintf(port, sizeof port, "%d", plain.port);
    cli_tool(&r, "-p", port, "--timeout", "2500", "status", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strncmp(r.out, "health             no statestore figures\nbroker             mosquitto "
                               "version ", 70) == 0);
    ERR_IS(r, "statestore: status: the broker publishes no figures under $SYS/broker/statestore/: is "
              "the statestore plugin loaded?\n");
    run_free(&r);
    broker_stop(&plain);
}

/* ---- a broker that sends DISCONNECT ------------------------------------- */

/* A scripted MQTT 5 broker for one connection: CONNACK, SUBACK, and on
 * the first PUBLISH a DISCONNECT with the reason code, then it closes.
 * (Debian's mosquitto 2.0.11 closes a taken-over connection without
 * sending its DISCONNECT, so a real one cannot show this.) */
struct scripted {
    int listener;
    int port;
    uint8_t reason;
};

static bool read_full(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 10000) != 1)
            return false;
        ssize_t got = read(fd, p, n);
        if (got <= 0)
            return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

/* One packet: its first byte and its body (at most cap bytes). */
static bool read_packet(int fd, uint8_t *type, uint8_t *body, size_t cap, size_t *len)
{
    if (!read_full(fd, type, 1))
        return false;
    size_t n = 0;
    for (int shift = 0; shift < 28; shift += 7) {
        uint8_t b;
        if (!read_full(fd, &b, 1))
            return false;
        n |= (size_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    if (n > cap)
        return false;
    *len = n;
    return read_full(fd, body, n);
}

static void *scripted_run(void *arg)
{
    struct scripted *s = arg;
    struct pollfd pfd = {s->listener, POLLIN, 0};
    int fd = poll(&pfd, 1, 10000) == 1 ? accept(s->listener, NULL, NULL) : -1;
    close(s->listener);
    uint8_t type, body[4096];
    size_t len;
    while (fd >= 0 && read_packet(fd, &type, body, sizeof body, &len)) {
        if (type == 0x10) {
            static const uint8_t connack[] = {0x20, 3, 0, 0, 0};
            ASSERT_EQ(write(fd, connack, sizeof connack), (ssize_t)sizeof connack);
        } else if (type == 0x82 && len >= 2) {
            const uint8_t suback[] = {0x90, 4, body[0], body[1], 0, 1};
            ASSERT_EQ(write(fd, suback, sizeof suback), (ssize_t)sizeof suback);
        } else if ((type & 0xf0) == 0x30) {
            const uint8_t disconnect[] = {0xe0, 2, s->reason, 0};
            if (s->reason != 0) /* else the connection just closes */
                ASSERT_EQ(write(fd, disconnect, sizeof disconnect), (ssize_t)sizeof disconnect);
            break;
        }
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void scripted_start(struct scripted *s, pthread_t *t)
{
    s->listener = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_TRUE(s->listener >= 0);
    s->port = free_port();
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)s->port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(s->listener, (struct sockaddr *)&a, sizeof a), 0);
    ASSERT_EQ(listen(s->listener, 4), 0);
    ASSERT_EQ(pthread_create(t, NULL, scripted_run, s), 0);
}

/* A broker that disconnects the client with a reason code, or closes the
 * connection, while a request waits: the request fails at once with the
 * reason, not after --timeout as if no state store were there, and says
 * that the write's outcome is unknown. */
TEST(cli_disconnect_reason_said_at_once)
{
    static const struct {
        uint8_t reason;
        const char *err;
    } cases[] = {
        {0x8e, "statestore: set: the broker disconnected this client before the answer came; a write may "
               "have taken effect (Session taken over, reason code 142)\n"},
        {0x98, "statestore: set: the broker disconnected this client before the answer came; a write may "
               "have taken effect (Administrative action, reason code 152)\n"},
        /* No DISCONNECT, the connection closed. */
        {0, "statestore: set: the connection was lost before the answer came; a write may have taken "
            "effect\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct scripted s = {.reason = cases[i].reason};
        pthread_t t;
        scripted_start(&s, &t);
        char port[16];
        snprintf(port, sizeof port, "%d", s.port);
        struct run r;
        uint64_t t0 = now_ms();
        cli_tool(&r, "-p", port, "-i", "twin", "--timeout", "15000", "set", "k", "v", NULL);
        uint64_t took = now_ms() - t0;
        ASSERT_TRUE(took < 5000);
        ASSERT_EQ(r.status, 4);
        ASSERT_EQ(r.out_len, 0);
        ASSERT_MEM(r.err, strlen(r.err), cases[i].err, strlen(cases[i].err));
        run_free(&r);
        pthread_join(t, NULL);
    }
}

/* Every option and command added here is in --help, the man page and the
 * bash completion. */
TEST(cli_new_flags_documented_everywhere)
{
    static const char *const flags[] = {"-L", "--url", "--insecure", "--tls-version", "-d", "--debug"};
    struct run r;
    cli_tool(&r, "--help", NULL);
    ASSERT_EQ(r.status, 0);
    char *man = slurp("docs/statestore.1", NULL);
    char *completion = slurp("completion/statestore.bash", NULL);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        char roff[40] = "";
        for (const char *p = flags[i]; *p; p++) /* the man page writes - as \- */
            snprintf(roff + strlen(roff), sizeof roff - strlen(roff), "%s%c", *p == '-' ? "\\" : "", *p);
        char word[40];
        snprintf(word, sizeof word, " %s ", flags[i]);
        if (strstr(r.out, flags[i]) == NULL || strstr(man, roff) == NULL || strstr(completion, word) == NULL)
            fprintf(stderr, "  %s is missing somewhere\n", flags[i]);
        ASSERT_TRUE(strstr(r.out, flags[i]) != NULL);
        ASSERT_TRUE(strstr(man, roff) != NULL);
        ASSERT_TRUE(strstr(completion, word) != NULL);
    }
    ASSERT_TRUE(strstr(r.out, "\n  status ") != NULL);
    ASSERT_TRUE(strstr(man, ".B status\n") != NULL);
    ASSERT_TRUE(strstr(man, ".SH INTERACTIVE MODE\n") != NULL);
    ASSERT_TRUE(strstr(completion, " stats status\"") != NULL);
    free(man);
    free(completion);
    run_free(&r);
    cli_tool(&r, "status", "--help", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "Usage: statestore status [--json]\n", 34) == 0);
    run_free(&r);
}
