/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Device internals shared by device.c and the transport back ends. */
#ifndef LIBINTEGRITY_DEVICE_H
#define LIBINTEGRITY_DEVICE_H

#include <limits.h>
#include <sys/types.h>

#include "internal.h"
#include "sysfs.h"
#include "libintegrity/device.h"
#include "libintegrity/stack.h"

struct udev;

struct integrity_context {
	char *root;		/* sysfs root, no trailing slash */
	bool live;		/* root is /sys: udev and /dev describe the same system */
	struct udev *udev;	/* NULL when not live */
};

/* What other layers may know of a device beyond the public accessors:
 * its context, its sysfs directory and its disk's, its device number.
 * struct integrity_device itself is private to device/ (device_int.h). */
struct integrity_context *device_ctx(const struct integrity_device *dev);
const char *device_dir(const struct integrity_device *dev);
const char *device_disk_dir(const struct integrity_device *dev);
dev_t device_devnum(const struct integrity_device *dev);


/* <disk>/device/scsi_disk/<H:C:T:L>, for SCSI disks. */
int scsi_disk_dir(const struct integrity_device *dev, char *out, size_t len);

/* A stable identity of the device for keying saved state: the world-wide
 * identifier (WWN, EUI-64, NGUID), else the serial, else the loop device's
 * backing file, else the kernel name; partitions add "-part<N>". */
int device_identity(const struct integrity_device *dev, char *buf, size_t len);

/* nvme.c: the protection type of /dev/<disk>'s namespace (DPS bits 2:0). */
int nvme_pi_type(const char *disk);
/* nvme.c: Identify Controller's MDTS as bytes, from the controller's minimum
 * memory page size (0: 4096); 0 when MDTS is 0 (no limit), capped at 2 GiB. */
uint32_t nvme_max_transfer(uint8_t mdts, uint64_t page_size);

#endif
