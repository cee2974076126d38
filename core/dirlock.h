/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* dirlock.h - the exclusive lock of a data directory, the flock on its
 * statestore.lock, as the broker's store and the offline commands
 * (statestore import, restore) take it. */
#ifndef SS_DIRLOCK_H
#define SS_DIRLOCK_H

#include <stdbool.h>

/* Lock the file at path (DIR/statestore.lock), made if absent, without
 * waiting. The descriptor locked (close it to release), or -1 with errno:
 * EWOULDBLOCK when another process holds it; ELOOP when path is a
 * symbolic link (the lock is a file of DIR's own, never what a link
 * names); another when it cannot be opened or locked. *made (may be
 * NULL): the file did not exist before it was opened (set on failure too
 * once it was, so that a caller may remove what it made). */
int ss_dirlock_take(const char *path, bool *made);

#endif
