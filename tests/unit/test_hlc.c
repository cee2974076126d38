/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* test_hlc.c - HLC parsing, formatting, ordering and the server clock. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../../core/buf.h"
#include "../../core/errors.h"
#include "../../core/hlc.h"
#include "../test.h"

#define LIT(s) (const uint8_t *)(s), sizeof(s) - 1

static ss_hlc hlc(const char *text)
{
    ss_hlc h;
    if (ss_hlc_parse((const uint8_t *)text, strlen(text), &h) != SS_OK)
        test_fail(__FILE__, __LINE__, text);
    return h;
}

static void check_format(const ss_hlc *h, const char *want)
{
    char out[SS_HLC_TEXT_MAX];
    size_t n = ss_hlc_format(h, out);
    ASSERT_MEM(out, n, want, strlen(want));
}

TEST(hlc_parse_and_format)
{
    ss_hlc h = hlc("1696374425000:1:StateStore");
    ASSERT_EQ(h.wall, 1696374425000ull);
    ASSERT_EQ(h.counter, 1);
    ASSERT_STR(h.node, h.node_len, "StateStore");
    check_format(&h, "1696374425000:1:StateStore");
    /* The SDKs' padded form %015d:%05d:<uuid>. */
    h = hlc("001696374425000:00007:5e2e8a1e-7b38-4c7f-9f3c-0c8a0a2f2b1d");
    ASSERT_EQ(h.wall, 1696374425000ull);
    ASSERT_EQ(h.counter, 7);
    check_format(&h, "1696374425000:7:5e2e8a1e-7b38-4c7f-9f3c-0c8a0a2f2b1d");
    h = hlc("0:0:n");
    check_format(&h, "0:0:n");
    h = hlc("18446744073709551615:4294967295:x");
    ASSERT_EQ(h.wall, UINT64_MAX);
    ASSERT_EQ(h.counter, UINT32_MAX);
    check_format(&h, "18446744073709551615:4294967295:x");
    h = hlc("5:6:");
    ASSERT_EQ(h.node_len, 0);
}

/* Every magnitude, both sides of each power of ten, and a spread of
 * pseudo-random values: the digits are printf's. */
TEST(hlc_numbers_format_like_printf)
{
    uint64_t x = 0x9E3779B97F4A7C15ull, p = 1;
    for (int i = 0; i < 4000; i++) {
        uint64_t v;
        if (i < 1000) {
            v = (uint64_t)i;
        } else if (i < 1060) {
            int k = (i - 1000) / 3;
            if ((i - 1000) % 3 == 0)
                p = k == 0 ? 1 : p * 10;
            v = p - 1 + (uint64_t)((i - 1000) % 3); /* 10^k - 1, 10^k, 10^k + 1 */
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v = x >> (x % 64);
        }
        char got[20], want[24];
        size_t n = ss_u64_format(v, got);
        int m = snprintf(want, sizeof want, "%" PRIu64, v);
        ASSERT_MEM(got, n, want, (size_t)m);
    }
    char got[20];
    ASSERT_MEM(got, ss_u64_format(UINT64_MAX, got), "18446744073709551615", 20);
}

TEST(hlc_parse_rejects_garbage)
{
    static const char *bad[] = {
        "",          "1",          "1:2",        "1:2:n:x",   ":2:n",     "1::n",
        "a:2:n",     "1:b:n",      "-1:2:n",     "1:-2:n",    "+1:2:n",   "1 :2:n",
        "1:2 :n",    "0x1:2:n",    "1.5:2:n",    "18446744073709551616:0:n",
        "1:4294967296:n",          "99999999999999999999999:0:n",
        "0000000000000000000000001:0:n", /* more digits than any padding */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ss_hlc h;
        if (ss_hlc_parse((const uint8_t *)bad[i], strlen(bad[i]), &h) != SS_E_TS_MALFORMED)
            test_fail(__FILE__, __LINE__, bad[i]);
    }
    char longnode[300] = "1:2:";
    memset(longnode + 4, 'n', 256);
    ss_hlc h;
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)longnode, 260, &h), SS_E_TS_MALFORMED);
    ASSERT_EQ(ss_hlc_parse((const uint8_t *)longnode, 259, &h), SS_OK);
    ASSERT_EQ(ss_hlc_parse(LIT("1:2:a\0b"), &h), SS_OK); /* node ids are bytes */
    ASSERT_EQ(h.node_len, 3);
}

TEST(hlc_compare)
{
    ss_hlc a = hlc("10:5:B"), b = hlc("11:0:A"), c = hlc("10:6:A"), d = hlc("10:5:C"),
           e = hlc("10:5:BB"), f = hlc("000010:00005:B");
    ASSERT_EQ(ss_hlc_compare(&a, &b), -1);
    ASSERT_EQ(ss_hlc_compare(&b, &a), 1);
    ASSERT_EQ(ss_hlc_compare(&a, &c), -1);
    ASSERT_EQ(ss_hlc_compare(&a, &d), -1);
    ASSERT_EQ(ss_hlc_compare(&a, &e), -1);
    ASSERT_EQ(ss_hlc_compare(&a, &f), 0);
    /* Each the other way round: node ids by their bytes, then a longer
     * one (of which the shorter is a prefix) after. */
    ASSERT_EQ(ss_hlc_compare(&c, &a), 1);
    ASSERT_EQ(ss_hlc_compare(&d, &a), 1);
    ASSERT_EQ(ss_hlc_compare(&e, &a), 1);
    ASSERT_EQ(ss_hlc_compare(&e, &d), -1);
    ASSERT_EQ(ss_hlc_compare(&f, &a), 0);
}

TEST(hlc_clock_receive_rule)
{
    ss_clock c;
    ASSERT_EQ(ss_clock_init(&c, "StateStore", 10), SS_OK);
    /* PROTOCOL.md 4: identical clocks, request 1696374425000:0:CLIENT. */
    ss_hlc ts = hlc("1696374425000:0:CLIENT");
    ss_hlc v = ss_clock_next(&c, 1696374425000ull, &ts, NULL);
    check_format(&v, "1696374425000:1:StateStore");
    /* Same millisecond again: the counter grows. */
    v = ss_clock_next(&c, 1696374425000ull, NULL, NULL);
    check_format(&v, "1696374425000:2:StateStore");
    /* Physical time moves on: counter restarts. */
    v = ss_clock_next(&c, 1696374425005ull, NULL, NULL);
    check_format(&v, "1696374425005:0:StateStore");
    /* A request ahead of us (within the skew) pulls the clock forward. */
    ts = hlc("1696374425100:7:CLIENT");
    v = ss_clock_next(&c, 1696374425006ull, &ts, NULL);
    check_format(&v, "1696374425100:8:StateStore");
    /* A request behind: the server clock wins. */
    ts = hlc("1:99:CLIENT");
    v = ss_clock_next(&c, 1696374425006ull, &ts, NULL);
    check_format(&v, "1696374425100:9:StateStore");
    /* A previous version with the same (wall, counter) but a bigger node id
     * is still exceeded. */
    ss_hlc prev = hlc("1696374425100:9:ZZZZ");
    v = ss_clock_next(&c, 1696374425006ull, NULL, &prev);
    check_format(&v, "1696374425100:10:StateStore");
    ASSERT_EQ(ss_hlc_compare(&v, &prev), 1);
}

TEST(hlc_clock_never_goes_backwards)
{
    ss_clock c;
    ss_clock_init(&c, "N", 1);
    ss_hlc prev = ss_clock_next(&c, 5000, NULL, NULL);
    /* Stalled and backwards wall clocks. */
    uint64_t walls[] = {5000, 5000, 4000, 1, 4999, 5000, 5001, 5001, 100};
    for (size_t i = 0; i < sizeof walls / sizeof walls[0]; i++) {
        ss_hlc v = ss_clock_next(&c, walls[i], NULL, NULL);
        ASSERT_EQ(ss_hlc_compare(&v, &prev), 1);
        prev = v;
    }
    ASSERT_EQ(prev.wall, 5001);
}

TEST(hlc_clock_counter_limit)
{
    ss_clock c;
    ss_clock_init(&c, "N", 1);
    ss_clock_restore(&c, 1000, SS_HLC_COUNTER_MAX - 1);
    ss_hlc v = ss_clock_next(&c, 1000, NULL, NULL);
    ASSERT_EQ(v.wall, 1000);
    ASSERT_EQ(v.counter, SS_HLC_COUNTER_MAX);
    v = ss_clock_next(&c, 1000, NULL, NULL);
    ASSERT_EQ(v.wall, 1001);
    ASSERT_EQ(v.counter, 0);
    /* A client counter above the limit never leaks into our stamps. */
    ss_hlc ts = hlc("2000:4294967295:C");
    v = ss_clock_next(&c, 1000, &ts, NULL);
    ASSERT_EQ(v.wall, 2001);
    ASSERT_EQ(v.counter, 0);
    /* restore never lowers */
    ss_clock_restore(&c, 5, 5);
    ASSERT_EQ(c.wall, 2001);
    /* At the end of time the clock stays there: it never wraps to 0. */
    ss_clock_restore(&c, UINT64_MAX, SS_HLC_COUNTER_MAX - 1);
    v = ss_clock_next(&c, 1000, NULL, NULL);
    ASSERT_TRUE(v.wall == UINT64_MAX && v.counter == SS_HLC_COUNTER_MAX);
    v = ss_clock_next(&c, 1000, NULL, NULL);
    ASSERT_TRUE(v.wall == UINT64_MAX && v.counter == SS_HLC_COUNTER_MAX);
    ts = hlc("18446744073709551615:4294967295:x");
    v = ss_clock_issue(&c, 1000, &ts, NULL);
    ASSERT_TRUE(v.wall == UINT64_MAX && v.counter == SS_HLC_COUNTER_MAX);
}

TEST(hlc_clock_issue)
{
    ss_clock c;
    ASSERT_EQ(ss_clock_init(&c, "StateStore", 10), SS_OK);
    /* A request stamped in the millisecond it arrives: the next millisecond,
     * counter 0 (not the same millisecond with counter 1). */
    ss_hlc ts = hlc("1696374425000:0:CLIENT");
    ss_hlc v = ss_clock_issue(&c, 1696374425000ull, &ts, NULL);
    check_format(&v, "1696374425001:0:StateStore");
    /* A request behind real time: real time, counter 0. */
    ts = hlc("1696374425500:3:CLIENT");
    v = ss_clock_issue(&c, 1696374426000ull, &ts, NULL);
    check_format(&v, "1696374426000:0:StateStore");
    /* Renewals seconds apart differ only in the wall clock, whether or not
     * the request falls in the server's millisecond. */
    ts = hlc("1696374428000:0:CLIENT");
    v = ss_clock_issue(&c, 1696374428000ull, &ts, NULL);
    check_format(&v, "1696374428001:0:StateStore");
    ts = hlc("1696374430000:0:CLIENT");
    v = ss_clock_issue(&c, 1696374430001ull, &ts, NULL);
    check_format(&v, "1696374430001:0:StateStore");
    /* Several versions in one millisecond borrow later milliseconds. */
    v = ss_clock_issue(&c, 1696374430001ull, NULL, NULL);
    check_format(&v, "1696374430002:0:StateStore");
    /* The clock keeps what it issued: the receive rule goes on from it. */
    ss_clock probe = c;
    v = ss_clock_next(&probe, 1696374430001ull, NULL, NULL);
    check_format(&v, "1696374430002:1:StateStore");
    /* A previous version with a huge counter and a larger node id. */
    ss_hlc prev = hlc("1696374430002:4294967295:ZZZZ");
    v = ss_clock_issue(&c, 1696374430001ull, NULL, &prev);
    check_format(&v, "1696374430003:0:StateStore");
    ASSERT_EQ(ss_hlc_compare(&v, &prev), 1);
    /* A request ahead of us (within the skew, beyond the lead): its wall
     * clock with the counter raised, as by the receive rule. */
    ts = hlc("1696374440000:7:CLIENT");
    v = ss_clock_issue(&c, 1696374430001ull, &ts, NULL);
    check_format(&v, "1696374440000:8:StateStore");
    /* Still beyond the lead: counting goes on at that millisecond... */
    v = ss_clock_issue(&c, 1696374430001ull, NULL, NULL);
    check_format(&v, "1696374440000:9:StateStore");
    /* ...until real time comes within the lead again. */
    v = ss_clock_issue(&c, 1696374440000ull - SS_HLC_MAX_LEAD_MS + 1, NULL, NULL);
    check_format(&v, "1696374440001:0:StateStore");
}

TEST(hlc_clock_issue_bursts)
{
    ss_clock c;
    ss_clock_init(&c, "N", 1);
    /* Many versions in one millisecond: strictly increasing, never more
     * than the lead ahead of real time, counting once the lead is used up. */
    ss_hlc prev = ss_clock_issue(&c, 5000, NULL, NULL);
    for (unsigned i = 0; i < 3 * SS_HLC_MAX_LEAD_MS; i++) {
        ss_hlc ts = prev;
        ss_hlc v = ss_clock_issue(&c, 5000, i % 2 ? &ts : NULL, NULL);
        ASSERT_EQ(ss_hlc_compare(&v, &prev), 1);
        ASSERT_TRUE(v.wall <= 5000 + SS_HLC_MAX_LEAD_MS);
        ASSERT_TRUE(v.counter == 0 || v.wall == 5000 + SS_HLC_MAX_LEAD_MS);
        prev = v;
    }
    ASSERT_TRUE(prev.counter > 0);
    /* The counter limit still moves on to the next millisecond. */
    ss_clock_restore(&c, 9000, SS_HLC_COUNTER_MAX);
    ss_hlc v = ss_clock_issue(&c, 8000, NULL, NULL);
    ASSERT_EQ(v.wall, 9001);
    ASSERT_EQ(v.counter, 0);
    /* A clock that went back: versions keep growing. */
    v = ss_clock_issue(&c, 1, NULL, NULL);
    ASSERT_EQ(v.wall, 9001);
    ASSERT_EQ(v.counter, 1);
}

TEST(hlc_skew_and_node_checks)
{
    uint64_t now = 1700000000000ull;
    ss_hlc h = {.wall = now + 60000};
    ASSERT_TRUE(!ss_hlc_too_far_ahead(&h, now));
    h.wall = now + 60001;
    ASSERT_TRUE(ss_hlc_too_far_ahead(&h, now));
    h.wall = 0;
    ASSERT_TRUE(!ss_hlc_too_far_ahead(&h, now));
    h.wall = UINT64_MAX;
    ASSERT_TRUE(ss_hlc_too_far_ahead(&h, now));
    ss_clock c;
    ASSERT_EQ(ss_clock_init(&c, "", 0), SS_E_INVAL);
    ASSERT_EQ(ss_clock_init(&c, "a:b", 3), SS_E_INVAL);
}
