/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* cut.c - the power-loss simulator's cut: after the broker was killed,
 * each file of the data directory is rebuilt as a disk could hold it
 * (powerloss.h). Runs in the test, not in the broker. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "powerloss.h"

/* A whole file into memory (absent: empty); NULL on error. */
static uint8_t *pl__slurp(const char *path, size_t *len)
{
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? calloc(1, 1) : NULL;
    struct stat st;
    uint8_t *p = NULL;
    if (fstat(fd, &st) == 0 && (p = malloc((size_t)st.st_size + 1)) != NULL) {
        size_t got = 0;
        ssize_t r = 1;
        while (got < (size_t)st.st_size && (r = read(fd, p + got, (size_t)st.st_size - got)) > 0)
            got += (size_t)r;
        if (r <= 0 && got < (size_t)st.st_size) {
            free(p);
            p = NULL;
        }
        *len = got;
    }
    close(fd);
    return p;
}

/* The image being rebuilt: bytes and size, grown as writes need. */
struct pl_image {
    uint8_t *data;
    size_t len, cap;
};

static int pl__resize(struct pl_image *m, size_t len)
{
    if (len > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < len)
            cap *= 2;
        uint8_t *p = realloc(m->data, cap);
        if (p == NULL)
            return -1;
        m->data = p;
        m->cap = cap;
    }
    if (len > m->len)
        memset(m->data + m->len, 0, len - m->len);
    m->len = len;
    return 0;
}

static int pl__apply(struct pl_image *m, const struct pl_record *r, const uint8_t *bytes, uint64_t n)
{
    if (r->kind == PL_TRUNCATE)
        return pl__resize(m, (size_t)r->off);
    if (n == 0)
        return 0;
    if (r->off + n > m->len && pl__resize(m, (size_t)(r->off + n)) != 0)
        return -1;
    memcpy(m->data + r->off, bytes, (size_t)n);
    return 0;
}

/* What the call made of the file: a write's bytes written, or 0 for a
 * call that failed. A call still running when the process died counts
 * as the whole write: some of it may be on the disk. */
static uint64_t pl__made(const struct pl_record *r)
{
    if (r->state & PL_FAILED)
        return 0;
    if (r->kind == PL_TRUNCATE)
        return 1;
    return (r->state & PL_DONE) ? r->done : r->len;
}

/* One file: its durable image, then its pending records as the random
 * choice says (powerloss.h). */
static int pl__cut_file(const char *data_dir, const char *state_dir, const char *name, unsigned *seed,
                        struct pl_cut_report *rep)
{
    char path[1024];
    size_t dlen, plen;
    snprintf(path, sizeof path, "%s/%s.durable", state_dir, name);
    uint8_t *dur = pl__slurp(path, &dlen);
    snprintf(path, sizeof path, "%s/%s.pending", state_dir, name);
    uint8_t *pend = pl__slurp(path, &plen);
    int rc = -1;
    struct pl_image m = {0};
    if (dur == NULL || pend == NULL || pl__resize(&m, dlen) != 0)
        goto out;
    if (dlen > 0)
        memcpy(m.data, dur, dlen);
    /* The records whose calls changed something. */
    size_t count = 0, unsynced = 0;
    for (size_t at = 0; at + sizeof(struct pl_record) <= plen;) {
        struct pl_record r;
        memcpy(&r, pend + at, sizeof r);
        at += sizeof r + (r.kind == PL_WRITE ? r.len : 0);
        count += at <= plen && pl__made(&r) > 0;
        unsynced += at <= plen && pl__made(&r) > 0 && !(r.state & PL_SYNCED);
    }
    if (unsynced > 0)
        rep->files++;
    unsigned kept0 = rep->kept, torn0 = rep->torn, dropped0 = rep->dropped;
    size_t keep = (size_t)rand_r(seed) % (count + 1); /* kept whole; the next one torn */
    bool by_page = rand_r(seed) % 2;
    size_t i = 0;
    for (size_t at = 0; at + sizeof(struct pl_record) <= plen;) {
        struct pl_record r;
        memcpy(&r, pend + at, sizeof r);
        const uint8_t *bytes = pend + at + sizeof r;
        at += sizeof r + (r.kind == PL_WRITE ? r.len : 0);
        uint64_t n = pl__made(&r);
        if (at > plen || n == 0)
            continue;
        uint64_t part = r.kind == PL_TRUNCATE ? (uint64_t)(rand_r(seed) % 2) : 0;
        if (r.kind == PL_WRITE && i == keep) {
            /* Torn: a random byte, or the pages wholly before a random
             * page boundary of the file. */
            part = (uint64_t)rand_r(seed) % n;
            if (by_page) {
                uint64_t end = (r.off + part) / PL_PAGE * PL_PAGE;
                part = end > r.off ? end - r.off : 0;
            }
        }
        if (r.state & PL_SYNCED) {
            if (pl__apply(&m, &r, bytes, n) != 0) /* durable already: not counted */
                goto out;
        } else if (i < keep) {
            rep->kept++;
            if (pl__apply(&m, &r, bytes, n) != 0)
                goto out;
        } else if (i == keep && part > 0) {
            rep->torn++;
            rep->lost_bytes += r.kind == PL_WRITE ? n - part : 0;
            if (pl__apply(&m, &r, bytes, part) != 0)
                goto out;
        } else {
            rep->dropped++;
            rep->lost_bytes += r.kind == PL_WRITE ? n : 0;
        }
        i++;
    }
    size_t used = strlen(rep->detail);
    if (unsynced > 0)
        snprintf(rep->detail + used, sizeof rep->detail - used, "%s %u/%u/%u; ", name, rep->kept - kept0,
                 rep->torn - torn0, rep->dropped - dropped0);
    snprintf(path, sizeof path, "%s/%s", data_dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        goto out;
    size_t done = 0;
    while (done < m.len) {
        ssize_t w = write(fd, m.data + done, m.len - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    if (done == m.len)
        rc = 0;
out:
    free(dur);
    free(pend);
    free(m.data);
    return rc;
}

int pl_cut(const char *data_dir, const char *state_dir, unsigned *seed, struct pl_cut_report *report)
{
    memset(report, 0, sizeof *report);
    DIR *d = opendir(state_dir);
    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 8 && strcmp(e->d_name + n - 8, ".durable") == 0) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(n - 8), e->d_name);
            rc = pl__cut_file(data_dir, state_dir, name, seed, report);
        }
    }
    closedir(d);
    /* The next run starts from the files as they are now. */
    d = rc == 0 ? opendir(state_dir) : NULL;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", state_dir, e->d_name);
            unlink(path);
        }
    }
    if (d)
        closedir(d);
    return rc;
}

uint64_t pl_syncs(const char *state_dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.syncs", state_dir, name);
    FILE *f = fopen(path, "r");
    unsigned long long n = 0;
    if (f) {
        if (fscanf(f, "%llu", &n) != 1)
            n = 0;
        fclose(f);
    }
    return n;
}
