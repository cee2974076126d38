/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* check.c - reads globdiff's cases from stdin ("PATTERN KEY ANSWER", both in
 * hex, "-" when empty; ANSWER 1, 0, or E for a refused pattern) and compares each with
 * core/pattern.c. Prints every disagreement; exits 1 if there was one, 2
 * if the input was not as expected, or if it held no case. */
#include <stdio.h>
#include <string.h>

#include "../../../core/errors.h"
#include "../../../core/pattern.h"

static int unhex(const char *s, unsigned char *out, size_t *n)
{
    size_t len = strcmp(s, "-") == 0 ? 0 : strlen(s);
    if (len % 2)
        return -1;
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (unsigned char)v;
    }
    *n = len / 2;
    return 0;
}

int main(void)
{
    char pat_hex[4096], key_hex[4096], want[4];
    unsigned char pat[2048], key[2048];
    size_t cases = 0, bad = 0, np, nk;
    int r;
    while ((r = scanf("%4095s %4095s %3s", pat_hex, key_hex, want)) == 3) {
        if (unhex(pat_hex, pat, &np) || unhex(key_hex, key, &nk))
            return 2;
        ss_pattern *p;
        int rc = ss_pattern_compile(pat, np, &p);
        const char *got = rc == SS_E_NOMEM ? "NOMEM" : rc != SS_OK ? "E" : ss_pattern_match(p, key, nk) ? "1" : "0";
        /* The crate takes the empty pattern (it matches the empty key
         * only); SCAN refuses it before matching. */
        if (np == 0 && rc == SS_E_PATTERN_EMPTY)
            got = nk == 0 ? "1" : "0";
        ss_pattern_free(p);
        cases++;
        if (strcmp(got, want) != 0 && bad++ < 50)
            printf("differ: pattern %.*s key %.*s: glob crate %s, ours %s\n", (int)np, (const char *)pat, (int)nk,
                   (const char *)key, want, got);
    }
    if (r != EOF || cases == 0)
        return 2;
    printf("globdiff: %zu cases, %zu differ\n", cases, bad);
    return bad ? 1 : 0;
}
