/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Is a block device in use?  Mounted, swap, held by another block device,
 * or claimed exclusively by some program: what a destructive operation on a
 * disk or partition must refuse.
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device.h"
#include "device_int.h"
#include "inuse.h"
#include "util/strv.h"

void usage_free(struct usage *u)
{
	for (size_t i = 0; i < u->nmounts; i++)
		free(u->mounts[i].where);
	free(u->mounts);
	free(u->swaps);
	memset(u, 0, sizeof(*u));
}

static int usage_add_mount(struct usage *u, dev_t dev, const char *where)
{
	if (GREEDY_REALLOC(u->mounts, u->mounts_cap, u->nmounts + 1) < 0)
		return -ENOMEM;
	struct mount_entry *v = u->mounts;
	v[u->nmounts].dev = dev;
	v[u->nmounts].where = strdup(where);
	if (!v[u->nmounts].where)
		return -ENOMEM;
	u->nmounts++;
	return 0;
}

static int usage_add_swap(struct usage *u, dev_t dev)
{
	if (GREEDY_REALLOC(u->swaps, u->swaps_cap, u->nswaps + 1) < 0)
		return -ENOMEM;
	u->swaps[u->nswaps++] = dev;
	return 0;
}

static int add_mount_entry(const struct mountinfo_entry *e, void *data)
{
	return usage_add_mount(data, e->devnum, e->target);
}

int usage_load(struct usage *u)
{
	_cleanup_fclose_ FILE *sw = fopen("/proc/swaps", "re");
	_cleanup_free_ char *line = NULL;
	size_t len = 0;

	memset(u, 0, sizeof(*u));
	/* A mount table that cannot be read is an error: "not mounted" is
	 * what a destructive operation must never assume. */
	int r = mountinfo_foreach(NULL, add_mount_entry, u);
	while (r == 0 && sw && getline(&line, &len, sw) > 0) {
		char what[PATH_MAX];
		struct stat st;
		if (sscanf(line, "%4095s", what) != 1 || what[0] != '/')
			continue;	/* the heading */
		proc_unescape(what);
		/* A swap file sits on a mounted file system, found above. */
		if (stat(what, &st) == 0 && S_ISBLK(st.st_mode))
			r = usage_add_swap(u, st.st_rdev);
	}
	if (r < 0)
		usage_free(u);
	return r;
}

/* The first entry of <dir>/holders, and for a device-mapper holder its name. */
static bool held(const char *dir, const char *root, char *holder, size_t len)
{
	char dm[PATH_MAX], name[128];
	struct strv holders = { 0 };

	if (sysfs_read_links(dir, "holders", &holders) < 0 || !holders.n) {
		strv_clear(&holders);
		return false;
	}
	if (path_printf(dm, sizeof(dm), "%s/block/%s/dm", root, holders.v[0]) == 0 &&
	    sysfs_read(dm, "name", name, sizeof(name)) > 0)
		snprintf(holder, len, "%s (%s)", holders.v[0], name);
	else
		snprintf(holder, len, "%s", holders.v[0]);
	strv_clear(&holders);
	return true;
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
static int members(const char *name, const char *dir, dev_t devnum, bool whole, struct member **out,
		   size_t *n)
{
	struct member *v = calloc(1, sizeof(*v));
	struct strv parts = { 0 };
	size_t count = 1;

	if (!v)
		return -ENOMEM;
	snprintf(v[0].name, sizeof(v[0].name), "%s", name);
	snprintf(v[0].dir, sizeof(v[0].dir), "%s", dir);
	v[0].devnum = devnum;
	/* A disk that cannot be listed shows no partitions: its own checks
	 * and the exclusive open still apply. */
	if (whole)
		(void)sysfs_read_partitions(dir, name, &parts);
	if (parts.n) {
		struct member *nv = reallocarray(v, parts.n + 1, sizeof(*v));
		if (!nv) {
			strv_clear(&parts);
			free(v);
			return -ENOMEM;
		}
		v = nv;
	}
	for (size_t i = 0; i < parts.n; i++) {
		char pdir[PATH_MAX], devattr[PATH_MAX];
		unsigned maj, min;
		if (path_printf(pdir, sizeof(pdir), "%s/%s", dir, parts.v[i]) < 0 ||
		    path_printf(devattr, sizeof(devattr), "%s/dev", pdir) < 0 ||
		    sysfs_read_devt_at(AT_FDCWD, devattr, &maj, &min) < 0)
			continue;	/* deleted while we looked */
		snprintf(v[count].name, sizeof(v[count].name), "%s", parts.v[i]);
		snprintf(v[count].dir, sizeof(v[count].dir), "%s", pdir);
		v[count].devnum = makedev(maj, min);
		count++;
	}
	strv_clear(&parts);
	*out = v;
	*n = count;
	return 0;
}

/*
 * m[0] is the device, m[1..] its partitions.  USED_SELF when the device
 * itself is mounted, swap, held or claimed; USED_PARTITION when only a
 * partition is; why names which one and what uses it.
 *
 * The kernel lets a disk or its partitions be claimed, never both: a claim on
 * a partition makes the disk's exclusive open fail too.  So a disk whose
 * exclusive open fails while some partition's succeeds is claimed through a
 * partition only; when every partition's fails, the disk itself may be.
 */
enum { USED_NONE, USED_SELF, USED_PARTITION };

static int members_used(const struct member *m, size_t n, const struct usage *u, const char *root,
			bool live, char *why, size_t len)
{
	char what[PATH_MAX + 200];
	const struct member *claimed = NULL;
	bool free_part = false;

	for (size_t i = 0; i < n; i++)
		if (block_device_used(u, m[i].devnum, m[i].dir, root, what, sizeof(what))) {
			snprintf(why, len, "%s is %s", m[i].name, what);
			return i ? USED_PARTITION : USED_SELF;
		}
	if (!live)
		return USED_NONE;
	for (size_t i = 1; i < n; i++) {
		if (!block_device_claimed(m[i].name, m[i].devnum))
			free_part = true;
		else if (!claimed)
			claimed = &m[i];
	}
	if (claimed && free_part) {
		snprintf(why, len, "%s is open exclusively by another program", claimed->name);
		return USED_PARTITION;
	}
	if (block_device_claimed(m[0].name, m[0].devnum)) {
		snprintf(why, len, "%s is open exclusively by another program", m[0].name);
		return USED_SELF;
	}
	return USED_NONE;
}

/* members_used() of a device with a fresh snapshot of the mount and swap tables. */
static int device_used(const char *name, const char *dir, dev_t devnum, bool whole, const char *root,
		       bool live, char *why, size_t len)
{
	struct usage u = { 0 };
	struct member *m;
	size_t n;
	int r;

	if (why && len)
		why[0] = '\0';
	r = members(name, dir, devnum, whole, &m, &n);
	if (r < 0)
		return r;
	/* The mount and swap tables are this system's: meaningless for a saved tree. */
	if (live && (r = usage_load(&u)) < 0) {
		free(m);
		return r;
	}
	r = members_used(m, n, &u, root, live, why, len);
	usage_free(&u);
	free(m);
	return r;
}

int disk_open_write(const char *path, const char *name, dev_t devnum, const char *sysdir, int oflags,
		    bool *shared, char *why, size_t len)
{
	struct stat st;
	int fd, r;

	if (shared)
		*shared = false;
	r = device_used(name, sysdir, devnum, true, SYSFS_LIVE_ROOT, true, why, len);
	if (r < 0)
		return r;
	if (r == USED_SELF || (r == USED_PARTITION && !shared))
		return -EBUSY;
	fd = open(path, O_RDWR | O_EXCL | O_CLOEXEC | oflags);
	if (fd < 0 && errno == EBUSY && r == USED_PARTITION) {
		/* Its partitions' claims keep anyone else from claiming the disk. */
		*shared = true;
		fd = open(path, O_RDWR | O_CLOEXEC | oflags);
	} else if (fd < 0 && errno == EBUSY) {
		/* Claimed between the check and the open. */
		snprintf(why, len, "%s is open exclusively by another program", name);
		return -EBUSY;
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != devnum) {
		close(fd);
		snprintf(why, len, "%s is no longer the device it was", path);
		return -ESTALE;
	}
	return fd;
}

INTEGRITY_EXPORT int integrity_device_in_use(const struct integrity_device *dev, char *why, size_t len)
{
	int r = device_used(dev->name, dev->partno ? dev->dir : dev->diskdir, dev->devnum, !dev->partno,
			    dev->ctx->root, dev->ctx->live, why, len);

	return r < 0 ? r : r != USED_NONE;
}
