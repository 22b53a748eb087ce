/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Small sysfs trees laid out as the kernel's, for the unit tests. */
#include "config.h"

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sysfs-fixture.h"

/* Paths here are short: a temporary directory and sysfs names. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

char root[64];

void put(const char *dir, const char *attr, const char *fmt, ...)
{
	char path[PATH_MAX * 2];
	va_list ap;

	snprintf(path, sizeof(path), "%s/%s", dir, attr);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	assert_int_equal(fclose(f), 0);
}

void mkdirs(const char *fmt, ...)
{
	char path[PATH_MAX], cmd[PATH_MAX + 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
}

void link_to(const char *target, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	assert_int_equal(symlink(target, path), 0);
}

/* A disk at devices/virtual/block/NAME with its links. */
void disk(const char *name, const char *devt, uint64_t sectors, unsigned lbs)
{
	char dir[PATH_MAX], target[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/%s", root, name);
	mkdirs("%s/queue", dir);
	mkdirs("%s/holders", dir);
	mkdirs("%s/slaves", dir);
	put(dir, "dev", "%s", devt);
	put(dir, "size", "%llu", (unsigned long long)sectors);
	snprintf(target, sizeof(target), "%s/queue", dir);
	put(target, "logical_block_size", "%u", lbs);
	snprintf(target, sizeof(target), "../devices/virtual/block/%s", name);
	link_to(target, "%s/block/%s", root, name);
	snprintf(target, sizeof(target), "../../devices/virtual/block/%s", name);
	link_to(target, "%s/class/block/%s", root, name);
	link_to(target, "%s/dev/block/%s", root, devt);
}

void part(const char *disk_name, const char *name, const char *devt, unsigned partno,
		 uint64_t start, uint64_t sectors)
{
	char dir[PATH_MAX], target[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/%s/%s", root, disk_name, name);
	mkdirs("%s/holders", dir);
	put(dir, "dev", "%s", devt);
	put(dir, "partition", "%u", partno);
	put(dir, "start", "%llu", (unsigned long long)start);
	put(dir, "size", "%llu", (unsigned long long)sectors);
	snprintf(target, sizeof(target), "../../devices/virtual/block/%s/%s", disk_name, name);
	link_to(target, "%s/class/block/%s", root, name);
	link_to(target, "%s/dev/block/%s", root, devt);
}


void fixture_new(const char *name)
{
	snprintf(root, sizeof(root), "/tmp/%s.XXXXXX", name);
	assert_non_null(mkdtemp(root));
	mkdirs("%s/block", root);
	mkdirs("%s/class/block", root);
	mkdirs("%s/dev/block", root);
}

int fixture_remove(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

void md_array(const char *md, const char *level, unsigned raid_disks, unsigned chunk_bytes, int layout,
	      uint64_t component_kib)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/%s/md", root, md);
	mkdirs("%s", dir);
	put(dir, "level", "%s", level);
	put(dir, "raid_disks", "%u", raid_disks);
	put(dir, "chunk_size", "%u", chunk_bytes);
	put(dir, "layout", "%d", layout);
	put(dir, "component_size", "%llu", (unsigned long long)component_kib);
}

void md0_raid1_sda1_sdb(void)
{
	char md[PATH_MAX], m[PATH_MAX + 16];

	disk("sda", "8:0", 1 << 20, 512);
	part("sda", "sda1", "8:1", 1, 2048, 200000);
	disk("sdb", "8:16", 1 << 20, 512);
	disk("md0", "9:0", 190000, 512);
	md_array("md0", "raid1", 2, 0, 0, 95000);
	snprintf(md, sizeof(md), "%s/devices/virtual/block/md0/md", root);
	mkdirs("%s/dev-sda1", md);
	mkdirs("%s/dev-sdb", md);
	snprintf(m, sizeof(m), "%s/dev-sda1", md);
	put(m, "slot", "0");
	put(m, "offset", "2048");
	put(m, "state", "in_sync");
	snprintf(m, sizeof(m), "%s/dev-sdb", md);
	put(m, "slot", "1");
	put(m, "offset", "2048");
	put(m, "state", "in_sync");
	link_to("../../sda/sda1", "%s/devices/virtual/block/md0/slaves/sda1", root);
	link_to("../../sdb", "%s/devices/virtual/block/md0/slaves/sdb", root);
	link_to("../../../md0", "%s/devices/virtual/block/sda/sda1/holders/md0", root);
	link_to("../../md0", "%s/devices/virtual/block/sdb/holders/md0", root);
}
