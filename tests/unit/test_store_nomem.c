/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_store_nomem.c - the store when memory runs out: a batch that cannot
 * start, and a commit that cannot log its counters, fail cleanly and leave
 * the store usable once there is memory again.
 *
 * Memory runs out for real: the address space is limited to what is mapped
 * now and every free block of the C library's heap is taken first. Under
 * valgrind or a sanitizer the allocator is another one, which this does
 * not starve: the tests then return at once (they run in the plain build,
 * where make mutate runs them too). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/errors.h"
#include "../../core/store.h"
#include "../test.h"
#include "journaled.h"

/* True when malloc is not glibc's own: valgrind's (it preloads itself),
 * or a sanitizer's. */
static bool allocator_replaced(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#else
    const char *preload = getenv("LD_PRELOAD");
    return preload != NULL && strstr(preload, "vgpreload") != NULL;
#endif
}

struct taken {
    struct taken *next;
};

/* Take blocks of size until malloc fails. */
static void take(struct taken **list, size_t size)
{
    struct taken *t;
    while ((t = malloc(size)) != NULL) {
        t->next = *list;
        *list = t;
    }
}

/* Grow the stack now: once the address space is limited it cannot grow. */
static void grow_stack(void)
{
    volatile char pad[512 << 10];
    memset((char *)pad, 1, sizeof pad);
}

/* From here malloc fails: the address space may not grow (no brk, no
 * mmap), and the free blocks are all taken, from large ones down, then
 * every size the heap's caches keep apart. */
static struct taken *starve(struct rlimit *old)
{
    grow_stack();
    FILE *f = fopen("/proc/self/statm", "r");
    ASSERT_TRUE(f != NULL);
    unsigned long pages = 0;
    ASSERT_EQ(fscanf(f, "%lu", &pages), 1);
    fclose(f);
    ASSERT_EQ(getrlimit(RLIMIT_AS, old), 0);
    struct rlimit lim = *old;
    lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
    ASSERT_EQ(setrlimit(RLIMIT_AS, &lim), 0);
    struct taken *list = NULL;
    for (size_t size = (size_t)1 << 20; size >= sizeof *list; size /= 2)
        take(&list, size);
    for (size_t size = sizeof *list; size <= 4096; size += 8)
        take(&list, size);
    return list;
}

static void give_back(struct taken *list, const struct rlimit *old)
{
    while (list) {
        struct taken *next = list->next;
        free(list);
        list = next;
    }
    ASSERT_EQ(setrlimit(RLIMIT_AS, old), 0);
}

static ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

static ss_record rec_of(const char *value, size_t len)
{
    ss_record r;
    memset(&r, 0, sizeof r);
    r.value = (ss_bytes){(const uint8_t *)value, len};
    r.version.wall = 1;
    r.version.node_len = 1;
    r.version.node[0] = 'N';
    return r;
}

static ss_store *open_journaled(void)
{
    ss_store_options o = journaled();
    ss_store *s = NULL;
    ASSERT_EQ(ss_store_open(&o, &s), SS_OK);
    return s;
}

/* A batch whose transaction's cursor cannot be had fails to begin (the
 * I/O error: the store cannot read), and is no batch. */
TEST(store_begin_out_of_memory_is_no_batch)
{
    if (allocator_replaced())
        return;
    ss_store *s = open_journaled();
    ss_record r = rec_of("value", 5);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 10), SS_OK);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 7200000), SS_OK); /* a checkpoint: the next batch opens a transaction */
    struct rlimit old;
    struct taken *list = starve(&old);
    int rc = ss_store_begin(s);
    bool in_batch = ss_store_in_batch(s);
    give_back(list, &old);
    ASSERT_EQ(rc, SS_E_IO);
    ASSERT_TRUE(!in_batch);
    ss_record got;
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("a"), &got), SS_OK);
    ASSERT_STR(got.value.data, got.value.len, "value");
    ss_store_abort(s);
    ss_store_close(s);
}

/* A commit that cannot log the batch's counters (its frame cannot grow)
 * fails with the batch, which is rolled back; it is then no commit, and
 * no checkpoint, though one was due. */
TEST(store_commit_out_of_memory_is_no_checkpoint)
{
    if (allocator_replaced())
        return;
    ss_store *s = open_journaled();
    static char value[8192];
    memset(value, 'v', sizeof value);
    /* The frame of a batch of one put: the header, the put's operations,
     * and the operation of the bytes counter (21 bytes). */
    off_t before = journal_size();
    ss_record r = rec_of(value, 100);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 10), SS_OK);
    size_t put_ops = (size_t)(journal_size() - before) - 20 - 21;
    /* Each byte more of the value is a byte more of its operation. */
    before = journal_size();
    r = rec_of(value, 1100);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("a"), &r), SS_OK);
    ASSERT_EQ(ss_store_commit(s, 11), SS_OK);
    ASSERT_EQ((size_t)(journal_size() - before) - 20 - 21, put_ops + 1000);
    /* A put that fills the frame to 10 bytes short of 8 KiB, the room its
     * buffer then has: the counter's operation needs the buffer to grow. */
    size_t len = 8192 - 10 - 20 - (put_ops - 100);
    ASSERT_TRUE(len < sizeof value);
    r = rec_of(value, len);
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_put(s, B("b"), &r), SS_OK);
    ss_store_checkpoint_soon(s); /* so that this commit would be one */
    struct rlimit old;
    struct taken *list = starve(&old);
    int rc = ss_store_commit_prepare(s, 20, true);
    bool checkpoint = ss_store_commit_is_checkpoint(s);
    bool syncs = ss_store_commit_syncs(s);
    give_back(list, &old);
    ASSERT_EQ(rc, SS_E_NOMEM);
    ASSERT_TRUE(!checkpoint);
    ASSERT_TRUE(!syncs);
    ASSERT_TRUE(!ss_store_in_batch(s));
    /* The store goes on, without the batch. */
    ss_record got;
    ASSERT_EQ(ss_store_begin(s), SS_OK);
    ASSERT_EQ(ss_store_get(s, B("a"), &got), SS_OK);
    ASSERT_EQ(got.value.len, 1100);
    ASSERT_EQ(ss_store_get(s, B("b"), &got), SS_E_NOTFOUND);
    ASSERT_EQ(ss_store_commit(s, 30), SS_OK);
    ASSERT_EQ(ss_store_key_count(s), 1);
    ss_store_close(s);
}
