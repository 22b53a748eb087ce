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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_overlong),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
