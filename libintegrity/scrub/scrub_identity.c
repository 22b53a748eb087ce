/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A scrub target's identity, the key of its checkpoint: built from what
 * does not move when device numbers or kernel names are reused.  The world-
 * wide name of a namespace or logical unit (with the NVMe namespace id or
 * SCSI LUN), the device-mapper or md UUID, a loop device's backing file
 * (device and inode) with its offset and size limit; a partition adds its
 * start and size.  Only when nothing better exists is the kernel name used,
 * with the capacity, so that at least another size never matches.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "device.h"
#include "scrub.h"

static bool read_attr(const char *dir, const char *attr, char *buf, size_t len)
{
	return sysfs_read(dir, attr, buf, len) > 0;
}

static int loop_identity(const struct integrity_device *dev, int fd, char *buf, size_t len)
{
	struct loop_info64 li;
	char file[256];

	if (fd >= 0 && ioctl(fd, LOOP_GET_STATUS64, &li) == 0) {
		li.lo_file_name[LO_NAME_SIZE - 1] = '\0';
		return path_printf(buf, len, "loop:%llx:%llu:%llu:%llu:%s", (unsigned long long)li.lo_device,
				   (unsigned long long)li.lo_inode, (unsigned long long)li.lo_offset,
				   (unsigned long long)li.lo_sizelimit, (const char *)li.lo_file_name);
	}
	/* Without the ioctl: the backing file's path, device and inode. */
	uint64_t offset = 0, sizelimit = 0;
	struct stat st;
	if (!read_attr(device_disk_dir(dev), "loop/backing_file", file, sizeof(file)))
		return -ENOENT;
	sysfs_read_u64(device_disk_dir(dev), "loop/offset", &offset);
	sysfs_read_u64(device_disk_dir(dev), "loop/sizelimit", &sizelimit);
	if (stat(file, &st) < 0)
		memset(&st, 0, sizeof(st));
	return path_printf(buf, len, "loop:%llx:%llu:%llu:%llu:%s", (unsigned long long)st.st_dev,
			   (unsigned long long)st.st_ino, (unsigned long long)offset,
			   (unsigned long long)sizelimit, file);
}

/* The LUN from the disk's SCSI address (H:C:T:L). */
static bool scsi_lun(const struct integrity_device *dev, char *lun, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX];

	if (path_printf(path, sizeof(path), "%s/device", device_disk_dir(dev)) < 0 || !realpath(path, real))
		return false;
	const char *base = strrchr(real, '/');
	const char *l = base ? strrchr(base, ':') : NULL;
	return l && path_printf(lun, len, "%s", l + 1) == 0;
}

static int disk_identity(const struct integrity_device *dev, int fd, char *buf, size_t len)
{
	char v[256], extra[64];

	if (read_attr(device_disk_dir(dev), "dm/uuid", v, sizeof(v)))
		return path_printf(buf, len, "dm:%s", v);
	if (read_attr(device_disk_dir(dev), "md/uuid", v, sizeof(v)))
		return path_printf(buf, len, "md:%s", v);
	if (read_attr(device_disk_dir(dev), "loop/backing_file", v, sizeof(v)))
		return loop_identity(dev, fd, buf, len);
	if (strcmp(integrity_device_transport(dev), "nvme") == 0) {
		uint64_t nsid = 0;
		sysfs_read_u64(device_disk_dir(dev), "nsid", &nsid);
		if (read_attr(device_disk_dir(dev), "wwid", v, sizeof(v)))
			return path_printf(buf, len, "%s:ns%llu", v, (unsigned long long)nsid);
		if (read_attr(device_disk_dir(dev), "device/serial", v, sizeof(v)))
			return path_printf(buf, len, "nvme-serial:%s:ns%llu", v, (unsigned long long)nsid);
	}
	if (read_attr(device_disk_dir(dev), "device/wwid", v, sizeof(v))) {
		if (scsi_lun(dev, extra, sizeof(extra)))
			return path_printf(buf, len, "%s:lun%s", v, extra);
		return path_printf(buf, len, "%s", v);
	}
	if (read_attr(device_disk_dir(dev), "wwid", v, sizeof(v)))
		return path_printf(buf, len, "%s", v);
	if (read_attr(device_disk_dir(dev), "serial", v, sizeof(v)))	/* virtio */
		return path_printf(buf, len, "serial:%s", v);
	if (read_attr(device_disk_dir(dev), "device/serial", v, sizeof(v))) {
		if (scsi_lun(dev, extra, sizeof(extra)))
			return path_printf(buf, len, "serial:%s:lun%s", v, extra);
		return path_printf(buf, len, "serial:%s", v);
	}
	/* dm without a UUID, md without sysfs uuid: the name and the size. */
	uint64_t size = 0;
	sysfs_read_u64(device_disk_dir(dev), "size", &size);
	if (read_attr(device_disk_dir(dev), "dm/name", v, sizeof(v)))
		return path_printf(buf, len, "dm-name:%s:%llu", v, (unsigned long long)size);
	return path_printf(buf, len, "name:%s:%llu", integrity_device_disk_name(dev), (unsigned long long)size);
}

int scrub_device_identity(const struct integrity_device *dev, int fd, char *buf, size_t len)
{
	char disk[224];
	uint64_t start = 0, size = 0;
	int r;

	/* The loop ioctl answers for a partition too, about the whole loop
	 * device, so the partition's own place is added below. */
	r = disk_identity(dev, fd, disk, sizeof(disk));
	if (r < 0)
		return r;
	if (!integrity_device_partno(dev))
		return path_printf(buf, len, "%s", disk);
	if (sysfs_read_u64(device_dir(dev), "start", &start) < 0 || sysfs_read_u64(device_dir(dev), "size", &size) < 0)
		return -ENODEV;
	return path_printf(buf, len, "%s-part%u@%llu+%llu", disk, integrity_device_partno(dev), (unsigned long long)start,
			   (unsigned long long)size);
}
