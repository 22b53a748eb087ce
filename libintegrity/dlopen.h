/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Optional libraries loaded on first use (dlopen), as systemd loads its
 * optional ones: a program that never touches an NVMe device does not map
 * libnvme, nor the libcrypto it pulls in, at start-up.  Not installed.
 */
#ifndef LIBINTEGRITY_DLOPEN_H
#define LIBINTEGRITY_DLOPEN_H

#include <stdbool.h>
#include <stddef.h>

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

#endif
