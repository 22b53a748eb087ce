/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Is a block device in use?  Mounted, swap, held by another block device,
 * or claimed exclusively by some program: what a destructive operation on a
 * disk or partition must refuse.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "device.h"
#include "inuse.h"

void usage_free(struct usage *u)
{
	for (size_t i = 0; i < u->nmounts; i++)
		free(u->mounts[i].where);
	free(u->mounts);
	free(u->swaps);
	memset(u, 0, sizeof(*u));
}

/* mountinfo and /proc/swaps escape blanks as \040. */
static void unescape_octal(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

static int usage_add_mount(struct usage *u, dev_t dev, const char *where)
{
	struct mount_entry *v = realloc(u->mounts, (u->nmounts + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	u->mounts = v;
	v[u->nmounts].dev = dev;
	v[u->nmounts].where = strdup(where);
	if (!v[u->nmounts].where)
		return -ENOMEM;
	u->nmounts++;
	return 0;
}

static int usage_add_swap(struct usage *u, dev_t dev)
{
	dev_t *v = realloc(u->swaps, (u->nswaps + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	u->swaps = v;
	v[u->nswaps++] = dev;
	return 0;
}

int usage_load(struct usage *u)
{
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	FILE *sw = fopen("/proc/swaps", "re");
	char *line = NULL;
	size_t len = 0;
	int r = 0;

	memset(u, 0, sizeof(*u));
	/* "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": field 3 is MAJ:MIN. */
	while (r == 0 && mi && getline(&line, &len, mi) > 0) {
		unsigned maj, min;
		char where[PATH_MAX];
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, where) != 3)
			continue;
		unescape_octal(where);
		r = usage_add_mount(u, makedev(maj, min), where);
	}
	while (r == 0 && sw && getline(&line, &len, sw) > 0) {
		char what[PATH_MAX];
		struct stat st;
		if (sscanf(line, "%4095s", what) != 1 || what[0] != '/')
			continue;	/* the heading */
		unescape_octal(what);
		/* A swap file sits on a mounted file system, found above. */
		if (stat(what, &st) == 0 && S_ISBLK(st.st_mode))
			r = usage_add_swap(u, st.st_rdev);
	}
	free(line);
	if (mi)
		fclose(mi);
	if (sw)
		fclose(sw);
	if (r < 0)
		usage_free(u);
	return r;
}

/* The first entry of <dir>/holders, and for a device-mapper holder its name. */
static bool held(const char *dir, const char *root, char *holder, size_t len)
{
	char path[PATH_MAX], dm[PATH_MAX], name[128];
	struct dirent *de;
	bool found = false;

	if (path_printf(path, sizeof(path), "%s/holders", dir) < 0)
		return false;
	DIR *d = opendir(path);
	if (!d)
		return false;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			found = true;
			if (path_printf(dm, sizeof(dm), "%s/block/%s/dm", root, de->d_name) == 0 &&
			    sysfs_read(dm, "name", name, sizeof(name)) > 0)
				snprintf(holder, len, "%s (%s)", de->d_name, name);
			else
				snprintf(holder, len, "%s", de->d_name);
			break;
		}
	closedir(d);
	return found;
}

bool block_device_claimed(const char *name, dev_t devnum)
{
	char path[PATH_MAX];
	struct stat st;

	if (path_printf(path, sizeof(path), "/dev/%s", name) < 0 || stat(path, &st) < 0 ||
	    !S_ISBLK(st.st_mode) || st.st_rdev != devnum)
		return false;
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EBUSY;
}

int block_device_used(const struct usage *u, dev_t devnum, const char *sysdir, const char *root,
		      char *why, size_t len)
{
	char holder[NAME_MAX + 160];

	for (size_t j = 0; j < u->nmounts; j++)
		if (u->mounts[j].dev == devnum) {
			snprintf(why, len, "mounted on %s", u->mounts[j].where);
			return 1;
		}
	for (size_t j = 0; j < u->nswaps; j++)
		if (u->swaps[j] == devnum) {
			snprintf(why, len, "in use as swap");
			return 1;
		}
	if (held(sysdir, root, holder, sizeof(holder))) {
		snprintf(why, len, "held by %s", holder);
		return 1;
	}
	return 0;
}

struct member {
	char name[NAME_MAX + 1];
	char dir[PATH_MAX];
	dev_t devnum;
};

/* The device itself and, for a whole disk, its partitions. */
static int members(const struct integrity_device *dev, struct member **out, size_t *n)
{
	struct member *v = calloc(1, sizeof(*v));
	struct dirent *de;
	size_t count = 1;

	if (!v)
		return -ENOMEM;
	snprintf(v[0].name, sizeof(v[0].name), "%s", dev->name);
	snprintf(v[0].dir, sizeof(v[0].dir), "%s", dev->dir);
	v[0].devnum = dev->devnum;
	DIR *d = dev->partno ? NULL : opendir(dev->diskdir);
	while (d && (de = readdir(d))) {
		char dir[PATH_MAX], buf[32];
		unsigned maj, min;
		if (de->d_name[0] == '.' ||
		    path_printf(dir, sizeof(dir), "%s/%s", dev->diskdir, de->d_name) < 0 ||
		    sysfs_read(dir, "partition", buf, sizeof(buf)) <= 0 ||
		    sysfs_read(dir, "dev", buf, sizeof(buf)) <= 0 ||
		    sscanf(buf, "%u:%u", &maj, &min) != 2)
			continue;
		struct member *nv = realloc(v, (count + 1) * sizeof(*v));
		if (!nv) {
			closedir(d);
			free(v);
			return -ENOMEM;
		}
		v = nv;
		snprintf(v[count].name, sizeof(v[count].name), "%s", de->d_name);
		snprintf(v[count].dir, sizeof(v[count].dir), "%s", dir);
		v[count].devnum = makedev(maj, min);
		count++;
	}
	if (d)
		closedir(d);
	*out = v;
	*n = count;
	return 0;
}

INTEGRITY_EXPORT int integrity_device_in_use(const struct integrity_device *dev, char *why, size_t len)
{
	struct usage u = { 0 };
	struct member *m;
	size_t n;
	int r;

	if (why && len)
		why[0] = '\0';
	r = members(dev, &m, &n);
	if (r < 0)
		return r;
	/* The mount and swap tables are this system's: meaningless for a saved tree. */
	if (dev->ctx->live && (r = usage_load(&u)) < 0) {
		free(m);
		return r;
	}
	r = 0;
	for (size_t i = 0; i < n && !r; i++) {
		char what[PATH_MAX + 200];
		if (block_device_used(&u, m[i].devnum, m[i].dir, dev->ctx->root, what, sizeof(what))) {
			snprintf(why, len, "%s is %s", m[i].name, what);
			r = 1;
		}
	}
	/* Last: a claim on a partition also makes the disk's exclusive open fail. */
	for (size_t i = n; dev->ctx->live && !r && i-- > 0;)
		if (block_device_claimed(m[i].name, m[i].devnum)) {
			snprintf(why, len, "%s is open exclusively by another program", m[i].name);
			r = 1;
		}
	usage_free(&u);
	free(m);
	return r;
}
