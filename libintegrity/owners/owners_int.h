/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Inside the owners layer: what owners.c, owners_ext2.c and owners_mounted.c
 * share.  Not part of the library's interface. */
#ifndef LIBINTEGRITY_OWNERS_INT_H
#define LIBINTEGRITY_OWNERS_INT_H

#include <ext2fs/ext2fs.h>
#include <fcntl.h>

#include "device.h"
#include "libintegrity/owners.h"

struct owner_list {
	struct integrity_owner *v;
	size_t n, cap;
};

struct fs_entry {
	struct integrity_filesystem pub;
	char *type, *uuid, *mountpoint, *device;
	dev_t devnum;
	uint64_t size;			/* bytes */
	char holder[NAME_MAX + 1];	/* a dm/md device above it, "" if none */
	char mount_root[PATH_MAX];	/* the mounted subtree ("/" normally) */
};

struct integrity_owners {
	struct integrity_byte_range *ranges;
	size_t nranges;
	struct owner_list *owners;	/* one list per range */
	struct fs_entry **fs;
	size_t nfs, fs_cap;
};

/* The part of a queried range that lies in one file system, in that file
 * system's bytes; resolved owners are added to the range's list. */
struct piece {
	size_t range;
	uint64_t dev_off;		/* on the queried device */
	uint64_t fs_off;		/* in the file system */
	uint64_t len;
};

/* A part of a piece that still needs an owner, with what is known of it. */
struct want {
	uint64_t start, end;		/* file-system bytes */
	const struct piece *piece;
	uint64_t inode;			/* XFS rmap: the owner, else 0 */
	uint64_t file_offset;		/* XFS rmap: the offset of start in the file */
	unsigned flags;			/* FMR_OF_* of the rmap record */
	bool found;
};

struct want_set {
	struct want *v;
	size_t n, cap;
	uint64_t *maxend;		/* maxend[i]: the largest end among v[0..i] */
};

int owners_add(struct integrity_owners *o, size_t range, const struct integrity_owner *w);
int owners_want_add(struct want_set *s, const struct want *w);
int owners_want_index(struct want_set *s);
size_t owners_want_first(const struct want_set *s, uint64_t start);
void owners_want_free(struct want_set *s);
/* qsort() and bsearch() order of uint64_t. */
int owners_u64_cmp(const void *a, const void *b);
void owners_span(struct integrity_owner *w, const struct piece *p, uint64_t fs_start, uint64_t fs_end);
/* A path from the file system's root as a path under its mount point,
 * without a leading '/' ("" for the mounted root): NULL when it is outside
 * the mounted subtree (a bind mount of a directory). */
/* A file handle with room for the inode number and generation. */
union owners_handle {
	struct file_handle fh;
	unsigned char bytes[sizeof(struct file_handle) + 12];
};

const char *owners_under_mount_root(const struct fs_entry *fs, const char *path);
int owners_add_simple(struct integrity_owners *o, const struct fs_entry *fs, const struct piece *p,
		      uint64_t start, uint64_t end, enum integrity_owner_kind kind, const char *metadata,
		      const char *note);
size_t *owners_mark(const struct integrity_owners *o);
void owners_rollback(struct integrity_owners *o, const size_t *mark);
int owners_note_since(struct integrity_owners *o, const size_t *mark, const char *note);
int owners_ext2_open(const struct fs_entry *fs, ext2_filsys *out, bool direct, char *why, size_t whylen);
void owners_ext2_table_inodes(ext2_filsys e2, dgrp_t g, uint64_t table, uint64_t start, uint64_t end,
			      uint64_t *first, uint64_t *last);
int owners_ext2_fixed_metadata(ext2_filsys e2, blk64_t blk, const char **what, dgrp_t *group);
int owners_ext2_candidates(ext2_filsys e2, const struct want_set *ws,
			   int (*enough)(void *ctx, const uint64_t *inos, size_t n), void *ctx, uint64_t **out,
			   size_t *nout, ext2_ino_t **dirs, size_t *ndirs);
/* The names of inos (sorted) from the file system's root, read in dirs:
 * a list of paths per inode, or -ENOENT when a name does not reach the
 * root. */
struct strv;
int owners_ext2_paths(ext2_filsys e2, const ext2_ino_t *dirs, size_t ndirs, const uint64_t *inos, size_t ninos,
		      struct strv **out);
int owners_ext2_resolve(struct integrity_owners *o, struct fs_entry *fs, struct want_set *ws, bool mounted,
			char *why, size_t whylen);
int owners_ext2_resolve_unmounted(struct integrity_owners *o, struct fs_entry *fs, const struct piece *pieces,
				  size_t npieces);
int owners_resolve_mounted(struct integrity_owners *o, struct fs_entry *fs, const struct piece *pieces,
			   size_t npieces);

#endif
