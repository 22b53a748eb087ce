/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sysfs layer on small trees laid out as the kernel's: numbers parsed
 * strictly (a malformed value is an error, never 0 or UINT64_MAX), a
 * disk's partitions, holders and slaves, md members and their roles, and
 * mountinfo lines with their escapes.
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
#include <sys/sysmacros.h>

#include <cmocka.h>

#include "libintegrity.h"
#include "sysfs-fixture.h"
#include "sysfs.h"
#include "util/strv.h"

static int setup(void **state)
{
	(void)state;
	fixture_new("test-sysfs");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fixture_remove();
}

static void numbers_are_parsed_strictly(void **state)
{
	uint64_t u = 7;
	int64_t s = 7;
	(void)state;

	static const char *const attrs[][2] = {
		{ "plain", "12" }, { "minus_one", "-1" }, { "empty", "" },
		{ "too_big", "18446744073709551616" }, { "largest", "18446744073709551615" },
		{ "hex", "0x10" }, { "leading_blank", " 5" }, { "plus", "+5" }, { "word", "none" },
		{ "most_negative", "-9223372036854775808" }, { "below_most_negative", "-9223372036854775809" },
	};
	for (size_t i = 0; i < sizeof(attrs) / sizeof(*attrs); i++)
		put(root, attrs[i][0], "%s", attrs[i][1]);

	assert_int_equal(sysfs_read_u64(root, "plain", &u), 0);
	assert_int_equal(u, 12);
	assert_int_equal(sysfs_read_u64(root, "largest", &u), 0);
	assert_true(u == UINT64_MAX);
	static const char *const malformed[] = { "minus_one", "empty", "hex", "leading_blank", "plus", "word" };
	for (size_t i = 0; i < sizeof(malformed) / sizeof(*malformed); i++) {
		u = 7;
		if (sysfs_read_u64(root, malformed[i], &u) != -EINVAL)
			fail_msg("%s accepted as %llu", malformed[i], (unsigned long long)u);
	}
	assert_int_equal(sysfs_read_u64(root, "too_big", &u), -ERANGE);
	assert_int_equal(sysfs_read_u64(root, "absent", &u), -ENOENT);

	assert_int_equal(sysfs_read_s64(root, "minus_one", &s), 0);
	assert_int_equal(s, -1);
	assert_int_equal(sysfs_read_s64(root, "most_negative", &s), 0);
	assert_true(s == INT64_MIN);
	assert_int_equal(sysfs_read_s64(root, "below_most_negative", &s), -ERANGE);
	assert_int_equal(sysfs_read_s64(root, "largest", &s), -ERANGE);
	assert_int_equal(sysfs_read_s64(root, "empty", &s), -EINVAL);
	assert_int_equal(sysfs_read_s64(root, "plus", &s), -EINVAL);
}

static void md_slots(void **state)
{
	int slot = 7;
	(void)state;

	assert_int_equal(sysfs_parse_md_slot("0", &slot), 0);
	assert_int_equal(slot, 0);
	assert_int_equal(sysfs_parse_md_slot("12", &slot), 0);
	assert_int_equal(slot, 12);
	assert_int_equal(sysfs_parse_md_slot("none", &slot), 0);
	assert_int_equal(slot, -1);
	slot = 7;
	assert_int_equal(sysfs_parse_md_slot("journal", &slot), 0);
	assert_int_equal(slot, -1);
	assert_int_equal(sysfs_parse_md_slot("-1", &slot), -EINVAL);
	assert_int_equal(sysfs_parse_md_slot("", &slot), -EINVAL);
	assert_int_equal(sysfs_parse_md_slot("3x", &slot), -EINVAL);
	assert_int_equal(sysfs_parse_md_slot("4294967296", &slot), -EINVAL);
}

static void assert_names(const struct strv *v, const char *joined)
{
	char buf[256] = "";

	for (size_t i = 0; i < v->n; i++) {
		strcat(buf, i ? " " : "");
		strcat(buf, v->v[i]);
	}
	assert_string_equal(buf, joined);
}

static void partitions_of_a_disk(void **state)
{
	char dir[PATH_MAX];
	struct strv v = { 0 };
	(void)state;

	disk("sda", "8:0", 1 << 20, 512);
	part("sda", "sda1", "8:1", 1, 2048, 2048);
	part("sda", "sda10", "259:0", 10, 8192, 2048);
	part("sda", "sda2", "8:2", 2, 4096, 2048);
	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/sda", root);
	mkdirs("%s/sdafoo", dir);	/* not a partition's name */
	mkdirs("%s/power", dir);
	assert_int_equal(sysfs_read_partitions(dir, "sda", &v), 0);
	assert_names(&v, "sda1 sda2 sda10");
	strv_clear(&v);

	disk("nvme0n1", "259:1", 1 << 20, 4096);
	part("nvme0n1", "nvme0n1p2", "259:3", 2, 512, 256);
	part("nvme0n1", "nvme0n1p1", "259:2", 1, 256, 256);
	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/nvme0n1", root);
	assert_int_equal(sysfs_read_partitions(dir, "nvme0n1", &v), 0);
	assert_names(&v, "nvme0n1p1 nvme0n1p2");
	strv_clear(&v);

	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/sdz", root);
	assert_int_equal(sysfs_read_partitions(dir, "sdz", &v), -ENOENT);
}

static void holders_and_slaves(void **state)
{
	char dir[PATH_MAX];
	struct strv v = { 0 };
	(void)state;

	disk("sdb", "8:16", 1 << 20, 512);
	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/sdb", root);
	assert_int_equal(sysfs_read_links(dir, "holders", &v), 0);
	assert_int_equal(v.n, 0);
	link_to("../../dm-10", "%s/holders/dm-10", dir);
	link_to("../../dm-2", "%s/holders/dm-2", dir);
	assert_int_equal(sysfs_read_links(dir, "holders", &v), 0);
	assert_names(&v, "dm-2 dm-10");
	strv_clear(&v);
	/* No such directory at all: nothing is made of it. */
	assert_int_equal(sysfs_read_links(dir, "nothing", &v), 0);
	assert_int_equal(v.n, 0);
}

static void md_member(const char *md, const char *name, const char *slot, const char *offset)
{
	char dir[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/%s/md/dev-%s", root, md, name);
	mkdirs("%s", dir);
	put(dir, "slot", "%s", slot);
	put(dir, "offset", "%s", offset);
	put(dir, "state", "%s", strcmp(slot, "journal") == 0 ? "journal" : "in_sync");
	link_to("../../../md0", "%s/devices/virtual/block/%s/holders/%s", root, name, md);
	char target[PATH_MAX];
	snprintf(target, sizeof(target), "../../%s", name);
	link_to(target, "%s/devices/virtual/block/%s/slaves/%s", root, md, name);
	link_to("../../../../..", "%s/block", dir);
}

/* md0: RAID5 of sda, sdb and sdc with a write journal on nvme0n1. */
static void raid5_with_journal(void)
{
	static const char *const disks[][2] = { { "nvme0n1", "259:1" }, { "sda", "8:0" }, { "sdb", "8:16" },
						 { "sdc", "8:32" } };
	for (size_t i = 0; i < 4; i++)
		disk(disks[i][0], disks[i][1], 1 << 20, 512);
	disk("md0", "9:0", 2 * 1000448, 512);
	md_array("md0", "raid5", 3, 65536, 2, 500224);
	md_member("md0", "nvme0n1", "journal", "2048");
	md_member("md0", "sda", "0", "2048");
	md_member("md0", "sdb", "1", "2048");
	md_member("md0", "sdc", "2", "2048");
}

static struct integrity_stack *md0_stack(struct integrity_context **ctx, int *err)
{
	struct integrity_device *dev;
	struct integrity_stack *s = NULL;

	assert_int_equal(integrity_context_new(ctx, root), 0);
	assert_int_equal(integrity_device_new(*ctx, "md0", &dev), 0);
	*err = integrity_stack_new(dev, &s);
	integrity_device_free(dev);
	return s;
}

static void md_journal_holds_no_data(void **state)
{
	struct integrity_context *ctx;
	int r;
	(void)state;

	raid5_with_journal();
	struct integrity_stack *s = md0_stack(&ctx, &r);
	assert_int_equal(r, 0);
	assert_int_equal(integrity_stack_md_member_count(s), 4);
	/* Roles first, by slot; the journal after them. */
	static const char *const names[] = { "sda", "sdb", "sdc", "nvme0n1" };
	static const int slots[] = { 0, 1, 2, -1 };
	for (size_t i = 0; i < 4; i++) {
		const struct integrity_md_member *m = integrity_stack_md_member(s, i);
		assert_string_equal(m->name, names[i]);
		assert_int_equal(m->slot, slots[i]);
		assert_int_equal(m->offset, 2048);
	}
	integrity_stack_free(s);

	/* Every data block of the array lies on a data member. */
	struct integrity_device *dev;
	assert_int_equal(integrity_device_new(ctx, "md0", &dev), 0);
	for (uint64_t lba = 0; lba < 1024; lba += 37) {
		struct integrity_stack_place *pl;
		size_t n;
		assert_int_equal(integrity_stack_map_below(dev, lba, &pl, &n), 0);
		for (size_t i = 0; i < n; i++)
			assert_string_not_equal(pl[i].device, "nvme0n1");
		free(pl);
	}
	integrity_device_free(dev);
	integrity_context_free(ctx);
}

/* The devices below an array come by role, as mdadm --detail lists them,
 * not in the order of the names the kernel happened to give the disks. */
static void md_below_by_role(void **state)
{
	struct integrity_context *ctx;
	int r;
	(void)state;

	static const char *const disks[][3] = { { "nvme3n1", "259:3", "2" }, { "nvme4n1", "259:4", "1" },
						 { "nvme5n1", "259:5", "0" }, { "nvme6n1", "259:6", "none" } };
	for (size_t i = 0; i < 4; i++)
		disk(disks[i][0], disks[i][1], 1 << 20, 512);
	disk("md0", "9:0", 2 * 1000448, 512);
	md_array("md0", "raid5", 3, 65536, 2, 500224);
	for (size_t i = 0; i < 4; i++)
		md_member("md0", disks[i][0], disks[i][2], "2048");
	struct integrity_stack *s = md0_stack(&ctx, &r);
	assert_int_equal(r, 0);
	assert_int_equal(integrity_stack_below_count(s), 4);
	static const char *const below[] = { "nvme5n1", "nvme4n1", "nvme3n1", "nvme6n1" };
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(integrity_stack_below(s, i), below[i]);
	integrity_stack_free(s);
	integrity_context_free(ctx);
}

/* A member whose data offset cannot be read cannot be mapped through:
 * an error, not an offset of 0. */
static void md_member_offset_unreadable(void **state)
{
	struct integrity_context *ctx;
	char path[PATH_MAX];
	int r;
	(void)state;

	raid5_with_journal();
	snprintf(path, sizeof(path), "%s/devices/virtual/block/md0/md/dev-sdb", root);
	put(path, "offset", "%s", "");
	assert_null(md0_stack(&ctx, &r));
	assert_int_equal(r, -EINVAL);
	integrity_context_free(ctx);

	put(path, "offset", "2048");
	put(path, "slot", "%s", "spare");	/* not a word md writes */
	assert_null(md0_stack(&ctx, &r));
	assert_int_equal(r, -EINVAL);
	integrity_context_free(ctx);
}

struct seen {
	char lines[4][256];
	size_t n;
};

static int collect(const struct mountinfo_entry *e, void *data)
{
	struct seen *seen = data;

	if (seen->n == 4)
		return -E2BIG;
	snprintf(seen->lines[seen->n++], sizeof(seen->lines[0]), "%u:%u|%s|%s|%s|%s", major(e->devnum),
		 minor(e->devnum), e->root, e->target, e->fstype, e->source);
	return 0;
}

static int stop_at_first(const struct mountinfo_entry *e, void *data)
{
	(void)e;
	(void)data;
	return 42;
}

static void mountinfo_lines(void **state)
{
	char path[PATH_MAX];
	struct seen seen = { 0 };
	(void)state;

	snprintf(path, sizeof(path), "%s/mountinfo", root);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	/* No optional field; two of them; escaped blanks, a tab, a backslash;
	 * a line cut short and one with a bad number are skipped. */
	fputs("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
	      "40 22 259:3 /sub /srv/my\\040files rw shared:1 master:2 - xfs /dev/nvme0n1p3 rw\n"
	      "41 22 0:45 / /mnt/a\\011b\\134c rw - btrfs /dev/disk\\040x rw\n"
	      "42 22 8:2 / /cut rw\n"
	      "43 22 8:x / /bad rw - ext4 /dev/sda2 rw\n",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(mountinfo_foreach(path, collect, &seen), 0);
	assert_int_equal(seen.n, 3);
	assert_string_equal(seen.lines[0], "8:1|/|/|ext4|/dev/sda1");
	assert_string_equal(seen.lines[1], "259:3|/sub|/srv/my files|xfs|/dev/nvme0n1p3");
	assert_string_equal(seen.lines[2], "0:45|/|/mnt/a\tb\\c|btrfs|/dev/disk x");
	assert_int_equal(mountinfo_foreach(path, stop_at_first, NULL), 42);
	snprintf(path, sizeof(path), "%s/absent", root);
	assert_int_equal(mountinfo_foreach(path, collect, &seen), -ENOENT);
}

/* Device-mapper devices by the names people give: the name in
 * /dev/mapper, LVM's VG/LV (dashes doubled in the dm name), each path. */
static void device_mapper_names(void **state)
{
	struct integrity_context *ctx;
	struct integrity_device *dev;
	struct integrity_resolve *res;
	(void)state;

	char dir[PATH_MAX];
	static const char *const dm[][2] = { { "dm-0", "vg--data-lv--home" }, { "dm-1", "lin1" } };
	for (unsigned i = 0; i < 2; i++) {
		char devt[16];
		snprintf(devt, sizeof(devt), "253:%u", i);
		disk(dm[i][0], devt, 2048, 512);
		snprintf(dir, sizeof(dir), "%s/devices/virtual/block/%s/dm", root, dm[i][0]);
		mkdirs("%s", dir);
		put(dir, "name", "%s", dm[i][1]);
	}
	assert_int_equal(integrity_context_new(&ctx, root), 0);
	static const struct {
		const char *spec, *name;
	} names[] = {
		{ "vg-data/lv-home", "dm-0" }, { "/dev/vg-data/lv-home", "dm-0" },
		{ "/dev/mapper/vg--data-lv--home", "dm-0" }, { "vg--data-lv--home", "dm-0" },
		{ "lin1", "dm-1" }, { "/dev/mapper/lin1", "dm-1" }, { "253:1", "dm-1" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(integrity_device_new(ctx, names[i].spec, &dev), 0);
		assert_string_equal(integrity_device_name(dev), names[i].name);
		integrity_device_free(dev);
		assert_int_equal(integrity_resolve_key(ctx, names[i].spec, 0, &res), 0);
		assert_string_equal(integrity_resolve_name(res), names[i].name);
		integrity_resolve_free(res);
	}
	/* Names of nothing: a volume that is not there, a relative path. */
	assert_int_equal(integrity_resolve_key(ctx, "vg-data/lv-gone", 0, &res), -ENOENT);
	assert_int_equal(integrity_resolve_key(ctx, "no/such/file", 0, &res), -ENOENT);
	assert_int_equal(integrity_device_new(ctx, "vg-data/lv-gone", &dev), -ENODEV);
	integrity_context_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(numbers_are_parsed_strictly, setup, teardown),
		cmocka_unit_test(md_slots),
		cmocka_unit_test_setup_teardown(partitions_of_a_disk, setup, teardown),
		cmocka_unit_test_setup_teardown(holders_and_slaves, setup, teardown),
		cmocka_unit_test_setup_teardown(md_journal_holds_no_data, setup, teardown),
		cmocka_unit_test_setup_teardown(md_member_offset_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(md_below_by_role, setup, teardown),
		cmocka_unit_test_setup_teardown(mountinfo_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(device_mapper_names, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
