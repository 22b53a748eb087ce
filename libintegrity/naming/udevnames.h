/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* udevnames.c: the names udev gives a block device, computed; not installed. */
#ifndef LIBINTEGRITY_UDEVNAMES_H
#define LIBINTEGRITY_UDEVNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "util/strv.h"

/* What the device itself says, for the names udev derives from probing. */
struct probe_truth {
	bool probed;		/* libblkid could read the device */
	bool is_gpt;
	char *part_uuid;	/* PART_ENTRY_UUID, raw */
	char *part_name;	/* PART_ENTRY_NAME, raw (GPT) */
	char *fs_uuid;		/* UUID, raw */
	char *fs_label;		/* LABEL, raw */
	char *fs_usage;		/* USAGE */
};

void probe_truth_clear(struct probe_truth *t);

/* What udev_names_compute() fills. */
struct udev_names {
	struct strv *links, *wwns, *serials;
};

/*
 * udevnames.c: the /dev/disk/by-* links systemd-udevd 252's
 * 60-persistent-storage.rules give a device, computed from sysfs (by-id,
 * by-path, by-diskseq) and from libblkid (by-partuuid, by-partlabel,
 * by-uuid, by-label) with the same probe udev's blkid builtin makes.
 * Links go to out->links, identity values (WWN, serials) to out->wwns and
 * out->serials.
 * truth may be NULL when probing is not possible (a saved sysfs tree).
 */
int udev_names_compute(const struct integrity_device *dev, uint64_t diskseq,
		       const struct probe_truth *truth, struct udev_names *out);

/* Whether 60-persistent-storage.rules names the device at all (its kernel
 * name patterns, no whole_disk attribute). */
bool udev_names_apply(const struct integrity_device *dev);
/* by-partuuid, by-partlabel, by-uuid, by-label from a probe. */
int udev_content_links(const struct probe_truth *truth, struct strv *links);

/* /dev/disk/<dir>/<value> as udev would name the link of a value. */
int udev_value_link(const char *dir, const char *value, char *out, size_t len);

/* The same probe as udev's blkid builtin, on /dev/<name>. */
int udev_blkid_probe(const struct integrity_device *dev, struct probe_truth *truth);
/* The entries of a disk's partition table that have a UUID, read alone (no
 * file system probe): the ID_PART_ENTRY_UUID udev's blkid builtin reads
 * for each partition, at a fraction of the cost of udev_blkid_probe() on
 * every partition.  disk is the kernel name of a whole disk; *entries is
 * NULL and *n 0 when it has no table. */
struct udev_part_entry {
	unsigned partno;
	uint64_t start, size;		/* 512-byte sectors, as sysfs */
	char uuid[64];
};
int udev_partition_table(const char *disk, struct udev_part_entry **entries, size_t *n);

/* udev's own string handling (udev-util.c, udev-event.c). */
size_t udev_replace_chars(char *str, const char *allow);
size_t udev_replace_whitespace(const char *str, char *to, size_t len);
int udev_utf8_char_len(const char *s);
#endif
