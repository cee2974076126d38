/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* store_fixture.c - the store as its tests open it, and their records
 * (store_fixture.h). */
#include "store_fixture.h"

#include <string.h>

#include "../../core/errors.h"
#include "../test.h"

ss_store *open_store(ss_store_options *o)
{
    ss_store *s = NULL;
    o->path = test_tmpdir();
    ASSERT_EQ(ss_store_open(o, &s), SS_OK);
    return s;
}

ss_bytes B(const char *s)
{
    ss_bytes b = {(const uint8_t *)s, strlen(s)};
    return b;
}

ss_record rec_of(ss_bytes value, uint64_t wall, uint32_t counter)
{
    ss_record r;
    memset(&r, 0, sizeof r);
    r.value = value;
    r.version.wall = wall;
    r.version.counter = counter;
    r.version.node_len = 10;
    memcpy(r.version.node, "StateStore", 10);
    return r;
}

void put(ss_store *s, ss_bytes key, const ss_record *r)
{
    ASSERT_EQ(ss_store_put(s, key, r), SS_OK);
}
