/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* pattern.c - SCAN's key patterns (pattern.h).
 *
 * Compiling follows the glob crate's Pattern::new step by step, over the
 * pattern's characters, so that both accept and refuse the same patterns
 * and split them into the same tokens. Matching does not copy the crate's
 * recursion (exponential on "*a*a*a*b"-like patterns); it runs the same
 * language as a set of automaton states, which the differential test
 * (tests/interop/globdiff) checks against the crate itself. */
#include "pattern.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"

enum ss_tok_kind {
    SS_TOK_CHAR,   /* the character c */
    SS_TOK_ANY,    /* '?' */
    SS_TOK_SEQ,    /* '*' */
    SS_TOK_RSEQ,   /* '**' as a whole segment, with the '/' after it */
    SS_TOK_WITHIN, /* [...] */
    SS_TOK_EXCEPT, /* [!...] */
};

struct ss_tok {
    enum ss_tok_kind kind;
    uint32_t c;
    size_t cls, ncls; /* classes: their ranges, ranges[cls .. cls + ncls) */
};

struct ss_range {
    uint32_t lo, hi; /* a member: lo == hi */
};

struct ss_pattern {
    struct ss_tok *toks;
    size_t ntoks;
    struct ss_range *ranges;
    size_t nranges;
    uint8_t *prefix;
    size_t prefix_len;
    /* Two sets of states for matching: before token i (i = ntoks: the
     * end), and inside a '**' at token i. */
    uint8_t *cur, *next;
};

size_t ss_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2, v = b & 0x1fu, min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3, v = b & 0x0fu, min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4, v = b & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0u) != 0x80u)
            return 0;
        v = (v << 6) | (s[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffffu || (v >= 0xd800u && v <= 0xdfffu))
        return 0;
    *cp = v;
    return len;
}

void ss_pattern_free(ss_pattern *p)
{
    if (p == NULL)
        return;
    free(p->toks);
    free(p->ranges);
    free(p->prefix);
    free(p->cur);
    free(p->next);
    free(p);
}

/* The members and ranges of a class, as the crate's parse_char_specifiers
 * reads them: "x-y" is a range wherever a '-' sits between two characters,
 * so a '-' first or last is itself. */
static void ss_pattern__class(ss_pattern *p, const uint32_t *s, size_t n, struct ss_tok *t)
{
    t->cls = p->nranges;
    size_t i = 0;
    while (i < n) {
        struct ss_range *r = &p->ranges[p->nranges++];
        if (i + 3 <= n && s[i + 1] == '-') {
            r->lo = s[i];
            r->hi = s[i + 2];
            i += 3;
        } else {
            r->lo = r->hi = s[i];
            i += 1;
        }
    }
    t->ncls = p->nranges - t->cls;
}

/* The first ']' at or after from, or n. */
static size_t ss_pattern__close(const uint32_t *ch, size_t n, size_t from)
{
    for (size_t k = from; k < n; k++)
        if (ch[k] == ']')
            return k;
    return n;
}

/* Pattern::new over the characters ch[0..n). */
static int ss_pattern__tokens(ss_pattern *p, const uint32_t *ch, size_t n)
{
    size_t i = 0;
    while (i < n) {
        struct ss_tok *t = &p->toks[p->ntoks];
        memset(t, 0, sizeof *t);
        if (ch[i] == '?') {
            t->kind = SS_TOK_ANY;
            p->ntoks++;
            i++;
        } else if (ch[i] == '*') {
            size_t old = i;
            while (i < n && ch[i] == '*')
                i++;
            size_t count = i - old;
            if (count > 2)
                return SS_E_PATTERN_STARS;
            if (count == 1) {
                t->kind = SS_TOK_SEQ;
                p->ntoks++;
                continue;
            }
            /* "**" must be a whole segment: at the start or after '/', and
             * before '/' (taken with it) or the end. */
            if (old != 0 && ch[old - 1] != '/')
                return SS_E_PATTERN_STARS;
            if (i < n && ch[i] == '/')
                i++;
            else if (i != n)
                return SS_E_PATTERN_STARS;
            /* The crate folds a "**" into one just before it, but only
             * past its first token ("tokens_len > 1"): kept as it is. */
            if (!(p->ntoks > 1 && p->toks[p->ntoks - 1].kind == SS_TOK_RSEQ)) {
                t->kind = SS_TOK_RSEQ;
                p->ntoks++;
            }
        } else if (ch[i] == '[') {
            size_t k;
            if (i + 4 <= n && ch[i + 1] == '!') {
                if ((k = ss_pattern__close(ch, n, i + 3)) == n)
                    return SS_E_PATTERN_BRACKET;
                t->kind = SS_TOK_EXCEPT;
                ss_pattern__class(p, ch + i + 2, k - (i + 2), t);
            } else if (i + 3 <= n && ch[i + 1] != '!') {
                if ((k = ss_pattern__close(ch, n, i + 2)) == n)
                    return SS_E_PATTERN_BRACKET;
                t->kind = SS_TOK_WITHIN;
                ss_pattern__class(p, ch + i + 1, k - (i + 1), t);
            } else {
                return SS_E_PATTERN_BRACKET;
            }
            p->ntoks++;
            i = k + 1;
        } else {
            t->kind = SS_TOK_CHAR;
            t->c = ch[i];
            p->ntoks++;
            i++;
        }
    }
    return SS_OK;
}

int ss_pattern_compile(const uint8_t *pat, size_t n, ss_pattern **out)
{
    *out = NULL;
    if (n == 0)
        return SS_E_PATTERN_EMPTY;
    if (n > SS_PATTERN_MAX)
        return SS_E_PATTERN_LONG;
    uint32_t ch[SS_PATTERN_MAX];
    size_t nch = 0;
    for (size_t i = 0; i < n;) {
        size_t len = ss_utf8_decode(pat + i, n - i, &ch[nch]);
        if (len == 0)
            return SS_E_PATTERN_UTF8;
        i += len;
        nch++;
    }
    ss_pattern *p = calloc(1, sizeof *p);
    if (p == NULL)
        return SS_E_NOMEM;
    /* At most one token and one range per character. */
    p->toks = calloc(nch, sizeof *p->toks);
    p->ranges = calloc(nch, sizeof *p->ranges);
    p->cur = calloc(2 * (nch + 1), 1);
    p->next = calloc(2 * (nch + 1), 1);
    p->prefix = malloc(n);
    if (p->toks == NULL || p->ranges == NULL || p->cur == NULL || p->next == NULL || p->prefix == NULL) {
        ss_pattern_free(p);
        return SS_E_NOMEM;
    }
    int rc = ss_pattern__tokens(p, ch, nch);
    if (rc != SS_OK) {
        ss_pattern_free(p);
        return rc;
    }
    /* Every character before the first '*', '?' or '[' is a literal token. */
    while (p->prefix_len < n && pat[p->prefix_len] != '*' && pat[p->prefix_len] != '?' &&
           pat[p->prefix_len] != '[')
        p->prefix_len++;
    memcpy(p->prefix, pat, p->prefix_len);
    *out = p;
    return SS_OK;
}

ss_bytes ss_pattern_prefix(const ss_pattern *p)
{
    ss_bytes b = {p->prefix, p->prefix_len};
    return b;
}

uint64_t ss_pattern_cost(const ss_pattern *p, size_t n)
{
    return (uint64_t)(p->ntoks + 1) * ((uint64_t)n + 1);
}

static bool ss_pattern__in_class(const ss_pattern *p, const struct ss_tok *t, uint32_t c)
{
    for (size_t i = 0; i < t->ncls; i++) {
        const struct ss_range *r = &p->ranges[t->cls + i];
        if (c >= r->lo && c <= r->hi)
            return true;
    }
    return false;
}

/* Enter the state before token i, and with it every state reachable
 * without a character: past each '*' and '**' that may match nothing. */
static void ss_pattern__enter(const ss_pattern *p, uint8_t *set, size_t i)
{
    while (!set[i]) {
        set[i] = 1;
        if (i == p->ntoks || (p->toks[i].kind != SS_TOK_SEQ && p->toks[i].kind != SS_TOK_RSEQ))
            return;
        i++;
    }
}

bool ss_pattern_match(ss_pattern *p, const uint8_t *key, size_t n)
{
    size_t T = p->ntoks;
    /* before[i] = set[i] for i <= T; inside '**' of token i = set[T + 1 + i] */
    uint8_t *cur = p->cur, *next = p->next;
    memset(cur, 0, 2 * (T + 1));
    ss_pattern__enter(p, cur, 0);
    for (size_t at = 0; at < n;) {
        uint32_t c;
        size_t len = ss_utf8_decode(key + at, n - at, &c);
        if (len == 0)
            return false; /* not UTF-8: no pattern matches it */
        at += len;
        memset(next, 0, 2 * (T + 1));
        bool any = false;
        for (size_t i = 0; i < T; i++) {
            bool inside = cur[T + 1 + i];
            if (!cur[i] && !inside)
                continue;
            any = true;
            const struct ss_tok *t = &p->toks[i];
            switch (t->kind) {
            case SS_TOK_SEQ:
                ss_pattern__enter(p, next, i);
                break;
            case SS_TOK_RSEQ:
                /* Goes on inside; leaves after a '/'. */
                next[T + 1 + i] = 1;
                if (c == '/')
                    ss_pattern__enter(p, next, i + 1);
                break;
            case SS_TOK_CHAR:
                if (cur[i] && c == t->c)
                    ss_pattern__enter(p, next, i + 1);
                break;
            case SS_TOK_ANY:
                if (cur[i])
                    ss_pattern__enter(p, next, i + 1);
                break;
            case SS_TOK_WITHIN:
            case SS_TOK_EXCEPT:
                if (cur[i] && ss_pattern__in_class(p, t, c) == (t->kind == SS_TOK_WITHIN))
                    ss_pattern__enter(p, next, i + 1);
                break;
            }
        }
        if (!any)
            return false; /* no state left: the rest need not be read */
        uint8_t *swap = cur;
        cur = next;
        next = swap;
    }
    /* At the end, a '**' may have taken the whole rest of the key. */
    for (size_t i = 0; i < T; i++)
        if (cur[T + 1 + i])
            ss_pattern__enter(p, cur, i + 1);
    return cur[T] != 0;
}
