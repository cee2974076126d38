/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* cli_util.h - what the tests of the command-line tool share: the lines
 * an import reads, and a CA directory for a client certificate alone. */
#ifndef SS_CLI_UTIL_H
#define SS_CLI_UTIL_H

#include <stddef.h>

/* The JSON line (with its newline) of record i, as export writes it:
 * key key%05d, value "v", version 1700000000000:i:n; into line (n bytes). */
void import_record_line(char *line, size_t n, int i);
/* dir/capath: the test CA of tls_certs (dir/ca.crt) under its hash, as
 * OpenSSL finds a CA in a directory (SSL_CERT_DIR, --capath). */
void tls_capath(const char *dir);

#endif
