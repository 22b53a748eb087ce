/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small sysfs trees laid out as the kernel's, for the unit tests: a
 * temporary root with block/, class/block/ and dev/block/, and devices
 * under devices/virtual/block. */
#ifndef TESTS_UNIT_SYSFS_FIXTURE_H
#define TESTS_UNIT_SYSFS_FIXTURE_H

#include <stdint.h>

extern char root[64];

/* A new tree under /tmp/NAME.XXXXXX, and its removal (0 or not). */
void fixture_new(const char *name);
int fixture_remove(void);
/* DIR/ATTR holds the formatted value and a newline. */
void put(const char *dir, const char *attr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void mkdirs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void link_to(const char *target, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A disk at devices/virtual/block/NAME with its links. */
void disk(const char *name, const char *devt, uint64_t sectors, unsigned lbs);
void part(const char *disk_name, const char *name, const char *devt, unsigned partno, uint64_t start,
	  uint64_t sectors);
/* NAME's md/ directory: an array of raid_disks members (md_array), with
 * its geometry as md shows it. */
void md_array(const char *md, const char *level, unsigned raid_disks, unsigned chunk_bytes, int layout,
	      uint64_t component_kib);
/* md0 (190000 sectors): RAID1 of sda1 (a partition of sda at 2048) and
 * the whole disk sdb, data at 2048 on both. */
void md0_raid1_sda1_sdb(void);

#endif
