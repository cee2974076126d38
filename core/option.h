/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* option.h - settings described by a table: each has a name, a kind, the
 * field it sets in a struct of its owner's, and its bounds. The plugin and
 * each backend keep a table of their own options (plugin/options.c,
 * core/backend_lmdb_options.c, etcd/backend_etcd_options.c) and parse
 * them with these functions, so that a value is checked, and a refusal
 * worded, the same way everywhere. */
#ifndef SS_OPTION_H
#define SS_OPTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ss_option_kind {
    SS_OPTION_STRING, /* char *, a copy; never empty */
    SS_OPTION_PATH,   /* char *, an absolute path */
    SS_OPTION_U64,    /* uint64_t in [min, max] */
    SS_OPTION_BOOL,   /* bool: true or false */
    SS_OPTION_WORD,   /* int: the index of the value in words */
};

struct ss_option_spec {
    const char *name;
    enum ss_option_kind kind;
    size_t offset;             /* of the field in the owner's struct */
    uint64_t min, max;         /* SS_OPTION_U64 */
    const char *const *words;  /* SS_OPTION_WORD: NULL-terminated */
};

/* Set the option called name in base, a struct that table (of n specs)
 * describes. 0; SS_E_NOTFOUND: not one of the table's; SS_E_INVAL: a bad
 * value, *why says what is expected ("must be an integer from 1 to 10");
 * SS_E_NOMEM. */
int ss_option_set(const struct ss_option_spec *table, size_t n, void *base, const char *name,
                  const char *value, char *why, size_t why_len);
/* Is name one of the table's? */
bool ss_option_known(const struct ss_option_spec *table, size_t n, const char *name);
/* Free the strings the table's options hold in base (and clear them). */
void ss_option_free(const struct ss_option_spec *table, size_t n, void *base);

#endif
