/* SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause */
/* private_fs.h - a small filesystem of a test's own, for the tests of a
 * full disk (unit and integration alike). */
#ifndef SS_TEST_PRIVATE_FS_H
#define SS_TEST_PRIVATE_FS_H

/* Mount a tmpfs of size ("16m") at dir (made here), with mount flags
 * (e.g. MS_RDONLY), in a private mount namespace: as root, or else
 * inside a user namespace of this process. Seen by this process and
 * what it starts afterwards, by nobody else. Fails the test if it
 * cannot. */
void private_tmpfs(const char *dir, const char *size, unsigned long flags);

/* Write zeros into path (made here) until the filesystem is full: the
 * last write fails with ENOSPC. */
void fill_filesystem(const char *path);

#endif
