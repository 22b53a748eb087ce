/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What devices and files hand the library, at its limits: udev's encoding of
 * long hostile names, NVMe's MDTS, history lines with numbers out of range,
 * times, and the size formatter. */
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
#include <unistd.h>

#include <cmocka.h>

#include "device.h"
#include "devt.h"

/* ------------------------------------------------------------------ udev encoding */

static char *repeat(const char *unit, size_t n)
{
	size_t len = strlen(unit);
	char *s = malloc(len * n + 1);

	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		memcpy(s + i * len, unit, len);
	s[len * n] = '\0';
	return s;
}

/* 64 '!' encode to exactly 256 bytes, 22 lone UTF-16 surrogates (as libblkid
 * turns a GPT name into UTF-8: 3 bytes each, escaped one by one) to 264:
 * libblkid's escape writes past the limit it is given.  No link comes from a value that does not fit (ASan builds
 * see any stray byte). */
static void test_encode_overlong(void **state)
{
	char out[PATH_MAX];
	char *bangs = repeat("!", 64), *nonchars = repeat("\xed\xa0\x80", 22), *fits = repeat("!", 63);
	struct probe_truth t = {
		.probed = true, .is_gpt = true, .part_name = nonchars, .fs_label = bangs,
		.fs_usage = (char *)"filesystem",
	};
	struct strv links = { 0 };

	assert_int_equal(udev_value_link("by-label", bangs, out, sizeof(out)), -ENAMETOOLONG);
	assert_int_equal(udev_value_link("by-partlabel", nonchars, out, sizeof(out)), -ENAMETOOLONG);
	assert_int_equal(udev_value_link("by-label", fits, out, sizeof(out)), 0);
	assert_int_equal(strlen(out), strlen("/dev/disk/by-label/") + 63 * 4);
	assert_int_equal(udev_content_links(&t, &links), 0);
	assert_int_equal(links.n, 0);
	strv_clear(&links);
	free(bangs);
	free(nonchars);
	free(fits);
}

/* ------------------------------------------------------------------ NVMe MDTS */

static void test_nvme_max_transfer(void **state)
{
	assert_int_equal(nvme_max_transfer(0, 0), 0);		/* no limit */
	assert_int_equal(nvme_max_transfer(5, 0), 128 * 1024);	/* 4 KiB pages assumed */
	assert_int_equal(nvme_max_transfer(5, 4096), 128 * 1024);
	assert_int_equal(nvme_max_transfer(5, 65536), 2 * 1024 * 1024);
	assert_int_equal(nvme_max_transfer(19, 4096), 1u << 31);
	/* Would wrap at 32 bits, or shift past the width: capped. */
	for (unsigned mdts = 20; mdts < 256; mdts++)
		assert_int_equal(nvme_max_transfer((uint8_t)mdts, 4096), 1u << 31);
	assert_int_equal(nvme_max_transfer(16, 1ULL << 27), 1u << 31);
	assert_int_equal(nvme_max_transfer(1, UINT64_MAX), 1u << 31);
}

/* ------------------------------------------------------------------ history and time */

static char tmpdir[64];

static int setup_dir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-input.XXXXXX");
	assert_non_null(mkdtemp(tmpdir));
	return 0;
}

static int remove_dir(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_history_numbers_out_of_range(void **state)
{
	static const char *const bad[] = {
		"9223372036855",	/* * 10^6 overflows int64 */
		"253402300800",		/* past 9999 */
		"-1", "+1", "1.", "1.-5", "0x10", "1e3",
	};
	char path[PATH_MAX], boot[64];
	struct integrity_history *h;
	struct integrity_resolve *res;

	assert_int_equal(current_boot_id(boot, sizeof(boot)), 0);
	snprintf(path, sizeof(path), "%s/history", tmpdir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		fprintf(f, "T %s %s add 259:%zu loop0p1 - loop0 1\n", bad[i], boot, i);
	/* Numbers out of range in the other fields. */
	fprintf(f, "T 1700000000 %s add 259:1048576 loop0p1 - loop0 1\n", boot);
	fprintf(f, "T 1700000000 %s add 4096:1 loop0p1 - loop0 1\n", boot);
	fprintf(f, "T 1700000000 %s add 259:-1 loop0p1 - loop0 1\n", boot);
	fprintf(f, "T 1700000000 %s add 259:30 loop0p1 18446744073709551616 loop0 1\n", boot);
	fprintf(f, "T 1700000000 %s add 259:31 loop0p1 - loop0 -1\n", boot);
	fprintf(f, "T 1700000000.5 %s add 259:40 loop0p1 7 loop0 4294967295\n", boot);
	fclose(f);

	assert_int_equal(integrity_history_open(path, &h), 0);
	assert_int_equal(integrity_history_count(h), 1);
	assert_int_equal(integrity_history_bad_lines(h), sizeof(bad) / sizeof(bad[0]) + 5);
	/* Nothing from before the epoch answers for a time after it. */
	assert_int_equal(integrity_history_lookup(h, "259:0", "0", 1000000, &res), -ENODEV);
	assert_int_equal(integrity_history_lookup(h, "259:40", "0", INTEGRITY_TIME_END, &res), 0);
	assert_true(integrity_resolve_time(res) == 1700000000LL * 1000000 + 500000);
	assert_int_equal(integrity_resolve_partno(res), 4294967295u);
	integrity_resolve_free(res);
	integrity_history_free(h);
}

static void test_time_range(void **state)
{
	static const char *const bad[] = {
		"@-1", "@ 1", "@+1", "@1.", "@9223372036855", "@253402300800", "@0x10", "@",
		"1969-12-31T23:59:59Z", "0000-01-01T00:00:00Z",
	};
	int64_t t;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(integrity_time_parse(bad[i], &t), -EINVAL);
	assert_int_equal(integrity_time_parse("@0", &t), 0);
	assert_true(t == 0);
	assert_int_equal(integrity_time_parse("@253402300799.999999999", &t), 0);
	assert_true(t == 253402300799LL * 1000000 + 999999);
	assert_int_equal(integrity_time_parse("9999-12-31T23:59:59Z", &t), 0);
	assert_true(t == 253402300799LL * 1000000);
}

/* ------------------------------------------------------------------ sizes */

/* Each checked against lsblk (util-linux 2.38.1) on a loop device of the size. */
static void test_size_string(void **state)
{
	static const struct {
		uint64_t bytes;
		const char *text;
	} cases[] = {
		{ 0, "0B" },
		{ 512, "512B" },
		{ 1023, "1023B" },
		{ 1024, "1K" },
		{ 1536, "1.5K" },
		{ 1048064, "1023.5K" },
		{ 64ULL << 20, "64M" },
		{ (1ULL << 30) - 40960, "1024M" },	/* 1023.96M rounds up, unit kept */
		{ (1ULL << 30) - 512, "1024M" },
		{ 1572864000, "1.5G" },
		{ (1ULL << 30) + 100 * (1ULL << 20), "1.1G" },
		{ (1ULL << 30) + 51 * (1ULL << 20), "1G" },
		{ 5 * (1ULL << 40) + 512, "5T" },
		{ UINT64_MAX, "16E" },
	};
	char buf[16];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(integrity_size_string(cases[i].bytes, buf, sizeof(buf)), cases[i].text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_overlong),
		cmocka_unit_test(test_nvme_max_transfer),
		cmocka_unit_test_setup_teardown(test_history_numbers_out_of_range, setup_dir, remove_dir),
		cmocka_unit_test(test_time_range),
		cmocka_unit_test(test_size_string),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
