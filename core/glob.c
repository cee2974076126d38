/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* glob.c - key patterns (glob.h). */
#include "glob.h"

bool ss_glob_match(const char *pat, size_t plen, const uint8_t *text, size_t n)
{
    /* Iterative matching with one backtrack point: the last '*'. */
    size_t p = 0, t = 0, star_p = SIZE_MAX, star_t = 0;
    while (t < n) {
        if (p < plen && pat[p] == '*') {
            star_p = ++p;
            star_t = t;
            continue;
        }
        if (p < plen) {
            bool esc = pat[p] == '\\' && p + 1 < plen;
            char pc = esc ? pat[p + 1] : pat[p];
            if ((!esc && pc == '?') || (uint8_t)pc == text[t]) {
                p += esc ? 2 : 1;
                t++;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        p = star_p;
        t = ++star_t;
    }
    while (p < plen && pat[p] == '*')
        p++;
    return p == plen;
}
