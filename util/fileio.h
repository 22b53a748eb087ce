/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whole reads and writes at an offset; not installed. */
#ifndef INTEGRITY_UTIL_FILEIO_H
#define INTEGRITY_UTIL_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* pread/pwrite until len bytes are done: 0, -errno, or -ENODATA when the
 * file ends first (it shrank under us).  EINTR is retried. */
int read_full(int fd, void *buf, size_t len, uint64_t off);
int write_full(int fd, const void *buf, size_t len, uint64_t off);
/* write(2) until len bytes are done, at the file's offset (an O_APPEND
 * file: its end): 0 or -errno.  EINTR is retried. */
int write_all(int fd, const void *buf, size_t len);

#endif
