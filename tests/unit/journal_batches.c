/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* journal_batches.c - the journal's tests' batches, written by a process
 * that crashes, and their checks (journal_batches.h). */
#include "journal_batches.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../test.h"
#include "journaled.h"

void crash_after_batches_then(int from, int to, bool checkpoint)
{
    pid_t pid = fork();
    ASSERT_TRUE(pid >= 0);
    if (pid == 0) {
        ss_store_options o = journaled();
        ss_store *s = NULL;
        if (ss_store_open(&o, &s) != SS_OK)
            _exit(2);
        for (int i = from; i < to; i++) {
            char k[16], v[32];
            snprintf(k, sizeof k, "k%d", i);
            snprintf(v, sizeof v, "value-%d", i);
            ss_record r = rec_of(v, (uint32_t)i, 0);
            if (ss_store_begin(s) != SS_OK || ss_store_put(s, B(k), &r) != SS_OK ||
                ss_store_set_clock(s, 5000, (uint32_t)i) != SS_OK || ss_store_commit(s, 1) != SS_OK)
                _exit(3);
        }
        if (checkpoint && (ss_store_begin(s) != SS_OK || ss_store_commit(s, 7200000) != SS_OK))
            _exit(4);
        _exit(0);
    }
    int status;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

void crash_after_batches(int from, int to)
{
    crash_after_batches_then(from, to, false);
}

void assert_keys(ss_store *s, int from, int to, int upto)
{
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    for (int i = 0; i < upto; i++) {
        char k[16], v[32];
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "value-%d", i);
        ss_record got;
        int rc = ss_store_get(s, B(k), &got);
        if (i >= from && i < to) {
            ASSERT_EQ(rc, SS_OK);
            ASSERT_MEM(got.value.data, got.value.len, v, strlen(v));
            ASSERT_EQ(got.version.counter, i);
        } else {
            ASSERT_EQ(rc, SS_E_NOTFOUND);
        }
    }
    ss_store_abort(s);
    ASSERT_EQ(ss_store_key_count(s), (long long)(to - from));
}

uint64_t charge_of(int from, int to)
{
    uint64_t n = 0;
    for (int i = from; i < to; i++) {
        char k[16], v[32];
        n += (uint64_t)snprintf(k, sizeof k, "k%d", i) + (uint64_t)snprintf(v, sizeof v, "value-%d", i) +
             SS_STORE_RECORD_CHARGE;
    }
    return n;
}
