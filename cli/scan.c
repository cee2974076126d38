/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* scan.c - scan PATTERN: the keys matching a pattern, listed with the
 * protocol's SCAN (PROTOCOL.md section 9) through the client's pager,
 * one bare key per line (or a JSON object per key), page after page as
 * they come, so that a pipe sees the first keys before the last page. */
#include <stdio.h>
#include <string.h>

#include "../core/errors.h"
#include "cli.h"

/* Pages asked for at most: 1000 keys looked at per page, so enough for
 * a store of 10^12 keys, and an end to a server that never ends. */
#define SS_SCAN_PAGES_MAX 1000000000u

int cmd_scan(struct cli *cl, ss_client *c)
{
    const char *pattern = cl->args[0]; /* not empty: main.c refuses that */
    ss_client_pager *p;
    int st = ss_client_list_keys(c, pattern, strlen(pattern), &p);
    if (st != SS_OK) {
        report_failure(cl, "scan", st, NULL);
        return exit_for(st);
    }
    size_t printed = 0;
    int rc = SS_EXIT_OK;
    for (unsigned pages = 0; pages < SS_SCAN_PAGES_MAX && !ss_client_pager_done(p); pages++) {
        ss_client_page page;
        st = ss_client_pager_next(p, &page);
        if (st != SS_OK) {
            ss_client_result why = {.status = st, .error_text = page.error_text};
            fflush(stdout);
            report_failure(cl, "scan", st, &why);
            ss_client_page_free(&page);
            rc = exit_for(st);
            break;
        }
        for (size_t i = 0; i < page.count; i++) {
            if (cl->json) {
                fputs("{\"key\":", stdout);
                out_json_string(page.keys[i], page.lens[i]);
                fputs(",\"key_base64\":\"", stdout);
                out_base64(page.keys[i], page.lens[i]);
                fputs("\"}\n", stdout);
            } else {
                out_line(page.keys[i], page.lens[i]);
            }
        }
        printed += page.count;
        ss_client_page_free(&page);
        fflush(stdout);
    }
    ss_client_pager_free(p);
    if (rc != SS_EXIT_OK)
        return rc;
    if (printed == 0 && !cl->json)
        out_note_terminal("no keys match");
    return printed ? SS_EXIT_OK : SS_EXIT_NOT_FOUND;
}
