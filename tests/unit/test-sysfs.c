/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sysfs layer on small trees laid out as the kernel's: numbers parsed
 * strictly (a malformed value is an error, never 0 or UINT64_MAX).
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

#include <cmocka.h>

#include "sysfs-fixture.h"
#include "sysfs.h"

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

	put(root, "plain", "12");
	put(root, "minus_one", "-1");
	put(root, "empty", "%s", "");
	put(root, "too_big", "18446744073709551616");
	put(root, "largest", "18446744073709551615");
	put(root, "hex", "0x10");
	put(root, "leading_blank", " 5");
	put(root, "plus", "+5");
	put(root, "word", "none");
	put(root, "most_negative", "-9223372036854775808");
	put(root, "below_most_negative", "-9223372036854775809");

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(numbers_are_parsed_strictly, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
