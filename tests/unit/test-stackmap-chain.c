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
#include "sysfs-fixture.h"

/* md0: RAID1 of sda1 (slot 0) and sdb (slot 1), data at 2048 on both. */
static int setup(void **state)
{
	(void)state;
	fixture_new("test-stackmap-chain");
	md0_raid1_sda1_sdb();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fixture_remove();
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
