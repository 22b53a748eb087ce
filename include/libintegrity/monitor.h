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
#include <stdio.h>

#include "base.h"
#include "device.h"
#include "scrub.h"
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
 * (0: one block).  A Buffer I/O error (source "buffer") has an lba in the
 * blocks of the device's page cache; integrity_event_resolve() turns it
 * into logical blocks. */
struct integrity_kernel_event {
	uint64_t seq;			/* the record's sequence number */
	uint64_t usec;			/* its time, microseconds since boot */
	enum integrity_event_kind kind;
	const char *source;		/* "block", "nvme", "t10-pi", "scsi", "md", "dm-integrity", "ext4", "xfs", "buffer", "kernel", "fanotify" */
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
 * File system errors through fanotify
 * ------------------------------------------------------------------------ */

struct integrity_fserror;

/* Watch every file system mounted on a block device for the errors it
 * reports to fsnotify (FAN_FS_ERROR, Linux 5.16: ext4, and the others
 * that report them), and those mounted later: integrity_fserror_next()
 * reads the mount table again when it has changed.  Every error is
 * reported, even where the file system's lines in the kernel log are
 * rate-limited.  Needs CAP_SYS_ADMIN (-EPERM); -EINVAL when the kernel
 * has no FAN_FS_ERROR. */
int integrity_fserror_open(struct integrity_fserror **fe);
void integrity_fserror_free(struct integrity_fserror *fe);
/* The descriptors to poll(2): errors waiting (POLLIN), and the mount
 * table changed (POLLPRI). */
int integrity_fserror_fd(const struct integrity_fserror *fe);
int integrity_fserror_mounts_fd(const struct integrity_fserror *fe);
/* How many file systems are watched now. */
size_t integrity_fserror_watched(const struct integrity_fserror *fe);
/* The next error: 1 and ev filled, 0 when there is none for now, -errno.
 * An error is an INTEGRITY_EVENT_FS of source "fanotify" with the file
 * system's device number and the inode it names (0: none); when the
 * kernel merged more errors into it before it was read, the next call
 * gives an INTEGRITY_EVENT_SUPPRESSED with their number. */
int integrity_fserror_next_sized(struct integrity_fserror *fe, struct integrity_kernel_event *ev, size_t ev_size);
#define integrity_fserror_next(fe, ev) integrity_fserror_next_sized((fe), (ev), sizeof(*(ev)))

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

/* ------------------------------------------------------------------------
 * A monitor: records in, a bounded batch of events out
 * ------------------------------------------------------------------------ */

/*
 * The monitor's policy, the same for every front end: records are taken
 * up to INTEGRITY_MONITOR_BATCH_MAX at a time and made into a batch of
 * events.
 *  - One failure, one event: the NVMe driver's, the SCSI sense and the
 *    block layer's lines about one I/O (the same disk, blocks that
 *    overlap, within a second) merge, with every source and the most
 *    precise kind.  md's lines tell what md did about a failure: events of
 *    their own.
 *  - A storm is bounded: INTEGRITY_MONITOR_SHOWN_PER_DEVICE events per
 *    device the kernel named and batch; the rest are merged the same way,
 *    counted exactly and never placed, and summed up per device
 *    (integrity_monitor_more).  At most INTEGRITY_MONITOR_RESCRUBS_PER_BATCH
 *    re-scrubs are asked for per batch.  Counters by device and kind stay
 *    exact up to INTEGRITY_MONITOR_COUNTERS_MAX keys, and past them are
 *    summed in the totals' uncounted.  The monitor holds well under
 *    32 MiB whatever the rate.
 *  - What the monitor read itself (its re-scrubs, integrity_monitor_note_read)
 *    is no new error: lines about those blocks logged then (two seconds
 *    of slack either way) are dropped.
 *  - A re-scrub reads the disk that holds the blocks; below md and dm, the
 *    first whole disk that is neither (md reads the other copies itself).
 */
#define INTEGRITY_MONITOR_BATCH_MAX		1024
#define INTEGRITY_MONITOR_SHOWN_PER_DEVICE	32
#define INTEGRITY_MONITOR_RESCRUBS_PER_BATCH	16
#define INTEGRITY_MONITOR_COUNTERS_MAX		4096

struct integrity_monitor_params {
	unsigned flags;			/* INTEGRITY_EVENT_NO_OWNERS */
	bool rescrub;			/* ask for a re-scrub of the blocks around each event */
	uint64_t around;		/* that many blocks before and after the event's */
	bool repair;			/* re-scrub: md RAID1 rewrites the bad blocks found on a member */
	const char *history;		/* the device-number history, NULL: INTEGRITY_HISTORY_PATH */
};

/* One event of a batch: one failure, however many records told of it. */
struct integrity_monitor_event {
	struct integrity_kernel_event record;	/* the first; its kind the most precise of all */
	const char *sources[4];		/* each record's source, each once */
	size_t nsources;
	uint64_t records;		/* records it stands for */
	const struct integrity_event_info *info;	/* NULL when it could not be placed */
	int resolve_err;		/* then why */
	const char *device;		/* the name it goes under: stable, else was, else the kernel's, "-" */
	const char *was;		/* gone: its stable name in the device-number history then, or NULL */
	double time;			/* Unix time of the record; 0 or less: not known */
	/* The re-scrub asked for: the disk that holds the blocks, the blocks
	 * around them. */
	bool rescrub_wanted;
	char rescrub_target[300];	/* "/dev/NAME" */
	uint64_t rescrub_start, rescrub_blocks;
	/* What integrity_monitor_rescrub() found: 0 or -errno (-EINTR: stopped),
	 * the bad blocks (each once; the first few LBAs), and --repair's results. */
	bool rescrubbed;
	int rescrub_result;
	uint64_t rescrub_bad;
	uint64_t bad_lbas[8];
	size_t nbad;
	struct integrity_scrub_repair_block repairs[8];
	size_t nrepairs;
	int repair_err;			/* an array that could not be repaired: why, and which */
	char repair_array[256];
};

/* A device's events in a batch past those shown: counted, not placed. */
struct integrity_monitor_more {
	const char *device;		/* the name its events go under */
	uint64_t events;
};

/* Failures by device (the name events go under) and kind, since the start. */
struct integrity_monitor_counter {
	char device[300];
	enum integrity_event_kind kind;
	uint64_t count;
};

struct integrity_monitor_totals {
	uint64_t events;		/* failures, shown or counted */
	uint64_t uncounted;		/* of them, past INTEGRITY_MONITOR_COUNTERS_MAX keys */
	uint64_t suppressed;		/* messages the kernel's rate limit left out */
	double last_event;		/* Unix time of the last batch with a failure, 0 none */
};

struct integrity_monitor;

int integrity_monitor_new_sized(struct integrity_monitor **mon, struct integrity_context *ctx,
				const struct integrity_monitor_params *params, size_t params_size);
#define integrity_monitor_new(mon, ctx, params) \
	integrity_monitor_new_sized((mon), (ctx), (params), sizeof(*(params)))
void integrity_monitor_free(struct integrity_monitor *mon);
/* Take a record (integrity_kmsg_next's); -ENOBUFS when
 * INTEGRITY_MONITOR_BATCH_MAX are waiting for integrity_monitor_flush. */
int integrity_monitor_add_sized(struct integrity_monitor *mon, const struct integrity_kernel_event *ev,
				size_t ev_size);
#define integrity_monitor_add(mon, ev) integrity_monitor_add_sized((mon), (ev), sizeof(*(ev)))
size_t integrity_monitor_pending(const struct integrity_monitor *mon);
/* Make the records taken into a new batch (the last one's events are
 * freed), and count them.  Returns how many records told of a failure
 * (0: none, only rate limits or nothing), or -errno. */
int integrity_monitor_flush(struct integrity_monitor *mon);
/* The batch's events, in the kernel's order. */
size_t integrity_monitor_event_count(const struct integrity_monitor *mon);
const struct integrity_monitor_event *integrity_monitor_event(const struct integrity_monitor *mon, size_t i);
/* Run the re-scrub event i asks for (and the repair, with params.repair),
 * and note its reads; the results go into the event.  0 when done or none
 * was asked for, -EINVAL for no such event.  Slow: a front end runs it
 * off its read loop, before it shows the event. */
int integrity_monitor_rescrub(struct integrity_monitor *mon, size_t i);
/* The batch's devices with events past those shown. */
size_t integrity_monitor_more_count(const struct integrity_monitor *mon);
const struct integrity_monitor_more *integrity_monitor_more(const struct integrity_monitor *mon, size_t i);
/* Counters since the monitor was made. */
size_t integrity_monitor_counter_count(const struct integrity_monitor *mon);
const struct integrity_monitor_counter *integrity_monitor_counter(const struct integrity_monitor *mon, size_t i);
const struct integrity_monitor_totals *integrity_monitor_totals(const struct integrity_monitor *mon);
/* Blocks start..start+blocks of disk (a kernel name) that the caller read
 * itself from from_usec to to_usec (CLOCK_MONOTONIC, as the kernel log
 * counts): what the kernel logs about them then is not a new error.  The
 * newest 64 are kept. */
int integrity_monitor_note_read(struct integrity_monitor *mon, const char *disk, uint64_t start, uint64_t blocks,
				uint64_t from_usec, uint64_t to_usec);

/*
 * The monitor's loop, as every front end runs it.
 *
 * integrity_monitor_run_batch() takes the records waiting in kmsg and,
 * when fe is given, the file systems' reports (at most
 * INTEGRITY_MONITOR_BATCH_MAX; it never waits), and makes them a batch
 * (integrity_monitor_flush).  Then handlers->placed gets every event of
 * the batch, before any scrub: what the kernel told and where, which no
 * scrub changes (a journal, say).  Then each event in turn has the
 * re-scrub it asks for run and is given to handlers->checked with its
 * results (to show it, to run a hook).  handlers->stop, asked between
 * records and between events, stops the reading and the scrubs (not the
 * handlers): a signal, say.  Any handler may be NULL.
 *
 * 0 with *batch filled in, or -errno when the kernel log could not be
 * read or the batch made.  A failure of fe alone is batch->fserror_err:
 * fe is then of no more use, the kernel log still is.
 * batch->records == INTEGRITY_MONITOR_BATCH_MAX: more are waiting.
 */
struct integrity_monitor_handlers {
	void (*placed)(const struct integrity_monitor_event *ev, void *data);
	void (*checked)(const struct integrity_monitor_event *ev, void *data);
	bool (*stop)(void *data);
};

struct integrity_monitor_batch {
	size_t records;		/* records taken */
	size_t events;		/* events made of them */
	uint64_t failures;	/* records that told of a failure */
	int fserror_err;	/* 0, or why fe failed */
};

int integrity_monitor_run_batch_sized(struct integrity_monitor *mon, struct integrity_kmsg *kmsg,
				      struct integrity_fserror *fe, const struct integrity_monitor_handlers *handlers,
				      size_t handlers_size, void *data, struct integrity_monitor_batch *batch);
#define integrity_monitor_run_batch(mon, kmsg, fe, handlers, data, batch) \
	integrity_monitor_run_batch_sized((mon), (kmsg), (fe), (handlers), \
					  sizeof(struct integrity_monitor_handlers), (data), (batch))

/* Wait up to timeout_ms (-1: for ever) for kmsg or fe (may be NULL) to
 * have something to read, or fe's mount table to change.  1 when
 * something is there, 0 on time out or a signal, -errno. */
int integrity_monitor_wait(struct integrity_kmsg *kmsg, struct integrity_fserror *fe, int timeout_ms);

/*
 * The monitor's counters in the text exposition format, for
 * node_exporter's textfile collector: integrityctl_bad_blocks_total with
 * source="kernel" by device and kind (the device labelled as every
 * metrics file labels it: integrity_metrics_device_label()),
 * the rate limit's and the kernel log's counts (kmsg may be NULL), and
 * the time of the last error.  0, or -errno when f failed.
 */
int integrity_monitor_metrics(const struct integrity_monitor *mon, const struct integrity_kmsg *kmsg, FILE *f);

#ifdef __cplusplus
}
#endif

#endif
