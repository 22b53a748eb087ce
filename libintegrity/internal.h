/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the library's sources; not installed. */
#ifndef LIBINTEGRITY_INTERNAL_H
#define LIBINTEGRITY_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The library defines the 0.1 partition calls under their own names. */
#define LIBINTEGRITY_PART_UNSIZED
#include "libintegrity/base.h"
#include "util/alloc.h"
#include "util/macro.h"
#include "util/parse.h"

/* The library builds with -fvisibility=hidden; public symbols say so. */
#define INTEGRITY_EXPORT __attribute__((visibility("default")))

/*
 * A struct the caller allocates reaches the library with the caller's
 * sizeof (the public header's macros pass it), so that it can grow at its
 * end without a new SONAME.  In: an older caller's shorter struct reads as
 * zero in the fields added since; a newer caller's longer one is refused
 * (-E2BIG) unless the bytes this library does not know are zero.  Out: as
 * many bytes as the caller's struct has.
 */
static inline int struct_copy_in(void *dst, size_t dsize, const void *src, size_t ssize)
{
	const unsigned char *extra = (const unsigned char *)src + dsize;

	if (!src || ssize == 0)
		return -EINVAL;
	for (size_t i = 0; dsize + i < ssize; i++)
		if (extra[i])
			return -E2BIG;
	memset(dst, 0, dsize);
	memcpy(dst, src, ssize < dsize ? ssize : dsize);
	return 0;
}

static inline int struct_copy_out(void *dst, size_t dsize, const void *src, size_t ssize)
{
	if (!dst || dsize == 0)
		return -EINVAL;
	memset(dst, 0, dsize);
	memcpy(dst, src, dsize < ssize ? dsize : ssize);
	return 0;
}

/* snprintf for names and paths: -ENAMETOOLONG instead of a truncated one. */
static inline __attribute__((format(printf, 3, 4))) int
path_printf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A fixed-width, space-padded identifier from a device (INQUIRY, Identify)
 * as a C string: trailing blanks dropped, anything unprintable as '?'. */
static inline void copy_device_string(char *dst, const void *src, size_t n)
{
	const char *s = src;
	size_t len = n;

	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\0'))
		len--;
	for (size_t i = 0; i < len; i++)
		dst[i] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
	dst[len] = '\0';
}

static inline uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t get_be48(const uint8_t *p)
{
	return (uint64_t)get_be16(p) << 32 | get_be32(p + 2);
}

static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static inline void put_be48(uint8_t *p, uint64_t v)
{
	put_be16(p, (uint16_t)(v >> 32));
	put_be32(p + 2, (uint32_t)v);
}

static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

#endif
