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
    "\n"
    "A client for the Azure IoT Operations state store protocol over MQTT 5.\n"
    "\n"
    "Commands:\n"
    "  set KEY VALUE      set a key; VALUE may be - (standard input) or given with -f FILE\n"
    "      [--nx | --nex] [--px MS] [--fencing-token HLC]\n"
    "  get KEY            write the value to standard output, byte for byte\n"
    "  del KEY [--fencing-token HLC]\n"
    "  vdel KEY VALUE     delete only if the value matches [--fencing-token HLC]\n"
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
    "\n"
    "Connection (as mosquitto_pub):\n"
    "  -h HOST  -p PORT  -i CLIENT_ID  -u USERNAME  -P PASSWORD\n"
    "  (defaults for -h and -p from STATESTORE_HOST and STATESTORE_PORT)\n"
    "  --cafile FILE  --capath DIR  --cert FILE  --key FILE\n"
    "  --timeout MS       how long to wait for each answer (default 10000)\n"
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
     "lease is lost, COMMAND is terminated and the exit status is 2.\n"},
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
     "then etcd's TLS, -u and -P etcd's user and password.\n"},
    {"ping", cmd_ping, 0, 0, false,
     "Usage: statestore ping\n"
     "Sends one request (a GET of the key statestore-ping) and prints how long the answer\n"
     "took. Exit 0 when the store answered, 4 when it did not within --timeout, 3 when it\n"
     "answered with a storage error: usable as a health check.\n"},
    {"stats", cmd_stats, 0, 0, false,
     "Usage: statestore stats [--watch] [--json]\n"
     "Prints the store's figures, which the broker publishes under $SYS/broker/statestore/\n"
     "every sys_interval seconds (retained). --watch prints them again at each update\n"
     "until interrupted. Exit 4 when none arrive within --timeout.\n"},
};

enum {
    OPT_HOST = 256, OPT_PORT, OPT_ID, OPT_USER, OPT_PASS, OPT_FILE, OPT_CAFILE, OPT_CAPATH,
    OPT_CERT, OPT_KEY, OPT_TIMEOUT, OPT_JSON, OPT_HELP, OPT_VERSION, OPT_NX, OPT_NEX, OPT_PX,
    OPT_FT, OPT_TTL, OPT_WAIT, OPT_HOLDER, OPT_WATCH, OPT_ETCD, OPT_ETCD_PREFIX, OPT_PATTERN,
};

/* Every option: its long name, its short letter (0: none), whether it
 * takes a value, and the commands it belongs to (space-separated; NULL:
 * every command: the connection, the output, help) with the name of its
 * value in their usage. An option of another command is a usage error,
 * never silently ignored: `set k v --ttl 5000` would otherwise set a key
 * that never expires. */
static const struct cli_option {
    const char *name;
    char letter;
    bool value;
    int id;
    const char *commands;
    const char *arg;
} options[] = {
    {"host", 'h', true, OPT_HOST, NULL, NULL},
    {"port", 'p', true, OPT_PORT, NULL, NULL},
    {"id", 'i', true, OPT_ID, NULL, NULL},
    {"username", 'u', true, OPT_USER, NULL, NULL},
    {"password", 'P', true, OPT_PASS, NULL, NULL},
    {"file", 'f', true, OPT_FILE, "set vdel", "FILE"},
    {"cafile", 0, true, OPT_CAFILE, NULL, NULL},
    {"capath", 0, true, OPT_CAPATH, NULL, NULL},
    {"cert", 0, true, OPT_CERT, NULL, NULL},
    {"key", 0, true, OPT_KEY, NULL, NULL},
    {"timeout", 0, true, OPT_TIMEOUT, NULL, NULL},
    {"json", 0, false, OPT_JSON, NULL, NULL},
    {"help", 0, false, OPT_HELP, NULL, NULL},
    {"version", 0, false, OPT_VERSION, NULL, NULL},
    {"nx", 0, false, OPT_NX, "set", NULL},
    {"nex", 0, false, OPT_NEX, "set", NULL},
    {"px", 0, true, OPT_PX, "set", "MS"},
    {"fencing-token", 0, true, OPT_FT, "set del vdel", "HLC"},
    {"ttl", 0, true, OPT_TTL, "lock", "MS"},
    {"wait", 0, true, OPT_WAIT, "lock", "MS"},
    {"holder", 0, true, OPT_HOLDER, "lock", "ID"},
    {"watch", 0, false, OPT_WATCH, "stats", NULL},
    {"etcd", 0, true, OPT_ETCD, "import", "ENDPOINTS"},
    {"etcd-prefix", 0, true, OPT_ETCD_PREFIX, "import", "PREFIX"},
    {"pattern", 0, true, OPT_PATTERN, "watch", "PATTERN"},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

static const struct cli_option *find_long(const char *name, size_t n)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (strlen(options[i].name) == n && memcmp(options[i].name, name, n) == 0)
            return &options[i];
    return NULL;
}

static const struct cli_option *find_short(char letter)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (options[i].letter == letter)
            return &options[i];
    return NULL;
}

/* Does the space-separated list hold the word? */
static bool listed(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        if (len == n && memcmp(p, word, n) == 0)
            return true;
        p += len;
        p += strspn(p, " ");
    }
    return false;
}

/* Append "a, b and c" style: the i-th of n items. */
static void join_word(char *out, size_t cap, size_t i, size_t n, const char *word)
{
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", word);
}

/* The usage error for option o given to a command it does not belong to:
 * "--ttl is an option of lock; set takes --nx, --nex, --px MS, ...". */
static void foreign_option(const struct cli *cl, const struct cli_option *o, const char *spelled)
{
    char owners[128] = "";
    size_t n = 0, i = 0;
    for (const char *p = o->commands; *p; p += strspn(p, " "), n++)
        p += strcspn(p, " ");
    for (const char *p = o->commands; *p; i++) {
        size_t len = strcspn(p, " ");
        char word[32];
        snprintf(word, sizeof word, "%.*s", (int)len, p);
        join_word(owners, sizeof owners, i, n, word);
        p += len;
        p += strspn(p, " ");
    }
    char own[256] = "";
    size_t mine = 0, k = 0;
    for (size_t j = 0; j < N_OPTIONS; j++)
        mine += options[j].commands && listed(options[j].commands, cl->command);
    for (size_t j = 0; j < N_OPTIONS; j++) {
        const struct cli_option *x = &options[j];
        if (!x->commands || !listed(x->commands, cl->command))
            continue;
        char word[48];
        if (x->letter)
            snprintf(word, sizeof word, "-%c %s", x->letter, x->arg);
        else
            snprintf(word, sizeof word, "--%s%s%s", x->name, x->arg ? " " : "", x->arg ? x->arg : "");
        join_word(own, sizeof own, k++, mine, word);
    }
    if (mine)
        usage_error(cl, "%s is an option of %s; %s takes %s", spelled, owners, cl->command, own);
    else
        usage_error(cl, "%s is an option of %s; %s takes no options of its own", spelled, owners,
                    cl->command);
}

static int command_index(const char *name)
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
    out_verror(fmt, ap);
    va_end(ap);
    int which = command_index(cl->command);
    if (which >= 0) {
        /* The first line of the command's help is its usage. */
        const char *h = commands[which].help;
        fprintf(stderr, "%.*s", (int)(strcspn(h, "\n") + 1), h);
    } else {
        fputs(short_usage, stderr);
    }
}

/* A number in [1, max], or a usage error naming where it came from. */
static int number(const struct cli *cl, const char *what, const char *text, uint64_t max,
                  uint64_t *out)
{
    if (ss_parse_u64((const uint8_t *)text, strlen(text), max, out) != SS_OK || *out == 0) {
        usage_error(cl, "%s needs an integer from 1 to %llu, not \"%s\"", what,
                    (unsigned long long)max, text);
        return -1;
    }
    return 0;
}

/* Connection settings from the environment, where the command line gave
 * none. */
static int from_environment(struct cli *cl)
{
    const char *host = getenv("STATESTORE_HOST");
    const char *port = getenv("STATESTORE_PORT");
    uint64_t n;
    if (host && host[0] && cl->conn.host == NULL)
        cl->conn.host = host;
    if (port && port[0] && cl->conn.port == 0) {
        if (number(cl, "STATESTORE_PORT", port, 65535, &n) != 0)
            return SS_EXIT_USAGE;
        cl->conn.port = (int)n;
    }
    return -1;
}

/* Apply one option. Returns -1 to go on, or an exit code. */
static int apply(struct cli *cl, const char *spelled, int id, const char *v, bool *help)
{
    uint64_t n;
    const uint64_t ms_max = (uint64_t)1 << 53;
    switch (id) {
    case OPT_HOST: cl->conn.host = v; break;
    case OPT_PORT:
        if (number(cl, spelled, v, 65535, &n) != 0)
            return SS_EXIT_USAGE;
        cl->conn.port = (int)n;
        break;
    case OPT_ID: cl->conn.client_id = v; break;
    case OPT_USER: cl->conn.username = v; break;
    case OPT_PASS: cl->conn.password = v; break;
    case OPT_FILE: cl->file = v; break;
    case OPT_CAFILE: cl->conn.cafile = v; break;
    case OPT_CAPATH: cl->conn.capath = v; break;
    case OPT_CERT: cl->conn.certfile = v; break;
    case OPT_KEY: cl->conn.keyfile = v; break;
    case OPT_TIMEOUT:
        if (number(cl, spelled, v, 3600000, &n) != 0)
            return SS_EXIT_USAGE;
        cl->conn.timeout_ms = (unsigned)n;
        break;
    case OPT_JSON: cl->json = true; break;
    case OPT_HELP: *help = true; break;
    case OPT_VERSION: printf("statestore %s\n", SS_VERSION); return SS_EXIT_OK;
    case OPT_NX: cl->nx = true; break;
    case OPT_NEX: cl->nex = true; break;
    case OPT_PX: return number(cl, spelled, v, ms_max, &cl->px_ms) != 0 ? SS_EXIT_USAGE : -1;
    case OPT_FT: {
        ss_hlc h;
        if (ss_hlc_parse((const uint8_t *)v, strlen(v), &h) != SS_OK) {
            usage_error(cl, "%s needs a version like 1700000000000:0:node, not \"%s\"", spelled, v);
            return SS_EXIT_USAGE;
        }
        cl->fencing_token = v;
        break;
    }
    case OPT_TTL: return number(cl, spelled, v, ms_max, &cl->ttl_ms) != 0 ? SS_EXIT_USAGE : -1;
    case OPT_WAIT: return number(cl, spelled, v, ms_max, &cl->wait_ms) != 0 ? SS_EXIT_USAGE : -1;
    case OPT_HOLDER: cl->holder = v; break;
    case OPT_WATCH: cl->watch = true; break;
    case OPT_ETCD: cl->etcd_endpoints = v; break;
    case OPT_ETCD_PREFIX: cl->etcd_prefix = v; break;
    case OPT_PATTERN: cl->patterns[cl->npatterns++] = (char *)v; break;
    default: break;
    }
    return -1;
}

/* Parse the command line into *cl. Returns -1 to go on, -2 for --help, or
 * an exit code.
 *
 * Options may come before or after the command and its arguments. An
 * argument that starts with '-' but is not an option ("-5", "-x", "-") is
 * an ordinary argument, so negative numbers need no quoting; "--" ends the
 * options (for lock, what follows is COMMAND). */
static int parse(struct cli *cl, int argc, char **argv)
{
    bool help = false, only_args = false;
    int rc;
    /* The options given, by their index in options[], and how (-f or
     * --file): judged once the command is known, wherever it stood. */
    uint64_t given = 0, by_letter = 0;
    _Static_assert(N_OPTIONS <= 64, "the option masks hold 64 options");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const struct cli_option *o = NULL;
        const char *value = NULL;
        char spelled[40];
        if (!only_args && strcmp(a, "--") == 0) {
            if (cl->command && strcmp(cl->command, "lock") == 0) {
                cl->rest = argv + i + 1;
                cl->nrest = argc - i - 1;
                break;
            }
            only_args = true;
            continue;
        }
        if (!only_args && a[0] == '-' && a[1] == '-') {
            size_t n = strcspn(a + 2, "=");
            if ((o = find_long(a + 2, n)) == NULL) {
                usage_error(cl, "unknown option %.*s (a value that starts with - goes after --)",
                            (int)(n + 2), a);
                return SS_EXIT_USAGE;
            }
            if (a[2 + n] == '=') {
                if (!o->value) {
                    usage_error(cl, "--%s takes no value", o->name);
                    return SS_EXIT_USAGE;
                }
                value = a + 3 + n;
            }
            snprintf(spelled, sizeof spelled, "--%s", o->name);
        } else if (!only_args && a[0] == '-' && a[1] != '\0' && (o = find_short(a[1])) != NULL) {
            if (a[2] != '\0')
                value = a + 2;
            snprintf(spelled, sizeof spelled, "-%c", o->letter);
        } else {
            if (cl->command == NULL)
                cl->command = a;
            else
                cl->args[cl->nargs++] = (char *)a;
            continue;
        }
        if (o->value && value == NULL) {
            if (i + 1 >= argc) {
                usage_error(cl, "%s needs a value", spelled);
                return SS_EXIT_USAGE;
            }
            value = argv[++i];
        }
        if ((rc = apply(cl, spelled, o->id, value, &help)) >= 0)
            return rc;
        size_t j = (size_t)(o - options);
        if (!(given >> j & 1) && spelled[1] != '-')
            by_letter |= (uint64_t)1 << j;
        given |= (uint64_t)1 << j;
    }
    if (!help && cl->command && command_index(cl->command) >= 0) {
        for (size_t j = 0; j < N_OPTIONS; j++) {
            const struct cli_option *o = &options[j];
            if (!(given >> j & 1) || o->commands == NULL || listed(o->commands, cl->command))
                continue;
            char spelled[40];
            if (by_letter >> j & 1)
                snprintf(spelled, sizeof spelled, "-%c", o->letter);
            else
                snprintf(spelled, sizeof spelled, "--%s", o->name);
            foreign_option(cl, o, spelled);
            return SS_EXIT_USAGE;
        }
    }
    if (!help && (rc = from_environment(cl)) >= 0)
        return rc;
    return help ? -2 : -1;
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
    int rc = parse(&cl, argc, argv);
    int which = command_index(cl.command);
    if (rc == -2) {
        fputs(which >= 0 ? commands[which].help : usage_text, stdout);
        rc = SS_EXIT_OK;
    } else if (rc >= 0) {
        /* parse said why */
    } else if (cl.command == NULL) {
        usage_error(&cl, "no command given");
        rc = SS_EXIT_USAGE;
    } else if (which < 0) {
        usage_error(&cl, "unknown command \"%s\"", cl.command);
        rc = SS_EXIT_USAGE;
    } else if (wrong_arity(&cl, which)) {
        rc = SS_EXIT_USAGE;
    } else if (strcmp(cl.command, "watch") == 0 && cl.nargs == 0 && cl.npatterns == 0) {
        usage_error(&cl, "watch: give a KEY or --pattern PATTERN");
        rc = SS_EXIT_USAGE;
    } else if (strcmp(cl.command, "lock") == 0 && cl.nrest < 1) {
        usage_error(&cl, "lock: give a COMMAND after --");
        rc = SS_EXIT_USAGE;
    } else if (strcmp(cl.command, "scan") == 0 && cl.args[0][0] == '\0') {
        usage_error(&cl, "scan: the pattern is empty (* lists every key)");
        rc = SS_EXIT_USAGE;
    } else if (cl.nx && cl.nex) {
        usage_error(&cl, "--nx and --nex exclude each other");
        rc = SS_EXIT_USAGE;
    }
    if (rc >= 0) {
        free(cl.args);
        return rc;
    }
    /* watch and lock take SIGINT/SIGTERM themselves: block them before the
     * client's threads start, so those threads inherit the mask. */
    if (strcmp(cl.command, "watch") == 0 || strcmp(cl.command, "lock") == 0) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGINT);
        sigaddset(&s, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &s, NULL);
    }
    if (commands[which].run == cmd_restore || commands[which].run == cmd_import) {
        rc = commands[which].run(&cl, NULL); /* offline */
        free(cl.args);
        return rc;
    }
    ss_client *c;
    char why[256];
    int st = ss_client_connect_explain(&cl.conn, &c, why, sizeof why);
    if (st != SS_OK) {
        out_error("cannot connect to %s:%d: %s", cl.conn.host ? cl.conn.host : "localhost",
                  cl.conn.port ? cl.conn.port : 1883, why);
        free(cl.args);
        return SS_EXIT_CONNECTION;
    }
    rc = commands[which].run(&cl, c);
    fflush(stdout);
    ss_client_close(c);
    free(cl.args);
    return rc;
}
