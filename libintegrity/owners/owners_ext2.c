/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Owners on an unmounted ext2/3/4: read with libext2fs, as debugfs's icheck
 * and ncheck do.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ext2fs/ext2fs.h>

#include "device.h"
#include "dlopen.h"
#include "owners_int.h"
#include "util/strv.h"

static int ext2_errno(errcode_t e)
{
	return e > 0 && e < 4096 ? -(int)e : -EIO;
}

static void ext2_error_table(void)
{
	initialize_ext2_error_table();
}

/* libext2fs's words for an error code ("The ext2 superblock is corrupt"). */
static const char *ext2_message(errcode_t e)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	const char *m;

	pthread_once(&once, ext2_error_table);
	m = error_message(e);
	return m ? m : strerror(-ext2_errno(e));
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

/* Writes why a file system is not read and returns -EUCLEAN. */
static __attribute__((format(printf, 3, 4))) int ext2_damaged(char *why, size_t whylen, const char *fmt, ...)
{
	int n = snprintf(why, whylen, "file system damaged: ");
	va_list ap;

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < whylen)
		vsnprintf(why + n, whylen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EUCLEAN;
}

/* Whether the superblock's geometry and every group's descriptor are such
 * that libext2fs reads only inside the file system and the buffers it
 * allocates from them: a damaged file system is not walked at all. */
static int ext2_check(ext2_filsys e2, char *why, size_t whylen)
{
	struct ext2_super_block *sb = e2->super;
	uint64_t bs = e2->blocksize, blocks = ext2fs_blocks_count(e2->super);
	uint64_t bpg = sb->s_blocks_per_group, isz = EXT2_INODE_SIZE(sb);
	uint32_t first = bs == 1024 && !e2->cluster_ratio_bits ? 1 : 0;
	bool flex = ext2fs_has_feature_flex_bg(sb);

	if (sb->s_first_data_block != first)
		return ext2_damaged(why, whylen, "the superblock's first data block is %u, not %u",
				    sb->s_first_data_block, first);
	if (blocks <= first + 1u)
		return ext2_damaged(why, whylen, "the superblock counts %" PRIu64 " blocks", blocks);
	if (bpg < 8 || bpg > 8 * bs || bpg % 8 || !sb->s_clusters_per_group || sb->s_clusters_per_group > 8 * bs)
		return ext2_damaged(why, whylen, "%" PRIu64 " blocks per group", bpg);
	if (!sb->s_inodes_per_group || sb->s_inodes_per_group > 8 * bs ||
	    (uint64_t)sb->s_inodes_per_group * e2->group_desc_count != sb->s_inodes_count)
		return ext2_damaged(why, whylen, "%u inodes per group, %u inodes in %u groups", sb->s_inodes_per_group,
				    sb->s_inodes_count, e2->group_desc_count);
	if (isz < EXT2_GOOD_OLD_INODE_SIZE || isz > bs || (isz & (isz - 1)))
		return ext2_damaged(why, whylen, "inodes of %" PRIu64 " bytes", isz);
	if (sb->s_reserved_gdt_blocks > bs / 4)
		return ext2_damaged(why, whylen, "%u reserved descriptor blocks", sb->s_reserved_gdt_blocks);
	if ((uint64_t)e2->group_desc_count != (blocks - first + bpg - 1) / bpg)
		return ext2_damaged(why, whylen, "%u groups for %" PRIu64 " blocks", e2->group_desc_count, blocks);
	for (dgrp_t g = 0; g < e2->group_desc_count; g++) {
		/* Without flex_bg a group's bitmaps and table are its own. */
		uint64_t lo = flex ? first : first + (uint64_t)g * bpg;
		uint64_t hi = flex || lo + bpg > blocks ? blocks : lo + bpg;
		uint64_t bb = ext2fs_block_bitmap_loc(e2, g), ib = ext2fs_inode_bitmap_loc(e2, g);
		uint64_t it = ext2fs_inode_table_loc(e2, g);
		if (bb < lo || bb >= hi)
			return ext2_damaged(why, whylen, "group %u's block bitmap at block %" PRIu64, g, bb);
		if (ib < lo || ib >= hi)
			return ext2_damaged(why, whylen, "group %u's inode bitmap at block %" PRIu64, g, ib);
		if (it < lo || it >= hi || e2->inode_blocks_per_group > hi - it)
			return ext2_damaged(why, whylen, "group %u's inode table at block %" PRIu64, g, it);
	}
	return 0;
}

/* Signs that an unmounted file system that can be read is damaged all
 * the same: its answers carry them.  "" when there are none. */
static void ext2_damage_signs(ext2_filsys e2, char *buf, size_t len)
{
	struct ext2_super_block *sb = e2->super;
	const char *what = NULL;
	char grp[64];

	buf[0] = '\0';
	if (!ext2fs_superblock_csum_verify(e2, sb))
		what = "the superblock's checksum is wrong";
	else if (sb->s_state & EXT2_ERROR_FS)
		what = "the kernel recorded errors in it";
	else if (!(sb->s_state & EXT2_VALID_FS))
		what = "it was not cleanly unmounted";
	else if (ext2fs_has_feature_journal_needs_recovery(sb))
		what = "its journal is not replayed";
	for (dgrp_t g = 0; !what && g < e2->group_desc_count; g++)
		if (!ext2fs_group_desc_csum_verify(e2, g)) {
			snprintf(grp, sizeof(grp), "group %u's descriptor checksum is wrong", g);
			what = grp;
		}
	if (what)
		snprintf(buf, len, "file system damaged: %s; what it says may be wrong (fsck would say more)", what);
}

/* A read-only io manager for libext2fs: pread() on the device, nothing
 * else.  libext2fs's unix_io_manager fsyncs the device it opens, which on
 * a device that is failing (the reason to look) means a cache flush sent
 * to it, and under load costs more than the whole lookup; a lookup only
 * reads.  Its channel's private data: */
struct ro_dev {
	int fd;
	int direct;			/* the device opened O_DIRECT, -1 if not */
	void *bounce;			/* aligned, for reads with the direct one */
};

/* Reads at least this large go around the page cache: the inode tables,
 * read once (the cache of a device no one holds open is dropped on its
 * last close anyway), at one copy less and without filling the cache. */
#define RO_DIRECT_MIN (64u << 10)
#define RO_DIRECT_MAX (1u << 20)

static errcode_t ro_close(io_channel ch)
{
	struct ro_dev *d = ch->private_data;

	if (--ch->refcount > 0)
		return 0;
	close(d->fd);
	if (d->direct >= 0)
		close(d->direct);
	free(d->bounce);
	free(d);
	free(ch->name);
	free(ch);
	return 0;
}

static errcode_t ro_set_blksize(io_channel ch, int blksize)
{
	if (blksize <= 0)
		return EINVAL;
	ch->block_size = blksize;
	return 0;
}

static errcode_t ro_read_blk64(io_channel ch, unsigned long long block, int count, void *data)
{
	size_t size = count < 0 ? (size_t)-(int64_t)count : (size_t)count * (size_t)ch->block_size;
	struct ro_dev *d = ch->private_data;
	uint64_t off = block * (uint64_t)ch->block_size;
	size_t done = 0;

	/* Whole 4 KiB blocks, through the bounce buffer; what the direct
	 * descriptor does not give is read the usual way below. */
	if (d->direct >= 0 && size >= RO_DIRECT_MIN && !(off % 4096) && !(size % 4096)) {
		while (done < size) {
			size_t want = size - done < RO_DIRECT_MAX ? size - done : RO_DIRECT_MAX;
			ssize_t n = pread(d->direct, d->bounce, want, (off_t)(off + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || n % 4096)
				break;
			memcpy((char *)data + done, d->bounce, (size_t)n);
			done += (size_t)n;
		}
	}
	while (done < size) {
		ssize_t n = pread(d->fd, (char *)data + done, size - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			errcode_t e = n < 0 ? (errcode_t)errno : EXT2_ET_SHORT_READ;
			memset((char *)data + done, 0, size - done);
			if (ch->read_error)
				return ch->read_error(ch, (unsigned long)block, count, data, size, (int)done, e);
			return e;
		}
		done += (size_t)n;
	}
	return 0;
}

static errcode_t ro_read_blk(io_channel ch, unsigned long block, int count, void *data)
{
	return ro_read_blk64(ch, block, count, data);
}

static errcode_t ro_write_blk64(_unused_ io_channel ch, _unused_ unsigned long long block, _unused_ int count,
				_unused_ const void *data)
{
	return EROFS;
}

static errcode_t ro_write_blk(io_channel ch, unsigned long block, int count, const void *data)
{
	return ro_write_blk64(ch, block, count, data);
}

static errcode_t ro_flush(_unused_ io_channel ch)
{
	return 0;
}

static errcode_t ro_open(const char *name, int flags, io_channel *out);

static struct struct_io_manager ro_io_manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "integrity read-only I/O manager",
	.open = ro_open,
	.close = ro_close,
	.set_blksize = ro_set_blksize,
	.read_blk = ro_read_blk,
	.write_blk = ro_write_blk,
	.flush = ro_flush,
	.read_blk64 = ro_read_blk64,
	.write_blk64 = ro_write_blk64,
};

static errcode_t ro_open(const char *name, int flags, io_channel *out)
{
	io_channel ch;

	*out = NULL;
	if (!name)
		return EXT2_ET_BAD_DEVICE_NAME;
	if (flags & IO_FLAG_RW)
		return EROFS;
	ch = calloc(1, sizeof(*ch));
	if (!ch || !(ch->name = strdup(name))) {
		free(ch);
		return EXT2_ET_NO_MEMORY;
	}
	struct ro_dev *d = calloc(1, sizeof(*d));
	if (!d) {
		free(ch->name);
		free(ch);
		return EXT2_ET_NO_MEMORY;
	}
	d->fd = open(name, O_RDONLY | O_CLOEXEC);
	if (d->fd < 0) {
		errcode_t e = (errcode_t)errno;
		free(d);
		free(ch->name);
		free(ch);
		return e;
	}
	/* Not on a mounted file system: a direct read writes the cached
	 * range back first. */
	d->direct = flags & IO_FLAG_DIRECT_IO ? open(name, O_RDONLY | O_CLOEXEC | O_DIRECT) : -1;
	if (d->direct >= 0 && posix_memalign(&d->bounce, 4096, RO_DIRECT_MAX) != 0) {
		d->bounce = NULL;
		close(d->direct);
		d->direct = -1;
	}
	ch->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	ch->manager = &ro_io_manager;
	ch->block_size = 1024;
	ch->refcount = 1;
	ch->private_data = d;
	*out = ch;
	return 0;
}

/* Opened, and checked: -EUCLEAN with why when it must not be read.
 * direct: large reads around the page cache (not for a mounted one). */
int owners_ext2_open(const struct fs_entry *fs, ext2_filsys *out, bool direct, char *why, size_t whylen)
{
	int r;

	*out = NULL;
	if (!dl_ext2fs_unix_io_manager()) {
		snprintf(why, whylen, "libext2fs is not installed");
		return -ELIBACC;
	}
	errcode_t e = ext2fs_open2(fs->device, NULL,
				   EXT2_FLAG_64BITS | EXT2_FLAG_SKIP_MMP | EXT2_FLAG_IGNORE_CSUM_ERRORS |
					   EXT2_FLAG_SOFTSUPP_FEATURES | (direct ? EXT2_FLAG_DIRECT_IO : 0),
				   0, 0, &ro_io_manager, out);
	if (e) {
		r = ext2_errno(e);
		snprintf(why, whylen, "unmounted %s that libext2fs cannot open: %s", fs->type, ext2_message(e));
		*out = NULL;
		return r;
	}
	(*out)->io->read_error = ext2_read_error;
	r = ext2_check(*out, why, whylen);
	if (r < 0)
		ext2fs_close_free(out);
	return r;
}

/* The inodes whose records lie in bytes [start, end) of group g's table. */
void owners_ext2_table_inodes(ext2_filsys e2, dgrp_t g, uint64_t table, uint64_t start, uint64_t end,
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
int owners_ext2_fixed_metadata(ext2_filsys e2, blk64_t blk, const char **what, dgrp_t *group)
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

/* When an inode's names were made, as far as its times say, in
 * nanoseconds: a directory's from its creation to its last change (its
 * entries were added then); a file's from its creation to its last change
 * (a link or a rename changes it).  Without a creation time (small
 * inodes) from 0. */
struct e2_window {
	uint64_t lo, hi;
};

static uint64_t e2_time(uint32_t sec, uint32_t extra)
{
	return ((uint64_t)(int64_t)(int32_t)sec + ((uint64_t)(extra & 3) << 32)) * 1000000000u + (extra >> 2);
}

static struct e2_window e2_window(ext2_filsys e2, const struct ext2_inode *inode)
{
	const struct ext2_inode_large *l = (const struct ext2_inode_large *)inode;
	bool large = EXT2_INODE_SIZE(e2->super) >= EXT2_GOOD_OLD_INODE_SIZE + 24 &&
		     l->i_extra_isize >= 24 && l->i_extra_isize <= EXT2_INODE_SIZE(e2->super) - EXT2_GOOD_OLD_INODE_SIZE;
	bool dir = LINUX_S_ISDIR(inode->i_mode);

	if (!large)
		return (struct e2_window){ 0, (uint64_t)(dir ? inode->i_mtime : inode->i_ctime) * 1000000000u };
	return (struct e2_window){ e2_time(l->i_crtime, l->i_crtime_extra),
				   dir ? e2_time(l->i_mtime, l->i_mtime_extra) : e2_time(l->i_ctime, l->i_ctime_extra) };
}

/* An inode that refers to a wanted block, and where in it. */
struct e2_claim {
	ext2_ino_t ino;
	e2_blkcnt_t blockcnt;		/* the block's index in the file; < 0 for its metadata */
	bool unwritten;			/* in an extent allocated, never written */
	bool bad_csum;			/* the inode's checksum is wrong */
	bool dir;			/* the inode is a directory */
	uint16_t links;			/* the inode's links */
	struct e2_window when;		/* of the inode's names */
};

/* One block wanted by the inode scan, in file-system blocks. */
struct e2_want {
	blk64_t blk;
	struct want *w;			/* the part of a piece in this block */
	struct e2_claim *claims;	/* every inode that refers to it (icheck), each once */
	size_t nclaims, capclaims;
};

/* Claims kept in all, whatever damaged inodes say: one per inode and
 * block, so that an inode naming a block many times cannot push out
 * another. */
#define E2_CLAIMS_MAX (1u << 20)

struct e2_scan {
	struct e2_want *v;
	size_t n, cap;
	ext2_ino_t ino;
	struct ext2_inode *inode;	/* of ino, as much of it as the inode size */
	bool check_csum;		/* the inodes' checksums are checked */
	size_t nclaims;			/* in all the wants */
	uint64_t calls, budget;		/* blocks the inode has listed, and the most it can */
	size_t runaway;			/* inodes that listed more: not read to the end */
	ext2_ino_t first_runaway;
	int err;
};

/* The most blocks, data and indirect, an inode can list: the file
 * system's.  Indirect blocks that refer to themselves list a block
 * (1 << 30 times with 4 KiB blocks), an extent tree may list a block
 * many times: such an inode's blocks are not read to the end. */
static uint64_t e2_block_budget(ext2_filsys e2)
{
	return ext2fs_blocks_count(e2->super) + 1;
}

/* Whether logical block blockcnt of the scan's inode is in an unwritten
 * extent: asked only for the blocks wanted. */
static bool e2_unwritten(ext2_filsys e2, struct e2_scan *s, e2_blkcnt_t blockcnt)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent x;
	bool unwritten = false;

	if (blockcnt < 0 || !(s->inode->i_flags & EXT4_EXTENTS_FL) ||
	    ext2fs_extent_open2(e2, s->ino, s->inode, &h) != 0)
		return false;
	if (ext2fs_extent_goto(h, (blk64_t)blockcnt) == 0 && ext2fs_extent_get(h, EXT2_EXTENT_CURRENT, &x) == 0)
		unwritten = (x.e_flags & EXT2_EXTENT_FLAGS_UNINIT) && (blk64_t)blockcnt >= x.e_lblk &&
			    (blk64_t)blockcnt - x.e_lblk < x.e_len;
	ext2fs_extent_free(h);
	return unwritten;
}

static int e2_want_cmp(const void *a, const void *b)
{
	const struct e2_want *x = a, *y = b;

	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

static int e2_block(ext2_filsys e2, blk64_t *blocknr, e2_blkcnt_t blockcnt, _unused_ blk64_t ref_blk,
		    _unused_ int ref_offset, void *data)
{
	struct e2_scan *s = data;
	struct e2_want key = { .blk = *blocknr };
	struct e2_want *hit = s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), e2_want_cmp) : NULL;

	if (++s->calls > s->budget) {
		if (!s->runaway++)
			s->first_runaway = s->ino;
		return BLOCK_ABORT;
	}
	/* Several wants may share a block: the first with it, then the rest. */
	while (hit && hit > s->v && hit[-1].blk == *blocknr)
		hit--;
	for (; hit && hit < s->v + s->n && hit->blk == *blocknr; hit++) {
		/* The inodes come in order: a claim by this one is the last. */
		if ((hit->nclaims && hit->claims[hit->nclaims - 1].ino == s->ino) || s->nclaims >= E2_CLAIMS_MAX)
			continue;
		if (GREEDY_REALLOC(hit->claims, hit->capclaims, hit->nclaims + 1) < 0) {
			s->err = -ENOMEM;
			return BLOCK_ABORT;
		}
		hit->claims[hit->nclaims++] = (struct e2_claim){
			s->ino, blockcnt, e2_unwritten(e2, s, blockcnt),
			s->check_csum && !ext2fs_inode_csum_verify(e2, s->ino, (struct ext2_inode_large *)s->inode),
			LINUX_S_ISDIR(s->inode->i_mode), s->inode->i_links_count, e2_window(e2, s->inode) };
		s->nclaims++;
	}
	return 0;
}

/* A name in a directory: child is called name (in e2_names.buf) in parent. */
struct e2_link {
	ext2_ino_t child, parent;
	size_t name, len;
};

/* Paths of wanted inodes.  The directories are read, those changed when
 * a wanted inode got its names first, until every wanted inode has as
 * many names as it has links; each directory on the way up is then named
 * in its parent, found by its "..".  When that does not reach the root
 * (damage: a directory with no name, a loop, a ".." that is wrong) or the
 * names are not all found, every directory is read and the names are
 * walked up from what they say (no depth limit, unlike
 * ext2fs_get_pathname()).  A link count too low (damage fsck tells) can
 * end the reading before a name is found. */
struct e2_names {
	ext2_filsys e2;
	ext2_ino_t dir;
	ext2_ino_t *inos;		/* sorted */
	size_t ninos;
	uint32_t *need;			/* per wanted inode: its names (links; 1 for a directory, 0 for the root) */
	struct e2_window *when;		/* per wanted inode, or NULL */
	uint32_t *got;			/* per wanted inode: names found */
	size_t left;			/* wanted inodes with names still to find */
	struct strv *paths;		/* per wanted inode: whole paths */
	struct strv *partial;		/* per wanted inode: paths that do not reach the root */
	bool *is_dir;
	struct e2_link *hits, *dirs;	/* names of wanted inodes; of directories */
	size_t nhits, caphits, ndirs, capdirs;
	size_t dirs_sorted;		/* dirs[0..dirs_sorted) is sorted and all there is */
	ext2_ino_t *seen;		/* directories read */
	size_t nseen, capseen, seen_sorted;
	char *buf;
	size_t nbuf, capbuf;
	/* Per name in dirs, once sorted (e2_dir_ways()): */
	size_t *first;			/* the first name of the same directory */
	size_t *way;			/* at a directory's first name: its name that leads to the root */
	size_t *seen_walk, *seen_depth;	/* at a directory's first name: the walk up that passed it, and where */
	size_t walk;
	size_t unreadable;		/* directories libext2fs found damaged */
	ext2_ino_t first_unreadable;
	size_t nameless;		/* entries with no name (damage) */
	ext2_ino_t first_nameless;	/* the directory of the first */
	int err;
};

static int ino_cmp(const void *a, const void *b)
{
	ext2_ino_t x = *(const ext2_ino_t *)a, y = *(const ext2_ino_t *)b;

	return x < y ? -1 : x > y;
}

static int link_cmp(const void *a, const void *b)
{
	const struct e2_link *x = a, *y = b;

	return x->child < y->child ? -1 : x->child > y->child;
}

/* Indices into the names (ctx) in the order of their parents. */
static int e2_parent_cmp(const void *a, const void *b, void *ctx)
{
	const struct e2_link *v = ctx, *x = &v[*(const size_t *)a], *y = &v[*(const size_t *)b];

	return x->parent < y->parent ? -1 : x->parent > y->parent;
}

static int e2_link_push(struct e2_names *n, struct e2_link **v, size_t *nv, size_t *cap,
			const struct ext2_dir_entry *d, size_t len)
{
	if (GREEDY_REALLOC(*v, *cap, *nv + 1) < 0 || GREEDY_REALLOC(n->buf, n->capbuf, n->nbuf + len) < 0)
		return -ENOMEM;
	memcpy(n->buf + n->nbuf, d->name, len);
	(*v)[(*nv)++] = (struct e2_link){ d->inode, n->dir, n->nbuf, len };
	n->nbuf += len;
	return 0;
}

static int e2_dirent(struct ext2_dir_entry *d, _unused_ int offset, _unused_ int blocksize, _unused_ char *buf,
		     void *data)
{
	struct e2_names *n = data;
	size_t len = (size_t)ext2fs_dirent_name_len(d);
	ext2_ino_t ino = d->inode, *hit;
	int ft = ext2fs_dirent_file_type(d), r = 0;

	/* An entry without a name (damage) names nothing; the answers say so. */
	if (ino && !len && !n->nameless++)
		n->first_nameless = n->dir;
	if (!ino || !len || (len == 1 && d->name[0] == '.') || (len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (n->ninos && (hit = bsearch(&ino, n->inos, n->ninos, sizeof(ino), ino_cmp))) {
		size_t k = (size_t)(hit - n->inos);
		r = e2_link_push(n, &n->hits, &n->nhits, &n->caphits, d, len);
		if (r == 0 && ++n->got[k] == n->need[k])
			n->left--;
	}
	/* Without the filetype feature every entry may be a directory. */
	if (r == 0 && (ft == EXT2_FT_DIR || ft == EXT2_FT_UNKNOWN))
		r = e2_link_push(n, &n->dirs, &n->ndirs, &n->capdirs, d, len);
	if (r < 0) {
		n->err = r;
		return DIRENT_ABORT;
	}
	return 0;
}

/* Reads directory dir's entries: the names of wanted inodes, and of
 * directories, in it. */
static int e2_read_dir(struct e2_names *n, ext2_ino_t dir)
{
	if (GREEDY_REALLOC(n->seen, n->capseen, n->nseen + 1) < 0)
		return -ENOMEM;
	n->seen[n->nseen++] = dir;
	n->dir = dir;
	/* A damaged block ends the directory: the names after it are not
	 * read, and the answers say so. */
	if (ext2fs_dir_iterate(n->e2, dir, 0, NULL, e2_dirent, n) != 0 && !n->err && !n->unreadable++)
		n->first_unreadable = dir;
	return n->err;
}

/* The name each directory is walked up by: of its names (one, but for
 * damage) the one on its shortest way from the root, found from the root
 * down, breadth first, so that a loop of wrong entries is never entered;
 * none for a directory no name of which leads to the root.  n->dirs is
 * sorted. */
static int e2_dir_ways(struct e2_names *n)
{
	size_t nd = n->ndirs ? n->ndirs : 1;
	_cleanup_free_ size_t *by_parent = malloc(nd * sizeof(*by_parent));
	_cleanup_free_ ext2_ino_t *queue = malloc((nd + 1) * sizeof(*queue));
	size_t head = 0, tail = 0;

	free(n->first);
	free(n->way);
	free(n->seen_walk);
	free(n->seen_depth);
	n->first = malloc(nd * sizeof(*n->first));
	n->way = malloc(nd * sizeof(*n->way));
	n->seen_walk = calloc(nd, sizeof(*n->seen_walk));
	n->seen_depth = calloc(nd, sizeof(*n->seen_depth));
	if (!by_parent || !queue || !n->first || !n->way || !n->seen_walk || !n->seen_depth)
		return -ENOMEM;
	for (size_t i = 0; i < n->ndirs; i++) {
		n->first[i] = i && n->dirs[i - 1].child == n->dirs[i].child ? n->first[i - 1] : i;
		n->way[i] = SIZE_MAX;
		by_parent[i] = i;
	}
	qsort_r(by_parent, n->ndirs, sizeof(*by_parent), e2_parent_cmp, n->dirs);
	queue[tail++] = EXT2_ROOT_INO;
	while (head < tail) {
		ext2_ino_t parent = queue[head++];
		size_t lo = 0, hi = n->ndirs;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (n->dirs[by_parent[mid]].parent < parent)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < n->ndirs && n->dirs[by_parent[lo]].parent == parent; lo++) {
			size_t j = by_parent[lo], f = n->first[j];
			/* Each directory is queued once: at most ndirs. */
			if (n->dirs[j].child == EXT2_ROOT_INO || n->way[f] != SIZE_MAX)
				continue;
			n->way[f] = j;
			queue[tail++] = n->dirs[j].child;
		}
	}
	return 0;
}

/* The path of a name in dir: up through the directories' names to the
 * root.  A directory with no name that leads there (unlinked, or in a
 * loop) ends it with its inode number, as "<N>", and *whole says it does
 * not reach the root; a loop is left where it closes.  n->dirs is sorted
 * and e2_dir_ways() made. */
static char *e2_path(struct e2_names *n, const struct e2_link *hit, bool *whole)
{
	_cleanup_free_ const struct e2_link **up = NULL;
	size_t nup = 0, cap = 0, total = 2, walk = ++n->walk;
	ext2_ino_t at = hit->parent;
	char top[16] = "";

	*whole = true;
	if (GREEDY_REALLOC(up, cap, 1) < 0)
		return NULL;
	up[nup++] = hit;
	while (at != EXT2_ROOT_INO) {
		struct e2_link key = { .child = at };
		const struct e2_link *d = n->ndirs ? bsearch(&key, n->dirs, n->ndirs, sizeof(key), link_cmp) : NULL;
		size_t f = d ? n->first[d - n->dirs] : 0;
		if (d && n->way[f] != SIZE_MAX) {
			d = &n->dirs[n->way[f]];
		} else if (d && n->seen_walk[f] == walk) {
			/* Round a loop: from where it was first met. */
			nup = n->seen_depth[f];
			d = NULL;
		} else if (d) {
			n->seen_walk[f] = walk;
			n->seen_depth[f] = nup;
		}
		if (!d || nup > n->ndirs) {
			snprintf(top, sizeof(top), "<%u>", at);
			*whole = false;
			break;
		}
		if (GREEDY_REALLOC(up, cap, nup + 1) < 0)
			return NULL;
		up[nup++] = d;
		at = d->parent;
	}
	for (size_t i = 0; i < nup; i++)
		total += up[i]->len + 1;
	char *path = malloc(total + strlen(top)), *o = path;
	if (!path)
		return NULL;
	o = stpcpy(o, top);
	for (size_t i = nup; i-- > 0;) {
		*o++ = '/';
		memcpy(o, n->buf + up[i]->name, up[i]->len);
		o += up[i]->len;
	}
	*o = '\0';
	return path;
}

/* The name of directory dir in its parent, from the directories read so
 * far, or else from its parent (its ".."), read now: 1 with *out, 0 when
 * it has none that way, -ENOMEM. */
static int e2_dir_name(struct e2_names *n, ext2_ino_t dir, struct e2_link *out)
{
	struct e2_link key = { .child = dir };
	const struct e2_link *d;
	ext2_ino_t parent;
	int r;

	for (int pass = 0; pass < 2; pass++) {
		if (n->dirs_sorted != n->ndirs) {
			qsort(n->dirs, n->ndirs, sizeof(*n->dirs), link_cmp);
			n->dirs_sorted = n->ndirs;
		}
		d = n->ndirs ? bsearch(&key, n->dirs, n->ndirs, sizeof(key), link_cmp) : NULL;
		if (d) {
			*out = *d;
			return 1;
		}
		if (pass)
			break;
		if (ext2fs_lookup(n->e2, dir, "..", 2, NULL, &parent) != 0 || !parent)
			return 0;
		if (n->seen_sorted != n->nseen) {
			qsort(n->seen, n->nseen, sizeof(*n->seen), ino_cmp);
			n->seen_sorted = n->nseen;
		}
		/* Read already, and no name of dir in it: its ".." is wrong. */
		if (bsearch(&parent, n->seen, n->nseen, sizeof(parent), ino_cmp))
			return 0;
		if ((r = e2_read_dir(n, parent)) < 0)
			return r;
	}
	return 0;
}

/* Each name found as a path, named upward through the directories' "..":
 * 1 when every one reaches the root, 0 when one does not (the names are
 * then to be read from every directory), -ENOMEM. */
static int e2_paths_up(struct e2_names *n)
{
	_cleanup_free_ struct e2_link *up = NULL;
	size_t cap = 0;
	int r = 1;

	/* Reading a parent may find more names of wanted inodes: those are
	 * walked up as well, after these. */
	for (size_t i = 0; i < n->nhits && r > 0; i++) {
		struct e2_link hit = n->hits[i];
		size_t nup = 0, total = 2;
		ext2_ino_t at = hit.parent;
		if (GREEDY_REALLOC(up, cap, 1) < 0)
			return -ENOMEM;
		up[nup++] = hit;
		total += hit.len + 1;
		while (at != EXT2_ROOT_INO) {
			/* More steps than names of directories read: a loop. */
			if (nup > n->ndirs)
				return 0;
			if (GREEDY_REALLOC(up, cap, nup + 1) < 0)
				return -ENOMEM;
			if ((r = e2_dir_name(n, at, &up[nup])) <= 0)
				return r;
			total += up[nup].len + 1;
			at = up[nup++].parent;
		}
		_cleanup_free_ char *path = malloc(total);
		char *o = path;
		if (!path)
			return -ENOMEM;
		for (size_t k = nup; k-- > 0;) {
			*o++ = '/';
			memcpy(o, n->buf + up[k].name, up[k].len);
			o += up[k].len;
		}
		*o = '\0';
		size_t k = (size_t)((ext2_ino_t *)bsearch(&hit.child, n->inos, n->ninos, sizeof(hit.child), ino_cmp) - n->inos);
		if (strv_push(&n->paths[k], path) < 0)
			return -ENOMEM;
	}
	return r;
}

/* The wanted inodes' links, and which are directories, when the caller
 * did not tell them: read from their inodes. */
static int e2_need(struct e2_names *n)
{
	struct ext2_inode inode;

	if (n->need)
		return 0;
	n->need = calloc(n->ninos ? n->ninos : 1, sizeof(*n->need));
	if (!n->need)
		return -ENOMEM;
	for (size_t i = 0; i < n->ninos; i++) {
		if (ext2fs_read_inode(n->e2, n->inos[i], &inode) != 0) {
			n->need[i] = UINT32_MAX;	/* not known: every directory is read */
			continue;
		}
		n->is_dir[i] = LINUX_S_ISDIR(inode.i_mode);
		n->need[i] = n->inos[i] == EXT2_ROOT_INO ? 0 : n->is_dir[i] ? 1 : inode.i_links_count;
	}
	return 0;
}

/* A directory to read and how far its times are from a wanted inode's. */
struct e2_near {
	uint64_t cost;
	ext2_ino_t dir;
};

static int near_cmp(const void *a, const void *b)
{
	const struct e2_near *x = a, *y = b;

	if (x->cost != y->cost)
		return x->cost < y->cost ? -1 : 1;
	return x->dir < y->dir ? -1 : x->dir > y->dir;
}

/* How far apart the times of a directory and of a wanted inode are: 0
 * when the inode may have got a name while the directory was changed. */
static uint64_t e2_gap(const struct e2_window *d, const struct e2_window *w)
{
	if (d->lo > w->hi)
		return d->lo - w->hi;
	if (w->lo > d->hi)
		return w->lo - d->hi;
	return 0;
}

/* At most this many wanted inodes for the directories to be ordered by
 * their times; with more most directories are read anyway. */
#define E2_ORDER_MAX 64

/* dirs (sorted), with their times dwhen, in the order they are read: the
 * nearest in time to a wanted inode first, as a directory gets its
 * entries while it is changed.  Without the times, in inode order. */
static int e2_dir_order(const struct e2_names *n, const ext2_ino_t *dirs, const struct e2_window *dwhen,
			size_t ndirs, ext2_ino_t **out)
{
	_cleanup_free_ struct e2_near *v = malloc((ndirs ? ndirs : 1) * sizeof(*v));
	ext2_ino_t *o = malloc((ndirs ? ndirs : 1) * sizeof(*o));

	if (!v || !o) {
		free(o);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ndirs; i++) {
		uint64_t cost = dwhen && n->when && n->ninos <= E2_ORDER_MAX ? UINT64_MAX : 0;
		for (size_t w = 0; cost && w < n->ninos; w++) {
			uint64_t c = e2_gap(&dwhen[i], &n->when[w]);
			cost = c < cost ? c : cost;
		}
		v[i] = (struct e2_near){ cost, dirs[i] };
	}
	if (ndirs > 1)
		qsort(v, ndirs, sizeof(*v), near_cmp);
	for (size_t i = 0; i < ndirs; i++)
		o[i] = v[i].dir;
	*out = o;
	return 0;
}

/* Forgets what was read, for reading it all again. */
static void e2_names_reset(struct e2_names *n)
{
	n->nhits = n->ndirs = n->dirs_sorted = n->nseen = n->seen_sorted = n->nbuf = n->left = 0;
	n->unreadable = n->nameless = 0;
	for (size_t i = 0; i < n->ninos; i++) {
		strv_clear(&n->paths[i]);
		n->got[i] = 0;
		n->left += n->need[i] > 0;
	}
}

/* Every directory: those in dirs when given (found by a scan already
 * made), else found by an inode scan. */
static int e2_read_all(struct e2_names *n, const ext2_ino_t *dirs, size_t ndirs)
{
	ext2_inode_scan scan;
	struct ext2_inode inode;
	ext2_ino_t ino;
	int r = 0;

	for (size_t i = 0; dirs && i < ndirs && r == 0; i++)
		r = e2_read_dir(n, dirs[i]);
	if (dirs)
		return r;
	if (ext2fs_open_inode_scan(n->e2, 0, &scan) != 0)
		return -EIO;
	while (r == 0 && ext2fs_get_next_inode(scan, &ino, &inode) == 0 && ino) {
		if (!inode.i_links_count || !LINUX_S_ISDIR(inode.i_mode) || inode.i_dtime)
			continue;
		r = e2_read_dir(n, ino);
	}
	ext2fs_close_inode_scan(scan);
	return r;
}

/* Names from the directories, or from dirs when given (found by a scan
 * already made, with their times dwhen when known).  n->need, when the
 * caller set it, says how many names each wanted inode has (and n->is_dir
 * is then set too); n->when, when set, their times. */
static int e2_find_names(ext2_filsys e2, struct e2_names *n, const ext2_ino_t *dirs, const struct e2_window *dwhen,
			 size_t ndirs)
{
	ext2_inode_scan scan;
	struct ext2_inode inode;
	ext2_ino_t ino;
	bool all = false;
	int r = 0;

	n->paths = calloc(n->ninos ? n->ninos : 1, sizeof(*n->paths));
	n->partial = calloc(n->ninos ? n->ninos : 1, sizeof(*n->partial));
	if (!n->is_dir)
		n->is_dir = calloc(n->ninos ? n->ninos : 1, sizeof(*n->is_dir));
	n->got = calloc(n->ninos ? n->ninos : 1, sizeof(*n->got));
	if (!n->paths || !n->partial || !n->is_dir || !n->got || e2_need(n) < 0)
		return -ENOMEM;
	n->left = 0;
	for (size_t i = 0; i < n->ninos; i++) {
		n->left += n->need[i] > 0;
		if (n->inos[i] == EXT2_ROOT_INO && strv_push(&n->paths[i], "/") < 0)
			return -ENOMEM;
	}
	/* The directories changed nearest in time to the wanted inodes
	 * first (else in inode order), until each has all its names. */
	if (dirs) {
		_cleanup_free_ ext2_ino_t *order = NULL;
		if ((r = e2_dir_order(n, dirs, dwhen, ndirs, &order)) < 0)
			return r;
		size_t i = 0;
		for (; i < ndirs && n->left && r == 0; i++)
			r = e2_read_dir(n, order[i]);
		all = i == ndirs;
	} else {
		if (ext2fs_open_inode_scan(e2, 0, &scan) != 0)
			return -EIO;
		all = true;
		while (r == 0 && ext2fs_get_next_inode(scan, &ino, &inode) == 0 && ino) {
			if (!n->left) {
				all = false;
				break;
			}
			if (inode.i_links_count && LINUX_S_ISDIR(inode.i_mode) && !inode.i_dtime)
				r = e2_read_dir(n, ino);
		}
		ext2fs_close_inode_scan(scan);
	}
	if (r < 0)
		return r;
	if (!all) {
		/* Named upward through the directories' "..": or, when one
		 * does not reach the root that way, from every directory. */
		if ((r = e2_paths_up(n)) < 0)
			return r;
		if (r > 0)
			return 0;
		e2_names_reset(n);
		for (size_t i = 0; i < n->ninos; i++)
			if (n->inos[i] == EXT2_ROOT_INO && strv_push(&n->paths[i], "/") < 0)
				return -ENOMEM;
		if ((r = e2_read_all(n, dirs, ndirs)) < 0)
			return r;
	}
	/* A directory has one name; with several (damage), the one that
	 * leads to the root. */
	if (n->ndirs)
		qsort(n->dirs, n->ndirs, sizeof(*n->dirs), link_cmp);
	if ((r = e2_dir_ways(n)) < 0)
		return r;
	for (size_t i = 0; i < n->nhits; i++) {
		ext2_ino_t child = n->hits[i].child;
		size_t k = (size_t)((ext2_ino_t *)bsearch(&child, n->inos, n->ninos, sizeof(child), ino_cmp) - n->inos);
		bool whole;
		_cleanup_free_ char *path = e2_path(n, &n->hits[i], &whole);
		if (!path || strv_push(whole ? &n->paths[k] : &n->partial[k], path) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void e2_names_free(struct e2_names *n)
{
	for (size_t i = 0; n->paths && i < n->ninos; i++)
		strv_clear(&n->paths[i]);
	for (size_t i = 0; n->partial && i < n->ninos; i++)
		strv_clear(&n->partial[i]);
	free(n->paths);
	free(n->partial);
	free(n->is_dir);
	free(n->inos);
	free(n->need);
	free(n->when);
	free(n->got);
	free(n->hits);
	free(n->dirs);
	free(n->seen);
	free(n->buf);
	free(n->first);
	free(n->way);
	free(n->seen_walk);
	free(n->seen_depth);
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

/* A path from the file system's root as the mounted tree names it: under
 * the mount point, with the mounted subtree (a bind mount of a directory)
 * taken off; NULL with *outside when it is not in that subtree. */
static char *e2_mounted_path(const struct fs_entry *fs, const char *path, bool *outside)
{
	const char *rest = owners_under_mount_root(fs, path);
	char *out;

	*outside = !rest;
	if (!rest)
		return NULL;
	if (asprintf(&out, "%s%s%s", !strcmp(fs->mountpoint, "/") && rest[0] ? "" : fs->mountpoint,
		     rest[0] ? "/" : "", rest) < 0)
		return NULL;
	return out;
}

/* ------------------------------------------------------------------ candidates on a mounted ext4 */

struct e2_cands {
	const struct want_set *ws;
	uint64_t *v;
	size_t n, cap;
	bool hit;			/* the current inode touches a want */
	uint64_t calls, budget;		/* as in struct e2_scan */
};

/* Whether file-system blocks [blk, blk + len) touch a want that has no
 * inode yet. */
static bool e2_touches(ext2_filsys e2, const struct want_set *ws, uint64_t blk, uint64_t len)
{
	uint64_t a = blk * e2->blocksize, b = (blk + len) * e2->blocksize;

	for (size_t k = owners_want_first(ws, a); k < ws->n && ws->v[k].start < b; k++)
		if (!ws->v[k].inode && ws->v[k].end > a)
			return true;
	return false;
}

static int e2_cand_block(ext2_filsys e2, blk64_t *blocknr, e2_blkcnt_t blockcnt, _unused_ blk64_t ref_blk,
			 _unused_ int ref_offset, void *data)
{
	struct e2_cands *c = data;

	/* More blocks than there are (damage): the kernel's map is the
	 * answer, as for any candidate. */
	if ((blockcnt >= 0 && e2_touches(e2, c->ws, *blocknr, 1)) || ++c->calls > c->budget) {
		c->hit = true;
		return BLOCK_ABORT;
	}
	return 0;
}

/* The extents in the inode itself (a tree of depth 0), read directly: most
 * files, and far cheaper than iterating their blocks.  1 when one touches
 * what touches() looks for, 0 when none, -1 when the inode holds a deeper
 * tree. */
static int e2_inline_extents(const struct ext2_inode *inode, bool (*touches)(const void *ctx, uint64_t blk, uint64_t len),
			     const void *ctx)
{
	const uint8_t *p = (const uint8_t *)inode->i_block;
	uint16_t magic = (uint16_t)(p[0] | p[1] << 8), entries = (uint16_t)(p[2] | p[3] << 8);
	uint16_t depth = (uint16_t)(p[6] | p[7] << 8);

	if (magic != 0xF30A || depth != 0 || entries > 4)
		return -1;
	for (unsigned i = 0; i < entries; i++) {
		const uint8_t *x = p + 12 + 12 * i;
		uint32_t len = (uint32_t)(x[4] | x[5] << 8);
		uint64_t start = (uint64_t)(x[6] | x[7] << 8) << 32 |
				 (uint32_t)(x[8] | x[9] << 8 | x[10] << 16 | (uint32_t)x[11] << 24);
		if (len > 32768)
			len -= 32768;	/* unwritten */
		if (touches(ctx, start, len))
			return 1;
	}
	return 0;
}

struct e2_touch {
	ext2_filsys e2;
	const struct want_set *ws;
};

static bool e2_touches_ws(const void *ctx, uint64_t blk, uint64_t len)
{
	const struct e2_touch *t = ctx;

	return e2_touches(t->e2, t->ws, blk, len);
}

/* Groups by their distance (ctx) to a want, then by number. */
static int group_cmp(const void *a, const void *b, void *ctx)
{
	const uint64_t *dist = ctx;
	dgrp_t x = *(const dgrp_t *)a, y = *(const dgrp_t *)b;

	if (dist[x] != dist[y])
		return dist[x] < dist[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The groups in the order their inode tables are read: those whose
 * blocks hold wants first, then the nearer to one the sooner (ext4 puts a
 * file's data near its inode, so the owners are most often found there).
 * Groups with no inode in use are left out. */
static int e2_group_order(ext2_filsys e2, const struct want_set *ws, dgrp_t **out, size_t *nout)
{
	dgrp_t ng = e2->group_desc_count;
	_cleanup_free_ uint64_t *dist = calloc(ng + 1, sizeof(*dist));
	dgrp_t *v = calloc(ng ? ng : 1, sizeof(*v));
	uint64_t ipg = e2->super->s_inodes_per_group;
	bool lazy = ext2fs_has_group_desc_csum(e2);
	size_t n = 0;

	if (!dist || !v) {
		free(v);
		return -ENOMEM;
	}
	/* dist[] first counts the wants that start and end in each group
	 * (a difference array), then becomes the distance to the nearest. */
	for (size_t k = 0; k < ws->n; k++) {
		const struct want *w = &ws->v[k];
		if (w->inode || w->end <= w->start)
			continue;
		dgrp_t a = ext2fs_group_of_blk2(e2, w->start / e2->blocksize);
		dgrp_t b = ext2fs_group_of_blk2(e2, (w->end - 1) / e2->blocksize);
		if (a >= ng)
			continue;
		dist[a]++;
		dist[b < ng ? b + 1 : ng]--;
	}
	uint64_t inside = 0, far = UINT64_MAX / 2;
	for (dgrp_t g = 0; g < ng; g++) {
		inside += dist[g];
		dist[g] = inside ? 0 : far;
	}
	for (dgrp_t g = 1; g < ng; g++)
		if (dist[g - 1] + 1 < dist[g])
			dist[g] = dist[g - 1] + 1;
	for (dgrp_t g = ng; g-- > 1;)
		if (dist[g] + 1 < dist[g - 1])
			dist[g - 1] = dist[g] + 1;
	for (dgrp_t g = 0; g < ng; g++)
		if (!lazy || (!ext2fs_bg_flags_test(e2, g, EXT2_BG_INODE_UNINIT) && ext2fs_bg_itable_unused(e2, g) < ipg))
			v[n++] = g;
	if (n > 1)
		qsort_r(v, n, sizeof(*v), group_cmp, dist);
	*out = v;
	*nout = n;
	return 0;
}

/* The inodes on a mounted ext2/3/4 whose data may be in the wants that
 * GETFSMAP left without an owner: read from the device, as icheck does,
 * to tell the walk which files to map instead of mapping them all.  The
 * kernel's FIEMAP of those files has the last word: enough() is asked it
 * after each group that gave candidates, and once it says every wanted
 * byte is in their extents the other groups are not read (*dirs is then
 * NULL: the directories were not all seen).  ws is indexed. */
int owners_ext2_candidates(ext2_filsys e2, const struct want_set *ws,
			   int (*enough)(void *ctx, const uint64_t *inos, size_t n), void *ctx, uint64_t **out,
			   size_t *nout, ext2_ino_t **dirs, size_t *ndirs)
{
	struct e2_cands c = { .ws = ws, .budget = e2_block_budget(e2) };
	ext2_ino_t *dv = NULL;
	_cleanup_free_ dgrp_t *order = NULL;
	size_t nd = 0, capd = 0, norder = 0;
	ext2_inode_scan is;
	struct ext2_inode inode;
	ext2_ino_t ino;
	uint64_t ipg = e2->super->s_inodes_per_group;
	bool lazy = ext2fs_has_group_desc_csum(e2), done = false;
	int r;

	*out = NULL;
	*nout = 0;
	if ((r = e2_group_order(e2, ws, &order, &norder)) < 0)
		return r;
	/* Large reads of the inode tables; unused tails of groups skipped. */
	if (ext2fs_open_inode_scan(e2, 256, &is))
		return -EIO;
	ext2fs_inode_scan_flags(is, EXT2_SF_DO_LAZY | EXT2_SF_SKIP_MISSING_ITABLE, 0);
	for (size_t i = 0; i < norder && !done && r == 0; i++) {
		dgrp_t g = order[i];
		uint64_t unused = lazy ? ext2fs_bg_itable_unused(e2, g) : 0;
		/* The last inode the scan reads in this group: it is not let
		 * run on into the next one's table. */
		uint64_t last = (uint64_t)g * ipg + ipg - (unused < ipg ? unused : 0);
		size_t before = c.n;
		if (ext2fs_inode_scan_goto_blockgroup(is, (int)g))
			continue;
		for (;;) {
			errcode_t e = ext2fs_get_next_inode(is, &ino, &inode);
			if (e == EXT2_ET_BAD_BLOCK_IN_INODE_TABLE)
				continue;
			if (e) {
				r = -EIO;
				break;
			}
			if (!ino || ino <= (uint64_t)g * ipg || ino > last)
				break;
			if (inode.i_links_count && LINUX_S_ISDIR(inode.i_mode) && !inode.i_dtime) {
				if (GREEDY_REALLOC(dv, capd, nd + 1) < 0) {
					r = -ENOMEM;
					break;
				}
				dv[nd++] = ino;
			}
			if (inode.i_links_count && ext2fs_inode_has_valid_blocks2(e2, &inode) &&
			    !(inode.i_flags & EXT4_INLINE_DATA_FL)) {
				int in = (inode.i_flags & EXT4_EXTENTS_FL)
						 ? e2_inline_extents(&inode, e2_touches_ws, &(struct e2_touch){ e2, ws })
						 : -1;
				if (in < 0) {
					c.hit = false;
					c.calls = 0;
					ext2fs_block_iterate3(e2, ino, BLOCK_FLAG_READ_ONLY | BLOCK_FLAG_DATA_ONLY, NULL,
							      e2_cand_block, &c);
					in = c.hit;
				}
				if (in > 0) {
					if (GREEDY_REALLOC(c.v, c.cap, c.n + 1) < 0) {
						r = -ENOMEM;
						break;
					}
					c.v[c.n++] = ino;
				}
			}
			if (ino == last)
				break;
		}
		if (r == 0 && enough && c.n > before && i + 1 < norder) {
			int e = enough(ctx, c.v + before, c.n - before);
			if (e < 0)
				r = e;
			done = e > 0;
		}
	}
	ext2fs_close_inode_scan(is);
	if (r < 0) {
		free(c.v);
		free(dv);
		return r;
	}
	if (c.n > 1)
		qsort(c.v, c.n, sizeof(*c.v), owners_u64_cmp);
	if (done) {
		free(dv);
		dv = NULL;
		nd = 0;
	} else if (nd > 1) {
		qsort(dv, nd, sizeof(*dv), ino_cmp);
	}
	*out = c.v;
	*nout = c.n;
	*dirs = dv;
	*ndirs = nd;
	return 0;
}

/* Whether blocks [blk, blk + len) hold one the scan wants (sorted). */
static bool e2_scan_touches(const void *ctx, uint64_t blk, uint64_t len)
{
	const struct e2_scan *s = ctx;
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->v[mid].blk < blk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->n && s->v[lo].blk < blk + len;
}

int owners_ext2_paths(ext2_filsys e2, const ext2_ino_t *dirs, size_t ndirs, const uint64_t *inos, size_t ninos,
		      struct strv **out)
{
	struct e2_names names = { .e2 = e2 };
	int r = 0;

	*out = NULL;
	names.inos = calloc(ninos ? ninos : 1, sizeof(*names.inos));
	if (!names.inos)
		return -ENOMEM;
	for (size_t i = 0; i < ninos; i++) {
		if (inos[i] > UINT32_MAX) {
			free(names.inos);
			return -ENOENT;
		}
		names.inos[i] = (ext2_ino_t)inos[i];
	}
	names.ninos = ninos;
	r = e2_find_names(e2, &names, dirs, NULL, ndirs);
	for (size_t i = 0; r == 0 && i < ninos; i++)
		if (names.partial[i].n)
			r = -ENOENT;
	if (r == 0) {
		*out = names.paths;
		names.paths = NULL;
	}
	e2_names_free(&names);
	return r;
}

/* The wants that are still open, for an ext2/3/4 file system read with
 * libext2fs (unmounted, or what a mounted one's kernel would not say).
 * mounted: free space is already told (GETFSMAP), do not read the bitmap
 * (it may be stale while mounted).  On failure nothing is added, no want
 * is marked found, and why says what went wrong. */
int owners_ext2_resolve(struct integrity_owners *o, struct fs_entry *fs, struct want_set *ws, bool mounted,
			char *why, size_t whylen)
{
	_cleanup_free_ size_t *mark = owners_mark(o);
	ext2_filsys e2;
	int r;

	if (!mark)
		return -ENOMEM;
	r = owners_ext2_open(fs, &e2, !mounted, why, whylen);
	if (r < 0)
		return r;
	uint64_t bs = e2->blocksize;
	struct e2_scan scan = { .budget = e2_block_budget(e2) };
	struct e2_names names = { .e2 = e2 };
	_cleanup_free_ ext2_ino_t *dirs = NULL;
	_cleanup_free_ struct e2_window *dwhen = NULL;
	size_t ndirs = 0, capdirs = 0, capdwhen = 0;
	/* The block bitmap, read the first time a block is neither fixed metadata nor known: -1 not yet. */
	int bitmap = mounted ? 0 : -1;

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
			if (owners_ext2_fixed_metadata(e2, b, &what, &g) == 0) {
				struct integrity_owner ow = { .kind = INTEGRITY_OWNER_METADATA, .fs = &fs->pub,
							      .metadata = what };
				owners_span(&ow, w->piece, s, e);
				if (strcmp(what, "inode table") == 0)
					owners_ext2_table_inodes(e2, g, ext2fs_inode_table_loc(e2, g) * bs, s, e,
								 &ow.first_inode, &ow.last_inode);
				r = owners_add(o, w->piece->range, &ow);
				continue;
			}
			if (bitmap < 0)
				bitmap = ext2fs_read_block_bitmap(e2) == 0;
			if (bitmap > 0 && b < ext2fs_blocks_count(e2->super) &&
			    !ext2fs_test_block_bitmap2(e2->block_map, b)) {
				r = owners_add_simple(o, fs, w->piece, s, e, INTEGRITY_OWNER_FREE, NULL, NULL);
				continue;
			}
			if (GREEDY_REALLOC(scan.v, scan.cap, scan.n + 1) < 0) {
				r = -ENOMEM;
				break;
			}
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
	}
	if (r == 0 && scan.n) {
		if (scan.n)
			qsort(scan.v, scan.n, sizeof(*scan.v), e2_want_cmp);
		ext2_inode_scan is;
		ext2_ino_t ino;
		int isz = EXT2_INODE_SIZE(e2->super);
		/* The whole inode, for its checksum. */
		_cleanup_free_ struct ext2_inode *full = calloc(1, (size_t)isz > sizeof(*full) ? (size_t)isz : sizeof(*full));
		/* Large reads of the inode tables. */
		errcode_t e = full ? ext2fs_open_inode_scan(e2, 256, &is) : 0;
		scan.check_csum = !mounted && ext2fs_has_feature_metadata_csum(e2->super) &&
				  (size_t)isz >= sizeof(struct ext2_inode);
		if (!full) {
			r = -ENOMEM;
		} else if (e) {
			r = ext2_damaged(why, whylen, "cannot scan the inodes: %s", ext2_message(e));
		} else {
			const struct ext2_inode *inode = full;
			while (ext2fs_get_next_inode_full(is, &ino, full, isz) == 0 && ino) {
				/* The directories, for the names: no second scan. */
				if (inode->i_links_count && LINUX_S_ISDIR(inode->i_mode) && !inode->i_dtime) {
					if (GREEDY_REALLOC(dirs, capdirs, ndirs + 1) < 0 ||
					    GREEDY_REALLOC(dwhen, capdwhen, ndirs + 1) < 0) {
						r = -ENOMEM;
						break;
					}
					dwhen[ndirs] = e2_window(e2, inode);
					dirs[ndirs++] = ino;
				}
				if (!inode->i_links_count && ino >= EXT2_FIRST_INO(e2->super))
					continue;
				if (inode->i_dtime && ino >= EXT2_FIRST_INO(e2->super))
					continue;
				scan.ino = ino;
				scan.inode = full;
				scan.calls = 0;
				blk64_t acl = ext2fs_file_acl_block(e2, inode);
				if (acl) {
					blk64_t a = acl;
					e2_block(e2, &a, -5, 0, 0, &scan);
				}
				/* The resize inode's blocks are the reserved descriptor
				 * blocks, told as fixed metadata above, and its double
				 * indirect block: only that one is left to look at. */
				if (ino == EXT2_RESIZE_INO && !(inode->i_flags & EXT4_EXTENTS_FL)) {
					blk64_t d = inode->i_block[EXT2_DIND_BLOCK];
					if (d)
						e2_block(e2, &d, BLOCK_COUNT_DIND, 0, 0, &scan);
				} else if (ext2fs_inode_has_valid_blocks2(e2, full) &&
				    (!(inode->i_flags & EXT4_EXTENTS_FL) || e2_inline_extents(inode, e2_scan_touches, &scan)))
					ext2fs_block_iterate3(e2, ino, BLOCK_FLAG_READ_ONLY, NULL, e2_block, &scan);
				if ((r = scan.err) < 0)
					break;
			}
			ext2fs_close_inode_scan(is);
		}
	}
	/* The owners' names. */
	if (r == 0 && scan.n) {
		size_t m = scan.nclaims ? scan.nclaims : 1;
		_cleanup_free_ struct e2_claim *owners = malloc(m * sizeof(*owners));
		names.inos = calloc(m, sizeof(*names.inos));
		names.need = calloc(m, sizeof(*names.need));
		names.is_dir = calloc(m, sizeof(*names.is_dir));
		names.when = calloc(m, sizeof(*names.when));
		if (!owners || !names.inos || !names.need || !names.is_dir || !names.when)
			r = -ENOMEM;
		size_t u = 0;
		for (size_t i = 0; r == 0 && i < scan.n; i++)
			for (size_t k = 0; k < scan.v[i].nclaims; k++) {
				ext2_ino_t ino = scan.v[i].claims[k].ino;
				if (ino >= EXT2_FIRST_INO(e2->super) || ino == EXT2_ROOT_INO)
					owners[u++] = scan.v[i].claims[k];
			}
		if (r == 0) {
			/* ino first: in inode order. */
			if (u > 1)
				qsort(owners, u, sizeof(*owners), ino_cmp);
			/* How many names each has: its links; a directory has one. */
			for (size_t i = 0; i < u; i++) {
				if (names.ninos && names.inos[names.ninos - 1] == owners[i].ino)
					continue;
				names.inos[names.ninos] = owners[i].ino;
				names.is_dir[names.ninos] = owners[i].dir;
				names.when[names.ninos] = owners[i].when;
				names.need[names.ninos++] = owners[i].ino == EXT2_ROOT_INO ? 0
							    : owners[i].dir ? 1 : owners[i].links;
			}
			r = e2_find_names(e2, &names, dirs, dwhen, ndirs);
		}
	}
	for (size_t i = 0; r == 0 && i < scan.n; i++) {
		struct e2_want *ew = &scan.v[i];
		const struct piece *p = ew->w->piece;
		if (!ew->nclaims) {
			r = owners_add_simple(o, fs, p, ew->w->start, ew->w->end, INTEGRITY_OWNER_UNKNOWN, NULL,
					      mounted ? "in use, but no inode on the device refers to it "
							"(changed since it was last written back?)"
						      : "in use, but no inode refers to it (fsck would say more)");
			continue;
		}
		/* ext4 shares no block between inodes but an extended
		 * attribute block: more claims are damage. */
		size_t owners = 0;
		for (size_t k = 0; k < ew->nclaims; k++)
			owners += ew->claims[k].blockcnt != -5;
		for (size_t k = 0; k < ew->nclaims && r == 0; k++) {
			const struct e2_claim *c = &ew->claims[k];
			ext2_ino_t ino = c->ino;
			_cleanup_free_ size_t *claim_mark = NULL;
			char doubt[160] = "";
			if (!mounted && c->bad_csum)
				snprintf(doubt, sizeof(doubt), "file system damaged: the inode's checksum is wrong, "
					 "it may not be what owns the block");
			else if (!mounted && owners > 1 && c->blockcnt != -5)
				snprintf(doubt, sizeof(doubt), "file system damaged: %zu inodes claim the block, "
					 "at most one owns it (fsck would say which)", owners);
			if (doubt[0] && !(claim_mark = owners_mark(o))) {
				r = -ENOMEM;
				break;
			}
			struct integrity_owner ow = { .kind = INTEGRITY_OWNER_FILE, .fs = &fs->pub, .inode = ino };
			owners_span(&ow, p, ew->w->start, ew->w->end);
			const char *reserved = ino < EXT2_FIRST_INO(e2->super) && ino != EXT2_ROOT_INO
						       ? e2_reserved_inode(e2, ino) : NULL;
			if (ino < EXT2_FIRST_INO(e2->super) && ino != EXT2_ROOT_INO) {
				ow.kind = INTEGRITY_OWNER_METADATA;
				ow.metadata = reserved ? reserved : "reserved inode";
				ow.inode = 0;
				r = owners_add(o, p->range, &ow);
				goto claimed;
			}
			if (c->blockcnt == -5) {
				ow.kind = INTEGRITY_OWNER_METADATA;
				ow.metadata = "extended attributes";
			} else if (c->blockcnt < 0) {
				ow.kind = INTEGRITY_OWNER_METADATA;
				ow.metadata = ext2fs_has_feature_extents(e2->super) ? "extent tree" : "indirect block";
			} else {
				ow.offset = (uint64_t)c->blockcnt * bs + (ew->w->start % bs);
				ow.length = ow.device_length;
				if (c->unwritten)
					ow.flags |= INTEGRITY_OWNER_UNWRITTEN;
			}
			ext2_ino_t *hit = names.ninos ? bsearch(&ino, names.inos, names.ninos, sizeof(ino), ino_cmp) : NULL;
			size_t ni = hit ? (size_t)(hit - names.inos) : 0;
			if (hit && names.is_dir[ni])
				ow.flags |= INTEGRITY_OWNER_DIRECTORY;
			if (!hit || (!names.paths[ni].n && !names.partial[ni].n)) {
				ow.note = "no path: not linked in any directory";
				if (!mounted && (names.unreadable || names.nameless))
					ow.note = "no path: not linked in any directory that could be read";
				r = owners_add(o, p->range, &ow);
				goto claimed;
			}
			for (size_t k2 = 0; k2 < names.paths[ni].n && r == 0; k2++) {
				_cleanup_free_ char *shown = NULL, *note = NULL;
				ow.path = names.paths[ni].v[k2];
				if (mounted) {
					bool outside;
					shown = e2_mounted_path(fs, ow.path, &outside);
					if (outside && asprintf(&note, "no path in the mounted tree: %s from the file "
								"system's root, outside the mounted %s",
								ow.path, fs->mount_root) < 0)
						note = NULL;
					if (!shown && !note) {
						r = -ENOMEM;
						break;
					}
					ow.path = shown;
				}
				struct integrity_owner one = ow;
				if (note)
					one.note = note;
				r = owners_add(o, p->range, &one);
			}
			ow.flags |= INTEGRITY_OWNER_PATH_INCOMPLETE;
			ow.note = "incomplete path: the directory it starts at (<N>, an inode number) has no name that leads to the root";
			for (size_t k2 = 0; k2 < names.partial[ni].n && r == 0; k2++) {
				ow.path = names.partial[ni].v[k2];
				r = owners_add(o, p->range, &ow);
			}
		claimed:
			if (r == 0 && claim_mark)
				r = owners_note_since(o, claim_mark, doubt);
		}
	}
	/* Damage anywhere: every answer says so. */
	char signs[256];
	if (r == 0 && !mounted && (ext2_damage_signs(e2, signs, sizeof(signs)), signs[0]))
		r = owners_note_since(o, mark, signs);
	if (r == 0 && !mounted && scan.runaway) {
		snprintf(signs, sizeof(signs),
			 "file system damaged: %zu inode%s (%u%s) list%s more blocks than the file system has "
			 "(a block map that refers to itself?), the rest not read (fsck would say more)",
			 scan.runaway, scan.runaway == 1 ? "" : "s", scan.first_runaway, scan.runaway == 1 ? "" : " first",
			 scan.runaway == 1 ? "s" : "");
		r = owners_note_since(o, mark, signs);
	}
	if (r == 0 && !mounted && names.unreadable) {
		snprintf(signs, sizeof(signs),
			 "file system damaged: %zu director%s could not be read to the end (inode %u%s), "
			 "names in %s are missing (fsck would say more)",
			 names.unreadable, names.unreadable == 1 ? "y" : "ies", names.first_unreadable,
			 names.unreadable == 1 ? "" : " first", names.unreadable == 1 ? "it" : "them");
		r = owners_note_since(o, mark, signs);
	}
	if (r == 0 && !mounted && names.nameless) {
		if (names.nameless == 1)
			snprintf(signs, sizeof(signs),
				 "file system damaged: a directory entry has no name (in directory inode %u); what it "
				 "names has no path through it (fsck would say more)",
				 names.first_nameless);
		else
			snprintf(signs, sizeof(signs),
				 "file system damaged: %zu directory entries have no name (the first in directory inode "
				 "%u); what they name has no path through them (fsck would say more)",
				 names.nameless, names.first_nameless);
		r = owners_note_since(o, mark, signs);
	}
	for (size_t i = 0; i < scan.n; i++) {
		free(scan.v[i].w);
		free(scan.v[i].claims);
	}
	free(scan.v);
	e2_names_free(&names);
	ext2fs_close_free(&e2);
	if (r < 0) {
		owners_rollback(o, mark);
		if (r != -ENOMEM && r != -EUCLEAN)
			snprintf(why, whylen, "libext2fs cannot read it: %s", strerror(-r));
		return r;
	}
	for (size_t i = 0; i < ws->n; i++)
		ws->v[i].found = true;
	return 0;
}

/* Every piece of an unmounted ext2/3/4: what libext2fs finds or, when it
 * cannot read the file system, unknown with the reason. */
int owners_ext2_resolve_unmounted(struct integrity_owners *o, struct fs_entry *fs, const struct piece *pieces,
				  size_t npieces)
{
	struct want_set ws = { 0 };
	char why[512] = "";
	int r = 0;

	for (size_t i = 0; i < npieces && r == 0; i++)
		r = owners_want_add(&ws, &(struct want){ .start = pieces[i].fs_off,
							 .end = pieces[i].fs_off + pieces[i].len,
							 .piece = &pieces[i] });
	if (r == 0)
		r = owners_ext2_resolve(o, fs, &ws, false, why, sizeof(why));
	owners_want_free(&ws);
	if (r >= 0 || r == -ENOMEM)
		return r;
	/* This file system's blocks are unknown; the rest of the lookup goes on. */
	r = 0;
	for (size_t i = 0; i < npieces && r == 0; i++)
		r = owners_add_simple(o, fs, &pieces[i], pieces[i].fs_off, pieces[i].fs_off + pieces[i].len,
				      INTEGRITY_OWNER_UNKNOWN, NULL, why);
	return r;
}
