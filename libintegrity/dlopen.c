/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The optional libraries, loaded when first used.
 *
 * libnvme (and through it libcrypto and json-c) costs more at start-up than
 * everything else the library links: about 2 ms per process, paid by every
 * udev event the helper handles although only NVMe devices need it.  The
 * functions of it the library calls are defined here under their own names
 * and prototypes (libnvme.h's, so the compiler checks them); each loads
 * libnvme once and calls the real one.  The header's inline helpers
 * (nvme_identify_ns(), nvme_read(), ...) end up here too, and the callers
 * are unchanged.  Without libnvme they fail as a libnvme call does, -1 with
 * errno ELIBACC ("cannot access a needed shared library").
 *
 * The symbols stay inside the library (hidden visibility), so a program that
 * links libnvme itself keeps its own.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <libnvme.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dlopen.h"
#include "internal.h"

static void dl_try(struct dl_library *lib)
{
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(lib->error, sizeof(lib->error), "%s", dlerror());
		lib->result = -ELIBACC;
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
			lib->result = -ELIBACC;
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

static struct {
	typeof(nvme_get_nsid) *get_nsid;
	typeof(nvme_identify) *identify;
	typeof(nvme_io) *io;
	typeof(nvme_get_property) *get_property;
	typeof(nvme_format_nvm) *format_nvm;
	typeof(nvme_status_to_string) *status_to_string;
} nvme;

static const struct dl_symbol nvme_symbols[] = {
	{ "nvme_get_nsid", (void **)&nvme.get_nsid },
	{ "nvme_identify", (void **)&nvme.identify },
	{ "nvme_io", (void **)&nvme.io },
	{ "nvme_get_property", (void **)&nvme.get_property },
	{ "nvme_format_nvm", (void **)&nvme.format_nvm },
	{ "nvme_status_to_string", (void **)&nvme.status_to_string },
};

static struct dl_library libnvme = {
	.soname = "libnvme.so.1",
	.symbols = nvme_symbols,
	.nsymbols = ARRAY_SIZE(nvme_symbols),
};

/* -1 and errno ELIBACC when libnvme is missing, as a failed call. */
static bool nvme_loaded(void)
{
	if (dl_load(&libnvme) == 0)
		return true;
	errno = ELIBACC;
	return false;
}

int nvme_get_nsid(int fd, __u32 *nsid)
{
	return nvme_loaded() ? nvme.get_nsid(fd, nsid) : -1;
}

int nvme_identify(struct nvme_identify_args *args)
{
	return nvme_loaded() ? nvme.identify(args) : -1;
}

int nvme_io(struct nvme_io_args *args, __u8 opcode)
{
	return nvme_loaded() ? nvme.io(args, opcode) : -1;
}

int nvme_get_property(struct nvme_get_property_args *args)
{
	return nvme_loaded() ? nvme.get_property(args) : -1;
}

int nvme_format_nvm(struct nvme_format_nvm_args *args)
{
	return nvme_loaded() ? nvme.format_nvm(args) : -1;
}

const char *nvme_status_to_string(int status, bool fabrics)
{
	return nvme_loaded() ? nvme.status_to_string(status, fabrics) : "libnvme is not installed";
}
