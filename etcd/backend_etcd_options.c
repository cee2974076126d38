/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* backend_etcd_options.c - the etcd backend's own options
 * (backend_etcd.h lists them). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/option.h"
#include "backend_etcd.h"
#include "backend_etcd_state.h"

#define SS_ETCD_OFF(field) offsetof(ss_backend_etcd_config, field)

static const struct ss_option_spec ss_etcd_options[] = {
    {"etcd_endpoints", SS_OPTION_STRING, SS_ETCD_OFF(endpoints), 0, 0, NULL},
    {"etcd_prefix", SS_OPTION_STRING, SS_ETCD_OFF(prefix), 0, 0, NULL},
    {"etcd_ca_file", SS_OPTION_STRING, SS_ETCD_OFF(ca_file), 0, 0, NULL},
    {"etcd_cert_file", SS_OPTION_STRING, SS_ETCD_OFF(cert_file), 0, 0, NULL},
    {"etcd_key_file", SS_OPTION_STRING, SS_ETCD_OFF(key_file), 0, 0, NULL},
    {"etcd_username", SS_OPTION_STRING, SS_ETCD_OFF(username), 0, 0, NULL},
    {"etcd_password", SS_OPTION_STRING, SS_ETCD_OFF(password), 0, 0, NULL},
    {"etcd_timeout_ms", SS_OPTION_U64, SS_ETCD_OFF(timeout_ms), 50, 600000, NULL},
    {"etcd_unavailable_ms", SS_OPTION_U64, SS_ETCD_OFF(unavailable_ms), 1, 3600000, NULL},
    /* 9 at least: a value in chunks, alone in its Txn, takes its key's
     * compare, its guard's and the others every Txn has. */
    {"etcd_max_txn_ops", SS_OPTION_U64, SS_ETCD_OFF(max_txn_ops), SS_ETCD_OTHER_COMPARES + 2, 1000000, NULL},
    {"etcd_max_request_bytes", SS_OPTION_U64, SS_ETCD_OFF(max_request_bytes), (uint64_t)64 << 10,
     (uint64_t)1 << 31, NULL},
    {"etcd_tombstone_ms", SS_OPTION_U64, SS_ETCD_OFF(tombstone_ms), 1000, (uint64_t)7 * 24 * 3600 * 1000, NULL},
    {"etcd_status_interval_ms", SS_OPTION_U64, SS_ETCD_OFF(status_interval_ms), 0, 3600000, NULL},
    {"etcd_sweep_full_ms", SS_OPTION_U64, SS_ETCD_OFF(sweep_full_ms), 100, 86400000, NULL},
    {"etcd_solo_ms", SS_OPTION_U64, SS_ETCD_OFF(solo_ms), 0, 3600000, NULL},
};
#define SS_ETCD_OPTIONS (sizeof ss_etcd_options / sizeof ss_etcd_options[0])

void ss_backend_etcd_config_init(ss_backend_etcd_config *c)
{
    memset(c, 0, sizeof *c);
    c->timeout_ms = 2000;
    c->unavailable_ms = 5000;
    c->max_txn_ops = 128;
    c->max_request_bytes = (uint64_t)3 << 19;
    c->tombstone_ms = SS_BACKEND_ETCD_TOMBSTONE_MS;
    c->sweep_full_ms = SS_BACKEND_ETCD_SWEEP_FULL_MS;
    c->status_interval_ms = SS_BACKEND_ETCD_STATUS_MS;
    c->solo_ms = SS_BACKEND_ETCD_SOLO_MS;
}

int ss_backend_etcd_config_set(ss_backend_etcd_config *c, const char *name, const char *value, char *why,
                               size_t why_len)
{
    return ss_option_set(ss_etcd_options, SS_ETCD_OPTIONS, c, name, value, why, why_len);
}

bool ss_backend_etcd_config_knows(const char *name)
{
    return ss_option_known(ss_etcd_options, SS_ETCD_OPTIONS, name);
}

int ss_backend_etcd_config_check(const ss_backend_etcd_config *c, char *why, size_t why_len)
{
    if (c->endpoints == NULL) {
        snprintf(why, why_len, "plugin_opt_backend etcd needs plugin_opt_etcd_endpoints (comma-separated URLs, "
                 "e.g. http://127.0.0.1:2379)");
        return SS_E_INVAL;
    }
    if (c->password && c->username == NULL) {
        snprintf(why, why_len, "plugin_opt_etcd_password needs plugin_opt_etcd_username");
        return SS_E_INVAL;
    }
    if (c->status_interval_ms != 0 && c->status_interval_ms < 100) {
        snprintf(why, why_len, "plugin_opt_etcd_status_interval_ms: 0 (off) or 100 to 3600000");
        return SS_E_INVAL;
    }
    if ((c->cert_file == NULL) != (c->key_file == NULL)) {
        snprintf(why, why_len, "plugin_opt_etcd_cert_file and plugin_opt_etcd_key_file go together");
        return SS_E_INVAL;
    }
    return SS_OK;
}

void ss_backend_etcd_config_describe(const ss_backend_etcd_config *c, char *out, size_t len)
{
    snprintf(out, len, "backend=etcd etcd_endpoints=%s etcd_prefix=%s etcd_tls=%s etcd_username=%s "
             "etcd_timeout_ms=%llu etcd_unavailable_ms=%llu etcd_max_txn_ops=%llu etcd_max_request_bytes=%llu "
             "etcd_tombstone_ms=%llu etcd_status_interval_ms=%llu etcd_sweep_full_ms=%llu etcd_solo_ms=%llu",
             c->endpoints ? c->endpoints : "(none)",
             c->prefix ? c->prefix : "statestore/", c->ca_file || c->cert_file ? "files" : "system",
             c->username ? c->username : "(none)", (unsigned long long)c->timeout_ms,
             (unsigned long long)c->unavailable_ms, (unsigned long long)c->max_txn_ops,
             (unsigned long long)c->max_request_bytes, (unsigned long long)c->tombstone_ms,
             (unsigned long long)c->status_interval_ms, (unsigned long long)c->sweep_full_ms,
             (unsigned long long)c->solo_ms);
}

void ss_backend_etcd_config_free(ss_backend_etcd_config *c)
{
    if (c->password) /* not left in freed memory */
        explicit_bzero(c->password, strlen(c->password));
    ss_option_free(ss_etcd_options, SS_ETCD_OPTIONS, c);
}

ss_backend_etcd_options ss_backend_etcd_options_of(const ss_backend_etcd_config *c)
{
    ss_backend_etcd_options o = {.endpoints = c->endpoints,
                                 .ca_file = c->ca_file,
                                 .cert_file = c->cert_file,
                                 .key_file = c->key_file,
                                 .username = c->username,
                                 .password = c->password,
                                 .prefix = c->prefix,
                                 .node_id = c->node_id,
                                 .call_timeout_ms = (unsigned)c->timeout_ms,
                                 .unavailable_ms = (unsigned)c->unavailable_ms,
                                 .max_request_bytes = (size_t)c->max_request_bytes,
                                 .max_txn_ops = (unsigned)c->max_txn_ops,
                                 .tombstone_ms = c->tombstone_ms,
                                 .status_interval_ms = (unsigned)c->status_interval_ms,
                                 .sweep_full_ms = c->sweep_full_ms,
                                 .solo_ms = c->solo_ms,
                                 .max_keys = c->max_keys,
                                 .max_bytes = c->max_bytes};
    return o;
}
