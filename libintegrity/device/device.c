/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One block device as sysfs describes it: name, number, transport, size, the
 * kernel's integrity profile and policy, and its best stable name.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libudev.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "device.h"
#include "device_int.h"
#include "stackname.h"
#include "util/strv.h"

INTEGRITY_EXPORT int integrity_context_new(struct integrity_context **ctxp, const char *sysfs_root)
{
	struct integrity_context *ctx = calloc(1, sizeof(*ctx));

	*ctxp = NULL;
	if (!ctx)
		return -ENOMEM;
	ctx->root = strdup(sysfs_root ? sysfs_root : SYSFS_LIVE_ROOT);
	if (!ctx->root) {
		free(ctx);
		return -ENOMEM;
	}
	size_t len = strlen(ctx->root);
	while (len > 1 && ctx->root[len - 1] == '/')
		ctx->root[--len] = '\0';
	ctx->live = strcmp(ctx->root, SYSFS_LIVE_ROOT) == 0;
	/* udev's database only describes the live system. */
	if (ctx->live)
		ctx->udev = access("/run/udev/data", F_OK) == 0 ? udev_new() : NULL;
	*ctxp = ctx;
	return 0;
}

INTEGRITY_EXPORT void integrity_context_free(struct integrity_context *ctx)
{
	if (!ctx)
		return;
	if (ctx->udev)
		udev_unref(ctx->udev);
	free(ctx->root);
	free(ctx);
}

static bool exists(const char *dir, const char *attr)
{
	char path[PATH_MAX];

	path_printf(path, sizeof(path), "%s/%s", dir, attr);
	return access(path, F_OK) == 0;
}

/* The transport from where the disk sits in the device tree, or from its
 * name for virtual devices. */
static void detect_transport(struct integrity_device *dev)
{
	static const struct {
		const char *match;
		const char *transport;
	} path_parts[] = {
		{ "/nvme", "nvme" }, { "/virtio", "virtio" }, { "/mmc", "mmc" },
	}, virtual_names[] = {
		{ "loop", "loop" }, { "dm-", "dm" }, { "md", "md" }, { "zram", "zram" },
		{ "nbd", "nbd" }, { "ram", "ram" }, { "pmem", "nd" },
	};
	char path[PATH_MAX], real[PATH_MAX];
	const char *t = "";

	/* The link's target names the bus path; no need to resolve it all. */
	path_printf(path, sizeof(path), "%s/block/%s", dev->ctx->root, dev->disk);
	ssize_t n = readlink(path, real, sizeof(real) - 1);
	real[n > 0 ? n : 0] = '\0';
	if (exists(dev->diskdir, "device/scsi_disk")) {
		t = strstr(real, "/ata") ? "sata" : strstr(real, "/usb") ? "usb" : "scsi";
	} else {
		for (size_t i = 0; i < ARRAY_SIZE(path_parts) && !*t; i++)
			if (strstr(real, path_parts[i].match))
				t = path_parts[i].transport;
		for (size_t i = 0; i < ARRAY_SIZE(virtual_names) && !*t; i++)
			if (strncmp(dev->disk, virtual_names[i].match,
				    strlen(virtual_names[i].match)) == 0)
				t = virtual_names[i].transport;
	}
	path_printf(dev->transport, sizeof(dev->transport), "%s", t);
}

/* Fill a device from its sysfs directory; disk is NULL for a whole disk.
 * A partition takes what belongs to the disk from parent when given. */
static int device_load(struct integrity_context *ctx, const char *disk, const char *name,
		       const struct integrity_device *parent, struct integrity_device **devp)
{
	struct integrity_device *dev = calloc(1, sizeof(*dev));
	char buf[64];
	uint64_t v;
	unsigned maj, min;
	int r;

	*devp = NULL;
	if (!dev)
		return -ENOMEM;
	dev->ctx = ctx;
	if (path_printf(dev->name, sizeof(dev->name), "%s", name) < 0 ||
	    path_printf(dev->disk, sizeof(dev->disk), "%s", disk ? disk : name) < 0 ||
	    path_printf(dev->diskdir, sizeof(dev->diskdir), "%s/block/%s", ctx->root, dev->disk) < 0 ||
	    path_printf(dev->dir, sizeof(dev->dir), "%s%s%s", dev->diskdir, disk ? "/" : "",
			disk ? name : "") < 0) {
		free(dev);
		return -ENAMETOOLONG;
	}

	r = sysfs_read(dev->dir, "dev", buf, sizeof(buf));
	if (r < 0 || sscanf(buf, "%u:%u", &maj, &min) != 2) {
		free(dev);
		return r < 0 ? r : -EINVAL;
	}
	dev->devnum = makedev(maj, min);
	if (disk && sysfs_read_u64(dev->dir, "partition", &v) == 0)
		dev->partno = (unsigned)v;
	if (sysfs_read_u64(dev->dir, "size", &v) == 0)
		dev->size = v * 512;
	if (parent) {
		dev->lbs = parent->lbs;
		memcpy(dev->transport, parent->transport, sizeof(dev->transport));
		dev->state = parent->state;
		dev->state_valid = parent->state_valid;
		memcpy(dev->wwid_name, parent->wwid_name, sizeof(dev->wwid_name));
		dev->wwid_done = parent->wwid_done;
	} else {
		if (sysfs_read_u64(dev->diskdir, "queue/logical_block_size", &v) == 0)
			dev->lbs = (unsigned)v;
		detect_transport(dev);
	}
	*devp = dev;
	return 0;
}

INTEGRITY_EXPORT void integrity_device_free(struct integrity_device *dev)
{
	if (!dev)
		return;
	free(dev->stable);
	free(dev);
}

static bool is_partition_dir(const char *diskdir, const char *name)
{
	char attr[NAME_MAX + 16];

	path_printf(attr, sizeof(attr), "%s/partition", name);
	return exists(diskdir, attr);
}

/* Find the disk that has a partition called name. */
static int find_partition_disk(struct integrity_context *ctx, const char *name, char *disk,
			       size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;

	path_printf(path, sizeof(path), "%s/block", ctx->root);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int r = -ENODEV;
	while ((de = readdir(d))) {
		char diskdir[PATH_MAX];
		if (de->d_name[0] == '.')
			continue;
		path_printf(diskdir, sizeof(diskdir), "%s/%s", path, de->d_name);
		if (is_partition_dir(diskdir, name)) {
			path_printf(disk, len, "%s", de->d_name);
			r = 0;
			break;
		}
	}
	closedir(d);
	return r;
}

static int device_by_name(struct integrity_context *ctx, const char *name,
			  struct integrity_device **devp)
{
	char path[PATH_MAX], disk[NAME_MAX + 1];

	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -ENODEV;
	path_printf(path, sizeof(path), "%s/block/%s", ctx->root, name);
	if (access(path, F_OK) == 0)
		return device_load(ctx, NULL, name, NULL, devp);
	if (find_partition_disk(ctx, name, disk, sizeof(disk)) == 0)
		return device_load(ctx, disk, name, NULL, devp);
	/* A device-mapper name, as in /dev/mapper. */
	if (stack_find_dm_name(ctx->root, name, disk, sizeof(disk)) == 0)
		return device_load(ctx, NULL, disk, NULL, devp);
	return -ENODEV;
}

/* Names that are not kernel names nor paths to a node: /dev/mapper/NAME,
 * /dev/VG/LV and VG/LV (LVM's device-mapper names), /dev/NAME. */
static int device_by_other_name(struct integrity_context *ctx, const char *spec,
				struct integrity_device **devp)
{
	char dm[NAME_MAX + 1];

	if (strncmp(spec, "/dev/mapper/", 12) == 0)
		return device_by_name(ctx, spec + 12, devp);
	if (strncmp(spec, "/dev/", 5) == 0) {
		spec += 5;
		if (!strchr(spec, '/'))
			return device_by_name(ctx, spec, devp);
	}
	if (spec[0] != '/' && stack_lvm_dm_name(spec, dm, sizeof(dm)) == 0 &&
	    stack_find_dm_name(ctx->root, dm, dm, sizeof(dm)) == 0)
		return device_load(ctx, NULL, dm, NULL, devp);
	return -ENODEV;
}

/* Through <root>/dev/block/MAJ:MIN, without listing every device. */
static int device_by_devnum(struct integrity_context *ctx, dev_t devnum,
			    struct integrity_device **devp)
{
	char name[NAME_MAX + 1], disk[NAME_MAX + 1];
	int r = sysfs_devnum_name(ctx->root, devnum, name, sizeof(name), disk, sizeof(disk));

	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	r = device_load(ctx, *disk ? disk : NULL, name, NULL, devp);
	if (r == 0 && (*devp)->devnum != devnum) {
		/* The link and the directory disagree: a tree being changed. */
		integrity_device_free(*devp);
		*devp = NULL;
		r = -ENODEV;
	}
	return r;
}

INTEGRITY_EXPORT int integrity_device_new(struct integrity_context *ctx, const char *spec,
					  struct integrity_device **devp)
{
	unsigned maj, min;
	char tail;

	*devp = NULL;
	if (!spec || !*spec)
		return -EINVAL;
	if (sscanf(spec, "%u:%u%c", &maj, &min, &tail) == 2)
		return device_by_devnum(ctx, makedev(maj, min), devp);
	if (!strchr(spec, '/'))
		return device_by_name(ctx, spec, devp);

	/* A path: a device node or a link to one (/dev/disk/by-*, /dev/mapper). */
	struct stat st;
	if (stat(spec, &st) < 0) {
		int r = -errno;
		if (r != -ENOENT)
			return r;
		r = device_by_other_name(ctx, spec, devp);
		/* Not a path: a name that names nothing. */
		return r == -ENODEV && spec[0] == '/' ? -ENOENT : r;
	}
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	if (ctx->live)
		return device_by_devnum(ctx, st.st_rdev, devp);
	char real[PATH_MAX];
	if (!realpath(spec, real))
		return -errno;
	return device_by_name(ctx, strrchr(real, '/') + 1, devp);
}

INTEGRITY_EXPORT int integrity_device_path(struct integrity_context *ctx, const char *spec, char *path,
					   size_t len)
{
	struct integrity_context *own = NULL;
	struct integrity_device *dev = NULL;
	struct stat st;
	int r;

	if (!spec || !*spec)
		return -EINVAL;
	if (stat(spec, &st) == 0)
		return path_printf(path, len, "%s", spec);
	r = -errno;
	if (r != -ENOENT)
		return r;
	if (!ctx && (r = integrity_context_new(&own, NULL)) < 0)
		return r;
	r = integrity_device_new(ctx ? ctx : own, spec, &dev);
	if (r == 0)
		r = path_printf(path, len, "/dev/%s", dev->name);
	integrity_device_free(dev);
	integrity_context_free(own);
	return r;
}

static int cmp_devices(const void *a, const void *b)
{
	const struct integrity_device *x = *(struct integrity_device *const *)a;
	const struct integrity_device *y = *(struct integrity_device *const *)b;
	int r = strverscmp(x->disk, y->disk);

	if (r)
		return r;
	return (x->partno > y->partno) - (x->partno < y->partno);
}

INTEGRITY_EXPORT void integrity_device_list_free(struct integrity_device **devs, size_t count)
{
	if (!devs)
		return;
	for (size_t i = 0; i < count; i++)
		integrity_device_free(devs[i]);
	free(devs);
}

static void wwid_stable_base(struct integrity_device *dev);

static int list_push(struct integrity_device ***v, size_t *n, size_t *cap,
		     struct integrity_device *dev)
{
	if (GREEDY_REALLOC(*v, *cap, *n + 1) < 0)
		return -ENOMEM;
	(*v)[(*n)++] = dev;
	return 0;
}

INTEGRITY_EXPORT int integrity_device_list(struct integrity_context *ctx,
					   struct integrity_device ***devsp, size_t *countp)
{
	char path[PATH_MAX];
	struct integrity_device **v = NULL, *dev;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int r = 0;

	*devsp = NULL;
	*countp = 0;
	path_printf(path, sizeof(path), "%s/block", ctx->root);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (device_load(ctx, NULL, de->d_name, NULL, &dev) < 0)
			continue;	/* gone meanwhile, or not a device */
		/* Read once for the disk, shared by its partitions; a state that
		 * could not be read is asked again, so that the error is seen. */
		dev->state_valid = integrity_device_kernel_state(dev, &dev->state) == 0;
		wwid_stable_base(dev);
		r = list_push(&v, &n, &cap, dev);
		if (r < 0) {
			integrity_device_free(dev);
			break;
		}
		struct strv parts = { 0 };
		if (sysfs_read_partitions(dev->dir, de->d_name, &parts) < 0)
			continue;	/* gone meanwhile */
		for (size_t i = 0; r == 0 && i < parts.n; i++) {
			struct integrity_device *part;
			if (device_load(ctx, de->d_name, parts.v[i], dev, &part) < 0)
				continue;
			r = list_push(&v, &n, &cap, part);
			if (r < 0)
				integrity_device_free(part);
		}
		strv_clear(&parts);
	}
	closedir(d);
	if (r < 0) {
		integrity_device_list_free(v, n);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_devices);
	*devsp = v;
	*countp = n;
	return 0;
}

INTEGRITY_EXPORT const char *integrity_device_name(const struct integrity_device *dev)
{
	return dev->name;
}

INTEGRITY_EXPORT int integrity_kname_to_name(struct integrity_context *ctx, const char *kname, char *buf,
					     size_t len)
{
	char dir[PATH_MAX], dm[NAME_MAX + 1];
	const char *name = kname;

	if (strncmp(kname, "dm-", 3) == 0 && !strchr(kname, '/')) {
		path_printf(dir, sizeof(dir), "%s/block/%s/dm", ctx->root, kname);
		if (sysfs_read(dir, "name", dm, sizeof(dm)) > 0)
			name = dm;
	}
	if (strlen(name) >= len)
		return -ENAMETOOLONG;
	memcpy(buf, name, strlen(name) + 1);
	return 0;
}

INTEGRITY_EXPORT const char *integrity_device_disk_name(const struct integrity_device *dev)
{
	return dev->disk;
}

INTEGRITY_EXPORT unsigned integrity_device_partno(const struct integrity_device *dev)
{
	return dev->partno;
}

INTEGRITY_EXPORT unsigned integrity_device_major(const struct integrity_device *dev)
{
	return major(dev->devnum);
}

INTEGRITY_EXPORT unsigned integrity_device_minor(const struct integrity_device *dev)
{
	return minor(dev->devnum);
}

INTEGRITY_EXPORT bool integrity_device_is_extended(const struct integrity_device *dev)
{
	return major(dev->devnum) == BLOCK_EXT_MAJOR;
}

INTEGRITY_EXPORT const char *integrity_device_transport(const struct integrity_device *dev)
{
	return dev->transport;
}

INTEGRITY_EXPORT uint64_t integrity_device_size(const struct integrity_device *dev)
{
	return dev->size;
}

INTEGRITY_EXPORT bool integrity_device_is_empty(const struct integrity_device *dev)
{
	if (major(dev->devnum) == 1)
		return true;	/* a RAM disk */
	return major(dev->devnum) == 7 && dev->size == 0 && !dev->partno && !exists(dev->dir, "loop/backing_file");
}

INTEGRITY_EXPORT unsigned integrity_device_logical_block_size(const struct integrity_device *dev)
{
	return dev->lbs;
}

/* An attribute of the integrity directory: 0 with *v, 0 with *v = absent
 * when the kernel does not have it, -errno when it is there but cannot be
 * read or is not a number. */
static int integrity_attr(const char *dir, const char *attr, int64_t absent, int64_t *v)
{
	uint64_t u;
	int r = sysfs_read_u64(dir, attr, &u);

	if (r == -ENOENT) {
		*v = absent;
		return 0;
	}
	if (r < 0)
		return r;
	*v = u > INT_MAX ? INT_MAX : (int64_t)u;
	return 0;
}

static int kernel_state_read(const struct integrity_device *dev, struct integrity_kernel_state *st)
{
	char dir[PATH_MAX];
	int64_t interval, tag_size, rv, wg, capable;
	int r, len;

	if (dev->state_valid) {
		*st = dev->state;
		return 0;
	}
	/* What a failed read leaves: unknown, never "none" or "off". */
	memset(st, 0, sizeof(*st));
	st->read_verify = st->write_generate = st->device_capable = -1;
	path_printf(dir, sizeof(dir), "%s/integrity", dev->diskdir);
	char format[sizeof(st->format)];
	len = sysfs_read(dir, "format", format, sizeof(format));
	if (len < 0 && len != -ENOENT)
		return len;
	if ((r = integrity_attr(dir, "protection_interval_bytes", 0, &interval)) < 0 ||
	    (r = integrity_attr(dir, "tag_size", 0, &tag_size)) < 0 ||
	    (r = integrity_attr(dir, "read_verify", -1, &rv)) < 0 ||
	    (r = integrity_attr(dir, "write_generate", -1, &wg)) < 0 ||
	    (r = integrity_attr(dir, "device_is_integrity_capable", -1, &capable)) < 0)
		return r;
	path_printf(st->format, sizeof(st->format), "%s", len > 0 ? format : "none");
	st->interval = (unsigned)interval;
	st->tag_size = (unsigned)tag_size;
	st->read_verify = (int)rv;
	st->write_generate = (int)wg;
	st->device_capable = (int)capable;
	return 0;
}

INTEGRITY_EXPORT int integrity_device_kernel_state_sized(const struct integrity_device *dev,
							 struct integrity_kernel_state *st, size_t size)
{
	struct integrity_kernel_state full;
	int r = kernel_state_read(dev, &full);
	int c = struct_copy_out(st, size, &full, sizeof(full));

	return r < 0 ? r : c;
}

/* The scsi_disk directory of a SCSI disk: device/scsi_disk/<H:C:T:L>. */
int scsi_disk_dir(const struct integrity_device *dev, char *out, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;

	path_printf(path, sizeof(path), "%s/device/scsi_disk", dev->diskdir);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int r = -ENOENT;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			path_printf(out, len, "%s/%s", path, de->d_name);
			r = 0;
			break;
		}
	closedir(d);
	return r;
}

INTEGRITY_EXPORT int integrity_device_pi_type(const struct integrity_device *dev)
{
	char dir[PATH_MAX];
	uint64_t v;

	if (scsi_disk_dir(dev, dir, sizeof(dir)) == 0) {
		int r = sysfs_read_u64(dir, "protection_type", &v);
		return r < 0 ? r : (int)v;
	}
	if (strcmp(dev->transport, "nvme") == 0) {
		if (!dev->ctx->live)
			return -ENODATA;
		return nvme_pi_type(dev->disk);
	}
	/* Block drivers that have no protection information at all. */
	static const char *const none[] = { "loop", "virtio", "zram", "ram", "nbd", "mmc" };
	for (size_t i = 0; i < ARRAY_SIZE(none); i++)
		if (strcmp(dev->transport, none[i]) == 0)
			return 0;
	return -ENODATA;
}

/* Lower is better: WWN-based by-id names survive a move to another port or
 * host; by-path does not survive a move; by-partuuid only names partitions. */
static int link_rank(const char *link)
{
	static const char *const order[] = {
		"/dev/disk/by-id/wwn-",  "/dev/disk/by-id/nvme-eui.", "/dev/disk/by-id/nvme-",
		"/dev/disk/by-id/scsi-3", "/dev/disk/by-id/dm-uuid-", "/dev/disk/by-id/md-uuid-",
		"/dev/disk/by-id/",      "/dev/disk/by-partuuid/",
		"/dev/disk/by-path/",    "/dev/disk/by-uuid/",
	};
	for (size_t i = 0; i < ARRAY_SIZE(order); i++)
		if (strncmp(link, order[i], strlen(order[i])) == 0)
			return (int)i;
	return INT_MAX;
}

/* The links udev made for the device, from its database entry: the file
 * libudev reads for udev_device_get_devlinks_list_entry(), read directly
 * because a listing of hundreds of devices would otherwise pay for
 * libudev's walk of sysfs on every one. */
static char *stable_from_udev(const struct integrity_device *dev)
{
	char path[64], line[PATH_MAX], best[PATH_MAX] = "";
	int best_rank = INT_MAX;

	if (!dev->ctx->udev)
		return NULL;
	snprintf(path, sizeof(path), "/run/udev/data/b%u:%u", major(dev->devnum), minor(dev->devnum));
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	/* The entry is keyed by number only and can be left from another
	 * partition that had this number: its table entry must match ours. */
	uint64_t number = 0, offset = 0, size = 0;
	bool have_entry = false;
	while (fgets(line, sizeof(line), f)) {
		char link[PATH_MAX];
		if (sscanf(line, "E:ID_PART_ENTRY_NUMBER=%" SCNu64, &number) == 1 ||
		    sscanf(line, "E:ID_PART_ENTRY_OFFSET=%" SCNu64, &offset) == 1 ||
		    sscanf(line, "E:ID_PART_ENTRY_SIZE=%" SCNu64, &size) == 1) {
			have_entry = true;
			continue;
		}
		if (strncmp(line, "S:", 2) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (path_printf(link, sizeof(link), "/dev/%s", line + 2) < 0)
			continue;
		int rank = link_rank(link);
		if (rank < best_rank || (rank == best_rank && rank != INT_MAX && strcmp(link, best) < 0)) {
			best_rank = rank;
			snprintf(best, sizeof(best), "%s", link);
		}
	}
	fclose(f);
	if (dev->partno && have_entry) {
		uint64_t start = 0, sectors = 0;
		sysfs_read_u64(dev->dir, "start", &start);
		sysfs_read_u64(dev->dir, "size", &sectors);
		if (number != dev->partno || offset != start || size != sectors)
			return NULL;	/* stale: fall back to what sysfs says */
	}
	return best_rank == INT_MAX ? NULL : strdup(best);
}

static void wwid_stable_base(struct integrity_device *dev)
{
	char wwid[200];

	if (dev->wwid_done)
		return;
	dev->wwid_done = true;
	dev->wwid_name[0] = '\0';
	if (strcmp(dev->transport, "nvme") == 0 && sysfs_read(dev->diskdir, "wwid", wwid, sizeof(wwid)) > 0)
		path_printf(dev->wwid_name, sizeof(dev->wwid_name), "/dev/disk/by-id/nvme-%s", wwid);
	else if (sysfs_read(dev->diskdir, "device/wwid", wwid, sizeof(wwid)) > 4 &&
		 strncmp(wwid, "naa.", 4) == 0)
		path_printf(dev->wwid_name, sizeof(dev->wwid_name), "/dev/disk/by-id/wwn-0x%s", wwid + 4);
}

/* udev's by-id names from the world-wide identifier in sysfs, for systems
 * without udev's database (60-persistent-storage.rules: nvme-$attr{wwid};
 * wwn-0x<NAA> from SCSI VPD page 0x83). */
static char *stable_from_wwid(struct integrity_device *dev)
{
	char name[PATH_MAX];

	wwid_stable_base(dev);
	if (!dev->wwid_name[0])
		return NULL;
	if (!dev->partno)
		return strdup(dev->wwid_name);
	if (path_printf(name, sizeof(name), "%s-part%u", dev->wwid_name, dev->partno) < 0)
		return NULL;
	return strdup(name);
}

/* md's and device-mapper's by-id names, from their UUIDs (dm: else the
 * name), as 13-dm-disk.rules and 63-md-raid-arrays.rules make them. */
static char *stable_from_stack(const struct integrity_device *dev)
{
	char id[PATH_MAX - 32], name[PATH_MAX];

	/* Only md and dm have them: no look for the others (a listing's
	 * hundreds of partitions). */
	if (strcmp(dev->transport, "dm") != 0 && strcmp(dev->transport, "md") != 0)
		return NULL;
	if (stack_stable_name(dev->diskdir, id, sizeof(id)) < 0)
		return NULL;
	if (dev->partno)
		return path_printf(name, sizeof(name), "/dev/disk/by-id/%s-part%u", id, dev->partno) < 0
			       ? NULL : strdup(name);
	return path_printf(name, sizeof(name), "/dev/disk/by-id/%s", id) < 0 ? NULL : strdup(name);
}

INTEGRITY_EXPORT const char *integrity_device_stable_name(const struct integrity_device *cdev)
{
	struct integrity_device *dev = (struct integrity_device *)cdev;

	if (!dev->stable_done) {
		dev->stable = stable_from_udev(dev);
		if (!dev->stable)
			dev->stable = stable_from_wwid(dev);
		if (!dev->stable)
			dev->stable = stable_from_stack(dev);
		dev->stable_done = true;
	}
	return dev->stable;
}

INTEGRITY_EXPORT int integrity_device_set_policy(const struct integrity_device *dev,
						 int read_verify, int write_generate)
{
	struct integrity_kernel_state st;
	char dir[PATH_MAX];
	int r;

	if (dev->partno)
		return -EINVAL;
	/* bio-based drivers: the flags only act where a request is made. */
	if (exists(dev->diskdir, "md") || exists(dev->diskdir, "dm"))
		return -EMEDIUMTYPE;
	if ((r = integrity_device_kernel_state(dev, &st)) < 0)
		return r;
	if (strcmp(st.format, "none") == 0 || strcmp(st.format, "nop") == 0)
		return -EOPNOTSUPP;
	path_printf(dir, sizeof(dir), "%s/integrity", dev->diskdir);
	if (read_verify >= 0 && (r = sysfs_write(dir, "read_verify", read_verify ? "1" : "0")) < 0)
		return r;
	if (write_generate >= 0 && (r = sysfs_write(dir, "write_generate", write_generate ? "1" : "0")) < 0)
		return r;
	((struct integrity_device *)dev)->state_valid = false;
	return 0;
}

int device_identity(const struct integrity_device *dev, char *buf, size_t len)
{
	static const struct {
		const char *attr;
		const char *prefix;
	} sources[] = {
		{ "wwid", "" },			/* NVMe: eui., nguid., nvme. */
		{ "device/wwid", "" },		/* SCSI: naa., t10., eui. */
		{ "serial", "serial:" },	/* virtio */
		{ "device/serial", "serial:" },	/* NVMe controller, mmc */
		{ "loop/backing_file", "loop:" },
	};
	char value[256], part[32] = "";

	if (dev->partno)
		path_printf(part, sizeof(part), "-part%u", dev->partno);
	for (size_t i = 0; i < ARRAY_SIZE(sources); i++)
		if (sysfs_read(dev->diskdir, sources[i].attr, value, sizeof(value)) > 0)
			return path_printf(buf, len, "%s%s%s", sources[i].prefix, value, part);
	return path_printf(buf, len, "name:%s", dev->name);
}

struct integrity_context *device_ctx(const struct integrity_device *dev)
{
	return dev->ctx;
}

const char *device_dir(const struct integrity_device *dev)
{
	return dev->dir;
}

const char *device_disk_dir(const struct integrity_device *dev)
{
	return dev->diskdir;
}

dev_t device_devnum(const struct integrity_device *dev)
{
	return dev->devnum;
}
