/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one sysfs reader of the library; not installed. */
#ifndef LIBINTEGRITY_SYSFS_H
#define LIBINTEGRITY_SYSFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* An attribute's value without the trailing newline and blanks: its length
 * or -errno.  The _at forms take a directory descriptor (or AT_FDCWD) and a
 * path relative to it, for loops over one directory. */
int sysfs_read(const char *dir, const char *attr, char *buf, size_t len);
int sysfs_read_at(int dirfd, const char *attr, char *buf, size_t len);
/* A decimal attribute: 0, -errno, or -EINVAL when it is not a number
 * (util/parse.h: digits only, so "-1" is not UINT64_MAX and an empty
 * value is not 0); -ERANGE past 64 bits. */
int sysfs_read_u64(const char *dir, const char *attr, uint64_t *v);
int sysfs_read_u64_at(int dirfd, const char *attr, uint64_t *v);
/* The same with an optional sign (md's "degraded", "layout"). */
int sysfs_read_s64(const char *dir, const char *attr, int64_t *v);
/* A "MAJ:MIN" attribute (dev). */
int sysfs_read_devt_at(int dirfd, const char *attr, unsigned *maj, unsigned *min);

struct strv;
/* The entries of <dir>/<sub> (holders, slaves), sorted as `ls -v` sorts
 * them: 0 or -errno; a missing directory is empty. */
int sysfs_read_links(const char *dir, const char *sub, struct strv *out);
/* A disk's partitions: the subdirectories of its directory named <disk><N>
 * or <disk>p<N> (the kernel's names; nothing else there starts so),
 * sorted. */
int sysfs_read_partitions(const char *diskdir, const char *disk, struct strv *out);
/* An md array's members: the names of its md/dev-<name> directories,
 * sorted. */
int sysfs_read_md_members(const char *mddir, struct strv *out);
/* An md member's role, md/dev-<name>/slot: its number, or -1 for "none"
 * (a spare or a faulty member) and for "journal" (the write journal of a
 * RAID4/5/6 array, which holds none of the array's data): 0, or -EINVAL
 * for anything else. */
int sysfs_parse_md_slot(const char *value, int *slot);

/* Write value to an attribute (read_verify, sync_action, ...): 0 or
 * -errno; a short write is -EIO. */
int sysfs_write(const char *dir, const char *attr, const char *value);

/* The sysfs root of the running system: the only one there is for what
 * works on a live device (partition tables, BLKPG, exclusive opens). */
#define SYSFS_LIVE_ROOT "/sys"

/* One line of /proc/self/mountinfo, its paths unescaped. */
struct mountinfo_entry {
	dev_t devnum;			/* field 3, MAJ:MIN (btrfs: an anonymous one) */
	const char *root;		/* the part of the file system mounted */
	const char *target;		/* where */
	const char *fstype;
	const char *source;		/* after the separator: the device, or "none" */
};
/* fn for every well-formed line of path (NULL: /proc/self/mountinfo) until
 * it returns non-zero, which is returned; -errno when the file cannot be
 * read; 0 at its end. */
int mountinfo_foreach(const char *path, int (*fn)(const struct mountinfo_entry *e, void *data), void *data);
/* In place: the \ooo escapes that mountinfo and /proc/swaps write for a
 * blank, a tab, a newline or a backslash in a path. */
void proc_unescape(char *s);

/* <root>/dev/block/MAJ:MIN, the kernel's link from a device number to the
 * device's directory. */
int sysfs_devnum_path(const char *root, dev_t devnum, char *buf, size_t len);
/* The kernel name behind a device number and, for a partition, its disk's
 * ("" for a whole disk), from that link: 0, -ENODEV or -errno. */
int sysfs_devnum_name(const char *root, dev_t devnum, char *name, size_t len, char *disk,
		      size_t disklen);

#endif
