/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: the integrity errors the kernel logs, as they happen.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_MONITOR_H
#define LIBINTEGRITY_API_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "device.h"
#include "stack.h"

#ifdef __cplusplus
extern "C" {
#endif

struct integrity_owners;

/* ------------------------------------------------------------------------
 * Kernel log records that tell of an integrity or read error
 * ------------------------------------------------------------------------ */

enum integrity_event_kind {
	INTEGRITY_EVENT_IO = 0,		/* an I/O error, nothing more said */
	INTEGRITY_EVENT_PROTECTION,	/* protection information did not match */
	INTEGRITY_EVENT_GUARD,		/* the guard tag (the CRC) did not match */
	INTEGRITY_EVENT_APP_TAG,	/* the application tag did not match */
	INTEGRITY_EVENT_REF_TAG,	/* the reference tag (the LBA) did not match */
	INTEGRITY_EVENT_MEDIUM,		/* unrecovered read error, medium error */
	INTEGRITY_EVENT_MD_CORRECTED,	/* md rewrote the block from another copy */
	INTEGRITY_EVENT_MD_REDIRECTED,	/* md read the block from another copy */
	INTEGRITY_EVENT_MD_UNCORRECTABLE, /* md had no good copy */
	INTEGRITY_EVENT_CHECKSUM,	/* dm-integrity's checksum did not match */
	INTEGRITY_EVENT_FS,		/* a file system's error naming an inode or a block */
	INTEGRITY_EVENT_SUPPRESSED,	/* the kernel left out this many messages */
};
/* "io", "protection", "guard", "app-tag", "ref-tag", "medium", "md-corrected",
 * "md-redirected", "md-uncorrectable", "checksum", "fs", "suppressed". */
const char *integrity_event_kind_name(enum integrity_event_kind kind);

/* One record of /dev/kmsg that tells of an error.  Where it is: sector
 * (512-byte units on device) or lba (the device's logical blocks, as NVMe
 * and the kernel's PI check log them), each with count in its own units
 * (0: one block). */
struct integrity_kernel_event {
	uint64_t seq;			/* the record's sequence number */
	uint64_t usec;			/* its time, microseconds since boot */
	enum integrity_event_kind kind;
	const char *source;		/* "block", "nvme", "t10-pi", "scsi", "md", "dm-integrity", "ext4", "xfs", "kernel" */
	char device[64];		/* the kernel name logged; "" when none */
	unsigned major, minor;		/* the record's DEVICE=b<MAJ>:<MIN>, when has_devt */
	bool has_devt;
	char array[64];			/* md: the array that logged it */
	bool has_sector, has_lba;
	uint64_t sector, lba, count;
	uint32_t status;		/* NVMe: sct << 8 | sc; 0 when not logged */
	uint64_t inode;			/* fs: the inode named, 0 none */
	uint64_t suppressed;		/* SUPPRESSED: how many */
	char text[256];			/* the message as logged (kmsg's \xNN escapes kept) */
};

/* Parse one /dev/kmsg record, "PRI,SEQ,USEC,FLAGS;TEXT" with its " KEY=value"
 * lines.  1: an error record, ev filled; 0: another record, or one not of
 * the kernel's facility (any user can write to /dev/kmsg); -EINVAL: not a
 * record. */
int integrity_kmsg_parse_sized(const char *record, size_t len, struct integrity_kernel_event *ev, size_t ev_size);
#define integrity_kmsg_parse(record, len, ev) integrity_kmsg_parse_sized((record), (len), (ev), sizeof(*(ev)))

/* ------------------------------------------------------------------------
 * Following the kernel log
 * ------------------------------------------------------------------------ */

struct integrity_kmsg;

/* Follow path (NULL: /dev/kmsg), or read a file of records once.  With a
 * state directory, the cursor (boot id and sequence number) kept there by
 * integrity_kmsg_save() says where to go on: a record is neither missed
 * nor read twice across restarts of one boot; after a reboot, the
 * records still in the kernel's buffer are read from the first.  The
 * directory and the cursor must be root's (or the caller's) and writable
 * by nobody else (-EPERM). */
int integrity_kmsg_open(struct integrity_kmsg **kmsg, const char *path, const char *state_dir);
void integrity_kmsg_free(struct integrity_kmsg *kmsg);
/* The descriptor to poll(2) for more (POLLIN); -1 for a file. */
int integrity_kmsg_fd(const struct integrity_kmsg *kmsg);
/* The next error record: 1 and ev filled; 0 when there is none for now
 * (a file: its end); -errno. */
int integrity_kmsg_next_sized(struct integrity_kmsg *kmsg, struct integrity_kernel_event *ev, size_t ev_size);
#define integrity_kmsg_next(kmsg, ev) integrity_kmsg_next_sized((kmsg), (ev), sizeof(*(ev)))
/* Records read, and records the kernel overwrote before they were read. */
uint64_t integrity_kmsg_records(const struct integrity_kmsg *kmsg);
uint64_t integrity_kmsg_lost(const struct integrity_kmsg *kmsg);
/* Where the cursor stood when opened: 0 when none was used (no state, a
 * file, another boot, none saved). */
uint64_t integrity_kmsg_resumed_after(const struct integrity_kmsg *kmsg);
/* Save the cursor after the last record read; 0 or -errno. */
int integrity_kmsg_save(struct integrity_kmsg *kmsg);

/* ------------------------------------------------------------------------
 * What an event is about
 * ------------------------------------------------------------------------ */

/* An event placed on the devices: the device it names and its disk, the
 * blocks in the device's logical blocks, the devices above and below with
 * their LBAs, and what the blocks belong to. */
struct integrity_event_info {
	char device[256];		/* kernel name of the device the record names */
	const char *stable;		/* its stable name, or NULL */
	char disk[256];			/* the whole disk (or md/dm device) it is part of */
	const char *disk_stable;
	unsigned partno;		/* device's partition number on disk, 0: none */
	uint32_t block_size;		/* device's logical block size */
	uint64_t lba, count;		/* on device, in block_size units */
	uint64_t disk_lba;		/* on disk */
	struct integrity_stack_place *above, *below;
	size_t nabove, nbelow;
	/* What the blocks belong to (range 0), as integrity_owners_resolve()
	 * finds them on device; NULL when not looked for or not found, with
	 * the -errno in owners_err. */
	struct integrity_owners *owners;
	int owners_err;
	bool gone;			/* no such device now: only the logged name is known */
};

#define INTEGRITY_EVENT_NO_OWNERS (1u << 0)

/* Place ev: 0 (gone set when the device is no more), or -errno.  An event
 * without a place (SUPPRESSED, an fs error naming only an inode) gets the
 * device alone. */
int integrity_event_resolve(struct integrity_context *ctx, const struct integrity_kernel_event *ev, unsigned flags,
			    struct integrity_event_info **info);
void integrity_event_info_free(struct integrity_event_info *info);

#ifdef __cplusplus
}
#endif

#endif
