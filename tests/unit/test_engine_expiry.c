/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_engine_expiry.c - PX through the engine: a key is gone from its
 * deadline's millisecond on, whether read or swept (a bounded sweep, in
 * deadline order); a SET without PX clears the expiry, a new PX replaces
 * it. */
#include "../../core/errors.h"
#include "../test.h"
#include "engine_fixture.h"

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
