/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* cli_util.c - what the tests of the command-line tool share. */
#include "cli_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/buf.h"
#include "../../core/errors.h"
#include "../../core/json.h"
#include "../test.h"

void import_record_line(char *line, size_t n, int i)
{
    char key[16];
    snprintf(key, sizeof key, "key%05d", i);
    ss_buf b64 = SS_BUF_INIT;
    ASSERT_EQ(ss_json_base64(&b64, (const uint8_t *)key, strlen(key)), SS_OK);
    snprintf(line, n, "{\"key_base64\":\"%.*s\",\"value_base64\":\"dg==\",\"version\":\"1700000000000:%d:n\"}\n",
             (int)b64.len, (const char *)b64.data, i);
    ss_buf_free(&b64);
}

void tls_capath(const char *dir)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cd %s && mkdir capath && cp ca.crt capath/ && openssl rehash capath >/dev/null", dir);
    ASSERT_EQ(system(cmd), 0);
}
