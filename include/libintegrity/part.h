/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: partition tables (libfdisk) and the kernel's partitions (BLKPG).
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_PART_H
#define LIBINTEGRITY_API_PART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Partitions: tables (libfdisk) and the kernel's partitions (BLKPG)
 * ------------------------------------------------------------------------ */

/* The kernel's limit: partition numbers 1 to 255 on every disk. */
#define INTEGRITY_PART_MAX 255

/* What failed and why.  The calls below that take one fill it on failure
 * (it may be NULL).  It reaches the library with its sizeof (the calls are
 * macros over *_sized() symbols), so it may grow at its end. */
struct integrity_part_error {
	unsigned partno;	/* the partition concerned; 0 for the disk as a whole */
	int err;		/* the negative errno also returned */
	char what[128];		/* what failed: "cannot delete", "BLKPG_ADD_PARTITION", ... */
	char why[320];		/* why, when the errno alone does not say it; else "" */
};

struct integrity_part_disk;

enum {
	/* Open read-write and hold flock(LOCK_EX) on the disk until it is freed
	 * (systemd's block-device locking: udev leaves the disk alone).  A disk
	 * in use is refused whatever the flags; it is held with O_EXCL unless
	 * only partitions of it are in use (plans leave those alone). */
	INTEGRITY_PART_WRITE = 1 << 0,
	/* Plan changes even when reading the table reported problems. */
	INTEGRITY_PART_FORCE = 1 << 1,
};

/*
 * Open a whole disk (or an image file) and read its partition table and,
 * for a block device, the kernel's partitions (sysfs).  -EINVAL: path is a
 * partition, not a whole disk (why names its disk); -ENOTBLK: neither a
 * block device nor a regular file; -ENXIO: no medium; -EBUSY: the disk is
 * in use (mounted, swap, held, open exclusively: why says which) or another
 * program holds the disk's lock; other -errno from open() and libfdisk.
 */
int integrity_part_disk_open(struct integrity_part_disk **disk, const char *path, unsigned flags,
			     struct integrity_part_error *err);
void integrity_part_disk_free(struct integrity_part_disk *disk);
/* Read the table and the kernel's partitions again. */
int integrity_part_disk_reload(struct integrity_part_disk *disk, struct integrity_part_error *err);

const char *integrity_part_disk_path(const struct integrity_part_disk *disk);
/* The kernel's name of the disk ("loop0", "sdb"); NULL for an image file. */
const char *integrity_part_disk_kname(const struct integrity_part_disk *disk);
bool integrity_part_disk_is_blockdev(const struct integrity_part_disk *disk);
/* "gpt", "dos", ...; NULL when the disk has no partition table. */
const char *integrity_part_disk_label(const struct integrity_part_disk *disk);
/* Disk GUID or MBR identifier; NULL when none. */
const char *integrity_part_disk_id(const struct integrity_part_disk *disk);
unsigned integrity_part_disk_sector_size(const struct integrity_part_disk *disk);
uint64_t integrity_part_disk_sectors(const struct integrity_part_disk *disk);
/* Problems found while reading the table (a corrupt header, a backup table
 * not at the end, a signature of something else).  Plans refuse a disk with
 * any unless it was opened with INTEGRITY_PART_FORCE. */
size_t integrity_part_disk_problem_count(const struct integrity_part_disk *disk);
const char *integrity_part_disk_problem(const struct integrity_part_disk *disk, size_t index);

enum integrity_part_kernel_state {
	INTEGRITY_PART_KERNEL_UNKNOWN = 0,	/* an image file: no kernel */
	INTEGRITY_PART_KERNEL_MATCH,		/* the kernel has it as the table says */
	INTEGRITY_PART_KERNEL_MISSING,		/* in the table, not in the kernel */
	INTEGRITY_PART_KERNEL_DIFFERS,		/* in both, at another start or size */
	INTEGRITY_PART_KERNEL_EXTRA,		/* in the kernel, not in the table */
};
/* "yes", "missing", "differs", "extra"; "-" when unknown. */
const char *integrity_part_kernel_state_name(enum integrity_part_kernel_state state);

/* One partition number: its table entry and the kernel's partition.  Sectors
 * are the disk's (logical) sectors.  Strings are NULL when absent and valid
 * until the disk is reloaded (also by a plan made after an apply) or freed. */
struct integrity_part_entry {
	unsigned partno;		/* 1-based */
	bool in_table;
	uint64_t start, size;		/* in the table */
	const char *type;		/* GPT type GUID, or the MBR type as "0x83" */
	const char *type_name;		/* "Linux filesystem" */
	const char *name;		/* GPT partition name */
	const char *uuid;		/* PARTUUID */
	bool container;			/* MBR extended partition */
	bool in_kernel;
	uint64_t kernel_start, kernel_size;
	const char *kname;		/* "loop0p17" */
	unsigned major, minor;
	bool extended_devt;		/* number outside the disk's own range (blkext, 259) */
	enum integrity_part_kernel_state kernel;
};

/* Every partition number in the table or the kernel, in order. */
size_t integrity_part_disk_count(const struct integrity_part_disk *disk);
const struct integrity_part_entry *integrity_part_disk_entry(const struct integrity_part_disk *disk,
							     size_t index);
const struct integrity_part_entry *integrity_part_disk_find(const struct integrity_part_disk *disk,
							    unsigned partno);

/*
 * Plans.  A plan is made and checked whole before anything is written; its
 * actions can be shown (a dry run) and then applied, or the plan freed with
 * nothing written.  Plans need a table that read cleanly (-EUCLEAN)
 * unless the disk was opened with INTEGRITY_PART_FORCE; applying one needs
 * INTEGRITY_PART_WRITE (-EBADF).  A plan refers to its disk: free it first.
 *
 * Errors meaning "not as asked on this disk" (bad input): -EINVAL, -ERANGE
 * (over 255 partitions), -ENOSPC (does not fit), -ENOENT (no such
 * partition), -EEXIST (a table of another type; a number or place the
 * kernel still has), -ENODATA (no table and none asked for), -EOPNOTSUPP,
 * -ENOTBLK (sync on an image).  -EBUSY: a partition is in use.
 */
struct integrity_part_plan;

/* Read with its sizeof, as struct integrity_part_error: fields are added at
 * the end only, and read as zero from an older caller. */
struct integrity_part_spec {
	const char *label;		/* the table to create on a disk without one:
					 * "gpt" or "dos"; NULL: the disk's own */
	unsigned count;			/* partitions to create */
	uint64_t size;			/* bytes each; a multiple of the sector size */
	const char *type;		/* GUID, or a name libfdisk knows ("linux",
					 * "swap", "Linux RAID"); NULL: Linux filesystem */
	const char *name_prefix;	/* GPT names: prefix and number; NULL: none */
};

enum integrity_part_op {
	INTEGRITY_PART_OP_CREATE,	/* added to the table, then to the kernel */
	INTEGRITY_PART_OP_DELETE,	/* removed from the kernel, then from the table */
	INTEGRITY_PART_OP_ADD,		/* sync: added to the kernel */
	INTEGRITY_PART_OP_REMOVE,	/* sync: removed from the kernel */
	INTEGRITY_PART_OP_RESIZE,	/* sync: the kernel's size changed, same start */
	INTEGRITY_PART_OP_SKIP,		/* sync: differs, but left alone (why says why) */
};
/* "create", "delete", "add", "remove", "resize", "skip" */
const char *integrity_part_op_name(enum integrity_part_op op);

struct integrity_part_action {
	enum integrity_part_op op;
	unsigned partno;
	uint64_t start, size;		/* sectors: the table's (the kernel's for a removal) */
	const char *type, *name, *uuid;	/* of the table entry, when there is one */
	/* Set by apply: */
	bool done;
	int result;			/* 0 or the negative errno */
	const char *why;		/* why it failed or was skipped; NULL */
	const char *kname;		/* the kernel's partition (before a removal, after an add) */
	unsigned major, minor;
	bool extended_devt;
};

/* Create spec->count partitions of spec->size bytes each on a GPT disk: the
 * lowest free numbers, first fit from the start, starts aligned (1 MiB).
 * The entry array is grown to 255 entries when the numbers need it. */
int integrity_part_plan_create(struct integrity_part_disk *disk, const struct integrity_part_spec *spec,
			       struct integrity_part_plan **plan, struct integrity_part_error *err);
/* Create the partitions of an sfdisk script, read from fd to its end.  On a
 * disk with a table they are added to it, as sfdisk --append does; on a disk
 * without one, the script's headers (or label) make a new table. */
int integrity_part_plan_script(struct integrity_part_disk *disk, int fd, const char *label,
			       struct integrity_part_plan **plan, struct integrity_part_error *err);
/* Delete partitions from the kernel and the table.  All or nothing: -EBUSY
 * when any of them is mounted, swap, held (holders/) or open exclusively. */
int integrity_part_plan_delete(struct integrity_part_disk *disk, const unsigned *partnos, size_t n,
			       struct integrity_part_plan **plan, struct integrity_part_error *err);
/* Make the kernel's partitions match the table, without touching any that
 * already match.  A partition in use that differs is skipped, except that
 * it may grow in place. */
int integrity_part_plan_sync(struct integrity_part_disk *disk, struct integrity_part_plan **plan,
			     struct integrity_part_error *err);

size_t integrity_part_plan_count(const struct integrity_part_plan *plan);
const struct integrity_part_action *integrity_part_plan_action(const struct integrity_part_plan *plan,
							       size_t index);
/* Write the table (libfdisk, through the locked descriptor) and change the
 * kernel's partitions one at a time (BLKPG), never by a re-read.  Every
 * action gets its result and the kernel's name and number; returns 0, or the
 * first failure (err says which partition).  The disk's entries are not
 * re-read: integrity_part_disk_reload() shows the new state (the next plan
 * reloads by itself). */
int integrity_part_plan_apply(struct integrity_part_plan *plan, struct integrity_part_error *err);
void integrity_part_plan_free(struct integrity_part_plan *plan);

/*
 * The calls above that take a struct integrity_part_spec or
 * integrity_part_error, with the caller's sizeof of each (LIBINTEGRITY_0.2).
 * The names above are macros over these; the library keeps the unsized
 * LIBINTEGRITY_0.1 symbols for programs linked before.
 */
int integrity_part_disk_open_sized(struct integrity_part_disk **disk, const char *path, unsigned flags,
				   struct integrity_part_error *err, size_t err_size);
int integrity_part_disk_reload_sized(struct integrity_part_disk *disk, struct integrity_part_error *err,
				     size_t err_size);
int integrity_part_plan_create_sized(struct integrity_part_disk *disk, const struct integrity_part_spec *spec,
				     size_t spec_size, struct integrity_part_plan **plan,
				     struct integrity_part_error *err, size_t err_size);
int integrity_part_plan_script_sized(struct integrity_part_disk *disk, int fd, const char *label,
				     struct integrity_part_plan **plan, struct integrity_part_error *err,
				     size_t err_size);
int integrity_part_plan_delete_sized(struct integrity_part_disk *disk, const unsigned *partnos, size_t n,
				     struct integrity_part_plan **plan, struct integrity_part_error *err,
				     size_t err_size);
int integrity_part_plan_sync_sized(struct integrity_part_disk *disk, struct integrity_part_plan **plan,
				   struct integrity_part_error *err, size_t err_size);
int integrity_part_plan_apply_sized(struct integrity_part_plan *plan, struct integrity_part_error *err,
				    size_t err_size);

/* Defined only inside the library, where the 0.1 calls keep their names. */
#ifndef LIBINTEGRITY_PART_UNSIZED
#define integrity_part_disk_open(disk, path, flags, err) \
	integrity_part_disk_open_sized((disk), (path), (flags), (err), sizeof(struct integrity_part_error))
#define integrity_part_disk_reload(disk, err) \
	integrity_part_disk_reload_sized((disk), (err), sizeof(struct integrity_part_error))
#define integrity_part_plan_create(disk, spec, plan, err) \
	integrity_part_plan_create_sized((disk), (spec), sizeof(*(spec)), (plan), (err), \
					 sizeof(struct integrity_part_error))
#define integrity_part_plan_script(disk, fd, label, plan, err) \
	integrity_part_plan_script_sized((disk), (fd), (label), (plan), (err), sizeof(struct integrity_part_error))
#define integrity_part_plan_delete(disk, partnos, n, plan, err) \
	integrity_part_plan_delete_sized((disk), (partnos), (n), (plan), (err), sizeof(struct integrity_part_error))
#define integrity_part_plan_sync(disk, plan, err) \
	integrity_part_plan_sync_sized((disk), (plan), (err), sizeof(struct integrity_part_error))
#define integrity_part_plan_apply(plan, err) \
	integrity_part_plan_apply_sized((plan), (err), sizeof(struct integrity_part_error))
#endif

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_PART_H */
