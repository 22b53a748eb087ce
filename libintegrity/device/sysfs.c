/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "sysfs.h"
#include "util/strv.h"

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

static int cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir whose names `keep` accepts, sorted. */
static int read_entries(const char *dir, bool (*keep)(const char *name, const void *data), const void *data,
			struct strv *out)
{
	struct dirent *de;
	int r = 0;

	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return -errno;
	while (r == 0 && (errno = 0, de = readdir(d)))
		if (de->d_name[0] != '.' && keep(de->d_name, data))
			r = strv_push(out, de->d_name);
	if (r == 0 && errno)
		r = -errno;
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_names);
	return r;
}

static bool any_entry(const char *name, const void *data)
{
	(void)name;
	(void)data;
	return true;
}

int sysfs_read_links(const char *dir, const char *sub, struct strv *out)
{
	char path[PATH_MAX];

	if (path_printf(path, sizeof(path), "%s/%s", dir, sub) < 0)
		return -ENAMETOOLONG;
	int r = read_entries(path, any_entry, NULL, out);
	return r == -ENOENT ? 0 : r;
}

static bool is_partition_of(const char *name, const void *disk)
{
	size_t len = strlen(disk);
	const char *tail = name + len;

	if (strncmp(name, disk, len) != 0)
		return false;
	if (*tail == 'p')
		tail++;
	return *tail && strspn(tail, "0123456789") == strlen(tail);
}

int sysfs_read_partitions(const char *diskdir, const char *disk, struct strv *out)
{
	return read_entries(diskdir, is_partition_of, disk, out);
}

static bool is_md_member(const char *name, const void *data)
{
	(void)data;
	return strncmp(name, "dev-", 4) == 0 && name[4];
}

int sysfs_read_md_members(const char *mddir, struct strv *out)
{
	int r = read_entries(mddir, is_md_member, NULL, out);

	for (size_t i = 0; r == 0 && i < out->n; i++)
		memmove(out->v[i], out->v[i] + 4, strlen(out->v[i] + 4) + 1);
	return r;
}

int sysfs_parse_md_slot(const char *value, int *slot)
{
	uint64_t v;

	if (strcmp(value, "none") == 0 || strcmp(value, "journal") == 0) {
		*slot = -1;
		return 0;
	}
	if (parse_u64(value, &v) < 0 || v > INT_MAX)
		return -EINVAL;
	*slot = (int)v;
	return 0;
}

int sysfs_write(const char *dir, const char *attr, const char *value)
{
	char path[PATH_MAX];
	size_t len = strlen(value);

	if (path_printf(path, sizeof(path), "%s/%s", dir, attr) < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, value, len);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

void proc_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw": six
 * fields, optional ones up to "-", then type, source and options. */
static int parse_mountinfo(char *line, struct mountinfo_entry *e)
{
	char *f[6], *save = NULL, *w;
	unsigned maj, min;
	char tail;
	size_t n = 0;

	for (w = strtok_r(line, " \n", &save); w && n < ARRAY_SIZE(f); w = strtok_r(NULL, " \n", &save))
		f[n++] = w;
	if (n < ARRAY_SIZE(f) || sscanf(f[2], "%u:%u%c", &maj, &min, &tail) != 2)
		return -EINVAL;
	while (w && strcmp(w, "-") != 0)
		w = strtok_r(NULL, " \n", &save);
	char *type = w ? strtok_r(NULL, " \n", &save) : NULL;
	char *source = type ? strtok_r(NULL, " \n", &save) : NULL;
	if (!source)
		return -EINVAL;
	proc_unescape(f[3]);
	proc_unescape(f[4]);
	proc_unescape(source);
	*e = (struct mountinfo_entry){
		.devnum = makedev(maj, min), .root = f[3], .target = f[4], .fstype = type, .source = source,
	};
	return 0;
}

int mountinfo_foreach(const char *path, int (*fn)(const struct mountinfo_entry *e, void *data), void *data)
{
	_cleanup_fclose_ FILE *f = fopen(path ? path : "/proc/self/mountinfo", "re");
	_cleanup_free_ char *line = NULL;
	size_t len = 0;
	int r = 0;

	if (!f)
		return -errno;
	while (r == 0 && getline(&line, &len, f) > 0) {
		struct mountinfo_entry e;
		if (parse_mountinfo(line, &e) == 0)
			r = fn(&e, data);
	}
	if (r == 0 && ferror(f))
		r = -EIO;
	return r;
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
