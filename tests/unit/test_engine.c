/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_engine.c - PROTOCOL.md sections 2-6 through the engine, with a
 * fake clock (engine_fixture.h): SET, GET and DEL as the protocol's
 * example shows them, versions, KEYNOTIFY, long and binary keys, large
 * values. Conditions, expiry, errors and a backend like a remote one are
 * in test_engine_*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/codec.h"
#include "../../core/errors.h"
#include "../test.h"
#include "engine_fixture.h"

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
