/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * From bytes of a block device to what they belong to: a file and the
 * offset in it, a kind of file-system metadata, or free space.
 *
 * All ranges are resolved together: each file system is visited once, and
 * a mounted one's tree is walked once whatever the number of ranges
 * (FIEMAP on the files that may hold them, or on each file when the file
 * system cannot say which).  Mounted file systems are found by device number in
 * /proc/self/mountinfo and asked with FS_IOC_GETFSMAP first (free space,
 * metadata; on XFS with the reverse-mapping btree, the owning inode and
 * offset); unmounted ext2/3/4 are read with libext2fs, as debugfs's icheck
 * and ncheck do.  Files are opened only for FIEMAP, never read; symlinks
 * are never followed and other mounts never entered.
 */
#include "config.h"

#include <blkid.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device.h"
#include "owners_int.h"
#include "util/strv.h"

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

struct mount_search {
	struct fs_entry *fs;
	char *best;
	bool best_whole;
};

static int consider_mount(const struct mountinfo_entry *e, void *data)
{
	struct mount_search *m = data;
	struct fs_entry *fs = m->fs;
	struct stat st;

	/* btrfs shows an anonymous number: match its source device. */
	if (e->devnum != fs->devnum && (strcmp(e->fstype, "btrfs") != 0 || stat(e->source, &st) < 0 ||
					!S_ISBLK(st.st_mode) || st.st_rdev != fs->devnum))
		return 0;
	bool whole = strcmp(e->root, "/") == 0;
	if (m->best && (m->best_whole || !whole))
		return 0;
	free(m->best);
	m->best = strdup(e->target);
	m->best_whole = whole;
	/* The kernel's word for the type, whatever a probe found. */
	if (strcmp(e->fstype, fs->type) != 0) {
		free(fs->type);
		fs->type = strdup(e->fstype);
	}
	snprintf(fs->mount_root, sizeof(fs->mount_root), "%s", e->root);
	return m->best && fs->type ? 0 : -ENOMEM;
}

/* Where the file system on devnum is mounted: the mount of its whole tree
 * when there is one, else a bind mount of a part. */
static int find_mount(struct fs_entry *fs)
{
	struct mount_search m = { .fs = fs };
	int r = mountinfo_foreach(NULL, consider_mount, &m);

	fs->mountpoint = m.best;
	return r;
}

/* The first holder (dm, md) of a device, "" when none. */
static void find_holder(const struct integrity_device *dev, char *out, size_t len)
{
	struct strv holders = { 0 };

	out[0] = '\0';
	if (sysfs_read_links(device_dir(dev), "holders", &holders) == 0 && holders.n)
		snprintf(out, len, "%s", holders.v[0]);
	strv_clear(&holders);
}

static int fs_entry_new(struct integrity_owners *o, const struct integrity_device *dev, uint64_t start,
			struct fs_entry **out)
{
	struct fs_entry *fs = calloc(1, sizeof(*fs));
	char node[PATH_MAX];
	int r;

	if (!fs)
		return -ENOMEM;
	if (GREEDY_REALLOC(o->fs, o->fs_cap, o->nfs + 1) < 0) {
		free(fs);
		return -ENOMEM;
	}
	o->fs[o->nfs++] = fs;
	fs->devnum = device_devnum(dev);
	fs->size = integrity_device_size(dev);
	if ((r = path_printf(node, sizeof(node), "/dev/%s", integrity_device_name(dev))) < 0)
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
	size_t n, ranges_cap, back_cap;
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
	size_t nups = 0, ups_cap = 0;
	uint64_t lbs = integrity_device_logical_block_size(dev) ? integrity_device_logical_block_size(dev) : 512;
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
					if (GREEDY_REALLOC(ups, ups_cap, nups + 1) < 0) {
						r = -ENOMEM;
						break;
					}
					memset(&ups[nups], 0, sizeof(*ups));
					snprintf(ups[nups].name, sizeof(ups[nups].name), "%s", places[k].device);
					nups++;
				}
				struct up_device *up = &ups[u];
				if (GREEDY_REALLOC(up->ranges, up->ranges_cap, up->n + 1) < 0 ||
				    GREEDY_REALLOC(up->back, up->back_cap, up->n + 1) < 0) {
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
				r = owners_add(o, ups[u].back[j].piece->range, &w);
				named = true;
			}
		/* The file systems above now belong to this result. */
		void *v = reallocarray(o->fs, o->nfs + sub->nfs, sizeof(*o->fs));
		if (v) {
			o->fs = v;
			if (sub->nfs)
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

/* What holds no files itself (blkid's TYPE), and what to do to name the
 * files of what it holds. */
static const struct {
	const char *type, *note;
} not_file_systems[] = {
	{ "swap", "swap space: it holds no files (a process's pages when in use)" },
	{ "crypto_LUKS", "a closed LUKS volume: open it (cryptsetup open) and resolve again to name the files "
			 "inside" },
	{ "linux_raid_member", "a member of an md array that is not assembled: assemble it (mdadm --assemble) "
			       "and resolve again to name the files on the array" },
	{ "LVM2_member", "an LVM physical volume whose logical volumes are not active: activate them "
			 "(vgchange -ay) and resolve again to name their files" },
};

static const char *not_a_file_system(const char *type)
{
	for (size_t i = 0; i < ARRAY_SIZE(not_file_systems); i++)
		if (!strcmp(type, not_file_systems[i].type))
			return not_file_systems[i].note;
	return NULL;
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
		return owners_resolve_mounted(o, fs, pieces, n);
	} else if (!strcmp(fs->type, "ext2") || !strcmp(fs->type, "ext3") || !strcmp(fs->type, "ext4")) {
		return owners_ext2_resolve_unmounted(o, fs, pieces, n);
	} else if ((why = not_a_file_system(fs->type)) == NULL) {
		snprintf(note, sizeof(note), "unmounted %s: mount it (read-only is enough) to name files", fs->type);
		why = note;
	}
	for (size_t i = 0; i < n && r == 0; i++)
		r = owners_add_simple(o, fs, &pieces[i], pieces[i].fs_off, pieces[i].fs_off + pieces[i].len,
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

static int strcmp_null(const char *a, const char *b)
{
	if (!a || !b)
		return !!a - !!b;
	return strcmp(a, b);
}

/* Owners that may be one record, next to each other in device order. */
static int merge_cmp(const void *a, const void *b)
{
	const struct integrity_owner *x = a, *y = b;
	int c;

	if (x->fs != y->fs)
		return x->fs < y->fs ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	if (x->flags != y->flags)
		return x->flags < y->flags ? -1 : 1;
	if ((c = strcmp_null(x->path, y->path)) || (c = strcmp_null(x->metadata, y->metadata)) ||
	    (c = strcmp_null(x->note, y->note)))
		return c;
	return x->device_offset < y->device_offset ? -1 : x->device_offset > y->device_offset;
}

/* y continues x: the next bytes of the device and, for a file, of the
 * file; for an inode table, the next inodes. */
static bool owner_continues(const struct integrity_owner *x, const struct integrity_owner *y)
{
	if (x->fs != y->fs || x->kind != y->kind || x->inode != y->inode || x->flags != y->flags ||
	    strcmp_null(x->path, y->path) || strcmp_null(x->metadata, y->metadata) || strcmp_null(x->note, y->note))
		return false;
	if (x->device_offset + x->device_length != y->device_offset)
		return false;
	if (x->kind == INTEGRITY_OWNER_FILE && x->offset + x->length != y->offset)
		return false;
	if (!!x->first_inode != !!y->first_inode || (x->first_inode && x->last_inode + 1 != y->first_inode))
		return false;
	return true;
}

/* Contiguous bytes of one owner become one record (libext2fs answers
 * block by block; a 1 MiB file is one record, as FIEMAP gives it). */
static void owners_merge(struct owner_list *l)
{
	size_t out = 0;

	if (l->n < 2)
		return;
	qsort(l->v, l->n, sizeof(*l->v), merge_cmp);
	for (size_t i = 1; i < l->n; i++) {
		struct integrity_owner *x = &l->v[out], *y = &l->v[i];
		if (owner_continues(x, y)) {
			x->device_length += y->device_length;
			if (x->kind == INTEGRITY_OWNER_FILE)
				x->length += y->length;
			if (y->first_inode)
				x->last_inode = y->last_inode;
			free((char *)y->path);
			free((char *)y->note);
			continue;
		}
		l->v[++out] = *y;
	}
	l->n = out + 1;
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
	size_t nall = 0, all_cap = 0, nregions = 0;
	int r;

	*out = NULL;
	if (flags)
		return -EINVAL;	/* none defined yet */
	r = integrity_device_new(ctx, device, &dev);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nranges; i++)
		if (!ranges[i].length || ranges[i].offset > integrity_device_size(dev) || ranges[i].length > integrity_device_size(dev) - ranges[i].offset) {
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
	if (nranges)
		memcpy(o->ranges, ranges, nranges * sizeof(*ranges));
	/* A whole disk: each partition is a region of its own (the kernel's
	 * partitions, as the scrub names them); the rest is the disk's.
	 * Only this disk's partitions are looked at, not every device. */
	struct strv parts = { 0 };
	if (!integrity_device_partno(dev) &&
	    (r = sysfs_read_partitions(device_dir(dev), integrity_device_name(dev), &parts)) == -ENOENT)
		r = 0;
	for (size_t i = 0; r == 0 && i < parts.n; i++) {
		struct integrity_device *pd;
		uint64_t start, size;
		if (integrity_device_new(ctx, parts.v[i], &pd) < 0)
			continue;	/* deleted while we looked */
		if (sysfs_read_u64(device_dir(pd), "start", &start) < 0 ||
		    sysfs_read_u64(device_dir(pd), "size", &size) < 0 ||
		    GREEDY_REALLOC(all, all_cap, nall + 1) < 0) {
			integrity_device_free(pd);
			continue;
		}
		all[nall++] = pd;
		void *v = reallocarray(regions, nregions + 1, sizeof(*regions));
		if (!v) {
			r = -ENOMEM;
			break;
		}
		regions = v;
		regions[nregions++] = (struct region){ pd, start * 512, (start + size) * 512 };
	}
	strv_clear(&parts);
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
					r = owners_add_simple(o, NULL, &pieces[i], pieces[i].fs_off,
							      pieces[i].fs_off + pieces[i].len, INTEGRITY_OWNER_UNKNOWN, NULL,
							      "in no partition (the partition table, or unallocated)");
			} else if (r == 0) {
				r = resolve_fs(ctx, rd, o, fs, pieces, np);
			}
		}
		free(pieces);
	}
	for (size_t i = 0; r == 0 && i < nranges; i++)
		owners_merge(&o->owners[i]);
	for (size_t i = 0; r == 0 && i < nranges; i++)
		if (o->owners[i].n)
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
