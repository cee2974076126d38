/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* fuzz_engine.c - libFuzzer target over whole request handling: the
 * request's __ts / __ft properties and payload go through the engine, on a
 * real LMDB store in a temporary directory, with a fake clock, KEYNOTIFY
 * registrations and an authorization rule.
 *
 * Input: byte 0 = flags (bit 0: __ts present, bit 1: __ft present, bits
 * 2-7: milliseconds the clock moves), then for each present property a
 * length byte and its bytes, then the payload.
 *
 * Checked beyond "no crash": every answer is one well-formed reply; a
 * version is sent only with +OK, a bulk, :1 or :-1; versions of applied
 * SETs strictly increase; the store's batch always commits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/codec.h"
#include "../core/backend_lmdb.h"
#include "../core/engine.h"
#include "../core/errors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz {
    char dir[64];
    ss_store *store;
    ss_backend *backend;
    ss_engine *engine;
    uint64_t now;
    int watched;
    ss_hlc last;
    ss_buf resp;
};

static int fz_keynotify(void *ctx, void *caller, ss_bytes key, bool stop)
{
    (void)caller;
    (void)key;
    struct fz *f = ctx;
    if (stop) {
        if (f->watched == 0)
            return 0;
        f->watched--;
        return 1;
    }
    if (f->watched >= 8)
        return SS_E_QUOTA;
    f->watched++;
    return 1;
}

static bool fz_authorize(void *ctx, void *caller, enum ss_access access, ss_bytes key, bool quietly)
{
    (void)ctx;
    (void)caller;
    (void)quietly;
    return !(access == SS_ACCESS_WRITE && key.len > 0 && key.data[0] == 'x');
}

/* Every committed change in the feed names a key. */
static void fz_change(void *ctx, const ss_change *c)
{
    (void)ctx;
    if (c->key.len == 0)
        abort();
}

static struct fz fz_state;

/* At exit: close the store and remove its temporary directory. */
static void fz_cleanup(void)
{
    struct fz *f = &fz_state;
    ss_engine_free(f->engine);
    ss_backend_lmdb_free(f->backend);
    ss_store_close(f->store);
    ss_buf_free(&f->resp);
    char path[512];
    snprintf(path, sizeof path, "%s/data.mdb", f->dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/statestore.lock", f->dir);
    unlink(path);
    rmdir(f->dir);
}

static struct fz *fz_get(void)
{
    struct fz *fp = &fz_state;
#define f (*fp)
    if (f.engine)
        return &f;
    snprintf(f.dir, sizeof f.dir, "/tmp/ss-fuzz-engine-XXXXXX");
    if (mkdtemp(f.dir) == NULL)
        abort();
    atexit(fz_cleanup);
    ss_store_options so = ss_store_options_default();
    so.path = f.dir;
    so.max_keys = 5000;
    so.max_bytes = 64u << 20;
    so.sync = SS_SYNC_PERIODIC;
    if (ss_store_open(&so, &f.store) != SS_OK)
        abort();
    if (ss_backend_lmdb_new(f.store, &f.backend) != SS_OK)
        abort();
    ss_engine_options eo = {.on_keynotify = fz_keynotify,
                            .keynotify_ctx = &f,
                            .on_authorize = fz_authorize};
    if (ss_engine_new(f.backend, &eo, &f.engine) != SS_OK)
        abort();
    f.now = 1700000000000ull;
    return &f;
#undef f
}

/* Take a length-prefixed property from the input. */
static bool fz_prop(const uint8_t **p, size_t *n, ss_bytes *out)
{
    if (*n < 1)
        return false;
    size_t len = (*p)[0];
    if (len > *n - 1)
        len = *n - 1;
    out->data = *p + 1;
    out->len = len;
    *p += 1 + len;
    *n -= 1 + len;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz *f = fz_get();
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    ss_exec x;
    memset(&x, 0, sizeof x);
    if ((flags & 1) && !fz_prop(&p, &n, &x.ts))
        return 0;
    if ((flags & 2) && !fz_prop(&p, &n, &x.ft))
        return 0;
    static const uint8_t empty[1];
    if ((flags & 1) && x.ts.data == NULL)
        x.ts.data = empty;
    if ((flags & 2) && x.ft.data == NULL)
        x.ft.data = empty;
    f->now += flags >> 2;
    x.payload = p;
    x.payload_len = n;
    x.now_ms = f->now;
    ss_buf_clear(&f->resp);
    x.response = &f->resp;
    int rc = ss_engine_exec(f->engine, &x);
    if (rc == SS_E_NOMEM)
        abort();
    ss_reply r;
    if (f->resp.len == 0 || ss_codec_decode_reply(f->resp.data, f->resp.len, &r) != SS_OK)
        abort();
    if (x.has_version) {
        bool fits = r.kind == SS_REPLY_SIMPLE || r.kind == SS_REPLY_BULK ||
                    (r.kind == SS_REPLY_INT && (r.num == 1 || r.num == -1));
        if (!fits)
            abort();
        if (r.kind == SS_REPLY_SIMPLE && r.str.len == 2) { /* an applied SET */
            if (ss_hlc_compare(&x.version, &f->last) <= 0)
                abort();
            f->last = x.version;
        }
    }
    if (ss_engine_expire(f->engine, f->now, 16) < 0)
        abort();
    if (ss_engine_commit(f->engine, f->now) != SS_OK)
        abort();
    ss_backend_deliver(f->backend, fz_change, NULL);
    return 0;
}
