/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* cli.h - the statestore command-line tool: shared definitions. */
#ifndef SS_CLI_H
#define SS_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../client/client.h"
#include "../core/backend.h"
#include "../core/table.h"

/* Exit codes (documented in --help and the man page). */
enum {
    SS_EXIT_OK = 0,
    SS_EXIT_NOT_FOUND = 1,   /* GET of an absent key; DEL/VDEL deleted nothing */
    SS_EXIT_CONDITION = 2,   /* SET NX/NEX not applied; VDEL value differs; lock not acquired */
    SS_EXIT_PROTOCOL = 3,    /* the server answered an error, or an unreadable answer */
    SS_EXIT_CONNECTION = 4,  /* cannot connect, connection lost, timed out */
    SS_EXIT_USAGE = 64,      /* bad command line */
};

struct cli {
    ss_client_options conn;
    bool json;
    const char *command;
    /* positional arguments after the command, and everything after "--" */
    char **args;
    int nargs;
    char **rest;
    int nrest;
    /* command options */
    bool nx, nex;
    uint64_t px_ms;
    const char *fencing_token;
    const char *file;
    uint64_t ttl_ms;
    uint64_t wait_ms;
    const char *holder;
    bool watch; /* stats --watch */
    char **patterns; /* watch --pattern, each given (in the block of args) */
    int npatterns;
    const char *etcd_endpoints, *etcd_prefix; /* import into an etcd cluster */
    /* -u, -P, --cafile, --cert and --key as statestore's own command line
     * gave them: import --etcd takes these alone as etcd's login and TLS
     * files. Those of the options file (or -L's user and password) are
     * the broker's, an MQTT password that must not go to etcd. */
    const char *etcd_user, *etcd_password, *etcd_cafile, *etcd_cert, *etcd_key;
    char *url_text;     /* owned: the host, user and password of -L */
    bool user_in_url, pass_in_url; /* conn.username, conn.password point into url_text */
    char *options_text; /* owned: the options file, which options point into */
    const char *where;  /* "FILE:LINE" while reading the options file */
    bool repl;          /* at the interactive prompt: answers as redis-cli's */
};

/* options.c: parse argv (argv[0] is not looked at) into *cl. Returns -1
 * to go on, -2 for --help, or an exit code (the usage error said why).
 * Options may come before or after the command and its arguments. An
 * argument that starts with '-' but is not an option ("-5", "-x", "-") is
 * an ordinary argument, so negative numbers need no quoting; "--" ends
 * the options (for lock, what follows is COMMAND). at_prompt: a line of
 * the interactive mode, where the connection's options have no place. */
int cli_parse(struct cli *cl, int argc, char **argv, bool at_prompt);
/* Does argv (argv[0] not looked at) give --json, before any "--"? Read
 * ahead of the options, so that a usage error found before --json (in
 * the options file, or an option ahead of it) is told as JSON too. */
bool cli_json_given(int argc, char **argv);
/* Read the options file ($XDG_CONFIG_HOME/statestore, else
 * ~/.config/statestore; none is fine) into *cl: one option a line, as on
 * the command line, blank lines and lines starting with # ignored. A bad
 * line is a usage error naming the file and the line. -1 to go on, or an
 * exit code. */
int cli_options_file(struct cli *cl);
/* url.c: apply -L URL to cl->conn. 0, or -1 after a usage error. */
int cli_url_apply(struct cli *cl, const char *spelled, const char *url);
/* The port the connection to the broker uses: conn's, else the default
 * the client library takes for it (8883 with TLS, 1883 without). For what
 * is shown (the prompt, a failure to connect). */
int cli_port(const ss_client_options *conn);

/* main.c: the index of the command in the table, or -1. */
int cli_command_index(const char *name);
/* Print the help of a command (NULL: the general help) to standard output. */
void cli_help(const char *command);
/* Check the arguments of a parsed command before it runs: -1 to go on,
 * or an exit code after a usage error. */
int cli_check(struct cli *cl);
/* Run the parsed, checked command on c (NULL for the offline ones). */
int cli_run(struct cli *cl, ss_client *c);
/* True for the commands that need no broker (restore, import). */
bool cli_offline(const struct cli *cl);

/* repl.c: the interactive mode (statestore with no command): a prompt
 * with history on a terminal, else a command a line from standard input.
 * base holds the connection's options; returns the exit status. */
int cli_repl(struct cli *base, ss_client *c);

/* main.c: a usage error: the message, then the command's usage line. */
void usage_error(const struct cli *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* output.c */
void out_json_string(const uint8_t *p, size_t n);       /* "..." with escapes */
void out_base64(const uint8_t *p, size_t n);             /* bare base64 */
void out_escaped(const uint8_t *p, size_t n);            /* \xHH for anything not printable */
void out_escaped_to(FILE *f, const uint8_t *p, size_t n); /* the same, to f */
/* The same with spaces as they are, and a newline: a line of its own. */
void out_line(const uint8_t *p, size_t n);
/* "..." as redis-cli shows a value: \" \\ \n \r \t and \xHH escaped. */
void out_quoted(const uint8_t *p, size_t n);
/* A word for a person: written to standard error only when it is a
 * terminal, so that scripts and pipes see nothing new. */
void out_note_terminal(const char *note);
void out_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void out_verror(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
int exit_for(int status);                                /* status code -> exit code */
/* Flush standard output; a write that failed (EPIPE, ENOSPC) is said
 * and turns an exit code of 0 (or 1) into 4. */
int out_flush_check(int rc);
/* {"error":TEXT,"code":NAME} on standard output (--json). */
void out_json_error(const char *text, int status);
/* A failure that is not a request's answer: "statestore: TEXT" on
 * standard error and, with --json, {"error":TEXT,"code":NAME} on standard
 * output too, as report_failure does for a request, so that a script
 * reading JSON sees every failure. status gives NAME: SS_E_INVAL for what
 * exits 64 (a usage error, a file that cannot be read, a refused line),
 * else the cause (SS_E_IO, SS_E_TIMEOUT, SS_E_PROTOCOL...). */
void cli_fail(const struct cli *cl, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cli_vfail(const struct cli *cl, int status, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
void report_failure(const struct cli *cl, const char *what, int status, const ss_client_result *r);

/* commands.c */
int cmd_set(struct cli *cl, ss_client *c);
int cmd_get(struct cli *cl, ss_client *c);
int cmd_del(struct cli *cl, ss_client *c);
int cmd_vdel(struct cli *cl, ss_client *c);
int cmd_watch(struct cli *cl, ss_client *c);
/* Read a value from the arguments at index i, -f FILE or "-" (stdin).
 * Returns a malloc'ed buffer (free it) or NULL with *rc set. */
uint8_t *read_value(struct cli *cl, int i, size_t *len, int *rc);

/* keys.c */
/* An administrative request (argc words, at most 4); on a failure says
 * why, prefixed with what. Returns the exit code; r is the caller's to
 * free either way. */
int cli_admin_call(struct cli *cl, ss_client *c, const char *what, size_t argc, const char *const *words,
                   ss_client_result *r);
int cmd_keys(struct cli *cl, ss_client *c);
int cmd_inspect(struct cli *cl, ss_client *c);
int cmd_backup(struct cli *cl, ss_client *c);

/* scan.c */
int cmd_scan(struct cli *cl, ss_client *c);

/* restore.c (offline: c is NULL) */
int cmd_restore(struct cli *cl, ss_client *c);

/* datadir.c: the data directory an offline command (restore, import)
 * fills. */
#define CLI_DIR_LOCK "statestore.lock"   /* the broker's lock (core/store_lmdb_open.c) */
#define CLI_DIR_PARTIAL "import.partial" /* where import builds its store */
#define CLI_DIR_RESTORE_PARTIAL "data.mdb.partial" /* where restore copies a backup */
/* What DIR holds, looked at without following a symbolic link in it. */
struct cli_dir_scan {
    bool exists;
    bool lock;        /* statestore.lock */
    bool partial;     /* import.partial, a directory */
    bool partial_odd; /* import.partial that is not a directory (a symbolic link...) */
    bool restore_partial; /* data.mdb.partial, a regular file (else counted in other) */
    bool store;       /* a store's files: data.mdb, journal, journal.discarded */
    bool other;       /* anything else: someone's files */
};
/* 0 (an absent DIR: out->exists false), or -1 (errno) when DIR cannot be
 * read (not a directory, no permission). */
int cli_dir_scan(const char *dir, struct cli_dir_scan *out);
/* DIR's lock, held as a broker holds it. */
struct cli_dir_lock {
    int fd;          /* -1: not held */
    bool made;       /* the lock file did not exist before */
    char path[4096]; /* DIR/statestore.lock */
};
/* Take the lock without waiting: 0, or -1 with errno (EWOULDBLOCK: a
 * broker, an import or a restore holds it). */
int cli_dir_lock_take(struct cli_dir_lock *l, const char *dir);
/* Release a lock taken (else nothing); with remove_file, remove the lock
 * file first, while still holding it. */
void cli_dir_lock_release(struct cli_dir_lock *l, bool remove_file);
/* Make DIR ready for an offline command cmd ("import", "restore") that
 * puts a store into it: DIR must be absent, empty, or hold only what a
 * killed import or restore left (beside a store's files, those are
 * removed and DIR then refused; beside anything else, DIR is refused as
 * it is). It is made if absent (*made_dir), its lock taken (*l) and DIR
 * looked at again, and the leftovers removed (said on stderr). 0 with the
 * lock held, or the exit code after saying why, with DIR as it was found
 * but for those leftovers. */
int cli_dir_begin(const struct cli *cl, const char *cmd, const char *dir, struct cli_dir_lock *l, bool *made_dir);
/* After cli_dir_begin succeeded and the command failed before its store
 * was in place: the lock file goes if it made it, and DIR if it made it
 * (when nothing else is in it), and the lock is released. */
void cli_dir_abandon(const char *dir, struct cli_dir_lock *l, bool made_dir);
/* Remove the directory path and the files in it, never following a
 * symbolic link (path itself or its entries). 0 (also when absent), or -1
 * (errno; ELOOP or ENOTDIR when path is not a real directory). */
int cli_dir_remove(const char *path);
/* rename that never replaces: -1 with EEXIST when to exists. */
int cli_rename_noreplace(const char *from, const char *to);
/* fsync a directory (the entries made, renamed or removed in it become
 * durable) or a file. 0 or -1 (errno). */
int cli_sync_dir(const char *path);
int cli_sync_file(const char *path);

/* import_dir.c: the data directory of import FILE DIR, built so that an
 * import killed part-way leaves no store in DIR. begin readies DIR
 * (cli_dir_begin: absent, empty, or holding only what a killed import or
 * restore left; its lock held, those leftovers removed); the store is
 * then opened in partial. commit, after
 * that store is closed, moves its data file into DIR, durably, never over
 * a data file there (0, or a failure with *why). undo, after a failure,
 * leaves DIR empty, or absent if begin made it. end releases the lock.
 * begin says why it failed, and returns the exit code. */
struct import_dir {
    const char *dir; /* NULL until begin succeeded: nothing to undo */
    char partial[4096], data[4096]; /* DIR/import.partial, DIR/data.mdb */
    struct cli_dir_lock lock;
    bool made_dir; /* DIR did not exist */
    bool placed;   /* the data file was renamed into DIR */
};
int import_dir_begin(const struct cli *cl, struct import_dir *d, const char *dir);
int import_dir_commit(struct import_dir *d, char *why, size_t n);
void import_dir_undo(struct import_dir *d);
void import_dir_end(struct import_dir *d);

/* import_etcd.c: import into a store on an etcd cluster (--etcd). open
 * connects (TLS with --cafile/--cert/--key, etcd's login with -u/-P, as
 * the command line gave them: cl->etcd_*) and
 * checks that the prefix holds nothing; put adds a record; finish
 * commits what is left. Each returns 0 or a failure with *why. */
struct import_etcd;
int import_etcd_open(const struct cli *cl, struct import_etcd **out, char *why, size_t n);
int import_etcd_put(struct import_etcd *e, ss_bytes key, const ss_record *rec, char *why, size_t n);
int import_etcd_finish(struct import_etcd *e, char *why, size_t n);
/* After a failure: delete the records the import wrote that still hold
 * the revision it wrote them at (nothing another wrote under the prefix
 * meanwhile), and say what the prefix holds then. */
void import_etcd_undo(struct import_etcd *e);
void import_etcd_close(struct import_etcd *e);

/* export.c: export online; import offline (c is NULL) */
int cmd_export(struct cli *cl, ss_client *c);
int cmd_import(struct cli *cl, ss_client *c);

/* keyset.c: the keys an import has taken (each once). */
struct keyset {
    ss_table table;
    struct keyset_entry *newest;
};
int keyset_init(struct keyset *k);
/* 0 when key is new (it is kept), 1 when it was there, SS_E_NOMEM. */
int keyset_add(struct keyset *k, ss_bytes key);
void keyset_free(struct keyset *k);

/* stats.c */
int cmd_ping(struct cli *cl, ss_client *c);
int cmd_stats(struct cli *cl, ss_client *c);

/* status.c */
int cmd_status(struct cli *cl, ss_client *c);

/* lock.c */
int cmd_lock(struct cli *cl, ss_client *c);

#endif
