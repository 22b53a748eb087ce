/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names of md and device-mapper devices from sysfs (stackname.c), for
 * device.c and stack.c. */
#ifndef LIBINTEGRITY_STACKNAME_H
#define LIBINTEGRITY_STACKNAME_H

#include <stddef.h>

/* The kernel name (dm-N) of the device-mapper device called dm_name, from
 * <root>/block/dm-N/dm/name; -ENODEV when none is. */
int stack_find_dm_name(const char *root, const char *dm_name, char *out, size_t len);

/* LVM's device-mapper name for "VG/LV": each '-' doubled, '/' as '-'.
 * -EINVAL when vg_lv is not of that form. */
int stack_lvm_dm_name(const char *vg_lv, char *out, size_t len);

/* udev's /dev/disk/by-id name (without the directory) of the md or
 * device-mapper device whose sysfs directory is dir: dm-uuid-UUID, else
 * dm-name-NAME; md-uuid-UUID as mdadm writes md's UUID.  -ENOENT for other
 * devices. */
int stack_stable_name(const char *dir, char *out, size_t len);

#endif
