/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "sysfs.h"

int sysfs_read_at(int dirfd, const char *attr, char *buf, size_t len)
{
	_cleanup_close_ int fd = openat(dirfd, attr, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	if (n < 0)
		return -errno;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return (int)n;
}

int sysfs_read(const char *dir, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];

	if (path_printf(path, sizeof(path), "%s/%s", dir, attr) < 0)
		return -ENAMETOOLONG;
	return sysfs_read_at(AT_FDCWD, path, buf, len);
}

int sysfs_read_u64_at(int dirfd, const char *attr, uint64_t *v)
{
	char buf[32];
	int r = sysfs_read_at(dirfd, attr, buf, sizeof(buf));

	return r < 0 ? r : parse_u64(buf, v);
}

int sysfs_read_u64(const char *dir, const char *attr, uint64_t *v)
{
	char buf[32];
	int r = sysfs_read(dir, attr, buf, sizeof(buf));

	return r < 0 ? r : parse_u64(buf, v);
}

int sysfs_read_s64(const char *dir, const char *attr, int64_t *v)
{
	char buf[32];
	int r = sysfs_read(dir, attr, buf, sizeof(buf));

	return r < 0 ? r : parse_s64(buf, v);
}

int sysfs_read_devt_at(int dirfd, const char *attr, unsigned *maj, unsigned *min)
{
	char buf[32];
	int r = sysfs_read_at(dirfd, attr, buf, sizeof(buf));

	if (r < 0)
		return r;
	return sscanf(buf, "%u:%u", maj, min) == 2 ? 0 : -EINVAL;
}

int sysfs_devnum_path(const char *root, dev_t devnum, char *buf, size_t len)
{
	return path_printf(buf, len, "%s/dev/block/%u:%u", root, major(devnum), minor(devnum));
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

int sysfs_devnum_name(const char *root, dev_t devnum, char *name, size_t len, char *disk,
		      size_t disklen)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	int r;

	if ((r = sysfs_devnum_path(root, devnum, path, sizeof(path))) < 0)
		return r;
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	target[n] = '\0';
	if ((r = path_printf(name, len, "%s", basename_of(target))) < 0)
		return r;
	if (!disk)
		return 0;
	*disk = '\0';
	/* A partition's directory sits in its disk's and has a "partition". */
	uint64_t partno;
	if (sysfs_read_u64(path, "partition", &partno) < 0)
		return 0;
	char *slash = strrchr(target, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	return path_printf(disk, disklen, "%s", basename_of(target));
}
