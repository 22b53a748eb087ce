/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * XFS without the reverse-mapping btree: GETFSMAP tells free space from
 * used space and nothing more.  What is in use and in no file's data is
 * named here from what XFS does say: the geometry (allocation group
 * headers, the internal log) and the inode chunks (XFS_IOC_FSINUMBERS).
 * Directories are mapped with the bmap ioctl, as FIEMAP refuses them.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/fsmap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device.h"
#include "owners_xfs.h"

/* The few XFS ioctls used, as fs/xfs/libxfs/xfs_fs.h defines them (the
 * kernel does not export that header, and xfslibs-dev is not needed for
 * three structs). */
struct xfs_getbmap {
	int64_t bmv_offset, bmv_block, bmv_length;
	int32_t bmv_count, bmv_entries;
};

struct xfs_getbmapx {
	int64_t bmv_offset;		/* 512-byte units */
	int64_t bmv_block;		/* 512-byte units; -1 a hole, -2 delayed */
	int64_t bmv_length;
	int32_t bmv_count, bmv_entries, bmv_iflags, bmv_oflags, bmv_unused1, bmv_unused2;
};

struct xfs_fsop_bulkreq {
	uint64_t *lastip;
	int32_t icount;
	void *ubuffer;
	int32_t *ocount;
};

struct xfs_inogrp {
	uint64_t xi_startino;
	int32_t xi_alloccount;
	uint64_t xi_allocmask;
};

/* struct xfs_bulkstat: the fields read, at their offsets in its 192 bytes. */
struct xfs_bulkstat {
	uint64_t bs_ino, bs_size, bs_blocks, bs_xflags;
	int64_t bs_atime, bs_mtime, bs_ctime, bs_btime;
	uint32_t bs_gen, bs_uid, bs_gid, bs_projectid;
	uint32_t bs_atime_nsec, bs_mtime_nsec, bs_ctime_nsec, bs_btime_nsec;
	uint32_t bs_blksize, bs_rdev, bs_cowextsize_blks, bs_extsize_blks;
	uint32_t bs_nlink, bs_extents, bs_aextents;
	uint16_t bs_version, bs_forkoff, bs_sick, bs_checked, bs_mode, bs_pad2;
	uint64_t bs_extents64;
	uint64_t bs_pad[6];
};

struct xfs_bulk_ireq {
	uint64_t ino;
	uint32_t flags, icount, ocount, agno;
	uint64_t reserved[5];
};

struct xfs_bulkstat_req {
	struct xfs_bulk_ireq hdr;
	struct xfs_bulkstat bulkstat[];
};

#define XFS_IOC_GETBMAPX _IOWR('X', 56, struct xfs_getbmap)
#define XFS_IOC_BULKSTAT _IOR('X', 127, struct xfs_bulkstat_req)
/* An XFS file handle: inode number and generation (struct xfs_fid64). */
#define XFS_FILEID_INO64_GEN 0x81
#define XFS_IOC_FSINUMBERS _IOWR('X', 103, struct xfs_fsop_bulkreq)
#define BMV_IF_PREALLOC 0x4
#define BMV_IF_NO_HOLES 0x10
#define BMV_OF_PREALLOC 0x1
#define BMV_OF_LAST 0x4
#define BMV_OF_SHARED 0x8
#define XFS_INODES_PER_CHUNK 64

/* log2 of v when it is a power of two between lo and hi, else -1. */
static int log2_between(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v >= lo && v <= hi && (v & (v - 1)) == 0 ? __builtin_ctzll(v) : -1;
}

void owners_xfs_geometry(const struct fs_entry *fs, struct xfs_geo *g)
{
	uint8_t sb[512];
	_cleanup_close_ int fd = open(fs->device, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	memset(g, 0, sizeof(*g));
	if (fd < 0 || pread(fd, sb, sizeof(sb), 0) != (ssize_t)sizeof(sb) || memcmp(sb, "XFSB", 4) != 0)
		return;
	uint64_t dblocks = get_be64(sb + 8);
	g->blocksize = get_be32(sb + 4);
	g->logstart = get_be64(sb + 48);
	g->agblocks = get_be32(sb + 84);
	g->agcount = get_be32(sb + 88);
	g->logblocks = get_be32(sb + 96);
	g->sectsize = get_be16(sb + 102);
	g->inodesize = get_be16(sb + 104);
	g->inopblog = sb[123];
	g->agblklog = sb[124];
	if ((get_be16(sb + 100) & 0xf) == 5) {
		g->v5 = true;
		g->sparse = get_be32(sb + 216) & 0x2;	/* XFS_SB_FEAT_INCOMPAT_SPINODES */
		g->nrext64 = get_be32(sb + 216) & 0x20;	/* XFS_SB_FEAT_INCOMPAT_NREXT64 */
		g->spino_align = get_be32(sb + 228);
	}
	/* Never trusted further than it checks out, as the kernel checks it
	 * before mounting (xfs_validate_sb_common()): a damaged superblock
	 * names nothing.  Every position computed from it is then inside
	 * the file system, and the file system inside the device. */
	g->damaged = true;
	int blocklog = log2_between(g->blocksize, 512, 65536);
	int sectlog = log2_between(g->sectsize, 512, 32768);
	int inodelog = log2_between(g->inodesize, 256, 2048);
	if (blocklog < 0 || sectlog < 0 || inodelog < 0 || g->sectsize > g->blocksize || g->inodesize > g->blocksize ||
	    sb[120] != blocklog || sb[121] != sectlog || sb[122] != inodelog || g->inopblog != blocklog - inodelog ||
	    get_be16(sb + 106) != g->blocksize / g->inodesize)
		return;
	/* XFS_MIN_AG_BLOCKS; agblklog rounds agblocks up to a power of two. */
	if (g->agblocks < 64 || g->agblocks > 1u << 31 || g->agblklog != 64 - __builtin_clzll(g->agblocks - 1ull) ||
	    !g->agcount)
		return;
	/* Every allocation group is whole but the last, which is at least
	 * the smallest one. */
	uint64_t whole = (uint64_t)(g->agcount - 1) * g->agblocks;
	if (dblocks <= whole || dblocks - whole > g->agblocks || dblocks - whole < 64 ||
	    (fs->size && dblocks > fs->size >> blocklog))
		return;
	/* Sparse inode chunks are allocated in parts of a power of two inodes. */
	if (g->sparse && log2_between((uint64_t)g->spino_align * g->blocksize / g->inodesize, 1, 64) < 0)
		return;
	g->ok = true;
	g->damaged = false;
}

uint64_t owners_xfs_ino_at(const struct xfs_geo *g, uint64_t byte)
{
	uint64_t bno = byte / g->blocksize, agno = bno / g->agblocks, agbno = bno % g->agblocks;
	uint64_t in_block = (byte % g->blocksize) >> (__builtin_ctz(g->blocksize) - g->inopblog);

	return agno << (g->agblklog + g->inopblog) | agbno << g->inopblog | in_block;
}

/* The byte where inode ino's record starts; false for a number that is
 * not in the file system. */
static bool ino_byte(const struct xfs_geo *g, uint64_t ino, uint64_t *byte)
{
	uint64_t agno = ino >> (g->agblklog + g->inopblog);
	uint64_t agbno = (ino >> g->inopblog) & ((1ull << g->agblklog) - 1);
	uint64_t slot = ino & ((1ull << g->inopblog) - 1);

	if (agno >= g->agcount || agbno >= g->agblocks)
		return false;
	*byte = (agno * g->agblocks + agbno) * g->blocksize + slot * g->inodesize;
	return true;
}

int owners_xfs_bmap(int fd, int (*fn)(void *ctx, const struct xfs_extent *x), void *ctx)
{
	enum { N = 128 };
	_cleanup_free_ struct xfs_getbmapx *b = calloc(N + 1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b[0].bmv_length = -1;
	b[0].bmv_count = N + 1;
	b[0].bmv_iflags = BMV_IF_PREALLOC | BMV_IF_NO_HOLES;
	for (;;) {
		if (ioctl(fd, XFS_IOC_GETBMAPX, b) < 0)
			return -errno;
		if (b[0].bmv_entries <= 0)
			return 0;
		for (int i = 1; i <= b[0].bmv_entries && i <= N; i++) {
			const struct xfs_getbmapx *m = &b[i];
			if (m->bmv_block >= 0 && m->bmv_length > 0) {
				struct xfs_extent x = { .logical = (uint64_t)m->bmv_offset * 512,
							.physical = (uint64_t)m->bmv_block * 512,
							.length = (uint64_t)m->bmv_length * 512,
							.unwritten = m->bmv_oflags & BMV_OF_PREALLOC,
							.shared = m->bmv_oflags & BMV_OF_SHARED };
				int r = fn(ctx, &x);
				if (r < 0)
					return r;
			}
			if (m->bmv_oflags & BMV_OF_LAST)
				return 0;
		}
		/* The kernel moved the header past what it returned. */
		if (b[0].bmv_length <= 0)
			return 0;
	}
}

/* ------------------------------------------------------------------ metadata without a reverse map */

struct span {
	uint64_t start, end;
	const char *metadata;		/* NULL: free inodes, or a sparse chunk's hole */
	bool inodes;
};

struct spans {
	struct span *v;
	size_t n, cap;
	const struct want_set *left;	/* sorted, indexed: only spans that touch these */
};

static int span_add(struct spans *s, uint64_t start, uint64_t end, const char *metadata, bool inodes)
{
	size_t k = owners_want_first(s->left, start);

	if (start >= end || k >= s->left->n || s->left->v[k].start >= end)
		return 0;
	if (GREEDY_REALLOC(s->v, s->cap, s->n + 1) < 0)
		return -ENOMEM;
	s->v[s->n++] = (struct span){ start, end, metadata, inodes };
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Each allocation group starts with its superblock, AGF, AGI and AGFL, a
 * sector each, in the blocks up to the AGFL's; the internal log is where
 * the superblock says. */
static int fixed_spans(struct spans *s, const struct xfs_geo *g)
{
	uint64_t bs = g->blocksize, head = (3ull * g->sectsize / bs + 1) * bs, agbytes = (uint64_t)g->agblocks * bs;
	uint64_t next = 0;
	int r = 0;

	/* Only the groups the wants lie in: there may be millions. */
	for (size_t k = 0; k < s->left->n && r == 0; k++)
		for (uint64_t ag = s->left->v[k].start / agbytes > next ? s->left->v[k].start / agbytes : next;
		     ag < g->agcount && ag * agbytes < s->left->v[k].end && r == 0; ag++) {
			r = span_add(s, ag * agbytes, ag * agbytes + head, "superblock and allocation group headers",
				     false);
			next = ag + 1;
		}
	if (r == 0 && g->logstart && g->logblocks) {
		uint64_t agno = g->logstart >> g->agblklog, agbno = g->logstart & ((1ull << g->agblklog) - 1);
		if (agno < g->agcount && agbno + g->logblocks <= g->agblocks)
			r = span_add(s, (agno * g->agblocks + agbno) * bs,
				     (agno * g->agblocks + agbno + g->logblocks) * bs, "log", false);
	}
	return r;
}

/* One inode chunk, in parts of the size sparse chunks are allocated in: a
 * part with an inode in use is surely inodes; with none, on a file system
 * with sparse chunks, it may be a hole the chunk never had. */
static int chunk_spans(struct spans *s, const struct xfs_geo *g, const struct xfs_inogrp *c)
{
	unsigned per = XFS_INODES_PER_CHUNK;
	int r = 0;

	if (g->sparse) {
		uint64_t part = (uint64_t)(g->spino_align ? g->spino_align : 1) * g->blocksize / g->inodesize;
		per = part && part < XFS_INODES_PER_CHUNK ? (unsigned)part : XFS_INODES_PER_CHUNK;
	}
	for (unsigned i = 0; i < XFS_INODES_PER_CHUNK && r == 0; i += per) {
		uint64_t a, b;
		uint64_t mask = per == 64 ? UINT64_MAX : ((1ull << per) - 1) << i;
		if (!ino_byte(g, c->xi_startino + i, &a) || !ino_byte(g, c->xi_startino + i + per - 1, &b) || b < a)
			continue;
		bool sure = !g->sparse || (c->xi_allocmask & mask);
		r = span_add(s, a, b + g->inodesize, sure ? "inode table" : NULL, true);
	}
	return r;
}

/* Every inode chunk of the file system, in inode order, to fn: -errno
 * when XFS will not list them (no privilege). */
static int each_chunk(int rootfd, int (*fn)(void *ctx, const struct xfs_inogrp *c), void *ctx)
{
	enum { N = 256 };
	_cleanup_free_ struct xfs_inogrp *buf = calloc(N, sizeof(*buf));
	uint64_t last = 0;
	int32_t count = 0;
	struct xfs_fsop_bulkreq req = { .lastip = &last, .icount = N, .ubuffer = buf, .ocount = &count };
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (ioctl(rootfd, XFS_IOC_FSINUMBERS, &req) < 0)
			return -errno;
		if (count <= 0)
			return 0;
		for (int32_t i = 0; i < count && i < N; i++)
			if ((r = fn(ctx, &buf[i])) < 0)
				return r;
	}
}

struct chunk_spans_ctx {
	struct spans *s;
	const struct xfs_geo *g;
};

static int chunk_spans_one(void *ctx, const struct xfs_inogrp *c)
{
	struct chunk_spans_ctx *x = ctx;

	return chunk_spans(x->s, x->g, c);
}

static int add_span_owner(struct integrity_owners *o, const struct fs_entry *fs, const struct xfs_geo *g,
			  const struct want *w, uint64_t s, uint64_t e, const struct span *sp)
{
	struct integrity_owner ow = { .kind = INTEGRITY_OWNER_METADATA, .fs = &fs->pub, .metadata = sp->metadata };

	if (!sp->metadata) {
		ow.kind = INTEGRITY_OWNER_UNKNOWN;
		ow.note = "in use, in an inode chunk where no inode is in use: free inodes, "
			  "or other metadata in a hole of a sparse inode chunk";
	}
	owners_span(&ow, w->piece, s, e);
	if (sp->inodes) {
		ow.first_inode = owners_xfs_ino_at(g, s);
		ow.last_inode = owners_xfs_ino_at(g, e - 1);
	}
	return owners_add(o, w->piece->range, &ow);
}

static int add_rest(struct integrity_owners *o, const struct fs_entry *fs, const struct want *w, uint64_t s,
		    uint64_t e, const char *extra_note)
{
	char note[320];

	if (s >= e)
		return 0;
	snprintf(note, sizeof(note),
		 "in use, in no file's data or directory: XFS btrees, extent maps, extended attributes or "
		 "symlinks, or a file deleted while open (without the reverse-mapping btree XFS cannot say "
		 "which)%s",
		 extra_note ? extra_note : "");
	return owners_add_simple(o, fs, w->piece, s, e, INTEGRITY_OWNER_UNKNOWN, NULL, note);
}

/* The metadata XFS's geometry and inode chunks place that touch the wants
 * in sp->left (indexed), sorted. */
static int metadata_spans(struct spans *sp, const struct xfs_geo *g, int rootfd)
{
	int r = 0;

	if (g->ok)
		r = fixed_spans(sp, g);
	/* Without the ioctl (no privilege) chunks stay unnamed, not guessed. */
	if (r == 0 && g->ok && each_chunk(rootfd, chunk_spans_one, &(struct chunk_spans_ctx){ sp, g }) == -ENOMEM)
		r = -ENOMEM;
	if (r == 0 && sp->n)
		qsort(sp->v, sp->n, sizeof(*sp->v), span_cmp);
	return r;
}

int owners_xfs_metadata(struct integrity_owners *o, const struct fs_entry *fs, const struct xfs_geo *g,
			int rootfd, struct want_set *ws, const char *extra_note)
{
	struct want_set left = { 0 };
	struct spans sp = { .left = &left };
	int r = 0;

	for (size_t i = 0; i < ws->n && r == 0; i++)
		if (!ws->v[i].found)
			r = owners_want_add(&left, &ws->v[i]);
	if (r == 0)
		r = owners_want_index(&left);
	if (r == 0)
		r = metadata_spans(&sp, g, rootfd);
	for (size_t i = 0; i < ws->n && r == 0; i++) {
		struct want *w = &ws->v[i];
		if (w->found)
			continue;
		uint64_t at = w->start;
		/* Spans do not overlap on a sound file system; clipped if they do. */
		for (size_t k = 0; k < sp.n && r == 0 && at < w->end; k++) {
			const struct span *x = &sp.v[k];
			if (x->end <= at || x->start >= w->end)
				continue;
			r = add_rest(o, fs, w, at, x->start, extra_note);
			uint64_t s = x->start > at ? x->start : at, e = x->end < w->end ? x->end : w->end;
			if (r == 0)
				r = add_span_owner(o, fs, g, w, s, e, x);
			at = e;
		}
		if (r == 0)
			r = add_rest(o, fs, w, at, w->end, extra_note);
		w->found = true;
	}
	free(sp.v);
	owners_want_free(&left);
	return r;
}

/* ------------------------------------------------------------------ owners without a reverse map */

struct chunk {
	uint64_t startino, distance;
	uint64_t allocmask;
};

struct finder {
	const struct xfs_geo *g;
	struct want_set *ws;		/* indexed */
	uint64_t *left;			/* per want: bytes no unshared extent has covered yet */
	size_t open;			/* wants with bytes left */
	struct want_set found;		/* extents in wants, with their inode */
	uint64_t ino;
	const uint64_t *asked;		/* already asked, sorted */
	size_t nasked;
};

/* Indices into the chunks (ctx), nearest the wants first. */
static int order_cmp(const void *a, const void *b, void *ctx)
{
	const struct chunk *v = ctx, *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];

	return x->distance < y->distance ? -1 : x->distance > y->distance;
}

static int find_extent(void *ctx, const struct xfs_extent *x)
{
	struct finder *f = ctx;
	uint64_t a = x->physical, b = x->physical + x->length;

	for (size_t k = owners_want_first(f->ws, a); k < f->ws->n && f->ws->v[k].start < b; k++) {
		const struct want *w = &f->ws->v[k];
		uint64_t s = w->start > a ? w->start : a, e = w->end < b ? w->end : b;
		if (s >= e || w->inode || w->found)
			continue;
		struct want part = { .start = s, .end = e, .piece = w->piece, .inode = f->ino,
				     .file_offset = x->logical + (s - a),
				     .flags = (x->shared ? FMR_OF_SHARED : 0) | (x->unwritten ? FMR_OF_PREALLOC : 0) };
		if (owners_want_add(&f->found, &part) < 0)
			return -ENOMEM;
		if (!x->shared && f->left[k]) {
			f->left[k] = f->left[k] > e - s ? f->left[k] - (e - s) : 0;
			if (!f->left[k])
				f->open--;
		}
	}
	return 0;
}

/* An inode opened by its handle, as the kernel finds it. */
static int open_handle(int rootfd, uint64_t ino, uint32_t gen, int flags)
{
	union owners_handle h;

	h.fh.handle_bytes = 12;
	h.fh.handle_type = XFS_FILEID_INO64_GEN;
	memcpy(h.fh.f_handle, &ino, 8);
	memcpy(h.fh.f_handle + 8, &gen, 4);
	return open_by_handle_at(rootfd, &h.fh, flags);
}

/* Inode ino's handle (its generation from bulkstat), into h; 0, or -1
 * when XFS does not list it. */
int owners_xfs_handle(int rootfd, uint64_t ino, union owners_handle *h)
{
	struct {
		struct xfs_bulk_ireq hdr;
		struct xfs_bulkstat b;
	} req = { .hdr = { .ino = ino, .icount = 1 } };

	if (ioctl(rootfd, XFS_IOC_BULKSTAT, &req) < 0 || req.hdr.ocount != 1 || req.b.bs_ino != ino)
		return -1;
	h->fh.handle_bytes = 12;
	h->fh.handle_type = XFS_FILEID_INO64_GEN;
	memcpy(h->fh.f_handle, &ino, 8);
	memcpy(h->fh.f_handle + 8, &req.b.bs_gen, 4);
	return 0;
}

/* The extents of one inode, opened by its handle: the kernel's word. */
static int find_in_inode(struct finder *f, int rootfd, uint64_t ino, uint32_t gen, uint16_t mode)
{
	bool dir = S_ISDIR(mode);

	if (!(S_ISREG(mode) || dir))
		return 0;
	int fd = open_handle(rootfd, ino, gen, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (dir ? O_DIRECTORY : O_NOATIME));
	if (fd < 0)
		return errno == ESTALE || errno == ENOENT ? 0 : -errno;	/* gone since */
	f->ino = ino;
	int r = owners_xfs_bmap(fd, find_extent, f);
	close(fd);
	return r == -ENOMEM ? r : 0;
}

bool owners_xfs_record_touches(const struct xfs_geo *g, const struct want_set *ws, const uint8_t *d)
{
	uint64_t n = g->nrext64 ? get_be64(d + 24) : get_be32(d + 76);
	/* The data fork: up to the attribute fork (di_forkoff, in 8-byte
	 * units), else the whole literal area after the 176-byte core. */
	size_t literal = g->inodesize - 176u, fork = d[82] ? (size_t)d[82] * 8 : literal;

	if (d[5] != 2 || fork > literal || n > fork / 16)
		return true;	/* btree (its leaves are not here), or nonsense: ask */
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *x = d + 176 + 16 * i;
		uint64_t l0 = get_be64(x), l1 = get_be64(x + 8);
		uint64_t fsb = (l0 & 0x1ff) << 43 | l1 >> 21, len = l1 & ((1u << 21) - 1);
		uint64_t agno = fsb >> g->agblklog, agbno = fsb & ((1ull << g->agblklog) - 1);
		if (agno >= g->agcount || agbno >= g->agblocks)
			continue;
		uint64_t a = (agno * g->agblocks + agbno) * g->blocksize, b = a + len * g->blocksize;
		for (size_t k = owners_want_first(ws, a); k < ws->n && ws->v[k].start < b; k++)
			if (!ws->v[k].inode && !ws->v[k].found && ws->v[k].end > a)
				return true;
	}
	return false;
}

/* Whether inode b's record on the device (v5) is the inode bulkstat
 * describes as it is now: the same inode, generation, mode, block and
 * extent counts.  An inode chunk not yet written back, or an inode whose
 * extents changed since, does not agree, and is asked. */
static bool disk_agrees(const struct xfs_geo *g, const uint8_t *d, const struct xfs_bulkstat *b)
{
	uint64_t n = g->nrext64 ? get_be64(d + 24) : get_be32(d + 76);

	return get_be16(d) == 0x494e && d[4] == 3 && get_be64(d + 152) == b->bs_ino && get_be32(d + 92) == b->bs_gen &&
	       get_be16(d + 2) == b->bs_mode && get_be64(d + 64) == b->bs_blocks && n == b->bs_extents;
}

static uint64_t chunk_distance(const struct want_set *ws, uint64_t byte)
{
	size_t k = owners_want_first(ws, byte);
	uint64_t d = UINT64_MAX;

	/* The nearest want after it, and the one before. */
	if (k < ws->n)
		d = ws->v[k].start > byte ? ws->v[k].start - byte : 0;
	if (k > 0 && byte - ws->v[k - 1].end < d)
		d = byte >= ws->v[k - 1].end ? byte - ws->v[k - 1].end : 0;
	return d;
}

struct chunk_list {
	const struct xfs_geo *g;
	const struct want_set *ws;
	struct chunk *v;
	size_t n, cap;
};

static int chunk_list_add(void *ctx, const struct xfs_inogrp *c)
{
	struct chunk_list *l = ctx;
	uint64_t byte;

	if (!ino_byte(l->g, c->xi_startino, &byte))
		return 0;
	if (GREEDY_REALLOC(l->v, l->cap, l->n + 1) < 0)
		return -ENOMEM;
	l->v[l->n++] = (struct chunk){ c->xi_startino, chunk_distance(l->ws, byte), c->xi_allocmask };
	return 0;
}

static int find_in_chunk(struct finder *f, int rootfd, struct xfs_bulkstat_req *req, uint64_t startino)
{
	memset(&req->hdr, 0, sizeof(req->hdr));
	req->hdr.ino = startino;
	req->hdr.icount = XFS_INODES_PER_CHUNK;
	if (ioctl(rootfd, XFS_IOC_BULKSTAT, req) < 0)
		return -errno;
	for (uint32_t i = 0; i < req->hdr.ocount && i < XFS_INODES_PER_CHUNK && f->open; i++) {
		const struct xfs_bulkstat *b = &req->bulkstat[i];
		/* Bulkstat goes on into the next chunks: those are asked in their turn. */
		if (b->bs_ino < startino || b->bs_ino >= startino + XFS_INODES_PER_CHUNK)
			break;
		if (!b->bs_blocks || (f->nasked && bsearch(&b->bs_ino, f->asked, f->nasked, sizeof(*f->asked), owners_u64_cmp)))
			continue;
		int r = find_in_inode(f, rootfd, b->bs_ino, b->bs_gen, b->bs_mode);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Splits each want that extents were found in: the extents become wants
 * with their inode, as a reverse map gives them; the bytes between them
 * stay wants with none. */
static int split_wants(struct want_set *ws, struct want_set *found)
{
	struct want_set out = { 0 };
	int r = 0;

	r = owners_want_index(found);
	for (size_t i = 0; i < ws->n && r == 0; i++) {
		const struct want *w = &ws->v[i];
		if (w->inode || w->found) {
			r = owners_want_add(&out, w);
			continue;
		}
		uint64_t at = w->start;
		for (size_t k = owners_want_first(found, w->start); k < found->n && found->v[k].start < w->end && r == 0;
		     k++) {
			const struct want *x = &found->v[k];
			if (x->piece != w->piece || x->end <= w->start)
				continue;
			if (x->start > at)
				r = owners_want_add(&out, &(struct want){ .start = at, .end = x->start, .piece = w->piece });
			if (r == 0)
				r = owners_want_add(&out, x);
			if (x->end > at)
				at = x->end;
		}
		if (r == 0 && at < w->end)
			r = owners_want_add(&out, &(struct want){ .start = at, .end = w->end, .piece = w->piece });
	}
	if (r == 0)
		r = owners_want_index(&out);
	if (r < 0) {
		owners_want_free(&out);
		return r;
	}
	owners_want_free(ws);
	*ws = out;
	return 0;
}

/* The inodes of one chunk that may hold a want, asked: bulkstat says
 * which are in use now, and the chunk's records on the device, where they
 * agree with it, which of those have no extent in a want. */
struct chunk_pass {
	struct finder *f;
	int devfd, rootfd;
	uint8_t *buf;			/* a chunk's records, read directly */
	struct xfs_bulkstat_req *req;
	uint64_t *asked;		/* inodes asked: not again */
	size_t nasked, capasked;
	uint64_t *asked_slots;		/* per chunk: the slots of the inodes asked */
};

static int ask_one(struct chunk_pass *p, size_t chunk, unsigned slot, uint64_t ino, uint32_t gen, uint16_t mode)
{
	if (GREEDY_REALLOC(p->asked, p->capasked, p->nasked + 1) < 0)
		return -ENOMEM;
	p->asked[p->nasked++] = ino;
	p->asked_slots[chunk] |= 1ull << slot;
	return find_in_inode(p->f, p->rootfd, ino, gen, mode);
}

/* Chunk number chunk through bulkstat: its inodes with data that the
 * records on the device do not show to miss every want, and that were
 * not asked before. */
static int ask_chunk(struct chunk_pass *p, const struct chunk *chunks, size_t chunk)
{
	const struct xfs_geo *g = p->f->g;
	uint64_t startino = chunks[chunk].startino;
	size_t len = (size_t)XFS_INODES_PER_CHUNK * g->inodesize;
	struct xfs_bulkstat_req *req = p->req;
	uint64_t byte;
	bool disk = p->devfd >= 0 && ino_byte(g, startino, &byte) &&
		    pread(p->devfd, p->buf, len, (off_t)byte) == (ssize_t)len;

	memset(&req->hdr, 0, sizeof(req->hdr));
	req->hdr.ino = startino;
	req->hdr.icount = XFS_INODES_PER_CHUNK;
	if (ioctl(p->rootfd, XFS_IOC_BULKSTAT, req) < 0)
		return -errno;
	for (uint32_t i = 0; i < req->hdr.ocount && i < XFS_INODES_PER_CHUNK && p->f->open; i++) {
		const struct xfs_bulkstat *b = &req->bulkstat[i];
		/* Bulkstat goes on into the next chunks: those are asked in their turn. */
		if (b->bs_ino < startino || b->bs_ino >= startino + XFS_INODES_PER_CHUNK)
			break;
		if (!b->bs_blocks || !(S_ISREG(b->bs_mode) || S_ISDIR(b->bs_mode)))
			continue;
		unsigned slot = (unsigned)(b->bs_ino - startino);
		const uint8_t *d = p->buf + (size_t)slot * g->inodesize;
		if ((p->asked_slots[chunk] >> slot & 1) ||
		    (disk && disk_agrees(g, d, b) && !owners_xfs_record_touches(g, p->f->ws, d)))
			continue;
		int r = ask_one(p, chunk, slot, b->bs_ino, b->bs_gen, b->bs_mode);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A chunk's records on the device, where they are sound, asked for the
 * inodes whose extents there touch a want: one read for 64 inodes.  1
 * when a record in use is not sound (a chunk not yet written back): the
 * chunk is then for bulkstat to tell. */
static int ask_disk_chunk(struct chunk_pass *p, const struct chunk *chunks, size_t chunk)
{
	const struct chunk *c = &chunks[chunk];
	const struct xfs_geo *g = p->f->g;
	size_t len = (size_t)XFS_INODES_PER_CHUNK * g->inodesize;
	uint64_t byte;
	int stale = 0;

	if (p->devfd < 0 || !ino_byte(g, c->startino, &byte) || pread(p->devfd, p->buf, len, (off_t)byte) != (ssize_t)len)
		return 1;
	for (unsigned i = 0; i < XFS_INODES_PER_CHUNK && p->f->open; i++) {
		const uint8_t *d = p->buf + (size_t)i * g->inodesize;
		uint64_t ino = c->startino + i;
		uint16_t mode = get_be16(d + 2);
		if (!(c->allocmask >> i & 1))
			continue;
		if (get_be16(d) != 0x494e || d[4] != 3 || get_be64(d + 152) != ino) {
			stale = 1;
			continue;
		}
		if (!(S_ISREG(mode) || S_ISDIR(mode)) || (p->asked_slots[chunk] >> i & 1) ||
		    !owners_xfs_record_touches(g, p->f->ws, d))
			continue;
		int r = ask_one(p, chunk, i, ino, get_be32(d + 92), mode);
		if (r < 0)
			return r;
	}
	return stale;
}

/* Where a chunk's inodes keep their data, as one look tells: the median
 * start of their first extents, from the chunk's records on the
 * device where they are sound, else from the kernel's map of its first
 * inode with data.  Files made one after the other get inode numbers and
 * data in the same order, so this orders the chunks by where their data
 * is, on a file system that has not been turned over much. */
struct chunk_key {
	uint64_t start;
	uint8_t state;			/* 0 not looked at, 1 known, 2 nothing to tell */
};

static int first_extent(void *ctx, const struct xfs_extent *x)
{
	*(uint64_t *)ctx = x->physical;
	return -ECANCELED;
}

static bool chunk_start(struct chunk_pass *p, const struct chunk *c, struct chunk_key *key)
{
	const struct xfs_geo *g = p->f->g;
	size_t len = (size_t)XFS_INODES_PER_CHUNK * g->inodesize;
	uint64_t byte, best = UINT64_MAX, starts[XFS_INODES_PER_CHUNK];
	size_t nstarts = 0;

	if (key->state)
		return key->state == 1;
	key->state = 2;
	if (p->devfd >= 0 && ino_byte(g, c->startino, &byte) && pread(p->devfd, p->buf, len, (off_t)byte) == (ssize_t)len)
		for (unsigned i = 0; i < XFS_INODES_PER_CHUNK; i++) {
			const uint8_t *d = p->buf + (size_t)i * g->inodesize;
			uint64_t n = g->nrext64 ? get_be64(d + 24) : get_be32(d + 76);
			if (!(c->allocmask >> i & 1) || get_be16(d) != 0x494e || d[4] != 3 ||
			    get_be64(d + 152) != c->startino + i || d[5] != 2 || !n || !S_ISREG(get_be16(d + 2)))
				continue;
			uint64_t fsb = (get_be64(d + 176) & 0x1ff) << 43 | get_be64(d + 184) >> 21;
			uint64_t agno = fsb >> g->agblklog, agbno = fsb & ((1ull << g->agblklog) - 1);
			if (agno < g->agcount && agbno < g->agblocks)
				starts[nstarts++] = (agno * g->agblocks + agbno) * g->blocksize;
		}
	/* The median: a file or two of the chunk put far away (another
	 * allocation group was free sooner) do not move it. */
	if (nstarts) {
		qsort(starts, nstarts, sizeof(*starts), owners_u64_cmp);
		best = starts[nstarts / 2];
	}
	if (best == UINT64_MAX) {
		struct {
			struct xfs_bulk_ireq hdr;
			struct xfs_bulkstat b[4];
		} req = { .hdr = { .ino = c->startino, .icount = 4 } };
		if (ioctl(p->rootfd, XFS_IOC_BULKSTAT, &req) == 0)
			for (uint32_t i = 0; i < req.hdr.ocount && i < 4 && best == UINT64_MAX; i++) {
				const struct xfs_bulkstat *b = &req.b[i];
				if (b->bs_ino >= c->startino + XFS_INODES_PER_CHUNK)
					break;
				if (!b->bs_blocks || !S_ISREG(b->bs_mode))
					continue;
				int fd = open_handle(p->rootfd, b->bs_ino, b->bs_gen,
						     O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_NOATIME);
				if (fd >= 0) {
					owners_xfs_bmap(fd, first_extent, &best);
					close(fd);
				}
			}
	}
	if (best == UINT64_MAX)
		return false;
	key->start = best;
	key->state = 1;
	return true;
}

/* How far a chunk has been asked. */
enum { CHUNK_NOT_ASKED, CHUNK_RECORDS, CHUNK_BULKSTAT };

/* For each want, the chunks whose data lies around it, found by halving
 * (chunk_start()), asked through bulkstat: the one whose data starts last
 * before the want first, then its neighbours, a few on each side.  Chunks
 * are in the order of the device; asked[] says how far each was asked. */
static int ask_searched(struct chunk_pass *p, const struct chunk *chunks, size_t nchunks, uint8_t *asked)
{
	enum { AROUND = 3 };
	const struct want_set *ws = p->f->ws;
	_cleanup_free_ struct chunk_key *keys = calloc(nchunks ? nchunks : 1, sizeof(*keys));
	int r = 0;

	if (!keys)
		return -ENOMEM;
	for (size_t k = 0; k < ws->n && p->f->open && r == 0; k++) {
		uint64_t pos = ws->v[k].start;
		size_t a = 0, b = nchunks;
		if (!p->f->left[k])
			continue;
		/* a: the first chunk whose data starts past the want.  Data
		 * mostly grows evenly with the inode numbers: every other step
		 * (the second first) guesses from the starts at both ends, the
		 * others halve. */
		uint64_t ka = 0, kb = 0;
		bool ends = false, guess = false;
		if (nchunks && chunk_start(p, &chunks[0], &keys[0]) &&
		    chunk_start(p, &chunks[nchunks - 1], &keys[nchunks - 1])) {
			ka = keys[0].start;
			kb = keys[nchunks - 1].start;
			ends = ka <= pos && pos < kb;
		}
		while (a < b) {
			size_t m = a + (b - a) / 2, j;
			if (ends && guess && ka <= pos && pos < kb)
				m = a + (size_t)((double)(pos - ka) / (double)(kb - ka) * (double)(b - a));
			if (m >= b)
				m = b - 1;
			guess = !guess;
			for (j = m; j < b && !chunk_start(p, &chunks[j], &keys[j]); j++)
				;
			if (j < b && keys[j].start <= pos) {
				a = j + 1;
				ka = keys[j].start;
			} else {
				/* Known from m on only when m itself told. */
				if (j == m && j < b)
					kb = keys[j].start;
				else
					ends = false;
				b = m;
			}
		}
		size_t t = a ? a - 1 : 0;
		for (size_t d = 0; d <= 2 * AROUND && p->f->left[k] && r == 0; d++) {
			/* t, t + 1, t - 1, t + 2, ... */
			size_t c = d % 2 ? t + (d + 1) / 2 : t - d / 2;
			if ((d % 2 == 0 && d / 2 > t) || c >= nchunks || asked[c] == CHUNK_BULKSTAT)
				continue;
			/* Bulkstat, not the records alone: a record written back
			 * before the file's data was placed looks sound. */
			asked[c] = CHUNK_BULKSTAT;
			r = ask_chunk(p, chunks, c);
		}
	}
	return r;
}

int owners_xfs_find(const struct fs_entry *fs, const struct xfs_geo *g, int rootfd, struct want_set *ws)
{
	struct finder f = { .g = g, .ws = ws };
	struct chunk_list l = { .g = g, .ws = ws };
	struct chunk_pass p = { .f = &f, .devfd = -1, .rootfd = rootfd };
	_cleanup_free_ uint8_t *asked = NULL;
	_cleanup_free_ size_t *order = NULL;
	int r;

	if (!g->ok)
		return -EINVAL;
	f.left = calloc(ws->n ? ws->n : 1, sizeof(*f.left));
	p.req = calloc(1, sizeof(*p.req) + XFS_INODES_PER_CHUNK * sizeof(struct xfs_bulkstat));
	if (!f.left || !p.req) {
		r = -ENOMEM;
		goto out;
	}
	/* Metadata the geometry and the inode chunks are sure of is in no
	 * file: no inode is asked for it (a block of AG headers would
	 * otherwise cost every inode's extents). */
	struct spans sp = { .left = ws };
	r = metadata_spans(&sp, g, rootfd);
	for (size_t i = 0; i < ws->n && r == 0; i++) {
		const struct want *w = &ws->v[i];
		if (w->inode || w->found)
			continue;
		f.left[i] = w->end - w->start;
		for (size_t k = 0; k < sp.n; k++) {
			uint64_t s = sp.v[k].start > w->start ? sp.v[k].start : w->start;
			uint64_t e = sp.v[k].end < w->end ? sp.v[k].end : w->end;
			if (s < e && sp.v[k].metadata)
				f.left[i] = f.left[i] > e - s ? f.left[i] - (e - s) : 0;
		}
		f.open += f.left[i] != 0;
	}
	free(sp.v);
	if (r == 0 && f.open)
		r = each_chunk(rootfd, chunk_list_add, &l);
	if (r == 0 && f.open) {
		/* Direct: XFS writes inodes back around the device's page
		 * cache, so a cached page would stay as stale as the first
		 * read left it. */
		if (g->v5 && posix_memalign((void **)&p.buf, 4096, (size_t)XFS_INODES_PER_CHUNK * g->inodesize) == 0)
			p.devfd = open(fs->device, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_DIRECT);
		asked = calloc(l.n ? l.n : 1, sizeof(*asked));
		order = calloc(l.n ? l.n : 1, sizeof(*order));
		p.asked_slots = calloc(l.n ? l.n : 1, sizeof(*p.asked_slots));
		if (!asked || !order || !p.asked_slots)
			r = -ENOMEM;
	}
	/* A search per want costs about log2(chunks) reads, one pass over
	 * the chunks' records one read each: the search first when it is the
	 * cheaper. */
	unsigned log2n = 1;
	while (log2n < 64 && (1ull << log2n) < l.n)
		log2n++;
	bool search_first = (uint64_t)f.open * (log2n + 2) < l.n;
	if (r == 0 && f.open && search_first)
		r = ask_searched(&p, l.v, l.n, asked);
	/* Every chunk's records, the nearest the wants first: they say which
	 * inodes to ask where they are sound. */
	for (size_t i = 0; r == 0 && f.open && i < l.n; i++)
		order[i] = i;
	if (r == 0 && f.open && l.n)
		qsort_r(order, l.n, sizeof(*order), order_cmp, l.v);
	for (size_t i = 0; r == 0 && f.open && i < l.n; i++) {
		int e = asked[order[i]] ? 1 : ask_disk_chunk(&p, l.v, order[i]);
		if (e < 0)
			r = e;
		else if (e == 0)
			asked[order[i]] = CHUNK_RECORDS;
	}
	/* Chunks not written back yet: bulkstat tells of them, those around
	 * each want first. */
	if (r == 0 && f.open && !search_first)
		r = ask_searched(&p, l.v, l.n, asked);
	for (size_t i = 0; r == 0 && f.open && i < l.n; i++)
		if (asked[order[i]] == CHUNK_NOT_ASKED) {
			asked[order[i]] = CHUNK_BULKSTAT;
			r = ask_chunk(&p, l.v, order[i]);
		}
	/* Owners the records on the device hid (extents moved with their
	 * counts unchanged): every inode not asked yet. */
	if (r == 0 && f.open) {
		if (p.nasked)
			qsort(p.asked, p.nasked, sizeof(*p.asked), owners_u64_cmp);
		f.asked = p.asked;
		f.nasked = p.nasked;
		for (size_t i = 0; i < l.n && f.open && r == 0; i++)
			r = find_in_chunk(&f, rootfd, p.req, l.v[order[i]].startino);
	}
	if (r == 0)
		r = split_wants(ws, &f.found);
out:
	if (p.devfd >= 0)
		close(p.devfd);
	free(p.buf);
	free(p.req);
	free(p.asked);
	free(p.asked_slots);
	free(l.v);
	owners_want_free(&f.found);
	free(f.left);
	return r;
}
