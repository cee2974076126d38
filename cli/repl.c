/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* repl.c - the interactive mode: statestore with no command. On a
 * terminal, a prompt with line editing and history (libedit); otherwise
 * one command a line from standard input. Each line is a command line of
 * its own (the same commands and their options), run on the one
 * connection made at start; set, get, del and vdel answer as redis-cli
 * does: OK, "value", (nil), (integer) 1. */
#include <errno.h>
#include <histedit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/hex.h"
#include "cli.h"

/* Lines of history kept, in memory and in the file. */
#define SS_HISTORY_LINES 1000

/* Split line into words, in place, as a shell would for plain words:
 * spaces separate; "..." may hold spaces and the escapes \" \\ \n \r \t
 * \xHH; '...' holds everything as it is but \' (a quote). words gets at
 * most cap pointers. Returns the count, or -1 with what is wrong in why
 * (n bytes). */
static int split_words(char *line, char **words, int cap, char *why, size_t n_why)
{
    int n = 0;
    char *in = line, *out = line;
    for (;;) {
        in += strspn(in, " \t\r\n");
        if (*in == '\0')
            return n;
        if (n == cap) {
            snprintf(why, n_why, "more than %d words on a line", cap);
            return -1;
        }
        words[n++] = out;
        while (*in && !strchr(" \t\r\n", *in)) {
            char quote = *in;
            if (quote != '"' && quote != '\'') {
                *out++ = *in++;
                continue;
            }
            for (in++; *in != quote; in++) {
                if (*in == '\0') {
                    snprintf(why, n_why, "a quote (%c) is not closed", quote);
                    return -1;
                }
                if (*in != '\\' || in[1] == '\0') {
                    *out++ = *in;
                } else if (quote == '\'') {
                    *out++ = in[1] == '\'' ? *++in : *in;
                } else if (in[1] == 'x' && ss_hex_digit(in[2]) >= 0 && ss_hex_digit(in[3]) >= 0) {
                    char c = (char)(ss_hex_digit(in[2]) * 16 + ss_hex_digit(in[3]));
                    if (c == '\0') {
                        snprintf(why, n_why, "a word cannot hold \\x00");
                        return -1;
                    }
                    *out++ = c;
                    in += 3;
                } else {
                    in++;
                    *out++ = *in == 'n' ? '\n' : *in == 'r' ? '\r' : *in == 't' ? '\t' : *in;
                }
            }
            in++;
        }
        /* The word ends at a separator or at the end; decoding only
         * shrinks, so out <= in and its NUL may take the separator's place. */
        bool more = *in != '\0';
        *out = '\0';
        if (!more)
            return n;
        out = ++in;
    }
}

/* Does the command take SIGINT and SIGTERM itself (sigtimedwait, with
 * them blocked)? watch and stats --watch run until interrupted, and lock
 * passes them to its COMMAND or ends its wait. */
static bool takes_stop_signals(const struct cli *cl)
{
    return strcmp(cl->command, "watch") == 0 || strcmp(cl->command, "lock") == 0 ||
           (strcmp(cl->command, "stats") == 0 && cl->watch);
}

/* Run one line: parse it as a command line, check it, run it on c. */
static int run_line(const struct cli *base, ss_client *c, char **words, int n)
{
    struct cli cl;
    memset(&cl, 0, sizeof cl);
    cl.conn = base->conn;
    cl.json = base->json;
    cl.repl = true;
    /* argv[0], the n words and a NULL (lock's COMMAND ends at it, as
     * execvp needs), then the arguments and the patterns (n + 1 each). */
    char **argv = calloc(3 * (size_t)n + 4, sizeof *argv);
    if (argv == NULL) {
        cli_fail(&cl, SS_E_NOMEM, "out of memory");
        return SS_EXIT_USAGE;
    }
    argv[0] = "statestore";
    memcpy(argv + 1, words, (size_t)n * sizeof *words);
    cl.args = argv + n + 2;
    cl.patterns = cl.args + n + 1;
    int rc = cli_parse(&cl, n + 1, argv, true);
    if (rc == -2) {
        cli_help(cl.command);
        rc = SS_EXIT_OK;
    } else if (rc < 0 && cl.command == NULL) {
        usage_error(&cl, "no command on the line (help lists them)");
        rc = SS_EXIT_USAGE;
    } else if (rc < 0 && (rc = cli_check(&cl)) < 0) {
        /* SIGINT and SIGTERM are blocked between lines (main.c). Any
         * other command is stopped by them as on its own command line
         * (an import, an export, a get with a long --timeout): let
         * through to this thread alone (the client's threads keep them
         * blocked), their default action ends the program, status 130 or
         * 143 to the shell. */
        bool own = takes_stop_signals(&cl);
        sigset_t stop;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        if (!own)
            pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
        rc = cli_run(&cl, cli_offline(&cl) ? NULL : c);
        if (!own)
            pthread_sigmask(SIG_BLOCK, &stop, NULL);
        /* What watch or stats set up ends with them. */
        ss_client_set_notify_cb(c, NULL, NULL);
        ss_client_set_connection_cb(c, NULL, NULL);
    }
    fflush(stdout);
    free(argv);
    return rc;
}

/* A line of the interactive mode (len bytes): quit, help, or a command.
 * Returns true to go on; *status gets the command's exit status. A line
 * that cannot be split into words is refused as a usage error (exit
 * status 64), and the lines after it go on, as after any failed command;
 * lineno (from 1; 0 at the terminal's prompt) names it where its text
 * cannot. */
static bool one_line(const struct cli *base, ss_client *c, char *line, size_t len, unsigned long lineno,
                     int *status)
{
    /* A NUL byte would end the line there, unseen: "set k v\0 --nx"
     * would set k whatever it holds. No word can hold one (the words
     * are C strings to the end), so the whole line is refused. */
    if (strlen(line) < len) {
        cli_fail(base, SS_E_INVAL, "line %lu: a NUL byte in the line", lineno);
        *status = SS_EXIT_USAGE;
        return true;
    }
    char *words[256];
    char why[100];
    int n = split_words(line, words, (int)(sizeof words / sizeof words[0]), why, sizeof why);
    if (n < 0) {
        cli_fail(base, SS_E_INVAL, "%s", why);
        *status = SS_EXIT_USAGE;
        return true;
    }
    if (n == 0)
        return true;
    if (n == 1 && (strcmp(words[0], "quit") == 0 || strcmp(words[0], "exit") == 0))
        return false;
    if (strcmp(words[0], "help") == 0 && n <= 2) {
        cli_help(n == 2 ? words[1] : NULL);
        *status = SS_EXIT_OK;
        return true;
    }
    /* A Ctrl-C typed while the line was edited must not stop what the
     * line starts (watch, lock): only one typed while it runs. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    const struct timespec none = {0, 0};
    while (sigtimedwait(&stop, NULL, &none) > 0) {
    }
    *status = run_line(base, c, words, n);
    return true;
}

/* Commands from a pipe or a file: no prompt, no history. The status is
 * that of the last command, as a shell's. */
static int from_stream(const struct cli *base, ss_client *c)
{
    char *line = NULL;
    size_t cap = 0;
    unsigned long lineno = 0;
    int status = SS_EXIT_OK;
    /* SIGINT/SIGTERM are blocked (main.c) but for the commands that do
     * not take them (run_line); while waiting for a line they end the
     * program, as at the terminal's prompt, or `kill` could never stop it. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    for (;;) {
        pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
        ssize_t got = getline(&line, &cap, stdin);
        pthread_sigmask(SIG_BLOCK, &stop, NULL);
        if (got < 0 || !one_line(base, c, line, (size_t)got, ++lineno, &status))
            break;
    }
    free(line);
    return status;
}

static char *prompt_of(EditLine *el)
{
    char *prompt = NULL;
    el_get(el, EL_CLIENTDATA, &prompt);
    return prompt;
}

/* The history file: $STATESTORE_HISTFILE ("" keeps none), else
 * ~/.statestore_history. */
static bool history_path(char *path, size_t cap)
{
    const char *env = getenv("STATESTORE_HISTFILE");
    const char *home = getenv("HOME");
    int n;
    if (env)
        n = env[0] ? snprintf(path, cap, "%s", env) : -1;
    else
        n = home && home[0] ? snprintf(path, cap, "%s/.statestore_history", home) : -1;
    return n > 0 && (size_t)n < cap;
}

int cli_repl(struct cli *base, ss_client *c)
{
    if (!isatty(STDIN_FILENO))
        return from_stream(base, c);
    char prompt[300];
    snprintf(prompt, sizeof prompt, "%s:%d> ", base->conn.host ? base->conn.host : "localhost",
             cli_port(&base->conn));
    EditLine *el = el_init("statestore", stdin, stdout, stderr);
    History *hist = history_init();
    if (el == NULL || hist == NULL) {
        out_error("cannot start line editing (libedit)");
        if (el)
            el_end(el);
        if (hist)
            history_end(hist);
        return from_stream(base, c);
    }
    HistEvent ev;
    char path[4096];
    bool keep = history_path(path, sizeof path);
    history(hist, &ev, H_SETSIZE, SS_HISTORY_LINES);
    history(hist, &ev, H_SETUNIQUE, 1);
    if (keep)
        history(hist, &ev, H_LOAD, path);
    el_set(el, EL_CLIENTDATA, prompt);
    el_set(el, EL_PROMPT, prompt_of);
    el_set(el, EL_EDITOR, "emacs");
    el_set(el, EL_HIST, history, hist);
    /* libedit's handlers put the terminal back before a signal's own
     * action: Ctrl-C at the prompt ends the program, as in redis-cli. */
    el_set(el, EL_SIGNAL, 1);
    el_source(el, NULL); /* ~/.editrc, as every libedit program reads it */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    int status = SS_EXIT_OK;
    for (;;) {
        int count = 0;
        pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
        const char *got = el_gets(el, &count);
        pthread_sigmask(SIG_BLOCK, &stop, NULL);
        if (got == NULL || count <= 0) {
            if (count < 0 && errno == EINTR)
                continue;
            fputc('\n', stdout); /* Ctrl-D: the shell's prompt on a line of its own */
            break;
        }
        char *line = strdup(got);
        if (line == NULL)
            break;
        if (line[strspn(line, " \t\r\n")] != '\0') {
            history(hist, &ev, H_ENTER, got);
            if (keep)
                history(hist, &ev, H_SAVE, path);
        }
        bool more = one_line(base, c, line, strlen(line), 0, &status);
        free(line);
        if (!more)
            break;
    }
    history_end(hist);
    el_end(el);
    return SS_EXIT_OK;
}
