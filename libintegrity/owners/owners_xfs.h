/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* XFS on a mounted file system: its geometry, the bmap ioctl, and what the
 * used space that GETFSMAP cannot name is when there is no reverse map. */
#ifndef LIBINTEGRITY_OWNERS_XFS_H
#define LIBINTEGRITY_OWNERS_XFS_H

#include <stdbool.h>
#include <stdint.h>

#include "owners_int.h"

/* The superblock's fields the owners need (static after mkfs). */
struct xfs_geo {
	uint32_t blocksize, agblocks, agcount, logblocks, spino_align;
	uint16_t sectsize, inodesize;
	uint64_t logstart;		/* file-system block of an internal log, 0 if external */
	uint8_t inopblog, agblklog;
	bool sparse;			/* sparse inode chunks */
	bool v5;			/* inodes with the 176-byte v3 core */
	bool nrext64;			/* 64-bit extent counters */
	bool ok;
	bool damaged;			/* XFS's superblock, but it does not check out */
};

void owners_xfs_geometry(const struct fs_entry *fs, struct xfs_geo *g);
uint64_t owners_xfs_ino_at(const struct xfs_geo *g, uint64_t byte);

/* One mapped extent of a file, in bytes (XFS_IOC_GETBMAPX). */
struct xfs_extent {
	uint64_t logical, physical, length;
	bool unwritten, shared;
};

/* The data fork's extents of an open file or directory, in order, each
 * handed to fn; -errno when the file system has no bmap ioctl. */
int owners_xfs_bmap(int fd, int (*fn)(void *ctx, const struct xfs_extent *x), void *ctx);

/* The inodes whose data and directory blocks hold the wants that have no
 * owner: each extent found becomes a want with its inode (as the reverse
 * map would give it), the bytes between stay wants without.  The inodes
 * whose extents on the device touch a want are asked first, then those
 * nearest the wants, and the search stops once XFS says every
 * wanted byte is in an extent no other file shares.  Needs
 * CAP_SYS_ADMIN (bulkstat) and CAP_DAC_READ_SEARCH (handles): -errno
 * without them. */
int owners_xfs_find(const struct fs_entry *fs, const struct xfs_geo *g, int rootfd, struct want_set *ws);

/* Whether the extents inode record d (a v5 record of g->inodesize bytes,
 * as on the device) lists touch a want in ws (indexed) that has no owner
 * yet; true as well for one whose extents are not all there (the btree
 * format) or that makes no sense.  Reads nothing outside the record.  The
 * device may lag behind the kernel (XFS writes inodes back late): an answer
 * is only to be believed for a record that agrees with what bulkstat says
 * the inode is now. */
bool owners_xfs_record_touches(const struct xfs_geo *g, const struct want_set *ws, const uint8_t *d);

int owners_xfs_handle(int rootfd, uint64_t ino, union owners_handle *h);

/* The wants still unfound, named where the geometry and the inode chunks
 * (XFS_IOC_FSINUMBERS) say what they are; the rest gets an honest note. */
int owners_xfs_metadata(struct integrity_owners *o, const struct fs_entry *fs, const struct xfs_geo *g,
			int rootfd, struct want_set *ws, const char *extra_note);

#endif
