/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_engine_errors.c - what the engine refuses, byte for byte: every
 * error text, the limits on keys, values and requests, the quotas, a
 * commit that fails, authorization. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/errors.h"
#include "../test.h"
#include "engine_fixture.h"

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

/* At the edge of the skew with the counter exhausted, the next version
 * would be 60001 ms ahead: refused too, whether the edge is the request's
 * __ts or the clock's last version. Below it, accepted, and the version
 * stays within 60 s. */
TEST(engine_ts_at_the_skew_edge)
{
    struct fx f;
    fx_init(&f);
    char edge[64];
    snprintf(edge, sizeof edge, "%llu:2147483647:c", (unsigned long long)(f.now + 60000));
    run(&f, edge, NULL, "SET", "edge", "v", NULL);
    ASSERT_EQ(f.status, SS_E_TS_FUTURE);
    snprintf(edge, sizeof edge, "%llu:4294967295:c", (unsigned long long)(f.now + 60000));
    run(&f, edge, NULL, "SET", "edge", "v", NULL);
    ASSERT_EQ(f.status, SS_E_TS_FUTURE);
    snprintf(edge, sizeof edge, "%llu:2147483646:c", (unsigned long long)(f.now + 60000));
    run(&f, edge, NULL, "SET", "edge", "v", NULL);
    RESP(&f, "+OK\r\n");
    char want[64];
    snprintf(want, sizeof want, "%llu:2147483647:StateStore", (unsigned long long)(f.now + 60000));
    VERSION(&f, want);
    /* The clock is now at that edge: in the same millisecond no SET has a
     * version left within the skew, whatever its own __ts or key. */
    run(&f, now_ts(&f), NULL, "SET", "other", "v", NULL);
    ASSERT_EQ(f.status, SS_E_TS_FUTURE);
    run(&f, now_ts(&f), NULL, "SET", "other", "v", "NX", NULL); /* refused, not applied */
    ASSERT_EQ(f.status, SS_E_TS_FUTURE);
    run(&f, now_ts(&f), NULL, "SET", "edge", "v", "NX", NULL); /* issues none: answered */
    RESP(&f, ":-1\r\n");
    run(&f, NULL, NULL, "GET", "other", NULL);
    RESP(&f, "$-1\r\n");
    /* A millisecond on, the next version is 60 000 ms ahead again. */
    f.now++;
    run(&f, now_ts(&f), NULL, "SET", "other", "v", NULL);
    RESP(&f, "+OK\r\n");
    snprintf(want, sizeof want, "%llu:0:StateStore", (unsigned long long)(f.now + 60000));
    VERSION(&f, want);
    /* A request that issues no version takes such a __ts, exactly 60 s
     * ahead and so not refused by the protocol's rule (more than 60 s). */
    snprintf(edge, sizeof edge, "%llu:2147483647:c", (unsigned long long)(f.now + 60000));
    run(&f, edge, NULL, "GET", "edge", NULL);
    RESP(&f, "$1\r\nv\r\n");
    run(&f, edge, NULL, "DEL", "nothing", NULL);
    RESP(&f, ":0\r\n");
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

static bool deny_some(void *ctx, void *caller, enum ss_access access, ss_bytes key, bool quietly)
{
    (void)ctx;
    (void)caller;
    (void)quietly;
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
