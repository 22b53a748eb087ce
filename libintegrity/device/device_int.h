/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* struct integrity_device, for the files of device/ only: other layers use
 * the accessors of device.h and libintegrity/device.h. */
#ifndef LIBINTEGRITY_DEVICE_INT_H
#define LIBINTEGRITY_DEVICE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "libintegrity/device.h"

struct integrity_context;

struct integrity_device {
	struct integrity_context *ctx;
	char name[NAME_MAX + 1];
	char disk[NAME_MAX + 1];
	char dir[PATH_MAX];	/* the device's sysfs directory */
	char diskdir[PATH_MAX];	/* its disk's: <root>/block/<disk> */
	dev_t devnum;
	unsigned partno;
	unsigned lbs;
	uint64_t size;
	char transport[16];
	char *stable;
	bool stable_done;
	/* A listing's snapshot, shared by a disk and its partitions. */
	struct integrity_kernel_state state;
	bool state_valid;
	char wwid_name[256];	/* by-id name from the disk's WWID, "" if none */
	bool wwid_done;
};

#endif
