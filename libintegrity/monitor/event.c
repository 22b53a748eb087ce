/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A kernel event placed on the devices: the device the record names (by
 * its number when the record carries one, else by its name), its disk,
 * the blocks in its own logical blocks and on the disk, the stack above
 * and below, and what the blocks belong to, through the same stack and
 * owner code as a scrub's report.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "internal.h"
#include "device/device.h"
#include "libintegrity/monitor.h"
#include "libintegrity/owners.h"

INTEGRITY_EXPORT void integrity_event_info_free(struct integrity_event_info *info)
{
	if (!info)
		return;
	free((char *)info->stable);
	free((char *)info->disk_stable);
	free(info->above);
	free(info->below);
	integrity_owners_free(info->owners);
	free(info);
}

static int dup_stable(const struct integrity_device *dev, const char **out)
{
	const char *s = integrity_device_stable_name(dev);

	*out = NULL;
	if (s && !(*out = strdup(s)))
		return -ENOMEM;
	return 0;
}

/* The size of the blocks of dev's page cache, which a Buffer I/O error
 * counts.  On the live system the kernel's own (BLKBSZGET on the node,
 * checked to be dev's): a file system mounted on the device has set it to
 * its block size (ext4 with 1 KiB blocks); with nothing holding the device
 * open, the open sets the size the kernel chooses.  That choice, else
 * (set_init_blocksize()): the logical block size, doubled while it divides
 * the device's size, up to a page. */
static uint32_t page_cache_block(const struct integrity_device *dev, uint32_t lbs)
{
	uint64_t size = integrity_device_size(dev);
	long page = sysconf(_SC_PAGESIZE);
	uint32_t bs = lbs;

	if (device_ctx(dev)->live) {
		char node[PATH_MAX];
		struct stat st;
		int now = 0;
		path_printf(node, sizeof(node), "/dev/%s", integrity_device_name(dev));
		_cleanup_close_ int fd = open(node, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISBLK(st.st_mode) && st.st_rdev == device_devnum(dev) &&
		    ioctl(fd, BLKBSZGET, &now) == 0 && now >= (int)lbs && (now & (now - 1)) == 0)
			return (uint32_t)now;
	}
	while (page > 0 && bs < (uint32_t)page && !(size & bs))
		bs <<= 1;
	return bs;
}

/* The blocks the event names, in dev's logical blocks. */
static void place(const struct integrity_kernel_event *ev, uint32_t bs, uint64_t *lba, uint64_t *count)
{
	if (ev->has_sector) {
		uint64_t per = bs >= 512 ? bs / 512 : 1;
		*lba = ev->sector / per;
		uint64_t end = ev->sector + (ev->count ? ev->count : 1);
		*count = (end + per - 1) / per - *lba;
	} else {
		*lba = ev->lba;
		*count = ev->count ? ev->count : 1;
	}
}

INTEGRITY_EXPORT int integrity_event_resolve(struct integrity_context *ctx, const struct integrity_kernel_event *ev,
					     unsigned flags, struct integrity_event_info **infop)
{
	struct integrity_event_info *info;
	struct integrity_device *dev = NULL, *disk = NULL;
	char spec[64];
	int r;

	if (!ctx || !ev || !infop)
		return -EINVAL;
	*infop = NULL;
	if (!(info = calloc(1, sizeof(*info))))
		return -ENOMEM;
	snprintf(info->device, sizeof(info->device), "%s", ev->device);
	/* The record's device number says which device it was even when
	 * names have moved since; else the name it logged. */
	if (ev->has_devt)
		snprintf(spec, sizeof(spec), "%u:%u", ev->major, ev->minor);
	else
		snprintf(spec, sizeof(spec), "%s", ev->device);
	if (!spec[0] || integrity_device_new(ctx, spec, &dev) < 0) {
		info->gone = spec[0] != '\0';
		*infop = info;
		return 0;
	}
	snprintf(info->device, sizeof(info->device), "%s", integrity_device_name(dev));
	snprintf(info->disk, sizeof(info->disk), "%s", integrity_device_disk_name(dev));
	info->partno = integrity_device_partno(dev);
	info->block_size = integrity_device_logical_block_size(dev);
	if (!info->block_size)
		info->block_size = 512;
	if ((r = dup_stable(dev, &info->stable)) < 0)
		goto fail;
	if (strcmp(info->disk, info->device) != 0 && integrity_device_new(ctx, info->disk, &disk) == 0) {
		if ((r = dup_stable(disk, &info->disk_stable)) < 0)
			goto fail;
	}
	if (!ev->has_sector && !ev->has_lba) {
		integrity_device_free(disk);
		integrity_device_free(dev);
		*infop = info;
		return 0;
	}
	place(ev, info->block_size, &info->lba, &info->count);
	/* A Buffer I/O error counts the page cache's blocks. */
	if (ev->has_lba && ev->source && !strcmp(ev->source, "buffer")) {
		uint32_t per = page_cache_block(dev, info->block_size) / info->block_size;
		info->lba = ev->lba * per;
		info->count = per;
	}
	info->disk_lba = info->lba;
	if (info->partno) {
		struct integrity_stack_place *pl = NULL;
		size_t n = 0;
		if (integrity_stack_map_below(dev, info->lba, &pl, &n) == 0)
			for (size_t i = 0; i < n; i++)
				if (!strcmp(pl[i].device, info->disk))
					info->disk_lba = pl[i].lba;
		free(pl);
	}
	/* Above: from the disk, so that the partition is the first step. */
	if (integrity_stack_map_above(disk ? disk : dev, info->disk_lba, &info->above, &info->nabove) < 0) {
		info->above = NULL;
		info->nabove = 0;
	}
	if (!info->partno && integrity_stack_map_below(dev, info->lba, &info->below, &info->nbelow) < 0) {
		info->below = NULL;
		info->nbelow = 0;
	}
	if (!(flags & INTEGRITY_EVENT_NO_OWNERS)) {
		struct integrity_byte_range range = { info->disk_lba * info->block_size, info->count * info->block_size };
		info->owners_err = integrity_owners_resolve(ctx, info->disk, &range, 1, 0, &info->owners);
		if (info->owners_err < 0)
			info->owners = NULL;
	}
	integrity_device_free(disk);
	integrity_device_free(dev);
	*infop = info;
	return 0;
fail:
	integrity_device_free(disk);
	integrity_device_free(dev);
	integrity_event_info_free(info);
	return r;
}
