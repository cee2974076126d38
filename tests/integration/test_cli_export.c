/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_cli_export.c - statestore export and import: every record as a
 * JSON line and back, with versions, tokens and deadlines, into a new data
 * directory or into an etcd cluster. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/json.h"
#include "../test.h"
#include "cli_util.h"
#include "etcd_cluster.h"
#include "harness.h"

/* export writes every record as a JSON line; import puts them into a new
 * data directory with their versions, tokens and deadlines, leaving out
 * those past their deadline; a broker on it serves the same records and
 * issues versions above them. */
/* A broker (on LMDB) with a plain record, one with a deadline in 10
 * minutes, a fenced one, a binary key and value, and with soon one whose
 * deadline is 1.5 s away; their export into *exp and into file
 * (test_tmpdir()/export.jsonl). */
static void export_sample(bool soon, struct run *exp, char *file, size_t file_len)
{
    struct broker b = {0};
    broker_start(&b);
    struct run r;
    /* Larger than one etcd request: on etcd it goes in chunks. (First,
     * and last in key order: it takes a while under the sanitizers, and
     * "soon" must still be there when the export reads it.) */
    size_t large_len = (size_t)3 << 20;
    char *large = malloc(large_len);
    ASSERT_TRUE(large != NULL);
    for (size_t i = 0; i < large_len; i++)
        large[i] = (char)(i * 31 + i / 4096);
    cli_run(&r, b.port, large, large_len, "set", "zlarge", "-", NULL);
    free(large);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    const char *sets[][6] = {
        {"set", "plain", "1", NULL},
        {"set", "ttl", "two words", "--px", "600000", NULL},
        {"set", "fenced", "3", "--fencing-token", "1700000000000:1:x", NULL},
        {"set", "soon", "gone", "--px", "1500", NULL},
    };
    for (size_t i = 0; i < sizeof sets / sizeof sets[0] - (soon ? 0 : 1); i++) {
        cli_run(&r, b.port, NULL, 0, sets[i][0], sets[i][1], sets[i][2], sets[i][3], sets[i][4], sets[i][5], NULL);
        ASSERT_EQ(r.status, 0);
        run_free(&r);
    }
    cli_run(&r, b.port, "v\0\xff", 3, "set", "bin\x01key", "-", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    cli_run(exp, b.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp->status, 0);
    broker_stop(&b);
    snprintf(file, file_len, "%s/export.jsonl", test_tmpdir());
    FILE *f = fopen(file, "w");
    ASSERT_TRUE(f != NULL);
    fwrite(exp->out, 1, exp->out_len, f);
    fclose(f);
}

TEST(cli_export_import_round_trip)
{
    struct run r, exp1;
    char file[400], dir[400];
    export_sample(true, &exp1, file, sizeof file);
    ASSERT_TRUE(strstr(exp1.err, "6 records exported") != NULL);
    ASSERT_TRUE(strstr(exp1.out, "{\"key\":\"bin\\u0001key\",\"key_base64\":\"YmluAWtleQ==\","
                                 "\"value_base64\":\"dgD/\",\"version\":\"") != NULL);
    ASSERT_TRUE(strstr(exp1.out, "\"fencing_token\":\"1700000000000:1:x\",\"expires_at_ms\":null}\n") != NULL);
    /* "soon" is past its deadline now. Its 1.5 s outlasts the two commands
     * between its SET and the export even under the sanitizers. */
    usleep(1600 * 1000);
    snprintf(dir, sizeof dir, "%s/imported", test_tmpdir());
    cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.err, "5 records imported") != NULL && strstr(r.err, "(1 past their deadline left out)"));
    run_free(&r);
    cli_run(&r, 0, NULL, 0, "import", file, dir, NULL); /* not empty now */
    ASSERT_EQ(r.status, 64);
    run_free(&r);

    struct broker b2 = {0};
    snprintf(b2.data, sizeof b2.data, "%s", dir);
    broker_start(&b2);
    struct run exp2;
    cli_run(&exp2, b2.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp2.status, 0);
    /* The same lines, without the one that expired. */
    char *soon = strstr(exp1.out, "{\"key\":\"soon\"");
    ASSERT_TRUE(soon != NULL);
    char *soon_end = strchr(soon, '\n') + 1;
    size_t before = (size_t)(soon - exp1.out), after = exp1.out_len - (size_t)(soon_end - exp1.out);
    ASSERT_EQ(exp2.out_len, before + after);
    ASSERT_TRUE(memcmp(exp2.out, exp1.out, before) == 0 && memcmp(exp2.out + before, soon_end, after) == 0);
    /* New versions come after every imported one. */
    struct client c;
    char resp[256];
    client_connect_rr(&c, b2.port, "after", resp, sizeof resp);
    struct msg *m = request(&c, resp, "n", "1:0:oldclock", NULL, W("SET", "new", "v"));
    PAYLOAD(m, "+OK\r\n");
    const char *v = msg_user(m, "__ts");
    const char *newest = strstr(exp1.out, "\"version\":\"");
    for (const char *p = newest; p; p = strstr(p + 1, "\"version\":\""))
        if (strncmp(p + 11, newest + 11, 13) > 0)
            newest = p;
    ASSERT_TRUE(v != NULL && strncmp(v, newest + 11, 13) > 0);
    client_close(&c);
    broker_stop(&b2);
    run_free(&exp1);
    run_free(&exp2);

    /* A line that is not a record: refused with its number. */
    FILE *f = fopen(file, "w");
    fputs("{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"}\n{\"key_base64\":7}\n", f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/bad", test_tmpdir());
    cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "export.jsonl line 2: key_base64, value_base64 and version are required") != NULL);
    run_free(&r);
    ASSERT_TRUE(access(dir, F_OK) != 0); /* made, then removed */

    /* Text after the object (two records pasted on one line), or a NUL
     * byte inside a line: refused, not read as the first half. */
    for (int i = 0; i < 3; i++) {
        f = fopen(file, "w");
        fputs("{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"}\n", f);
        if (i == 0) {
            fputs("{\"key_base64\":\"Yg==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"} {\"key\"}\n", f);
        } else {
            /* A NUL after the object, or before it (not a blank line). */
            static const char nul[] = "{\"key_base64\":\"Yg==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"}\0junk\n";
            static const char lead[] = " \0{\"key_base64\":\"Yg==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"}\n";
            if (i == 1)
                fwrite(nul, 1, sizeof nul - 1, f);
            else
                fwrite(lead, 1, sizeof lead - 1, f);
        }
        fclose(f);
        cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
        ASSERT_EQ(r.status, 64);
        ASSERT_TRUE(strstr(r.err, i == 0 ? "export.jsonl line 2: text after the object's '}'"
                                         : "export.jsonl line 2: a NUL byte in the line") != NULL);
        run_free(&r);
        ASSERT_TRUE(access(dir, F_OK) != 0);
    }

    /* A key given twice (a file put together by hand): which line should
     * win cannot be told, so neither does; refused with the second line. */
    f = fopen(file, "w");
    fputs("{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"2:0:n\"}\n"
          "{\"key_base64\":\"Yg==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"}\n"
          "{\"key_base64\":\"YQ==\",\"value_base64\":\"Mg==\",\"version\":\"1:0:n\"}\n", f);
    fclose(f);
    cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "export.jsonl line 3: this key was given on an earlier line already") != NULL);
    run_free(&r);
    ASSERT_TRUE(access(dir, F_OK) != 0);

    /* A version or token far ahead of the clock would put every version
     * issued afterwards as far ahead (fencing with them refused), or at
     * the end of time: refused with its line. 59 s ahead is taken. */
    char far[32], soon_ok[32], line[300];
    snprintf(far, sizeof far, "%llu", (unsigned long long)(now_ms() + 365ull * 24 * 3600 * 1000));
    snprintf(soon_ok, sizeof soon_ok, "%llu", (unsigned long long)(now_ms() + 59000));
    for (int i = 0; i < 3; i++) {
        const char *version = i == 0 ? far : i == 1 ? "1" : "18446744073709551615";
        const char *counter = i == 2 ? "4294967295" : "0";
        f = fopen(file, "w");
        fputs("{\"key_base64\":\"Yg==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\"}\n", f);
        if (i == 1)
            snprintf(line, sizeof line, "{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\","
                                        "\"fencing_token\":\"%s:0:n\"}\n", far);
        else
            snprintf(line, sizeof line, "{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"%s:%s:n\"}\n",
                     version, counter);
        fputs(line, f);
        fclose(f);
        cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
        ASSERT_EQ(r.status, 64);
        ASSERT_TRUE(strstr(r.err, "export.jsonl line 2: a version or fencing token more than 60 s ahead of this "
                                  "machine's clock") != NULL);
        run_free(&r);
        ASSERT_TRUE(access(dir, F_OK) != 0);
    }
    f = fopen(file, "w");
    fprintf(f, "{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"%s:0:n\"}\n", soon_ok);
    fclose(f);
    cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);

    /* A file that cannot be read to its end (a directory) is not an
     * empty import. */
    snprintf(dir, sizeof dir, "%s/fromdir", test_tmpdir());
    cli_run(&r, 0, NULL, 0, "import", test_tmpdir(), dir, NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "Is a directory") != NULL);
    run_free(&r);
    ASSERT_TRUE(access(dir, F_OK) != 0);
}

/* A version's node id (the broker's, configured) and a fencing token's (a
 * client's) may hold spaces, quotes and backslashes: the administrative
 * answer escapes them, so that its fields stay apart, and keys, inspect
 * and export give them back as they are, in valid JSON; an import keeps
 * them. */
TEST(cli_node_ids_with_spaces_and_quotes_stay_whole)
{
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_node_id my \"node\"\n");
    broker_start(&b);
    struct run r;
    cli_run(&r, b.port, NULL, 0, "set", "fk", "1", "--fencing-token", "1700000000000:1:a \"b\\", NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);

    /* The answer on the wire: each escape exact, the fields apart. */
    struct client c;
    char resp[256];
    client_connect_rr(&c, b.port, "adm", resp, sizeof resp);
    struct msg *m = admin_call(&c, resp, "i", W("INSPECT", "fk"));
    const char *tail = ":my\\x20\"node\" - 1700000000000:1:a\\x20\"b\\x5c\n";
    ASSERT_TRUE((size_t)m->len > strlen(tail) && strncmp((const char *)m->payload, "key 666b 1 ", 11) == 0);
    ASSERT_TRUE(memcmp(m->payload + m->len - strlen(tail), tail, strlen(tail)) == 0);
    client_close(&c);

    cli_run(&r, b.port, NULL, 0, "--json", "inspect", "fk", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strncmp(r.out, "{\"key\":\"fk\",\"key_base64\":\"Zms=\",\"size\":1,\"version\":\"", 52) == 0);
    const char *json_tail = ":my \\\"node\\\"\",\"ttl_ms\":null,\"fencing_token\":\"1700000000000:1:a \\\"b\\\\\"}\n";
    ASSERT_TRUE(r.out_len > strlen(json_tail) && strcmp(r.out + r.out_len - strlen(json_tail), json_tail) == 0);
    run_free(&r);
    cli_run(&r, b.port, NULL, 0, "keys", NULL);
    ASSERT_EQ(r.status, 0);
    const char *text_tail = ":my\\x20\"node\"  fencing_token=1700000000000:1:a\\x20\"b\\\\\n";
    ASSERT_TRUE(strncmp(r.out, "fk  size=1  version=", 20) == 0 && r.out_len > strlen(text_tail) &&
                strcmp(r.out + r.out_len - strlen(text_tail), text_tail) == 0);
    run_free(&r);

    struct run exp1;
    cli_run(&exp1, b.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp1.status, 0);
    ASSERT_TRUE(strstr(exp1.out, ":my \\\"node\\\"\",\"fencing_token\":\"1700000000000:1:a \\\"b\\\\\","
                                 "\"expires_at_ms\":null}\n") != NULL);
    broker_stop(&b);

    char file[400], dir[400];
    snprintf(file, sizeof file, "%s/odd.jsonl", test_tmpdir());
    FILE *f = fopen(file, "w");
    ASSERT_TRUE(f != NULL);
    fwrite(exp1.out, 1, exp1.out_len, f);
    /* A line as another JSON writer may escape it: "\/", "\u0020". */
    const char *other = "{\"key_base64\":\"\\/\\/8=\",\"value_base64\":\"MQ==\",\"version\":\"1:0:n\\u0020x\"}\n";
    fputs(other, f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/odd", test_tmpdir());
    cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    struct broker b2 = {0};
    snprintf(b2.data, sizeof b2.data, "%s", dir);
    broker_start(&b2);
    struct run exp2;
    cli_run(&exp2, b2.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp2.status, 0);
    const char *other_out = "{\"key\":\"\\u00ff\\u00ff\",\"key_base64\":\"//8=\",\"value_base64\":\"MQ==\","
                            "\"version\":\"1:0:n x\",\"fencing_token\":null,\"expires_at_ms\":null}\n";
    ASSERT_TRUE(exp2.out_len == exp1.out_len + strlen(other_out));
    ASSERT_MEM(exp2.out, exp1.out_len, exp1.out, exp1.out_len);
    ASSERT_MEM(exp2.out + exp1.out_len, strlen(other_out), other_out, strlen(other_out));
    broker_stop(&b2);
    run_free(&exp1);
    run_free(&exp2);

    /* A version no server issues (a counter past 2^31 - 1, an empty node
     * id; a control character or a non-character, U+FFFF last, that an
     * MQTT client refuses in a string) is refused with its line: it would
     * go out in answers' __ts. */
    const char *bad[] = {"1:3000000000:n\"", "1:0:\"", "1:0:n\",\"expires_at_ms\":18446744073709551500",
                         "1:0:a\\u0001\"", "1:0:n\",\"fencing_token\":\"1:0:\xff\"", "1:0:n\xef\xbf\xbf\""};
    const char *why[] = {"version has a counter above 2147483647 or an empty node id",
                         "version has a counter above 2147483647 or an empty node id",
                         "expires_at_ms is further away than any PX can set (2^53 ms)",
                         "version is not a timestamp (ms:counter:node, UTF-8 an MQTT string may hold)",
                         "fencing_token is not a timestamp (ms:counter:node, UTF-8 an MQTT string may hold)",
                         "version is not a timestamp (ms:counter:node, UTF-8 an MQTT string may hold)"};
    for (int i = 0; i < 6; i++) {
        f = fopen(file, "w");
        ASSERT_TRUE(f != NULL);
        fprintf(f, "{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\",\"version\":\"%s}\n", bad[i]);
        fclose(f);
        snprintf(dir, sizeof dir, "%s/bad-version-%d", test_tmpdir(), i);
        cli_run(&r, 0, NULL, 0, "import", file, dir, NULL);
        ASSERT_EQ(r.status, 64);
        char want[200];
        snprintf(want, sizeof want, "odd.jsonl line 1: %s", why[i]);
        ASSERT_TRUE(strstr(r.err, want) != NULL);
        run_free(&r);
    }
}

/* import --etcd puts an export into a store on an etcd cluster under a
 * prefix that holds nothing yet; a broker on that prefix exports the same
 * lines; a second import into it is refused, and so is --etcd with DIR. */
TEST(cli_import_into_an_etcd_cluster)
{
    struct run r, exp1;
    char file[400];
    export_sample(false, &exp1, file, sizeof file);

    struct etcd_cluster c;
    etcd_cluster_start(&c, 3);
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "imp/", NULL);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.err, "5 records imported into http://127.0.0.1:") != NULL &&
                strstr(r.err, ", prefix imp/ (0 past their deadline left out)") != NULL);
    run_free(&r);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/c/"), 3); /* the large value's chunks of 1 MiB */
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/n/:import"), 1); /* its commit marker */
    /* An import that stops (a bad line) after a large value's chunks were
     * written, before its Txn: the chunks go, nothing refers to them. */
    char bad[450];
    snprintf(bad, sizeof bad, "%s.bad", file);
    FILE *f = fopen(bad, "w");
    ASSERT_TRUE(f != NULL);
    const char *zl = strstr(exp1.out, "{\"key\":\"zlarge\"");
    ASSERT_TRUE(zl != NULL);
    fwrite(zl, 1, strcspn(zl, "\n") + 1, f);
    fputs("{\"key\": not json\n", f);
    fclose(f);
    cli_run(&r, 0, NULL, 0, "import", bad, "--etcd", c.endpoints, "--etcd-prefix", "imp2/", NULL);
    ASSERT_TRUE(r.status != 0);
    run_free(&r);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp2/"), 0);
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "imp/", NULL);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "the prefix imp/ already holds keys") != NULL);
    run_free(&r);
    cli_run(&r, 0, NULL, 0, "import", file, "somedir", "--etcd", c.endpoints, NULL);
    ASSERT_EQ(r.status, 64);
    run_free(&r);

    struct broker e = {0};
    snprintf(e.extra, sizeof e.extra,
             "plugin_opt_backend etcd\nplugin_opt_etcd_endpoints %s\nplugin_opt_etcd_prefix imp/\n", c.endpoints);
    broker_start(&e);
    struct run exp2;
    cli_run(&exp2, e.port, NULL, 0, "export", NULL);
    ASSERT_EQ(exp2.status, 0);
    ASSERT_MEM(exp2.out, exp2.out_len, exp1.out, exp1.out_len);
    run_free(&exp1);
    run_free(&exp2);
    broker_stop(&e);
    etcd_cluster_stop(&c);
}

/* import --etcd logs in to etcd with the -u and -P of its own command line
 * only: the options file's user and password (here in -L's URL) are the
 * broker's, and were sent to etcd too. An etcd without authentication
 * refuses any login ("authentication is not enabled"), which stopped the
 * import; with authentication on, the command line's user is the one
 * that logs in, and without one no login is tried. */
TEST(cli_import_etcd_takes_its_login_from_its_own_command_line)
{
    char file[600], conf[600];
    snprintf(file, sizeof file, "%s/one.jsonl", test_tmpdir());
    write_text(file, "{\"key\":\"k\",\"key_base64\":\"aw==\",\"value_base64\":\"dg==\","
                     "\"version\":\"1700000000000:0:n\",\"fencing_token\":null,\"expires_at_ms\":null}\n");
    /* The harness points XDG_CONFIG_HOME at the test's directory. */
    snprintf(conf, sizeof conf, "%s/statestore", test_tmpdir());
    write_text(conf, "-L mqtt://alice:secret@127.0.0.1:1883\n");
    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct run r;
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "a/", NULL);
    if (r.status != 0)
        fprintf(stderr, "  import said: %s", r.err);
    ASSERT_EQ(r.status, 0);
    ASSERT_TRUE(strstr(r.err, "1 records imported into ") != NULL);
    run_free(&r);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "a/k/"), 1);

    /* Authentication on: a user whose role may write under b/ only. */
    char out[2000];
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "user", "add", "root", "--new-user-password=rootpw",
                               "--interactive=false", NULL), 0);
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "role", "add", "importer", NULL), 0);
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "role", "grant-permission", "--prefix=true", "importer",
                               "readwrite", "b/", NULL), 0);
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "user", "add", "importer", "--new-user-password=imppw",
                               "--interactive=false", NULL), 0);
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "user", "grant-role", "importer", "importer", NULL), 0);
    ASSERT_EQ(etcd_cluster_ctl(&c, out, sizeof out, "auth", "enable", NULL), 0);
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "b/", "-u", "importer", "-P",
            "imppw", NULL);
    if (r.status != 0)
        fprintf(stderr, "  import said: %s", r.err);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    /* No login of its own: etcd refuses the anonymous request (before,
     * alice's login was refused instead). */
    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "c/", NULL);
    ASSERT_EQ(r.status, 4);
    ASSERT_TRUE(strstr(r.err, "etcdserver: user name is empty") != NULL);
    run_free(&r);
    etcd_cluster_stop(&c);
}

/* Record line i of a file of records "key00000".. with the value "v". */
static bool path_exists(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* An import killed part-way (SIGTERM here; SIGKILL, the OOM killer or a
 * closed terminal end it the same way, without its own clean-up) leaves
 * in DIR no store that a broker would serve: the records reach DIR only
 * once every one is in and synced. Meanwhile DIR is taken (a second
 * import is refused, as a broker would be); afterwards the next import
 * into DIR clears what the killed one left, and works. */
TEST(cli_killed_import_leaves_no_store_to_serve)
{
    enum { TOTAL = 8000, BEFORE_KILL = 5000 };
    char dir[400], file[400], line[200];
    snprintf(dir, sizeof dir, "%s/killed", test_tmpdir());
    snprintf(file, sizeof file, "%s/records.jsonl", test_tmpdir());
    FILE *f = fopen(file, "w");
    ASSERT_TRUE(f != NULL);
    for (int i = 0; i < TOTAL; i++) {
        import_record_line(line, sizeof line, i);
        fputs(line, f);
    }
    fclose(f);

    /* The import reads a pipe this test holds open: the first lines, then
     * it waits for more, as it would on a slow source. */
    signal(SIGPIPE, SIG_IGN);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    char out[500], err[500];
    snprintf(out, sizeof out, "%s/import.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/import.err", test_tmpdir());
    ASSERT_EQ(fcntl(p[1], F_SETFD, FD_CLOEXEC), 0); /* this end stays here only */
    char *argv[] = {(char *)cli_path(), "import", "-", dir, NULL};
    pid_t pid = spawn_cmd_from(argv, p[0], out, err);
    ASSERT_TRUE(pid >= 0);
    close(p[0]);
    /* Lines of about 85 bytes: when these writes return, the pipe (64
     * KiB) and the tool's buffer hold at most a thousand of them, so it
     * has taken in several batches of 1000 (each committed and synced). */
    for (int i = 0; i < BEFORE_KILL; i++) {
        import_record_line(line, sizeof line, i);
        size_t len = strlen(line);
        ASSERT_EQ(write(p[1], line, len), (ssize_t)len);
    }
    struct run r;
    cli_tool(&r, "import", file, dir, NULL); /* DIR is taken meanwhile */
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "is in use");
    run_free(&r);
    ASSERT_EQ(kill(pid, SIGTERM), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    close(p[1]);
    /* No data file, no journal: a broker on DIR would find no store (it
     * would start an empty one, as in the empty DIR it was given). */
    ASSERT_TRUE(!path_exists(dir, "data.mdb"));
    ASSERT_TRUE(!path_exists(dir, "journal"));
    ASSERT_TRUE(path_exists(dir, "import.partial/data.mdb")); /* where it was building */

    /* The retry clears what the killed run left and imports everything. */
    cli_tool(&r, "import", file, dir, NULL);
    ASSERT_EQ(r.status, 0);
    ERR_HAS(r, "/import.partial, left by an import that did not finish");
    ERR_HAS(r, "8000 records imported");
    run_free(&r);
    ASSERT_TRUE(!path_exists(dir, "import.partial"));
    struct broker b = {0};
    snprintf(b.data, sizeof b.data, "%s", dir);
    broker_start(&b);
    cli_run(&r, b.port, NULL, 0, "export", NULL);
    ASSERT_EQ(r.status, 0);
    ERR_HAS(r, "8000 records exported");
    ASSERT_TRUE(strstr(r.out, "\"key_base64\":\"a2V5MDc5OTk=\",\"value_base64\":\"dg==\"") != NULL);
    run_free(&r);
    broker_stop(&b);
}

/* import --etcd that stops at a line after its first Txns deletes what it
 * wrote under the prefix (which held nothing when it began): nothing is
 * left that brokers on the prefix would serve, and a retry is not refused
 * as a prefix that holds keys. */
TEST(cli_failed_etcd_import_removes_what_it_wrote)
{
    char file[400], bad[400], line[200];
    snprintf(file, sizeof file, "%s/records.jsonl", test_tmpdir());
    snprintf(bad, sizeof bad, "%s/bad.jsonl", test_tmpdir());
    FILE *f = fopen(file, "w"), *fb = fopen(bad, "w");
    ASSERT_TRUE(f != NULL && fb != NULL);
    /* 100 records: Txns of 40, so two committed before line 101. */
    for (int i = 0; i < 100; i++) {
        import_record_line(line, sizeof line, i);
        fputs(line, f);
        fputs(line, fb);
    }
    fputs("{\"key_base64\":\"YQ==\",\"value_base64\":\"MQ==\"}\n", fb);
    fclose(f);
    fclose(fb);

    struct etcd_cluster c;
    etcd_cluster_start(&c, 1);
    struct run r;
    cli_run(&r, 0, NULL, 0, "import", bad, "--etcd", c.endpoints, "--etcd-prefix", "imp/", NULL);
    ASSERT_EQ(r.status, 64);
    ERR_HAS(r, "bad.jsonl line 101: key_base64, value_base64 and version are required");
    ERR_HAS(r, "the records written under imp/ were deleted");
    run_free(&r);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/"), 0);

    cli_run(&r, 0, NULL, 0, "import", file, "--etcd", c.endpoints, "--etcd-prefix", "imp/", NULL);
    ASSERT_EQ(r.status, 0);
    ERR_HAS(r, "100 records imported");
    run_free(&r);
    ASSERT_EQ(etcd_cluster_count_keys(&c, "imp/k/"), 100);
    etcd_cluster_stop(&c);
}
