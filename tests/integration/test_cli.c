/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli.c - the statestore command-line tool against the real broker:
 * every subcommand and flag, exit codes, binary data, TLS, the environment,
 * stats and completion. Watch and lock are in test_cli_watch.c, export
 * and import in test_cli_export.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "cli_util.h"
#include "harness.h"

TEST(cli_commands_flags_and_exit_codes)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "set", "k", "v1", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "OK\n");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v1");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "k", "v2", "--nx", NULL);
    ASSERT_EQ(r.status, 2);
    OUT_IS(r, "");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "k", "v1", "--nex", "--px", "60000", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--json", "set", "k", "v3", "--nex", NULL);
    ASSERT_EQ(r.status, 2);
    ASSERT_TRUE(strncmp(r.out, "{\"applied\":false,\"version\":\"", 28) == 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "get", "absent", NULL);
    ASSERT_EQ(r.status, 1);
    OUT_IS(r, "");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--json", "get", "absent", NULL);
    ASSERT_EQ(r.status, 1);
    OUT_IS(r, "{\"found\":false,\"version\":null}\n");
    run_free(&r);
    /* Binary values through stdin and stdout, and from a file. */
    static const char bin[] = "a\0b\r\n\xff\x80 z";
    cli_run(&r, b.port, bin, sizeof bin - 1, "set", "bin", "-", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "get", "bin", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_MEM(r.out, r.out_len, bin, sizeof bin - 1);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--json", "get", "bin", NULL);
    ASSERT_TRUE(strstr(r.out, "\"value\":\"a\\u0000b\\u000d\\u000a\\u00ff\\u0080 z\"") != NULL);
    ASSERT_TRUE(strstr(r.out, "\"value_base64\":\"YQBiDQr/gCB6\"") != NULL);
    run_free(&r);
    char path[600];
    snprintf(path, sizeof path, "%s/value.bin", test_tmpdir());
    FILE *f = fopen(path, "wb");
    fwrite(bin, 1, sizeof bin - 1, f);
    fclose(f);
    cli_run(&r, b.port, NULL, 0, "set", "file", "-f", path, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "vdel", "file", "-f", path, NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "1\n");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "vdel", "bin", "nope", NULL);
    ASSERT_EQ(r.status, 2);
    OUT_IS(r, "-1\n");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--json", "vdel", "bin", "nope", NULL);
    ASSERT_EQ(r.status, 2);
    OUT_IS(r, "{\"deleted\":-1,\"version\":null}\n");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--json", "del", "bin", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"deleted\":1,\"version\":\"", 24) == 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "del", "bin", NULL);
    ASSERT_EQ(r.status, 1);
    OUT_IS(r, "0\n");
    run_free(&r);
    /* Fencing tokens. */
    cli_run(&r, b.port, NULL, 0, "--json", "set", "lock", "me", "--nex", NULL);
    char token[128];
    const char *v = strstr(r.out, "\"version\":\"");
    ASSERT_TRUE(v != NULL);
    snprintf(token, sizeof token, "%.*s", (int)strcspn(v + 11, "\""), v + 11);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "res", "x", "--fencing-token", token, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "res", "y", NULL);
    ASSERT_EQ(r.status, 3);
    ASSERT_TRUE(strstr(r.err, "a fencing token is required for this request") != NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--json", "del", "res", "--fencing-token", "1:0:old", NULL);
    ASSERT_EQ(r.status, 3);
    ASSERT_TRUE(strstr(r.out, "\"code\":\"FT_LOWER\"") != NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "del", "res", "--fencing-token", token, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    /* Connection flags: client id, username and password, timeout. */
    cli_run(&r, b.port, NULL, 0, "-i", "cli-id", "-u", "user", "-P", "secret", "--timeout", "2000", "get",
        "k", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    ASSERT_TRUE(broker_log_has(&b, "as cli-id (p5"));
    ASSERT_TRUE(broker_log_has(&b, "u'user'"));
    /* Usage errors, help and version. */
    cli_run(&r, b.port, NULL, 0, "frob", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "k", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "k", "v", "--nx", "--nex", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "k", "v", "--px", "soon", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    static const char *subs[] = {"set", "get", "del", "vdel", "watch", "lock"};
    for (int i = 0; i < 6; i++) {
        cli_run(&r, b.port, NULL, 0, subs[i], "--help", NULL);
        ASSERT_EQ(r.status, 0);
        ASSERT_TRUE(strncmp(r.out, "Usage: statestore ", 18) == 0);
        ASSERT_TRUE(strstr(r.out, subs[i]) != NULL);
        run_free(&r);
    }
    cli_run(&r, b.port, NULL, 0, "--help", NULL);
    ASSERT_TRUE(strstr(r.out, "Exit status") != NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--version", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "statestore ", 11) == 0);
    run_free(&r);
    broker_stop(&b);
    /* Nobody listening: connection failure, with the reason. */
    cli_run(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.err, ": Connection refused\n") != NULL);
    run_free(&r);
    /* A broker without the state store: timeout, also a connection failure. */
    struct broker plain = {.no_plugin = true};
    broker_start(&plain);
    cli_run(&r, plain.port, NULL, 0, "--timeout", "300", "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.err, "statestore: get: no state store answered within 300 ms: is the "
                              "statestore plugin loaded in the broker?") != NULL);
    run_free(&r);
    broker_stop(&plain);
}

/* TLS: a listener that requires client certificates; --cafile, --capath,
 * --cert and --key. Certificates are made for the test with openssl. */
TEST(cli_tls_flags)
{
    const char *d = test_tmpdir();
    tls_certs(d, "DNS:localhost,IP:127.0.0.1", true);
    tls_capath(d);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra,
             "# TLS for the listener above\ncafile %s/ca.crt\ncertfile %s/server.crt\n"
             "keyfile %s/server.key\nrequire_certificate true\n",
             d, d, d);
    broker_start(&b);
    char ca[600], capath[600], cert[600], key[600];
    snprintf(ca, sizeof ca, "%s/ca.crt", d);
    snprintf(capath, sizeof capath, "%s/capath", d);
    snprintf(cert, sizeof cert, "%s/client.crt", d);
    snprintf(key, sizeof key, "%s/client.key", d);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "-h", "127.0.0.1", "--cafile", ca, "--cert", cert, "--key", key, "set",
        "tls", "yes", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "OK\n");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "-h", "localhost", "--capath", capath, "--cert", cert, "--key", key,
        "get", "tls", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "yes");
    run_free(&r);
    /* A client certificate with the system's authorities (no --cafile or
     * --capath; here SSL_CERT_DIR names them, as OpenSSL reads it): libmosquitto
     * takes a certificate only beside a CA path, and the tool said "cannot use
     * the TLS files". */
    char url[80];
    snprintf(url, sizeof url, "mqtts://localhost:%d", b.port);
    const char *had = getenv("SSL_CERT_DIR");
    char was[600] = "";
    if (had)
        snprintf(was, sizeof was, "%s", had);
    ASSERT_EQ(setenv("SSL_CERT_DIR", capath, 1), 0);
    cli_run(&r, 0, NULL, 0, "-L", url, "--cert", cert, "--key", key, "get", "tls", NULL);
    if (r.status != 0)
        fprintf(stderr, "  said: %s", r.err);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "yes");
    run_free(&r);
    /* A certificate alone is TLS, so --insecure applies (it was refused
     * as applying to TLS only). */
    cli_run(&r, b.port, NULL, 0, "-h", "127.0.0.1", "--cert", cert, "--key", key, "--insecure", "get", "tls",
            NULL);
    if (had)
        setenv("SSL_CERT_DIR", was, 1);
    else
        unsetenv("SSL_CERT_DIR");
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "yes");
    run_free(&r);
    /* A certificate without its key is a usage error. */
    cli_run(&r, 0, NULL, 0, "-L", url, "--cert", cert, "get", "tls", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "--cert without --key") != NULL);
    run_free(&r);
    /* Without a client certificate, or without TLS, no connection. */
    cli_run(&r, b.port, NULL, 0, "-h", "127.0.0.1", "--cafile", ca, "--timeout", "1000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "-h", "127.0.0.1", "--timeout", "1000", "get", "tls", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);
    broker_stop(&b);
}

/* Values that start with '-' (negative readings), "--" as the end of the
 * options, usage errors that say what was wrong, and STATESTORE_PORT. */
TEST(cli_dash_values_usage_errors_and_environment)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    ASSERT_EQ(setenv("STATESTORE_PORT", port, 1), 0);
    struct run r;
    cli_tool(&r, "set", "temp", "-5", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "OK\n");
    run_free(&r);
    cli_tool(&r, "get", "temp", NULL);
    OUT_IS(r, "-5");
    run_free(&r);
    /* On a terminal (script(1) gives it one) a newline follows the value. */
    char line[1200];
    snprintf(line, sizeof line, "%s get temp", cli_path());
    char *tty[] = {"script", "-q", "-e", "-c", line, "/dev/null", NULL};
    run_cmd(tty, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "-5\r\n");
    run_free(&r);
    cli_tool(&r, "vdel", "temp", "-5", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "1\n");
    run_free(&r);
    cli_tool(&r, "set", "-x", "-1.5e3", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_tool(&r, "get", "-x", NULL);
    OUT_IS(r, "-1.5e3");
    run_free(&r);
    /* After "--" even an option's spelling is a value. */
    cli_tool(&r, "set", "--", "k", "--nx", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_tool(&r, "get", "k", NULL);
    OUT_IS(r, "--nx");
    run_free(&r);
    cli_tool(&r, "vdel", "--", "k", "--nx", NULL);
    OUT_IS(r, "1\n");
    run_free(&r);
    /* Usage errors: a message, then the command's usage line only. */
    cli_tool(&r, "-p", "70000", "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: -p needs an integer from 1 to 65535, not \"70000\"\n"
               "Usage: statestore [OPTIONS] COMMAND [ARGS]   (statestore --help for more)\n");
    run_free(&r);
    cli_tool(&r, "get", "k", "--port=0", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: --port needs an integer from 1 to 65535, not \"0\"\n"
               "Usage: statestore get KEY\n");
    run_free(&r);
    cli_tool(&r, "del", "k", "--fencing-token", "garbage", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: --fencing-token needs a version like 1700000000000:0:node, not \"garbage\"\n");
    run_free(&r);
    cli_tool(&r, "set", "k", "--bogus", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "unknown option --bogus");
    run_free(&r);
    cli_tool(&r, "set", "k", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: set needs a value (an argument, -f FILE, or - for standard input)\n"
               "Usage: statestore set KEY VALUE|-|-f FILE [--nx|--nex] [--px MS] [--fencing-token HLC]\n");
    run_free(&r);
    cli_tool(&r, "lock", "name", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: lock: give a COMMAND after --\n");
    run_free(&r);
    cli_tool(&r, "set", "k", "-f", "/nonexistent/value", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: cannot open /nonexistent/value: No such file or directory\n");
    run_free(&r);
    cli_tool(&r, "--timeout", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: --timeout needs a value\n");
    run_free(&r);
    ASSERT_EQ(setenv("STATESTORE_PORT", "port", 1), 0);
    cli_tool(&r, "get", "k", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "statestore: STATESTORE_PORT needs an integer from 1 to 65535, not \"port\"\n");
    run_free(&r);
    /* -p wins over the environment. */
    cli_tool(&r, "-p", port, "get", "-x", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    ASSERT_EQ(setenv("STATESTORE_HOST", "no-such-host.invalid", 1), 0);
    cli_tool(&r, "-p", port, "get", "k", NULL);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, "cannot connect to no-such-host.invalid:");
    ERR_HAS(r, ": unknown host no-such-host.invalid\n");
    run_free(&r);
    unsetenv("STATESTORE_HOST");
    unsetenv("STATESTORE_PORT");
    broker_stop(&b);
}

/* ping: a round trip, exit 0; no broker: exit 4. stats: the figures, as
 * text and JSON; none published: exit 4 with the reason. */
TEST(cli_ping_and_stats)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "sys_interval 1\n");
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "ping", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "answered in ", 12) == 0 && strstr(r.out, " ms\n") != NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "ping", "--json", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"ok\":true,\"ms\":", 16) == 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    usleep(1300000); /* the next publication counts the SET */
    cli_run(&r, b.port, NULL, 0, "stats", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.out, "backend                          lmdb\n") != NULL);
    ASSERT_TRUE(strstr(r.out, "\nkeys                             1\n") != NULL);
    ASSERT_TRUE(strstr(r.out, "\nrequests/set/ok                  1\n") != NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "stats", "--json", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"age_ms\":", 10) == 0); /* sorted first */
    ASSERT_TRUE(strstr(r.out, ",\"backend\":\"lmdb\",") != NULL);
    ASSERT_TRUE(strstr(r.out, ",\"keys\":1,") != NULL);
    ASSERT_TRUE(r.out_len > 2 && strcmp(r.out + r.out_len - 2, "}\n") == 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "stats", "extra", NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);
    broker_stop(&b);

    cli_run(&r, b.port, NULL, 0, "--timeout", "1000", "ping", NULL);
    ASSERT_EQ(r.status, 4);
    run_free(&r);

    /* A store that answers "not authorized" is up (docs/OPERATIONS.md). */
    char acl[600];
    snprintf(acl, sizeof acl, "%s/ping.acl", test_tmpdir());
    FILE *f = fopen(acl, "w");
    ASSERT_TRUE(f != NULL);
    fputs("any read public/*\n", f);
    fclose(f);
    struct broker denied = {0};
    snprintf(denied.extra, sizeof denied.extra, "plugin_opt_acl_file %s\n", acl);
    broker_start(&denied);
    cli_run(&r, denied.port, NULL, 0, "ping", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "answered in ", 12) == 0);
    run_free(&r);
    broker_stop(&denied);

    struct broker quiet = {0};
    snprintf(quiet.extra, sizeof quiet.extra, "sys_interval 0\n");
    broker_start(&quiet);
    cli_run(&r, quiet.port, NULL, 0, "--timeout", "1500", "stats", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.err, "no figures under $SYS/broker/statestore/ within 1500 ms") != NULL);
    run_free(&r);
    broker_stop(&quiet);
}

/* keys and inspect: text and JSON lines, paging through many keys, exit 1
 * when nothing matches. */
TEST(cli_keys_and_inspect)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "set", "sensor/1", "20", NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "sensor/2", "21", "--px", "600000", NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "set", "lock", "x", "--fencing-token", "1700000000000:3:me", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "keys", "sensor/*", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "sensor/1  size=2  version=", 26) == 0);
    ASSERT_TRUE(strstr(r.out, "\nsensor/2  size=2  version=") != NULL);
    ASSERT_TRUE(strstr(r.out, "  ttl=") != NULL && strstr(r.out, "ms\n") != NULL);
    ASSERT_TRUE(strstr(r.out, "lock") == NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "--json", "inspect", "lock", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"key\":\"lock\",\"key_base64\":\"bG9jaw==\",\"size\":1,\"version\":\"", 57) == 0);
    ASSERT_TRUE(strstr(r.out, "\",\"ttl_ms\":null,\"fencing_token\":\"1700000000000:3:me\"}\n") != NULL);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "inspect", "nothing", NULL);
    ASSERT_EQ(r.status, 1);
    ASSERT_EQ(r.out_len, 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "keys", "nothing*", NULL);
    ASSERT_EQ(r.status, 1);
    run_free(&r);
    /* An administrative request the server refuses: with --json, the
     * error is a JSON object too, as every command's is. */
    cli_run(&r, b.port, NULL, 0, "--json", "backup", "b1", NULL);
    ASSERT_EQ(r.status, 3);
    /* (Its text is the backend's: LMDB's names backup_dir.) */
    ASSERT_TRUE(strncmp(r.err, "statestore: backup: backups are ", 32) == 0);
    char want[400];
    snprintf(want, sizeof want, "{\"error\":\"%.*s\",\"code\":\"SERVER\"}\n", (int)strlen(r.err) - 21, r.err + 20);
    ASSERT_MEM(r.out, r.out_len, want, strlen(want));
    run_free(&r);
    /* More keys than a page: every one, once. */
    struct client c;
    char resp[256];
    client_connect_rr(&c, b.port, "filler", resp, sizeof resp);
    for (int i = 0; i < 1100; i++) {
        char key[24];
        snprintf(key, sizeof key, "many/%04d", i);
        request_send(&c, resp, "s", NULL, NULL, W("SET", key, "v"));
    }
    ASSERT_EQ(client_drain_count(&c, 1100, 30000), 1100);
    client_close(&c);
    cli_run(&r, b.port, NULL, 0, "keys", "many/*", NULL);
    ASSERT_EQ(r.status, 0);
    int lines = 0;
    for (size_t i = 0; i < r.out_len; i++)
        lines += r.out[i] == '\n';
    ASSERT_EQ(lines, 1100);
    ASSERT_TRUE(strstr(r.out, "many/1099  size=1") != NULL);
    run_free(&r);
    broker_stop(&b);
}

/* The bash completion offers commands, options by command, and files
 * where an option takes one. */
TEST(cli_bash_completion)
{
    static const char script[] =
        "source completion/statestore.bash\n"
        "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _statestore;"
        " echo \"${COMPREPLY[*]}\"; }\n"
        "t statestore s\n"
        "t statestore --j\n"
        "t statestore -p 1884 --timeout 5 k\n"
        "t statestore set --n\n"
        "t statestore stats --w\n"
        "t statestore watch k --p\n"
        "t statestore watch --pattern s\n"
        "t statestore -p 1884 get\n"
        "t statestore --cafile completion/statestore.ba\n"
        "t statestore --tls-version tlsv1.\n"
        "t statestore -L mqtt://127.0.0.1 --in\n"
        "t statestore -d stat\n"
        /* As bash hands them: the line, its words split at ':' and '=' too. */
        "l() { COMP_LINE=\"$1\"; COMP_POINT=${#1}; COMP_WORDS=(); COMP_CWORD=0; COMPREPLY=(); _statestore;"
        " echo \"${COMPREPLY[*]}\"; }\n"
        "l 'statestore -L mqtt://127.0.0.1:1883 --in'\n"
        "l 'statestore -L mqtt://127.0.0.1:1883 stat'\n"
        "l 'statestore --port=1884 set --n'\n"
        "l 'statestore --port=1884 '\n"
        /* File names: one reply each, spaces and all (they came split in
         * words); bash replaces only what follows the word's last ':' or
         * '=', so the replies start there (a:b came out as a:a:b). */
        "cd \"$1\" && touch 'my file' a:b.txt x=y.txt && mkdir 'sub dir' || exit 1\n"
        "f() { COMP_LINE=\"$1\"; COMP_POINT=${#1}; COMP_WORDS=(); COMP_CWORD=0; COMPREPLY=(); _statestore;"
        " printf '[%s]' \"${COMPREPLY[@]}\"; echo; }\n"
        "f 'statestore --cafile my'\n"
        "f 'statestore --cert my\\ f'\n"
        "f 'statestore -f a:'\n"
        "f 'statestore import x='\n"
        "f 'statestore restore a:b.txt s'\n"
        "f 'statestore --capath s'\n";
    char *argv[] = {"bash", "-c", (char *)script, "bash", (char *)test_tmpdir(), NULL};
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "set scan stats status\n--json\nkeys\n--nx --nex\n--watch\n--port --password --pattern\n\nget\n"
           "completion/statestore.bash\ntlsv1.3 tlsv1.2 tlsv1.1\n--insecure\nstats status\n"
           "--insecure\nstats status\n--nx --nex\nset get del vdel watch lock scan keys inspect backup restore export import "
           "ping stats status\n"
           "[my file]\n[my file]\n[b.txt]\n[y.txt]\n[sub dir]\n[sub dir]\n");
    run_free(&r);
}
