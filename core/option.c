/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* option.c - settings described by a table (option.h). */
#include "option.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "errors.h"

static const struct ss_option_spec *ss_option__find(const struct ss_option_spec *table, size_t n,
                                                    const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

bool ss_option_known(const struct ss_option_spec *table, size_t n, const char *name)
{
    return ss_option__find(table, n, name) != NULL;
}

/* A word list for a refusal: "a", "b" or "c". */
static void ss_option__words(const char *const *words, char *out, size_t len)
{
    size_t count = 0, at = 0;
    while (words[count])
        count++;
    out[0] = '\0';
    for (size_t i = 0; i < count && at < len; i++) {
        const char *sep = i == 0 ? "" : i + 1 == count ? " or " : ", ";
        int w = snprintf(out + at, len - at, "%s\"%s\"", sep, words[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

int ss_option_set(const struct ss_option_spec *table, size_t n, void *base, const char *name,
                  const char *value, char *why, size_t why_len)
{
    const struct ss_option_spec *s = ss_option__find(table, n, name);
    if (s == NULL)
        return SS_E_NOTFOUND;
    char *field = (char *)base + s->offset;
    switch (s->kind) {
    case SS_OPTION_STRING:
    case SS_OPTION_PATH: {
        if (value[0] == '\0') {
            snprintf(why, why_len, "must not be empty");
            return SS_E_INVAL;
        }
        /* A relative directory would follow wherever the broker happened
         * to be started (a daemon runs from /): the data would seem lost. */
        if (s->kind == SS_OPTION_PATH && value[0] != '/') {
            snprintf(why, why_len, "must be an absolute path (a relative one would depend on the directory "
                                   "the broker was started from)");
            return SS_E_INVAL;
        }
        char *copy = strdup(value);
        if (copy == NULL)
            return SS_E_NOMEM;
        free(*(char **)field);
        *(char **)field = copy;
        return SS_OK;
    }
    case SS_OPTION_U64: {
        uint64_t v;
        if (ss_parse_u64((const uint8_t *)value, strlen(value), s->max, &v) != SS_OK || v < s->min) {
            snprintf(why, why_len, "must be an integer from %llu to %llu", (unsigned long long)s->min,
                     (unsigned long long)s->max);
            return SS_E_INVAL;
        }
        *(uint64_t *)field = v;
        return SS_OK;
    }
    case SS_OPTION_BOOL:
        if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0) {
            snprintf(why, why_len, "must be true or false");
            return SS_E_INVAL;
        }
        *(bool *)field = strcmp(value, "true") == 0;
        return SS_OK;
    case SS_OPTION_WORD:
        for (int i = 0; s->words[i]; i++) {
            if (strcmp(value, s->words[i]) == 0) {
                *(int *)field = i;
                return SS_OK;
            }
        }
        char list[200];
        ss_option__words(s->words, list, sizeof list);
        snprintf(why, why_len, "must be %s", list);
        return SS_E_INVAL;
    }
    return SS_E_INVAL;
}

void ss_option_free(const struct ss_option_spec *table, size_t n, void *base)
{
    for (size_t i = 0; i < n; i++) {
        if (table[i].kind != SS_OPTION_STRING && table[i].kind != SS_OPTION_PATH)
            continue;
        char **field = (char **)((char *)base + table[i].offset);
        free(*field);
        *field = NULL;
    }
}
