/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* acl.c - key access rules: parsing and checking. See acl.h. */
#include "acl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

#define SS_ACL_MAX_PRINCIPALS 4

struct ss_acl_rule {
    char *users[SS_ACL_MAX_PRINCIPALS];
    char *clients[SS_ACL_MAX_PRINCIPALS];
    size_t nusers, nclients;
    int access; /* SS_ACCESS_* bits */
    char *pattern;
    bool substitutes; /* pattern holds %c or %u */
};

struct ss_acl {
    struct ss_acl_rule *rules;
    size_t n, cap;
};

static void ss_acl__rule_free(struct ss_acl_rule *r)
{
    for (size_t i = 0; i < r->nusers; i++)
        free(r->users[i]);
    for (size_t i = 0; i < r->nclients; i++)
        free(r->clients[i]);
    free(r->pattern);
}

void ss_acl_free(ss_acl *a)
{
    if (a == NULL)
        return;
    for (size_t i = 0; i < a->n; i++)
        ss_acl__rule_free(&a->rules[i]);
    free(a->rules);
    free(a);
}

size_t ss_acl_rule_count(const ss_acl *a)
{
    return a->n;
}

/* Next whitespace-separated word of line[*pos..len), or NULL. */
static const char *ss_acl__word(const char *line, size_t len, size_t *pos, size_t *wlen)
{
    size_t i = *pos;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    size_t start = i;
    while (i < len && line[i] != ' ' && line[i] != '\t')
        i++;
    *pos = i;
    *wlen = i - start;
    return i > start ? line + start : NULL;
}

static bool ss_acl__is(const char *w, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(w, lit, n) == 0;
}

static int ss_acl__parse_line(const char *line, size_t len, struct ss_acl_rule *r, const char **why)
{
    memset(r, 0, sizeof *r);
    size_t pos = 0, n;
    const char *w;
    bool any = false;
    for (;;) {
        w = ss_acl__word(line, len, &pos, &n);
        if (w == NULL) {
            *why = "missing access and key pattern";
            return SS_E_SYNTAX;
        }
        if (ss_acl__is(w, n, "any")) {
            any = true;
            continue;
        }
        bool user = ss_acl__is(w, n, "user");
        if (user || ss_acl__is(w, n, "client")) {
            size_t nn;
            const char *name = ss_acl__word(line, len, &pos, &nn);
            if (name == NULL) {
                *why = user ? "user needs a name" : "client needs an id";
                return SS_E_SYNTAX;
            }
            size_t *count = user ? &r->nusers : &r->nclients;
            if (*count == SS_ACL_MAX_PRINCIPALS) {
                *why = "too many principals in one rule";
                return SS_E_SYNTAX;
            }
            char *copy = strndup(name, nn);
            if (copy == NULL)
                return SS_E_NOMEM;
            (user ? r->users : r->clients)[(*count)++] = copy;
            continue;
        }
        break; /* w is the access */
    }
    if (!any && r->nusers == 0 && r->nclients == 0) {
        *why = "a rule starts with user NAME, client ID or any";
        return SS_E_SYNTAX;
    }
    if (any && (r->nusers || r->nclients)) {
        *why = "any cannot be combined with user or client";
        return SS_E_SYNTAX;
    }
    if (ss_acl__is(w, n, "read"))
        r->access = SS_ACCESS_READ;
    else if (ss_acl__is(w, n, "write"))
        r->access = SS_ACCESS_WRITE;
    else if (ss_acl__is(w, n, "readwrite"))
        r->access = SS_ACCESS_READ | SS_ACCESS_WRITE;
    else {
        *why = "access must be read, write or readwrite";
        return SS_E_SYNTAX;
    }
    while (pos < len && (line[pos] == ' ' || line[pos] == '\t'))
        pos++;
    /* A CRLF file's '\r' ends the line, whatever precedes it: `foo\`
     * names the key "foo\". Then trailing blanks go, but not one escaped
     * with a backslash: `foo\ ` names the key "foo " (an odd count of
     * backslashes before it). */
    size_t end = len;
    if (end > pos && line[end - 1] == '\r')
        end--;
    while (end > pos && (line[end - 1] == ' ' || line[end - 1] == '\t')) {
        size_t bs = 0;
        while (end - 1 - bs > pos && line[end - 2 - bs] == '\\')
            bs++;
        if (bs % 2 == 1)
            break;
        end--;
    }
    if (end == pos) {
        *why = "missing key pattern";
        return SS_E_SYNTAX;
    }
    r->pattern = strndup(line + pos, end - pos);
    if (r->pattern == NULL)
        return SS_E_NOMEM;
    r->substitutes = strstr(r->pattern, "%c") || strstr(r->pattern, "%u");
    return SS_OK;
}

int ss_acl_parse(const char *text, size_t len, ss_acl **out, char *err, size_t errlen)
{
    ss_acl *a = calloc(1, sizeof *a);
    if (a == NULL)
        return SS_E_NOMEM;
    size_t lineno = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        const char *line = text + i;
        i += n + 1;
        lineno++;
        size_t s = 0;
        while (s < n && (line[s] == ' ' || line[s] == '\t' || line[s] == '\r'))
            s++;
        if (s == n || line[s] == '#')
            continue;
        /* Names and patterns are C strings: a NUL would cut one short,
         * and a pattern cut short matches more than was written. */
        if (memchr(line, '\0', n)) {
            if (err)
                snprintf(err, errlen, "line %zu: a NUL byte", lineno);
            ss_acl_free(a);
            return SS_E_SYNTAX;
        }
        if (a->n == a->cap) {
            size_t cap = a->cap ? a->cap * 2 : 16;
            struct ss_acl_rule *r = realloc(a->rules, cap * sizeof *r);
            if (r == NULL) {
                ss_acl_free(a);
                return SS_E_NOMEM;
            }
            a->rules = r;
            a->cap = cap;
        }
        const char *why = "out of memory";
        int rc = ss_acl__parse_line(line + s, n - s, &a->rules[a->n], &why);
        if (rc != SS_OK) {
            ss_acl__rule_free(&a->rules[a->n]);
            if (err)
                snprintf(err, errlen, "line %zu: %s", lineno, why);
            ss_acl_free(a);
            return rc;
        }
        a->n++;
    }
    *out = a;
    return SS_OK;
}

int ss_acl_load(const char *path, ss_acl **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (err)
            snprintf(err, errlen, "cannot open %s", path);
        return SS_E_IO;
    }
    ss_buf b = SS_BUF_INIT;
    char chunk[4096];
    size_t got;
    int rc = SS_OK;
    while (rc == SS_OK && (got = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = ss_buf_append(&b, chunk, got);
    if (rc == SS_OK && ferror(f))
        rc = SS_E_IO;
    fclose(f);
    if (rc == SS_OK)
        rc = ss_acl_parse((const char *)b.data, b.len, out, err, errlen);
    else if (err)
        snprintf(err, errlen, "cannot read %s", path);
    ss_buf_free(&b);
    return rc;
}

static bool ss_acl__in(char *const *names, size_t n, const char *who)
{
    if (who == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], who) != 0)
            return false;
    return true;
}

/* The pattern with %c / %u replaced by the id / username, escaped so as
 * to match literally; an escaped character (\%) is copied as it is.
 * False when the rule cannot apply: no such name; a name with a '/' in
 * it, which would reach into another client's keys (the id "a/b", by a
 * rule for devices/%c/ and a star, would own keys of "a"); or no memory. */
static bool ss_acl__expand(const char *pat, const char *id, const char *user, ss_buf *out)
{
    ss_buf_clear(out);
    int rc = SS_OK;
    for (const char *p = pat; *p && rc == SS_OK; p++) {
        if (p[0] == '\\' && p[1]) {
            rc = ss_buf_append(out, p, 2);
            p++;
        } else if (p[0] == '%' && (p[1] == 'c' || p[1] == 'u')) {
            const char *v = p[1] == 'c' ? id : user;
            if (v == NULL || strchr(v, '/'))
                return false;
            for (const char *q = v; *q && rc == SS_OK; q++) {
                if (*q == '*' || *q == '?' || *q == '\\')
                    rc = ss_buf_append(out, "\\", 1);
                if (rc == SS_OK)
                    rc = ss_buf_append(out, q, 1);
            }
            p++;
        } else {
            rc = ss_buf_append(out, p, 1);
        }
    }
    return rc == SS_OK;
}

bool ss_acl_allows_every_key(const ss_acl *a, const char *client_id, const char *username,
                             enum ss_access access)
{
    for (size_t i = 0; i < a->n; i++) {
        const struct ss_acl_rule *r = &a->rules[i];
        if (!(r->access & (int)access) || r->substitutes)
            continue;
        if ((r->nusers && !ss_acl__in(r->users, r->nusers, username)) ||
            (r->nclients && !ss_acl__in(r->clients, r->nclients, client_id)))
            continue;
        /* Only a pattern of stars alone stands for every key. */
        if (r->pattern[0] == '*' && strspn(r->pattern, "*") == strlen(r->pattern))
            return true;
    }
    return false;
}

bool ss_acl_allows(const ss_acl *a, const char *client_id, const char *username,
                   enum ss_access access, ss_bytes key)
{
    ss_buf tmp = SS_BUF_INIT;
    bool ok = false;
    for (size_t i = 0; i < a->n && !ok; i++) {
        const struct ss_acl_rule *r = &a->rules[i];
        if (!(r->access & (int)access))
            continue;
        if ((r->nusers && !ss_acl__in(r->users, r->nusers, username)) ||
            (r->nclients && !ss_acl__in(r->clients, r->nclients, client_id)))
            continue;
        if (!r->substitutes) {
            ok = ss_glob_match(r->pattern, strlen(r->pattern), key.data, key.len);
        } else if (ss_acl__expand(r->pattern, client_id, username, &tmp)) {
            ok = ss_glob_match((const char *)tmp.data, tmp.len, key.data, key.len);
        }
    }
    ss_buf_free(&tmp);
    return ok;
}
