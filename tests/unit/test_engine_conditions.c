/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_engine_conditions.c - the conditions on a write (PROTOCOL.md 2, 3
 * and 5) through the engine: NX and NEX, VDEL, fencing tokens; each
 * compares every byte and the length. */
#include <stdio.h>
#include <string.h>

#include "../../core/errors.h"
#include "../test.h"
#include "engine_fixture.h"

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
