/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_import.c - what import FILE DIR and restore FILE DIR do with
 * the data directory around them: its lock against brokers and each
 * other, what a killed import left, links they must not follow, and a
 * disk that fills up. Races are made to happen, not hoped for: the tool
 * runs under ptrace and is held at the system call where the other party
 * must come in. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/json.h"
#include "../private_fs.h"
#include "../test.h"
#include "harness.h"
#include "held.h"

/* Run argv (the tool) to completion into *r, under ptrace until it enters
 * one of the system calls nrs (n of them); at(ctx) runs while it is held
 * there, then it goes on untraced. Fails the test if it never gets there. */
static void run_held_at(struct run *r, char *const argv[], const long *nrs, size_t n, void (*at)(void *), void *ctx)
{
    char out[500], err[500];
    snprintf(out, sizeof out, "%s/held.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/held.err", test_tmpdir());
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        int i = open("/dev/null", O_RDONLY), o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644),
            e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(i, 0);
        dup2(o, 1);
        dup2(e, 2);
        held_prepare();
        execv(argv[0], argv);
        _exit(127);
    }
    held_until(pid, nrs, n);
    at(ctx);
    held_release(pid);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->out = slurp(out, &r->out_len);
    r->err = slurp(err, NULL);
}

/* The system calls that rename a file. */
static const long renames[] = {
#ifdef SYS_rename
    SYS_rename,
#endif
    SYS_renameat, SYS_renameat2};

static bool exists(const char *dir, const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return lstat(path, &st) == 0;
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_text(path, text);
}

/* The text of dir/name. */
static void file_is(const char *dir, const char *name, const char *text)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len = 0;
    char *got = slurp(path, &len);
    ASSERT_MEM(got, len, text, strlen(text));
    free(got);
}

/* test_tmpdir()/name holding one record (key "k", value "v"). */
static void one_record(char *file, size_t n, const char *name)
{
    snprintf(file, n, "%s/%s", test_tmpdir(), name);
    write_text(file, "{\"key_base64\":\"aw==\",\"value_base64\":\"dg==\",\"version\":\"1700000000000:0:n\"}\n");
}

/* test_tmpdir()/elsewhere (its path into out), holding "precious": files
 * that are no command's, which a link in DIR names. */
static void someone_elses(char *out, size_t n)
{
    snprintf(out, n, "%s/elsewhere", test_tmpdir());
    ASSERT_EQ(mkdir(out, 0700), 0);
    put_file(out, "precious", "keep me");
}

/* dir/name, a symbolic link to elsewhere/precious. */
static void link_to_precious(const char *dir, const char *name, const char *elsewhere)
{
    char link[1200], target[600];
    snprintf(link, sizeof link, "%s/%s", dir, name);
    snprintf(target, sizeof target, "%s/precious", elsewhere);
    ASSERT_EQ(symlink(target, link), 0);
}

/* What another import into DIR does, having finished just as this one
 * looked at DIR: its leftover gone, its store in place, its lock
 * released. */
static void another_import_finishes(void *dir)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/import.partial/data.mdb", (const char *)dir);
    ASSERT_EQ(unlink(path), 0);
    snprintf(path, sizeof path, "%s/import.partial", (const char *)dir);
    ASSERT_EQ(rmdir(path), 0);
    put_file(dir, "data.mdb", "the other import's store");
}

/* Two imports into one DIR at nearly the same moment: the second looked
 * at DIR while the first ran (only its import.partial and lock there, as
 * a killed import leaves them), and takes the lock once the first has
 * finished. It must look again and refuse, not replace the first's store. */
TEST(cli_import_looks_at_dir_again_once_locked)
{
    char dir[400], file[400];
    snprintf(dir, sizeof dir, "%s/target", test_tmpdir());
    one_record(file, sizeof file, "one.jsonl");
    ASSERT_EQ(mkdir(dir, 0700), 0);
    char partial[500];
    snprintf(partial, sizeof partial, "%s/import.partial", dir);
    ASSERT_EQ(mkdir(partial, 0700), 0);
    put_file(partial, "data.mdb", "half a store");
    put_file(dir, "statestore.lock", "");
    char *argv[] = {(char *)cli_path(), "import", file, dir, NULL};
    static const long flocks[] = {SYS_flock};
    struct run r;
    run_held_at(&r, argv, flocks, 1, another_import_finishes, dir);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "/target is not empty: import into a new or empty data directory");
    file_is(dir, "data.mdb", "the other import's store");
    ASSERT_TRUE(exists(dir, "statestore.lock")); /* the other's, kept */
    run_free(&r);
}

static void drop_a_data_file(void *dir)
{
    put_file(dir, "data.mdb", "someone else's");
}

/* Something that ignores the lock puts a data file into DIR while the
 * import runs: the import's rename does not replace it. */
TEST(cli_import_never_replaces_a_data_file)
{
    char dir[400], file[400];
    snprintf(dir, sizeof dir, "%s/target", test_tmpdir());
    one_record(file, sizeof file, "one.jsonl");
    char *argv[] = {(char *)cli_path(), "import", file, dir, NULL};
    struct run r;
    run_held_at(&r, argv, renames, sizeof renames / sizeof renames[0], drop_a_data_file, dir);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, "/target/data.mdb appeared during the import (something wrote in ");
    file_is(dir, "data.mdb", "someone else's");
    ASSERT_TRUE(!exists(dir, "import.partial"));
    run_free(&r);
}

/* DIR/import.partial that is not an import's own directory (a link to
 * another directory) is refused as it is: nothing it names is removed. */
TEST(cli_import_refuses_an_import_partial_that_is_a_link)
{
    char dir[400], file[400], elsewhere[400], partial[500];
    snprintf(dir, sizeof dir, "%s/target", test_tmpdir());
    snprintf(partial, sizeof partial, "%s/import.partial", dir);
    one_record(file, sizeof file, "one.jsonl");
    ASSERT_EQ(mkdir(dir, 0700), 0);
    someone_elses(elsewhere, sizeof elsewhere);
    ASSERT_EQ(symlink(elsewhere, partial), 0);
    struct run r;
    cli_tool(&r, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "/target/import.partial is not a directory (a symbolic link?), so no import left it: remove it "
               "and import again");
    run_free(&r);
    file_is(elsewhere, "precious", "keep me");
    ASSERT_TRUE(exists(dir, "import.partial"));
    ASSERT_TRUE(!exists(dir, "statestore.lock")); /* refused before anything was made */
    /* A link in a real leftover is removed itself, not what it names. */
    ASSERT_EQ(unlink(partial), 0);
    ASSERT_EQ(mkdir(partial, 0700), 0);
    link_to_precious(partial, "data.mdb", elsewhere);
    cli_tool(&r, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 0);
    ERR_HAS(r, "removed ");
    run_free(&r);
    file_is(elsewhere, "precious", "keep me");
}

/* After a killed import a broker was started on DIR (it made a store
 * there beside import.partial). While it runs, import refuses DIR as in
 * use and leaves everything; once it is stopped, import removes the
 * leftover, and refuses DIR as not empty. A successful import leaves
 * statestore.lock, which brokers use. */
TEST(cli_import_removes_a_leftover_beside_a_store)
{
    char dir[400], file[400], partial[500];
    snprintf(dir, sizeof dir, "%s/target", test_tmpdir());
    snprintf(partial, sizeof partial, "%s/import.partial", dir);
    one_record(file, sizeof file, "one.jsonl");
    struct run r;
    cli_tool(&r, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    ASSERT_TRUE(exists(dir, "statestore.lock") && exists(dir, "data.mdb"));
    ASSERT_EQ(mkdir(partial, 0700), 0);
    put_file(partial, "data.mdb", "half a store");
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s", dir);
    broker_start(&b);
    cli_tool(&r, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "/target is in use: a broker, an import or a restore holds it");
    run_free(&r);
    ASSERT_TRUE(exists(dir, "import.partial/data.mdb"));
    broker_stop(&b);
    cli_tool(&r, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "/target/import.partial, left by an import that did not finish");
    ERR_HAS(r, "/target is not empty: import into a new or empty data directory");
    run_free(&r);
    ASSERT_TRUE(!exists(dir, "import.partial") && exists(dir, "data.mdb") && exists(dir, "statestore.lock"));
    broker_start(&b); /* the store is whole */
    cli_run(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v");
    run_free(&r);
    broker_stop(&b);
}

struct started {
    struct broker b;
    int refused; /* broker_start_fails' result */
};

static void start_a_broker(void *ctx)
{
    struct started *s = ctx;
    s->refused = broker_start_fails(&s->b);
}

/* A broker started on DIR while restore copies into it (systemd, say)
 * refuses to start: restore holds DIR's lock until its store is in place.
 * And restore refuses a DIR a broker holds. */
TEST(cli_restore_holds_the_lock_of_dir)
{
    char dir[400], file[400], src[400], backup[500];
    snprintf(dir, sizeof dir, "%s/restored", test_tmpdir());
    snprintf(src, sizeof src, "%s/source", test_tmpdir());
    snprintf(backup, sizeof backup, "%s/data.mdb", src);
    one_record(file, sizeof file, "one.jsonl");
    struct run r;
    cli_tool(&r, "import", file, src, NULL); /* its data file is a backup */
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    struct started s = {0};
    snprintf(s.b.data, sizeof s.b.data, "%s", dir);
    char *argv[] = {(char *)cli_path(), "restore", backup, dir, NULL};
    run_held_at(&r, argv, renames, sizeof renames / sizeof renames[0], start_a_broker, &s);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    ASSERT_TRUE(s.refused != 0);
    ASSERT_TRUE(broker_log_has(&s.b, "another process has it open"));
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s", dir);
    broker_start(&b);
    cli_run(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v");
    run_free(&r);
    /* DIR's lock held (by a broker, an import or a restore): restore
     * refuses DIR, and leaves it as it is. */
    char empty[400];
    snprintf(empty, sizeof empty, "%s/empty", test_tmpdir());
    ASSERT_EQ(mkdir(empty, 0700), 0);
    put_file(empty, "statestore.lock", "");
    char lock[500]; /* held here as a broker holds it */
    snprintf(lock, sizeof lock, "%s/statestore.lock", empty);
    int lfd = open(lock, O_RDWR);
    ASSERT_TRUE(lfd >= 0);
    ASSERT_EQ(flock(lfd, LOCK_EX | LOCK_NB), 0);
    cli_tool(&r, "restore", backup, empty, NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "/empty is in use: a broker, an import or a restore holds it");
    run_free(&r);
    ASSERT_TRUE(!exists(empty, "data.mdb") && !exists(empty, "data.mdb.partial"));
    close(lfd);
    broker_stop(&b);
}

/* A killed restore leaves data.mdb.partial beside the lock file; the next
 * restore or import into DIR removes it once it holds the lock, and says
 * so, as the leftover of a killed import (import.partial) is removed by
 * either. A data.mdb.partial that is not a regular file is not a
 * restore's: DIR is not empty, and what it names is left alone. */
TEST(cli_restore_and_import_remove_what_a_killed_one_left)
{
    char src[400], file[400], backup[500], dir[400], other[400], elsewhere[400];
    snprintf(src, sizeof src, "%s/source", test_tmpdir());
    snprintf(backup, sizeof backup, "%s/data.mdb", src);
    snprintf(dir, sizeof dir, "%s/restored", test_tmpdir());
    snprintf(other, sizeof other, "%s/imported", test_tmpdir());
    one_record(file, sizeof file, "one.jsonl");
    struct run r;
    cli_tool(&r, "import", file, src, NULL); /* its data file is a backup */
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    /* What a restore killed during its copy leaves. */
    ASSERT_EQ(mkdir(dir, 0700), 0);
    put_file(dir, "statestore.lock", "");
    put_file(dir, "data.mdb.partial", "half a backup");
    cli_tool(&r, "restore", backup, dir, NULL);
    ASSERT_EQ(r.status, 0);
    ERR_HAS(r, "restore: removed ");
    ERR_HAS(r, "/restored/data.mdb.partial, left by a restore that did not finish");
    run_free(&r);
    ASSERT_TRUE(!exists(dir, "data.mdb.partial") && exists(dir, "data.mdb") && exists(dir, "statestore.lock"));
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s", dir);
    broker_start(&b);
    cli_run(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v");
    run_free(&r);
    broker_stop(&b);
    /* An import removes it too; a restore removes an import's. */
    ASSERT_EQ(mkdir(other, 0700), 0);
    put_file(other, "data.mdb.partial", "half a backup");
    cli_tool(&r, "import", file, other, NULL);
    ASSERT_EQ(r.status, 0);
    ERR_HAS(r, "import: removed ");
    ERR_HAS(r, "/imported/data.mdb.partial, left by a restore that did not finish");
    run_free(&r);
    ASSERT_TRUE(!exists(other, "data.mdb.partial") && exists(other, "data.mdb"));
    char partial[500];
    snprintf(partial, sizeof partial, "%s/again", test_tmpdir());
    ASSERT_EQ(mkdir(partial, 0700), 0);
    snprintf(partial, sizeof partial, "%s/again/import.partial", test_tmpdir());
    ASSERT_EQ(mkdir(partial, 0700), 0);
    put_file(partial, "data.mdb", "half a store");
    snprintf(partial, sizeof partial, "%s/again", test_tmpdir());
    cli_tool(&r, "restore", backup, partial, NULL);
    ASSERT_EQ(r.status, 0);
    ERR_HAS(r, "/again/import.partial, left by an import that did not finish");
    run_free(&r);
    ASSERT_TRUE(!exists(partial, "import.partial") && exists(partial, "data.mdb"));
    /* A link by that name: not a restore's leftover. */
    char empty[400];
    snprintf(empty, sizeof empty, "%s/linked", test_tmpdir());
    ASSERT_EQ(mkdir(empty, 0700), 0);
    someone_elses(elsewhere, sizeof elsewhere);
    link_to_precious(empty, "data.mdb.partial", elsewhere);
    cli_tool(&r, "restore", backup, empty, NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "/linked is not empty: restore into a new or empty data directory");
    run_free(&r);
    file_is(elsewhere, "precious", "keep me");
    ASSERT_TRUE(exists(empty, "data.mdb.partial") && !exists(empty, "data.mdb") && !exists(empty, "statestore.lock"));
    /* Beside someone's files (the broker's backup directory, where a
     * backup named data.mdb is written as data.mdb.partial): not a data
     * directory, refused as it is. */
    char backups[400];
    snprintf(backups, sizeof backups, "%s/backups", test_tmpdir());
    ASSERT_EQ(mkdir(backups, 0700), 0);
    put_file(backups, "nightly", "a backup");
    put_file(backups, "data.mdb.partial", "a backup being written");
    cli_tool(&r, "restore", backup, backups, NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "/backups is not empty: restore into a new or empty data directory");
    run_free(&r);
    file_is(backups, "data.mdb.partial", "a backup being written");
    ASSERT_TRUE(!exists(backups, "statestore.lock"));
}

/* DIR's lock file replaced while a broker opens it: an import that made
 * it ends (removing the file, then releasing it) just after the broker
 * opened it, and another import makes and locks a new one before the
 * broker locks the old. The broker must take the lock DIR holds now, and
 * so refuse to start, not lock the removed file and run beside the
 * import. */
struct lock_swap {
    char dir[400];
    int fd; /* the second import's lock */
};

static void an_import_ends_and_another_begins(void *ctx)
{
    struct lock_swap *w = ctx;
    char lock[500];
    snprintf(lock, sizeof lock, "%s/statestore.lock", w->dir);
    ASSERT_EQ(unlink(lock), 0);
    w->fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ASSERT_TRUE(w->fd >= 0);
    ASSERT_EQ(flock(w->fd, LOCK_EX | LOCK_NB), 0);
}

TEST(plugin_locks_the_lock_file_dir_holds)
{
    struct lock_swap w = {.fd = -1};
    snprintf(w.dir, sizeof w.dir, "%s/data", test_tmpdir());
    ASSERT_EQ(mkdir(w.dir, 0700), 0);
    put_file(w.dir, "statestore.lock", ""); /* made by an import */
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s", w.dir);
    b.held_at_lock = an_import_ends_and_another_begins;
    b.held_ctx = &w;
    ASSERT_TRUE(broker_start_fails(&b) != 0);
    ASSERT_TRUE(broker_log_has(&b, "another process has it open"));
    close(w.fd); /* the second import ends; its lock file stays */
    b.held_at_lock = NULL;
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "set", "k", "v", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    broker_stop(&b);
}

/* From a pipe the import cannot know the store's size, and asks for a
 * map of 1 TiB of address space. Where that cannot be had (here a limit
 * of 4 GiB on the tool's address space, prlimit --as; also a 32-bit
 * system, or a sanitizer's reserved ranges), it takes a smaller map
 * instead of failing ("cannot open a store ... out of memory"). Under a
 * sanitizer the tool is built with it, whose runtime cannot start under
 * such a limit: the test returns at once there (the plain build runs
 * it). */
TEST(cli_import_from_a_pipe_fits_its_map_to_the_address_space)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return;
#endif
    char dir[400], out[500], err[500];
    snprintf(dir, sizeof dir, "%s/target", test_tmpdir());
    snprintf(out, sizeof out, "%s/import.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/import.err", test_tmpdir());
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    char *argv[] = {"prlimit", "--as=4294967296", (char *)cli_path(), "import", "-", dir, NULL};
    pid_t pid = spawn_cmd_from(argv, p[0], out, err);
    close(p[0]);
    static const char line[] = "{\"key_base64\":\"aw==\",\"value_base64\":\"dg==\",\"version\":\"1700000000000:0:n\"}\n";
    ASSERT_EQ(write(p[1], line, sizeof line - 1), (ssize_t)(sizeof line - 1));
    close(p[1]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *text = slurp(err, NULL);
        fprintf(stderr, "  import: %s", text ? text : "");
        free(text);
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s", dir);
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "get", "k", NULL);
    ASSERT_EQ(r.status, 0);
    OUT_IS(r, "v");
    run_free(&r);
    broker_stop(&b);
}

/* n records of size-byte values (value i: bytes j * 7 + i), keys
 * k0000..., as JSON lines into f. */
static void write_records(FILE *f, int n, size_t size)
{
    uint8_t *value = malloc(size);
    ASSERT_TRUE(value != NULL);
    ss_buf key64 = SS_BUF_INIT, value64 = SS_BUF_INIT;
    for (int i = 0; i < n; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%04d", i);
        for (size_t j = 0; j < size; j++)
            value[j] = (uint8_t)(j * 7 + (size_t)i);
        key64.len = value64.len = 0;
        ASSERT_EQ(ss_json_base64(&key64, (const uint8_t *)key, strlen(key)), SS_OK);
        ASSERT_EQ(ss_json_base64(&value64, value, size), SS_OK);
        fprintf(f, "{\"key_base64\":\"%.*s\",\"value_base64\":\"%.*s\",\"version\":\"1700000000000:%d:n\"}\n",
                (int)key64.len, (const char *)key64.data, (int)value64.len, (const char *)value64.data, i);
    }
    ss_buf_free(&key64);
    ss_buf_free(&value64);
    free(value);
}

/* The same into test_tmpdir()/name (its path into file). */
static void records(char *file, size_t cap, const char *name, int n, size_t size)
{
    snprintf(file, cap, "%s/%s", test_tmpdir(), name);
    FILE *f = fopen(file, "w");
    ASSERT_TRUE(f != NULL);
    write_records(f, n, size);
    ASSERT_EQ(fclose(f), 0);
}

/* An export of a store larger than 1 GiB (the default max_store_bytes)
 * imports whole: import has no store-size limit of its own, and its
 * batches stay within what one journal frame may hold. The records come
 * through a pipe, as from "statestore export | ssh ... statestore import
 * - DIR". */
TEST(cli_import_a_store_larger_than_one_gib)
{
    /* 1.1 GB of values: more than max_store_bytes' default, and more
     * than one journal frame may hold in 1000 records, a batch's count. */
    enum { N = 1000, SIZE = 1100 * 1000 };
    char dir[400], out[500], err[500];
    snprintf(dir, sizeof dir, "%s/large", test_tmpdir());
    snprintf(out, sizeof out, "%s/import.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/import.err", test_tmpdir());
    signal(SIGPIPE, SIG_IGN);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    fflush(NULL);
    pid_t writer = fork();
    ASSERT_TRUE(writer >= 0);
    if (writer == 0) {
        close(p[0]);
        FILE *f = fdopen(p[1], "w");
        write_records(f, N, SIZE);
        _exit(fclose(f) == 0 ? 0 : 1);
    }
    close(p[1]); /* the writer's: the import sees the end when it ends */
    char *argv[] = {(char *)cli_path(), "import", "-", dir, NULL};
    pid_t pid = spawn_cmd_from(argv, p[0], out, err);
    ASSERT_TRUE(pid >= 0);
    close(p[0]);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_EQ(waitpid(writer, NULL, 0), writer);
    char *said = slurp(err, NULL);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "  import said: %s\n", said);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_TRUE(strstr(said, "1000 records imported") != NULL);
    free(said);
    /* A broker serves it (its own max_store_bytes applies to new writes). */
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s", dir);
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "get", "k0999", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_EQ(r.out_len, (size_t)SIZE);
    for (size_t j = 0; j < SIZE; j++)
        ASSERT_EQ((uint8_t)r.out[j], (uint8_t)(j * 7 + 999));
    run_free(&r);
    broker_stop(&b);
}

/* A disk that fills while the import writes its journal (here, at the
 * first batch of 1000 records) is a store that could not be written:
 * exit 4, IO, with the store's cause; not a record refused (64). */
TEST(cli_import_full_disk_is_a_write_failure)
{
    char small[400], dir[500], file[400];
    snprintf(small, sizeof small, "%s/small", test_tmpdir());
    snprintf(dir, sizeof dir, "%s/target", small);
    records(file, sizeof file, "many.jsonl", 1100, 3000);
    private_tmpfs(small, "3m", 0);
    struct run r;
    cli_tool(&r, "--json", "import", file, dir, NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.out, "\"code\":\"IO\"}") != NULL);
    ASSERT_TRUE(strstr(r.out, "many.jsonl line 1000: ") != NULL);
    ASSERT_TRUE(strstr(r.out, "No space left on device") != NULL);
    run_free(&r);
    ASSERT_TRUE(access(dir, F_OK) != 0); /* made, then removed */
}

/* The journal fits on the disk but the data file it is checkpointed into
 * at the end does not: the import fails, saying why. */
TEST(cli_import_failed_final_checkpoint_says_why)
{
    char small[400], dir[500], file[400];
    snprintf(small, sizeof small, "%s/small", test_tmpdir());
    snprintf(dir, sizeof dir, "%s/target", small);
    records(file, sizeof file, "some.jsonl", 35, 100 * 1024);
    private_tmpfs(small, "8m", 0);
    struct run r;
    cli_tool(&r, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, "checkpoint (writing the journal's changes into the data file): No space left on device");
    run_free(&r);
    ASSERT_TRUE(access(dir, F_OK) != 0);
}
