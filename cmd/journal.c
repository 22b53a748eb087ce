/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libsystemd's journal, loaded on first use (see journal.h). */
#include "config.h"

#ifdef HAVE_LIBSYSTEMD
#include <dlfcn.h>
#include <pthread.h>

#include "journal.h"

static typeof(sd_journal_send_with_location) *sender;
static typeof(sd_journal_sendv_with_location) *vsender;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void journal_load(void)
{
	/* Never closed: the journal is written until the process ends. */
	void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);

	if (h) {
		sender = (typeof(sender))dlsym(h, "sd_journal_send_with_location");
		vsender = (typeof(vsender))dlsym(h, "sd_journal_sendv_with_location");
	}
}

typeof(sd_journal_send_with_location) *journal_sender(void)
{
	pthread_once(&once, journal_load);
	return sender;
}

typeof(sd_journal_sendv_with_location) *journal_vsender(void)
{
	pthread_once(&once, journal_load);
	return vsender;
}
#endif
