/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Optional libraries loaded on first use (dlopen), as systemd loads its
 * optional ones: a process maps libnvme, libdevmapper, libext2fs, libfdisk,
 * libsgutils2 or liburing only when a call needs it, not at start-up.  The
 * udev helper and "status" need none of them, and each one costs 0.3 to
 * 1.3 ms of every exec.  Not installed.
 *
 * One file per library, dlopen_<library>.c, lists the functions the
 * library calls, each with the value it returns when the library is missing;
 * DL_LIBRARY() turns the list into functions of the same names and
 * prototypes (the library's header declares them, so the compiler checks),
 * each loading the library once and calling the real one.  The callers are
 * unchanged.  Without the library, or without one of its symbols, every
 * function fails as a failed call of the library does, with errno ELIBACC
 * ("cannot access a needed shared library").  The definitions stay inside
 * libintegrity (hidden visibility): a program that links the library
 * itself keeps its own.
 *
 * The sonames (FDISK_SONAME...) come from configure: the name the linker
 * would have recorded, so the ABI loaded is the one the headers describe.
 */
#ifndef LIBINTEGRITY_DLOPEN_H
#define LIBINTEGRITY_DLOPEN_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/macro.h"

struct dl_symbol {
	const char *name;
	void **fn;		/* where the address goes */
};

struct dl_library {
	const char *soname;	/* "libnvme.so.1": the ABI the headers describe */
	const struct dl_symbol *symbols;
	size_t nsymbols;
	bool tried;
	int result;		/* 0, or -ELIBACC when the library or a symbol is missing */
	char error[256];	/* dlerror() of the failure */
};

/* Loads the library and every symbol, once per process and thread-safe:
 * 0, or -ELIBACC (the library or one of its symbols is missing; error says
 * which) and then no symbol is set. */
int dl_load(struct dl_library *lib);

/* true when the library is loaded; false with errno ELIBACC when not. */
static inline bool dl_ready(struct dl_library *lib)
{
	if (dl_load(lib) == 0)
		return true;
	errno = ELIBACC;
	return false;
}

/* The libraries, for the tests and for what needs one loaded by name. */
extern struct dl_library dl_libnvme, dl_libdevmapper, dl_libext2fs, dl_libfdisk, dl_libsgutils2,
	dl_liburing;

/* libext2fs's unix_io_manager (a variable, not a function: it cannot be
 * wrapped), or NULL with errno ELIBACC when libext2fs is missing. */
struct struct_io_manager *dl_ext2fs_unix_io_manager(void);

/*
 * DL_LIBRARY(dl_libfoo, "libfoo.so.1", FOO_FUNCTIONS) defines dl_libfoo and
 * the wrappers of FOO_FUNCTIONS(F, V, D), a list of
 *   F(value when missing, return type, name, (parameters), (arguments))
 *   V(name, (parameters), (arguments))	for a function returning void
 *   D(name)	a variable: dl_fn.name points to it once loaded, no wrapper
 * A V function does nothing when the library is missing.
 */
#define DL_POINTER_(fail, ret, name, params, args) typeof(name) *name;
#define DL_VPOINTER_(name, params, args) typeof(name) *name;
#define DL_DPOINTER_(name) typeof(name) *name;
#define DL_SYMBOL_(fail, ret, name, params, args) { #name, (void **)&dl_fn.name },
#define DL_VSYMBOL_(name, params, args) { #name, (void **)&dl_fn.name },
#define DL_DSYMBOL_(name) { #name, (void **)&dl_fn.name },
#define DL_WRAPPER_(fail, ret, name, params, args) \
	ret name params \
	{ \
		return dl_ready(dl_this) ? dl_fn.name args : (fail); \
	}
#define DL_VWRAPPER_(name, params, args) \
	void name params \
	{ \
		if (dl_ready(dl_this)) \
			dl_fn.name args; \
	}
#define DL_NONE_(...)
#define DL_LIBRARY(var, so, LIST) \
	static struct { \
		LIST(DL_POINTER_, DL_VPOINTER_, DL_DPOINTER_) \
	} dl_fn; \
	static const struct dl_symbol dl_symbols[] = { LIST(DL_SYMBOL_, DL_VSYMBOL_, DL_DSYMBOL_) }; \
	struct dl_library var = { \
		.soname = so, \
		.symbols = dl_symbols, \
		.nsymbols = ARRAY_SIZE(dl_symbols), \
	}; \
	static struct dl_library *const dl_this = &var; \
	LIST(DL_WRAPPER_, DL_VWRAPPER_, DL_NONE_)

#endif
