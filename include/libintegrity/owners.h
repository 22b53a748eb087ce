/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: what a block of a device belongs to (a file, file-system
 * metadata, free space).
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_OWNERS_H
#define LIBINTEGRITY_API_OWNERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Owners: what a block of a device belongs to (a file, file-system
 * metadata, free space)
 * ------------------------------------------------------------------------ */

enum integrity_owner_kind {
	INTEGRITY_OWNER_FILE = 0,	/* a file's or a directory's data: path, offset, inode */
	INTEGRITY_OWNER_METADATA,	/* file-system metadata: metadata names its kind */
	INTEGRITY_OWNER_FREE,		/* free space */
	INTEGRITY_OWNER_UNKNOWN,	/* not resolved: note says why */
};
/* "file", "metadata", "free", "unknown". */
const char *integrity_owner_kind_name(enum integrity_owner_kind kind);

/* A file system that holds some of the queried bytes. */
struct integrity_filesystem {
	const char *type;		/* "ext4", "xfs", ...; "" when none was found */
	const char *uuid;		/* NULL when it has none */
	const char *mountpoint;		/* NULL when not mounted (here) */
	const char *device;		/* the block device it is on: "/dev/sdb2" */
	uint64_t start;			/* its first byte on the queried device */
};

#define INTEGRITY_OWNER_SHARED		(1u << 0)	/* shared with other files (reflink) */
#define INTEGRITY_OWNER_UNWRITTEN	(1u << 1)	/* allocated, never written: reads as zeros */
#define INTEGRITY_OWNER_DIRECTORY	(1u << 2)	/* the file is a directory */
/* path does not reach the root: it starts at a directory with no name
 * ("<N>/dir/file", N its inode number) and is no path to open. */
#define INTEGRITY_OWNER_PATH_INCOMPLETE	(1u << 3)

/* One owner of some bytes of a queried range.  A block can have several:
 * every path of a hard-linked file, every file sharing a reflinked extent. */
struct integrity_owner {
	enum integrity_owner_kind kind;
	uint64_t device_offset;		/* the bytes of the range it owns, on the queried device */
	uint64_t device_length;
	const struct integrity_filesystem *fs;	/* NULL outside every file system */
	/* FILE, and the metadata of one file (extent tree, attributes): the
	 * path as the kernel stores it (any bytes but '/' and NUL in a name:
	 * escape it before showing), absolute under the mount point when
	 * mounted, from the file system's root otherwise; NULL when unknown. */
	const char *path;
	uint64_t inode;			/* 0 when none */
	uint64_t offset;		/* FILE: the byte offset in the file */
	uint64_t length;		/* FILE: the bytes of the file (= device_length) */
	/* METADATA: "superblock", "group descriptors", "reserved group
	 * descriptors", "block bitmap", "inode bitmap", "inode table", "journal",
	 * "extent tree", "extended attributes", "allocation group headers",
	 * "free space btree", "inode btree", "refcount btree", "log", ... */
	const char *metadata;
	uint64_t first_inode;		/* "inode table": the inodes whose records */
	uint64_t last_inode;		/* are in the range; 0 when not known */
	unsigned flags;			/* INTEGRITY_OWNER_* */
	const char *note;		/* UNKNOWN: why; otherwise NULL or a remark */
};

/* A byte range of a device. */
struct integrity_byte_range {
	uint64_t offset;
	uint64_t length;
};

struct integrity_owners;

/*
 * What the bytes of device (any name integrity_device_new() takes) in each
 * range belong to, found in one pass for all ranges together: the file
 * systems on the device or, for a whole disk, on the partitions holding the
 * ranges.  Mounted ones (/proc/self/mountinfo) through FS_IOC_GETFSMAP and
 * one walk of the tree with FIEMAP (files are opened, never read; symlinks
 * and other mounts are not followed); unmounted ext2/3/4 through libext2fs;
 * others are UNKNOWN with a note saying what to do.  -ENODEV: no such
 * device; -EINVAL: an empty range or one past the end.
 */
int integrity_owners_resolve(struct integrity_context *ctx, const char *device,
			     const struct integrity_byte_range *ranges, size_t nranges, unsigned flags,
			     struct integrity_owners **owners);
void integrity_owners_free(struct integrity_owners *owners);
/* The owners of range index, in device order, then by path. */
size_t integrity_owners_count(const struct integrity_owners *owners, size_t range);
const struct integrity_owner *integrity_owners_get(const struct integrity_owners *owners, size_t range,
						    size_t index);
/* Distinct files (file system and inode) among every range's FILE owners. */
size_t integrity_owners_damaged_files(const struct integrity_owners *owners);
/* Why some of the queried bytes have no known owner (the note of the first
 * UNKNOWN owner: "no file system found on /dev/sdb"), so that the count of
 * damaged files is a lower bound; NULL when every byte was resolved. */
const char *integrity_owners_unresolved(const struct integrity_owners *owners);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_OWNERS_H */
