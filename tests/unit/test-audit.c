/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit's parsers: every file kind with comments, odd spacing, tabs,
 * tag forms, fstab's \040, nofail lines and lines they must not touch;
 * lines they cannot parse; which names move.
 */
#include "config.h"

#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit_int.h"

static void parse(enum audit_file_kind kind, const char *text, struct audit_text *t)
{
	assert_int_equal(audit_parse(kind, text, strlen(text), t), 0);
}

/* Reference i is on line, covers exactly want in the text, and decodes to value. */
static void check_ref(const struct audit_text *t, size_t i, unsigned line, const char *want, const char *value)
{
	assert_true(i < t->nrefs);
	const struct audit_ref *r = &t->refs[i];
	assert_int_equal(r->line, line);
	assert_int_equal(r->len, strlen(want));
	assert_memory_equal(t->data + t->start[line - 1] + r->offset, want, r->len);
	assert_string_equal(r->value, value);
}

static void test_fstab(void **state)
{
	struct audit_text t;
	const char *text =
		"# /etc/fstab: static file system information.\n"
		"\n"
		"UUID=3acd6cf8-de5e-4536-a00f-5f4df198c1e4 /  ext4 errors=remount-ro 0 1\n"
		"   /dev/sdb1\t\t/srv   ext4\tdefaults,nofail\t0   2\n"
		"LABEL=my\\040data /data ext4 defaults 0 2\n"
		"/dev/disk/by-label/my\\040disk /disk ext4 defaults 0 2\n"
		"/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part2 none swap sw 0 0\n"
		"tmpfs /tmp tmpfs defaults\n"
		"server:/export /nfs nfs defaults 0 0\n"
		"/dev/nvme0n1p2 /home ext4 defaults";	/* no final newline */

	parse(AUDIT_FSTAB, text, &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nlines, 10);
	assert_false(t.final_newline);
	assert_int_equal(t.nrefs, 4);
	check_ref(&t, 0, 4, "/dev/sdb1", "/dev/sdb1");
	check_ref(&t, 1, 6, "/dev/disk/by-label/my\\040disk", "/dev/disk/by-label/my disk");
	check_ref(&t, 2, 7, "/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part2", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part2");
	check_ref(&t, 3, 10, "/dev/nvme0n1p2", "/dev/nvme0n1p2");
	assert_int_equal(t.refs[0].form, AUDIT_FORM_TAG);
	assert_true(t.refs[0].fixable);
	audit_text_clear(&t);
}

static void test_fstab_bad(void **state)
{
	struct audit_text t;

	parse(AUDIT_FSTAB, "/dev/sda1 / ext4 defaults 0 1\n/dev/sdb1 /srv ext4 defaults 0 2 extra\n", &t);
	assert_int_equal(t.bad_line, 2);
	assert_non_null(strstr(t.bad_why, "7 fields"));
	audit_text_clear(&t);
	parse(AUDIT_FSTAB, "/dev/sdb1\n", &t);
	assert_int_equal(t.bad_line, 1);
	audit_text_clear(&t);
	parse(AUDIT_FSTAB, "/dev/sdb1 /srv ext4 defaults zero 2\n", &t);
	assert_int_equal(t.bad_line, 1);
	assert_non_null(strstr(t.bad_why, "dump"));
	audit_text_clear(&t);
}

static void test_crypttab(void **state)
{
	struct audit_text t;

	parse(AUDIT_CRYPTTAB,
	      "# <target name> <source device> <key file> <options>\n"
	      "cr_home   /dev/sdc2   none   luks,discard\n"
	      "cr_data\tUUID=0a1b2c3d-0000-4000-8000-000000000001\t/etc/keys/data\tluks\n"
	      "cr_swap /dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part3 /dev/urandom swap,cipher=aes-xts-plain64,size=256\n"
	      "cr_min /dev/dm-3\n",
	      &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 3);
	check_ref(&t, 0, 2, "/dev/sdc2", "/dev/sdc2");
	check_ref(&t, 1, 4, "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part3", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part3");
	check_ref(&t, 2, 5, "/dev/dm-3", "/dev/dm-3");
	audit_text_clear(&t);
	parse(AUDIT_CRYPTTAB, "cr_home\n", &t);
	assert_int_equal(t.bad_line, 1);
	audit_text_clear(&t);
}

static void test_mdadm(void **state)
{
	struct audit_text t;

	parse(AUDIT_MDADM,
	      "# mdadm.conf\n"
	      "DEVICE partitions containers /dev/sd[bc]* /dev/sdd1\n"
	      "dev /dev/nvme0n1p1   # abbreviated keyword, trailing comment\n"
	      "\n"
	      "HOMEHOST <system>\n"
	      "MAILADDR root\n"
	      "ARRAY /dev/md/0  metadata=1.2 UUID=3b2f6a1c:5d4e4f60:8a910c1d:2e3f4a5b name=host:0\n"
	      "\tdevices=/dev/sdb1,/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1,/dev/sdc1\n"
	      "ARRAY /dev/md1 UUID=01234567:89abcdef:01234567:89abcdef\n",
	      &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 5);
	check_ref(&t, 0, 2, "/dev/sdd1", "/dev/sdd1");
	check_ref(&t, 1, 3, "/dev/nvme0n1p1", "/dev/nvme0n1p1");
	check_ref(&t, 2, 8, "/dev/sdb1", "/dev/sdb1");
	check_ref(&t, 3, 8, "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4-part1");
	check_ref(&t, 4, 8, "/dev/sdc1", "/dev/sdc1");
	assert_int_equal(t.refs[0].form, AUDIT_FORM_PATH);
	audit_text_clear(&t);

	parse(AUDIT_MDADM, "DEVICE /dev/sdb1\nBOGUS /dev/sdc1\n", &t);
	assert_int_equal(t.bad_line, 2);
	assert_non_null(strstr(t.bad_why, "BOGUS"));
	audit_text_clear(&t);
	parse(AUDIT_MDADM, "  devices=/dev/sdb1\n", &t);
	assert_int_equal(t.bad_line, 1);
	audit_text_clear(&t);
}

static void test_grub(void **state)
{
	struct audit_text t;

	parse(AUDIT_GRUB,
	      "# If you change this file, run 'update-grub' afterwards.\n"
	      "GRUB_DEFAULT=0\n"
	      "GRUB_TIMEOUT=5\n"
	      "GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`\n"
	      "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet  resume=/dev/sda2\"\n"
	      "export GRUB_CMDLINE_LINUX='root=/dev/nvme0n1p2 console=ttyS0 resume=UUID=0a1b'  # kept\n"
	      "#GRUB_CMDLINE_LINUX=\"root=/dev/sdz1\"\n",
	      &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 2);
	check_ref(&t, 0, 5, "/dev/sda2", "/dev/sda2");
	assert_string_equal(t.refs[0].field, "resume=");
	check_ref(&t, 1, 6, "/dev/nvme0n1p2", "/dev/nvme0n1p2");
	assert_string_equal(t.refs[1].field, "root=");
	audit_text_clear(&t);

	parse(AUDIT_GRUB, "GRUB_CMDLINE_LINUX=\"$EXTRA resume=/dev/sda2\"\n", &t);
	assert_int_equal(t.bad_line, 1);
	assert_int_equal(t.nrefs, 0);
	audit_text_clear(&t);
	parse(AUDIT_GRUB, "GRUB_DEFAULT=0\nif [ -x /bin/true ]; then GRUB_TIMEOUT=1; fi\n", &t);
	assert_int_equal(t.bad_line, 2);
	audit_text_clear(&t);
	parse(AUDIT_GRUB, "GRUB_CMDLINE_LINUX=\"resume=/dev/sda2\n", &t);
	assert_int_equal(t.bad_line, 1);
	audit_text_clear(&t);
}

static void test_resume(void **state)
{
	struct audit_text t;

	parse(AUDIT_RESUME, "# resume\nRESUME=/dev/sdb2\n", &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 1);
	check_ref(&t, 0, 2, "/dev/sdb2", "/dev/sdb2");
	audit_text_clear(&t);
	parse(AUDIT_RESUME, "RESUME=\"UUID=0a1b2c3d-0000-4000-8000-000000000001\"\n", &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 0);
	audit_text_clear(&t);
	parse(AUDIT_RESUME, "RESUME=none\nRESUME=\"259:3\"\n", &t);
	assert_int_equal(t.nrefs, 1);
	check_ref(&t, 0, 2, "259:3", "259:3");
	audit_text_clear(&t);
}

static void test_units(void **state)
{
	struct audit_text t;

	parse(AUDIT_MOUNT_UNIT,
	      "# data.mount\n"
	      "[Unit]\n"
	      "Description=Data \\\n"
	      "  What=/dev/sdq1 (a continuation, not a key)\n"
	      "What=/dev/sdr1\n"
	      "\n"
	      "[Mount]\n"
	      "; a comment\n"
	      "What = /dev/sdb1  \n"
	      "Where=/data\n"
	      "Options=nofail\n",
	      &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 1);
	check_ref(&t, 0, 9, "/dev/sdb1", "/dev/sdb1");
	assert_int_equal(t.refs[0].form, AUDIT_FORM_PATH);
	assert_true(t.refs[0].fixable);
	audit_text_clear(&t);

	parse(AUDIT_SWAP_UNIT, "[Swap]\nWhat=/dev/sdb2\n", &t);
	assert_int_equal(t.nrefs, 1);
	assert_false(t.refs[0].fixable);
	audit_text_clear(&t);

	parse(AUDIT_MOUNT_UNIT, "[Mount]\nWhat=/dev/%i\n", &t);
	assert_int_equal(t.nrefs, 0);
	audit_text_clear(&t);
	parse(AUDIT_MOUNT_UNIT, "[Mount\nWhat=/dev/sdb1\n", &t);
	assert_int_equal(t.bad_line, 1);
	audit_text_clear(&t);
	parse(AUDIT_MOUNT_UNIT, "[Mount]\njust words\n", &t);
	assert_int_equal(t.bad_line, 2);
	audit_text_clear(&t);
}

static void test_cmdline(void **state)
{
	struct audit_text t;

	parse(AUDIT_CMDLINE, "BOOT_IMAGE=/vmlinuz-6.1.0 root=/dev/nvme0n1p2 ro resume=259:3 quiet\n", &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 2);
	check_ref(&t, 0, 1, "/dev/nvme0n1p2", "/dev/nvme0n1p2");
	check_ref(&t, 1, 1, "259:3", "259:3");
	assert_false(t.refs[0].fixable);
	audit_text_clear(&t);
}

static void test_patterns(void **state)
{
	struct audit_text t;

	parse(AUDIT_LVM,
	      "devices {\n"
	      "\t# filter = [ \"a|/dev/sdz1|\" ]\n"
	      "\tfilter = [ \"a|^/dev/sdb1$|\", \"a|/dev/disk/by-id/.*|\",\n"
	      "\t\t\"r|.*|\" ]\n"
	      "\tglobal_filter = \"r|nvme0n1|\"\n"
	      "\tscan = [ \"/dev\" ]\n"
	      "}\n",
	      &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 2);
	check_ref(&t, 0, 3, "/dev/sdb1", "/dev/sdb1");
	assert_string_equal(t.refs[0].field, "filter");
	check_ref(&t, 1, 5, "nvme0n1", "/dev/nvme0n1");
	assert_string_equal(t.refs[1].field, "global_filter");
	assert_false(t.refs[0].fixable);
	audit_text_clear(&t);

	parse(AUDIT_UDEV_RULES,
	      "# one disk's scheduler\n"
	      "ACTION==\"add\", KERNEL==\"sdb\", ATTR{queue/scheduler}=\"none\"\n"
	      "ACTION==\"add\", KERNEL==\"sd*\", ATTR{queue/read_ahead_kb}=\"1024\"\n"
	      "SUBKERNEL==\"sdc\", KERNEL!=\"sdd\"\n",
	      &t);
	assert_int_equal(t.nrefs, 1);
	check_ref(&t, 0, 2, "sdb", "/dev/sdb");
	audit_text_clear(&t);

	parse(AUDIT_MULTIPATH,
	      "blacklist {\n"
	      "    devnode \"^sda$\"\n"
	      "    devnode \"^(ram|loop)[0-9]*\"\n"
	      "    wwid 3600508b1001c5a8e\n"
	      "}\n",
	      &t);
	assert_int_equal(t.nrefs, 1);
	check_ref(&t, 0, 2, "sda", "/dev/sda");
	audit_text_clear(&t);
}

static void test_hostile(void **state)
{
	struct audit_text t;
	static const char nul[] = "/dev/sda1 / ext4 defaults 0 1\n/dev/sdb1\0 /srv ext4 defaults 0 2\n";

	assert_int_equal(audit_parse(AUDIT_FSTAB, nul, sizeof(nul) - 1, &t), 0);
	assert_int_equal(t.bad_line, 2);
	assert_non_null(strstr(t.bad_why, "NUL"));
	audit_text_clear(&t);

	size_t n = AUDIT_MAX_LINE + 100;
	char *longline = malloc(n + 40);
	assert_non_null(longline);
	memset(longline, 'a', n);
	strcpy(longline + n, " /srv ext4 defaults 0 2\n");
	parse(AUDIT_MDADM, longline, &t);
	assert_int_equal(t.bad_line, 1);
	audit_text_clear(&t);
	free(longline);

	/* Bytes that are not UTF-8: parsed as bytes, never a name that moves. */
	parse(AUDIT_FSTAB, "# caf\xe9\n/dev/sd\xff\xfe /x ext4 defaults 0 0\n", &t);
	assert_int_equal(t.bad_line, 0);
	assert_int_equal(t.nrefs, 1);
	assert_null(audit_unstable_reason(t.refs[0].value));
	audit_text_clear(&t);

	parse(AUDIT_FSTAB, "", &t);
	assert_int_equal(t.nlines, 0);
	assert_int_equal(t.bad_line, 0);
	audit_text_clear(&t);
}

static void test_unstable(void **state)
{
	static const char *const moves[] = {
		"/dev/sdb", "/dev/sdb1", "/dev/sdaa12", "/dev/vda", "/dev/xvdb3", "/dev/hdc", "/dev/nvme0n1",
		"/dev/nvme12n3p14", "/dev/dm-3", "/dev/loop7", "/dev/loop0p2", "/dev/mmcblk0p1", "/dev/nbd0",
		"8:17", "259:3", "/dev/block/8:17", "/dev/disk/by-path/pci-0000:00:1f.2-ata-1",
		"/dev/disk/by-diskseq/12",
	};
	static const char *const stays[] = {
		"/dev/mapper/vg-root", "/dev/vg/root", "/dev/md0", "/dev/md/0", "/dev/disk/by-uuid/0a1b",
		"/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", "/dev/disk/by-partuuid/0a1b", "/dev/nvme0",
		"/dev/sdb1x", "/dev/dm-", "/dev/sd", "/dev/nvme0n", "UUID=0a1b", "/dev/zram0", "8:", ":3",
	};

	for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		if (!audit_unstable_reason(moves[i]))
			fail_msg("%s should be a name that moves", moves[i]);
	}
	for (size_t i = 0; i < sizeof(stays) / sizeof(stays[0]); i++) {
		if (audit_unstable_reason(stays[i]))
			fail_msg("%s should not be a name that moves", stays[i]);
	}
}

static void test_decode(void **state)
{
	char *s = audit_fstab_decode("a\\040b\\011c\\000d\\9", 18);
	assert_string_equal(s, "a b\tc\\000d\\9");
	free(s);
}

/* Files of /proc say they are empty: read to the end all the same. */
static void test_read_proc(void **state)
{
	char *data = NULL;
	size_t size = 0;

	assert_int_equal(audit_read_file("/proc/self/status", NULL, &data, &size, NULL), 0);
	assert_true(size > 0);
	assert_non_null(strstr(data, "Name:"));
	free(data);
	assert_int_equal(audit_read_file("/nonexistent/fstab", NULL, &data, &size, NULL), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fstab),
		cmocka_unit_test(test_fstab_bad),
		cmocka_unit_test(test_crypttab),
		cmocka_unit_test(test_mdadm),
		cmocka_unit_test(test_grub),
		cmocka_unit_test(test_resume),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_cmdline),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_unstable),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_read_proc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
