/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stack internals shared by stack.c and device.c (name resolution). */
#ifndef LIBINTEGRITY_STACK_H
#define LIBINTEGRITY_STACK_H

#include <stddef.h>

#include "device.h"

/* The kernel name (dm-N) of the device-mapper device called dm_name, from
 * sysfs's dm/name; -ENODEV when none is. */
int stack_find_dm_name(struct integrity_context *ctx, const char *dm_name, char *out, size_t len);

/* LVM's device-mapper name for "VG/LV": each '-' doubled, '/' as '-'.
 * -EINVAL when vg_lv is not of that form. */
int stack_lvm_dm_name(const char *vg_lv, char *out, size_t len);

#endif
