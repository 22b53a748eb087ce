/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Who uses a block device: shared by format, part and integrity_device_in_use(). */
#ifndef LIBINTEGRITY_INUSE_H
#define LIBINTEGRITY_INUSE_H

#include <stdbool.h>
#include <sys/types.h>

struct mount_entry {
	dev_t dev;
	char *where;
};

/* The mount and swap tables: one snapshot per check or plan. */
struct usage {
	struct mount_entry *mounts;
	size_t nmounts, mounts_cap;
	dev_t *swaps;
	size_t nswaps, swaps_cap;
};

int usage_load(struct usage *u);
void usage_free(struct usage *u);

/* 1 and what uses it ("mounted on /srv", "in use as swap", "held by dm-0
 * (vg-data)") when the device with this number and sysfs directory is
 * mounted, swap or held by another block device; root is the sysfs root. */
int block_device_used(const struct usage *u, dev_t devnum, const char *sysdir, const char *root,
		      char *why, size_t len);

/* True when /dev/NAME (with this number) cannot be opened exclusively: a
 * file system, device mapper, md, swap or a program has claimed it, maybe
 * in another mount namespace where mountinfo does not show it. */
bool block_device_claimed(const char *name, dev_t devnum);

/*
 * The one check before a whole disk is written (partition tables, format):
 * -EBUSY, with why naming what uses it ("sdb is mounted on /srv", "sdb is
 * held by md0", "sdb2 is in use as swap", "sdb is open exclusively by
 * another program"), when the disk or one of its partitions is mounted,
 * swap, held by another block device or claimed by a program.  Else the
 * descriptor of path (the disk /dev/NAME with number devnum and sysfs
 * directory sysdir), O_RDWR | O_EXCL | oflags, to write through: while it is
 * open nothing can mount or claim the disk or its partitions.
 *
 * With shared non-NULL, partitions in use are not refused: the disk is then
 * opened without O_EXCL (the kernel counts a partition's claim against its
 * disk) and *shared is set.  Each partition's claim still keeps everyone
 * else from claiming the whole disk; the caller must leave those partitions
 * and the table's own sectors over them alone.
 */
int disk_open_write(const char *path, const char *name, dev_t devnum, const char *sysdir, int oflags,
		    bool *shared, char *why, size_t len);

#endif
