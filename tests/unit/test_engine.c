/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_engine.c - PROTOCOL.md sections 2-6 through the engine, with a
 * fake clock: responses byte for byte, versions, events. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../core/codec.h"
#include "../../core/backend_lmdb.h"
#include "../../core/engine.h"
#include "../../core/errors.h"
#include "../test.h"

#define T0 1700000000000ull /* the fake wall clock starts here */

struct fx {
    ss_store_options so;
    ss_store *store;
    ss_backend *be;
    ss_engine *eng;
    uint64_t now;
    ss_buf resp;
    bool has_version;
    char version[SS_HLC_TEXT_MAX + 1];
    int status;
    /* events, as text lines "SET key=value @version" / "DELETE key @version" */
    char events[8192];
    /* KEYNOTIFY registrations of the fake caller */
    char watched[16][64];
    int nwatched;
};

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

static int on_keynotify(void *ctx, void *caller, ss_bytes key, bool stop)
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

/* Open the store in the test's directory, its backend and an engine. */
static void fx_attach(struct fx *f, const ss_engine_options *eo)
{
    f->so.path = test_tmpdir();
    ASSERT_EQ(ss_store_open(&f->so, &f->store), SS_OK);
    ASSERT_EQ(ss_backend_lmdb_new(f->store, &f->be), SS_OK);
    ASSERT_EQ(ss_engine_new(f->be, eo, &f->eng), SS_OK);
}

static void fx_open(struct fx *f)
{
    ss_engine_options eo = {.on_keynotify = on_keynotify, .keynotify_ctx = f};
    fx_attach(f, &eo);
}

/* Commit, then take the change feed into f->events. */
static void fx_events(struct fx *f)
{
    ASSERT_EQ(ss_engine_commit(f->eng, f->now), SS_OK);
    ss_backend_deliver(f->be, on_change, f);
}

/* Commit, and forget the changes so far. */
static void fx_drop_events(struct fx *f)
{
    fx_events(f);
    f->events[0] = '\0';
}

static void fx_init(struct fx *f)
{
    memset(f, 0, sizeof *f);
    f->so = ss_store_options_default();
    f->now = T0;
    fx_open(f);
}

static void fx_close(struct fx *f)
{
    ASSERT_EQ(ss_engine_commit(f->eng, f->now), SS_OK);
    ss_engine_free(f->eng);
    ss_backend_lmdb_free(f->be);
    ss_store_close(f->store);
    f->eng = NULL;
    f->be = NULL;
    f->store = NULL;
}

static void fx_free(struct fx *f)
{
    fx_close(f);
    ss_buf_free(&f->resp);
}

/* Run one request given as words; ts/ft NULL when absent. The response is
 * in f->resp (as a C string too: payloads in these tests have no NUL
 * unless the test looks at resp.len). */
static void run_argv(struct fx *f, const char *ts, const char *ft, size_t argc, const ss_bytes *argv)
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

static void run(struct fx *f, const char *ts, const char *ft, ...)
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

/* A client timestamp equal to the fake wall clock. */
static const char *now_ts(struct fx *f)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%llu:0:client", (unsigned long long)f->now);
    return buf;
}

#define RESP(f, lit) ASSERT_BUF((f)->resp, lit)
#define VERSION(f, lit) ASSERT_MEM((f)->version, strlen((f)->version), lit, strlen(lit))
#define NO_VERSION(f) ASSERT_TRUE(!(f)->has_version)
#define EVENTS(f, lit)                                                                  \
    do {                                                                                \
        fx_events(f);                                                                   \
        ASSERT_MEM((f)->events, strlen((f)->events), lit, strlen(lit));                 \
        (f)->events[0] = '\0';                                                          \
    } while (0)

TEST(engine_protocol_example)
{
    struct fx f;
    fx_init(&f);
    f.now = 1696374425000ull;
    /* PROTOCOL.md 4's example with identical clocks; a request stamped in the
     * millisecond it arrives gets the next millisecond, counter 0 (hlc.h). */
    run(&f, "1696374425000:0:CLIENT", NULL, "SET", "testkey", "testvalue", NULL);
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1696374425001:0:StateStore");
    EVENTS(&f, "SET testkey=testvalue @1696374425001:0:StateStore\n");
    run(&f, "1696374425000:0:CLIENT", NULL, "GET", "testkey", NULL);
    RESP(&f, "$9\r\ntestvalue\r\n");
    VERSION(&f, "1696374425001:0:StateStore");
    run(&f, NULL, NULL, "GET", "missing", NULL);
    RESP(&f, "$-1\r\n");
    NO_VERSION(&f);
    run(&f, NULL, NULL, "DEL", "testkey", NULL);
    RESP(&f, ":1\r\n");
    VERSION(&f, "1696374425001:0:StateStore");
    EVENTS(&f, "DELETE testkey @1696374425001:0:StateStore\n");
    run(&f, NULL, NULL, "DEL", "testkey", NULL);
    RESP(&f, ":0\r\n");
    NO_VERSION(&f);
    EVENTS(&f, "");
    fx_free(&f);
}

TEST(engine_every_error_text)
{
    struct fx f;
    fx_init(&f);
    const char *ts = now_ts(&f);
    char future[64], ft_future[64];
    snprintf(future, sizeof future, "%llu:0:c", (unsigned long long)(f.now + 60001));
    snprintf(ft_future, sizeof ft_future, "%llu:0:c", (unsigned long long)(f.now + 60001));
    run(&f, future, NULL, "SET", "k", "v", NULL);
    RESP(&f, "-ERR the request timestamp is too far in the future; ensure that the client and "
             "broker system clocks are synchronized\r\n");
    ASSERT_EQ(f.status, SS_E_TS_FUTURE);
    run(&f, future, NULL, "GET", "k", NULL);
    ASSERT_EQ(f.status, SS_E_TS_FUTURE);
    run(&f, ts, "1:0:x", "SET", "k", "v", NULL); /* the key is now fenced by 1:0:x */
    RESP(&f, "+OK\r\n");
    run(&f, ts, NULL, "SET", "k", "v", NULL);
    RESP(&f, "-ERR a fencing token is required for this request\r\n");
    run(&f, ts, ft_future, "SET", "k", "v", NULL);
    RESP(&f, "-ERR the request fencing token timestamp is too far in the future; ensure that the "
             "client and broker system clocks are synchronized\r\n");
    run(&f, ts, "0:5:x", "SET", "k", "v", NULL);
    RESP(&f, "-ERR the request fencing token is a lower version than the fencing token "
             "protecting the resource\r\n");
    run(&f, ts, NULL, "SET", "", "v", NULL);
    RESP(&f, "-ERR the key length is zero\r\n");
    run(&f, ts, NULL, "SET", "k", NULL);
    RESP(&f, "-ERR wrong number of arguments\r\n");
    run(&f, ts, NULL, "FROB", "k", NULL);
    RESP(&f, "-ERR unknown command\r\n");
    run(&f, ts, NULL, "SET", "k2", "v", "PX", "0", NULL);
    RESP(&f, "-ERR syntax error\r\n");
    run(&f, NULL, NULL, "SET", "k2", "v", NULL);
    RESP(&f, "-ERR missing timestamp\r\n");
    run(&f, "12:34", NULL, "SET", "k2", "v", NULL);
    RESP(&f, "-ERR malformed timestamp\r\n");
    run(&f, ts, "bogus", "DEL", "k", NULL);
    RESP(&f, "-ERR malformed timestamp\r\n");
    run(&f, "x:y:z", NULL, "GET", "k", NULL);
    RESP(&f, "-ERR malformed timestamp\r\n");
    /* Payloads that are not one whole request. */
    ss_buf_clear(&f.resp);
    static const uint8_t partial[] = "*2\r\n$3\r\nGET\r\n$1\r\n";
    static const uint8_t trailing[] = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\nX";
    ss_exec x = {.payload = partial, .payload_len = sizeof partial - 1, .now_ms = f.now,
                 .response = &f.resp};
    ASSERT_EQ(ss_engine_exec(f.eng, &x), SS_E_SYNTAX);
    ASSERT_BUF(f.resp, "-ERR syntax error\r\n");
    ss_buf_clear(&f.resp);
    x.payload = trailing;
    x.payload_len = sizeof trailing - 1;
    ASSERT_EQ(ss_engine_exec(f.eng, &x), SS_E_SYNTAX);
    ASSERT_BUF(f.resp, "-ERR syntax error\r\n");
    ss_buf_clear(&f.resp);
    x.payload = NULL;
    x.payload_len = 0;
    ASSERT_EQ(ss_engine_exec(f.eng, &x), SS_E_SYNTAX);
    ASSERT_BUF(f.resp, "-ERR syntax error\r\n");
    /* Quota: the last of the twelve ("not authorized" is decided by the
     * authorization layer in front of the engine). */
    fx_free(&f);
    fx_init(&f);
    fx_close(&f);
    f.so.max_keys = 2; /* "k" from above, and one more */
    fx_open(&f);
    run(&f, now_ts(&f), NULL, "SET", "a", "v", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, now_ts(&f), NULL, "SET", "b", "v", NULL);
    RESP(&f, "-ERR the quota has been exceeded\r\n");
    NO_VERSION(&f);
    EVENTS(&f, "SET a=v @1700000000002:0:StateStore\n"); /* the clock resumed */
    run(&f, NULL, NULL, "GET", "b", NULL);
    RESP(&f, "$-1\r\n");
    fx_free(&f);
}

TEST(engine_nx_nex)
{
    struct fx f;
    fx_init(&f);
    const char *ts = now_ts(&f);
    run(&f, ts, NULL, "SET", "lock", "me", "NX", NULL);
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1700000000001:0:StateStore");
    run(&f, ts, NULL, "SET", "lock", "me", "NX", NULL);
    RESP(&f, ":-1\r\n");
    VERSION(&f, "1700000000001:0:StateStore"); /* the current version */
    run(&f, ts, NULL, "SET", "lock", "other", "NEX", NULL);
    RESP(&f, ":-1\r\n");
    VERSION(&f, "1700000000001:0:StateStore");
    EVENTS(&f, "SET lock=me @1700000000001:0:StateStore\n");
    run(&f, ts, NULL, "SET", "lock", "me", "nex", NULL);
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1700000000002:0:StateStore");
    run(&f, ts, NULL, "SET", "fresh", "x", "NEX", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, NULL, NULL, "GET", "lock", NULL);
    RESP(&f, "$2\r\nme\r\n");
    VERSION(&f, "1700000000002:0:StateStore");
    EVENTS(&f, "SET lock=me @1700000000002:0:StateStore\nSET fresh=x @1700000000003:0:StateStore\n");
    fx_free(&f);
}

TEST(engine_px_and_expiry_at_exact_millisecond)
{
    struct fx f;
    fx_init(&f);
    run(&f, now_ts(&f), NULL, "SET", "k", "v", "PX", "1000", NULL);
    RESP(&f, "+OK\r\n");
    fx_drop_events(&f);
    f.now = T0 + 999;
    run(&f, NULL, NULL, "GET", "k", NULL);
    RESP(&f, "$1\r\nv\r\n");
    f.now = T0 + 1000; /* the deadline itself: already absent */
    run(&f, NULL, NULL, "GET", "k", NULL);
    RESP(&f, "$-1\r\n");
    NO_VERSION(&f);
    EVENTS(&f, "DELETE k @1700000000001:0:StateStore expired\n");
    run(&f, NULL, NULL, "DEL", "k", NULL);
    RESP(&f, ":0\r\n");
    EVENTS(&f, "");

    /* The same through the sweep, with several keys due in order. */
    f.now = T0 + 2000;
    run(&f, now_ts(&f), NULL, "SET", "b", "1", "PX", "20", NULL);
    run(&f, now_ts(&f), NULL, "SET", "a", "1", "PX", "10", NULL);
    run(&f, now_ts(&f), NULL, "SET", "c", "1", "PX", "30", NULL);
    fx_drop_events(&f);
    ASSERT_EQ(ss_engine_expire(f.eng, T0 + 2009, 100), 0);
    ASSERT_EQ(ss_engine_expire(f.eng, T0 + 2020, 100), 2);
    EVENTS(&f, "DELETE a @1700000002002:0:StateStore expired\n"
               "DELETE b @1700000002001:0:StateStore expired\n");
    ASSERT_EQ(ss_engine_expire(f.eng, T0 + 5000, 0), 0); /* bounded work */
    ASSERT_EQ(ss_engine_expire(f.eng, T0 + 5000, 100), 1);
    EVENTS(&f, "DELETE c @1700000002003:0:StateStore expired\n");
    /* At most max keys per call, however many are due. */
    for (int i = 0; i < 3; i++)
        run(&f, now_ts(&f), NULL, "SET", i == 0 ? "x" : i == 1 ? "y" : "z", "1", "PX", "10", NULL);
    fx_drop_events(&f);
    ASSERT_EQ(ss_engine_expire(f.eng, T0 + 5000, 2), 2);
    ASSERT_EQ(ss_engine_expire(f.eng, T0 + 5000, 2), 1);
    fx_free(&f);
}

TEST(engine_set_without_px_clears_expiry)
{
    struct fx f;
    fx_init(&f);
    run(&f, now_ts(&f), NULL, "SET", "k", "v1", "PX", "100", NULL);
    run(&f, now_ts(&f), NULL, "SET", "k", "v2", NULL);
    f.now = T0 + 100000;
    ASSERT_EQ(ss_engine_expire(f.eng, f.now, 100), 0);
    run(&f, NULL, NULL, "GET", "k", NULL);
    RESP(&f, "$2\r\nv2\r\n");
    /* And a new PX replaces the old one. */
    run(&f, now_ts(&f), NULL, "SET", "k", "v3", "PX", "50", NULL);
    run(&f, now_ts(&f), NULL, "SET", "k", "v4", "PX", "500", NULL);
    f.now += 100;
    run(&f, NULL, NULL, "GET", "k", NULL);
    RESP(&f, "$2\r\nv4\r\n");
    /* A failed NX leaves the expiry alone. */
    run(&f, now_ts(&f), NULL, "SET", "k", "other", "NX", NULL);
    RESP(&f, ":-1\r\n");
    f.now += 400;
    run(&f, NULL, NULL, "GET", "k", NULL);
    RESP(&f, "$-1\r\n");
    fx_free(&f);
}

TEST(engine_fencing)
{
    struct fx f;
    fx_init(&f);
    const char *ts = now_ts(&f);
    /* The lock pattern: the lock's version is the token. */
    run(&f, ts, NULL, "SET", "lock", "holder", "NEX", "PX", "10000", NULL);
    char token[SS_HLC_TEXT_MAX + 1];
    snprintf(token, sizeof token, "%s", f.version);
    run(&f, ts, token, "SET", "res", "v1", NULL);
    RESP(&f, "+OK\r\n");
    /* Equal token: accepted. */
    run(&f, ts, token, "SET", "res", "v2", NULL);
    RESP(&f, "+OK\r\n");
    /* Missing, older, future tokens: refused, nothing changes. */
    run(&f, ts, NULL, "SET", "res", "v3", NULL);
    RESP(&f, "-ERR a fencing token is required for this request\r\n");
    run(&f, ts, "1700000000000:0:StateStore", "SET", "res", "v3", NULL);
    RESP(&f, "-ERR the request fencing token is a lower version than the fencing token "
             "protecting the resource\r\n");
    run(&f, ts, "1700000000001:0:StateStorf", "SET", "res", "v3", NULL); /* newer by node id */
    RESP(&f, "+OK\r\n");
    run(&f, ts, token, "SET", "res", "v4", NULL); /* the old token is now lower */
    ASSERT_EQ(f.status, SS_E_FT_LOWER);
    run(&f, ts, "1700000060001:0:c", "SET", "res", "v4", NULL);
    ASSERT_EQ(f.status, SS_E_FT_FUTURE);
    run(&f, ts, "1700000060000:0:c", "SET", "res", "v5", NULL); /* exactly 60 s ahead: fine */
    RESP(&f, "+OK\r\n");
    run(&f, NULL, NULL, "GET", "res", NULL); /* reads need no token */
    RESP(&f, "$2\r\nv5\r\n");
    /* DEL and VDEL are fenced too. */
    run(&f, ts, NULL, "DEL", "res", NULL);
    ASSERT_EQ(f.status, SS_E_FT_REQUIRED);
    run(&f, ts, "1700000000001:0:StateStorf", "VDEL", "res", "v5", NULL);
    ASSERT_EQ(f.status, SS_E_FT_LOWER);
    run(&f, ts, "1700000060000:0:c", "VDEL", "res", "wrong", NULL);
    RESP(&f, ":-1\r\n");
    NO_VERSION(&f);
    run(&f, ts, "1700000060000:0:c", "VDEL", "res", "v5", NULL);
    RESP(&f, ":1\r\n");
    /* The token went away with the key. */
    run(&f, ts, NULL, "SET", "res", "free", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, ts, NULL, "DEL", "res", NULL);
    RESP(&f, ":1\r\n");
    /* A token expires with its key. */
    run(&f, ts, token, "SET", "tmp", "v", "PX", "10", NULL);
    f.now += 10;
    run(&f, now_ts(&f), NULL, "SET", "tmp", "v", NULL);
    RESP(&f, "+OK\r\n");
    /* DEL with a token on an unfenced key is fine. */
    run(&f, ts, token, "DEL", "tmp", NULL);
    RESP(&f, ":1\r\n");
    fx_free(&f);
}

TEST(engine_vdel_answers)
{
    struct fx f;
    fx_init(&f);
    run(&f, NULL, NULL, "VDEL", "k", "v", NULL);
    RESP(&f, ":0\r\n");
    run(&f, now_ts(&f), NULL, "SET", "k", "v", NULL);
    fx_drop_events(&f);
    run(&f, NULL, NULL, "VDEL", "k", "x", NULL);
    RESP(&f, ":-1\r\n");
    EVENTS(&f, "");
    run(&f, NULL, NULL, "VDEL", "k", "v", NULL);
    RESP(&f, ":1\r\n");
    VERSION(&f, "1700000000001:0:StateStore");
    EVENTS(&f, "DELETE k @1700000000001:0:StateStore\n");
    fx_free(&f);
}

/* VDEL, NEX and fencing tokens compare every byte and the length: a value
 * or token that is a prefix of the stored one, or has it as a prefix, is
 * another value (a lock held by worker-10 is not worker-1's to release). */
TEST(engine_conditions_compare_every_byte_and_the_length)
{
    struct fx f;
    fx_init(&f);
    const char *ts = now_ts(&f);
    run(&f, ts, NULL, "SET", "k", "vv", NULL);
    VERSION(&f, "1700000000001:0:StateStore");
    fx_drop_events(&f);
    static const char *const others[] = {"v", "vvv", ""};
    for (int i = 0; i < 3; i++) {
        run(&f, NULL, NULL, "VDEL", "k", others[i], NULL);
        RESP(&f, ":-1\r\n");
        NO_VERSION(&f);
        run(&f, ts, NULL, "SET", "k", others[i], "NEX", NULL);
        RESP(&f, ":-1\r\n");
        VERSION(&f, "1700000000001:0:StateStore");
    }
    EVENTS(&f, "");
    run(&f, NULL, NULL, "GET", "k", NULL);
    RESP(&f, "$2\r\nvv\r\n");
    VERSION(&f, "1700000000001:0:StateStore");
    /* An empty value is a value like any other. */
    run(&f, ts, NULL, "SET", "e", "", NULL);
    VERSION(&f, "1700000000002:0:StateStore");
    run(&f, NULL, NULL, "VDEL", "e", "x", NULL);
    RESP(&f, ":-1\r\n");
    run(&f, ts, NULL, "SET", "e", "x", "NEX", NULL);
    RESP(&f, ":-1\r\n");
    run(&f, NULL, NULL, "GET", "e", NULL);
    RESP(&f, "$0\r\n\r\n");
    run(&f, ts, NULL, "SET", "e", "", "NEX", NULL);
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1700000000003:0:StateStore");
    run(&f, NULL, NULL, "VDEL", "e", "", NULL);
    RESP(&f, ":1\r\n");
    VERSION(&f, "1700000000003:0:StateStore");

    /* The lock pattern with holders whose names are prefixes of each other. */
    run(&f, ts, NULL, "SET", "lock", "worker-10", "NX", NULL);
    RESP(&f, "+OK\r\n");
    fx_drop_events(&f);
    run(&f, NULL, NULL, "VDEL", "lock", "worker-1", NULL);
    RESP(&f, ":-1\r\n");
    run(&f, NULL, NULL, "VDEL", "lock", "worker-100", NULL);
    RESP(&f, ":-1\r\n");
    run(&f, ts, NULL, "SET", "lock", "worker-1", "NEX", NULL);
    RESP(&f, ":-1\r\n");
    EVENTS(&f, "");
    run(&f, NULL, NULL, "VDEL", "lock", "worker-10", NULL);
    RESP(&f, ":1\r\n");
    VERSION(&f, "1700000000004:0:StateStore");

    /* Fencing tokens whose node ids are prefixes of each other: the
     * shorter one is the lower version (hlc.h's order), the longer one the
     * higher, and neither is equal to the other. */
    run(&f, ts, "1700000000001:0:node10", "SET", "res", "a", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, ts, "1700000000001:0:node1", "SET", "res", "b", NULL);
    RESP(&f, "-ERR the request fencing token is a lower version than the fencing token "
             "protecting the resource\r\n");
    run(&f, ts, "1700000000001:0:node1", "VDEL", "res", "a", NULL);
    ASSERT_EQ(f.status, SS_E_FT_LOWER);
    run(&f, ts, "1700000000001:0:node1", "DEL", "res", NULL);
    ASSERT_EQ(f.status, SS_E_FT_LOWER);
    run(&f, NULL, NULL, "GET", "res", NULL);
    RESP(&f, "$1\r\na\r\n");
    run(&f, ts, "1700000000001:0:node100", "SET", "res", "c", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, ts, "1700000000001:0:node10", "SET", "res", "d", NULL); /* now the lower one */
    ASSERT_EQ(f.status, SS_E_FT_LOWER);
    /* Counters and walls of different lengths compare as numbers. */
    run(&f, ts, "1700000000001:10:n", "SET", "num", "a", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, ts, "1700000000001:9:n", "SET", "num", "b", NULL);
    ASSERT_EQ(f.status, SS_E_FT_LOWER);
    run(&f, ts, "1700000000001:10:n", "VDEL", "num", "a", NULL);
    RESP(&f, ":1\r\n");
    fx_free(&f);
}

TEST(engine_versions_strictly_increase)
{
    struct fx f;
    fx_init(&f);
    ss_hlc prev = {0};
    uint64_t walls[] = {T0, T0, T0 - 5000, T0 - 1, T0 + 1, T0 + 1, 5, T0 + 2};
    for (size_t i = 0; i < sizeof walls / sizeof walls[0]; i++) {
        f.now = walls[i];
        char ts[64];
        snprintf(ts, sizeof ts, "%llu:0:c", (unsigned long long)walls[i]);
        run(&f, ts, NULL, "SET", i % 2 ? "a" : "b", "v", NULL);
        RESP(&f, "+OK\r\n");
        ss_hlc v;
        ASSERT_EQ(ss_hlc_parse((const uint8_t *)f.version, strlen(f.version), &v), SS_OK);
        ASSERT_EQ(ss_hlc_compare(&v, &prev), 1);
        prev = v;
    }
    /* Across a restart too. */
    fx_close(&f);
    fx_open(&f);
    f.now = T0 - 100000;
    run(&f, "1:0:c", NULL, "SET", "a", "v", NULL);
    ss_hlc v;
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)f.version, strlen(f.version), &v), SS_OK);
    ASSERT_EQ(ss_hlc_compare(&v, &prev), 1);
    /* A client ahead of us pulls versions forward; never above 60 s. */
    f.now = T0 + 10;
    run(&f, "1700000060010:3:c", NULL, "SET", "a", "v", NULL);
    VERSION(&f, "1700000060010:4:StateStore");
    fx_free(&f);
}

TEST(engine_keynotify)
{
    struct fx f;
    fx_init(&f);
    run(&f, NULL, NULL, "KEYNOTIFY", "absent", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, NULL, NULL, "KEYNOTIFY", "absent", NULL); /* again */
    RESP(&f, "+OK\r\n");
    run(&f, NULL, NULL, "KEYNOTIFY", "absent", "STOP", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, NULL, NULL, "KEYNOTIFY", "other", "stop", NULL);
    RESP(&f, ":0\r\n");
    /* GET and KEYNOTIFY do not need __ts and never need a token. */
    run(&f, now_ts(&f), "1:1:x", "SET", "k", "v", NULL);
    run(&f, NULL, NULL, "KEYNOTIFY", "k", NULL);
    RESP(&f, "+OK\r\n");
    /* A handler's refusal becomes the protocol answer. */
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "w%d", i);
        run(&f, NULL, NULL, "KEYNOTIFY", key, NULL);
    }
    RESP(&f, "-ERR the quota has been exceeded\r\n");
    fx_free(&f);
}

static void check_key_size(size_t n)
{
    struct fx f;
    fx_init(&f);
    uint8_t *key = malloc(n);
    for (size_t i = 0; i < n; i++)
        key[i] = (uint8_t)(i % 251);
    ss_bytes argv[5] = {{(const uint8_t *)"SET", 3}, {key, n}, {(const uint8_t *)"v", 1},
                        {(const uint8_t *)"PX", 2}, {(const uint8_t *)"50", 2}};
    run_argv(&f, now_ts(&f), NULL, 5, argv);
    RESP(&f, "+OK\r\n");
    argv[0].data = (const uint8_t *)"GET";
    run_argv(&f, NULL, NULL, 2, argv);
    RESP(&f, "$1\r\nv\r\n");
    f.now += 50;
    fx_drop_events(&f);
    ASSERT_EQ(ss_engine_expire(f.eng, f.now, 10), 1);
    fx_events(&f);
    ASSERT_TRUE(strncmp(f.events, "DELETE ", 7) == 0);
    run_argv(&f, NULL, NULL, 2, argv);
    RESP(&f, "$-1\r\n");
    free(key);
    fx_free(&f);
}

TEST(engine_long_keys)
{
    check_key_size(6500);
    check_key_size(32000);
}

TEST(engine_binary_keys_and_large_values)
{
    struct fx f;
    fx_init(&f);
    static const uint8_t key[] = {'k', 0, '\r', '\n', 0x80, 0xfe, 0xff};
    size_t vn = 1 << 20;
    uint8_t *val = malloc(vn);
    for (size_t i = 0; i < vn; i++)
        val[i] = (uint8_t)(i ^ (i >> 9));
    val[0] = 0;
    val[1] = '\r';
    val[2] = '\n';
    ss_bytes argv[3] = {{(const uint8_t *)"SET", 3}, {key, sizeof key}, {val, vn}};
    run_argv(&f, now_ts(&f), NULL, 3, argv);
    RESP(&f, "+OK\r\n");
    argv[0].data = (const uint8_t *)"GET";
    run_argv(&f, NULL, NULL, 2, argv);
    ss_reply r;
    ASSERT_EQ(ss_codec_decode_reply(f.resp.data, f.resp.len, &r), SS_OK);
    ASSERT_EQ(r.kind, SS_REPLY_BULK);
    ASSERT_MEM(r.str.data, r.str.len, val, vn);
    /* VDEL compares all bytes: one byte off is a mismatch. */
    val[vn - 1] ^= 1;
    argv[0].data = (const uint8_t *)"VDEL";
    argv[0].len = 4;
    run_argv(&f, NULL, NULL, 3, argv);
    RESP(&f, ":-1\r\n");
    val[vn - 1] ^= 1;
    run_argv(&f, NULL, NULL, 3, argv);
    RESP(&f, ":1\r\n");
    /* Empty values are values. */
    ss_bytes e[3] = {{(const uint8_t *)"SET", 3}, {key, sizeof key}, {NULL, 0}};
    run_argv(&f, now_ts(&f), NULL, 3, e);
    e[0].data = (const uint8_t *)"GET";
    run_argv(&f, NULL, NULL, 2, e);
    RESP(&f, "$0\r\n\r\n");
    ASSERT_TRUE(f.has_version);
    free(val);
    fx_free(&f);
}

TEST(engine_key_and_value_length_limits)
{
    struct fx f;
    memset(&f, 0, sizeof f);
    f.so = ss_store_options_default();
    f.now = T0;
    ss_engine_options eo = {.max_key_len = 4, .max_value_len = 3};
    fx_attach(&f, &eo);
    run(&f, now_ts(&f), NULL, "SET", "abcd", "xyz", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, now_ts(&f), NULL, "SET", "abcde", "x", NULL);
    RESP(&f, "-ERR the quota has been exceeded\r\n");
    run(&f, now_ts(&f), NULL, "SET", "abcd", "wxyz", NULL);
    RESP(&f, "-ERR the quota has been exceeded\r\n");
    run(&f, NULL, NULL, "VDEL", "abcd", "wxyz", NULL); /* only SET values are limited */
    RESP(&f, ":-1\r\n");
    run(&f, NULL, NULL, "GET", "abcd", NULL);
    RESP(&f, "$3\r\nxyz\r\n");
    fx_free(&f);
}

/* Request limits given to the engine are the ones it applies. */
TEST(engine_request_limits_as_given)
{
    struct fx f;
    memset(&f, 0, sizeof f);
    f.so = ss_store_options_default();
    f.now = T0;
    ss_engine_options eo = {.limits = {.max_args = 8, .max_size = 40}};
    fx_attach(&f, &eo);
    run(&f, now_ts(&f), NULL, "SET", "k", "0123456789", NULL);
    RESP(&f, "+OK\r\n");
    run(&f, now_ts(&f), NULL, "SET", "k", "0123456789012345678901234567890123456789", NULL);
    RESP(&f, "-ERR syntax error\r\n");
    run(&f, NULL, NULL, "GET", "k", NULL);
    RESP(&f, "$10\r\n0123456789\r\n");
    fx_free(&f);
}

TEST(engine_quota_bytes_and_persistence)
{
    struct fx f;
    fx_init(&f);
    fx_close(&f);
    f.so.max_bytes = 300;
    fx_open(&f);
    run(&f, now_ts(&f), "5:5:t", "SET", "a", "0123456789", "PX", "600000", NULL);
    RESP(&f, "+OK\r\n");
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    run(&f, now_ts(&f), NULL, "SET", "b", big, NULL);
    RESP(&f, "-ERR the quota has been exceeded\r\n");
    fx_close(&f);
    fx_open(&f);
    run(&f, NULL, NULL, "GET", "a", NULL);
    RESP(&f, "$10\r\n0123456789\r\n");
    VERSION(&f, "1700000000001:0:StateStore");
    run(&f, NULL, NULL, "GET", "b", NULL);
    RESP(&f, "$-1\r\n");
    run(&f, now_ts(&f), NULL, "DEL", "a", NULL); /* token survived */
    ASSERT_EQ(f.status, SS_E_FT_REQUIRED);
    f.now += 600000; /* and so did the expiry */
    run(&f, NULL, NULL, "GET", "a", NULL);
    RESP(&f, "$-1\r\n");
    fx_free(&f);
}

/* A commit that fails undoes the whole batch; the engine goes on. */
TEST(engine_failed_commit_undoes_batch)
{
    struct fx f;
    fx_init(&f);
    fx_close(&f);
    f.so.map_size = 1 << 20;
    f.so.max_bytes = (uint64_t)1 << 30;
    fx_open(&f);
    run(&f, now_ts(&f), NULL, "SET", "keep", "v", NULL);
    fx_drop_events(&f);
    static char val[3001];
    memset(val, 'q', 3000);
    int i;
    for (i = 0; i < 2000; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        run(&f, now_ts(&f), NULL, "SET", key, val, NULL);
        if (f.status != SS_OK)
            break;
    }
    RESP(&f, "-ERR the quota has been exceeded\r\n");
    ASSERT_EQ(ss_engine_commit(f.eng, f.now), SS_E_QUOTA);
    EVENTS(&f, ""); /* what was not committed never reaches the feed */
    run(&f, NULL, NULL, "GET", "k0", NULL);
    RESP(&f, "$-1\r\n");
    run(&f, NULL, NULL, "GET", "keep", NULL);
    RESP(&f, "$1\r\nv\r\n");
    fx_free(&f);
}

static bool deny_some(void *ctx, void *caller, enum ss_access access, ss_bytes key)
{
    (void)ctx;
    (void)caller;
    bool secret = key.len >= 6 && memcmp(key.data, "secret", 6) == 0;
    bool hidden = key.len == 6 && memcmp(key.data, "hidden", 6) == 0;
    return !(secret && access == SS_ACCESS_WRITE) && !hidden;
}

TEST(engine_authorization)
{
    struct fx f;
    fx_init(&f);
    run(&f, now_ts(&f), NULL, "SET", "hidden", "v", NULL); /* before the rules */
    run(&f, now_ts(&f), NULL, "SET", "secret1", "v", NULL);
    fx_close(&f);
    ss_engine_options eo = {.on_authorize = deny_some, .on_keynotify = on_keynotify,
                            .keynotify_ctx = &f};
    fx_attach(&f, &eo);
    /* Existing or not, the answer is the same. */
    run(&f, NULL, NULL, "GET", "hidden", NULL);
    RESP(&f, "-ERR not authorized\r\n");
    NO_VERSION(&f);
    run(&f, NULL, NULL, "GET", "hidden-not", NULL);
    RESP(&f, "$-1\r\n");
    run(&f, NULL, NULL, "KEYNOTIFY", "hidden", NULL);
    RESP(&f, "-ERR not authorized\r\n");
    run(&f, NULL, NULL, "GET", "secret1", NULL); /* read is allowed */
    RESP(&f, "$1\r\nv\r\n");
    run(&f, NULL, NULL, "SET", "secret1", "x", NULL); /* before the missing __ts */
    RESP(&f, "-ERR not authorized\r\n");
    run(&f, NULL, NULL, "DEL", "secret2", NULL);
    RESP(&f, "-ERR not authorized\r\n");
    run(&f, NULL, NULL, "VDEL", "secret1", "v", NULL);
    RESP(&f, "-ERR not authorized\r\n");
    run(&f, NULL, NULL, "GET", "secret1", NULL);
    RESP(&f, "$1\r\nv\r\n");
    EVENTS(&f, "");
    fx_free(&f);
}

/* A backend that stands for one reached over the network, wrapping the
 * LMDB one: the first read of "slow" is under way (SS_E_PENDING), the
 * first write of "raced" finds the key changed (SS_E_CONFLICT). */
struct remote_like {
    ss_backend base;
    ss_backend *inner;
    int slow_reads[3], raced_writes;
};

static bool is_key(ss_bytes k, const char *s)
{
    return k.len == strlen(s) && memcmp(k.data, s, k.len) == 0;
}

/* Besides: "slow", "slowget" and "slowdel" are pending at their first
 * read; what
 * is stored under "ahead" and "far" reads as written by a clock 50 ms and
 * 10 s ahead of ours; "gone" reads as deleted at a version ahead of ours
 * (by another broker, say); reading "broken" fails. */
static int rl_read(void *impl, ss_bytes key, ss_record *rec, ss_revision *rev)
{
    struct remote_like *r = impl;
    static const char *const pending_once[] = {"slow", "slowget", "slowdel"};
    for (int i = 0; i < 3; i++)
        if (is_key(key, pending_once[i]) && r->slow_reads[i]++ == 0)
            return SS_E_PENDING;
    int rc = r->inner->ops->read(r->inner->impl, key, rec, rev);
    if (rc == SS_OK && (is_key(key, "ahead") || is_key(key, "far"))) {
        rec->version.wall += is_key(key, "ahead") ? 50 : 10000;
        rec->version.counter = 7;
    }
    if (is_key(key, "broken"))
        return SS_E_IO;
    if (rc == SS_E_NOTFOUND && is_key(key, "gone")) {
        rec->version = (ss_hlc){.wall = T0 + 20000, .counter = 3, .node_len = 5};
        memcpy(rec->version.node, "other", 5);
    }
    return rc;
}

static int rl_put(void *impl, ss_bytes key, const ss_record *rec, ss_revision decided_on)
{
    struct remote_like *r = impl;
    if (is_key(key, "raced") && r->raced_writes++ == 0)
        return SS_E_CONFLICT;
    return r->inner->ops->put(r->inner->impl, key, rec, decided_on);
}

static int rl_del(void *impl, const ss_change *c, ss_revision decided_on)
{
    struct remote_like *r = impl;
    return r->inner->ops->del(r->inner->impl, c, decided_on);
}

static uint64_t rl_next_expiry(void *impl)
{
    struct remote_like *r = impl;
    return r->inner->ops->next_expiry(r->inner->impl);
}

static int rl_pop_due(void *impl, uint64_t now_ms, ss_buf *key, ss_hlc *version)
{
    struct remote_like *r = impl;
    return r->inner->ops->pop_due(r->inner->impl, now_ms, key, version);
}

static int rl_save_clock(void *impl, uint64_t wall, uint32_t counter)
{
    struct remote_like *r = impl;
    return r->inner->ops->save_clock(r->inner->impl, wall, counter);
}

static void rl_load_clock(void *impl, uint64_t *wall, uint32_t *counter)
{
    struct remote_like *r = impl;
    r->inner->ops->load_clock(r->inner->impl, wall, counter);
}

static int rl_commit(void *impl, uint64_t now_ms)
{
    struct remote_like *r = impl;
    return r->inner->ops->commit(r->inner->impl, now_ms);
}

static void rl_abort(void *impl)
{
    struct remote_like *r = impl;
    r->inner->ops->abort(r->inner->impl);
}

static void rl_settled(void *impl, int rc)
{
    struct remote_like *r = impl;
    r->inner->ops->settled(r->inner->impl, rc);
}

static const struct ss_backend_ops rl_ops = {
    .name = "remote-like", .read = rl_read, .put = rl_put, .del = rl_del,
    .next_expiry = rl_next_expiry, .pop_due = rl_pop_due, .save_clock = rl_save_clock,
    .load_clock = rl_load_clock, .commit = rl_commit, .abort = rl_abort, .settled = rl_settled};

/* Through the interface: a request whose read is under way, or whose write
 * was decided on data that changed, is not answered and changes nothing;
 * run again, it is answered as if it had run once. */
/* An engine on the LMDB backend seen through remote_like. */
static void rl_open(struct fx *f, struct remote_like *rl)
{
    memset(f, 0, sizeof *f);
    f->so = ss_store_options_default();
    f->now = T0;
    f->so.path = test_tmpdir();
    ASSERT_EQ(ss_store_open(&f->so, &f->store), SS_OK);
    ASSERT_EQ(ss_backend_lmdb_new(f->store, &f->be), SS_OK);
    *rl = (struct remote_like){.base = {.ops = &rl_ops}, .inner = f->be};
    rl->base.impl = rl;
    ASSERT_EQ(ss_engine_new(&rl->base, NULL, &f->eng), SS_OK);
}

static void rl_close(struct fx *f)
{
    ASSERT_EQ(ss_engine_commit(f->eng, f->now), SS_OK);
    ss_engine_free(f->eng);
    ss_backend_lmdb_free(f->be);
    ss_store_close(f->store);
    ss_buf_free(&f->resp);
}

TEST(engine_request_runs_again_after_pending_read_or_conflict)
{
    struct fx f;
    struct remote_like rl;
    rl_open(&f, &rl);

    run(&f, now_ts(&f), NULL, "SET", "slow", "v1", NULL);
    ASSERT_EQ(f.status, SS_E_PENDING);
    ASSERT_EQ(f.resp.len, 0);
    NO_VERSION(&f);
    EVENTS(&f, "");
    run(&f, now_ts(&f), NULL, "SET", "slow", "v1", NULL);
    RESP(&f, "+OK\r\n");
    EVENTS(&f, "SET slow=v1 @1700000000001:0:StateStore\n");

    run(&f, now_ts(&f), NULL, "SET", "raced", "r", NULL);
    ASSERT_EQ(f.status, SS_E_CONFLICT);
    ASSERT_EQ(f.resp.len, 0);
    NO_VERSION(&f);
    EVENTS(&f, "");
    run(&f, NULL, NULL, "GET", "raced", NULL);
    RESP(&f, "$-1\r\n");
    run(&f, now_ts(&f), NULL, "SET", "raced", "r", NULL);
    RESP(&f, "+OK\r\n");
    /* Versions still increase: the one issued to the conflicting run is
     * never seen, the next is above it. */
    VERSION(&f, "1700000000003:0:StateStore");
    EVENTS(&f, "SET raced=r @1700000000003:0:StateStore\n");
    ASSERT_EQ(rl.slow_reads[0], 2);
    ASSERT_EQ(rl.raced_writes, 2);
    /* A GET or DEL whose read is pending answers nothing yet either. */
    run(&f, NULL, NULL, "GET", "slowget", NULL);
    ASSERT_EQ(f.status, SS_E_PENDING);
    ASSERT_EQ(f.resp.len, 0);
    run(&f, NULL, NULL, "GET", "slowget", NULL);
    RESP(&f, "$-1\r\n");
    run(&f, NULL, NULL, "DEL", "slowdel", NULL);
    ASSERT_EQ(f.status, SS_E_PENDING);
    ASSERT_EQ(f.resp.len, 0);
    run(&f, NULL, NULL, "DEL", "slowdel", NULL);
    RESP(&f, ":0\r\n");
    rl_close(&f);
}

/* A version the backend reports (of a stored record, or of the deletion
 * of an absent key) that is ahead of the engine's clock is still
 * exceeded by the next write: by a raised wall clock when it is close
 * (hlc.h's SS_HLC_MAX_LEAD_MS), by the counter when it is far. */
TEST(engine_versions_pass_those_the_backend_reports)
{
    struct fx f;
    struct remote_like rl;
    rl_open(&f, &rl);
    const char *ts = now_ts(&f);
    run(&f, ts, NULL, "SET", "ahead", "v1", NULL);
    VERSION(&f, "1700000000001:0:StateStore");
    run(&f, ts, NULL, "SET", "ahead", "v2", NULL); /* reads 1700000000051:7 */
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1700000000052:0:StateStore");
    run(&f, ts, NULL, "SET", "far", "v1", NULL);
    VERSION(&f, "1700000000053:0:StateStore");
    run(&f, ts, NULL, "SET", "far", "v2", NULL); /* reads 1700000010053:7 */
    VERSION(&f, "1700000010053:8:StateStore");
    run(&f, ts, NULL, "SET", "gone", "v", "NX", NULL); /* absent; deleted at 1700000020000:3:other */
    RESP(&f, "+OK\r\n");
    VERSION(&f, "1700000020000:4:StateStore");
    ss_hlc last = ss_engine_clock(f.eng);
    char text[SS_HLC_TEXT_MAX + 1];
    text[ss_hlc_format(&last, text)] = '\0';
    ASSERT_STR(text, strlen(text), "1700000020000:4:StateStore");
    /* A read that fails fails the write: it is not taken for absence. */
    run(&f, ts, NULL, "SET", "broken", "v", NULL);
    ASSERT_EQ(f.status, SS_E_IO);
    NO_VERSION(&f);
    EVENTS(&f, "SET ahead=v1 @1700000000001:0:StateStore\nSET ahead=v2 @1700000000052:0:StateStore\n"
               "SET far=v1 @1700000000053:0:StateStore\nSET far=v2 @1700000010053:8:StateStore\n"
               "SET gone=v @1700000020000:4:StateStore\n");
    rl_close(&f);
}
