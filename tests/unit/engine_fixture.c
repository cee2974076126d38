/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* engine_fixture.c - the engine as its tests drive it (engine_fixture.h). */
#include "engine_fixture.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../core/codec.h"
#include "../../core/errors.h"
#include "../test.h"

static void on_change(void *ctx, const ss_change *ev)
{
    struct fx *f = ctx;
    char v[SS_HLC_TEXT_MAX + 1];
    v[ss_hlc_format(&ev->version, v)] = '\0';
    size_t used = strlen(f->events);
    snprintf(f->events + used, sizeof f->events - used, "%s %.*s%s%.*s @%s%s\n",
             ev->type == SS_CHANGE_SET ? "SET" : "DELETE", (int)(ev->key.len > 40 ? 40 : ev->key.len),
             (const char *)ev->key.data, ev->type == SS_CHANGE_SET ? "=" : "",
             ev->type == SS_CHANGE_SET ? (int)(ev->value.len > 40 ? 40 : ev->value.len) : 0,
             ev->type == SS_CHANGE_SET ? (const char *)ev->value.data : "", v,
             ev->expired ? " expired" : "");
}

int on_keynotify(void *ctx, void *caller, ss_bytes key, bool stop)
{
    struct fx *f = ctx;
    ASSERT_TRUE(caller == f);
    for (int i = 0; i < f->nwatched; i++) {
        if (strlen(f->watched[i]) == key.len && memcmp(f->watched[i], key.data, key.len) == 0) {
            if (stop)
                f->watched[i][0] = '\0';
            return 1;
        }
    }
    if (stop)
        return 0;
    if (f->nwatched == 16)
        return SS_E_QUOTA;
    snprintf(f->watched[f->nwatched++], 64, "%.*s", (int)key.len, (const char *)key.data);
    return 1;
}

void fx_attach(struct fx *f, const ss_engine_options *eo)
{
    f->so.path = test_tmpdir();
    ASSERT_EQ(ss_store_open(&f->so, &f->store), SS_OK);
    ASSERT_EQ(ss_backend_lmdb_new(f->store, &f->be), SS_OK);
    ASSERT_EQ(ss_engine_new(f->be, eo, &f->eng), SS_OK);
}

void fx_open(struct fx *f)
{
    ss_engine_options eo = {.on_keynotify = on_keynotify, .keynotify_ctx = f};
    fx_attach(f, &eo);
}

void fx_events(struct fx *f)
{
    ASSERT_EQ(ss_engine_commit(f->eng, f->now), SS_OK);
    ss_backend_deliver(f->be, on_change, f);
}

void fx_drop_events(struct fx *f)
{
    fx_events(f);
    f->events[0] = '\0';
}

void fx_init(struct fx *f)
{
    memset(f, 0, sizeof *f);
    f->so = ss_store_options_default();
    f->now = T0;
    fx_open(f);
}

void fx_close(struct fx *f)
{
    ASSERT_EQ(ss_engine_commit(f->eng, f->now), SS_OK);
    ss_engine_free(f->eng);
    ss_backend_lmdb_free(f->be);
    ss_store_close(f->store);
    f->eng = NULL;
    f->be = NULL;
    f->store = NULL;
}

void fx_free(struct fx *f)
{
    fx_close(f);
    ss_buf_free(&f->resp);
}

void run_argv(struct fx *f, const char *ts, const char *ft, size_t argc, const ss_bytes *argv)
{
    ss_buf req = SS_BUF_INIT;
    ASSERT_EQ(ss_codec_put_request(&req, argc, argv), SS_OK);
    ss_buf_clear(&f->resp);
    ss_exec x = {.payload = req.data, .payload_len = req.len, .now_ms = f->now, .caller = f,
                 .response = &f->resp};
    if (ts) {
        x.ts.data = (const uint8_t *)ts;
        x.ts.len = strlen(ts);
    }
    if (ft) {
        x.ft.data = (const uint8_t *)ft;
        x.ft.len = strlen(ft);
    }
    f->status = ss_engine_exec(f->eng, &x);
    f->has_version = x.has_version;
    f->version[0] = '\0';
    if (x.has_version)
        f->version[ss_hlc_format(&x.version, f->version)] = '\0';
    ss_buf_append(&f->resp, "", 1);
    f->resp.len--;
    ss_buf_free(&req);
}

void run(struct fx *f, const char *ts, const char *ft, ...)
{
    ss_bytes argv[SS_REQUEST_MAX_ARGS];
    size_t argc = 0;
    va_list ap;
    va_start(ap, ft);
    const char *w;
    while ((w = va_arg(ap, const char *)) != NULL) {
        argv[argc].data = (const uint8_t *)w;
        argv[argc++].len = strlen(w);
    }
    va_end(ap);
    run_argv(f, ts, ft, argc, argv);
}

const char *now_ts(struct fx *f)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%llu:0:client", (unsigned long long)f->now);
    return buf;
}
