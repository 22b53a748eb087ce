/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Device numbers and stable names: udev's string rules, property escaping,
 * link kinds, the history file (format, concurrency, rotation, lookups),
 * time parsing and the policy configuration. */
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "devt.h"

static char tmpdir[64];

static int setup_dir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-devt.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int remove_dir(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------ udev's strings */

static void test_replace_chars(void **state)
{
	char s[64];

	/* Allowed: alnum, "#+-.:=@_", \x escapes, valid UTF-8; the rest '_'. */
	strcpy(s, "a b$c/d\\x20\xc3\xa9\xff");
	assert_int_equal(udev_replace_chars(s, "/ "), 2);
	assert_string_equal(s, "a b_c/d\\x20\xc3\xa9_");
	strcpy(s, "a\tb");
	udev_replace_chars(s, "/ ");
	assert_string_equal(s, "a b");
	strcpy(s, "a b/c");
	udev_replace_chars(s, NULL);
	assert_string_equal(s, "a_b_c");
	/* Surrogates and overlong forms are not valid UTF-8. */
	strcpy(s, "\xed\xa0\x80\xc0\xaf");
	udev_replace_chars(s, NULL);
	assert_string_equal(s, "_____");
}

static void test_replace_whitespace(void **state)
{
	char out[64];

	udev_replace_whitespace("  a  b\tc  ", out, sizeof(out));
	assert_string_equal(out, "a_b_c");
	udev_replace_whitespace("", out, sizeof(out));
	assert_string_equal(out, "");
}

static void test_escape_property(void **state)
{
	char out[256];

	assert_int_equal(integrity_escape_property("a\"b$c\nd e/\xff", 0, out, sizeof(out)), 0);
	assert_string_equal(out, "a\\x22b\\x24c\\x0ad\\x20e\\x2f\\xff");
	/* Links keep their slashes and udev's own escapes. */
	assert_int_equal(integrity_escape_property("/dev/disk/by-label/a\\x20b c", INTEGRITY_ESCAPE_PATH,
						   out, sizeof(out)), 0);
	assert_string_equal(out, "/dev/disk/by-label/a\\x20b\\x20c");
	/* A lone backslash is escaped even then. */
	assert_int_equal(integrity_escape_property("a\\b", INTEGRITY_ESCAPE_PATH, out, sizeof(out)), 0);
	assert_string_equal(out, "a\\x5cb");
	assert_int_equal(integrity_escape_property("abcdef", 0, out, 4), -ENAMETOOLONG);
}

static void test_link_kinds(void **state)
{
	assert_int_equal(integrity_link_kind_of("/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"), INTEGRITY_LINK_WWN);
	assert_int_equal(integrity_link_kind_of("/dev/disk/by-id/scsi-35000c500a1b2c3d4"), INTEGRITY_LINK_ID);
	assert_int_equal(integrity_link_kind_of("disk/by-partuuid/x"), INTEGRITY_LINK_PARTUUID);
	assert_int_equal(integrity_link_kind_of("/dev/disk/by-diskseq/7"), INTEGRITY_LINK_DISKSEQ);
	assert_int_equal(integrity_link_kind_of("/dev/disk/by-loop-inode/1"), INTEGRITY_LINK_OTHER);
	assert_string_equal(integrity_link_kind_name(INTEGRITY_LINK_PARTLABEL), "by-partlabel");

	char *d = link_decode("a\\x20b\\x5cx\\xzz");
	assert_string_equal(d, "a b\\x\\xzz");
	free(d);
}

/* ------------------------------------------------------------------ time */

static void test_time_parse(void **state)
{
	int64_t t;

	assert_int_equal(integrity_time_parse("@1700000000", &t), 0);
	assert_true(t == 1700000000LL * 1000000);
	assert_int_equal(integrity_time_parse("@1700000000.25", &t), 0);
	assert_true(t == 1700000000LL * 1000000 + 250000);
	assert_int_equal(integrity_time_parse("2023-11-14T22:13:20Z", &t), 0);
	assert_true(t == 1700000000LL * 1000000);
	assert_int_equal(integrity_time_parse("2023-11-14T22:13:20.5Z", &t), 0);
	assert_true(t == 1700000000LL * 1000000 + 500000);
	assert_int_equal(integrity_time_parse("2023-11-14 23:13:20+01:00", &t), 0);
	assert_true(t == 1700000000LL * 1000000);
	assert_int_equal(integrity_time_parse("2023-11-14T17:13:20-0500", &t), 0);
	assert_true(t == 1700000000LL * 1000000);
	assert_int_equal(integrity_time_parse("2023-11-14T22:13Z", &t), 0);
	assert_true(t == (1700000000LL - 20) * 1000000);
	assert_int_equal(integrity_time_parse("yesterday", &t), -EINVAL);
	assert_int_equal(integrity_time_parse("2023-13-01", &t), -EINVAL);
	assert_int_equal(integrity_time_parse("2023-11-14T22:13:20Q", &t), -EINVAL);
	assert_int_equal(integrity_time_parse("@12x", &t), -EINVAL);
}

/* ------------------------------------------------------------------ history */

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_history_append_and_read(void **state)
{
	char path[PATH_MAX];
	const char *links[] = { "/dev/disk/by-partuuid/abc", "/dev/disk/by-label/a\\x20b", "/dev/disk/by-partlabel/x y" };
	struct integrity_history_event ev = {
		.action = "add", .major = 259, .minor = 17, .name = "loop0p18", .disk = "loop0",
		.partno = 18, .diskseq = 42, .links = links, .nlinks = 3,
	};
	struct integrity_history *h;
	struct integrity_resolve *res;

	snprintf(path, sizeof(path), "%s/sub/devt-history", tmpdir);
	/* The missing directory is created. */
	assert_int_equal(integrity_history_append(path, &ev), 0);
	assert_int_equal(integrity_history_open(path, &h), 0);
	assert_int_equal(integrity_history_count(h), 1);
	assert_int_equal(integrity_history_boot_count(h), 1);

	assert_int_equal(integrity_history_lookup(h, "259:17", "0", INTEGRITY_TIME_END, &res), 0);
	assert_string_equal(integrity_resolve_name(res), "loop0p18");
	assert_string_equal(integrity_resolve_disk(res), "loop0");
	assert_int_equal(integrity_resolve_partno(res), 18);
	assert_true(integrity_resolve_diskseq(res) == 42);
	assert_int_equal(integrity_resolve_link_count(res), 3);
	assert_int_equal(integrity_resolve_source(res), INTEGRITY_SOURCE_HISTORY);
	/* The value behind a link is decoded, whatever escaping it had. */
	assert_string_equal(integrity_resolve_value(res, INTEGRITY_LINK_LABEL), "a b");
	assert_string_equal(integrity_resolve_value(res, INTEGRITY_LINK_PARTLABEL), "x y");
	integrity_resolve_free(res);

	/* Other keys for the same record. */
	const char *keys[] = { "PARTUUID=ABC", "LABEL=a b", "LABEL=a\\x20b", "/dev/disk/by-partuuid/abc",
			       "disk/by-partuuid/abc", "loop0p18", "/dev/loop0p18", "PARTLABEL=x y" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		assert_int_equal(integrity_history_lookup(h, keys[i], NULL, INTEGRITY_TIME_END, &res), 0);
		assert_int_equal(integrity_resolve_minor(res), 17);
		integrity_resolve_free(res);
	}
	assert_int_equal(integrity_history_lookup(h, "259:18", NULL, INTEGRITY_TIME_END, &res), -ENODEV);
	assert_int_equal(integrity_history_lookup(h, "NOPE=1", NULL, INTEGRITY_TIME_END, &res), -EINVAL);
	assert_int_equal(integrity_history_lookup(h, "259:17", "-1", INTEGRITY_TIME_END, &res), -ESRCH);
	assert_int_equal(integrity_history_lookup(h, "259:17", "xyz", INTEGRITY_TIME_END, &res), -EINVAL);
	integrity_history_free(h);

	/* Removed: gone at the end of the boot. */
	ev.action = "remove";
	assert_int_equal(integrity_history_append(path, &ev), 0);
	assert_int_equal(integrity_history_open(path, &h), 0);
	assert_int_equal(integrity_history_lookup(h, "259:17", "0", INTEGRITY_TIME_END, &res), -ENODEV);
	assert_int_equal(integrity_history_lookup(h, "PARTUUID=abc", "0", INTEGRITY_TIME_END, &res), -ENODEV);
	integrity_history_free(h);
}

/* Two boots, numbers reused: what 259:0 was at a time in each. */
static void test_history_boots(void **state)
{
	char path[PATH_MAX], boot[64], line[512];
	struct integrity_history *h;
	struct integrity_resolve *res;

	assert_int_equal(current_boot_id(boot, sizeof(boot)), 0);
	snprintf(path, sizeof(path), "%s/boots", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("# written by hand\n", f);
	fputs("2020-01-01T00:00:00.000000Z 1577836800.000000 11111111-2222-3333-4444-555555555555 add 259:0 "
	      "sdb16 3 sdb 16 /dev/disk/by-partuuid/old-a\n", f);
	fputs("2020-01-01T00:00:10.000000Z 1577836810.000000 11111111-2222-3333-4444-555555555555 remove 259:0 "
	      "sdb16 3 sdb 16\n", f);
	fputs("2020-01-01T00:00:20.000000Z 1577836820.000000 11111111-2222-3333-4444-555555555555 add 259:0 "
	      "sdb17 3 sdb 17 /dev/disk/by-partuuid/old-b\n", f);
	fputs("2020-01-01T00:00:30.000000Z 1577836830.000000 11111111-2222-3333-4444-555555555555 add 8:16 "
	      "sdb 3 sdb 0 /dev/disk/by-id/scsi-35000c500a1b2c3d4 /dev/disk/by-id/wwn-0x5000c500a1b2c3d4\n", f);
	fputs("this line is not a record\n", f);
	snprintf(line, sizeof(line), "2020-01-02T00:00:00.000000Z 1577923200.000000 %s add 259:0 nvme0n1p1 7 nvme0n1 1 "
		 "/dev/disk/by-partuuid/new-a\n", boot);
	fputs(line, f);
	fclose(f);

	assert_int_equal(integrity_history_open(path, &h), 0);
	assert_int_equal(integrity_history_count(h), 5);
	assert_int_equal(integrity_history_bad_lines(h), 1);
	assert_int_equal(integrity_history_boot_count(h), 2);
	assert_string_equal(integrity_history_boot(h, 0), "11111111-2222-3333-4444-555555555555");

	struct {
		const char *key, *boot, *at;
		int r;
		const char *name;
	} cases[] = {
		{ "259:0", "-1", "@1577836805", 0, "sdb16" },
		{ "259:0", "-1", "@1577836815", -ENODEV, NULL },	/* removed by then */
		{ "259:0", "-1", NULL, 0, "sdb17" },		/* the end of that boot */
		{ "259:0", "1", "@1577836825", 0, "sdb17" },
		{ "259:0", "11111111222233334444555555555555", "@1577836805", 0, "sdb16" },
		{ "259:0", NULL, "@1577836805", 0, "sdb16" },	/* the boot running then */
		{ "259:0", "0", NULL, 0, "nvme0n1p1" },
		{ "PARTUUID=old-a", "-1", "@1577836805", 0, "sdb16" },
		{ "PARTUUID=old-a", "-1", "@1577836825", -ENODEV, NULL },	/* the number moved on */
		{ "PARTUUID=old-b", "-1", NULL, 0, "sdb17" },
		{ "WWN=0x5000c500a1b2c3d4", "-1", NULL, 0, "sdb" },
		{ "WWN=5000C500A1B2C3D4", "-1", NULL, 0, "sdb" },
		{ "SERIAL=35000c500a1b2c3d4", "-1", NULL, 0, "sdb" },
		{ "WWN=0x5000c500a1b2c3d4", "-1", "@1577836825", -ENODEV, NULL },	/* not yet */
		{ "259:0", "-2", NULL, -ESRCH, NULL },
		{ "259:0", NULL, "@1000", -ESRCH, NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t at = INTEGRITY_TIME_END;
		if (cases[i].at)
			assert_int_equal(integrity_time_parse(cases[i].at, &at), 0);
		int r = integrity_history_lookup(h, cases[i].key, cases[i].boot, at, &res);
		if (r != cases[i].r)
			fail_msg("case %zu: %s boot %s at %s: %d, wanted %d", i, cases[i].key,
				 cases[i].boot ? cases[i].boot : "-", cases[i].at ? cases[i].at : "-", r, cases[i].r);
		if (r == 0) {
			assert_string_equal(integrity_resolve_name(res), cases[i].name);
			integrity_resolve_free(res);
		}
	}
	integrity_history_free(h);
}

/* Many writers at once: every line whole. */
static void test_history_concurrent(void **state)
{
	char path[PATH_MAX], name[32];
	enum { WRITERS = 16, EACH = 50 };
	struct integrity_history *h;

	snprintf(path, sizeof(path), "%s/concurrent", tmpdir);
	for (int w = 0; w < WRITERS; w++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			const char *links[] = { "/dev/disk/by-partuuid/0123456789abcdef0123456789abcdef" };
			for (int i = 0; i < EACH; i++) {
				snprintf(name, sizeof(name), "w%dp%d", w, i);
				struct integrity_history_event ev = {
					.action = "add", .major = 259, .minor = (unsigned)(w * EACH + i),
					.name = name, .links = links, .nlinks = 1,
				};
				if (integrity_history_append(path, &ev) < 0)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;
		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	assert_int_equal(integrity_history_open(path, &h), 0);
	assert_int_equal(integrity_history_count(h), WRITERS * EACH);
	assert_int_equal(integrity_history_bad_lines(h), 0);
	integrity_history_free(h);
}

/* Past the limit the file moves to .1; lookups read both. */
static void test_history_rotation(void **state)
{
	char path[PATH_MAX], old[PATH_MAX + 2];
	struct integrity_history *h;
	struct integrity_resolve *res;
	struct stat st;
	const char *links[] = { "/dev/disk/by-partuuid/first" };
	struct integrity_history_event ev = {
		.action = "add", .major = 259, .minor = 1, .name = "loop0p1", .links = links, .nlinks = 1,
	};

	snprintf(path, sizeof(path), "%s/rotate", tmpdir);
	snprintf(old, sizeof(old), "%s.1", path);
	assert_int_equal(integrity_history_append(path, &ev), 0);
	assert_int_equal(truncate(path, INTEGRITY_HISTORY_MAX_SIZE), 0);	/* NULs: unreadable lines */
	ev.minor = 2;
	ev.name = "loop0p2";
	assert_int_equal(integrity_history_append(path, &ev), 0);
	assert_int_equal(stat(old, &st), 0);
	assert_true(st.st_size >= (off_t)INTEGRITY_HISTORY_MAX_SIZE);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size < 512);
	assert_int_equal(integrity_history_open(path, &h), 0);
	assert_int_equal(integrity_history_lookup(h, "259:1", "0", INTEGRITY_TIME_END, &res), 0);
	integrity_resolve_free(res);
	assert_int_equal(integrity_history_lookup(h, "259:2", "0", INTEGRITY_TIME_END, &res), 0);
	integrity_resolve_free(res);
	integrity_history_free(h);
}

/* Names too long for one atomic write are dropped, not the line. */
static void test_history_long_line(void **state)
{
	char path[PATH_MAX], link[1100];
	const char *links[8];
	struct integrity_history *h;
	struct integrity_resolve *res;

	memset(link, 'a', sizeof(link) - 1);
	link[sizeof(link) - 1] = '\0';
	memcpy(link, "/dev/disk/by-label/", 19);
	for (size_t i = 0; i < 8; i++)
		links[i] = link;
	struct integrity_history_event ev = {
		.action = "add", .major = 8, .minor = 0, .name = "sda", .links = links, .nlinks = 8,
	};
	snprintf(path, sizeof(path), "%s/long", tmpdir);
	assert_int_equal(integrity_history_append(path, &ev), 0);
	assert_int_equal(integrity_history_open(path, &h), 0);
	assert_int_equal(integrity_history_lookup(h, "8:0", "0", INTEGRITY_TIME_END, &res), 0);
	assert_int_equal(integrity_resolve_link_count(res), 1);	/* sorted, duplicates dropped */
	integrity_resolve_free(res);
	integrity_history_free(h);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size <= PIPE_BUF);
}

/* ------------------------------------------------------------------ policy */

static void test_policy_parse(void **state)
{
	char path[PATH_MAX];
	struct integrity_policy *pol;
	unsigned line;

	snprintf(path, sizeof(path), "%s/missing.conf", tmpdir);
	assert_int_equal(integrity_policy_load(path, &pol, &line), 0);
	assert_int_equal(integrity_policy_section_count(pol), 0);
	integrity_policy_free(pol);

	snprintf(path, sizeof(path), "%s/ok.conf", tmpdir);
	write_file(path, "# comment\n\n[device]\nread-verify = on\n\n[Device]\n  model = ST*|WD*  \n"
			 "transport = scsi\nWRITE-GENERATE=off\n");
	assert_int_equal(integrity_policy_load(path, &pol, &line), 0);
	assert_int_equal(integrity_policy_section_count(pol), 2);
	integrity_policy_free(pol);

	const struct {
		const char *text;
		unsigned line;
	} bad[] = {
		{ "read-verify = on\n", 1 },			/* outside a section */
		{ "[device]\nread-verify = maybe\n", 2 },
		{ "[device]\ncolour = blue\n", 2 },
		{ "[disk]\n", 1 },
		{ "[device]\nmodel = a\nmodel = b\n", 3 },
		{ "[device]\nno equals sign\n", 2 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i].text);
		assert_int_equal(integrity_policy_load(path, &pol, &line), -EINVAL);
		assert_int_equal(line, bad[i].line);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replace_chars),
		cmocka_unit_test(test_replace_whitespace),
		cmocka_unit_test(test_escape_property),
		cmocka_unit_test(test_link_kinds),
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_history_append_and_read),
		cmocka_unit_test(test_history_boots),
		cmocka_unit_test(test_history_concurrent),
		cmocka_unit_test(test_history_rotation),
		cmocka_unit_test(test_history_long_line),
		cmocka_unit_test(test_policy_parse),
	};

	return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
