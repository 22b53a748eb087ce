/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Macros and cleanup helpers shared by the library and the command; not
 * installed.  A handle type gets its cleanup helper once, here or beside
 * the code that owns the type (internal.h for the library's, cmd.h for the
 * command's), never a hand-written free on each path. */
#ifndef INTEGRITY_UTIL_MACRO_H
#define INTEGRITY_UTIL_MACRO_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Block devices in the extended range: dynamic numbers (BLOCK_EXT_MAJOR in
 * the kernel's include/linux/major.h). */
#define BLOCK_EXT_MAJOR 259

/* A parameter that a callback's signature needs and this one does not use. */
#define _unused_ __attribute__((unused))

#define _cleanup_(f) __attribute__((cleanup(f)))

/* type_freep(type *p): calls func(*p) unless *p is NULL; for _cleanup_(). */
#define DEFINE_CLEANUP_FUNC(type, func)                  \
	static inline void func##p(type *p)              \
	{                                                \
		if (*p)                                  \
			func(*p);                        \
	}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

DEFINE_CLEANUP_FUNC(FILE *, fclose)
DEFINE_CLEANUP_FUNC(DIR *, closedir)

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

#endif
