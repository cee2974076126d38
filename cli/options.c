/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* options.c - the options: one table of them, the command line, and the
 * options file ($XDG_CONFIG_HOME/statestore). Every option belongs to the
 * commands its entry names; one given to any other command is a usage
 * error, never silently ignored. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/command.h"
#include "../core/errors.h"
#include "../core/hlc.h"
#include "cli.h"

enum {
    OPT_HOST = 256, OPT_PORT, OPT_ID, OPT_USER, OPT_PASS, OPT_FILE, OPT_CAFILE, OPT_CAPATH,
    OPT_CERT, OPT_KEY, OPT_TIMEOUT, OPT_JSON, OPT_HELP, OPT_VERSION, OPT_NX, OPT_NEX, OPT_PX,
    OPT_FT, OPT_TTL, OPT_WAIT, OPT_HOLDER, OPT_WATCH, OPT_ETCD, OPT_ETCD_PREFIX, OPT_PATTERN,
    OPT_URL, OPT_INSECURE, OPT_TLS_VERSION, OPT_DEBUG,
};

/* Every option: its long name, its short letter (0: none), whether it
 * takes a value, and the commands it belongs to (space-separated; NULL:
 * every command: the connection, the output, help) with the name of its
 * value in their usage. `set k v --ttl 5000` would otherwise set a key
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
    {"url", 'L', true, OPT_URL, NULL, NULL},
    {"file", 'f', true, OPT_FILE, "set vdel", "FILE"},
    {"cafile", 0, true, OPT_CAFILE, NULL, NULL},
    {"capath", 0, true, OPT_CAPATH, NULL, NULL},
    {"cert", 0, true, OPT_CERT, NULL, NULL},
    {"key", 0, true, OPT_KEY, NULL, NULL},
    {"insecure", 0, false, OPT_INSECURE, NULL, NULL},
    {"tls-version", 0, true, OPT_TLS_VERSION, NULL, NULL},
    {"timeout", 0, true, OPT_TIMEOUT, NULL, NULL},
    {"debug", 'd', false, OPT_DEBUG, NULL, NULL},
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

/* Options that set up the connection: given once, before it is made, so
 * they have no place at the interactive prompt. */
static bool connection_option(int id)
{
    switch (id) {
    case OPT_HOST: case OPT_PORT: case OPT_ID: case OPT_USER: case OPT_PASS: case OPT_URL:
    case OPT_CAFILE: case OPT_CAPATH: case OPT_CERT: case OPT_KEY: case OPT_INSECURE:
    case OPT_TLS_VERSION: case OPT_TIMEOUT: case OPT_DEBUG:
        return true;
    default:
        return false;
    }
}

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

/* The commands option o belongs to, as "set and vdel". */
static void owners_of(const struct cli_option *o, char *owners, size_t cap)
{
    size_t n = 0, i = 0;
    owners[0] = '\0';
    for (const char *p = o->commands; *p; p += strspn(p, " "), n++)
        p += strcspn(p, " ");
    for (const char *p = o->commands; *p; i++) {
        size_t len = strcspn(p, " ");
        char word[32];
        snprintf(word, sizeof word, "%.*s", (int)len, p);
        join_word(owners, cap, i, n, word);
        p += len;
        p += strspn(p, " ");
    }
}

/* The usage error for option o given to a command it does not belong to:
 * "--ttl is an option of lock; set takes --nx, --nex, --px MS, ...". */
static void foreign_option(const struct cli *cl, const struct cli_option *o, const char *spelled)
{
    char owners[128];
    owners_of(o, owners, sizeof owners);
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

static void log_line(void *ud, int level, const char *line)
{
    (void)ud;
    (void)level;
    fprintf(stderr, "%s\n", line);
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
    case OPT_USER: cl->conn.username = v; cl->user_in_url = false; break;
    case OPT_PASS: cl->conn.password = v; cl->pass_in_url = false; break;
    case OPT_URL: return cli_url_apply(cl, spelled, v) != 0 ? SS_EXIT_USAGE : -1;
    case OPT_FILE: cl->file = v; break;
    case OPT_CAFILE: cl->conn.cafile = v; break;
    case OPT_CAPATH: cl->conn.capath = v; break;
    case OPT_CERT: cl->conn.certfile = v; break;
    case OPT_KEY: cl->conn.keyfile = v; break;
    case OPT_INSECURE: cl->conn.insecure = true; break;
    case OPT_TLS_VERSION:
        if (strcmp(v, "tlsv1.3") != 0 && strcmp(v, "tlsv1.2") != 0 && strcmp(v, "tlsv1.1") != 0) {
            usage_error(cl, "%s takes tlsv1.3, tlsv1.2 or tlsv1.1, not \"%s\"", spelled, v);
            return SS_EXIT_USAGE;
        }
        cl->conn.tls_version = v;
        break;
    case OPT_TIMEOUT:
        if (number(cl, spelled, v, 3600000, &n) != 0)
            return SS_EXIT_USAGE;
        cl->conn.timeout_ms = (unsigned)n;
        break;
    case OPT_DEBUG: cl->conn.log_cb = log_line; break;
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
    case OPT_ETCD_PREFIX:
        /* An empty prefix would make the store the whole keyspace, and
         * no broker takes one (etcd_prefix must not be empty). */
        if (v[0] == '\0') {
            usage_error(cl, "%s must not be empty (the store's keys go under it; the brokers' etcd_prefix)",
                        spelled);
            return SS_EXIT_USAGE;
        }
        cl->etcd_prefix = v;
        break;
    case OPT_PATTERN: cl->patterns[cl->npatterns++] = (char *)v; break;
    default: break;
    }
    return -1;
}

bool cli_json_given(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const struct cli_option *o = NULL;
        bool joined = false; /* the value in the same word: --port=1, -p1 */
        if (strcmp(a, "--") == 0)
            return false; /* arguments, or lock's COMMAND, follow */
        if (a[0] == '-' && a[1] == '-') {
            size_t n = strcspn(a + 2, "=");
            o = find_long(a + 2, n);
            joined = a[2 + n] == '=';
        } else if (a[0] == '-' && a[1] != '\0') {
            o = find_short(a[1]);
            joined = a[2] != '\0';
        }
        if (o && o->id == OPT_JSON)
            return true;
        if (o && o->value && !joined)
            i++; /* its value, whatever it looks like */
    }
    return false;
}

int cli_parse(struct cli *cl, int argc, char **argv, bool at_prompt)
{
    bool help = false, only_args = false;
    int rc;
    /* --json first, wherever it stands: a usage error found before it is
     * the JSON error object too. */
    if (cli_json_given(argc, argv))
        cl->json = true;
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
            if (a[2] != '\0' && !o->value) {
                usage_error(cl, "-%c takes no value", o->letter);
                return SS_EXIT_USAGE;
            }
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
        if (at_prompt && connection_option(o->id)) {
            usage_error(cl, "%s sets up the connection: give it on statestore's own command line, "
                            "not at the prompt", spelled);
            return SS_EXIT_USAGE;
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
        /* What import --etcd may send to etcd: only what was given here
         * (the prompt takes none of these). */
        if (o->id == OPT_USER)
            cl->etcd_user = value;
        else if (o->id == OPT_PASS)
            cl->etcd_password = value;
        else if (o->id == OPT_CAFILE)
            cl->etcd_cafile = value;
        else if (o->id == OPT_CERT)
            cl->etcd_cert = value;
        else if (o->id == OPT_KEY)
            cl->etcd_key = value;
        size_t j = (size_t)(o - options);
        if (!(given >> j & 1) && spelled[1] != '-')
            by_letter |= (uint64_t)1 << j;
        given |= (uint64_t)1 << j;
    }
    if (!help && cl->command && cli_command_index(cl->command) >= 0) {
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
    if (!help && !at_prompt && (rc = from_environment(cl)) >= 0)
        return rc;
    if (!help && !at_prompt && (cl->conn.insecure || cl->conn.tls_version) && !cl->conn.cafile &&
        !cl->conn.capath && !cl->conn.certfile && !cl->conn.tls) {
        usage_error(cl, "%s applies to TLS: give --cafile, --capath, --cert or an mqtts:// URL",
                    cl->conn.insecure ? "--insecure" : "--tls-version");
        return SS_EXIT_USAGE;
    }
    if (!help && !at_prompt && (cl->conn.certfile == NULL) != (cl->conn.keyfile == NULL)) {
        usage_error(cl, "%s: a client certificate needs its key, and a key its certificate (--cert and --key)",
                    cl->conn.certfile ? "--cert without --key" : "--key without --cert");
        return SS_EXIT_USAGE;
    }
    /* import --etcd sends etcd the certificate and key of this command
     * line alone (cl->etcd_*): the pair checked above may take its key
     * from the options file, the broker's. */
    if (!help && !at_prompt && cl->etcd_endpoints && (cl->etcd_cert == NULL) != (cl->etcd_key == NULL)) {
        usage_error(cl, "%s: etcd's client certificate needs its key, and a key its certificate, both on this "
                        "command line (the options file's are the broker's)",
                    cl->etcd_cert ? "--cert without --key" : "--key without --cert");
        return SS_EXIT_USAGE;
    }
    return help ? -2 : -1;
}

/* ---- the options file ------------------------------------------------- */

/* One line of the options file (trimmed, not empty, not a comment):
 * "OPTION [VALUE]" or "--OPTION=VALUE"; the value is the rest of the
 * line as it is (spaces inside kept), so a password needs no quoting.
 * Returns -1 to go on, or an exit code. */
static int file_line(struct cli *cl, char *line)
{
    size_t wlen = strcspn(line, " \t=");
    char *value;
    if (line[0] == '-' && line[1] == '-' && line[wlen] == '=') {
        line[wlen] = '\0';
        value = line + wlen + 1;
    } else {
        wlen = strcspn(line, " \t");
        value = line + wlen;
        if (*value) {
            *value++ = '\0';
            value += strspn(value, " \t");
        }
    }
    const struct cli_option *o = NULL;
    if (line[0] == '-' && line[1] == '-')
        o = find_long(line + 2, strlen(line + 2));
    else if (line[0] == '-' && line[1] != '\0' && line[2] == '\0')
        o = find_short(line[1]);
    else {
        usage_error(cl, "\"%s\" is not an option (one option a line, such as -h HOST or --cafile FILE)",
                    line);
        return SS_EXIT_USAGE;
    }
    if (o == NULL) {
        usage_error(cl, "unknown option %s", line);
        return SS_EXIT_USAGE;
    }
    char spelled[40];
    if (line[1] == '-')
        snprintf(spelled, sizeof spelled, "--%s", o->name);
    else
        snprintf(spelled, sizeof spelled, "-%c", o->letter);
    if (o->commands) {
        char owners[128];
        owners_of(o, owners, sizeof owners);
        usage_error(cl, "%s is an option of %s; the options file takes connection and output "
                        "options only", spelled, owners);
        return SS_EXIT_USAGE;
    }
    if (o->id == OPT_HELP || o->id == OPT_VERSION) {
        usage_error(cl, "%s has no place in the options file", spelled);
        return SS_EXIT_USAGE;
    }
    if (o->value && *value == '\0') {
        usage_error(cl, "%s needs a value", spelled);
        return SS_EXIT_USAGE;
    }
    if (!o->value && *value != '\0') {
        usage_error(cl, "%s takes no value", spelled);
        return SS_EXIT_USAGE;
    }
    bool help = false;
    return apply(cl, spelled, o->id, o->value ? value : NULL, &help);
}

/* Where the options file is: $XDG_CONFIG_HOME/statestore, else
 * ~/.config/statestore; false when neither variable is set. */
static bool file_path(char *path, size_t cap)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    int n;
    if (xdg && xdg[0])
        n = snprintf(path, cap, "%s/statestore", xdg);
    else if (home && home[0])
        n = snprintf(path, cap, "%s/.config/statestore", home);
    else
        return false;
    return n > 0 && (size_t)n < cap;
}

int cli_options_file(struct cli *cl)
{
    char path[4096];
    if (!file_path(path, sizeof path))
        return -1;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno == ENOENT || errno == ENOTDIR)
            return -1;
        cli_fail(cl, SS_E_INVAL, "cannot read the options file %s: %s", path, strerror(errno));
        return SS_EXIT_USAGE;
    }
    /* The whole file stays in memory: the options point into it. */
    size_t cap = 0, len = 0;
    char *text = NULL;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            char *t = realloc(text, cap = len + 4096 + 1 + cap);
            if (t == NULL) {
                free(text);
                fclose(f);
                cli_fail(cl, SS_E_NOMEM, "out of memory reading %s", path);
                return SS_EXIT_USAGE;
            }
            text = t;
        }
        size_t got = fread(text + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
    }
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err) {
        free(text);
        cli_fail(cl, SS_E_INVAL, "cannot read the options file %s: %s", path, strerror(err));
        return SS_EXIT_USAGE;
    }
    text[len] = '\0';
    cl->options_text = text;
    if (strlen(text) != len) {
        cli_fail(cl, SS_E_INVAL, "%s: the options file holds a NUL byte", path);
        return SS_EXIT_USAGE;
    }
    unsigned number_of_line = 0;
    char where[4200];
    cl->where = where;
    int rc = -1;
    for (char *line = text, *next; rc < 0 && line < text + len; line = next) {
        size_t n = strcspn(line, "\n");
        next = line + n + (line[n] == '\n');
        line[n] = '\0';
        number_of_line++;
        while (n > 0 && strchr(" \t\r", line[n - 1]))
            line[--n] = '\0';
        line += strspn(line, " \t");
        if (*line == '\0' || *line == '#')
            continue;
        snprintf(where, sizeof where, "%s:%u", path, number_of_line);
        rc = file_line(cl, line);
    }
    cl->where = NULL;
    return rc;
}
