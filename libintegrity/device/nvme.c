/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* NVMe namespaces through libnvme. */
#include "config.h"

#include <endian.h>
#include <fcntl.h>
#include <libnvme.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "device_int.h"

static int open_namespace(const char *disk)
{
	char path[PATH_MAX];

	if (path_printf(path, sizeof(path), "/dev/%s", disk) < 0)
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* libnvme returns -1 with errno, or a positive NVMe status. */
static int nvme_result(int r)
{
	if (r < 0)
		return -errno;
	return r > 0 ? -EIO : 0;
}

int nvme_pi_type(const char *disk)
{
	struct nvme_id_ns ns;
	__u32 nsid;
	_cleanup_close_ int fd = open_namespace(disk);

	if (fd < 0)
		return fd;
	if (nvme_get_nsid(fd, &nsid) < 0)
		return -errno;
	int r = nvme_result(nvme_identify_ns(fd, nsid, &ns));
	return r < 0 ? r : ns.dps & NVME_NS_DPS_PI_MASK;
}

uint32_t nvme_max_transfer(uint8_t mdts, uint64_t page_size)
{
	if (!mdts)
		return 0;	/* no limit */
	if (!page_size)
		page_size = 4096;
	/* The largest transfer we ever ask for; a larger limit is no limit to us.
	 * Both come from the device: no shift past 64 bits, no wrap at 32. */
	const uint64_t cap = 1ULL << 31;
	if (mdts >= 32 || page_size > cap >> mdts)
		return (uint32_t)cap;
	return (uint32_t)(page_size << mdts);
}

/* CAP.MPSMIN as bytes, where the controller answers Property Get (NVMe over
 * Fabrics; a PCIe controller keeps CAP in its registers, out of reach), else
 * 0. */
static uint64_t min_page_size(int fd, const struct integrity_device *dev)
{
	char transport[32];
	__u64 cap = 0;

	if (sysfs_read(dev->diskdir, "device/transport", transport, sizeof(transport)) <= 0 ||
	    strcmp(transport, "pcie") == 0)
		return 0;
	struct nvme_get_property_args args = {
		.value = &cap,
		.args_size = sizeof(args),
		.fd = fd,
		.timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
		.offset = NVME_REG_CAP,
	};
	if (nvme_get_property(&args) != 0)
		return 0;
	return 4096ULL << NVME_CAP_MPSMIN(cap);
}

static int nvme_info_read(const struct integrity_device *dev, struct integrity_nvme_info *info)
{
	struct nvme_id_ns ns;
	struct nvme_id_ctrl ctrl;
	__u32 nsid;
	int r;

	memset(info, 0, sizeof(*info));
	if (strcmp(dev->transport, "nvme") != 0)
		return -ENODEV;
	if (!dev->ctx->live)
		return -ENODATA;
	_cleanup_close_ int fd = open_namespace(dev->disk);
	if (fd < 0)
		return fd;
	if (nvme_get_nsid(fd, &nsid) < 0)
		return -errno;
	r = nvme_result(nvme_identify_ns(fd, nsid, &ns));
	if (r < 0)
		return r;
	info->nsid = nsid;
	info->nsze = le64toh(ns.nsze);
	info->ncap = le64toh(ns.ncap);
	info->nuse = le64toh(ns.nuse);
	info->nlbaf = (uint8_t)(ns.nlbaf + 1);
	info->flbas = ns.flbas;
	info->mc = ns.mc;
	info->dpc = ns.dpc;
	info->dps = ns.dps;
	/* FLBAS bits 3:0, and 6:5 as the upper bits past 16 formats. */
	info->format_index = (ns.flbas & 0xF) | (info->nlbaf > 16 ? ((ns.flbas >> 5) & 3) << 4 : 0);
	info->extended_lba = ns.flbas & 0x10;
	for (unsigned i = 0; i < info->nlbaf && i < 64; i++) {
		info->lbaf[i].data_size = ns.lbaf[i].ds < 32 ? 1u << ns.lbaf[i].ds : 0;
		info->lbaf[i].metadata_size = le16toh(ns.lbaf[i].ms);
		info->lbaf[i].relative_performance = ns.lbaf[i].rp & 3;
		info->lbaf[i].guard_bits = 16;
	}

	if (nvme_result(nvme_identify_ctrl(fd, &ctrl)) == 0) {
		copy_device_string(info->model, ctrl.mn, sizeof(ctrl.mn));
		copy_device_string(info->serial, ctrl.sn, sizeof(ctrl.sn));
		copy_device_string(info->firmware, ctrl.fr, sizeof(ctrl.fr));
		info->ctratt = le32toh(ctrl.ctratt);
		/* MDTS is a power of two of the minimum memory page size. */
		info->max_transfer = nvme_max_transfer(ctrl.mdts, ctrl.mdts ? min_page_size(fd, dev) : 0);
	}
	if (info->ctratt & NVME_CTRL_CTRATT_ELBAS) {
		struct nvme_nvm_id_ns nvm;
		if (nvme_result(nvme_identify_ns_csi(fd, nsid, 0, NVME_CSI_NVM, &nvm)) == 0) {
			info->have_elbaf = true;
			for (unsigned i = 0; i < info->nlbaf && i < 64; i++) {
				uint32_t e = le32toh(nvm.elbaf[i]);
				static const uint8_t pif_bits[] = { 16, 32, 64, 0 };
				info->lbaf[i].storage_tag_bits = e & 0x7F;
				info->lbaf[i].guard_bits = pif_bits[(e >> 7) & 3];
			}
		}
	}
	return 0;
}

INTEGRITY_EXPORT int integrity_device_nvme_info_sized(const struct integrity_device *dev,
						      struct integrity_nvme_info *info, size_t size)
{
	struct integrity_nvme_info full;
	int r;

	memset(&full, 0, sizeof(full));
	r = nvme_info_read(dev, &full);
	return r < 0 ? r : struct_copy_out(info, size, &full, sizeof(full));
}
