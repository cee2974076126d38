/* main.c - statestore: command line, connection, dispatch. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "cli.h"

#ifndef SS_VERSION
#define SS_VERSION "0.1.0"
#endif

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
    "  lock NAME [--ttl MS] [--wait MS] [--holder ID] -- COMMAND [ARGS...]\n"
    "                     run COMMAND while holding the lease NAME\n"
    "\n"
    "Connection (as mosquitto_pub):\n"
    "  -h HOST  -p PORT  -i CLIENT_ID  -u USERNAME  -P PASSWORD\n"
    "  --cafile FILE  --capath DIR  --cert FILE  --key FILE\n"
    "  --timeout MS       how long to wait for each answer (default 10000)\n"
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
    const char *help;
} commands[] = {
    {"set", cmd_set,
     "Usage: statestore set KEY VALUE|-|-f FILE [--nx|--nex] [--px MS] [--fencing-token HLC]\n"
     "Sets KEY. --nx: only if absent; --nex: only if absent or equal to VALUE; --px: expire\n"
     "after MS milliseconds. Prints OK; exit 2 when the condition did not hold.\n"},
    {"get", cmd_get,
     "Usage: statestore get KEY\n"
     "Writes the value to standard output exactly (no newline added); exit 1 if absent.\n"},
    {"del", cmd_del,
     "Usage: statestore del KEY [--fencing-token HLC]\n"
     "Deletes KEY and prints 1, or prints 0 and exits 1 if it was absent.\n"},
    {"vdel", cmd_vdel,
     "Usage: statestore vdel KEY VALUE|-|-f FILE [--fencing-token HLC]\n"
     "Deletes KEY only if its value is VALUE: prints 1, 0 (absent, exit 1) or -1 (differs, exit 2).\n"},
    {"watch", cmd_watch,
     "Usage: statestore watch KEY...\n"
     "Prints one line per change until interrupted: \"VERSION SET KEY VALUE\" or\n"
     "\"VERSION DELETE KEY\" (bytes outside printable ASCII as \\xHH). After a reconnect it\n"
     "registers again and reports on standard error that changes may have been missed.\n"},
    {"lock", cmd_lock,
     "Usage: statestore lock NAME [--ttl MS] [--wait MS] [--holder ID] -- COMMAND [ARGS...]\n"
     "Waits for the lease NAME (at most --wait MS, default forever), runs COMMAND while\n"
     "renewing it (lease time --ttl, default 10000 ms), releases it, and exits with\n"
     "COMMAND's status. COMMAND finds the fencing token in STATESTORE_LOCK_TOKEN. If the\n"
     "lease is lost, COMMAND is terminated and the exit status is 2.\n"},
};

enum {
    OPT_CAFILE = 256, OPT_CAPATH, OPT_CERT, OPT_KEY, OPT_TIMEOUT, OPT_JSON, OPT_HELP, OPT_VERSION,
    OPT_NX, OPT_NEX, OPT_PX, OPT_FT, OPT_TTL, OPT_WAIT, OPT_HOLDER,
};

static const struct option long_opts[] = {
    {"cafile", required_argument, NULL, OPT_CAFILE},
    {"capath", required_argument, NULL, OPT_CAPATH},
    {"cert", required_argument, NULL, OPT_CERT},
    {"key", required_argument, NULL, OPT_KEY},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {"nx", no_argument, NULL, OPT_NX},
    {"nex", no_argument, NULL, OPT_NEX},
    {"px", required_argument, NULL, OPT_PX},
    {"fencing-token", required_argument, NULL, OPT_FT},
    {"ttl", required_argument, NULL, OPT_TTL},
    {"wait", required_argument, NULL, OPT_WAIT},
    {"holder", required_argument, NULL, OPT_HOLDER},
    {NULL, 0, NULL, 0},
};

static int number(const char *opt, const char *text, uint64_t *out)
{
    if (ss_parse_u64((const uint8_t *)text, strlen(text), (uint64_t)1 << 53, out) != SS_OK || *out == 0) {
        out_error("%s needs a positive integer, not \"%s\"", opt, text);
        return -1;
    }
    return 0;
}

/* Parse the command line into *cl. Returns -1 to go on, or an exit code. */
static int parse(struct cli *cl_out, int argc, char **argv)
{
    struct cli cl = *cl_out;
    /* Everything after "--" belongs to lock's COMMAND. */
    int end = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            end = i;
            cl.rest = argv + i + 1;
            cl.nrest = argc - i - 1;
            break;
        }
    }
    bool help = false;
    int opt;
    uint64_t n;
    /* "+" is not used: options may follow the command and its arguments.
     * A lone "-" (standard input) is an argument. */
    while ((opt = getopt_long(end, argv, "-h:p:i:u:P:f:", long_opts, NULL)) != -1) {
        switch (opt) {
        case 1:
            if (cl.command == NULL)
                cl.command = optarg;
            else
                cl.args[cl.nargs++] = optarg;
            break;
        case 'h': cl.conn.host = optarg; break;
        case 'p':
            if (number("-p", optarg, &n) != 0 || n > 65535)
                return SS_EXIT_USAGE;
            cl.conn.port = (int)n;
            break;
        case 'i': cl.conn.client_id = optarg; break;
        case 'u': cl.conn.username = optarg; break;
        case 'P': cl.conn.password = optarg; break;
        case 'f': cl.file = optarg; break;
        case OPT_CAFILE: cl.conn.cafile = optarg; break;
        case OPT_CAPATH: cl.conn.capath = optarg; break;
        case OPT_CERT: cl.conn.certfile = optarg; break;
        case OPT_KEY: cl.conn.keyfile = optarg; break;
        case OPT_TIMEOUT:
            if (number("--timeout", optarg, &n) != 0 || n > 3600000)
                return SS_EXIT_USAGE;
            cl.conn.timeout_ms = (unsigned)n;
            break;
        case OPT_JSON: cl.json = true; break;
        case OPT_HELP: help = true; break;
        case OPT_VERSION: printf("statestore %s\n", SS_VERSION); return SS_EXIT_OK;
        case OPT_NX: cl.nx = true; break;
        case OPT_NEX: cl.nex = true; break;
        case OPT_PX:
            if (number("--px", optarg, &cl.px_ms) != 0)
                return SS_EXIT_USAGE;
            break;
        case OPT_FT: cl.fencing_token = optarg; break;
        case OPT_TTL:
            if (number("--ttl", optarg, &cl.ttl_ms) != 0)
                return SS_EXIT_USAGE;
            break;
        case OPT_WAIT:
            if (number("--wait", optarg, &cl.wait_ms) != 0)
                return SS_EXIT_USAGE;
            break;
        case OPT_HOLDER: cl.holder = optarg; break;
        default:
            fputs(usage_text, stderr);
            return SS_EXIT_USAGE;
        }
    }
    *cl_out = cl;
    return help ? -2 : -1;
}

int main(int argc, char **argv)
{
    struct cli cl;
    memset(&cl, 0, sizeof cl);
    cl.conn.timeout_ms = 10000;
    cl.args = calloc((size_t)argc, sizeof *cl.args);
    if (cl.args == NULL)
        return SS_EXIT_USAGE;
    int prc = parse(&cl, argc, argv);
    if (prc >= 0) {
        free(cl.args);
        return prc;
    }
    bool help = prc == -2;
    int which = -1;
    for (size_t i = 0; cl.command && i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cl.command, commands[i].name) == 0)
            which = (int)i;
    if (help) {
        fputs(which >= 0 ? commands[which].help : usage_text, stdout);
        free(cl.args);
        return SS_EXIT_OK;
    }
    if (which < 0) {
        if (cl.command)
            out_error("unknown command \"%s\"", cl.command);
        fputs(usage_text, stderr);
        free(cl.args);
        return SS_EXIT_USAGE;
    }
    if (cl.nx && cl.nex) {
        out_error("--nx and --nex exclude each other");
        free(cl.args);
        return SS_EXIT_USAGE;
    }
    if (cl.nrest > 0 && strcmp(cl.command, "lock") != 0) {
        out_error("\"--\" is only for lock");
        free(cl.args);
        return SS_EXIT_USAGE;
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
    ss_client *c;
    int st = ss_client_connect(&cl.conn, &c);
    if (st != SS_OK) {
        out_error("cannot connect to %s:%d: %s", cl.conn.host ? cl.conn.host : "localhost",
                  cl.conn.port ? cl.conn.port : 1883, ss_strerror(st));
        free(cl.args);
        return SS_EXIT_CONNECTION;
    }
    int rc = commands[which].run(&cl, c);
    fflush(stdout);
    ss_client_close(c);
    free(cl.args);
    return rc;
}
