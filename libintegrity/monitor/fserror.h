/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fanotify's file system error events, parsed; not installed. */
#ifndef LIBINTEGRITY_MONITOR_FSERROR_H
#define LIBINTEGRITY_MONITOR_FSERROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/statfs.h>

/* One event of a fanotify group that asked for FAN_FS_ERROR with
 * FAN_REPORT_FID. */
struct fserror_record {
	bool overflow;		/* FAN_Q_OVERFLOW: events were lost */
	bool is_error;		/* FAN_FS_ERROR (else an event not asked for) */
	bool has_fsid;
	fsid_t fsid;
	int32_t error;		/* the file system's error number */
	uint32_t error_count;	/* errors merged into this event, at least 1 */
	uint64_t inode;		/* 0: the error names none */
};

/* The first event of buf (len bytes, as read(2) gave them): 1 and *used
 * its length; 0 when buf holds no whole event, -EPROTO for a malformed
 * one, both with *used 0. */
int fserror_parse(const void *buf, size_t len, struct fserror_record *rec, size_t *used);

#endif
