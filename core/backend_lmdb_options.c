/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_lmdb_options.c - the LMDB backend's own options
 * (backend_lmdb.h lists them). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_lmdb.h"
#include "errors.h"
#include "option.h"

#define SS_LMDB_OFF(field) offsetof(ss_backend_lmdb_config, field)

/* In the order of enum ss_sync_policy. */
static const char *const ss_lmdb_sync_words[] = {"always", "periodic", NULL};

static const struct ss_option_spec ss_lmdb_options[] = {
    {"data_dir", SS_OPTION_PATH, SS_LMDB_OFF(data_dir), 0, 0, NULL},
    {"fsync", SS_OPTION_WORD, SS_LMDB_OFF(sync), 0, 0, ss_lmdb_sync_words},
    {"fsync_interval_ms", SS_OPTION_U64, SS_LMDB_OFF(sync_interval_ms), 1, 3600000, NULL},
    {"checkpoint_interval_ms", SS_OPTION_U64, SS_LMDB_OFF(checkpoint_interval_ms), 1, 3600000, NULL},
    {"journal_max_bytes", SS_OPTION_U64, SS_LMDB_OFF(journal_max_bytes), 4096, (uint64_t)1 << 40, NULL},
    {"map_size", SS_OPTION_U64, SS_LMDB_OFF(map_size), 0, (uint64_t)1 << 48, NULL},
    {"compact_on_start", SS_OPTION_BOOL, SS_LMDB_OFF(compact_on_start), 0, 0, NULL},
    {"test_fail_write_at", SS_OPTION_U64, SS_LMDB_OFF(test_fail_write_at), 0, UINT64_MAX / 2, NULL},
    {"test_fail_sync_at", SS_OPTION_U64, SS_LMDB_OFF(test_fail_sync_at), 0, UINT64_MAX / 2, NULL},
};
#define SS_LMDB_OPTIONS (sizeof ss_lmdb_options / sizeof ss_lmdb_options[0])

int ss_backend_lmdb_config_init(ss_backend_lmdb_config *c)
{
    memset(c, 0, sizeof *c);
    c->data_dir = strdup(SS_BACKEND_LMDB_DATA_DIR_DEFAULT);
    c->sync = SS_SYNC_PERIODIC;
    c->sync_interval_ms = 1000;
    c->checkpoint_interval_ms = SS_STORE_CHECKPOINT_MS_DEFAULT;
    c->journal_max_bytes = SS_STORE_JOURNAL_MAX_DEFAULT;
    c->max_bytes = SS_STORE_MAX_BYTES_DEFAULT;
    return c->data_dir ? SS_OK : SS_E_NOMEM;
}

int ss_backend_lmdb_config_set(ss_backend_lmdb_config *c, const char *name, const char *value, char *why,
                               size_t why_len)
{
    return ss_option_set(ss_lmdb_options, SS_LMDB_OPTIONS, c, name, value, why, why_len);
}

bool ss_backend_lmdb_config_knows(const char *name)
{
    return ss_option_known(ss_lmdb_options, SS_LMDB_OPTIONS, name);
}

void ss_backend_lmdb_config_describe(const ss_backend_lmdb_config *c, char *out, size_t len)
{
    snprintf(out, len, "backend=lmdb data_dir=%s fsync=%s fsync_interval_ms=%llu checkpoint_interval_ms=%llu "
             "journal_max_bytes=%llu map_size=%llu compact_on_start=%s", c->data_dir,
             ss_lmdb_sync_words[c->sync == SS_SYNC_ALWAYS ? 0 : 1], (unsigned long long)c->sync_interval_ms,
             (unsigned long long)c->checkpoint_interval_ms, (unsigned long long)c->journal_max_bytes,
             (unsigned long long)ss_store_map_size(c->map_size, c->max_bytes), c->compact_on_start ? "true" : "false");
}

void ss_backend_lmdb_config_free(ss_backend_lmdb_config *c)
{
    ss_option_free(ss_lmdb_options, SS_LMDB_OPTIONS, c);
}

ss_store_options ss_backend_lmdb_store_options(const ss_backend_lmdb_config *c)
{
    ss_store_options so = ss_store_options_default();
    so.path = c->data_dir;
    so.max_keys = c->max_keys;
    so.max_bytes = c->max_bytes;
    so.map_size = c->map_size;
    so.sync = c->sync == SS_SYNC_ALWAYS ? SS_SYNC_ALWAYS : SS_SYNC_PERIODIC;
    so.sync_interval_ms = (uint32_t)c->sync_interval_ms;
    so.external_sync = true; /* the backend's worker runs the periodic fsync */
    so.checkpoint_interval_ms = (uint32_t)c->checkpoint_interval_ms;
    so.journal_max_bytes = c->journal_max_bytes;
    so.compact = c->compact_on_start;
    so.fail_write_at = c->test_fail_write_at;
    so.fail_sync_at = c->test_fail_sync_at;
    return so;
}
