/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* shim.c - the power-loss simulator's recording half, preloaded into the
 * broker (LD_PRELOAD): wraps the calls that change or sync the files of
 * the data directory and keeps, beside them, what has reached the disk
 * for certain and what has not (powerloss.h).
 *
 * An interposed library is process-wide by nature: its state is the one
 * static struct below, guarded by one mutex. Every call on a watched file
 * holds that mutex from its record to its completion, so the records of a
 * file are in the order the calls took effect, and a sync sees no write
 * half done. Calls on other descriptors go straight through. */
#define _GNU_SOURCE /* RTLD_NEXT, the *64 variants */
#undef _FORTIFY_SOURCE /* its inline open() would clash with ours */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "powerloss.h"

#define PL_FDS 4096  /* descriptors watched: below this number */
#define PL_NAMES 16  /* files of the data directory */
#define PL_PATH 1024
#define PL_OUT (2 * PL_PATH) /* a path made of one of those and a name */

struct pl_file {
    char name[64]; /* "" when free */
    int pend_fd;   /* NAME.pending */
    uint64_t pend_len;
    uint64_t syncs;
};

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    bool on;
    char dir[PL_PATH], state[PL_PATH];
    size_t dir_len;
    /* per descriptor: 1 + index into files (0: not watched); the flags
     * say whether writes through it are durable when they return */
    _Atomic int fd_file[PL_FDS];
    bool fd_dsync[PL_FDS];
    struct pl_file files[PL_NAMES];
    int (*open)(const char *, int, ...);
    ssize_t (*write)(int, const void *, size_t);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    ssize_t (*writev)(int, const struct iovec *, int);
    ssize_t (*pwritev)(int, const struct iovec *, int, off_t);
    ssize_t (*pread)(int, void *, size_t, off_t);
    int (*ftruncate)(int, off_t);
    int (*fsync)(int);
    int (*fdatasync)(int);
    int (*close)(int);
    int (*rename)(const char *, const char *);
    int (*unlink)(const char *);
} pl = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void pl__die(const char *what, const char *name)
{
    char msg[512];
    int n = snprintf(msg, sizeof msg, "powerloss simulator: %s: %s (%s)\n", what, name, strerror(errno));
    if (n > 0 && pl.write)
        pl.write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    abort();
}

/* POSIX's way to take a function from dlsym: copy the pointer's bytes. */
#define PL_SYM(f)                                                                       \
    do {                                                                                \
        void *p_ = dlsym(RTLD_NEXT, #f);                                                \
        memcpy(&pl.f, &p_, sizeof p_);                                                  \
    } while (0)

static void pl__init(void)
{
    PL_SYM(open);
    PL_SYM(write);
    PL_SYM(pwrite);
    PL_SYM(writev);
    PL_SYM(pwritev);
    PL_SYM(pread);
    PL_SYM(ftruncate);
    PL_SYM(fsync);
    PL_SYM(fdatasync);
    PL_SYM(close);
    PL_SYM(rename);
    PL_SYM(unlink);
    const char *dir = getenv("SS_POWERLOSS_DIR"), *state = getenv("SS_POWERLOSS_STATE");
    if (dir && state && dir[0] && state[0] && strlen(dir) < PL_PATH - 80 && strlen(state) < PL_PATH - 80) {
        snprintf(pl.dir, sizeof pl.dir, "%s", dir);
        snprintf(pl.state, sizeof pl.state, "%s", state);
        pl.dir_len = strlen(dir);
        pl.on = true;
    }
}

static void pl__ready(void)
{
    pthread_once(&pl.once, pl__init);
}

/* The name of a file directly in the data directory, or NULL. */
static const char *pl__name(const char *path)
{
    if (!pl.on || path == NULL || strncmp(path, pl.dir, pl.dir_len) != 0 || path[pl.dir_len] != '/')
        return NULL;
    const char *name = path + pl.dir_len + 1;
    if (name[0] == '\0' || strchr(name, '/') != NULL || strlen(name) >= sizeof pl.files[0].name)
        return NULL;
    return name;
}

static void pl__state_path(char *out, const char *name, const char *ext)
{
    snprintf(out, PL_OUT, "%s/%s.%s", pl.state, name, ext);
}

static void pl__put_all(int fd, const void *p, size_t n, uint64_t off, const char *name)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = pl.pwrite(fd, b, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            pl__die("writing its records", name);
        b += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
}

/* Copy the file at path (absent: empty) into a new file at copy. */
static void pl__copy(const char *path, const char *copy, const char *name)
{
    int out = pl.open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0)
        pl__die("creating the durable image", name);
    int in = pl.open(path, O_RDONLY | O_CLOEXEC);
    uint8_t buf[65536];
    uint64_t off = 0;
    ssize_t r;
    while (in >= 0 && (r = pl.pread(in, buf, sizeof buf, (off_t)off)) > 0) {
        pl__put_all(out, buf, (size_t)r, off, name);
        off += (uint64_t)r;
    }
    if (in >= 0)
        pl.close(in);
    pl.close(out);
}

/* The entry of a data directory file, made on its first open: its
 * durable image is the file as it is now (at the first start, or as the
 * last cut left it). Called with the lock held. */
static int pl__file(const char *name, const char *path)
{
    int free_slot = -1;
    for (int i = 0; i < PL_NAMES; i++) {
        if (strcmp(pl.files[i].name, name) == 0)
            return i;
        if (free_slot < 0 && pl.files[i].name[0] == '\0')
            free_slot = i;
    }
    if (free_slot < 0) {
        errno = EMFILE;
        pl__die("too many files in the data directory", name);
    }
    struct pl_file *f = &pl.files[free_slot];
    char p[PL_OUT];
    pl__state_path(p, name, "durable");
    struct stat st;
    if (stat(p, &st) != 0)
        pl__copy(path, p, name);
    pl__state_path(p, name, "pending");
    f->pend_fd = pl.open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f->pend_fd < 0 || fstat(f->pend_fd, &st) != 0)
        pl__die("opening its record of changes", name);
    f->pend_len = (uint64_t)st.st_size;
    f->syncs = 0;
    snprintf(f->name, sizeof f->name, "%s", name);
    return free_slot;
}

static int pl__opened(int fd, const char *path, int flags)
{
    const char *name = pl__name(path);
    if (fd < 0 || name == NULL || (flags & O_DIRECTORY))
        return fd;
    if (fd >= PL_FDS) {
        errno = EMFILE;
        pl__die("descriptor number too high to watch", name);
    }
    pthread_mutex_lock(&pl.lock);
    int i = pl__file(name, path);
    pl.fd_dsync[fd] = (flags & (O_DSYNC | O_SYNC)) != 0;
    atomic_store(&pl.fd_file[fd], i + 1);
    pthread_mutex_unlock(&pl.lock);
    return fd;
}

/* Before the real open: a file opened for the first time gets its
 * durable image as it is before O_TRUNC empties it. */
static void pl__before_open(const char *path, int flags)
{
    const char *name = pl__name(path);
    if (name == NULL || (flags & O_DIRECTORY))
        return;
    pthread_mutex_lock(&pl.lock);
    pl__file(name, path);
    pthread_mutex_unlock(&pl.lock);
}

static int pl__open_as(const char *path, int flags, mode_t mode)
{
    pl__ready();
    pl__before_open(path, flags);
    int fd = pl.open(path, flags, mode);
    if (fd >= 0 && (flags & O_TRUNC) && pl__name(path)) {
        /* The truncation is a change like any other. */
        pl__opened(fd, path, flags);
        ftruncate(fd, 0);
        return fd;
    }
    return pl__opened(fd, path, flags);
}

#define PL_MODE(flags, mode)                                      \
    do {                                                          \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                    \
            va_list ap;                                           \
            va_start(ap, flags);                                  \
            mode = (mode_t)va_arg(ap, int);                       \
            va_end(ap);                                           \
        }                                                         \
    } while (0)

int open(const char *path, int flags, ...)
{
    mode_t mode = 0;
    PL_MODE(flags, mode);
    return pl__open_as(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    mode_t mode = 0;
    PL_MODE(flags, mode);
    return pl__open_as(path, flags, mode);
}

/* The watched file behind fd, or NULL; with the lock held when not NULL. */
static struct pl_file *pl__take(int fd)
{
    pl__ready();
    if (fd < 0 || fd >= PL_FDS || atomic_load(&pl.fd_file[fd]) == 0)
        return NULL;
    pthread_mutex_lock(&pl.lock);
    int i = atomic_load(&pl.fd_file[fd]);
    if (i == 0) {
        pthread_mutex_unlock(&pl.lock);
        return NULL;
    }
    return &pl.files[i - 1];
}

/* Append a record (and a write's bytes); returns its offset in the file. */
static uint64_t pl__record(struct pl_file *f, uint32_t kind, uint64_t off, const struct iovec *iov, int n)
{
    struct pl_record r = {.kind = kind, .off = off};
    for (int i = 0; i < n; i++)
        r.len += iov[i].iov_len;
    uint64_t at = f->pend_len;
    pl__put_all(f->pend_fd, &r, sizeof r, at, f->name);
    uint64_t p = at + sizeof r;
    for (int i = 0; i < n; i++) {
        pl__put_all(f->pend_fd, iov[i].iov_base, iov[i].iov_len, p, f->name);
        p += iov[i].iov_len;
    }
    f->pend_len = p;
    return at;
}

/* Complete the record at `at` with the call's result; a write through an
 * O_DSYNC descriptor goes into the durable image at once. */
static void pl__complete(struct pl_file *f, uint64_t at, ssize_t result, bool dsync, uint64_t off,
                         const struct iovec *iov, int n)
{
    struct pl_record r;
    if (pl.pread(f->pend_fd, &r, sizeof r, (off_t)at) != (ssize_t)sizeof r)
        pl__die("reading its records", f->name);
    r.state = result < 0 ? PL_FAILED : PL_DONE;
    r.done = result < 0 ? 0 : (uint64_t)result;
    if (result > 0 && dsync) {
        r.state |= PL_SYNCED;
        char p[PL_OUT];
        pl__state_path(p, f->name, "durable");
        int d = pl.open(p, O_WRONLY | O_CLOEXEC);
        if (d < 0)
            pl__die("opening the durable image", f->name);
        uint64_t left = r.done, o = off;
        for (int i = 0; i < n && left > 0; i++) {
            size_t k = iov[i].iov_len < left ? iov[i].iov_len : (size_t)left;
            pl__put_all(d, iov[i].iov_base, k, o, f->name);
            o += k;
            left -= k;
        }
        pl.close(d);
    }
    pl__put_all(f->pend_fd, &r, sizeof r, at, f->name);
}

static ssize_t pl__write(int fd, const struct iovec *iov, int n, off_t off, bool positioned)
{
    struct pl_file *f = pl__take(fd);
    if (f == NULL) {
        if (positioned)
            return n == 1 ? pl.pwrite(fd, iov[0].iov_base, iov[0].iov_len, off) : pl.pwritev(fd, iov, n, off);
        return n == 1 ? pl.write(fd, iov[0].iov_base, iov[0].iov_len) : pl.writev(fd, iov, n);
    }
    if (!positioned) {
        struct stat st;
        off = (fcntl(fd, F_GETFL) & O_APPEND) && fstat(fd, &st) == 0 ? st.st_size : lseek(fd, 0, SEEK_CUR);
    }
    uint64_t at = pl__record(f, PL_WRITE, (uint64_t)off, iov, n);
    ssize_t rc;
    if (positioned)
        rc = n == 1 ? pl.pwrite(fd, iov[0].iov_base, iov[0].iov_len, off) : pl.pwritev(fd, iov, n, off);
    else
        rc = n == 1 ? pl.write(fd, iov[0].iov_base, iov[0].iov_len) : pl.writev(fd, iov, n);
    int err = errno;
    pl__complete(f, at, rc, pl.fd_dsync[fd], (uint64_t)off, iov, n);
    pthread_mutex_unlock(&pl.lock);
    errno = err;
    return rc;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    struct iovec v = {(void *)buf, n};
    return pl__write(fd, &v, 1, 0, false);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    struct iovec v = {(void *)buf, n};
    return pl__write(fd, &v, 1, off, true);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    struct iovec v = {(void *)buf, n};
    return pl__write(fd, &v, 1, (off_t)off, true);
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    return pl__write(fd, iov, n, 0, false);
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    return pl__write(fd, iov, n, off, true);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off64_t off)
{
    return pl__write(fd, iov, n, (off_t)off, true);
}

int ftruncate(int fd, off_t len)
{
    struct pl_file *f = pl__take(fd);
    if (f == NULL)
        return pl.ftruncate(fd, len);
    uint64_t at = pl__record(f, PL_TRUNCATE, (uint64_t)len, NULL, 0);
    int rc = pl.ftruncate(fd, len);
    int err = errno;
    pl__complete(f, at, rc, false, 0, NULL, 0);
    pthread_mutex_unlock(&pl.lock);
    errno = err;
    return rc;
}

int ftruncate64(int fd, off64_t len)
{
    return ftruncate(fd, (off_t)len);
}

/* Whether the durable image at path equals the file at real. */
static bool pl__same(const char *path, const char *real)
{
    int a = pl.open(path, O_RDONLY | O_CLOEXEC), b = pl.open(real, O_RDONLY | O_CLOEXEC);
    bool same = a >= 0 && b >= 0;
    static uint8_t x[65536], y[65536]; /* under the lock */
    for (uint64_t off = 0; same;) {
        ssize_t m = pl.pread(a, x, sizeof x, (off_t)off), n = pl.pread(b, y, sizeof y, (off_t)off);
        same = m == n && m >= 0 && memcmp(x, y, (size_t)(m < 0 ? 0 : m)) == 0;
        if (m <= 0)
            break;
        off += (uint64_t)m;
    }
    if (a >= 0)
        pl.close(a);
    if (b >= 0)
        pl.close(b);
    return same;
}

/* After a completed sync: the file's changes so far are on the disk.
 * They move into the durable image, which must now equal the file. */
static void pl__synced(struct pl_file *f)
{
    char p[PL_OUT], real[PL_OUT];
    pl__state_path(p, f->name, "durable");
    int d = pl.open(p, O_WRONLY | O_CLOEXEC);
    if (d < 0)
        pl__die("opening the durable image", f->name);
    static uint8_t buf[65536]; /* under the lock */
    for (uint64_t at = 0; at < f->pend_len;) {
        struct pl_record r;
        if (pl.pread(f->pend_fd, &r, sizeof r, (off_t)at) != (ssize_t)sizeof r)
            pl__die("reading its records", f->name);
        at += sizeof r;
        if (r.kind == PL_TRUNCATE && (r.state & PL_DONE) && pl.ftruncate(d, (off_t)r.off) != 0)
            pl__die("truncating the durable image", f->name);
        for (uint64_t k = 0; r.kind == PL_WRITE && (r.state & PL_DONE) && k < r.done;) {
            size_t c = r.done - k < sizeof buf ? (size_t)(r.done - k) : sizeof buf;
            if (pl.pread(f->pend_fd, buf, c, (off_t)(at + k)) != (ssize_t)c)
                pl__die("reading its records", f->name);
            pl__put_all(d, buf, c, r.off + k, f->name);
            k += c;
        }
        at += r.kind == PL_WRITE ? r.len : 0;
    }
    pl.close(d);
    if (pl.ftruncate(f->pend_fd, 0) != 0)
        pl__die("emptying its records", f->name);
    f->pend_len = 0;
    snprintf(real, sizeof real, "%s/%s", pl.dir, f->name);
    errno = 0;
    if (!pl__same(p, real))
        pl__die("the file changed in a way not recorded (a mapping? a call not wrapped?)", f->name);
    f->syncs++;
    char n[24];
    int len = snprintf(n, sizeof n, "%20llu\n", (unsigned long long)f->syncs);
    pl__state_path(p, f->name, "syncs");
    int s = pl.open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (s < 0)
        pl__die("counting syncs", f->name);
    pl__put_all(s, n, (size_t)len, 0, f->name);
    pl.close(s);
}

static int pl__sync(int fd, bool data_only)
{
    struct pl_file *f = pl__take(fd);
    if (f == NULL)
        return data_only ? pl.fdatasync(fd) : pl.fsync(fd);
    int rc = data_only ? pl.fdatasync(fd) : pl.fsync(fd);
    int err = errno;
    if (rc == 0)
        pl__synced(f);
    pthread_mutex_unlock(&pl.lock);
    errno = err;
    return rc;
}

int fsync(int fd)
{
    return pl__sync(fd, false);
}

int fdatasync(int fd)
{
    return pl__sync(fd, true);
}

int close(int fd)
{
    pl__ready();
    if (fd >= 0 && fd < PL_FDS && atomic_load(&pl.fd_file[fd]) != 0) {
        pthread_mutex_lock(&pl.lock);
        atomic_store(&pl.fd_file[fd], 0);
        int rc = pl.close(fd);
        pthread_mutex_unlock(&pl.lock);
        return rc;
    }
    return pl.close(fd);
}

/* A file gone from the directory (replaced by a rename, or removed):
 * the store closes its descriptors first. Called with the lock held. */
static void pl__forget(const char *name)
{
    for (int i = 0; i < PL_NAMES; i++) {
        if (strcmp(pl.files[i].name, name) == 0) {
            pl.close(pl.files[i].pend_fd);
            pl.files[i].name[0] = '\0';
        }
    }
}

/* Names are durable at once: the simulator models contents and sizes.
 * A renamed file's records follow it. */
int rename(const char *from, const char *to)
{
    pl__ready();
    const char *a = pl__name(from), *b = pl__name(to);
    if (a == NULL || b == NULL)
        return pl.rename(from, to);
    pthread_mutex_lock(&pl.lock);
    int rc = pl.rename(from, to);
    int err = errno;
    if (rc == 0) {
        static const char *const exts[] = {"durable", "pending", "syncs"};
        for (int e = 0; e < 3; e++) {
            char p[PL_OUT], q[PL_OUT];
            pl__state_path(p, a, exts[e]);
            pl__state_path(q, b, exts[e]);
            if (pl.rename(p, q) != 0)
                pl.unlink(q);
        }
        pl__forget(b);
        for (int i = 0; i < PL_NAMES; i++) {
            if (strcmp(pl.files[i].name, a) == 0)
                snprintf(pl.files[i].name, sizeof pl.files[i].name, "%s", b);
        }
    }
    pthread_mutex_unlock(&pl.lock);
    errno = err;
    return rc;
}

int unlink(const char *path)
{
    pl__ready();
    const char *name = pl__name(path);
    if (name == NULL)
        return pl.unlink(path);
    pthread_mutex_lock(&pl.lock);
    int rc = pl.unlink(path);
    int err = errno;
    if (rc == 0) {
        static const char *const exts[] = {"durable", "pending", "syncs"};
        for (int e = 0; e < 3; e++) {
            char p[PL_OUT];
            pl__state_path(p, name, exts[e]);
            pl.unlink(p);
        }
        pl__forget(name);
    }
    pthread_mutex_unlock(&pl.lock);
    errno = err;
    return rc;
}
