/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* scan.c - listing keys with SCAN a page at a time (client.h), as the
 * SDKs' list_keys pager does: the pager owns the pattern and the token of
 * the last page; a page's request is sent only when asked for, and a
 * failed request leaves the token as it was, so that it may be tried
 * again. Invariant: done is set only by an answer without a token. */
#include "client_internal.h"

#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"

struct ss_client_pager {
    ss_client *c; /* borrowed */
    ss_buf pattern;
    ss_buf token;
    bool has_token; /* the pages after the first carry the token */
    bool done;
};

int ss_client_list_keys(ss_client *c, const void *pattern, size_t pattern_len,
                        ss_client_pager **out)
{
    *out = NULL;
    if (c == NULL || pattern == NULL || pattern_len == 0)
        return SS_E_INVAL;
    ss_client_pager *p = calloc(1, sizeof *p);
    if (p == NULL)
        return SS_E_NOMEM;
    if (ss_buf_append(&p->pattern, pattern, pattern_len) != SS_OK) {
        free(p);
        return SS_E_NOMEM;
    }
    p->c = c;
    *out = p;
    return SS_OK;
}

int ss_client_pager_next(ss_client_pager *p, ss_client_page *page)
{
    memset(page, 0, sizeof *page);
    if (p->done) {
        page->end = true;
        return SS_OK;
    }
    ss_bytes argv[3] = {ss_client__w("SCAN"), ss_client__b(p->pattern.data, p->pattern.len),
                        ss_client__b(p->token.data, p->token.len)};
    ss_client_result r;
    int rc = ss_client__call(p->c, SS_ANSWER_SCAN, p->has_token ? 3 : 2, argv, &r);
    if (rc != SS_OK) {
        page->error_text = r.error_text; /* taken */
        r.error_text = NULL;
        ss_client_result_free(&r);
        return rc;
    }
    /* Read into a token of its own, so that a malformed answer leaves the
     * pager's token as it was. */
    ss_buf token = SS_BUF_INIT;
    bool has_token;
    rc = ss_answer_scan(r.value, r.value_len, page, &has_token, &token);
    ss_client_result_free(&r);
    if (rc != SS_OK) {
        ss_buf_free(&token);
        return rc;
    }
    ss_buf_free(&p->token);
    p->token = token;
    p->has_token = has_token;
    p->done = !has_token;
    return SS_OK;
}

bool ss_client_pager_done(const ss_client_pager *p)
{
    return p->done;
}

void ss_client_pager_free(ss_client_pager *p)
{
    if (p == NULL)
        return;
    ss_buf_free(&p->pattern);
    ss_buf_free(&p->token);
    free(p);
}
