/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_repl.c - statestore with no command: a prompt on a terminal
 * (driven here through a pseudo-terminal, as a person types), with
 * redis-cli's answers and history kept from one run to the next; and commands
 * read from a pipe, one a line. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "../test.h"
#include "cli_util.h"
#include "harness.h"

/* A program on a pseudo-terminal, and all it wrote so far. */
struct term {
    int master;
    pid_t pid;
    char text[16384];
    size_t len;
    bool ended; /* the program closed the terminal (it exited) */
};

/* Start argv on a new pseudo-terminal of 80x24, TERM=dumb (libedit then
 * writes no escape sequences), HOME the test's directory. */
static void term_start(struct term *t, char *const argv[])
{
    memset(t, 0, sizeof *t);
    t->master = posix_openpt(O_RDWR | O_NOCTTY);
    ASSERT_TRUE(t->master >= 0);
    ASSERT_EQ(grantpt(t->master), 0);
    ASSERT_EQ(unlockpt(t->master), 0);
    const char *name = ptsname(t->master);
    ASSERT_TRUE(name != NULL);
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    ASSERT_EQ(ioctl(t->master, TIOCSWINSZ, &ws), 0);
    fflush(NULL);
    t->pid = fork();
    ASSERT_TRUE(t->pid >= 0);
    if (t->pid == 0) {
        setsid(); /* the terminal opened next becomes the controlling one */
        int s = open(name, O_RDWR);
        if (s < 0)
            _exit(126);
        dup2(s, 0);
        dup2(s, 1);
        dup2(s, 2);
        close(s);
        close(t->master);
        setenv("TERM", "dumb", 1);
        setenv("HOME", test_tmpdir(), 1);
        execv(argv[0], argv);
        _exit(127);
    }
}

/* Read what the program writes until the text ends with tail (or, tail
 * NULL, until it exits); fails the test after 10 s. */
static void term_until(struct term *t, const char *tail)
{
    uint64_t end = now_ms() + 10000;
    for (;;) {
        size_t n = tail ? strlen(tail) : 0;
        if (tail && t->len >= n && memcmp(t->text + t->len - n, tail, n) == 0)
            return;
        if (t->ended) {
            if (tail == NULL)
                return;
            break;
        }
        int left = (int)(end > now_ms() ? end - now_ms() : 0);
        if (left == 0)
            break;
        struct pollfd p = {t->master, POLLIN, 0};
        if (poll(&p, 1, left) <= 0)
            continue;
        ssize_t got = read(t->master, t->text + t->len, sizeof t->text - 1 - t->len);
        if (got <= 0 && !(got < 0 && errno == EINTR))
            t->ended = true; /* EIO: the other side is closed */
        else if (got > 0)
            t->len += (size_t)got;
        t->text[t->len] = '\0';
    }
    fprintf(stderr, "  the terminal showed: \"");
    for (size_t i = 0; i < t->len; i++)
        fprintf(stderr, t->text[i] >= 0x20 && t->text[i] < 0x7f ? "%c" : "\\x%02x", (unsigned char)t->text[i]);
    fprintf(stderr, "\"\n  waiting for: \"%s\"\n", tail ? tail : "(the end)");
    test_fail(__FILE__, __LINE__, "the terminal did not show what was expected");
}

/* Type keys once the line editor reads them: libedit prints the prompt
 * before it takes the terminal out of canonical mode, and what is typed
 * in between is lost, so wait for that mode (the master shows the
 * terminal's settings). */
static void term_type(struct term *t, const char *keys)
{
    struct termios tio;
    uint64_t end = now_ms() + 5000;
    while (tcgetattr(t->master, &tio) == 0 && (tio.c_lflag & ICANON) && now_ms() < end)
        usleep(2000);
    ASSERT_TRUE(!(tio.c_lflag & ICANON));
    ASSERT_EQ(write(t->master, keys, strlen(keys)), (ssize_t)strlen(keys));
}

/* Wait for the program's exit: its status. */
static int term_end(struct term *t)
{
    term_until(t, NULL);
    int status = 0;
    ASSERT_EQ(waitpid(t->pid, &status, 0), t->pid);
    close(t->master);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A line typed at the prompt and what comes back up to the next prompt.
 * The terminal shows the typed line as typed, then "\r\n" for Enter. */
static const struct {
    const char *typed;
    const char *answer;
} typed_lines[] = {
    {"set greeting \"hello world\"", "OK\r\n"},
    {"get greeting", "\"hello world\"\r\n"},
    {"get nothing", "(nil)\r\n"},
    {"set greeting again --nx", "(nil)\r\n"},
    {"vdel greeting other", "(integer) -1\r\n"},
    {"del greeting", "(integer) 1\r\n"},
    {"del greeting", "(integer) 0\r\n"},
    {"", ""},
    {"frob", "statestore: unknown command \"frob\"\r\n"},
    {"get", "statestore: get: wrong number of arguments\r\nUsage: statestore get KEY\r\n"},
    {"-p 1 get k", "statestore: -p sets up the connection: give it on statestore's own command line, "
                   "not at the prompt\r\n"},
    {"get k --ttl 5", "statestore: --ttl is an option of lock; get takes no options of its own\r\n"
                      "Usage: statestore get KEY\r\n"},
    {"set k -", "statestore: at the prompt standard input holds the commands: - cannot stand for it "
                "(give a value as an argument or with -f FILE, a file by its path)\r\n"
                "Usage: statestore set KEY VALUE|-|-f FILE [--nx|--nex] [--px MS] [--fencing-token HLC]\r\n"},
    {"import - dir", "statestore: at the prompt standard input holds the commands: - cannot stand for it "
                     "(give a value as an argument or with -f FILE, a file by its path)\r\n"
                     "Usage: statestore import FILE DIR\r\n"},
    {"get \"open", "statestore: a quote (\") is not closed\r\n"},
    {"help del", "Usage: statestore del KEY [--fencing-token HLC]\r\n"
                 "Deletes KEY and prints 1, or prints 0 and exits 1 if it was absent.\r\n"},
    {"set 'two words' \"tab\\there\\x41\"", "OK\r\n"},
    {"get 'two words'", "\"tab\\thereA\"\r\n"},
};

/* The prompt on a terminal: each line typed gets its answer; errors and
 * usage errors leave the prompt going; quit ends it with status 0; the
 * next run recalls the lines typed before (Ctrl-P: the line before)
 * from ~/.statestore_history; Ctrl-D ends it too. */
TEST(cli_interactive_prompt_on_a_terminal)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16], prompt[64];
    snprintf(port, sizeof port, "%d", b.port);
    snprintf(prompt, sizeof prompt, "localhost:%d> ", b.port);
    char *argv[] = {(char *)cli_path(), "-p", port, NULL};
    struct term t;
    term_start(&t, argv);
    term_until(&t, prompt);
    char expect[16384];
    size_t n = (size_t)snprintf(expect, sizeof expect, "%s", prompt);
    for (size_t i = 0; i < sizeof typed_lines / sizeof typed_lines[0]; i++) {
        char line[200];
        snprintf(line, sizeof line, "%s\r", typed_lines[i].typed);
        term_type(&t, line);
        n += (size_t)snprintf(expect + n, sizeof expect - n, "%s\r\n%s%s", typed_lines[i].typed,
                              typed_lines[i].answer, prompt);
        term_until(&t, expect);
    }
    term_type(&t, "quit\r");
    n += (size_t)snprintf(expect + n, sizeof expect - n, "quit\r\n");
    ASSERT_EQ(term_end(&t), 0);
    ASSERT_MEM(t.text, t.len, expect, n);

    /* The history: Ctrl-P twice recalls the line before "quit". */
    char hist[700];
    snprintf(hist, sizeof hist, "%s/.statestore_history", test_tmpdir());
    char *saved = slurp(hist, NULL);
    ASSERT_TRUE(strncmp(saved, "_HiStOrY_V2_\n", 13) == 0);
    free(saved);
    term_start(&t, argv);
    term_until(&t, prompt);
    term_type(&t, "\x10");
    term_until(&t, "quit");
    term_type(&t, "\x10");
    term_until(&t, "get 'two words'");
    term_type(&t, "\r");
    char tail[200];
    snprintf(tail, sizeof tail, "\r\n\"tab\\thereA\"\r\n%s", prompt);
    term_until(&t, tail);
    term_type(&t, "\x04"); /* Ctrl-D on an empty line */
    ASSERT_EQ(term_end(&t), 0);
    n = (size_t)snprintf(expect, sizeof expect, "%s\r%squit\r%sget 'two words'\r\n\"tab\\thereA\"\r\n%s^D\r\n",
                         prompt, prompt, prompt, prompt);
    ASSERT_MEM(t.text, t.len, expect, n);

    /* STATESTORE_HISTFILE="" keeps none. */
    ASSERT_EQ(remove(hist), 0);
    ASSERT_EQ(setenv("STATESTORE_HISTFILE", "", 1), 0);
    term_start(&t, argv);
    term_until(&t, prompt);
    term_type(&t, "get greeting\r");
    snprintf(tail, sizeof tail, "get greeting\r\n(nil)\r\n%s", prompt);
    term_until(&t, tail);
    term_type(&t, "exit\r");
    ASSERT_EQ(term_end(&t), 0);
    ASSERT_TRUE(access(hist, F_OK) != 0);
    broker_stop(&b);
}

/* The prompt names the port the connection uses: with a client
 * certificate alone (TLS, on 8883 unless -p says otherwise) it said 1883
 * while connected to 8883. A listener on 8883 of an address of its own
 * (the loopback's 127/8), so that the default port can be served. */
TEST(cli_prompt_names_the_tls_port_of_a_client_certificate)
{
    const char *d = test_tmpdir();
    /* An address of this run's own (runs of several builds go side by
     * side, each binding port 8883). */
    unsigned pid = (unsigned)getpid();
    char host[32], san[40], prompt[64], echo[96];
    snprintf(host, sizeof host, "127.83.%u.%u", (pid >> 8) % 250 + 1, pid % 250 + 1);
    snprintf(san, sizeof san, "IP:%s", host);
    snprintf(prompt, sizeof prompt, "%s:8883> ", host);
    snprintf(echo, sizeof echo, "set p 1\r\nOK\r\n%s", prompt);
    tls_certs(d, san, true);
    tls_capath(d);
    char capath[600], cert[600], key[600];
    snprintf(capath, sizeof capath, "%s/capath", d);
    snprintf(cert, sizeof cert, "%s/client.crt", d);
    snprintf(key, sizeof key, "%s/client.key", d);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "listener 8883 %s\ncafile %s/ca.crt\ncertfile %s/server.crt\n"
             "keyfile %s/server.key\nrequire_certificate true\n", host, d, d, d);
    broker_start(&b);
    /* The system's authorities: SSL_CERT_DIR names them, as OpenSSL reads it. */
    const char *had = getenv("SSL_CERT_DIR");
    char was[600] = "";
    if (had)
        snprintf(was, sizeof was, "%s", had);
    ASSERT_EQ(setenv("SSL_CERT_DIR", capath, 1), 0);
    char *argv[] = {(char *)cli_path(), "-h", host, "--cert", cert, "--key", key, NULL};
    struct term t;
    term_start(&t, argv);
    if (had)
        setenv("SSL_CERT_DIR", was, 1);
    else
        unsetenv("SSL_CERT_DIR");
    term_until(&t, prompt);
    term_type(&t, "set p 1\r");
    term_until(&t, echo);
    term_type(&t, "quit\r");
    ASSERT_EQ(term_end(&t), 0);
    broker_stop(&b);
}

/* Without a terminal the commands come from standard input, one a line,
 * with no prompt: the same answers on stdout, errors on stderr, and the
 * status of the last command. */
TEST(cli_commands_from_standard_input)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    char *argv[] = {(char *)cli_path(), "-p", port, NULL};
    static const char in[] = "set a 1\n"
                             "get a\n"
                             "\n"
                             "   get    b   \n"
                             "set b 2 --nx\n"
                             "set b 3 --nx\n"
                             "bogus x\n"
                             "del a\n"
                             "set 'x y' \"v\\\"w\"\n"
                             "get 'x y'\n"
                             "keys x*\n"
                             "get a\n";
    struct run r;
    run_cmd(argv, in, sizeof in - 1, &r);
    ASSERT_EQ(r.status, 1); /* the last: get of an absent key */
    static const char head[] = "OK\n\"1\"\n(nil)\nOK\n(nil)\n(integer) 1\nOK\n\"v\\\"w\"\n"
                               "x\\x20y  size=3  version=";
    ASSERT_TRUE(r.out_len > sizeof head);
    ASSERT_MEM(r.out, sizeof head - 1, head, sizeof head - 1);
    ASSERT_TRUE(r.out_len > 10 && strcmp(r.out + r.out_len - 7, "\n(nil)\n") == 0);
    ASSERT_STR(r.err, strlen(r.err), "statestore: unknown command \"bogus\"\n");
    run_free(&r);

    /* --json before: JSON answers; quit ends early; a last success is 0. */
    char *json[] = {(char *)cli_path(), "-p", port, "--json", NULL};
    static const char in2[] = "get b\nquit\nget nothing\n";
    run_cmd(json, in2, sizeof in2 - 1, &r);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"found\":true,\"value\":\"2\",\"value_base64\":\"Mg==\",\"version\":\"", 59) == 0);
    ASSERT_TRUE(strchr(r.out, '\n') == r.out + r.out_len - 1);
    ASSERT_STR(r.err, strlen(r.err), "");
    run_free(&r);

    /* Nothing to read: nothing done, status 0. */
    run_cmd(argv, "", 0, &r);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.out_len, 0);
    ASSERT_STR(r.err, strlen(r.err), "");
    run_free(&r);
    broker_stop(&b);
}

/* A NUL byte in a line from a pipe used to end the line there, unseen:
 * "set nk a\0b" set "a", "set k v\0 --nx" set k whatever it held. The
 * line is refused instead, naming its number, as a usage error (64, the
 * status of the last line as ever; the lines after it run), and with
 * --json as the JSON error object. */
TEST(cli_commands_from_standard_input_refuse_a_nul_byte)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    char *argv[] = {(char *)cli_path(), "-p", port, NULL};
    static const char in[] = "set nk a\0b\n";
    struct run r;
    run_cmd(argv, in, sizeof in - 1, &r);
    ASSERT_EQ(r.status, 64);
    ASSERT_EQ(r.out_len, 0);
    ASSERT_STR(r.err, strlen(r.err), "statestore: line 1: a NUL byte in the line\n");
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "get", "nk", NULL);
    ASSERT_EQ(r.status, 1); /* nothing was set */
    run_free(&r);

    static const char in2[] = "set k old\nset k v\0 --nx\nget k\n";
    run_cmd(argv, in2, sizeof in2 - 1, &r);
    ASSERT_EQ(r.status, 0); /* the last line's */
    OUT_IS(r, "OK\n\"old\"\n");
    ASSERT_STR(r.err, strlen(r.err), "statestore: line 2: a NUL byte in the line\n");
    run_free(&r);

    char *json[] = {(char *)cli_path(), "-p", port, "--json", NULL};
    static const char in3[] = "get k\0\n";
    run_cmd(json, in3, sizeof in3 - 1, &r);
    ASSERT_EQ(r.status, 64);
    OUT_IS(r, "{\"error\":\"line 1: a NUL byte in the line\",\"code\":\"INVAL\"}\n");
    run_free(&r);
    broker_stop(&b);
}

/* SIGTERM while a line from a pipe runs (a watch) ends the program, not
 * only that line: the lines after it did run, a write among them. */
TEST(cli_sigterm_ends_commands_from_a_pipe)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16], in_path[600];
    snprintf(port, sizeof port, "%d", b.port);
    snprintf(in_path, sizeof in_path, "%s/in.txt", test_tmpdir());
    FILE *f = fopen(in_path, "w");
    ASSERT_TRUE(f != NULL);
    fputs("watch city\nset city Lyon\n", f);
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        int fd = open(in_path, O_RDONLY);
        int null = open("/dev/null", O_WRONLY);
        dup2(fd, 0);
        dup2(null, 1);
        dup2(null, 2);
        execl(cli_path(), cli_path(), "-p", port, (char *)NULL);
        _exit(127);
    }
    usleep(800 * 1000); /* the watch runs */
    kill(pid, SIGTERM);
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "get", "city", NULL);
    ASSERT_EQ(r.status, 1); /* the SET after the watch never ran */
    run_free(&r);
    broker_stop(&b);
}

/* A line from a pipe that waits (a get that no store answers, with a
 * long --timeout) is stopped by SIGTERM and by SIGINT (Ctrl-C) as the
 * same command on its own command line is: the program ends by the
 * signal at once. They were blocked while any line ran, so the get ran
 * its minute out and the program ended only then. */
TEST(cli_signal_stops_a_waiting_command_from_a_pipe)
{
    struct broker plain = {.no_plugin = true};
    broker_start(&plain);
    char port[16];
    snprintf(port, sizeof port, "%d", plain.port);
    const int sigs[] = {SIGTERM, SIGINT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        int in[2];
        ASSERT_EQ(pipe(in), 0);
        fflush(NULL);
        pid_t pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
            /* As at a terminal: a job a shell starts in the background
             * (CI runs test suites side by side so) inherits SIGINT
             * ignored, and keeps it so across exec. */
            signal(SIGINT, SIG_DFL);
            int null = open("/dev/null", O_WRONLY);
            dup2(in[0], 0);
            dup2(null, 1);
            dup2(null, 2);
            close(in[1]);
            execl(cli_path(), cli_path(), "-p", port, "--timeout", "60000", (char *)NULL);
            _exit(127);
        }
        close(in[0]);
        static const char line[] = "get k\n";
        ASSERT_EQ(write(in[1], line, sizeof line - 1), (ssize_t)(sizeof line - 1));
        usleep(800 * 1000); /* the get waits for its answer */
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0);
        uint64_t sent = now_ms();
        kill(pid, sigs[i]);
        pid_t got = 0;
        while ((got = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() - sent < 5000)
            usleep(20 * 1000);
        if (got == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        }
        close(in[1]);
        ASSERT_EQ(got, pid); /* ended within 5 s of the signal */
        ASSERT_TRUE(WIFSIGNALED(status));
        ASSERT_EQ(WTERMSIG(status), sigs[i]);
    }
    broker_stop(&plain);
}

/* lock at the prompt: COMMAND gets its own words and nothing more (the
 * lock's NAME and options used to follow them, unterminated argv). */
TEST(cli_lock_at_the_prompt_runs_command_as_given)
{
    struct broker b = {0};
    broker_start(&b);
    char port[16];
    snprintf(port, sizeof port, "%d", b.port);
    char *argv[] = {(char *)cli_path(), "-p", port, NULL};
    static const char in[] = "lock L9 -- echo hi\n"
                             "lock L9 --ttl 5000 -- printf [%s]\n";
    struct run r;
    run_cmd(argv, in, sizeof in - 1, &r);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "hi\n[]");
    run_free(&r);
    broker_stop(&b);
}

/* Output that cannot be written (a full disk, a closed pipe: SIGPIPE is
 * ignored) is a failure, never an exit 0 with "N records exported". */
TEST(cli_output_write_failure_is_not_success)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    static const char *const cmds[] = {"export", "get k", "scan '*'", "keys"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "exec '%s' -p %d %s > /dev/full", cli_path(), b.port, cmds[i]);
        char *argv[] = {"/bin/sh", "-c", line, NULL};
        run_cmd(argv, "", 0, &r);
        ASSERT_EQ(r.status, 4);
        ERR_HAS(r, "cannot write standard output");
        ASSERT_TRUE(strstr(r.err, "records exported") == NULL);
        run_free(&r);
    }
    broker_stop(&b);
}
