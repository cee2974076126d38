/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_import_etcd.c - what a failed import --etcd leaves under its
 * prefix when others wrote there meanwhile, and the options it refuses.
 * (The import itself is in test_cli_export.c.) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "cli_util.h"
#include "delay_proxy.h"
#include "etcd_cluster.h"
#include "harness.h"

/* statestore import - --etcd ENDPOINTS --etcd-prefix PREFIX, reading a
 * pipe (*in, its end to write), standard error into err_path. */
static pid_t import_from_pipe(const char *endpoints, const char *prefix, const char *err_path, int *in)
{
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(p[0], 0);
        dup2(err, 2);
        close(p[1]);
        execl(cli_path(), cli_path(), "import", "-", "--etcd", endpoints, "--etcd-prefix", prefix, (char *)NULL);
        _exit(127);
    }
    close(p[0]);
    *in = p[1];
    return pid;
}

static void write_records(int fd, int from, int to)
{
    char line[200];
    for (int i = from; i < to; i++) {
        import_record_line(line, sizeof line, i);
        ASSERT_EQ(write(fd, line, strlen(line)), (ssize_t)strlen(line));
    }
}

static int wait_exit(pid_t pid)
{
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void put(const struct etcd_cluster *c, const char *key, const char *value)
{
    char out[500];
    ASSERT_EQ(etcd_cluster_ctl(c, out, sizeof out, "put", key, value, NULL), 0);
}

/* A failed import --etcd deletes the records it wrote and nothing else:
 * a broker started on the prefix after the import found it empty wrote
 * its claim and its marker, and its clients wrote a record and replaced
 * one of the import's; all of them stay (the import deleted the whole
 * prefix). It says what the prefix holds, as read again. An import whose
 * Txn finds a key present (someone else writes there) deletes its own
 * records the same way (it left them all). */
TEST(cli_failed_etcd_import_deletes_only_what_it_wrote)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    char err_path[600];
    snprintf(err_path, sizeof err_path, "%s/import.err", test_tmpdir());

    /* 100 records: Txns of 40, the first two committed once line 81 is
     * read; then the others' writes; then a line that is not a record. */
    int in;
    pid_t pid = import_from_pipe(c.endpoints, "imp/", err_path, &in);
    write_records(in, 0, 100);
    etcd_cluster_await_count(&c, "imp/k/", 80, 10000);
    put(&c, "imp/l/b", "claim of broker b");
    put(&c, "imp/n/b", "marker of broker b");
    put(&c, "imp/k/client", "a client's record");
    put(&c, "imp/k/key00005", "a client's new value");
    static const char bad[] = "{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\"}\n";
    ASSERT_EQ(write(in, bad, sizeof bad - 1), (ssize_t)(sizeof bad - 1));
    close(in);
    ASSERT_EQ(wait_exit(pid), 64);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/"), 4);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/l/b"), 1);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/n/b"), 1);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/k/client"), 1);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/k/key00005"), 1);
    char out[500];
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "get", "--print-value-only", "imp/k/key00005", NULL), 0);
    ASSERT_STR(out, strlen(out), "a client's new value\n");
    char *err = slurp(err_path, NULL);
    ASSERT_TRUE(strstr(err, "line 101: key_base64, value_base64 and version are required") != NULL);
    ASSERT_TRUE(strstr(err, "statestore: import: 79 records written under imp/ were deleted; the prefix holds keys "
                            "another wrote meanwhile (a broker started on it?), left as they are (1 of them "
                            "records of this import that another changed since)\n") != NULL);
    free(err);

    /* Its third Txn finds key00090 written meanwhile: nothing of that Txn
     * is written, the first two Txns' records go, key00090 stays. */
    pid = import_from_pipe(c.endpoints, "imp2/", err_path, &in);
    write_records(in, 0, 100);
    etcd_cluster_await_count(&c, "imp2/k/", 80, 10000);
    put(&c, "imp2/k/key00090", "someone else's");
    close(in);
    ASSERT_EQ(wait_exit(pid), 64);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp2/"), 1);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp2/k/key00090"), 1);
    err = slurp(err_path, NULL);
    ASSERT_TRUE(strstr(err, "a key of this import is in the store already (written meanwhile?)") != NULL);
    ASSERT_TRUE(strstr(err, "statestore: import: 80 records written under imp2/ were deleted; the prefix holds "
                            "keys another wrote meanwhile (a broker started on it?), left as they are\n") != NULL);
    free(err);

    /* Alone on its prefix, the same failure leaves it empty, and says so. */
    pid = import_from_pipe(c.endpoints, "imp3/", err_path, &in);
    write_records(in, 0, 100);
    ASSERT_EQ(write(in, bad, sizeof bad - 1), (ssize_t)(sizeof bad - 1));
    close(in);
    ASSERT_EQ(wait_exit(pid), 64);
    err = slurp(err_path, NULL);
    ASSERT_TRUE(strstr(err, "statestore: import: the records written under imp3/ were deleted: the prefix "
                            "holds nothing again\n") != NULL);
    free(err);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp3/"), 0);
    etcd_cluster_stop(&c);
}

/* A Txn of the import that etcd applied but whose answer was lost (a
 * proxy drops what etcd sends from then on): the import fails when the
 * call times out (10 s), and its undo, on the next endpoint (etcd
 * itself), reads that Txn's keys back, finds them as it wrote them, and
 * deletes them with the rest (a Txn left unanswered was forgotten: its 40
 * records stayed). */
TEST(cli_failed_etcd_import_judges_a_txn_left_unanswered)
{
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    int via = free_port();
    struct delay_proxy *px = delay_proxy_start("127.0.0.1", via, "127.0.0.1", c.client_port[0]);
    char url[128], err_path[600];
    snprintf(url, sizeof url, "http://127.0.0.1:%d,http://127.0.0.1:%d", via, c.client_port[0]);
    snprintf(err_path, sizeof err_path, "%s/import.err", test_tmpdir());
    /* The second Txn (records 40 to 79) names key00040 and the marker. */
    delay_proxy_mute_after(px, NULL, "lost/k/key00040", "lost/n/:import");
    int in;
    pid_t pid = import_from_pipe(url, "lost/", err_path, &in);
    write_records(in, 0, 100);
    close(in);
    etcd_cluster_await_count(&c, "lost/k/", 80, 10000);
    ASSERT_EQ(wait_exit(pid), 4);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "lost/"), 0);
    char *err = slurp(err_path, NULL);
    ASSERT_TRUE(strstr(err, "statestore: import: the records written under lost/ were deleted: the prefix holds "
                            "nothing again\n") != NULL);
    free(err);
    delay_proxy_stop(px);
    etcd_cluster_stop(&c);
}

/* --etcd-prefix "" would make the store the whole keyspace (a failed
 * import deleted the whole of it): refused, as the brokers refuse an
 * empty etcd_prefix. import --etcd sends etcd the certificate and key of
 * its own command line: a --cert there whose --key is in the options
 * file (the broker's) is refused (it went to etcd without its key). */
TEST(cli_import_etcd_refuses_an_empty_prefix_and_a_certificate_without_its_key)
{
    char file[600], conf[600];
    snprintf(file, sizeof file, "%s/one.jsonl", test_tmpdir());
    write_text(file, "{\"key_base64\":\"aw==\",\"value_base64\":\"dg==\",\"version\":\"1700000000000:0:n\"}\n");
    int port = free_port(); /* nothing listens: no etcd */
    char endpoints[64];
    snprintf(endpoints, sizeof endpoints, "http://127.0.0.1:%d", port);
    struct run r;
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", endpoints, "--etcd-prefix", "", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: --etcd-prefix must not be empty (the store's keys go under it; the brokers' "
               "etcd_prefix)\nUsage: statestore import FILE DIR\n");
    run_free(&r);
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", endpoints, "--etcd-prefix=", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "--etcd-prefix must not be empty");
    run_free(&r);

    /* The harness points XDG_CONFIG_HOME at the test's directory. */
    snprintf(conf, sizeof conf, "%s/statestore", test_tmpdir());
    write_text(conf, "--key /nonexistent/broker.key\n");
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", endpoints, "--cert", "/nonexistent/etcd.crt", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_STR(r.err, strlen(r.err),
               "statestore: --cert without --key: etcd's client certificate needs its key, and a key its "
               "certificate, both on this command line (the options file's are the broker's)\n"
               "Usage: statestore import FILE DIR\n");
    run_free(&r);
    write_text(conf, "--cert /nonexistent/broker.crt\n");
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", endpoints, "--key", "/nonexistent/etcd.key", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "--key without --cert: etcd's client certificate needs its key");
    run_free(&r);
    /* The broker's pair in the options file is no concern of the import's. */
    write_text(conf, "--cert /nonexistent/broker.crt\n--key /nonexistent/broker.key\n");
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", endpoints, NULL);
    ASSERT_EQ(r.status, 4);
    ERR_HAS(r, "import: etcd at http://127.0.0.1:");
    run_free(&r);
}
