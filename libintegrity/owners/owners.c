/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * From bytes of a block device to what they belong to: a file and the
 * offset in it, a kind of file-system metadata, or free space.
 *
 * All ranges are resolved together: each file system is visited once, and
 * a mounted one's tree is walked once (FIEMAP on each file) whatever the
 * number of ranges.  Mounted file systems are found by device number in
 * /proc/self/mountinfo and asked with FS_IOC_GETFSMAP first (free space,
 * metadata; on XFS with the reverse-mapping btree, the owning inode and
 * offset); unmounted ext2/3/4 are read with libext2fs, as debugfs's icheck
 * and ncheck do.  Files are opened only for FIEMAP, never read; symlinks
 * are never followed and other mounts never entered.
 */
#include "config.h"

#include <blkid.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <search.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>

#include "device.h"

/* ------------------------------------------------------------------ results */

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
	size_t nfs;
};

INTEGRITY_EXPORT const char *integrity_owner_kind_name(enum integrity_owner_kind kind)
{
	static const char *const names[] = { "file", "metadata", "free", "unknown" };

	return (unsigned)kind < ARRAY_SIZE(names) ? names[kind] : "unknown";
}

static int owner_add(struct integrity_owners *o, size_t range, const struct integrity_owner *w)
{
	struct owner_list *l = &o->owners[range];

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4;
		void *v = reallocarray(l->v, cap, sizeof(*l->v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	struct integrity_owner *d = &l->v[l->n];
	*d = *w;
	d->path = w->path ? strdup(w->path) : NULL;
	d->note = w->note ? strdup(w->note) : NULL;
	if ((w->path && !d->path) || (w->note && !d->note)) {
		free((char *)d->path);
		free((char *)d->note);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

INTEGRITY_EXPORT void integrity_owners_free(struct integrity_owners *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nranges; i++) {
		for (size_t k = 0; k < o->owners[i].n; k++) {
			free((char *)o->owners[i].v[k].path);
			free((char *)o->owners[i].v[k].note);
		}
		free(o->owners[i].v);
	}
	for (size_t i = 0; i < o->nfs; i++) {
		free(o->fs[i]->type);
		free(o->fs[i]->uuid);
		free(o->fs[i]->mountpoint);
		free(o->fs[i]->device);
		free(o->fs[i]);
	}
	free(o->fs);
	free(o->owners);
	free(o->ranges);
	free(o);
}

INTEGRITY_EXPORT size_t integrity_owners_count(const struct integrity_owners *o, size_t range)
{
	return o && range < o->nranges ? o->owners[range].n : 0;
}

INTEGRITY_EXPORT const struct integrity_owner *integrity_owners_get(const struct integrity_owners *o,
								   size_t range, size_t index)
{
	if (!o || range >= o->nranges || index >= o->owners[range].n)
		return NULL;
	return &o->owners[range].v[index];
}

struct file_key {
	const struct integrity_filesystem *fs;
	uint64_t inode;
};

static int file_key_cmp(const void *a, const void *b)
{
	const struct file_key *x = a, *y = b;

	if (x->fs != y->fs)
		return x->fs < y->fs ? -1 : 1;
	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

INTEGRITY_EXPORT size_t integrity_owners_damaged_files(const struct integrity_owners *o)
{
	size_t n = 0, distinct = 0;

	if (!o)
		return 0;
	for (size_t i = 0; i < o->nranges; i++)
		n += o->owners[i].n;
	struct file_key *keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys)
		return 0;
	n = 0;
	for (size_t i = 0; i < o->nranges; i++)
		for (size_t k = 0; k < o->owners[i].n; k++) {
			const struct integrity_owner *w = &o->owners[i].v[k];
			if (w->kind == INTEGRITY_OWNER_FILE)
				keys[n++] = (struct file_key){ w->fs, w->inode ? w->inode : (uintptr_t)w };
		}
	qsort(keys, n, sizeof(*keys), file_key_cmp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || file_key_cmp(&keys[i - 1], &keys[i]) != 0)
			distinct++;
	free(keys);
	return distinct;
}

/* ------------------------------------------------------------------ pieces */

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

static int want_add(struct want_set *s, const struct want *w)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		void *v = reallocarray(s->v, cap, sizeof(*s->v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = *w;
	return 0;
}

static int want_cmp(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sort by start, for want_first(). */
static int want_index(struct want_set *s)
{
	qsort(s->v, s->n, sizeof(*s->v), want_cmp);
	free(s->maxend);
	s->maxend = calloc(s->n ? s->n : 1, sizeof(*s->maxend));
	if (!s->maxend)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		s->maxend[i] = i && s->maxend[i - 1] > s->v[i].end ? s->maxend[i - 1] : s->v[i].end;
	return 0;
}

/* The first want that may overlap bytes from start on: later ones that
 * overlap follow it, until one starts at or past the end. */
static size_t want_first(const struct want_set *s, uint64_t start)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->maxend[mid] > start)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void want_free(struct want_set *s)
{
	free(s->v);
	free(s->maxend);
	memset(s, 0, sizeof(*s));
}

static void owner_span(struct integrity_owner *w, const struct piece *p, uint64_t fs_start, uint64_t fs_end)
{
	w->device_offset = p->dev_off + (fs_start - p->fs_off);
	w->device_length = fs_end - fs_start;
}

static int add_simple(struct integrity_owners *o, const struct fs_entry *fs, const struct piece *p,
		      uint64_t start, uint64_t end, enum integrity_owner_kind kind, const char *metadata,
		      const char *note)
{
	struct integrity_owner w = { .kind = kind, .fs = fs ? &fs->pub : NULL, .metadata = metadata,
				     .note = note };

	owner_span(&w, p, start, end);
	return owner_add(o, p->range, &w);
}

/* ------------------------------------------------------------------ ext2/3/4 through libext2fs */

static int ext2_errno(errcode_t e)
{
	return e > 0 && e < 4096 ? -(int)e : -EIO;
}

/* A block that cannot be read (the bad block itself may hold inodes) reads
 * as zeros: a multi-block read is retried block by block first, so that
 * only the blocks that fail are lost, not the inodes around them. */
static errcode_t ext2_read_error(io_channel ch, unsigned long block, int count, void *data, size_t size,
				 _unused_ int actual, _unused_ errcode_t error)
{
	if (count > 1) {
		for (int i = 0; i < count; i++)
			io_channel_read_blk64(ch, block + (unsigned long)i, 1, (char *)data + (size_t)i * ch->block_size);
		return 0;
	}
	memset(data, 0, size);
	return 0;
}

static int ext2_open(const struct fs_entry *fs, ext2_filsys *out)
{
	errcode_t e = ext2fs_open2(fs->device, NULL,
				   EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | EXT2_FLAG_IGNORE_CSUM_ERRORS |
					   EXT2_FLAG_SOFTSUPP_FEATURES,
				   0, 0, unix_io_manager, out);
	if (e)
		return ext2_errno(e);
	(*out)->io->read_error = ext2_read_error;
	return 0;
}

/* The inodes whose records lie in bytes [start, end) of group g's table. */
static void ext2_table_inodes(ext2_filsys e2, dgrp_t g, uint64_t table, uint64_t start, uint64_t end,
			      uint64_t *first, uint64_t *last)
{
	uint64_t isz = EXT2_INODE_SIZE(e2->super), ipg = e2->super->s_inodes_per_group;
	uint64_t a = (start - table) / isz, b = (end - 1 - table) / isz;

	if (b >= ipg)
		b = ipg - 1;
	*first = (uint64_t)g * ipg + a + 1;
	*last = (uint64_t)g * ipg + b + 1;
}

/* Which fixed metadata the block is: 0 and *what set, or 1 when none. */
static int ext2_fixed_metadata(ext2_filsys e2, blk64_t blk, const char **what, dgrp_t *group)
{
	dgrp_t g = ext2fs_group_of_blk2(e2, blk);
	blk64_t super, old_desc, new_desc;
	blk_t used;

	*group = g;
	if (blk < e2->super->s_first_data_block) {
		*what = "boot block";
		return 0;
	}
	if (g >= e2->group_desc_count)
		return 1;
	/* The group holding it and, with meta_bg, the descriptors elsewhere:
	 * check the group's own layout. */
	if (ext2fs_super_and_bgd_loc2(e2, g, &super, &old_desc, &new_desc, &used) == 0) {
		if (blk == super && (super || g == 0)) {
			*what = "superblock";
			return 0;
		}
		if (old_desc && blk >= old_desc && blk < old_desc + e2->desc_blocks) {
			*what = "group descriptors";
			return 0;
		}
		if (old_desc && blk >= old_desc + e2->desc_blocks &&
		    blk < old_desc + e2->desc_blocks + e2->super->s_reserved_gdt_blocks) {
			*what = "reserved group descriptors";
			return 0;
		}
		if (new_desc && blk == new_desc) {
			*what = "group descriptors";
			return 0;
		}
	}
	/* With flex_bg, bitmaps and tables of other groups live here: look at all. */
	for (dgrp_t k = 0; k < e2->group_desc_count; k++) {
		if (blk == ext2fs_block_bitmap_loc(e2, k)) {
			*what = "block bitmap";
			*group = k;
			return 0;
		}
		if (blk == ext2fs_inode_bitmap_loc(e2, k)) {
			*what = "inode bitmap";
			*group = k;
			return 0;
		}
		blk64_t t = ext2fs_inode_table_loc(e2, k);
		if (t && blk >= t && blk < t + e2->inode_blocks_per_group) {
			*what = "inode table";
			*group = k;
			return 0;
		}
	}
	return 1;
}

/* One block wanted by the inode scan, in file-system blocks. */
struct e2_want {
	blk64_t blk;
	struct want *w;			/* the part of a piece in this block */
	ext2_ino_t ino[4];		/* owners found (icheck) */
	e2_blkcnt_t blockcnt[4];
	size_t nowners;
};

struct e2_scan {
	struct e2_want *v;
	size_t n;
	ext2_ino_t ino;
};

static int e2_want_cmp(const void *a, const void *b)
{
	const struct e2_want *x = a, *y = b;

	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

static int e2_block(_unused_ ext2_filsys e2, blk64_t *blocknr, e2_blkcnt_t blockcnt, _unused_ blk64_t ref_blk,
		    _unused_ int ref_offset, void *data)
{
	struct e2_scan *s = data;
	struct e2_want key = { .blk = *blocknr };
	struct e2_want *hit = bsearch(&key, s->v, s->n, sizeof(*s->v), e2_want_cmp);

	/* Several wants may share a block: the first with it, then the rest. */
	while (hit && hit > s->v && hit[-1].blk == *blocknr)
		hit--;
	for (; hit && hit < s->v + s->n && hit->blk == *blocknr; hit++)
		if (hit->nowners < ARRAY_SIZE(hit->ino)) {
			hit->ino[hit->nowners] = s->ino;
			hit->blockcnt[hit->nowners++] = blockcnt;
		}
	return 0;
}

/* Paths of wanted inodes, as ncheck finds them: every directory's entries. */
struct e2_names {
	ext2_filsys e2;
	ext2_ino_t dir;
	ext2_ino_t *inos;		/* sorted */
	size_t ninos;
	char ***paths;			/* per wanted inode: NULL-terminated */
	size_t *npaths;
	bool *is_dir;
	int err;
};

static int ino_cmp(const void *a, const void *b)
{
	ext2_ino_t x = *(const ext2_ino_t *)a, y = *(const ext2_ino_t *)b;

	return x < y ? -1 : x > y;
}

static int e2_path_push(struct e2_names *n, size_t i, const char *path)
{
	char **v = reallocarray(n->paths[i], n->npaths[i] + 2, sizeof(*v));

	if (!v)
		return -ENOMEM;
	n->paths[i] = v;
	v[n->npaths[i]] = strdup(path);
	if (!v[n->npaths[i]])
		return -ENOMEM;
	v[++n->npaths[i]] = NULL;
	return 0;
}

static int e2_dirent(struct ext2_dir_entry *d, _unused_ int offset, _unused_ int blocksize, _unused_ char *buf,
		     void *data)
{
	struct e2_names *n = data;
	int len = ext2fs_dirent_name_len(d);
	ext2_ino_t ino = d->inode;

	if ((len == 1 && d->name[0] == '.') || (len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	ext2_ino_t *hit = bsearch(&ino, n->inos, n->ninos, sizeof(ino), ino_cmp);
	if (!hit)
		return 0;
	char *dirpath = NULL;
	if (ext2fs_get_pathname(n->e2, n->dir, 0, &dirpath) != 0)
		return 0;
	size_t dl = strlen(dirpath);
	char *path = malloc(dl + (size_t)len + 2);
	if (!path) {
		ext2fs_free_mem(&dirpath);
		n->err = -ENOMEM;
		return DIRENT_ABORT;
	}
	memcpy(path, dirpath, dl);
	if (dl == 0 || path[dl - 1] != '/')
		path[dl++] = '/';
	memcpy(path + dl, d->name, (size_t)len);
	path[dl + (size_t)len] = '\0';
	ext2fs_free_mem(&dirpath);
	int r = e2_path_push(n, (size_t)(hit - n->inos), path);
	free(path);
	if (r < 0) {
		n->err = r;
		return DIRENT_ABORT;
	}
	return 0;
}

static int e2_find_names(ext2_filsys e2, struct e2_names *n)
{
	ext2_inode_scan scan;
	struct ext2_inode inode;
	ext2_ino_t ino;

	n->paths = calloc(n->ninos ? n->ninos : 1, sizeof(*n->paths));
	n->npaths = calloc(n->ninos ? n->ninos : 1, sizeof(*n->npaths));
	n->is_dir = calloc(n->ninos ? n->ninos : 1, sizeof(*n->is_dir));
	if (!n->paths || !n->npaths || !n->is_dir)
		return -ENOMEM;
	for (size_t i = 0; i < n->ninos; i++) {
		if (n->inos[i] == EXT2_ROOT_INO && e2_path_push(n, i, "/") < 0)
			return -ENOMEM;
	}
	if (ext2fs_open_inode_scan(e2, 0, &scan) != 0)
		return -EIO;
	while (ext2fs_get_next_inode(scan, &ino, &inode) == 0 && ino) {
		ext2_ino_t *hit = bsearch(&ino, n->inos, n->ninos, sizeof(ino), ino_cmp);
		if (hit)
			n->is_dir[hit - n->inos] = LINUX_S_ISDIR(inode.i_mode);
		if (!inode.i_links_count || !LINUX_S_ISDIR(inode.i_mode) || inode.i_dtime)
			continue;
		n->dir = ino;
		ext2fs_dir_iterate(e2, ino, 0, NULL, e2_dirent, n);
		if (n->err)
			break;
	}
	ext2fs_close_inode_scan(scan);
	return n->err;
}

static void e2_names_free(struct e2_names *n)
{
	for (size_t i = 0; n->paths && i < n->ninos; i++) {
		for (size_t k = 0; k < n->npaths[i]; k++)
			free(n->paths[i][k]);
		free(n->paths[i]);
	}
	free(n->paths);
	free(n->npaths);
	free(n->is_dir);
	free(n->inos);
}

static const char *e2_reserved_inode(ext2_filsys e2, ext2_ino_t ino)
{
	if (ino == e2->super->s_journal_inum && ino)
		return "journal";
	switch (ino) {
	case EXT2_BAD_INO:
		return "bad blocks inode";
	case EXT2_RESIZE_INO:
		return "reserved group descriptors";
	case EXT4_USR_QUOTA_INO:
	case EXT4_GRP_QUOTA_INO:
		return "quota";
	case EXT2_EXCLUDE_INO:
		return "snapshot exclusion bitmap";
	case EXT2_BOOT_LOADER_INO:
		return "boot loader inode";
	case EXT2_UNDEL_DIR_INO:
		return "undelete directory";
	}
	if (ino == e2->super->s_prj_quota_inum && ino)
		return "quota";
	if (ino == e2->super->s_orphan_file_inum && ino)
		return "orphan file";
	return NULL;
}

/* The wants that are still open, for an ext2/3/4 file system read with
 * libext2fs (unmounted, or what a mounted one's kernel would not say).
 * free_known: free space is already told (GETFSMAP), do not read the
 * bitmap (it may be stale while mounted). */
static int ext2_resolve(struct integrity_owners *o, struct fs_entry *fs, struct want_set *ws, bool mounted)
{
	ext2_filsys e2;
	int r = ext2_open(fs, &e2);

	if (r < 0)
		return r;
	uint64_t bs = e2->blocksize;
	struct e2_scan scan = { 0 };
	struct e2_names names = { .e2 = e2 };
	bool bitmap = !mounted && ext2fs_read_block_bitmap(e2) == 0;

	/* Fixed metadata and free space first; the rest, block by block, to the inode scan. */
	for (size_t i = 0; i < ws->n && r == 0; i++) {
		struct want *w = &ws->v[i];
		if (w->found)
			continue;
		for (uint64_t b = w->start / bs; b * bs < w->end && r == 0; b++) {
			uint64_t s = b * bs > w->start ? b * bs : w->start;
			uint64_t e = (b + 1) * bs < w->end ? (b + 1) * bs : w->end;
			const char *what;
			dgrp_t g;
			if (ext2_fixed_metadata(e2, b, &what, &g) == 0) {
				struct integrity_owner ow = { .kind = INTEGRITY_OWNER_METADATA, .fs = &fs->pub,
							      .metadata = what };
				owner_span(&ow, w->piece, s, e);
				if (strcmp(what, "inode table") == 0)
					ext2_table_inodes(e2, g, ext2fs_inode_table_loc(e2, g) * bs, s, e,
							  &ow.first_inode, &ow.last_inode);
				r = owner_add(o, w->piece->range, &ow);
				continue;
			}
			if (bitmap && b < ext2fs_blocks_count(e2->super) &&
			    !ext2fs_test_block_bitmap2(e2->block_map, b)) {
				r = add_simple(o, fs, w->piece, s, e, INTEGRITY_OWNER_FREE, NULL, NULL);
				continue;
			}
			void *v = reallocarray(scan.v, scan.n + 1, sizeof(*scan.v));
			if (!v) {
				r = -ENOMEM;
				break;
			}
			scan.v = v;
			/* A part of the want in this block: a copy that remembers its bytes. */
			struct want *part = malloc(sizeof(*part));
			if (!part) {
				r = -ENOMEM;
				break;
			}
			*part = *w;
			part->start = s;
			part->end = e;
			scan.v[scan.n++] = (struct e2_want){ .blk = b, .w = part };
		}
		w->found = true;
	}
	if (r == 0 && scan.n) {
		qsort(scan.v, scan.n, sizeof(*scan.v), e2_want_cmp);
		ext2_inode_scan is;
		struct ext2_inode inode;
		ext2_ino_t ino;
		if (ext2fs_open_inode_scan(e2, 0, &is) != 0) {
			r = -EIO;
		} else {
			while (ext2fs_get_next_inode(is, &ino, &inode) == 0 && ino) {
				if (!inode.i_links_count && ino >= EXT2_FIRST_INO(e2->super))
					continue;
				if (inode.i_dtime && ino >= EXT2_FIRST_INO(e2->super))
					continue;
				scan.ino = ino;
				blk64_t acl = ext2fs_file_acl_block(e2, &inode);
				if (acl) {
					blk64_t a = acl;
					e2_block(e2, &a, -5, 0, 0, &scan);
				}
				if (ext2fs_inode_has_valid_blocks2(e2, &inode))
					ext2fs_block_iterate3(e2, ino, BLOCK_FLAG_READ_ONLY, NULL, e2_block, &scan);
			}
			ext2fs_close_inode_scan(is);
		}
	}
	/* The owners' names. */
	if (r == 0 && scan.n) {
		names.inos = calloc(scan.n * ARRAY_SIZE(scan.v[0].ino), sizeof(*names.inos));
		if (!names.inos)
			r = -ENOMEM;
		for (size_t i = 0; r == 0 && i < scan.n; i++)
			for (size_t k = 0; k < scan.v[i].nowners; k++)
				if (scan.v[i].ino[k] >= EXT2_FIRST_INO(e2->super) || scan.v[i].ino[k] == EXT2_ROOT_INO)
					names.inos[names.ninos++] = scan.v[i].ino[k];
		if (r == 0) {
			qsort(names.inos, names.ninos, sizeof(*names.inos), ino_cmp);
			size_t u = 0;
			for (size_t i = 0; i < names.ninos; i++)
				if (!u || names.inos[u - 1] != names.inos[i])
					names.inos[u++] = names.inos[i];
			names.ninos = u;
			r = e2_find_names(e2, &names);
		}
	}
	for (size_t i = 0; r == 0 && i < scan.n; i++) {
		struct e2_want *ew = &scan.v[i];
		const struct piece *p = ew->w->piece;
		if (!ew->nowners) {
			r = add_simple(o, fs, p, ew->w->start, ew->w->end, INTEGRITY_OWNER_UNKNOWN, NULL,
				       mounted ? "in use, but no inode on the device refers to it "
						 "(changed since it was last written back?)"
					       : "in use, but no inode refers to it (fsck would say more)");
			continue;
		}
		for (size_t k = 0; k < ew->nowners && r == 0; k++) {
			ext2_ino_t ino = ew->ino[k];
			struct integrity_owner ow = { .kind = INTEGRITY_OWNER_FILE, .fs = &fs->pub, .inode = ino };
			owner_span(&ow, p, ew->w->start, ew->w->end);
			const char *reserved = ino < EXT2_FIRST_INO(e2->super) && ino != EXT2_ROOT_INO
						       ? e2_reserved_inode(e2, ino) : NULL;
			if (ino < EXT2_FIRST_INO(e2->super) && ino != EXT2_ROOT_INO) {
				ow.kind = INTEGRITY_OWNER_METADATA;
				ow.metadata = reserved ? reserved : "reserved inode";
				ow.inode = 0;
				r = owner_add(o, p->range, &ow);
				continue;
			}
			if (ew->blockcnt[k] == -5) {
				ow.kind = INTEGRITY_OWNER_METADATA;
				ow.metadata = "extended attributes";
			} else if (ew->blockcnt[k] < 0) {
				ow.kind = INTEGRITY_OWNER_METADATA;
				ow.metadata = ext2fs_has_feature_extents(e2->super) ? "extent tree" : "indirect block";
			} else {
				ow.offset = (uint64_t)ew->blockcnt[k] * bs + (ew->w->start % bs);
				ow.length = ow.device_length;
			}
			ext2_ino_t *hit = bsearch(&ino, names.inos, names.ninos, sizeof(ino), ino_cmp);
			size_t ni = hit ? (size_t)(hit - names.inos) : 0;
			if (hit && names.is_dir[ni])
				ow.flags |= INTEGRITY_OWNER_DIRECTORY;
			if (!hit || !names.npaths[ni]) {
				ow.note = "no path: not linked in any directory";
				r = owner_add(o, p->range, &ow);
				continue;
			}
			for (size_t k2 = 0; k2 < names.npaths[ni] && r == 0; k2++) {
				ow.path = names.paths[ni][k2];
				r = owner_add(o, p->range, &ow);
			}
		}
	}
	for (size_t i = 0; i < scan.n; i++)
		free(scan.v[i].w);
	free(scan.v);
	e2_names_free(&names);
	ext2fs_close_free(&e2);
	return r;
}

/* ------------------------------------------------------------------ mounted: GETFSMAP */

static const char *fsmap_owner_name(const struct fs_entry *fs, uint64_t owner)
{
	bool xfs = strcmp(fs->type, "xfs") == 0;

	switch (owner) {
	case FMR_OWNER('X', 1): return xfs ? "superblock and allocation group headers" : "superblock";
	case FMR_OWNER('X', 2): return xfs ? "log" : "journal";
	case FMR_OWNER('X', 3): return "allocation group btrees";
	case FMR_OWNER('X', 4): return "inode btree";
	case FMR_OWNER('X', 5): return "inode table";
	case FMR_OWNER('X', 6): return "refcount btree";
	case FMR_OWNER('X', 7): return "copy-on-write staging";
	case FMR_OWNER('X', 8): return "bad blocks";
	case FMR_OWNER('f', 1): return "group descriptors";
	case FMR_OWNER('f', 2): return "reserved group descriptors";
	case FMR_OWNER('f', 3): return "block bitmap";
	case FMR_OWNER('f', 4): return "inode bitmap";
	}
	return "metadata";
}

#define FSMAP_OWN_FREE FMR_OWNER(0, 1)
#define FSMAP_OWN_UNKNOWN FMR_OWNER(0, 2)
#define FSMAP_OWN_INODES FMR_OWNER('X', 5)

/* XFS geometry from its superblock, for inode numbers of inode chunks. */
struct xfs_geo {
	uint32_t blocksize, agblocks;
	uint8_t inopblog, agblklog;
	bool ok;
};

static void xfs_geometry(const struct fs_entry *fs, struct xfs_geo *g)
{
	uint8_t sb[512];
	_cleanup_close_ int fd = open(fs->device, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	memset(g, 0, sizeof(*g));
	if (fd < 0 || pread(fd, sb, sizeof(sb), 0) != (ssize_t)sizeof(sb) || memcmp(sb, "XFSB", 4) != 0)
		return;
	g->blocksize = get_be32(sb + 4);
	g->agblocks = get_be32(sb + 84);
	g->inopblog = sb[123];
	g->agblklog = sb[124];
	g->ok = g->blocksize && g->agblocks && g->agblklog < 32 && g->inopblog < 16;
}

static uint64_t xfs_ino_at(const struct xfs_geo *g, uint64_t byte)
{
	uint64_t bno = byte / g->blocksize, agno = bno / g->agblocks, agbno = bno % g->agblocks;
	uint64_t in_block = (byte % g->blocksize) >> (__builtin_ctz(g->blocksize) - g->inopblog);

	return agno << (g->agblklog + g->inopblog) | agbno << g->inopblog | in_block;
}

struct fsmap_ctx {
	struct integrity_owners *o;
	struct fs_entry *fs;
	struct want_set *ws;		/* parts left for the walk, or for libext2fs */
	struct xfs_geo xfs;
	ext2_filsys e2;			/* ext4 geometry for inode-table ranges, or NULL */
};

/* One GETFSMAP record against one piece. */
static int fsmap_record(struct fsmap_ctx *c, const struct piece *p, const struct fsmap *m)
{
	uint64_t s = m->fmr_physical > p->fs_off ? m->fmr_physical : p->fs_off;
	uint64_t e = m->fmr_physical + m->fmr_length;

	if (e > p->fs_off + p->len)
		e = p->fs_off + p->len;
	if (s >= e)
		return 0;
	if (m->fmr_owner == FSMAP_OWN_FREE && (m->fmr_flags & FMR_OF_SPECIAL_OWNER))
		return add_simple(c->o, c->fs, p, s, e, INTEGRITY_OWNER_FREE, NULL, NULL);
	if (m->fmr_owner == FSMAP_OWN_UNKNOWN || !(m->fmr_flags & FMR_OF_SPECIAL_OWNER)) {
		struct want w = { .start = s, .end = e, .piece = p };
		if (!(m->fmr_flags & FMR_OF_SPECIAL_OWNER)) {
			w.inode = m->fmr_owner;
			w.file_offset = m->fmr_offset + (s - m->fmr_physical);
			w.flags = m->fmr_flags;
		}
		return want_add(c->ws, &w);
	}
	struct integrity_owner ow = { .kind = INTEGRITY_OWNER_METADATA, .fs = &c->fs->pub,
				      .metadata = fsmap_owner_name(c->fs, m->fmr_owner) };
	owner_span(&ow, p, s, e);
	if (m->fmr_owner == FSMAP_OWN_INODES) {
		if (c->xfs.ok) {
			ow.first_inode = xfs_ino_at(&c->xfs, s);
			ow.last_inode = xfs_ino_at(&c->xfs, e - 1);
		} else if (c->e2) {
			uint64_t bs = c->e2->blocksize;
			const char *what;
			dgrp_t g;
			if (ext2_fixed_metadata(c->e2, s / bs, &what, &g) == 0 && strcmp(what, "inode table") == 0) {
				uint64_t table = ext2fs_inode_table_loc(c->e2, g) * bs;
				uint64_t end = (ext2fs_inode_table_loc(c->e2, g) + c->e2->inode_blocks_per_group) * bs;
				ext2_table_inodes(c->e2, g, table, s, e < end ? e : end, &ow.first_inode,
						  &ow.last_inode);
			}
		}
	}
	return owner_add(c->o, p->range, &ow);
}

/* GETFSMAP over each piece: -EOPNOTSUPP when the file system has none. */
static int fsmap_pieces(struct fsmap_ctx *c, int rootfd, const struct piece *pieces, size_t npieces)
{
	enum { N = 128 };
	struct fsmap_head *h = calloc(1, sizeof(*h) + N * sizeof(struct fsmap));
	int r = 0;

	if (!h)
		return -ENOMEM;
	for (size_t i = 0; i < npieces && r == 0; i++) {
		const struct piece *p = &pieces[i];
		memset(h, 0, sizeof(*h));
		h->fmh_count = N;
		h->fmh_keys[0].fmr_device = (uint32_t)c->fs->devnum;
		h->fmh_keys[0].fmr_physical = p->fs_off;
		h->fmh_keys[1].fmr_device = (uint32_t)c->fs->devnum;
		h->fmh_keys[1].fmr_physical = p->fs_off + p->len - 1;
		h->fmh_keys[1].fmr_owner = UINT64_MAX;
		h->fmh_keys[1].fmr_offset = UINT64_MAX;
		h->fmh_keys[1].fmr_flags = UINT32_MAX;
		uint64_t covered = p->fs_off;
		for (;;) {
			if (ioctl(rootfd, FS_IOC_GETFSMAP, h) < 0) {
				r = errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP ? -EOPNOTSUPP : -errno;
				break;
			}
			if (!h->fmh_entries)
				break;
			for (unsigned k = 0; k < h->fmh_entries && r == 0; k++) {
				const struct fsmap *m = &h->fmh_recs[k];
				r = fsmap_record(c, p, m);
				if (m->fmr_physical + m->fmr_length > covered)
					covered = m->fmr_physical + m->fmr_length;
			}
			if (r < 0 || (h->fmh_recs[h->fmh_entries - 1].fmr_flags & FMR_OF_LAST))
				break;
			h->fmh_keys[0] = h->fmh_recs[h->fmh_entries - 1];
		}
		/* Past the records (the end of a device): unknown. */
		if (r == 0 && covered < p->fs_off + p->len)
			r = want_add(c->ws, &(struct want){ .start = covered, .end = p->fs_off + p->len, .piece = p });
	}
	free(h);
	return r;
}

/* ------------------------------------------------------------------ mounted: one walk of the tree */

struct seen_inode {
	uint64_t ino;
	size_t first_hit, nhits;	/* in walk->hits */
	bool is_dir;
};

struct hit {
	struct want *w;
	uint64_t s, e, file_offset;
	unsigned flags;
};

struct walk {
	struct integrity_owners *o;
	struct fs_entry *fs;
	struct want_set *ws;
	bool fiemap;			/* map every file's extents */
	uint64_t *inodes;		/* wanted by rmap: their paths, sorted */
	size_t ninodes;
	char ***inode_paths;		/* per wanted inode */
	size_t *inode_npaths;
	bool *inode_dir;
	/* Hard links: the hits of an inode already mapped, for its other paths. */
	struct seen_inode *seen;
	size_t nseen, capseen;
	struct hit *hits;
	size_t nhits, caphits;
	struct fiemap *fm;
	unsigned unreadable;
	uint64_t mnt_id;		/* the mount walked (statx), 0 when unknown */
	int err;
};

enum { FIEMAP_N = 256 };

static int add_file_owner(struct walk *wk, const char *path, uint64_t ino, bool is_dir, const struct hit *h)
{
	struct integrity_owner ow = { .kind = INTEGRITY_OWNER_FILE, .fs = &wk->fs->pub, .path = path,
				      .inode = ino, .offset = h->file_offset };

	owner_span(&ow, h->w->piece, h->s, h->e);
	ow.length = ow.device_length;
	if (h->flags & FIEMAP_EXTENT_SHARED)
		ow.flags |= INTEGRITY_OWNER_SHARED;
	if (h->flags & FIEMAP_EXTENT_UNWRITTEN)
		ow.flags |= INTEGRITY_OWNER_UNWRITTEN;
	if (is_dir)
		ow.flags |= INTEGRITY_OWNER_DIRECTORY;
	h->w->found = true;
	return owner_add(wk->o, h->w->piece->range, &ow);
}

static int hit_push(struct walk *wk, const struct hit *h)
{
	if (wk->nhits == wk->caphits) {
		size_t cap = wk->caphits ? wk->caphits * 2 : 64;
		void *v = reallocarray(wk->hits, cap, sizeof(*wk->hits));
		if (!v)
			return -ENOMEM;
		wk->hits = v;
		wk->caphits = cap;
	}
	wk->hits[wk->nhits++] = *h;
	return 0;
}

/* FIEMAP of one open file: the wanted bytes in its extents. */
static int map_file(struct walk *wk, int fd, size_t *nfound)
{
	struct fiemap *fm = wk->fm;
	uint64_t start = 0;

	*nfound = 0;
	for (;;) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = FIEMAP_N;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
			return 0;	/* not mappable (a directory on some file systems) */
		if (!fm->fm_mapped_extents)
			return 0;
		for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &fm->fm_extents[i];
			if (!(x->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED))) {
				uint64_t a = x->fe_physical, b = x->fe_physical + x->fe_length;
				for (size_t k = want_first(wk->ws, a); k < wk->ws->n && wk->ws->v[k].start < b; k++) {
					struct want *w = &wk->ws->v[k];
					uint64_t s = w->start > a ? w->start : a, e = w->end < b ? w->end : b;
					if (s >= e || w->inode)
						continue;
					struct hit h = { .w = w, .s = s, .e = e,
							 .file_offset = x->fe_logical + (s - a), .flags = x->fe_flags };
					int r = hit_push(wk, &h);
					if (r < 0)
						return r;
					(*nfound)++;
				}
			}
			if (x->fe_flags & FIEMAP_EXTENT_LAST)
				return 0;
		}
		const struct fiemap_extent *last = &fm->fm_extents[fm->fm_mapped_extents - 1];
		start = last->fe_logical + last->fe_length;
	}
}

static int seen_cmp(const void *a, const void *b)
{
	const struct seen_inode *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A file of the tree: its path recorded when rmap wanted its inode, its
 * extents mapped (once per inode) when the walk maps files. */
static int visit(struct walk *wk, int dirfd, const char *name, const char *path, const struct stat *st)
{
	bool is_dir = S_ISDIR(st->st_mode);
	uint64_t *want = wk->ninodes ? bsearch(&(uint64_t){ st->st_ino }, wk->inodes, wk->ninodes,
						sizeof(uint64_t), u64_cmp) : NULL;
	int r;

	if (want) {
		size_t i = (size_t)(want - wk->inodes);
		char **v = reallocarray(wk->inode_paths[i], wk->inode_npaths[i] + 1, sizeof(*v));
		if (!v)
			return -ENOMEM;
		wk->inode_paths[i] = v;
		if (!(v[wk->inode_npaths[i]] = strdup(path)))
			return -ENOMEM;
		wk->inode_npaths[i]++;
		wk->inode_dir[i] = is_dir;
	}
	if (!wk->fiemap || !(S_ISREG(st->st_mode) || is_dir))
		return 0;
	/* A hard link seen before: its hits again, under this path. */
	struct seen_inode key = { .ino = st->st_ino };
	struct seen_inode *seen = st->st_nlink > 1 && !is_dir
					  ? bsearch(&key, wk->seen, wk->nseen, sizeof(key), seen_cmp) : NULL;
	if (seen) {
		for (size_t i = 0; i < seen->nhits; i++) {
			struct hit h = wk->hits[seen->first_hit + i];
			if ((r = add_file_owner(wk, path, st->st_ino, false, &h)) < 0)
				return r;
		}
		return 0;
	}
	int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (is_dir ? O_DIRECTORY : 0);
	int fd = openat(dirfd, name, flags | O_NOATIME);
	if (fd < 0 && errno == EPERM)
		fd = openat(dirfd, name, flags);
	if (fd < 0)
		return 0;
	struct stat st2;
	size_t first = wk->nhits, nfound = 0;
	/* The same file as listed, not one put there since. */
	if (fstat(fd, &st2) == 0 && st2.st_ino == st->st_ino && st2.st_dev == st->st_dev)
		r = map_file(wk, fd, &nfound);
	else
		r = 0;
	close(fd);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nfound; i++)
		if ((r = add_file_owner(wk, path, st->st_ino, is_dir, &wk->hits[first + i])) < 0)
			return r;
	if (st->st_nlink > 1 && !is_dir) {
		if (wk->nseen == wk->capseen) {
			size_t cap = wk->capseen ? wk->capseen * 2 : 64;
			void *v = reallocarray(wk->seen, cap, sizeof(*wk->seen));
			if (!v)
				return -ENOMEM;
			wk->seen = v;
			wk->capseen = cap;
		}
		/* Kept sorted for bsearch: insertion (hard-linked files are few). */
		size_t at = wk->nseen;
		while (at > 0 && wk->seen[at - 1].ino > st->st_ino)
			at--;
		memmove(wk->seen + at + 1, wk->seen + at, (wk->nseen - at) * sizeof(*wk->seen));
		wk->seen[at] = (struct seen_inode){ st->st_ino, first, nfound, false };
		wk->nseen++;
	}
	return 0;
}

/* An entry of the file system being walked, not followed if a symlink:
 * -EXDEV for anything on another file system or another mount (a bind
 * mount of this one included: its files would be listed twice). */
static int walk_stat(struct walk *wk, int dirfd, const char *name, struct stat *st)
{
	struct statx sx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
		  STATX_TYPE | STATX_MODE | STATX_INO | STATX_NLINK | STATX_MNT_ID, &sx) < 0)
		return -errno;
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	st->st_ino = sx.stx_ino;
	st->st_mode = sx.stx_mode;
	st->st_nlink = sx.stx_nlink;
	if (st->st_dev != wk->fs->devnum)
		return -EXDEV;
	if (wk->mnt_id && (sx.stx_mask & STATX_MNT_ID) && sx.stx_mnt_id != wk->mnt_id)
		return -EXDEV;
	return 0;
}

/* Depth-first, each directory by descriptor: nothing outside the file
 * system (st_dev) and no symlink is ever followed. */
static int walk_dir(struct walk *wk, int dirfd, char *path, size_t plen, unsigned depth)
{
	if (depth > 4096)
		return 0;
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		wk->unreadable++;
		return 0;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t nl = strlen(de->d_name);
		if (plen + 1 + nl >= PATH_MAX * 4)
			continue;
		struct stat st;
		if (walk_stat(wk, dirfd, de->d_name, &st) < 0)
			continue;
		path[plen] = '/';
		memcpy(path + plen + 1, de->d_name, nl + 1);
		r = visit(wk, dirfd, de->d_name, path, &st);
		if (r == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat st2;
			if (sub < 0) {
				wk->unreadable++;
			} else if (fstat(sub, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
				close(sub);
			} else {
				r = walk_dir(wk, sub, path, plen + 1 + nl, depth + 1);
			}
		}
		path[plen] = '\0';
	}
	closedir(d);
	return r;
}

static int walk_tree(struct walk *wk, int rootfd)
{
	size_t mlen = strlen(wk->fs->mountpoint);
	char *path = malloc(PATH_MAX * 4 + 1);
	struct stat st;
	int r;

	if (!path)
		return -ENOMEM;
	wk->fm = calloc(1, sizeof(*wk->fm) + FIEMAP_N * sizeof(struct fiemap_extent));
	if (!wk->fm || mlen >= PATH_MAX) {
		free(path);
		return -ENOMEM;
	}
	/* The root's own blocks, under the mount point's name. */
	memcpy(path, wk->fs->mountpoint, mlen + 1);
	if (mlen == 1)
		mlen = 0;	/* "/": children are "/name" */
	struct statx sx;
	if (statx(rootfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
		wk->mnt_id = sx.stx_mnt_id;
	r = fstat(rootfd, &st) < 0 ? -errno : visit(wk, rootfd, ".", wk->fs->mountpoint, &st);
	int dfd = r == 0 ? openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (r == 0 && dfd >= 0) {
		path[mlen] = '\0';
		r = walk_dir(wk, dfd, path, mlen, 0);
	}
	free(path);
	return r;
}

static void walk_free(struct walk *wk)
{
	for (size_t i = 0; i < wk->ninodes; i++) {
		for (size_t k = 0; wk->inode_paths && k < wk->inode_npaths[i]; k++)
			free(wk->inode_paths[i][k]);
		if (wk->inode_paths)
			free(wk->inode_paths[i]);
	}
	free(wk->inode_paths);
	free(wk->inode_npaths);
	free(wk->inode_dir);
	free(wk->inodes);
	free(wk->seen);
	free(wk->hits);
	free(wk->fm);
}

/* Owners of the wants that rmap named by inode, now that paths are known. */
static int rmap_owners(struct walk *wk)
{
	int r = 0;

	for (size_t i = 0; i < wk->ws->n && r == 0; i++) {
		struct want *w = &wk->ws->v[i];
		if (!w->inode)
			continue;
		uint64_t *hit = bsearch(&w->inode, wk->inodes, wk->ninodes, sizeof(uint64_t), u64_cmp);
		size_t k = hit ? (size_t)(hit - wk->inodes) : 0;
		struct integrity_owner ow = { .kind = INTEGRITY_OWNER_FILE, .fs = &wk->fs->pub, .inode = w->inode,
					      .offset = w->file_offset };
		owner_span(&ow, w->piece, w->start, w->end);
		ow.length = ow.device_length;
		if (w->flags & FMR_OF_ATTR_FORK) {
			ow.kind = INTEGRITY_OWNER_METADATA;
			ow.metadata = "extended attributes";
			ow.offset = ow.length = 0;
		} else if (w->flags & FMR_OF_EXTENT_MAP) {
			ow.kind = INTEGRITY_OWNER_METADATA;
			ow.metadata = "extent tree";
			ow.offset = ow.length = 0;
		}
		if (w->flags & FMR_OF_SHARED)
			ow.flags |= INTEGRITY_OWNER_SHARED;
		if (w->flags & FMR_OF_PREALLOC)
			ow.flags |= INTEGRITY_OWNER_UNWRITTEN;
		if (hit && wk->inode_dir[k])
			ow.flags |= INTEGRITY_OWNER_DIRECTORY;
		w->found = true;
		if (!hit || !wk->inode_npaths[k]) {
			ow.note = "no path in the mounted tree (deleted while open, or outside a bind mount)";
			r = owner_add(wk->o, w->piece->range, &ow);
			continue;
		}
		for (size_t n = 0; n < wk->inode_npaths[k] && r == 0; n++) {
			ow.path = wk->inode_paths[k][n];
			r = owner_add(wk->o, w->piece->range, &ow);
		}
	}
	return r;
}

static int resolve_mounted(struct integrity_owners *o, struct fs_entry *fs, const struct piece *pieces,
			   size_t npieces)
{
	struct want_set ws = { 0 };
	struct fsmap_ctx c = { .o = o, .fs = fs, .ws = &ws };
	bool ext = !strncmp(fs->type, "ext", 3);
	int r;

	_cleanup_close_ int rootfd = open(fs->mountpoint, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (rootfd < 0 || fstat(rootfd, &st) < 0 || st.st_dev != fs->devnum) {
		/* Covered by another mount: nothing to walk here. */
		for (size_t i = 0; i < npieces; i++)
			if ((r = add_simple(o, fs, &pieces[i], pieces[i].fs_off, pieces[i].fs_off + pieces[i].len,
					    INTEGRITY_OWNER_UNKNOWN, NULL,
					    "its mount point is hidden by another mount")) < 0)
				return r;
		return 0;
	}
	if (!strcmp(fs->type, "xfs"))
		xfs_geometry(fs, &c.xfs);
	if (ext && ext2_open(fs, &c.e2) < 0)
		c.e2 = NULL;
	r = fsmap_pieces(&c, rootfd, pieces, npieces);
	bool have_fsmap = r == 0;
	if (r == -EOPNOTSUPP) {
		/* No GETFSMAP: everything to the walk. */
		ws.n = 0;
		r = 0;
		for (size_t i = 0; i < npieces && r == 0; i++)
			r = want_add(&ws, &(struct want){ .start = pieces[i].fs_off,
							  .end = pieces[i].fs_off + pieces[i].len,
							  .piece = &pieces[i] });
	}
	if (c.e2)
		ext2fs_close_free(&c.e2);
	if (r == 0)
		r = want_index(&ws);
	struct walk wk = { .o = o, .fs = fs, .ws = &ws };
	for (size_t i = 0; r == 0 && i < ws.n; i++)
		if (ws.v[i].inode)
			wk.ninodes++;
		else
			wk.fiemap = true;
	if (r == 0 && wk.ninodes) {
		wk.inodes = calloc(wk.ninodes, sizeof(*wk.inodes));
		wk.inode_paths = calloc(wk.ninodes, sizeof(*wk.inode_paths));
		wk.inode_npaths = calloc(wk.ninodes, sizeof(*wk.inode_npaths));
		wk.inode_dir = calloc(wk.ninodes, sizeof(*wk.inode_dir));
		if (!wk.inodes || !wk.inode_paths || !wk.inode_npaths || !wk.inode_dir)
			r = -ENOMEM;
		size_t n = 0;
		for (size_t i = 0; r == 0 && i < ws.n; i++)
			if (ws.v[i].inode)
				wk.inodes[n++] = ws.v[i].inode;
		if (r == 0) {
			qsort(wk.inodes, n, sizeof(*wk.inodes), u64_cmp);
			size_t u = 0;
			for (size_t i = 0; i < n; i++)
				if (!u || wk.inodes[u - 1] != wk.inodes[i])
					wk.inodes[u++] = wk.inodes[i];
			wk.ninodes = u;
		}
	}
	if (r == 0 && (wk.fiemap || wk.ninodes))
		r = walk_tree(&wk, rootfd);
	if (r == 0)
		r = rmap_owners(&wk);
	/* What neither GETFSMAP nor a file's extents explain: ext2/3/4 asks
	 * the device's inodes (extent tree and attribute blocks). */
	bool left = false;
	for (size_t i = 0; i < ws.n; i++)
		left |= !ws.v[i].found;
	if (r == 0 && left && ext && have_fsmap) {
		int e = ext2_resolve(o, fs, &ws, true);
		if (e == 0)
			left = false;
		else if (e == -ENOMEM)
			r = e;
	}
	for (size_t i = 0; r == 0 && left && i < ws.n; i++) {
		const struct want *w = &ws.v[i];
		char note[160];
		if (w->found)
			continue;
		if (have_fsmap)
			snprintf(note, sizeof(note), "in use, but in no file's data");
		else
			snprintf(note, sizeof(note), "in no file's data: free space or metadata (%s cannot say which)",
				 fs->type);
		if (wk.unreadable)
			snprintf(note + strlen(note), sizeof(note) - strlen(note),
				 "; %u directories could not be read", wk.unreadable);
		r = add_simple(o, fs, w->piece, w->start, w->end, INTEGRITY_OWNER_UNKNOWN, NULL, note);
	}
	walk_free(&wk);
	want_free(&ws);
	return r;
}

/* ------------------------------------------------------------------ file systems on the device */

static int probe_fs(struct fs_entry *fs)
{
	_cleanup_close_ int fd = open(fs->device, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	blkid_probe pr;
	const char *v;

	if (fd < 0)
		return -errno;
	pr = blkid_new_probe();
	if (!pr)
		return -ENOMEM;
	if (blkid_probe_set_device(pr, fd, 0, 0) == 0) {
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUID);
		blkid_probe_enable_partitions(pr, 0);
		int r = blkid_do_safeprobe(pr);
		if (r != 0) {
			/* A bad block where some other type's signature would be
			 * (ZFS labels, UFS) fails the whole probe: the types
			 * resolved here, alone. */
			char *only[] = { "ext4", "ext3", "ext2", "xfs", "btrfs", NULL };
			blkid_reset_probe(pr);
			blkid_probe_filter_superblocks_type(pr, BLKID_FLTR_ONLYIN, only);
			r = blkid_do_safeprobe(pr);
		}
		if (r == 0) {
			if (blkid_probe_lookup_value(pr, "TYPE", &v, NULL) == 0)
				fs->type = strdup(v);
			if (blkid_probe_lookup_value(pr, "UUID", &v, NULL) == 0)
				fs->uuid = strdup(v);
		}
	}
	blkid_free_probe(pr);
	if (!fs->type)
		fs->type = strdup("");
	return fs->type ? 0 : -ENOMEM;
}

/* mountinfo escapes blanks, tabs, newlines and backslashes as \ooo. */
static void unoctal(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* Where the file system on devnum is mounted: the mount of its whole tree
 * when there is one, else a bind mount of a part. */
static int find_mount(struct fs_entry *fs)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *best = NULL;
	size_t len = 0;
	bool best_whole = false;

	if (!f)
		return 0;
	while (getline(&line, &len, f) > 0) {
		unsigned maj, min;
		char root[PATH_MAX], where[PATH_MAX];
		if (sscanf(line, "%*u %*u %u:%u %4095s %4095s", &maj, &min, root, where) != 4)
			continue;
		dev_t d = makedev(maj, min);
		if (d != fs->devnum) {
			/* btrfs shows an anonymous number: match its source device. */
			char *sep = strstr(line, " - "), src[PATH_MAX], type[64];
			struct stat st;
			if (!sep || sscanf(sep + 3, "%63s %4095s", type, src) != 2 || strcmp(type, "btrfs") ||
			    (unoctal(src), stat(src, &st)) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != fs->devnum)
				continue;
		}
		unoctal(root);
		unoctal(where);
		bool whole = strcmp(root, "/") == 0;
		if (best && (best_whole || !whole))
			continue;
		free(best);
		best = strdup(where);
		best_whole = whole;
		/* The kernel's word for the type, whatever a probe found. */
		char *sep = strstr(line, " - "), type[64];
		if (sep && sscanf(sep + 3, "%63s", type) == 1 && strcmp(type, fs->type)) {
			free(fs->type);
			fs->type = strdup(type);
			if (!fs->type)
				break;
		}
		snprintf(fs->mount_root, sizeof(fs->mount_root), "%s", root);
		if (!best)
			break;
	}
	free(line);
	fclose(f);
	fs->mountpoint = best;
	return 0;
}

/* The first holder (dm, md) of a device, "" when none. */
static void find_holder(const struct integrity_device *dev, char *out, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;

	out[0] = '\0';
	if (path_printf(path, sizeof(path), "%s/holders", dev->dir) < 0)
		return;
	DIR *d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(out, len, "%s", de->d_name);
			break;
		}
	closedir(d);
}

static int fs_entry_new(struct integrity_owners *o, const struct integrity_device *dev, uint64_t start,
			struct fs_entry **out)
{
	struct fs_entry *fs = calloc(1, sizeof(*fs));
	char node[PATH_MAX];
	int r;

	if (!fs)
		return -ENOMEM;
	void *v = reallocarray(o->fs, o->nfs + 1, sizeof(*o->fs));
	if (!v) {
		free(fs);
		return -ENOMEM;
	}
	o->fs = v;
	o->fs[o->nfs++] = fs;
	fs->devnum = dev->devnum;
	fs->size = dev->size;
	if ((r = path_printf(node, sizeof(node), "/dev/%s", dev->name)) < 0)
		return r;
	for (char *c = node; *c; c++)
		if (*c == '!')
			*c = '/';
	if (!(fs->device = strdup(node)))
		return -ENOMEM;
	find_holder(dev, fs->holder, sizeof(fs->holder));
	probe_fs(fs);	/* a device that cannot be read has no file system we know of */
	if (!fs->type && !(fs->type = strdup("")))
		return -ENOMEM;
	if ((r = find_mount(fs)) < 0)
		return r;
	if (!fs->type)
		return -ENOMEM;
	fs->pub = (struct integrity_filesystem){ .type = fs->type, .uuid = fs->uuid, .mountpoint = fs->mountpoint,
						 .device = fs->device, .start = start };
	*out = fs;
	return 0;
}

/* Blocks held by a device above (device mapper, md): their owners on the
 * devices at the top of the stack, one resolution per such device. */
struct up_range {
	const struct piece *piece;
	uint64_t dev_off, len;		/* on the queried device */
};

struct up_device {
	char name[256];
	struct integrity_byte_range *ranges;
	struct up_range *back;
	size_t n;
};

static bool top_of_stack(struct integrity_context *ctx, const char *name)
{
	struct integrity_device *d;
	char holder[NAME_MAX + 1];

	if (integrity_device_new(ctx, name, &d) < 0)
		return false;
	find_holder(d, holder, sizeof(holder));
	integrity_device_free(d);
	return !holder[0];
}

static int resolve_above(struct integrity_context *ctx, struct integrity_owners *o, const struct fs_entry *fs,
			 const struct integrity_device *dev, const struct piece *pieces, size_t n)
{
	struct up_device *ups = NULL;
	size_t nups = 0;
	uint64_t lbs = dev->lbs ? dev->lbs : 512;
	int r = 0;

	for (size_t i = 0; i < n && r == 0; i++) {
		const struct piece *p = &pieces[i];
		for (uint64_t b = p->fs_off / lbs; b * lbs < p->fs_off + p->len && r == 0; b++) {
			struct integrity_stack_place *places = NULL;
			size_t np = 0;
			uint64_t s = b * lbs > p->fs_off ? b * lbs : p->fs_off;
			uint64_t e = (b + 1) * lbs < p->fs_off + p->len ? (b + 1) * lbs : p->fs_off + p->len;
			if (integrity_stack_map_above(dev, b, &places, &np) < 0)
				continue;
			for (size_t k = 0; k < np && r == 0; k++) {
				if (!top_of_stack(ctx, places[k].device))
					continue;
				size_t u = 0;
				while (u < nups && strcmp(ups[u].name, places[k].device))
					u++;
				if (u == nups) {
					void *v = reallocarray(ups, nups + 1, sizeof(*ups));
					if (!v) {
						r = -ENOMEM;
						break;
					}
					ups = v;
					memset(&ups[nups], 0, sizeof(*ups));
					snprintf(ups[nups].name, sizeof(ups[nups].name), "%s", places[k].device);
					nups++;
				}
				struct up_device *up = &ups[u];
				void *v1 = reallocarray(up->ranges, up->n + 1, sizeof(*up->ranges));
				if (v1)
					up->ranges = v1;
				void *v2 = reallocarray(up->back, up->n + 1, sizeof(*up->back));
				if (v2)
					up->back = v2;
				if (!v1 || !v2) {
					r = -ENOMEM;
					break;
				}
				/* Same logical block size up the stack, as the kernel requires
				 * for the devices this maps through. */
				up->ranges[up->n] = (struct integrity_byte_range){ places[k].lba * lbs + (s - b * lbs),
										   e - s };
				up->back[up->n++] = (struct up_range){ p, p->dev_off + (s - p->fs_off), e - s };
			}
			free(places);
		}
	}
	bool named = false;
	for (size_t u = 0; u < nups && r == 0; u++) {
		struct integrity_owners *sub;
		if (integrity_owners_resolve(ctx, ups[u].name, ups[u].ranges, ups[u].n, 0, &sub) < 0)
			continue;
		for (size_t j = 0; j < ups[u].n && r == 0; j++)
			for (size_t k = 0; k < sub->owners[j].n && r == 0; k++) {
				struct integrity_owner w = sub->owners[j].v[k];
				w.device_offset = ups[u].back[j].dev_off;
				w.device_length = ups[u].back[j].len;
				r = owner_add(o, ups[u].back[j].piece->range, &w);
				named = true;
			}
		/* The file systems above now belong to this result. */
		void *v = reallocarray(o->fs, o->nfs + sub->nfs, sizeof(*o->fs));
		if (v) {
			o->fs = v;
			memcpy(o->fs + o->nfs, sub->fs, sub->nfs * sizeof(*o->fs));
			o->nfs += sub->nfs;
			sub->nfs = 0;
		} else {
			r = -ENOMEM;
		}
		integrity_owners_free(sub);
	}
	for (size_t u = 0; u < nups; u++) {
		free(ups[u].ranges);
		free(ups[u].back);
	}
	free(ups);
	(void)fs;
	return r < 0 ? r : named;
}

static int resolve_fs(struct integrity_context *ctx, const struct integrity_device *dev, struct integrity_owners *o,
		      struct fs_entry *fs, const struct piece *pieces, size_t n)
{
	char note[2 * NAME_MAX + PATH_MAX];
	const char *why = NULL;
	int r = 0;

	if (fs->holder[0] && !fs->mountpoint) {
		r = resolve_above(ctx, o, fs, dev, pieces, n);
		if (r != 0)
			return r < 0 ? r : 0;
		snprintf(note, sizeof(note), "held by %s: what it holds is resolved on %s", fs->holder, fs->holder);
		why = note;
	} else if (!fs->type[0]) {
		snprintf(note, sizeof(note), "no file system found on %s", fs->device);
		why = note;
	} else if (fs->mountpoint && !strcmp(fs->type, "btrfs")) {
		why = "mounted btrfs: its block addresses are not mapped to files yet "
		      "(btrfs inspect-internal logical-resolve after btrfs-map-logical)";
	} else if (fs->mountpoint) {
		return resolve_mounted(o, fs, pieces, n);
	} else if (!strcmp(fs->type, "ext2") || !strcmp(fs->type, "ext3") || !strcmp(fs->type, "ext4")) {
		struct want_set ws = { 0 };
		for (size_t i = 0; i < n && r == 0; i++)
			r = want_add(&ws, &(struct want){ .start = pieces[i].fs_off,
							  .end = pieces[i].fs_off + pieces[i].len,
							  .piece = &pieces[i] });
		if (r == 0)
			r = ext2_resolve(o, fs, &ws, false);
		want_free(&ws);
		if (r != -ENOMEM && r < 0) {
			snprintf(note, sizeof(note), "unmounted %s that libext2fs cannot open: %s", fs->type,
				 strerror(-r));
			why = note;
			r = 0;
		} else {
			return r;
		}
	} else {
		snprintf(note, sizeof(note), "unmounted %s: mount it (read-only is enough) to name files", fs->type);
		why = note;
	}
	for (size_t i = 0; i < n && r == 0; i++)
		r = add_simple(o, fs, &pieces[i], pieces[i].fs_off, pieces[i].fs_off + pieces[i].len,
			       INTEGRITY_OWNER_UNKNOWN, NULL, why);
	return r;
}

static int owner_cmp(const void *a, const void *b)
{
	const struct integrity_owner *x = a, *y = b;

	if (x->device_offset != y->device_offset)
		return x->device_offset < y->device_offset ? -1 : 1;
	if (!x->path || !y->path)
		return !!x->path - !!y->path;
	return strcmp(x->path, y->path);
}

/* One file system (the device's own, or a partition's) and the parts of
 * the ranges inside it. */
struct region {
	struct integrity_device *dev;
	uint64_t start, end;		/* bytes of the queried device */
};

INTEGRITY_EXPORT int integrity_owners_resolve(struct integrity_context *ctx, const char *device,
					      const struct integrity_byte_range *ranges, size_t nranges,
					      unsigned flags, struct integrity_owners **out)
{
	struct integrity_device *dev = NULL, **all = NULL;
	struct region *regions = NULL;
	size_t nall = 0, nregions = 0;
	int r;

	*out = NULL;
	if (flags)
		return -EINVAL;	/* none defined yet */
	r = integrity_device_new(ctx, device, &dev);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nranges; i++)
		if (!ranges[i].length || ranges[i].offset > dev->size || ranges[i].length > dev->size - ranges[i].offset) {
			integrity_device_free(dev);
			return -EINVAL;
		}
	struct integrity_owners *o = calloc(1, sizeof(*o));
	if (!o) {
		integrity_device_free(dev);
		return -ENOMEM;
	}
	o->nranges = nranges;
	o->ranges = calloc(nranges ? nranges : 1, sizeof(*o->ranges));
	o->owners = calloc(nranges ? nranges : 1, sizeof(*o->owners));
	regions = calloc(1, sizeof(*regions));
	if (!o->ranges || !o->owners || !regions) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(o->ranges, ranges, nranges * sizeof(*ranges));
	/* A whole disk: each partition is a region of its own (the kernel's
	 * partitions, as the scrub names them); the rest is the disk's. */
	if (!dev->partno && (r = integrity_device_list(ctx, &all, &nall)) == 0) {
		for (size_t i = 0; i < nall; i++) {
			uint64_t start, size;
			if (!all[i]->partno || strcmp(all[i]->disk, dev->disk) != 0 ||
			    sysfs_read_u64(all[i]->dir, "start", &start) < 0 ||
			    sysfs_read_u64(all[i]->dir, "size", &size) < 0)
				continue;
			void *v = reallocarray(regions, nregions + 1, sizeof(*regions));
			if (!v) {
				r = -ENOMEM;
				goto out;
			}
			regions = v;
			regions[nregions++] = (struct region){ all[i], start * 512, (start + size) * 512 };
		}
	}
	if (r < 0)
		goto out;
	for (size_t g = 0; g <= nregions && r == 0; g++) {
		bool whole = g == nregions;	/* the device itself, outside its partitions */
		struct integrity_device *rd = whole ? dev : regions[g].dev;
		struct piece *pieces = NULL;
		size_t np = 0;
		for (size_t i = 0; i < nranges && r == 0; i++) {
			uint64_t s = ranges[i].offset, e = ranges[i].offset + ranges[i].length;
			/* The parts of the range in this region; for the whole device,
			 * the parts outside every partition. */
			uint64_t cuts[2 * 256 + 2];
			size_t nc = 0;
			if (!whole) {
				uint64_t a = s > regions[g].start ? s : regions[g].start;
				uint64_t b = e < regions[g].end ? e : regions[g].end;
				if (a < b) {
					cuts[nc++] = a;
					cuts[nc++] = b;
				}
			} else {
				uint64_t at = s;
				while (at < e && nc + 2 <= ARRAY_SIZE(cuts)) {
					uint64_t next = e;
					bool inside = false;
					for (size_t k = 0; k < nregions; k++) {
						if (at >= regions[k].start && at < regions[k].end) {
							inside = true;
							next = regions[k].end;
							break;
						}
						if (regions[k].start > at && regions[k].start < next)
							next = regions[k].start;
					}
					if (next > e)
						next = e;
					if (!inside) {
						cuts[nc++] = at;
						cuts[nc++] = next;
					}
					at = next;
				}
			}
			for (size_t c = 0; c < nc; c += 2) {
				void *v = reallocarray(pieces, np + 1, sizeof(*pieces));
				if (!v) {
					r = -ENOMEM;
					break;
				}
				pieces = v;
				uint64_t base = whole ? 0 : regions[g].start;
				pieces[np++] = (struct piece){ i, cuts[c], cuts[c] - base, cuts[c + 1] - cuts[c] };
			}
		}
		if (r == 0 && np) {
			struct fs_entry *fs;
			r = fs_entry_new(o, rd, whole ? 0 : regions[g].start, &fs);
			if (r == 0 && whole && nregions && !fs->type[0]) {
				/* A partitioned disk outside its partitions. */
				for (size_t i = 0; i < np && r == 0; i++)
					r = add_simple(o, NULL, &pieces[i], pieces[i].fs_off,
						       pieces[i].fs_off + pieces[i].len, INTEGRITY_OWNER_UNKNOWN, NULL,
						       "in no partition (the partition table, or unallocated)");
			} else if (r == 0) {
				r = resolve_fs(ctx, rd, o, fs, pieces, np);
			}
		}
		free(pieces);
	}
	for (size_t i = 0; r == 0 && i < nranges; i++)
		qsort(o->owners[i].v, o->owners[i].n, sizeof(*o->owners[i].v), owner_cmp);
out:
	free(regions);
	integrity_device_list_free(all, nall);
	integrity_device_free(dev);
	if (r < 0) {
		integrity_owners_free(o);
		return r;
	}
	*out = o;
	return 0;
}
