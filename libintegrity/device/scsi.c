/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SCSI disks: protection fields through libsgutils2, and the sysfs of the
 * host adapter and the disk. */
#include "config.h"

#include <fcntl.h>
#include <scsi/sg_cmds_basic.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "device_int.h"

/* The host number from the disk's place in the device tree (.../hostN/...). */
static int scsi_host_number(const struct integrity_device *dev)
{
	char path[PATH_MAX], real[PATH_MAX];

	if (path_printf(path, sizeof(path), "%s/device", dev->diskdir) < 0 || !realpath(path, real))
		return -1;
	for (char *p = strstr(real, "/host"); p; p = strstr(p + 1, "/host")) {
		int n;
		char tail;
		if (sscanf(p, "/host%d%c", &n, &tail) == 2 && tail == '/')
			return n;
	}
	return -1;
}

static void read_sysfs_side(const struct integrity_device *dev, struct integrity_scsi_info *info)
{
	char dir[PATH_MAX], buf[32];
	uint64_t v;

	if (scsi_disk_dir(dev, dir, sizeof(dir)) == 0) {
		info->have_disk = true;
		info->protection_type = sysfs_read_u64(dir, "protection_type", &v) == 0 ? (int)v : -1;
		info->app_tag_own = sysfs_read_u64(dir, "app_tag_own", &v) == 0 ? (int)v : -1;
		if (sysfs_read(dir, "protection_mode", buf, sizeof(buf)) > 0)
			path_printf(info->protection_mode, sizeof(info->protection_mode), "%s", buf);
	}
	info->host_no = scsi_host_number(dev);
	if (info->host_no >= 0 &&
	    path_printf(dir, sizeof(dir), "%s/class/scsi_host/host%d", dev->ctx->root, info->host_no) == 0 &&
	    sysfs_read_u64(dir, "prot_capabilities", &v) == 0) {
		info->have_host = true;
		info->prot_capabilities = (unsigned)v;
		if (sysfs_read_u64(dir, "prot_guard_type", &v) == 0)
			info->prot_guard_type = (unsigned)v;
	}
}

static int scsi_info_read(const struct integrity_device *dev, struct integrity_scsi_info *info)
{
	char path[PATH_MAX], dir[PATH_MAX];
	uint8_t buf[256];
	_cleanup_close_ int fd = -1;

	memset(info, 0, sizeof(*info));
	info->host_no = info->protection_type = info->app_tag_own = -1;
	if (scsi_disk_dir(dev, dir, sizeof(dir)) < 0)
		return -ENODEV;
	read_sysfs_side(dev, info);
	if (!dev->ctx->live)
		return 0;
	if (path_printf(path, sizeof(path), "/dev/%s", dev->disk) < 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;

	memset(buf, 0, sizeof(buf));
	if (sg_ll_readcap_16(fd, false, 0, buf, 32, false, 0) == 0) {
		info->have_readcap = true;
		info->last_lba = get_be64(buf);
		info->block_length = get_be32(buf + 8);
		info->prot_en = buf[12] & 1;
		info->p_type = (buf[12] >> 1) & 7;
		info->p_i_exponent = buf[13] >> 4;
	}
	memset(buf, 0, sizeof(buf));
	if (sg_ll_inquiry(fd, false, false, 0, buf, 96, false, 0) == 0) {
		info->have_inquiry = true;
		info->protect = buf[5] & 1;
		copy_device_string(info->vendor, buf + 8, 8);
		copy_device_string(info->product, buf + 16, 16);
		copy_device_string(info->revision, buf + 32, 4);
	}
	memset(buf, 0, sizeof(buf));
	if (sg_ll_inquiry(fd, false, true, 0x86, buf, 64, false, 0) == 0 && buf[1] == 0x86) {
		info->have_vpd86 = true;
		info->spt = (buf[4] >> 3) & 7;
		info->grd_chk = (buf[4] >> 2) & 1;
		info->app_chk = (buf[4] >> 1) & 1;
		info->ref_chk = buf[4] & 1;
	}
	memset(buf, 0, sizeof(buf));
	if (sg_ll_mode_sense10(fd, false, true, 0, 0x0A, 0, buf, sizeof(buf), false, 0) == 0) {
		unsigned bdlen = get_be16(buf + 6);
		const uint8_t *page = buf + 8 + bdlen;
		if (8 + bdlen + 8 <= sizeof(buf) && (page[0] & 0x3F) == 0x0A) {
			info->have_control = true;
			info->dpicz = (page[2] >> 3) & 1;
			info->ato = (page[5] >> 7) & 1;
			info->atmpe = (page[5] >> 5) & 1;
			info->rwwp = (page[5] >> 4) & 1;
		}
	}
	return 0;
}

INTEGRITY_EXPORT int integrity_device_scsi_info_sized(const struct integrity_device *dev,
						      struct integrity_scsi_info *info, size_t size)
{
	struct integrity_scsi_info full;
	int r;

	memset(&full, 0, sizeof(full));
	r = scsi_info_read(dev, &full);
	return r < 0 ? r : struct_copy_out(info, size, &full, sizeof(full));
}

INTEGRITY_EXPORT const char *integrity_scsi_spt_name(unsigned spt)
{
	static const char *const names[] = {
		"Type 1", "Type 1 and Type 2", "Type 2", "Type 1 and Type 3",
		"Type 3", "Type 2 and Type 3", NULL, "Type 1, Type 2 and Type 3",
	};
	return spt < ARRAY_SIZE(names) ? names[spt] : NULL;
}

INTEGRITY_EXPORT const char *integrity_scsi_prot_capabilities_name(unsigned mask, char *buf, size_t len)
{
	static const char *const bits[] = { "DIF1", "DIF2", "DIF3", "DIX0", "DIX1", "DIX2", "DIX3" };
	size_t o = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(bits); i++)
		if (mask & (1u << i)) {
			int n = snprintf(buf + o, len - o, "%s%s", o ? "," : "", bits[i]);
			if (n < 0 || (size_t)n >= len - o)
				break;
			o += (size_t)n;
		}
	if (!o)
		snprintf(buf, len, "none");
	return buf;
}
