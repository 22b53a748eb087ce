/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An LBA followed up and down a stack read from a small sysfs tree laid out
 * as the kernel's: an md RAID1 (data offset 2048) of a partition starting
 * at 2048 and of a whole disk.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libintegrity.h"

/* Paths here are short: a temporary directory and sysfs names. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

static char root[64];

static void put(const char *dir, const char *attr, const char *fmt, ...)
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

static void mkdirs(const char *fmt, ...)
{
	char path[PATH_MAX], cmd[PATH_MAX + 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	assert_int_equal(system(cmd), 0);
}

static void link_to(const char *target, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	assert_int_equal(symlink(target, path), 0);
}

/* A disk at devices/virtual/block/NAME with its links. */
static void disk(const char *name, const char *devt, uint64_t sectors, unsigned lbs)
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

static void part(const char *disk_name, const char *name, const char *devt, unsigned partno,
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

/* md0: RAID1 of sda1 (slot 0) and sdb (slot 1), data at 2048 on both. */
static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/test-stackmap-chain.XXXXXX");
	assert_non_null(mkdtemp(root));
	mkdirs("%s/block", root);
	mkdirs("%s/class/block", root);
	mkdirs("%s/dev/block", root);
	disk("sda", "8:0", 1 << 20, 512);
	part("sda", "sda1", "8:1", 1, 2048, 200000);
	disk("sdb", "8:16", 1 << 20, 512);
	disk("md0", "9:0", 190000, 512);

	char md[PATH_MAX];
	snprintf(md, sizeof(md), "%s/devices/virtual/block/md0/md", root);
	mkdirs("%s/dev-sda1", md);
	mkdirs("%s/dev-sdb", md);
	put(md, "level", "raid1");
	put(md, "raid_disks", "2");
	put(md, "chunk_size", "0");
	put(md, "layout", "0");
	put(md, "component_size", "95000");
	char m[PATH_MAX + 16];
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
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static struct integrity_device *open_dev(struct integrity_context **ctx, const char *name)
{
	struct integrity_device *dev;

	assert_int_equal(integrity_context_new(ctx, root), 0);
	assert_int_equal(integrity_device_new(*ctx, name, &dev), 0);
	return dev;
}

static void up_from_a_partition(void **state)
{
	(void)state;
	struct integrity_context *ctx;
	struct integrity_device *dev = open_dev(&ctx, "sda");
	struct integrity_stack_place *pl;
	size_t n;

	/* sda 5096 is sda1 3048 is md0 1000 */
	assert_int_equal(integrity_stack_map_above(dev, 5096, &pl, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(pl[0].device, "sda1");
	assert_int_equal(pl[0].lba, 3048);
	assert_int_equal(pl[0].depth, 1);
	assert_string_equal(pl[1].device, "md0");
	assert_int_equal(pl[1].lba, 1000);
	assert_int_equal(pl[1].depth, 2);
	free(pl);

	/* in sda1's md superblock area: the partition, nothing above */
	assert_int_equal(integrity_stack_map_above(dev, 2048 + 8, &pl, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(pl[0].device, "sda1");
	free(pl);
	/* before the partition: nothing */
	assert_int_equal(integrity_stack_map_above(dev, 100, &pl, &n), 0);
	assert_int_equal(n, 0);
	free(pl);
	assert_int_equal(integrity_stack_map_above(dev, 1 << 20, &pl, &n), -ERANGE);
	integrity_device_free(dev);
	integrity_context_free(ctx);
}

static void down_to_both_mirrors(void **state)
{
	(void)state;
	struct integrity_context *ctx;
	struct integrity_device *dev = open_dev(&ctx, "md0");
	struct integrity_stack_place *pl;
	size_t n;

	assert_int_equal(integrity_stack_map_below(dev, 1000, &pl, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(pl[0].device, "sda1");
	assert_int_equal(pl[0].lba, 3048);
	assert_string_equal(pl[1].device, "sdb");
	assert_int_equal(pl[1].lba, 3048);
	assert_string_equal(pl[2].device, "sda");
	assert_int_equal(pl[2].lba, 5096);
	assert_int_equal(pl[2].depth, 2);
	free(pl);
	integrity_device_free(dev);
	integrity_context_free(ctx);
}

static void up_from_a_whole_disk_member(void **state)
{
	(void)state;
	struct integrity_context *ctx;
	struct integrity_device *dev = open_dev(&ctx, "sdb");
	struct integrity_stack_place *pl;
	size_t n;

	assert_int_equal(integrity_stack_map_above(dev, 3048, &pl, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(pl[0].device, "md0");
	assert_int_equal(pl[0].lba, 1000);
	free(pl);
	/* past md's data on the member: not mapped */
	assert_int_equal(integrity_stack_map_above(dev, 2048 + 190000, &pl, &n), 0);
	assert_int_equal(n, 0);
	free(pl);
	integrity_device_free(dev);
	integrity_context_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(up_from_a_partition),
		cmocka_unit_test(down_to_both_mirrors),
		cmocka_unit_test(up_from_a_whole_disk_member),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
