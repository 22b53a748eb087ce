/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: what a device is built from: partitions, md RAID, device-mapper
 * and loop devices.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_STACK_H
#define LIBINTEGRITY_API_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Stacks: partitions, md RAID, device-mapper and loop devices
 * ------------------------------------------------------------------------ */

enum integrity_stack_kind {
	INTEGRITY_STACK_DISK = 0,	/* a whole disk (SCSI, NVMe, virtio, ...) */
	INTEGRITY_STACK_PARTITION,
	INTEGRITY_STACK_MD,		/* md RAID */
	INTEGRITY_STACK_DM,		/* device-mapper */
	INTEGRITY_STACK_LOOP,
};

/* "disk", "part", "md", "dm", "loop". */
const char *integrity_stack_kind_name(enum integrity_stack_kind kind);

/* One device's place in the stack, read from sysfs when made: the devices
 * below it (slaves/; a partition's disk) and above it (holders/; a disk's
 * partitions), md's geometry and members, device-mapper's name, UUID and
 * table (through libdevmapper, live system only, as root). */
struct integrity_stack;

int integrity_stack_new(const struct integrity_device *dev, struct integrity_stack **stack);
void integrity_stack_free(struct integrity_stack *stack);

const char *integrity_stack_name(const struct integrity_stack *stack);
enum integrity_stack_kind integrity_stack_kind(const struct integrity_stack *stack);
/* What the device is, as lsblk's TYPE says it: "disk", "part", "loop",
 * "raid1", "raid5", ..., "crypt", "lvm", "integrity", "linear", "dm". */
const char *integrity_stack_type(const struct integrity_stack *stack);
/* Kernel names of the devices this one is made of (below it) and of those
 * made of it (above it), in name order; an md array's members come first,
 * by role, as mdadm --detail lists them. */
size_t integrity_stack_below_count(const struct integrity_stack *stack);
const char *integrity_stack_below(const struct integrity_stack *stack, size_t i);
size_t integrity_stack_above_count(const struct integrity_stack *stack);
const char *integrity_stack_above(const struct integrity_stack *stack, size_t i);
/* How many of the devices above are the disk's partitions: they come
 * first, the holders (md, dm) after them. */
size_t integrity_stack_partition_count(const struct integrity_stack *stack);
/* The stable name a stack device has of its own: "dm-uuid-<UUID>" or
 * "dm-name-<NAME>" for device-mapper, "md-uuid-<UUID>" for md (udev's
 * /dev/disk/by-id names); NULL for others. */
const char *integrity_stack_stable_name(const struct integrity_stack *stack);

/* device-mapper: the name (/dev/mapper/NAME) and UUID; NULL for others
 * (the UUID also when the device has none). */
const char *integrity_stack_dm_name(const struct integrity_stack *stack);
const char *integrity_stack_dm_uuid(const struct integrity_stack *stack);

/* One target of a device-mapper table, in 512-byte sectors. */
struct integrity_dm_target {
	uint64_t start;
	uint64_t length;
	char type[32];			/* "linear", "striped", "crypt", ... */
	const char *params;		/* as the kernel gives them (keys hidden) */
};

/* The table, read through libdevmapper when the stack was made; -ENODATA
 * for a device that is not device-mapper or in a saved sysfs tree, -EPERM
 * or -EACCES without the right to ask.  The targets live as long as the
 * stack. */
int integrity_stack_dm_table(const struct integrity_stack *stack, const struct integrity_dm_target **targets,
			     size_t *count);

/* md RAID: the array's md/ directory. */
struct integrity_md_info {
	char level[16];			/* "raid1", "raid5", ... */
	char uuid[40];			/* md/uuid, "" when the kernel has none */
	uint64_t chunk_size;		/* bytes; 0 for raid1 */
	int layout;			/* -1 when absent */
	unsigned raid_disks;
	char array_state[24];		/* "clean", "active", "inactive", ... */
	int degraded;			/* missing members, -1 when absent */
	int64_t mismatch_cnt;		/* sectors found different by the last check, -1 absent */
	char sync_action[16];		/* "idle", "check", "resync", ... */
};

/* A member: md/dev-<name>/. */
struct integrity_md_member {
	char name[256];			/* kernel name of the member device */
	int slot;			/* role in the array; -1 for a spare, a faulty member
					 * and a RAID4/5/6 write journal (state says which) */
	uint64_t offset;		/* where the data starts on it, sectors */
	char state[64];			/* "in_sync", "spare", "faulty,...", ... */
	uint64_t errors;		/* read errors md corrected on it */
	const char *bad_blocks;		/* md's list: "SECTOR LENGTH" lines, "" if none */
};

/* -ENODATA when the device is not md. */
int integrity_stack_md(const struct integrity_stack *stack, struct integrity_md_info *info);
size_t integrity_stack_md_member_count(const struct integrity_stack *stack);
const struct integrity_md_member *integrity_stack_md_member(const struct integrity_stack *stack,
							    size_t i);

/* Where one block of a device is up and down its stack. */
struct integrity_stack_place {
	char device[256];		/* kernel name: "nvme0n1p1", "md0", "dm-0" */
	uint64_t lba;			/* in that device's logical blocks */
	unsigned depth;			/* 1: right above (below) the device asked about */
};

/* The blocks of the partitions, md arrays and device-mapper devices above
 * dev that hold LBA lba of dev, nearest first (a partition before the md
 * array made of it).  Parity, metadata and devices whose mapping is not
 * plain (dm-integrity, thin) end the chain there.  *places is malloc'd
 * (NULL when *count is 0); -ERANGE past the device's end. */
int integrity_stack_map_above(const struct integrity_device *dev, uint64_t lba,
			      struct integrity_stack_place **places, size_t *count);
/* The blocks below dev that hold its LBA lba, nearest first, down to the
 * disks: every copy of a mirror, the member of a striped array, the device
 * under a dm target. */
int integrity_stack_map_below(const struct integrity_device *dev, uint64_t lba,
			      struct integrity_stack_place **places, size_t *count);
/* Where protection information goes in the stack around a device: the
 * devices above it (to the top, where a file system sits) and below it (to
 * the media; md: its active members), and whether the kernel carries PI
 * through every one of them.  PI stops where a device has no integrity
 * profile: md and device-mapper register one only when every device below
 * has the same, so an array of protected and unprotected members carries
 * none. */
struct integrity_stack_pi_node {
	char name[256];			/* kernel name */
	char type[32];			/* as lsblk's TYPE: "disk", "part", "raid1", "linear" */
	char format[32];		/* the kernel's profile, "none"; "?" when unreadable */
	bool profile;			/* the kernel carries PI through it */
	bool media_pi;			/* at the bottom of the stack, and stores PI */
	unsigned depth;			/* 0 at the top; grows downwards */
};
struct integrity_stack_pi;
int integrity_stack_pi_new(const struct integrity_device *dev, struct integrity_stack_pi **pi);
void integrity_stack_pi_free(struct integrity_stack_pi *pi);
/* The devices, top first. */
size_t integrity_stack_pi_count(const struct integrity_stack_pi *pi);
const struct integrity_stack_pi_node *integrity_stack_pi_node(const struct integrity_stack_pi *pi, size_t i);
/* Every device from the top down to the media carries PI. */
bool integrity_stack_pi_end_to_end(const struct integrity_stack_pi *pi);
/* Some device at the bottom stores PI. */
bool integrity_stack_pi_on_media(const struct integrity_stack_pi *pi);
/* Where PI stops: the lowest device without it, above media that store
 * PI; NULL when it is carried end to end or no media store it. */
const struct integrity_stack_pi_node *integrity_stack_pi_stop(const struct integrity_stack_pi *pi);

/* Who checks protection information when the device is read with a plain
 * read (the kernel method), as each driver really behaves: read_verify is
 * not the whole story. */
enum integrity_read_check {
	INTEGRITY_READ_CHECK_NONE = 0,	/* nothing: no protection, or read_verify off */
	INTEGRITY_READ_CHECK_KERNEL,	/* the kernel verifies (read_verify on) */
	INTEGRITY_READ_CHECK_DEVICE,	/* the device checks: the NVMe driver asks the
					 * controller even with read_verify off;
					 * dm-integrity checks its own tags */
	INTEGRITY_READ_CHECK_BELOW,	/* md and dm ignore read_verify: every device
					 * they are made of checks */
	INTEGRITY_READ_CHECK_PARTIAL,	/* md and dm: some of the devices below check */
};

const char *integrity_read_check_name(enum integrity_read_check check);	/* "none", ... */
/* The check for dev (a partition: its disk's); md and dm from the devices
 * below them, all the way down.  Returns the enum value or -errno. */
int integrity_device_read_check(const struct integrity_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_STACK_H */
