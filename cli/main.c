/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* main.c - statestore: command line, connection, dispatch. */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "../core/hlc.h"
#include "cli.h"

/* SS_VERSION comes from the build (the newest entry of debian/changelog). */
#ifndef SS_VERSION
#error "SS_VERSION is defined by the Makefile"
#endif

static const char short_usage[] =
    "Usage: statestore [OPTIONS] COMMAND [ARGS]   (statestore --help for more)\n";

static const char usage_text[] =
    "Usage: statestore [OPTIONS] COMMAND [ARGS]\n"
    "       statestore [OPTIONS]      an interactive prompt (or commands from standard input)\n"
    "\n"
    "A client for the Azure IoT Operations state store protocol over MQTT 5.\n"
    "\n"
    "Commands:\n"
    "  set KEY VALUE      set a key; VALUE may be - (standard input) or given with\n"
    "      -f, --file FILE"
    " [--nx | --nex] [--px MS] [--fencing-token HLC]\n"
    "  get KEY            write the value to standard output, byte for byte\n"
    "  del KEY [--fencing-token HLC]\n"
    "  vdel KEY VALUE     delete only if the value matches (VALUE as for set)\n"
    "      [--fencing-token HLC]\n"
    "  watch KEY...       print a line per change until interrupted\n"
    "      [--pattern PATTERN]  ...also of every key PATTERN matches (repeatable)\n"
    "  lock NAME [--ttl MS] [--wait MS] [--holder ID] -- COMMAND [ARGS...]\n"
    "                     run COMMAND while holding the lease NAME\n"
    "  scan PATTERN       list the keys matching PATTERN (the SDKs' glob), one per line\n"
    "  keys [PATTERN]     list keys (glob: * and ?) with size, version, TTL, fencing token\n"
    "  inspect KEY        the same for one key\n"
    "  backup NAME        a consistent copy of the live store, into the broker's backup_dir\n"
    "  restore FILE DIR   a backup into an empty data directory (offline)\n"
    "  export [PATTERN]   records as JSON lines (key, value, version, token, deadline)\n"
    "  import FILE DIR    JSON lines into an empty data directory (offline), or\n"
    "  import FILE --etcd ENDPOINTS   into a store on an etcd cluster\n"
    "  ping               measure a request's round trip (a health check)\n"
    "  stats [--watch]    the store's figures (from $SYS/broker/statestore/)\n"
    "  status             the backend's health and the broker's own figures\n"
    "\n"
    "Connection (as mosquitto_pub):\n"
    "  -h, --host HOST  -p, --port PORT  -i, --id CLIENT_ID\n"
    "  -u, --username USERNAME  -P, --password PASSWORD\n"
    "  -L, --url mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT][/]   all of these as a URL\n"
    "  (defaults for -h and -p from STATESTORE_HOST and STATESTORE_PORT)\n"
    "  --cafile FILE  --capath DIR  --cert FILE  --key FILE\n"
    "  --insecure         TLS: do not check the server's host name\n"
    "  --tls-version V    TLS: the lowest version, tlsv1.3, tlsv1.2 or tlsv1.1\n"
    "  --timeout MS       how long to wait for each answer (default 10000)\n"
    "  -d, --debug        print the MQTT packets sent and received on standard error\n"
    "Options are also read from $XDG_CONFIG_HOME/statestore (~/.config/statestore),\n"
    "one a line (--cafile FILE, -h HOST...); the command line overrides them.\n"
    "\n"
    "A value that starts with '-' is taken as it is (set temp -5); put -- before\n"
    "one that looks like an option (set -- key --nx).\n"
    "\n"
    "Output:\n"
    "  --json             one JSON object per result or notification\n"
    "  --help, --version\n"
    "\n"
    "Exit status: 0 success, 1 not found, 2 condition not met (NX/NEX, VDEL\n"
    "mismatch, lock not acquired or lost), 3 protocol error, 4 connection\n"
    "failure or timeout, 64 usage error; lock exits with COMMAND's status.\n";

static const struct {
    const char *name;
    int (*run)(struct cli *, ss_client *);
    int min_args, max_args; /* arguments after the command (before "--") */
    bool value;             /* the last argument is a VALUE that -f FILE replaces */
    const char *help;
} commands[] = {
    {"set", cmd_set, 2, 2, true,
     "Usage: statestore set KEY VALUE|-|-f FILE [--nx|--nex] [--px MS] [--fencing-token HLC]\n"
     "Sets KEY. --nx: only if absent; --nex: only if absent or equal to VALUE; --px: expire\n"
     "after MS milliseconds. Prints OK; exit 2 when the condition did not hold.\n"},
    {"get", cmd_get, 1, 1, false,
     "Usage: statestore get KEY\n"
     "Writes the value to standard output exactly (no newline added); exit 1 if absent.\n"},
    {"del", cmd_del, 1, 1, false,
     "Usage: statestore del KEY [--fencing-token HLC]\n"
     "Deletes KEY and prints 1, or prints 0 and exits 1 if it was absent.\n"},
    {"vdel", cmd_vdel, 2, 2, true,
     "Usage: statestore vdel KEY VALUE|-|-f FILE [--fencing-token HLC]\n"
     "Deletes KEY only if its value is VALUE: prints 1, 0 (absent, exit 1) or -1 (differs, exit 2).\n"},
    {"watch", cmd_watch, 0, INT_MAX, false,
     "Usage: statestore watch [KEY...] [--pattern PATTERN]...\n"
     "Prints one line per change until interrupted: \"VERSION SET KEY VALUE\" or\n"
     "\"VERSION DELETE KEY\" (UTF-8 as it is; spaces and what is not printable as \\xHH),\n"
     "of each KEY and of every key a PATTERN matches (SCAN's glob: * any run, / included,\n"
     "? one character, [..] a class, ** whole path segments), once per change. Quote a\n"
     "PATTERN from the shell. After a reconnect it registers again and reports on\n"
     "standard error that changes may have been missed.\n"},
    {"lock", cmd_lock, 1, 1, false,
     "Usage: statestore lock NAME [--ttl MS] [--wait MS] [--holder ID] -- COMMAND [ARGS...]\n"
     "Waits for the lease NAME (at most --wait MS, default forever), runs COMMAND while\n"
     "renewing it (lease time --ttl, default 10000 ms), releases it, and exits with\n"
     "COMMAND's status. COMMAND finds the fencing token in STATESTORE_LOCK_TOKEN. If the\n"
     "lease is lost, COMMAND is terminated and the exit status is 2. --holder: the value\n"
     "the lease holds, naming its holder (default: the MQTT client id).\n"},
    {"scan", cmd_scan, 1, 1, false,
     "Usage: statestore scan PATTERN\n"
     "Lists the keys matching PATTERN that this client may read, one per line, with\n"
     "the protocol's SCAN, as the SDKs' list_keys does (any state store, AIO's too).\n"
     "PATTERN is the SDKs' glob over whole keys: * any run, ? one character, [a-z],\n"
     "[!a-z], ** as a whole path segment. Keys print as UTF-8 (spaces too), what is\n"
     "not printable as \\xHH and \\ as \\\\; --json: {\"key\":...,\"key_base64\":...} each.\n"
     "Exit 1 when none match.\n"},
    {"keys", cmd_keys, 0, 1, false,
     "Usage: statestore keys [PATTERN]\n"
     "Lists the keys matching PATTERN (default *; * any bytes, ? one byte, \\ escapes) that\n"
     "this client may read, one line each: KEY size=N version=V [ttl=Nms]\n"
     "[fencing_token=T]. Exit 1 when none match.\n"},
    {"inspect", cmd_inspect, 1, 1, false,
     "Usage: statestore inspect KEY\n"
     "Shows KEY's size, version, remaining TTL and fencing token; exit 1 if it is absent.\n"},
    {"backup", cmd_backup, 1, 1, false,
     "Usage: statestore backup NAME\n"
     "Asks the broker for a consistent copy of the live store, written to NAME in its\n"
     "plugin_opt_backup_dir, with every write acknowledged before the request. Waits\n"
     "for it (raise --timeout for a large store) and prints its size.\n"},
    {"restore", cmd_restore, 2, 2, false,
     "Usage: statestore restore FILE DIR\n"
     "Puts the backup FILE into DIR (new or empty) as a data directory, without a\n"
     "broker; then start the broker with plugin_opt_data_dir DIR.\n"},
    {"export", cmd_export, 0, 1, false,
     "Usage: statestore export [PATTERN]\n"
     "Writes the records matching PATTERN (default *) that this client may read as JSON\n"
     "lines: key, key_base64, value_base64, version, fencing_token, expires_at_ms.\n"},
    {"import", cmd_import, 1, 2, false,
     "Usage: statestore import FILE DIR\n"
     "       statestore import FILE --etcd ENDPOINTS [--etcd-prefix PREFIX]\n"
     "Writes the JSON lines of FILE (- for standard input), as export writes them, into DIR\n"
     "(new or empty) as a data directory, without a broker, with their versions, fencing\n"
     "tokens and deadlines; records past their deadline are left out. With --etcd, into a\n"
     "store on that etcd cluster (comma-separated http(s)://host:port) under PREFIX\n"
     "(default statestore/), which must hold no keys yet; --cafile, --cert and --key are\n"
     "then etcd's TLS, -u and -P etcd's user and password, from this command line only\n"
     "(the options file's, and -L's user and password, are the broker's: never sent to etcd).\n"},
    {"ping", cmd_ping, 0, 0, false,
     "Usage: statestore ping\n"
     "Sends one request (a GET of the key statestore-ping) and prints how long the answer\n"
     "took. Exit 0 when the store answered, 4 when it did not within --timeout, 3 when it\n"
     "answered with a storage error: usable as a health check.\n"},
    {"status", cmd_status, 0, 0, false,
     "Usage: statestore status [--json]\n"
     "Prints the health of the store (ok, etcd unreachable, etcd out of space), its\n"
     "backend (on etcd the endpoint the broker uses and whether the cluster answers),\n"
     "keys, bytes and requests, and the broker's own figures (version, uptime, clients,\n"
     "messages) from $SYS/broker/, with age_ms, the age of the store's figures. Exit 3\n"
     "when the store is not healthy, 4 when no figures arrive within --timeout.\n"},
    {"stats", cmd_stats, 0, 0, false,
     "Usage: statestore stats [--watch] [--json]\n"
     "Prints the store's figures, which the broker publishes under $SYS/broker/statestore/\n"
     "every sys_interval seconds (retained). --watch prints them again at each update\n"
     "until interrupted, subscribing again after a reconnect (said on standard error).\n"
     "Exit 4 when none arrive within --timeout.\n"},
};

int cli_command_index(const char *name)
{
    for (size_t i = 0; name && i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            return (int)i;
    return -1;
}

void usage_error(const struct cli *cl, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* With --json, the error object too: a usage error is a failure
     * like any other (exit 64, code INVAL). */
    if (cl->where) {
        /* A line of the options file: where it is says it all. */
        char text[1024];
        vsnprintf(text, sizeof text, fmt, ap);
        cli_fail(cl, SS_E_INVAL, "%s: %s", cl->where, text);
        va_end(ap);
        return;
    }
    cli_vfail(cl, SS_E_INVAL, fmt, ap);
    va_end(ap);
    int which = cli_command_index(cl->command);
    if (which >= 0) {
        /* The first line of the command's help is its usage. */
        const char *h = commands[which].help;
        fprintf(stderr, "%.*s", (int)(strcspn(h, "\n") + 1), h);
    } else if (!cl->repl) {
        fputs(short_usage, stderr);
    }
}

void cli_help(const char *command)
{
    int which = cli_command_index(command);
    fputs(which >= 0 ? commands[which].help : usage_text, stdout);
}

bool cli_offline(const struct cli *cl)
{
    int which = cli_command_index(cl->command);
    return which >= 0 && (commands[which].run == cmd_restore || commands[which].run == cmd_import);
}

/* Check the number of arguments before connecting. */
static bool wrong_arity(const struct cli *cl, int which)
{
    int min = commands[which].min_args, max = commands[which].max_args;
    if (commands[which].value && cl->file) {
        min--;
        max--;
    }
    if (cl->nargs >= min && cl->nargs <= max)
        return false;
    if (commands[which].value && cl->nargs == min - 1)
        usage_error(cl, "%s needs a value (an argument, -f FILE, or - for standard input)", cl->command);
    else if (commands[which].value && cl->file && cl->nargs == max + 1)
        usage_error(cl, "give the value either as an argument or with -f, not both");
    else
        usage_error(cl, "%s: wrong number of arguments", cl->command);
    return true;
}

/* Does the command take - (standard input) as a VALUE or FILE? */
static bool reads_stdin(const struct cli *cl, int which)
{
    if (commands[which].value && !cl->file && cl->nargs > 0)
        return strcmp(cl->args[cl->nargs - 1], "-") == 0;
    return commands[which].run == cmd_import && strcmp(cl->args[0], "-") == 0;
}

int cli_check(struct cli *cl)
{
    int which = cli_command_index(cl->command);
    if (which < 0)
        usage_error(cl, "unknown command \"%s\"", cl->command);
    else if (wrong_arity(cl, which))
        return SS_EXIT_USAGE;
    else if (strcmp(cl->command, "watch") == 0 && cl->nargs == 0 && cl->npatterns == 0)
        usage_error(cl, "watch: give a KEY or --pattern PATTERN");
    else if (strcmp(cl->command, "lock") == 0 && cl->nrest < 1)
        usage_error(cl, "lock: give a COMMAND after --");
    else if (strcmp(cl->command, "scan") == 0 && cl->args[0][0] == '\0')
        usage_error(cl, "scan: the pattern is empty (* lists every key)");
    else if (cl->nx && cl->nex)
        usage_error(cl, "--nx and --nex exclude each other");
    else if (cl->repl && reads_stdin(cl, which))
        usage_error(cl, "at the prompt standard input holds the commands: - cannot stand for it "
                        "(give a value as an argument or with -f FILE, a file by its path)");
    else
        return -1;
    return SS_EXIT_USAGE;
}

int cli_run(struct cli *cl, ss_client *c)
{
    return commands[cli_command_index(cl->command)].run(cl, c);
}

/* watch, lock and the prompt take SIGINT/SIGTERM themselves: block them
 * before the client's threads start, so those threads inherit the mask.
 * (The prompt lets them through again for a line that does not take
 * them: repl.c.) */
static void block_stop_signals(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
}

static void cli_free(struct cli *cl)
{
    free(cl->args);
    free(cl->url_text);
    free(cl->options_text);
}

int main(int argc, char **argv)
{
    struct cli cl;
    memset(&cl, 0, sizeof cl);
    cl.conn.timeout_ms = 10000;
    /* One block: the arguments, then the patterns (each at most argc). */
    cl.args = calloc(2 * (size_t)argc, sizeof *cl.args);
    if (cl.args == NULL)
        return SS_EXIT_USAGE;
    cl.patterns = cl.args + argc;
    /* The options file first: the command line overrides it. Whether
     * failures are told as JSON too is known before either is read. */
    cl.json = cli_json_given(argc, argv);
    int rc = cli_options_file(&cl);
    if (rc < 0)
        rc = cli_parse(&cl, argc, argv, false);
    if (rc == -2) {
        cli_help(cl.command);
        rc = SS_EXIT_OK;
    } else if (rc < 0 && cl.command) {
        rc = cli_check(&cl);
    }
    if (rc >= 0) {
        cli_free(&cl);
        return rc;
    }
    if (cl.command == NULL || strcmp(cl.command, "watch") == 0 || strcmp(cl.command, "lock") == 0)
        block_stop_signals();
    if (cl.command && cli_offline(&cl)) {
        rc = out_flush_check(cli_run(&cl, NULL));
        cli_free(&cl);
        return rc;
    }
    ss_client *c;
    char why[256];
    int st = ss_client_connect_explain(&cl.conn, &c, why, sizeof why);
    if (st != SS_OK) {
        if (cl.json) /* a failure is the JSON error object, as a command's is */
            out_json_error(why, st);
        out_error("cannot connect to %s:%d: %s", cl.conn.host ? cl.conn.host : "localhost", cli_port(&cl.conn), why);
        cli_free(&cl);
        return SS_EXIT_CONNECTION;
    }
    rc = cl.command ? cli_run(&cl, c) : cli_repl(&cl, c);
    rc = out_flush_check(rc);
    ss_client_close(c);
    cli_free(&cl);
    return rc;
}
