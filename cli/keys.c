/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* keys.c - keys [PATTERN] and inspect KEY: the administrative requests
 * KEYS and INSPECT (docs/OPERATIONS.md), printed as text or JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/hex.h"
#include "cli.h"

/* Keys asked for per page. */
#define SS_KEYS_PAGE "500"

/* One "key HEX SIZE VERSION TTL FT" line (without "key "), printed: the
 * fields apart at single spaces, the version and the token unescaped
 * (docs/OPERATIONS.md). */
static bool print_key_line(const struct cli *cl, char *line)
{
    char *f[5], *p = line;
    for (int i = 0; i < 4; i++) {
        f[i] = p;
        if ((p = strchr(p, ' ')) == NULL)
            return false;
        *p++ = '\0';
    }
    f[4] = p;
    if (strchr(f[4], ' ') || !*f[1] || strspn(f[1], "0123456789") != strlen(f[1]) ||
        (strcmp(f[3], "-") != 0 && (!*f[3] || strspn(f[3], "0123456789") != strlen(f[3]))))
        return false;
    bool ttl = strcmp(f[3], "-") != 0, ft = strcmp(f[4], "-") != 0;
    ss_buf kb = SS_BUF_INIT, vb = SS_BUF_INIT, fb = SS_BUF_INIT;
    bool ok = ss_hex_decode(&kb, f[0], strlen(f[0])) == SS_OK &&
              ss_hex_field_decode(&vb, f[2], strlen(f[2])) == SS_OK &&
              (!ft || ss_hex_field_decode(&fb, f[4], strlen(f[4])) == SS_OK);
    if (ok && cl->json) {
        fputs("{\"key\":", stdout);
        out_json_string(kb.data, kb.len);
        fputs(",\"key_base64\":\"", stdout);
        out_base64(kb.data, kb.len);
        printf("\",\"size\":%s,\"version\":", f[1]);
        out_json_string(vb.data, vb.len);
        printf(",\"ttl_ms\":%s,\"fencing_token\":", ttl ? f[3] : "null");
        if (ft)
            out_json_string(fb.data, fb.len);
        else
            fputs("null", stdout);
        puts("}");
    } else if (ok) {
        out_escaped(kb.data, kb.len);
        printf("  size=%s  version=", f[1]);
        out_escaped(vb.data, vb.len);
        if (ttl)
            printf("  ttl=%sms", f[3]);
        if (ft) {
            fputs("  fencing_token=", stdout);
            out_escaped(fb.data, fb.len);
        }
        putchar('\n');
    }
    ss_buf_free(&kb);
    ss_buf_free(&vb);
    ss_buf_free(&fb);
    return ok;
}

/* Print the key lines of an answer; *cursor gets the cursor line's value
 * (malloc'ed; NULL for "-"). false on an answer that does not parse. */
static bool print_answer(const struct cli *cl, char *text, char **cursor, int *printed)
{
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "cursor ", 7) == 0) {
            if (cursor)
                *cursor = strcmp(line + 7, "-") == 0 ? NULL : strdup(line + 7);
        } else if (strncmp(line, "key ", 4) == 0) {
            char *copy = strdup(line + 4);
            bool ok = copy && print_key_line(cl, copy);
            free(copy);
            if (!ok)
                return false;
            (*printed)++;
        } else if (strcmp(line, "absent") != 0) {
            return false;
        }
    }
    return true;
}

int cli_admin_call(struct cli *cl, ss_client *c, const char *what, size_t argc, const char *const *words,
                   ss_client_result *r)
{
    size_t lens[4];
    for (size_t i = 0; i < argc; i++)
        lens[i] = strlen(words[i]);
    int st = ss_client_admin(c, argc, (const void *const *)words, lens, r);
    if (st != SS_OK) {
        if (st == SS_E_SERVER && r->error_text) {
            if (cl->json) /* as every command's errors are, with --json */
                out_json_error(r->error_text, st);
            out_error("%s: %s", what, r->error_text);
        } else {
            report_failure(cl, what, st, r);
        }
        return exit_for(st);
    }
    return SS_EXIT_OK;
}

int cmd_keys(struct cli *cl, ss_client *c)
{
    const char *pattern = cl->nargs ? cl->args[0] : "*";
    char *cursor = NULL;
    int printed = 0;
    for (;;) {
        const char *words[] = {"KEYS", pattern, cursor ? cursor : "", SS_KEYS_PAGE};
        ss_client_result r;
        int rc = cli_admin_call(cl, c, "keys", 4, words, &r);
        free(cursor);
        cursor = NULL;
        if (rc != SS_EXIT_OK) {
            ss_client_result_free(&r);
            return rc;
        }
        bool ok = print_answer(cl, (char *)r.value, &cursor, &printed);
        ss_client_result_free(&r);
        if (!ok) {
            free(cursor);
            cli_fail(cl, SS_E_PROTOCOL, "keys: an answer this tool cannot read");
            return SS_EXIT_PROTOCOL;
        }
        if (cursor == NULL)
            break;
    }
    fflush(stdout);
    if (!printed && !cl->json)
        out_note_terminal("no keys match");
    return printed ? SS_EXIT_OK : SS_EXIT_NOT_FOUND;
}

int cmd_inspect(struct cli *cl, ss_client *c)
{
    const char *words[] = {"INSPECT", cl->args[0]};
    ss_client_result r;
    int rc = cli_admin_call(cl, c, "inspect", 2, words, &r);
    if (rc != SS_EXIT_OK) {
        ss_client_result_free(&r);
        return rc;
    }
    int printed = 0;
    bool ok = print_answer(cl, (char *)r.value, NULL, &printed);
    ss_client_result_free(&r);
    if (!ok) {
        cli_fail(cl, SS_E_PROTOCOL, "inspect: an answer this tool cannot read");
        return SS_EXIT_PROTOCOL;
    }
    if (printed == 0 && cl->json)
        puts("{\"found\":false}");
    else if (printed == 0)
        out_note_terminal("(not found)");
    return printed ? SS_EXIT_OK : SS_EXIT_NOT_FOUND;
}

int cmd_backup(struct cli *cl, ss_client *c)
{
    const char *words[] = {"BACKUP", cl->args[0]};
    ss_client_result r;
    int rc = cli_admin_call(cl, c, "backup", 2, words, &r);
    if (rc == SS_EXIT_OK) {
        /* "backup NAME BYTES" */
        const char *text = (const char *)r.value;
        const char *bytes = strrchr(text, ' ');
        if (strncmp(text, "backup ", 7) != 0 || bytes == NULL) {
            cli_fail(cl, SS_E_PROTOCOL, "backup: an answer this tool cannot read");
            rc = SS_EXIT_PROTOCOL;
        } else if (cl->json) {
            printf("{\"backup\":\"%s\",\"bytes\":%.*s}\n", cl->args[0], (int)strcspn(bytes + 1, "\n"), bytes + 1);
        } else {
            printf("backup %s written: %.*s bytes\n", cl->args[0], (int)strcspn(bytes + 1, "\n"), bytes + 1);
        }
    }
    ss_client_result_free(&r);
    return rc;
}
