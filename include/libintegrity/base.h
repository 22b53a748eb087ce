/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: the version and what every layer shares.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_BASE_H
#define LIBINTEGRITY_API_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#ifdef __cplusplus
extern "C" {
#endif

#define LIBINTEGRITY_VERSION_MAJOR 0
#define LIBINTEGRITY_VERSION_MINOR 1

/* The library's version string, e.g. "0.1.0". */
const char *integrity_version(void);

/* A size as lsblk prints it (powers of 1024, one-letter suffix, one decimal
 * when it is not 0): "512B", "64M", "1.5G".  Returns buf; 16 bytes hold any. */
const char *integrity_size_string(uint64_t bytes, char *buf, size_t len);

/* libnvme, libfdisk, libdevmapper, libext2fs, libsgutils2 and liburing are
 * loaded when first used; without one, what needs it fails (-ELIBACC, or
 * -ENOMEM where the library's constructor returned NULL).  This says which
 * could not be loaded and why ("libfdisk.so.1: cannot open shared object
 * file: ..."), or NULL when none failed in this process. */
const char *integrity_missing_library(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_BASE_H */
