/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The journal through libsystemd, loaded when the first message is sent:
 * libsystemd (with libgcrypt, liblzma, libzstd, liblz4) costs more than a
 * millisecond of start-up, paid by every command, udev's helper included,
 * although only scrub writes to the journal.
 *
 * The calls read as libsystemd's, sd_journal_send(FIELD=..., NULL); they go
 * to the loaded library, or are dropped (-ELIBACC) on a system without it,
 * as in a build without libsystemd.
 */
#ifndef INTEGRITYCTL_JOURNAL_H
#define INTEGRITYCTL_JOURNAL_H

#ifdef HAVE_LIBSYSTEMD
#include <errno.h>
#include <stdint.h>
#include <systemd/sd-journal.h>

/* libsystemd's sd_journal_send_with_location(), the function its
 * sd_journal_send() macro calls, or NULL when libsystemd.so.0 is missing. */
typeof(sd_journal_send_with_location) *journal_sender(void);
/* The same for sd_journal_sendv(): a message of any number of fields. */
typeof(sd_journal_sendv_with_location) *journal_vsender(void);

/* The entries with match ("FIELD=value") since since_usec (Unix time, 0:
 * all), of the system's journal or of the files in dir: 0, -ELIBACC
 * without libsystemd, or sd_journal_open's -errno. */
int journal_read_open(sd_journal **j, const char *dir, const char *match, uint64_t since_usec);
/* The next entry: 1 and its time (Unix, µs), 0 at the end, -errno. */
int journal_read_next(sd_journal *j, uint64_t *usec);
/* The entry's FIELD, malloc'd; NULL when it has none. */
char *journal_read_field(sd_journal *j, const char *field);
void journal_read_close(sd_journal *j);

#undef sd_journal_send
#define sd_journal_send(...)                                                              \
	({                                                                                \
		typeof(sd_journal_send_with_location) *send_ = journal_sender();          \
		send_ ? send_("CODE_FILE=" __FILE__, "CODE_LINE=" _SD_STRINGIFY(__LINE__), \
			      __func__, __VA_ARGS__) :                                    \
			-ELIBACC;                                                         \
	})
#undef sd_journal_sendv
#define sd_journal_sendv(iov, n)                                                           \
	({                                                                                 \
		typeof(sd_journal_sendv_with_location) *sendv_ = journal_vsender();        \
		sendv_ ? sendv_("CODE_FILE=" __FILE__, "CODE_LINE=" _SD_STRINGIFY(__LINE__), \
				__func__, iov, n) :                                        \
			 -ELIBACC;                                                         \
	})
#endif

#endif
