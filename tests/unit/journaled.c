/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* journaled.c - the store as the journal's tests open it (journaled.h). */
#include "journaled.h"

#include <stdio.h>
#include <sys/stat.h>

#include "../test.h"

ss_store_options journaled(void)
{
    ss_store_options o = ss_store_options_default();
    o.path = test_tmpdir();
    o.sync = SS_SYNC_PERIODIC;
    o.checkpoint_interval_ms = 3600000; /* only what the test asks for */
    return o;
}

off_t journal_size(void)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/journal", test_tmpdir());
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    return st.st_size;
}
