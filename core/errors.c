/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* errors.c - texts and names of the status codes listed in errors.h. */
#include "errors.h"

#include <stddef.h>
#include <string.h>

struct ss_err_entry {
    int code;
    int wire;
    const char *name;
    const char *text;
};

static const struct ss_err_entry ss_err_table[] = {
#define SS_ERR_ROW_(name, value, wire, text) {(value), (wire), #name, (text)},
    SS_ERRORS(SS_ERR_ROW_)
#undef SS_ERR_ROW_
};

static const struct ss_err_entry *ss_err__err_find(int code)
{
    for (size_t i = 0; i < sizeof ss_err_table / sizeof ss_err_table[0]; i++)
        if (ss_err_table[i].code == code)
            return &ss_err_table[i];
    return NULL;
}

const char *ss_strerror(int code)
{
    if (code == SS_OK)
        return "success";
    const struct ss_err_entry *e = ss_err__err_find(code);
    return e ? e->text : "unknown error";
}

const char *ss_errname(int code)
{
    if (code == SS_OK)
        return "OK";
    const struct ss_err_entry *e = ss_err__err_find(code);
    return e ? e->name : "UNKNOWN";
}

bool ss_err_is_wire(int code)
{
    const struct ss_err_entry *e = ss_err__err_find(code);
    return e != NULL && e->wire;
}

int ss_err_from_wire(const char *text, size_t n)
{
    for (size_t i = 0; i < sizeof ss_err_table / sizeof ss_err_table[0]; i++) {
        const struct ss_err_entry *e = &ss_err_table[i];
        if (e->wire && strlen(e->text) == n && memcmp(e->text, text, n) == 0)
            return e->code;
    }
    return SS_E_SERVER;
}
