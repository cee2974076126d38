/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* acl.h - who may read or write which keys.
 *
 * Rules come from a text file, one per line:
 *
 *     user alice           readwrite  *
 *     client gw-01         read       config:*
 *     user bob client b-1  write      bob:*
 *     any                  readwrite  clients:%c:*
 *
 * A rule names its principals (user NAME and/or client ID, all of which
 * must match, or "any"), an access (read: GET and KEYNOTIFY; write: SET,
 * DEL and VDEL; readwrite: both) and a key pattern: the rest of the line,
 * an exact key or a glob where * matches any run of bytes and ? one byte,
 * and \ makes the next character literal. %c and %u stand for the client's
 * own id and username (a rule with %u never matches a client without a
 * username); they match literally, whatever characters they hold. Blank
 * lines and lines starting with # are ignored. A request is allowed when
 * any rule allows it; otherwise it is denied.
 */
#ifndef SS_ACL_H
#define SS_ACL_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "glob.h"

typedef struct ss_acl ss_acl;

enum ss_access { SS_ACCESS_READ = 1, SS_ACCESS_WRITE = 2 };

/* Parse rules from text. 0 and *out (owned by the caller, freed with
 * ss_acl_free), or SS_E_SYNTAX with a message naming the line in err
 * (errlen bytes), or SS_E_NOMEM. */
int ss_acl_parse(const char *text, size_t len, ss_acl **out, char *err, size_t errlen);
/* Read and parse a file: as ss_acl_parse, or SS_E_IO if it cannot be read. */
int ss_acl_load(const char *path, ss_acl **out, char *err, size_t errlen);
void ss_acl_free(ss_acl *a);
size_t ss_acl_rule_count(const ss_acl *a);

/* May the client (id, username: NULL if none) have access to key? */
/* True when a rule for this client grants access to every key: its
 * pattern is "*" (no substitution). For what needs all keys at once
 * (backups), where matching one sample key would be fooled by "?" or
 * "%c". */
bool ss_acl_allows_every_key(const ss_acl *a, const char *client_id, const char *username,
                             enum ss_access access);
bool ss_acl_allows(const ss_acl *a, const char *client_id, const char *username,
                   enum ss_access access, ss_bytes key);

#endif
