/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_admin.c - statestore's administrative requests (KEYS, INSPECT) on
 * statestore/admin/v1/invoke: pages, patterns, expiry, bounded work, the
 * key ACL, topic protection, refusals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test.h"
#include "harness.h"

/* Lines of an answer that start with "key ", and the cursor line's value. */
static int key_lines(const struct msg *m, char *cursor, size_t n, char *keys, size_t kn)
{
    char *text = strndup((const char *)m->payload, (size_t)m->len);
    int count = 0;
    size_t used = 0;
    cursor[0] = '\0';
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strncmp(l, "cursor ", 7) == 0) {
            snprintf(cursor, n, "%s", l + 7);
        } else {
            ASSERT_TRUE(strncmp(l, "key ", 4) == 0);
            count++;
            /* The hex key, for the caller's list. */
            size_t hl = strcspn(l + 4, " ");
            if (used + hl + 2 < kn) {
                memcpy(keys + used, l + 4, hl);
                used += hl;
                keys[used++] = ',';
                keys[used] = '\0';
            }
        }
    }
    free(text);
    return count;
}

/* KEYS pattern through every page: the number of keys, and the pages. */
static int keys_all(struct client *c, const char *resp, const char *pattern, int *pages)
{
    static char cursor[1200], page[600 * 12];
    cursor[0] = '\0';
    int total = 0;
    *pages = 0;
    do {
        char corr[16];
        snprintf(corr, sizeof corr, "all%d", *pages);
        char after[1200];
        snprintf(after, sizeof after, "%s", cursor);
        struct msg *m = admin_call(c, resp, corr, W("KEYS", pattern, after, "100"));
        total += key_lines(m, cursor, sizeof cursor, page, sizeof page);
        ++*pages;
    } while (strcmp(cursor, "-") != 0 && *pages < 100);
    ASSERT_STR(cursor, strlen(cursor), "-");
    return total;
}

TEST(admin_keys_pages_patterns_and_inspect)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    char resp[256];
    client_connect_rr(&c, b.port, "admin", resp, sizeof resp);
    /* An empty request (Mosquitto hands the plugin a NULL payload). */
    struct msg *empty = admin_call(&c, resp, "empty", NULL);
    PAYLOAD(empty, "error syntax error: a RESP3 array of bulk strings is expected\n");
    char key[16], val[16];
    for (int i = 0; i < 1200; i++) {
        snprintf(key, sizeof key, "k%04d", i);
        snprintf(val, sizeof val, "v%d", i);
        request_send(&c, resp, "s", NULL, NULL, W("SET", key, val));
    }
    ASSERT_EQ(client_drain_count(&c, 1200, 30000), 1200);
    ASSERT_REPLY(request(&c, resp, "e", NULL, NULL, W("SET", "e1", "gone soon", "PX", "100")), "+OK\r\n");
    ASSERT_REPLY(request(&c, resp, "f", NULL, "1700000000000:0:lock",
                         W("SET", "fenced", "x")), "+OK\r\n");
    usleep(300000);

    /* Every key once, in order, in pages of 500. */
    static char all[1300 * 12], page[600 * 12];
    char cursor[1200] = "";
    int total = 0, pages = 0;
    all[0] = '\0';
    do {
        char corr[16];
        snprintf(corr, sizeof corr, "p%d", pages);
        struct msg *m = admin_call(&c, resp, corr, W("KEYS", "k*", cursor, "500"));
        int n = key_lines(m, cursor, sizeof cursor, page, sizeof page);
        ASSERT_TRUE(n <= 500);
        total += n;
        strcat(all, page);
        pages++;
    } while (strcmp(cursor, "-") != 0 && pages < 10);
    ASSERT_EQ(total, 1200);
    /* On etcd a page's Range is bounded too (OPERATIONS.md), and may end
     * early where the keys thin out in byte order. */
    if (harness_on_etcd())
        ASSERT_TRUE(pages >= 3 && pages <= 6);
    else
        ASSERT_EQ(pages, 3);
    char want[13];
    snprintf(want, sizeof want, "6b30303030,"); /* k0000 first */
    ASSERT_TRUE(strncmp(all, want, strlen(want)) == 0);
    ASSERT_TRUE(strstr(all, "6b31313939,") != NULL); /* k1199 */

    /* A pattern: a page examines at most ten keys per key asked for (1000
     * here), so a rare match takes more than one page. */
    int npages;
    ASSERT_EQ(keys_all(&c, resp, "k119?", &npages), 10);
    ASSERT_TRUE(harness_on_etcd() ? npages >= 2 && npages <= 4 : npages == 2);
    /* An expired key is absent, swept or not. */
    ASSERT_EQ(keys_all(&c, resp, "e*", &npages), 0);
    ASSERT_EQ(keys_all(&c, resp, "fenced", &npages), 1);
    struct msg *m;
    m = admin_call(&c, resp, "i", W("INSPECT", "k0001"));
    ASSERT_TRUE(m->len > 20 && strncmp((const char *)m->payload, "key 6b30303031 2 ", 17) == 0);
    ASSERT_TRUE(memcmp(m->payload + m->len - 5, " - -\n", 5) == 0); /* no TTL, no token */
    m = admin_call(&c, resp, "j", W("INSPECT", "fenced"));
    ASSERT_TRUE(strncmp((const char *)m->payload, "key 66656e636564 1 ", 19) == 0);
    ASSERT_TRUE(m->len > 24 && memcmp(m->payload + m->len - 24, " - 1700000000000:0:lock\n", 24) == 0);
    m = admin_call(&c, resp, "a", W("INSPECT", "nope"));
    PAYLOAD(m, "absent\n");
    m = admin_call(&c, resp, "e", W("INSPECT", ""));
    PAYLOAD(m, "error the key length is zero\n");
    m = admin_call(&c, resp, "e2", W("INSPECT"));
    PAYLOAD(m, "error usage: INSPECT KEY\n");

    /* Bounded work: a pattern that matches nothing examines ten keys per
     * key asked for, then answers with a cursor to go on from. */
    m = admin_call(&c, resp, "b", W("KEYS", "zzz*", "", "1"));
    ASSERT_EQ(key_lines(m, cursor, sizeof cursor, page, sizeof page), 0);
    ASSERT_TRUE(strcmp(cursor, "-") != 0 && strlen(cursor) > 0);
    /* The cursor is sealed, as SCAN's tokens are: it does not show the
     * key it goes on from (k0009, 6b30303039, the tenth examined), and
     * only this store's cursors for this pattern are taken. */
    ASSERT_TRUE(strstr(cursor, "6b3030") == NULL);
    static char next[1200];
    m = admin_call(&c, resp, "b2", W("KEYS", "zzz*", cursor, "1"));
    ASSERT_EQ(key_lines(m, next, sizeof next, page, sizeof page), 0);
    m = admin_call(&c, resp, "b3", W("KEYS", "zzz?", cursor, "1"));
    PAYLOAD(m, "error CURSOR is not one that an answer for this PATTERN gave\n");
    cursor[5] = cursor[5] == '0' ? '1' : '0';
    m = admin_call(&c, resp, "b4", W("KEYS", "zzz*", cursor, "1"));
    PAYLOAD(m, "error CURSOR is not one that an answer for this PATTERN gave\n");

    /* Refusals. */
    m = admin_call(&c, resp, "r1", W("KEYS"));
    PAYLOAD(m, "error usage: KEYS PATTERN CURSOR COUNT (CURSOR: from the last answer, empty to start)\n");
    m = admin_call(&c, resp, "r2", W("KEYS", "*", "xyz", "10"));
    PAYLOAD(m, "error CURSOR is not one that an answer for this PATTERN gave\n");
    m = admin_call(&c, resp, "r7", W("KEYS", "*", "6b30303030", "10")); /* hex of k0000, as a cursor */
    PAYLOAD(m, "error CURSOR is not one that an answer for this PATTERN gave\n");
    m = admin_call(&c, resp, "r3", W("KEYS", "*", "", "0"));
    PAYLOAD(m, "error COUNT must be a number from 1 to 1000\n");
    m = admin_call(&c, resp, "r4", W("KEYS", "*", "", "1001"));
    PAYLOAD(m, "error COUNT must be a number from 1 to 1000\n");
    static char longpat[300];
    memset(longpat, '*', 257);
    m = admin_call(&c, resp, "r6", W("KEYS", longpat, "", "10"));
    PAYLOAD(m, "error a PATTERN has at most 256 bytes\n");
    m = admin_call(&c, resp, "r5", W("FLUSHALL"));
    PAYLOAD(m, "error unknown command (KEYS, INSPECT, EXPORT, BACKUP, WATCH)\n");
    /* The broker goes on. */
    ASSERT_REPLY(request(&c, resp, "g", NULL, NULL, W("GET", "k0002")), "$2\r\nv2\r\n");
    client_close(&c);
    broker_stop(&b);
}

TEST(admin_respects_the_key_acl_and_topic_protection)
{
    char acl[600];
    snprintf(acl, sizeof acl, "%s/keys.acl", test_tmpdir());
    FILE *f = fopen(acl, "w");
    ASSERT_TRUE(f != NULL);
    fputs("client writer readwrite *\nclient reader read pub/*\nclient sneaky read ?\nclient * read %c\n", f);
    fclose(f);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_acl_file %s\n", acl);
    broker_start(&b);
    struct client w, r, spy;
    char rw[256], rr[256];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&r, b.port, "reader", rr, sizeof rr);
    client_connect(&spy, b.port, "spy", false);
    /* Nobody receives others' administrative requests. */
    client_subscribe(&spy, ADMIN_TOPIC);
    ASSERT_REPLY(request(&w, rw, "1", NULL, NULL, W("SET", "pub/a", "1")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "2", NULL, NULL, W("SET", "secret", "2")), "+OK\r\n");
    char cursor[64], page[256];
    struct msg *m = admin_call(&r, rr, "k", W("KEYS", "*", "", "100"));
    ASSERT_EQ(key_lines(m, cursor, sizeof cursor, page, sizeof page), 1);
    ASSERT_STR(page, strlen(page), "7075622f61,"); /* pub/a only */
    m = admin_call(&r, rr, "i", W("INSPECT", "secret"));
    PAYLOAD(m, "error not authorized\n");
    m = admin_call(&w, rw, "k", W("KEYS", "*", "", "100"));
    ASSERT_EQ(key_lines(m, cursor, sizeof cursor, page, sizeof page), 2);
    /* A page of keys the reader may not read: no key line, and a cursor
     * that names none of them (736563 is "sec"). */
    for (int i = 0; i < 12; i++) {
        char key[16];
        snprintf(key, sizeof key, "sec%02d", i);
        ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", key, "x")), "+OK\r\n");
    }
    static char sealed[1200];
    m = admin_call(&r, rr, "k2", W("KEYS", "s*", "", "1"));
    ASSERT_EQ(key_lines(m, sealed, sizeof sealed, page, sizeof page), 0);
    ASSERT_TRUE(strcmp(sealed, "-") != 0);
    ASSERT_TRUE(strstr(sealed, "736563") == NULL);
    /* BACKUP needs a rule for every key ("*"): "?" or "%c" (with a client
     * id of "*") match the key "*" but are not every key. */
    m = admin_call(&r, rr, "b1", W("BACKUP", "x"));
    PAYLOAD(m, "error not authorized\n");
    struct client sn, star;
    char rs[256], rst[256];
    client_connect_rr(&sn, b.port, "sneaky", rs, sizeof rs);
    m = admin_call(&sn, rs, "b2", W("BACKUP", "x"));
    PAYLOAD(m, "error not authorized\n");
    client_connect_rr(&star, b.port, "*", rst, sizeof rst);
    m = admin_call(&star, rst, "b3", W("BACKUP", "x"));
    PAYLOAD(m, "error not authorized\n");
    m = admin_call(&w, rw, "b4", W("BACKUP", "x"));
    if (harness_on_etcd()) /* allowed, but not there: etcd has its own */
        PAYLOAD(m, "error backups are not available on the etcd backend (etcdctl snapshot save backs up the "
                   "cluster)\n");
    else
        PAYLOAD(m, "error backups are off: set plugin_opt_backup_dir\n");
    client_close(&sn);
    client_close(&star);
    ASSERT_EQ(client_drain(&spy, 300), 0);
    client_close(&spy);
    client_close(&r);
    client_close(&w);
    broker_stop(&b);
}


/* A backup taken while a writer keeps writing holds every write that was
 * acknowledged before the backup was asked for, with its version; restored
 * into an empty directory, a broker serves exactly that, with fencing
 * tokens and deadlines, and a key whose deadline passed meanwhile is gone. */
TEST(admin_backup_under_write_load_and_restore)
{
    char bk[400], restored[400], file[500];
    snprintf(bk, sizeof bk, "%s/backups", test_tmpdir());
    snprintf(restored, sizeof restored, "%s/restored", test_tmpdir());
    ASSERT_EQ(mkdir(bk, 0700), 0);
    struct broker b = {0};
    snprintf(b.extra, sizeof b.extra, "plugin_opt_backup_dir %s\n", bk);
    broker_start(&b);
    struct client w, a;
    char rw[256], ra[256];
    client_connect_rr(&w, b.port, "writer", rw, sizeof rw);
    client_connect_rr(&a, b.port, "admin", ra, sizeof ra);
    ASSERT_REPLY(request(&w, rw, "f", NULL, "1700000000000:5:lock", W("SET", "fenced", "x")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "t", NULL, NULL, W("SET", "ttl", "y", "PX", "600000")), "+OK\r\n");
    ASSERT_REPLY(request(&w, rw, "s", NULL, NULL, W("SET", "soon", "z", "PX", "1500")), "+OK\r\n");
    uint64_t soon_set = now_ms();

    /* The writer goes on until the backup is answered (at most N
     * writes): a backup must not wait for the writes to stop. */
    enum { N = 20000, WINDOW = 100, ASK_AFTER = 1000 };
    static char version[N][64];
    static bool before[N];
    memset(before, 0, sizeof before);
    int sent = 0, acked = 0;
    bool asked = false, answered = false;
    int until = N;
    uint64_t last_ack = now_ms(), longest = 0; /* the longest wait between answers, once asked */
    struct msg *m;
    while (acked < until) {
        while (sent < until && sent - acked < WINDOW) {
            char key[16], val[16], corr[16];
            snprintf(key, sizeof key, "w%04d", sent);
            snprintf(val, sizeof val, "v%d", sent);
            snprintf(corr, sizeof corr, "%d", sent);
            request_send(&w, rw, corr, NULL, NULL, W("SET", key, val));
            sent++;
        }
        m = client_wait(&w, 5000);
        ASSERT_TRUE(m != NULL);
        PAYLOAD(m, "+OK\r\n");
        int i = atoi(m->corr);
        ASSERT_TRUE(i >= 0 && i < N);
        snprintf(version[i], sizeof version[i], "%s", msg_user(m, "__ts"));
        before[i] = !asked;
        acked++;
        uint64_t t = now_ms();
        if (asked && t - last_ack > longest)
            longest = t - last_ack;
        last_ack = t;
        if (!asked && acked >= ASK_AFTER) {
            admin_send(&a, ra, "bk", W("BACKUP", "snap"));
            asked = true;
        } else if (asked && !answered && (m = client_wait(&a, 0)) != NULL) {
            ASSERT_TRUE(m->len > 12 && strncmp((const char *)m->payload, "backup snap ", 12) == 0);
            answered = true;
            until = sent; /* the writes in flight, and no more */
        }
    }
    ASSERT_TRUE(answered); /* while the writes went on */
    int total = sent;
    int nbefore = 0;
    for (int i = 0; i < total; i++)
        nbefore += before[i];
    client_close(&w);
    client_close(&a);
    broker_stop(&b);

    snprintf(file, sizeof file, "%s/snap", bk);
    char *argv[] = {(char *)cli_path(), "restore", file, restored, NULL};
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 0);
    run_free(&r);
    struct broker b2 = {0};
    snprintf(b2.data, sizeof b2.data, "%s", restored);
    broker_start(&b2);
    struct client c;
    char rc[256];
    client_connect_rr(&c, b2.port, "checker", rc, sizeof rc);
    int later = 0;
    for (int i = 0; i < total; i++) {
        char key[16], val[16], corr[16];
        snprintf(key, sizeof key, "w%04d", i);
        snprintf(val, sizeof val, "v%d", i);
        snprintf(corr, sizeof corr, "g%d", i);
        m = request(&c, rc, corr, NULL, NULL, W("GET", key));
        ASSERT_TRUE(m != NULL);
        bool found = m->len > 0 && m->payload[0] == '$' && !(m->len == 5 && memcmp(m->payload, "$-1", 3) == 0);
        if (before[i])
            ASSERT_TRUE(found); /* acknowledged before the backup was asked for */
        if (!found)
            continue;
        later += !before[i];
        char want[32];
        snprintf(want, sizeof want, "$%zu\r\n%s\r\n", strlen(val), val);
        ASSERT_MEM(m->payload, (size_t)m->len, want, strlen(want));
        USER(m, "__ts", version[i]); /* the very version it was written with */
    }
    fprintf(stderr, "  %d writes acknowledged before the backup was asked for, all restored; "
                    "%d later ones in it too, of %d written before its answer; longest wait between answers "
                    "meanwhile: %llu ms\n",
            nbefore, later, total - nbefore, (unsigned long long)longest);
    ASSERT_TRUE(nbefore >= ASK_AFTER);
    m = admin_call(&c, rc, "i", W("INSPECT", "fenced"));
    ASSERT_TRUE(memcmp(m->payload + m->len - 24, " - 1700000000000:5:lock\n", 24) == 0);
    m = admin_call(&c, rc, "j", W("INSPECT", "ttl"));
    char *ttl = strndup((const char *)m->payload, (size_t)m->len);
    long long left = 0;
    ASSERT_EQ(sscanf(ttl, "key 74746c 1 %*s %lld -", &left), 1);
    free(ttl);
    ASSERT_TRUE(left > 500000 && left <= 600000); /* the same deadline */
    while (now_ms() < soon_set + 1600)
        usleep(50000);
    ASSERT_REPLY(request(&c, rc, "s", NULL, NULL, W("GET", "soon")), "$-1\r\n");
    client_close(&c);
    broker_stop(&b2);
}

/* Without plugin_opt_backup_dir, BACKUP is refused; bad names too; restore
 * refuses what is not a backup and a directory that is not empty. */
TEST(admin_backup_refusals)
{
    struct broker b = {0};
    broker_start(&b);
    struct client c;
    char rc[256];
    client_connect_rr(&c, b.port, "admin", rc, sizeof rc);
    struct msg *m = admin_call(&c, rc, "1", W("BACKUP", "x"));
    PAYLOAD(m, "error backups are off: set plugin_opt_backup_dir\n");
    client_close(&c);
    broker_stop(&b);

    char bk[400];
    snprintf(bk, sizeof bk, "%s/bk", test_tmpdir());
    ASSERT_EQ(mkdir(bk, 0700), 0);
    struct broker b2 = {0};
    snprintf(b2.extra, sizeof b2.extra, "plugin_opt_backup_dir %s\n", bk);
    broker_start(&b2);
    client_connect_rr(&c, b2.port, "admin", rc, sizeof rc);
    m = admin_call(&c, rc, "2", W("BACKUP", "../escape"));
    PAYLOAD(m, "error a backup name is a plain file name: 1 to 200 letters, digits, '.', '_' and '-', "
               "not starting with '.'\n");
    m = admin_call(&c, rc, "3", W("BACKUP", ".hidden"));
    PAYLOAD(m, "error a backup name is a plain file name: 1 to 200 letters, digits, '.', '_' and '-', "
               "not starting with '.'\n");
    m = admin_call(&c, rc, "4", W("BACKUP"));
    PAYLOAD(m, "error usage: BACKUP NAME\n");
    m = admin_call(&c, rc, "5", W("BACKUP", "one"));
    ASSERT_TRUE(m->len > 11 && strncmp((const char *)m->payload, "backup one ", 11) == 0);
    m = admin_call(&c, rc, "6", W("BACKUP", "one"));
    PAYLOAD(m, "error a backup of that name exists: choose another name or remove it\n");
    /* A backup named "nightly.partial" is not the copy under way of one
     * named "nightly": the second is refused, and the first stays whole. */
    m = admin_call(&c, rc, "7", W("BACKUP", "nightly.partial"));
    ASSERT_TRUE(m->len > 23 && strncmp((const char *)m->payload, "backup nightly.partial ", 23) == 0);
    char partial[500];
    snprintf(partial, sizeof partial, "%s/nightly.partial", bk);
    struct stat before, after;
    ASSERT_EQ(stat(partial, &before), 0);
    m = admin_call(&c, rc, "8", W("BACKUP", "nightly"));
    PAYLOAD(m, "error a file NAME.partial exists, where the copy is made: choose another name or remove it\n");
    ASSERT_EQ(stat(partial, &after), 0);
    ASSERT_EQ(after.st_size, before.st_size);
    client_close(&c);
    broker_stop(&b2);

    struct broker b3 = {0};
    snprintf(b3.extra, sizeof b3.extra, "plugin_opt_backup_dir %s/missing\n", bk);
    ASSERT_TRUE(broker_start_fails(&b3) != 0);
    ASSERT_TRUE(broker_log_has(&b3, "plugin_opt_backup_dir "));
    ASSERT_TRUE(broker_log_has(&b3, "/missing: No such file or directory"));
    /* Not the data directory, nor inside it: a backup named "journal"
     * would replace a live file. */
    struct broker b4 = {0};
    snprintf(b4.data, sizeof b4.data, "%s", bk);
    snprintf(b4.extra, sizeof b4.extra, "plugin_opt_backup_dir %s\n", bk);
    ASSERT_TRUE(broker_start_fails(&b4) != 0);
    ASSERT_TRUE(broker_log_has(&b4, "must not be the data directory or inside it"));

    char notbackup[700], full[700];
    snprintf(notbackup, sizeof notbackup, "%s/mosquitto.conf", test_tmpdir());
    char *argv[] = {(char *)cli_path(), "restore", notbackup, bk, NULL};
    struct run r;
    run_cmd(argv, NULL, 0, &r);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "is not a statestore backup") != NULL);
    run_free(&r);
    snprintf(full, sizeof full, "%s", test_tmpdir()); /* has files */
    char dummy[700];
    snprintf(dummy, sizeof dummy, "%s/data/data.mdb", test_tmpdir());
    char *argv2[] = {(char *)cli_path(), "restore", dummy, full, NULL};
    run_cmd(argv2, NULL, 0, &r);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "is not empty") != NULL);
    run_free(&r);

    /* A backup cut short (half of "one": its meta pages, not its data) is
     * refused by restore, which leaves no directory behind; and a broker
     * on such a data file refuses to start instead of dying of SIGBUS. */
    char one[500], cut[500], cutdir[500];
    snprintf(one, sizeof one, "%s/one", bk);
    snprintf(cut, sizeof cut, "%s/cut", test_tmpdir());
    snprintf(cutdir, sizeof cutdir, "%s/cutdir", test_tmpdir());
    FILE *fi = fopen(one, "rb"), *fo = fopen(cut, "wb");
    ASSERT_TRUE(fi != NULL && fo != NULL);
    static char half[1 << 16];
    ASSERT_EQ(stat(one, &before), 0);
    ASSERT_TRUE(before.st_size >= 16384 && (size_t)before.st_size / 2 <= sizeof half);
    size_t n = (size_t)before.st_size / 2;
    ASSERT_EQ(fread(half, 1, n, fi), n);
    ASSERT_EQ(fwrite(half, 1, n, fo), n);
    fclose(fi);
    fclose(fo);
    char *argv3[] = {(char *)cli_path(), "restore", cut, cutdir, NULL};
    run_cmd(argv3, NULL, 0, &r);
    ASSERT_EQ(r.status, 64);
    ASSERT_TRUE(strstr(r.err, "is not a whole statestore backup (cut short?)") != NULL);
    run_free(&r);
    ASSERT_TRUE(access(cutdir, F_OK) != 0);
    ASSERT_EQ(mkdir(cutdir, 0700), 0);
    char cutdata[600];
    snprintf(cutdata, sizeof cutdata, "%s/data.mdb", cutdir);
    ASSERT_EQ(rename(cut, cutdata), 0);
    struct broker b5 = {0};
    snprintf(b5.data, sizeof b5.data, "%s", cutdir);
    ASSERT_TRUE(broker_start_fails(&b5) != 0);
    ASSERT_TRUE(broker_log_has(&b5, "stored record is corrupt"));
}
