/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* journal.c - frames of the write-ahead journal; see journal.h. */
#include "journal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bigendian.h"
#include "errors.h"
#include "siphash.h"

int ss_jframe_reset(ss_buf *f)
{
    ss_buf_clear(f);
    if (ss_buf_reserve(f, SS_JFRAME_HEADER) != SS_OK)
        return SS_E_NOMEM;
    f->len = SS_JFRAME_HEADER; /* filled by seal */
    return SS_OK;
}

bool ss_jframe_empty(const ss_buf *f)
{
    return f->len <= SS_JFRAME_HEADER;
}

int ss_jframe_op(ss_buf *f, uint8_t kind, uint8_t db, const void *key, size_t klen,
                 const void *value, size_t vlen)
{
    if (klen > 0xffff || vlen > UINT32_MAX)
        return SS_E_INVAL;
    bool put = kind == SS_JOP_PUT;
    size_t head = 4 + (put ? 4 : 0);
    if (ss_buf_reserve(f, head + klen + (put ? vlen : 0)) != SS_OK)
        return SS_E_NOMEM;
    uint8_t *p = f->data + f->len;
    p[0] = kind;
    p[1] = db;
    ss_put_be(p + 2, klen, 2);
    if (put)
        ss_put_be(p + 4, vlen, 4);
    p += head;
    if (klen)
        memcpy(p, key, klen);
    if (put && vlen)
        memcpy(p + klen, value, vlen);
    f->len += head + klen + (put ? vlen : 0);
    return SS_OK;
}

static uint64_t ss_journal__check(const uint8_t key[16], const uint8_t *head12, const uint8_t *payload,
                          size_t len)
{
    ss_siphash_state h;
    ss_siphash_init(&h, key);
    ss_siphash_update(&h, head12, 12);
    ss_siphash_update(&h, payload, len);
    return ss_siphash_final(&h);
}

void ss_jframe_seal(ss_buf *f, uint64_t seq, const uint8_t key[16])
{
    size_t len = f->len - SS_JFRAME_HEADER;
    ss_put_be(f->data, len, 4);
    ss_put_be(f->data + 4, seq, 8);
    ss_put_be(f->data + 12, ss_journal__check(key, f->data, f->data + SS_JFRAME_HEADER, len), 8);
}

/* Read exactly n bytes at off: 1 done, 0 end of file first, -1 error. */
static int ss_journal__pread_all(int fd, uint8_t *p, size_t n, uint64_t off)
{
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 1;
}

/* Decode and apply the operations of one good frame. */
static int ss_journal__apply(const uint8_t *p, size_t len, ss_jop_fn apply, void *ctx)
{
    const uint8_t *end = p + len;
    while (p < end) {
        struct ss_jop op;
        if (end - p < 4)
            return SS_E_CORRUPT;
        op.kind = p[0];
        op.db = p[1];
        op.key.len = (size_t)ss_get_be(p + 2, 2);
        p += 4;
        op.value.len = 0;
        if (op.kind == SS_JOP_PUT) {
            if (end - p < 4)
                return SS_E_CORRUPT;
            op.value.len = (size_t)ss_get_be(p, 4);
            p += 4;
        } else if (op.kind != SS_JOP_DEL) {
            return SS_E_CORRUPT;
        }
        if ((size_t)(end - p) < op.key.len || (size_t)(end - p) - op.key.len < op.value.len)
            return SS_E_CORRUPT;
        if (op.key.len == 0)
            return SS_E_CORRUPT; /* never written: every database's keys are non-empty */
        op.key.data = p;
        op.value.data = p + op.key.len;
        p += op.key.len + op.value.len;
        int rc = apply(ctx, &op);
        if (rc != SS_OK)
            return rc;
    }
    return SS_OK;
}

int ss_journal_replay(int fd, uint64_t limit, const uint8_t key[16], uint64_t after_seq,
                      ss_jop_fn apply, void *ctx, uint64_t *end, uint64_t *last_seq)
{
    uint64_t off = 0, prev = 0;
    bool first = true;
    uint8_t *payload = NULL;
    size_t cap = 0;
    int rc = SS_OK;
    *last_seq = after_seq;
    /* No frame reaches past the end of the file: a damaged length is
     * caught before it is allocated. */
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *end = 0;
        return SS_E_IO;
    }
    if ((uint64_t)st.st_size < limit)
        limit = (uint64_t)st.st_size;
    for (;;) {
        uint8_t head[SS_JFRAME_HEADER];
        if (limit - off < SS_JFRAME_HEADER)
            break;
        int r = ss_journal__pread_all(fd, head, sizeof head, off);
        if (r <= 0) {
            rc = r < 0 ? SS_E_IO : SS_OK;
            break;
        }
        size_t len = (size_t)ss_get_be(head, 4);
        uint64_t seq = ss_get_be(head + 4, 8);
        if (limit - off - SS_JFRAME_HEADER < len)
            break;
        /* Numbers follow each other; the first frame of the file may be
         * older than the checkpoint (a truncation that a crash undid). */
        if ((!first && seq != prev + 1) || (first && seq > after_seq + 1))
            break;
        if (len > cap) {
            uint8_t *np = realloc(payload, len);
            if (np == NULL) {
                rc = SS_E_NOMEM;
                break;
            }
            payload = np;
            cap = len;
        }
        r = ss_journal__pread_all(fd, payload, len, off + SS_JFRAME_HEADER);
        if (r < 0)
            rc = SS_E_IO;
        if (r <= 0)
            break;
        if (ss_journal__check(key, head, payload, len) != ss_get_be(head + 12, 8))
            break;
        if (seq > after_seq) {
            /* A frame whose check holds but whose contents do not decode
             * was written by a broken writer: stop as for a torn one. */
            if ((rc = ss_journal__apply(payload, len, apply, ctx)) != SS_OK)
                break;
            *last_seq = seq;
        }
        first = false;
        prev = seq;
        off += SS_JFRAME_HEADER + len;
    }
    free(payload);
    *end = off;
    return rc;
}

bool ss_journal_frames_follow(const uint8_t *buf, size_t n, const uint8_t key[16], uint64_t after_seq)
{
    for (size_t o = 0; n >= SS_JFRAME_HEADER && o <= n - SS_JFRAME_HEADER; o++) {
        const uint8_t *h = buf + o;
        uint64_t seq = ss_get_be(h + 4, 8);
        if (seq <= after_seq || seq - after_seq > ((uint64_t)1 << 20))
            continue; /* the cheap test first: most offsets fail it */
        size_t len = (size_t)ss_get_be(h, 4);
        if (len > n - o - SS_JFRAME_HEADER)
            continue;
        if (ss_journal__check(key, h, h + SS_JFRAME_HEADER, len) == ss_get_be(h + 12, 8))
            return true;
    }
    return false;
}
