/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The names of md and device-mapper devices, from sysfs alone: a dm name to
 * its kernel name, LVM's VG/LV to its dm name, and the by-id names udev
 * gives md and dm devices.  Used by device.c (resolving names, stable names)
 * and stack.c; knows nothing of either.
 */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <string.h>

#include "internal.h"
#include "stackname.h"
#include "sysfs.h"

/* md's UUID as udev names it (mdadm's MD_UUID): four groups of eight hex
 * digits joined by ':', from the kernel's 8-4-4-4-12 form. */
static int md_udev_uuid(const char *uuid, char *out, size_t len)
{
	char hex[33];
	size_t n = 0;

	for (const char *p = uuid; *p && n < 32; p++)
		if (*p != '-')
			hex[n++] = *p;
	hex[n] = '\0';
	if (n != 32)
		return -EINVAL;
	return path_printf(out, len, "%.8s:%.8s:%.8s:%.8s", hex, hex + 8, hex + 16, hex + 24);
}

int stack_stable_name(const char *dir, char *out, size_t len)
{
	char sub[PATH_MAX], value[200], u[40];

	if (path_printf(sub, sizeof(sub), "%s/dm", dir) < 0)
		return -ENAMETOOLONG;
	if (sysfs_read(sub, "uuid", value, sizeof(value)) > 0)
		return path_printf(out, len, "dm-uuid-%s", value);
	if (sysfs_read(sub, "name", value, sizeof(value)) > 0)
		return path_printf(out, len, "dm-name-%s", value);
	if (path_printf(sub, sizeof(sub), "%s/md", dir) < 0)
		return -ENAMETOOLONG;
	if (sysfs_read(sub, "uuid", value, sizeof(value)) > 0 && md_udev_uuid(value, u, sizeof(u)) == 0)
		return path_printf(out, len, "md-uuid-%s", u);
	return -ENOENT;
}

int stack_find_dm_name(const char *root, const char *dm_name, char *out, size_t len)
{
	char path[PATH_MAX], dir[PATH_MAX], name[256];
	struct dirent *de;
	int r = -ENODEV;

	if (path_printf(path, sizeof(path), "%s/block", root) < 0)
		return -ENAMETOOLONG;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "dm-", 3) != 0 ||
		    path_printf(dir, sizeof(dir), "%s/%s/dm", path, de->d_name) < 0 ||
		    sysfs_read(dir, "name", name, sizeof(name)) <= 0 || strcmp(name, dm_name) != 0)
			continue;
		r = path_printf(out, len, "%s", de->d_name);
		break;
	}
	closedir(d);
	return r;
}

int stack_lvm_dm_name(const char *vg_lv, char *out, size_t len)
{
	const char *slash = strchr(vg_lv, '/');
	size_t n = 0;

	if (!slash || slash == vg_lv || !slash[1] || strchr(slash + 1, '/'))
		return -EINVAL;
	for (const char *p = vg_lv; *p; p++) {
		const char *add = *p == '/' ? "-" : *p == '-' ? "--" : NULL;
		char one[2] = { *p, 0 };
		if (!add)
			add = one;
		size_t l = strlen(add);
		if (n + l >= len)
			return -ENAMETOOLONG;
		memcpy(out + n, add, l);
		n += l;
	}
	out[n] = '\0';
	return 0;
}
