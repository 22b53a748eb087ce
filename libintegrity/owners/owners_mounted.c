/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Owners on a mounted file system: FS_IOC_GETFSMAP first, then one walk
 * of the tree with FIEMAP on each file.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fsmap.h>
#include <linux/openat2.h>
#include <search.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>

#include "device.h"
#include "owners_int.h"
#include "owners_xfs.h"
#include "util/strv.h"

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
		return owners_add_simple(c->o, c->fs, p, s, e, INTEGRITY_OWNER_FREE, NULL, NULL);
	if (m->fmr_owner == FSMAP_OWN_UNKNOWN || !(m->fmr_flags & FMR_OF_SPECIAL_OWNER)) {
		struct want w = { .start = s, .end = e, .piece = p };
		if (!(m->fmr_flags & FMR_OF_SPECIAL_OWNER)) {
			w.inode = m->fmr_owner;
			w.file_offset = m->fmr_offset + (s - m->fmr_physical);
			w.flags = m->fmr_flags;
		}
		return owners_want_add(c->ws, &w);
	}
	struct integrity_owner ow = { .kind = INTEGRITY_OWNER_METADATA, .fs = &c->fs->pub,
				      .metadata = fsmap_owner_name(c->fs, m->fmr_owner) };
	owners_span(&ow, p, s, e);
	if (m->fmr_owner == FSMAP_OWN_INODES) {
		if (c->xfs.ok) {
			ow.first_inode = owners_xfs_ino_at(&c->xfs, s);
			ow.last_inode = owners_xfs_ino_at(&c->xfs, e - 1);
		} else if (c->e2) {
			uint64_t bs = c->e2->blocksize;
			const char *what;
			dgrp_t g;
			if (owners_ext2_fixed_metadata(c->e2, s / bs, &what, &g) == 0 && strcmp(what, "inode table") == 0) {
				uint64_t table = ext2fs_inode_table_loc(c->e2, g) * bs;
				uint64_t end = (ext2fs_inode_table_loc(c->e2, g) + c->e2->inode_blocks_per_group) * bs;
				owners_ext2_table_inodes(c->e2, g, table, s, e < end ? e : end, &ow.first_inode,
							 &ow.last_inode);
			}
		}
	}
	return owners_add(c->o, p->range, &ow);
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
			r = owners_want_add(c->ws, &(struct want){ .start = covered, .end = p->fs_off + p->len, .piece = p });
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
	bool xfs;			/* directories through the bmap ioctl */
	bool only_cands;		/* map only the inodes in cands (sorted) */
	uint64_t *cands;
	size_t ncands;
	uint64_t *inodes;		/* wanted by rmap: their paths, sorted */
	size_t ninodes;
	struct strv *inode_paths;	/* per wanted inode */
	bool *inode_dir;
	/* Hard links: the hits of an inode already mapped, for its other paths. */
	struct seen_inode *seen;
	size_t nseen, capseen;
	struct hit *hits;
	size_t nhits, caphits;
	struct fiemap *fm;
	unsigned unreadable;		/* directories that could not be read */
	unsigned too_deep;		/* directories deeper than the walk goes */
	char *path;			/* of the file visited */
	size_t cappath;
	uint64_t mnt_id;		/* the mount walked (statx), 0 when unknown */
	int err;
};

enum { FIEMAP_N = 256 };

static int add_file_owner(struct walk *wk, const char *path, uint64_t ino, bool is_dir, const struct hit *h)
{
	struct integrity_owner ow = { .kind = INTEGRITY_OWNER_FILE, .fs = &wk->fs->pub, .path = path,
				      .inode = ino, .offset = h->file_offset };

	owners_span(&ow, h->w->piece, h->s, h->e);
	ow.length = ow.device_length;
	if (h->flags & FIEMAP_EXTENT_SHARED)
		ow.flags |= INTEGRITY_OWNER_SHARED;
	if (h->flags & FIEMAP_EXTENT_UNWRITTEN)
		ow.flags |= INTEGRITY_OWNER_UNWRITTEN;
	if (is_dir)
		ow.flags |= INTEGRITY_OWNER_DIRECTORY;
	h->w->found = true;
	return owners_add(wk->o, h->w->piece->range, &ow);
}

static int hit_push(struct walk *wk, const struct hit *h)
{
	if (GREEDY_REALLOC(wk->hits, wk->caphits, wk->nhits + 1) < 0)
		return -ENOMEM;
	wk->hits[wk->nhits++] = *h;
	return 0;
}

/* The wanted bytes in one extent of a file: hits, for its paths. */
static int extent_hits(struct walk *wk, uint64_t logical, uint64_t a, uint64_t b, unsigned flags, size_t *nfound)
{
	for (size_t k = owners_want_first(wk->ws, a); k < wk->ws->n && wk->ws->v[k].start < b; k++) {
		struct want *w = &wk->ws->v[k];
		uint64_t s = w->start > a ? w->start : a, e = w->end < b ? w->end : b;
		if (s >= e || w->inode)
			continue;
		struct hit h = { .w = w, .s = s, .e = e, .file_offset = logical + (s - a), .flags = flags };
		int r = hit_push(wk, &h);
		if (r < 0)
			return r;
		(*nfound)++;
	}
	return 0;
}

/* Each extent FIEMAP gives of an open file, in order, to fn (with fm,
 * FIEMAP_N extents of room, as the buffer): -errno when FIEMAP fails. */
static int fiemap_each(struct fiemap *fm, int fd, int (*fn)(void *ctx, const struct fiemap_extent *x), void *ctx)
{
	uint64_t start = 0;

	for (;;) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = FIEMAP_N;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0)
			return -errno;
		if (!fm->fm_mapped_extents)
			return 0;
		for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
			int r = fn(ctx, &fm->fm_extents[i]);
			if (r < 0)
				return r;
			if (fm->fm_extents[i].fe_flags & FIEMAP_EXTENT_LAST)
				return 0;
		}
		const struct fiemap_extent *last = &fm->fm_extents[fm->fm_mapped_extents - 1];
		start = last->fe_logical + last->fe_length;
	}
}

struct map_ctx {
	struct walk *wk;
	size_t *nfound;
};

static int map_extent(void *ctx, const struct fiemap_extent *x)
{
	struct map_ctx *c = ctx;

	if (x->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED))
		return 0;
	return extent_hits(c->wk, x->fe_logical, x->fe_physical, x->fe_physical + x->fe_length, x->fe_flags,
			   c->nfound);
}

/* FIEMAP of one open file: the wanted bytes in its extents. */
static int map_file(struct walk *wk, int fd, size_t *nfound)
{
	return fiemap_each(wk->fm, fd, map_extent, &(struct map_ctx){ wk, nfound });
}

struct bmap_ctx {
	struct walk *wk;
	size_t *nfound;
};

static int bmap_extent(void *ctx, const struct xfs_extent *x)
{
	struct bmap_ctx *c = ctx;
	unsigned flags = (x->unwritten ? FIEMAP_EXTENT_UNWRITTEN : 0) | (x->shared ? FIEMAP_EXTENT_SHARED : 0);

	return extent_hits(c->wk, x->logical, x->physical, x->physical + x->length, flags, c->nfound);
}

/* A file's extents: FIEMAP, or XFS's bmap ioctl where FIEMAP refuses
 * (XFS directories).  A file neither maps has no hits. */
static int map_extents(struct walk *wk, int fd, size_t *nfound)
{
	size_t first = wk->nhits;

	*nfound = 0;
	int r = map_file(wk, fd, nfound);
	if (r == -ENOMEM)
		return r;
	if (r < 0 && wk->xfs) {
		wk->nhits = first;
		*nfound = 0;
		r = owners_xfs_bmap(fd, bmap_extent, &(struct bmap_ctx){ wk, nfound });
		if (r == -ENOMEM)
			return r;
	}
	return 0;
}

static int seen_cmp(const void *a, const void *b)
{
	const struct seen_inode *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static bool has_ino(const uint64_t *v, size_t n, uint64_t ino)
{
	return n && bsearch(&ino, v, n, sizeof(*v), owners_u64_cmp);
}

/* A file of the tree: its path recorded when rmap wanted its inode, its
 * extents mapped (once per inode) when the walk maps files. */
static int visit(struct walk *wk, int dirfd, const char *name, const char *path, const struct stat *st)
{
	bool is_dir = S_ISDIR(st->st_mode);
	uint64_t *want = wk->ninodes ? bsearch(&(uint64_t){ st->st_ino }, wk->inodes, wk->ninodes,
						sizeof(uint64_t), owners_u64_cmp) : NULL;
	int r;

	if (want) {
		size_t i = (size_t)(want - wk->inodes);
		if (strv_push(&wk->inode_paths[i], path) < 0)
			return -ENOMEM;
		wk->inode_dir[i] = is_dir;
	}
	if (!wk->fiemap || !(S_ISREG(st->st_mode) || is_dir) || (wk->only_cands && !has_ino(wk->cands, wk->ncands, st->st_ino)))
		return 0;
	/* A hard link seen before: its hits again, under this path. */
	struct seen_inode key = { .ino = st->st_ino };
	struct seen_inode *seen = st->st_nlink > 1 && !is_dir && wk->nseen
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
		r = map_extents(wk, fd, &nfound);
	else
		r = 0;
	close(fd);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nfound; i++)
		if ((r = add_file_owner(wk, path, st->st_ino, is_dir, &wk->hits[first + i])) < 0)
			return r;
	if (st->st_nlink > 1 && !is_dir) {
		if (GREEDY_REALLOC(wk->seen, wk->capseen, wk->nseen + 1) < 0)
			return -ENOMEM;
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

/* The walk holds at most this many directories open on the way down (a
 * scrub unit gets 1,024 descriptors in all); deeper, a directory is
 * closed while its subdirectories are walked and opened again after. */
enum { WALK_OPEN_DIRS = 32, WALK_MAX_DEPTH = 4096 };

/* The walk's path, room for n more bytes past its first plen. */
static int path_room(struct walk *wk, size_t plen, size_t n)
{
	if (plen + n <= wk->cappath)
		return 0;
	size_t cap = wk->cappath ? wk->cappath : PATH_MAX;
	while (cap < plen + n)
		cap *= 2;
	char *p = realloc(wk->path, cap);
	if (!p)
		return -ENOMEM;
	wk->path = p;
	wk->cappath = cap;
	return 0;
}

/* The directory a walk came down from, opened again through "..": -1
 * when it is not the one it was (renamed since), or cannot be opened. */
static int reopen_parent(int fd, const struct stat *parent)
{
	struct stat st;
	int p = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (p >= 0 && (fstat(p, &st) < 0 || st.st_ino != parent->st_ino || st.st_dev != parent->st_dev)) {
		close(p);
		p = -1;
	}
	return p;
}

/* Depth-first, each directory by descriptor: nothing outside the file
 * system (st_dev) and no symlink is ever followed.  fd is taken over;
 * when parent is set, the directory above is opened again into *up
 * before fd is closed (-1 when it cannot be). */
static int walk_dir(struct walk *wk, int fd, size_t plen, unsigned depth, const struct stat *parent, int *up)
{
	struct stat self;
	DIR *d = fstat(fd, &self) == 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (parent)
			*up = reopen_parent(fd, parent);
		close(fd);
		wk->unreadable++;
		return 0;
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t nl = strlen(de->d_name);
		/* Only known inodes wanted: readdir's inode number and type are
		 * enough to pass over every other file unopened. */
		if ((!wk->fiemap || wk->only_cands) && de->d_type != DT_DIR && de->d_type != DT_UNKNOWN &&
		    !has_ino(wk->inodes, wk->ninodes, de->d_ino) && !has_ino(wk->cands, wk->ncands, de->d_ino))
			continue;
		struct stat st;
		if (walk_stat(wk, dirfd(d), de->d_name, &st) < 0)
			continue;
		if ((r = path_room(wk, plen, nl + 2)) < 0)
			break;
		wk->path[plen] = '/';
		memcpy(wk->path + plen + 1, de->d_name, nl + 1);
		r = visit(wk, dirfd(d), de->d_name, wk->path, &st);
		if (r == 0 && S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat st2;
			if (sub < 0) {
				wk->unreadable++;
			} else if (fstat(sub, &st2) < 0 || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev) {
				close(sub);
			} else if (depth + 1 >= WALK_MAX_DEPTH) {
				close(sub);
				wk->too_deep++;
			} else if (depth + 1 < WALK_OPEN_DIRS) {
				r = walk_dir(wk, sub, plen + 1 + nl, depth + 1, NULL, NULL);
			} else {
				/* Deep: this directory closed below, and read on
				 * from where it was. */
				long pos = telldir(d);
				int back = -1;
				closedir(d);
				d = NULL;
				r = walk_dir(wk, sub, plen + 1 + nl, depth + 1, &self, &back);
				if (back >= 0 && !(d = fdopendir(back)))
					close(back);
				if (!d) {
					wk->unreadable++;
					break;
				}
				seekdir(d, pos);
			}
		}
		wk->path[plen] = '\0';
	}
	if (d && parent)
		*up = reopen_parent(dirfd(d), parent);
	if (d)
		closedir(d);
	else if (parent)
		*up = -1;
	return r;
}

static int walk_tree(struct walk *wk, int rootfd)
{
	size_t mlen = strlen(wk->fs->mountpoint);
	struct stat st;
	int r;

	if (!wk->fm)
		wk->fm = calloc(1, sizeof(*wk->fm) + FIEMAP_N * sizeof(struct fiemap_extent));
	if (!wk->fm || path_room(wk, 0, mlen + 1) < 0)
		return -ENOMEM;
	/* The root's own blocks, under the mount point's name. */
	memcpy(wk->path, wk->fs->mountpoint, mlen + 1);
	if (mlen == 1)
		mlen = 0;	/* "/": children are "/name" */
	struct statx sx;
	if (statx(rootfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
		wk->mnt_id = sx.stx_mnt_id;
	r = fstat(rootfd, &st) < 0 ? -errno : visit(wk, rootfd, ".", wk->fs->mountpoint, &st);
	int dfd = r == 0 ? openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (r == 0 && dfd >= 0) {
		wk->path[mlen] = '\0';
		r = walk_dir(wk, dfd, mlen, 0, NULL, NULL);
	}
	return r;
}

/* ------------------------------------------------------------------ mounted: the names the device gives, checked */

/* A directory of the mounted tree by its path under the mount point: beneath
 * it, through no symlink and into no other mount. */
static int open_beneath(int rootfd, const char *rel)
{
	struct open_how how = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, rootfd, rel[0] ? rel : ".", &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/* One name of a candidate, checked in the mounted tree; visited when
 * visit is set.  1 when it is the inode, 0 when not, -errno. */
static int named_one(struct walk *wk, int rootfd, uint64_t ino, const char *fspath, bool do_visit, struct stat *st)
{
	const char *rel = owners_under_mount_root(wk->fs, fspath);
	int r;

	if (!rel)
		return 0;
	_cleanup_free_ char *dir = strdup(rel);
	if (!dir)
		return -ENOMEM;
	char *slash = strrchr(dir, '/');
	const char *name = slash ? slash + 1 : dir;
	if (slash)
		*slash = '\0';
	_cleanup_close_ int dfd = open_beneath(rootfd, slash ? dir : "");
	if (dfd < 0)
		return 0;
	if (!rel[0]) {
		if (fstat(dfd, st) < 0 || st->st_ino != ino || st->st_dev != wk->fs->devnum)
			return 0;
	} else if (walk_stat(wk, dfd, name, st) < 0 || st->st_ino != ino) {
		return 0;
	}
	if (!do_visit)
		return 1;
	_cleanup_free_ char *full = NULL;
	size_t ml = strlen(wk->fs->mountpoint);
	if (asprintf(&full, "%s%s%s", wk->fs->mountpoint, rel[0] && ml > 1 ? "/" : "", rel) < 0)
		return -ENOMEM;
	r = visit(wk, dfd, rel[0] ? name : ".", full, st);
	return r < 0 ? r : 1;
}

/* The candidates under the names libext2fs read in their directories,
 * instead of a walk: only when every name checks out in the mounted tree
 * and a file has as many as its links (a directory one), else -ESTALE and
 * the walk finds them. */
static int visit_named(struct walk *wk, int rootfd, const struct strv *paths)
{
	struct statx sx;
	int r;

	if (!wk->fm && !(wk->fm = calloc(1, sizeof(*wk->fm) + FIEMAP_N * sizeof(struct fiemap_extent))))
		return -ENOMEM;
	if (statx(rootfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
		wk->mnt_id = sx.stx_mnt_id;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < wk->ncands; i++) {
			struct stat st = { 0 };
			nlink_t ok = 0;
			for (size_t k = 0; k < paths[i].n; k++) {
				r = named_one(wk, rootfd, wk->cands[i], paths[i].v[k], pass == 1, &st);
				if (r < 0)
					return r;
				ok += (nlink_t)r;
			}
			if (pass == 0 && (!ok || ok != (S_ISDIR(st.st_mode) ? 1 : st.st_nlink)))
				return -ESTALE;
		}
	return 0;
}

/* An ext2/3/4 file handle (FILEID_INO32_GEN): generation 0 is any. */
#define EXT_FILEID_INO32_GEN 1

/* Inode ino's handle on ext2/3/4, of any generation: -ERANGE for a number
 * no handle holds. */
static int ext_handle(uint64_t ino, union owners_handle *h)
{
	uint32_t ino32 = (uint32_t)ino, gen = 0;

	if (ino > UINT32_MAX)
		return -ERANGE;
	h->fh.handle_bytes = 8;
	h->fh.handle_type = EXT_FILEID_INO32_GEN;
	memcpy(h->fh.f_handle, &ino32, 4);
	memcpy(h->fh.f_handle + 4, &gen, 4);
	return 0;
}

/* The one path of inode ino in the mounted tree, from its handle: the
 * name the kernel has for it, checked beneath the mount point (the same
 * inode, through no symlink and into no other mount).  1 with *rel (the
 * path under the mount point, in *path), 0 when it cannot say so (a file
 * with several links, one whose name the kernel has not cached, one
 * renamed or gone since), -ENOMEM. */
static int handle_path(const struct fs_entry *fs, int rootfd, union owners_handle *h, uint64_t ino, char **path,
		       const char **rel, bool *is_dir)
{
	struct stat a, b;
	char link[64], buf[PATH_MAX];

	*path = NULL;
	_cleanup_close_ int fd = open_by_handle_at(rootfd, &h->fh, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &a) < 0 || a.st_ino != ino || a.st_dev != fs->devnum)
		return 0;
	*is_dir = S_ISDIR(a.st_mode);
	if (!*is_dir && a.st_nlink != 1)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0 || n >= (ssize_t)sizeof(buf) - 1)
		return 0;
	buf[n] = '\0';
	size_t ml = strlen(fs->mountpoint);
	const char *r = NULL;
	if (ml == 1)
		r = buf[0] == '/' ? buf + 1 : NULL;
	else if (!strncmp(buf, fs->mountpoint, ml) && (buf[ml] == '/' || !buf[ml]))
		r = buf + ml + (buf[ml] == '/');
	if (!r)
		return 0;
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
					   RESOLVE_NO_MAGICLINKS };
	_cleanup_close_ int check = (int)syscall(SYS_openat2, rootfd, r[0] ? r : ".", &how, sizeof(how));
	if (check < 0 || fstat(check, &b) < 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev)
		return 0;
	if (!(*path = strdup(buf)))
		return -ENOMEM;
	*rel = *path + (r - buf);
	return 1;
}

/* XFS: the paths of the inodes wanted from their handles, instead of a
 * walk.  1 when every one has its path, 0 (none kept) when one has none to
 * give, -ENOMEM. */
static int handle_paths(struct walk *wk, int rootfd)
{
	for (size_t i = 0; i < wk->ninodes; i++) {
		_cleanup_free_ char *p = NULL;
		union owners_handle h;
		const char *rel;
		bool dir = false;
		int r = owners_xfs_handle(rootfd, wk->inodes[i], &h) < 0
				? 0 : handle_path(wk->fs, rootfd, &h, wk->inodes[i], &p, &rel, &dir);
		if (r > 0 && strv_push(&wk->inode_paths[i], p) < 0)
			r = -ENOMEM;
		if (r <= 0) {
			for (size_t k = 0; k <= i; k++)
				strv_clear(&wk->inode_paths[k]);
			return r;
		}
		wk->inode_dir[i] = dir;
	}
	return 1;
}

/* ext2/3/4: the candidates' names from their handles, as paths from the
 * file system's root (what owners_ext2_paths() gives), instead of reading
 * every directory on the device.  0 with *out, or -ENOENT when one has
 * none to give, -ENOMEM. */
static int handle_names(struct walk *wk, int rootfd, struct strv **out)
{
	struct strv *v = calloc(wk->ncands ? wk->ncands : 1, sizeof(*v));
	const char *root = strcmp(wk->fs->mount_root, "/") ? wk->fs->mount_root : "";
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < wk->ncands && r == 0; i++) {
		_cleanup_free_ char *p = NULL, *fspath = NULL;
		union owners_handle h;
		const char *rel;
		bool dir;
		if (ext_handle(wk->cands[i], &h) < 0) {
			r = -ENOENT;
			break;
		}
		r = handle_path(wk->fs, rootfd, &h, wk->cands[i], &p, &rel, &dir);
		if (r == 0)
			r = -ENOENT;
		else if (r > 0)
			r = asprintf(&fspath, "%s/%s", root, rel) < 0 || strv_push(&v[i], fspath) < 0 ? -ENOMEM : 0;
	}
	if (r < 0) {
		for (size_t i = 0; i < wk->ncands; i++)
			strv_clear(&v[i]);
		free(v);
		return r;
	}
	*out = v;
	return 0;
}

/* How much of the wants without an owner the candidates found so far
 * cover, by the kernel's FIEMAP of each (opened by its handle): ext4
 * shares no data block between files, so bytes in one file's extents are
 * in no other's, and once every wanted byte is, the device's other inodes
 * need not be read. */
struct covered {
	struct walk *wk;
	int rootfd;
	uint64_t *left;			/* per want: bytes in no candidate's extents yet */
	size_t open;			/* wants with bytes left */
};

static int covered_extent(void *ctx, const struct fiemap_extent *x)
{
	struct covered *c = ctx;
	const struct want_set *ws = c->wk->ws;
	uint64_t a = x->fe_physical, b = x->fe_physical + x->fe_length;

	if (x->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED | FIEMAP_EXTENT_SHARED))
		return 0;
	for (size_t k = owners_want_first(ws, a); k < ws->n && ws->v[k].start < b; k++) {
		const struct want *w = &ws->v[k];
		uint64_t s = w->start > a ? w->start : a, e = w->end < b ? w->end : b;
		if (s >= e || !c->left[k])
			continue;
		c->left[k] = c->left[k] > e - s ? c->left[k] - (e - s) : 0;
		c->open -= !c->left[k];
	}
	return 0;
}

/* owners_ext2_candidates()'s question: 1 when the candidates so far hold
 * every wanted byte, 0 when not (or when a file cannot be opened by its
 * handle: the scan then reads on). */
static int covered_enough(void *ctx, const uint64_t *inos, size_t n)
{
	struct covered *c = ctx;

	for (size_t i = 0; i < n && c->open; i++) {
		union owners_handle h;
		struct stat st;
		if (ext_handle(inos[i], &h) < 0)
			continue;
		int fd = open_by_handle_at(c->rootfd, &h.fh, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && st.st_ino == inos[i] && st.st_dev == c->wk->fs->devnum &&
		    (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)))
			fiemap_each(c->wk->fm, fd, covered_extent, c);
		close(fd);
	}
	return !c->open;
}

static void walk_free(struct walk *wk)
{
	for (size_t i = 0; wk->inode_paths && i < wk->ninodes; i++)
		strv_clear(&wk->inode_paths[i]);
	free(wk->inode_paths);
	free(wk->inode_dir);
	free(wk->inodes);
	free(wk->cands);
	free(wk->seen);
	free(wk->hits);
	free(wk->fm);
	free(wk->path);
}

/* What the walk could not look at, as the end of a note: "" when nothing. */
static void walk_unread(const struct walk *wk, char *buf, size_t len)
{
	int n = 0;

	buf[0] = '\0';
	if (wk->unreadable)
		n = snprintf(buf, len, "; %u directories could not be read", wk->unreadable);
	if (wk->too_deep && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "; %u directories deeper than %u levels were not walked",
			 wk->too_deep, (unsigned)WALK_MAX_DEPTH);
}

/* Owners of the wants that rmap named by inode, now that paths are known. */
static int rmap_owners(struct walk *wk)
{
	char unread[128], nopath[192];
	int r = 0;

	walk_unread(wk, unread, sizeof(unread));
	if (unread[0])
		snprintf(nopath, sizeof(nopath), "no path found in the mounted tree%s", unread);
	else
		snprintf(nopath, sizeof(nopath), "no path in the mounted tree (deleted while open, or outside a bind mount)");

	for (size_t i = 0; i < wk->ws->n && r == 0; i++) {
		struct want *w = &wk->ws->v[i];
		if (!w->inode)
			continue;
		uint64_t *hit = wk->ninodes
					? bsearch(&w->inode, wk->inodes, wk->ninodes, sizeof(uint64_t), owners_u64_cmp)
					: NULL;
		size_t k = hit ? (size_t)(hit - wk->inodes) : 0;
		struct integrity_owner ow = { .kind = INTEGRITY_OWNER_FILE, .fs = &wk->fs->pub, .inode = w->inode,
					      .offset = w->file_offset };
		owners_span(&ow, w->piece, w->start, w->end);
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
		if (!hit || !wk->inode_paths[k].n) {
			ow.note = nopath;
			r = owners_add(wk->o, w->piece->range, &ow);
			continue;
		}
		for (size_t n = 0; n < wk->inode_paths[k].n && r == 0; n++) {
			ow.path = wk->inode_paths[k].v[n];
			r = owners_add(wk->o, w->piece->range, &ow);
		}
	}
	return r;
}

static int hit_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	if (x->w != y->w)
		return x->w < y->w ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

/* A want that files' extents cover only in part: the bytes between them
 * become wants of their own (an extent-tree, attribute or symlink block
 * next to a file's data), for libext2fs or a note. */
static int want_gaps(struct walk *wk)
{
	_cleanup_free_ struct hit *hits = NULL;
	struct want_set gaps = { 0 };
	int r = 0;

	if (!wk->nhits)
		return 0;
	hits = malloc(wk->nhits * sizeof(*hits));
	if (!hits)
		return -ENOMEM;
	memcpy(hits, wk->hits, wk->nhits * sizeof(*hits));
	qsort(hits, wk->nhits, sizeof(*hits), hit_cmp);
	for (size_t i = 0; i < wk->nhits && r == 0;) {
		struct want *w = hits[i].w;
		uint64_t at = w->start;
		for (; i < wk->nhits && hits[i].w == w && r == 0; i++) {
			if (hits[i].s > at)
				r = owners_want_add(&gaps, &(struct want){ .start = at, .end = hits[i].s, .piece = w->piece });
			if (hits[i].e > at)
				at = hits[i].e;
		}
		if (r == 0 && at < w->end)
			r = owners_want_add(&gaps, &(struct want){ .start = at, .end = w->end, .piece = w->piece });
	}
	/* The hits point into the want set: it grows only now. */
	for (size_t i = 0; i < gaps.n && r == 0; i++)
		r = owners_want_add(wk->ws, &gaps.v[i]);
	owners_want_free(&gaps);
	return r;
}

int owners_resolve_mounted(struct integrity_owners *o, struct fs_entry *fs, const struct piece *pieces,
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
			if ((r = owners_add_simple(o, fs, &pieces[i], pieces[i].fs_off, pieces[i].fs_off + pieces[i].len,
						   INTEGRITY_OWNER_UNKNOWN, NULL,
						   "its mount point is hidden by another mount")) < 0)
				return r;
		return 0;
	}
	if (!strcmp(fs->type, "xfs"))
		owners_xfs_geometry(fs, &c.xfs);
	char why[512];
	if (ext && owners_ext2_open(fs, &c.e2, false, why, sizeof(why)) < 0)
		c.e2 = NULL;
	r = fsmap_pieces(&c, rootfd, pieces, npieces);
	bool have_fsmap = r == 0;
	if (r == -EOPNOTSUPP) {
		/* No GETFSMAP: everything to the walk. */
		ws.n = 0;
		r = 0;
		for (size_t i = 0; i < npieces && r == 0; i++)
			r = owners_want_add(&ws, &(struct want){ .start = pieces[i].fs_off,
								 .end = pieces[i].fs_off + pieces[i].len,
								 .piece = &pieces[i] });
	}
	if (r == 0)
		r = owners_want_index(&ws);
	struct walk wk = { .o = o, .fs = fs, .ws = &ws, .xfs = !strcmp(fs->type, "xfs") };
	for (size_t i = 0; r == 0 && i < ws.n; i++)
		if (ws.v[i].inode)
			wk.ninodes++;
		else
			wk.fiemap = true;
	/* ext2/3/4: the device's inodes say which files may hold the wants,
	 * and only those are mapped; all of them when that cannot be read. */
	_cleanup_free_ ext2_ino_t *dirs = NULL;
	size_t ndirs = 0;
	struct strv *named = NULL;
	_cleanup_free_ uint64_t *cov_left = NULL;
	struct covered cov = { .wk = &wk, .rootfd = rootfd };
	if (r == 0 && wk.fiemap && have_fsmap && c.e2) {
		cov_left = calloc(ws.n ? ws.n : 1, sizeof(*cov_left));
		if (!wk.fm)
			wk.fm = calloc(1, sizeof(*wk.fm) + FIEMAP_N * sizeof(struct fiemap_extent));
		if (!cov_left || !wk.fm)
			r = -ENOMEM;
		for (size_t i = 0; r == 0 && i < ws.n; i++)
			if (!ws.v[i].inode && !ws.v[i].found) {
				cov_left[i] = ws.v[i].end - ws.v[i].start;
				cov.open++;
			}
		cov.left = cov_left;
	}
	if (r == 0 && wk.fiemap && have_fsmap && c.e2 &&
	    owners_ext2_candidates(c.e2, &ws, covered_enough, &cov, &wk.cands, &wk.ncands, &dirs, &ndirs) == 0) {
		wk.only_cands = true;
		/* Their names from their handles or, when one has none, from
		 * the directories on the device, checked in the tree below,
		 * spare the walk. */
		if (wk.ncands && !wk.ninodes && handle_names(&wk, rootfd, &named) < 0 &&
		    owners_ext2_paths(c.e2, dirs, ndirs, wk.cands, wk.ncands, &named) < 0)
			named = NULL;
	}
	if (c.e2)
		ext2fs_close_free(&c.e2);
	/* XFS without a reverse map: the owners' inodes from bulkstat and the
	 * bmap ioctl, and then only their paths from the walk. */
	int found = r == 0 && wk.fiemap && have_fsmap && c.xfs.ok ? owners_xfs_find(fs, &c.xfs, rootfd, &ws) : -1;
	if (found == -ENOMEM)
		r = found;
	if (found == 0) {
		wk.fiemap = false;
		wk.ninodes = 0;
		for (size_t i = 0; i < ws.n; i++)
			wk.ninodes += ws.v[i].inode != 0;
	}
	if (r == 0 && wk.ninodes) {
		wk.inodes = calloc(wk.ninodes, sizeof(*wk.inodes));
		wk.inode_paths = calloc(wk.ninodes, sizeof(*wk.inode_paths));
		wk.inode_dir = calloc(wk.ninodes, sizeof(*wk.inode_dir));
		if (!wk.inodes || !wk.inode_paths || !wk.inode_dir)
			r = -ENOMEM;
		size_t n = 0;
		for (size_t i = 0; r == 0 && i < ws.n; i++)
			if (ws.v[i].inode)
				wk.inodes[n++] = ws.v[i].inode;
		if (r == 0) {
			qsort(wk.inodes, n, sizeof(*wk.inodes), owners_u64_cmp);
			size_t u = 0;
			for (size_t i = 0; i < n; i++)
				if (!u || wk.inodes[u - 1] != wk.inodes[i])
					wk.inodes[u++] = wk.inodes[i];
			wk.ninodes = u;
		}
	}
	bool walked = false;
	if (r == 0 && named) {
		int e = visit_named(&wk, rootfd, named);
		if (e == -ENOMEM)
			r = e;
		walked = e == 0;
	}
	for (size_t i = 0; named && i < wk.ncands; i++)
		strv_clear(&named[i]);
	free(named);
	if (r == 0 && !walked && !wk.fiemap && wk.ninodes && c.xfs.ok) {
		int e = handle_paths(&wk, rootfd);
		if (e < 0)
			r = e;
		walked = e > 0;
	}
	if (r == 0 && !walked && ((wk.fiemap && (!wk.only_cands || wk.ncands)) || wk.ninodes))
		r = walk_tree(&wk, rootfd);
	if (r == 0)
		r = rmap_owners(&wk);
	if (r == 0)
		r = want_gaps(&wk);
	/* What neither GETFSMAP nor a file's extents explain: ext2/3/4 asks
	 * the device's inodes (extent tree and attribute blocks). */
	bool left = false;
	for (size_t i = 0; i < ws.n; i++)
		left |= !ws.v[i].found;
	if (r == 0 && left && ext && have_fsmap) {
		int e = owners_ext2_resolve(o, fs, &ws, true, why, sizeof(why));
		if (e == 0)
			left = false;
		else if (e == -ENOMEM)
			r = e;
	}
	char unread[128];
	walk_unread(&wk, unread, sizeof(unread));
	/* XFS without a reverse map: the geometry and the inode chunks name
	 * some of the rest. */
	if (r == 0 && left && have_fsmap && c.xfs.ok) {
		r = owners_xfs_metadata(o, fs, &c.xfs, rootfd, &ws, unread);
		left = false;
	}
	for (size_t i = 0; r == 0 && left && i < ws.n; i++) {
		const struct want *w = &ws.v[i];
		char note[320];
		if (w->found)
			continue;
		if (have_fsmap)
			snprintf(note, sizeof(note), "in use, but in no file's data");
		else
			snprintf(note, sizeof(note), "in no file's data: free space or metadata (%s cannot say which)",
				 fs->type);
		snprintf(note + strlen(note), sizeof(note) - strlen(note), "%s%s", unread,
			 c.xfs.damaged ? "; file system damaged: the superblock on the device does not check out, "
					 "so no metadata is named (xfs_repair -n would say more)"
				       : "");
		r = owners_add_simple(o, fs, w->piece, w->start, w->end, INTEGRITY_OWNER_UNKNOWN, NULL, note);
	}
	walk_free(&wk);
	owners_want_free(&ws);
	return r;
}
