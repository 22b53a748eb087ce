/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libsystemd's journal, loaded on first use (see journal.h). */
#include "config.h"

#ifdef HAVE_LIBSYSTEMD
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "journal.h"

static typeof(sd_journal_send_with_location) *sender;
static typeof(sd_journal_sendv_with_location) *vsender;
/* What reading takes. */
static struct {
	typeof(sd_journal_open) *open;
	typeof(sd_journal_open_directory) *open_directory;
	typeof(sd_journal_add_match) *add_match;
	typeof(sd_journal_seek_realtime_usec) *seek_realtime_usec;
	typeof(sd_journal_next) *next;
	typeof(sd_journal_get_realtime_usec) *get_realtime_usec;
	typeof(sd_journal_get_data) *get_data;
	typeof(sd_journal_close) *close;
} rd;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void journal_load(void)
{
	/* Never closed: the journal is written until the process ends. */
	void *h = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);

	if (h) {
		sender = (typeof(sender))dlsym(h, "sd_journal_send_with_location");
		vsender = (typeof(vsender))dlsym(h, "sd_journal_sendv_with_location");
		rd.open = (typeof(rd.open))dlsym(h, "sd_journal_open");
		rd.open_directory = (typeof(rd.open_directory))dlsym(h, "sd_journal_open_directory");
		rd.add_match = (typeof(rd.add_match))dlsym(h, "sd_journal_add_match");
		rd.seek_realtime_usec = (typeof(rd.seek_realtime_usec))dlsym(h, "sd_journal_seek_realtime_usec");
		rd.next = (typeof(rd.next))dlsym(h, "sd_journal_next");
		rd.get_realtime_usec = (typeof(rd.get_realtime_usec))dlsym(h, "sd_journal_get_realtime_usec");
		rd.get_data = (typeof(rd.get_data))dlsym(h, "sd_journal_get_data");
		rd.close = (typeof(rd.close))dlsym(h, "sd_journal_close");
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

int journal_read_open(sd_journal **j, const char *dir, const char *match, uint64_t since_usec)
{
	int r;

	pthread_once(&once, journal_load);
	*j = NULL;
	if (!rd.open || !rd.open_directory || !rd.add_match || !rd.seek_realtime_usec || !rd.next ||
	    !rd.get_realtime_usec || !rd.get_data || !rd.close)
		return -ELIBACC;
	r = dir ? rd.open_directory(j, dir, 0) : rd.open(j, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM);
	if (r < 0)
		return r;
	if ((r = rd.add_match(*j, match, 0)) < 0 || (since_usec && (r = rd.seek_realtime_usec(*j, since_usec)) < 0)) {
		rd.close(*j);
		*j = NULL;
	}
	return r;
}

int journal_read_next(sd_journal *j, uint64_t *usec)
{
	int r = rd.next(j);

	if (r > 0 && (r = rd.get_realtime_usec(j, usec)) == 0)
		r = 1;
	return r;
}

char *journal_read_field(sd_journal *j, const char *field)
{
	const void *data;
	size_t len, flen = strlen(field);

	if (rd.get_data(j, field, &data, &len) < 0 || len <= flen || memcmp(data, field, flen) != 0 ||
	    ((const char *)data)[flen] != '=')
		return NULL;
	return strndup((const char *)data + flen + 1, len - flen - 1);
}

void journal_read_close(sd_journal *j)
{
	if (j)
		rd.close(j);
}
#endif
