/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loader of the optional libraries (dlopen.h): each is opened once, with
 * every symbol its dlopen_<library>.c lists, or not at all.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dlopen.h"
#include "internal.h"

/* The error of the last library that could not be loaded, for the caller's
 * message: the failed call only has an errno (or a NULL). */
static const char *last_failure;

static void dl_failed(struct dl_library *lib)
{
	lib->result = -ELIBACC;
	__atomic_store_n(&last_failure, lib->error, __ATOMIC_RELEASE);
}

INTEGRITY_EXPORT const char *integrity_missing_library(void)
{
	return __atomic_load_n(&last_failure, __ATOMIC_ACQUIRE);
}

static void dl_try(struct dl_library *lib)
{
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(lib->error, sizeof(lib->error), "%s", dlerror());
		dl_failed(lib);
		return;
	}
	for (size_t i = 0; i < lib->nsymbols; i++) {
		void *fn = dlsym(h, lib->symbols[i].name);
		if (!fn) {
			snprintf(lib->error, sizeof(lib->error), "%s: no symbol %s", lib->soname,
				 lib->symbols[i].name);
			for (size_t j = 0; j < i; j++)
				*lib->symbols[j].fn = NULL;
			dlclose(h);
			dl_failed(lib);
			return;
		}
		*lib->symbols[i].fn = fn;
	}
	/* Never closed: the addresses are used until the process ends. */
	lib->result = 0;
}

int dl_load(struct dl_library *lib)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	/* Once per process, whichever thread comes first. */
	if (__atomic_load_n(&lib->tried, __ATOMIC_ACQUIRE))
		return lib->result;
	pthread_mutex_lock(&lock);
	if (!lib->tried) {
		dl_try(lib);
		__atomic_store_n(&lib->tried, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&lock);
	return lib->result;
}
