/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The partition calls' structs reach the library with the caller's sizeof:
 * an older caller's shorter ones still work, a newer caller's longer spec
 * only when the fields this library does not know are zero. */
#include "config.h"
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "libintegrity.h"

struct image {
	char path[64];
	struct integrity_part_disk *disk;
};

/* An empty 64 MiB image file (sparse), opened for planning. */
static int image_setup(void **state)
{
	struct image *img = calloc(1, sizeof(*img));
	struct integrity_part_error err;

	assert_non_null(img);
	snprintf(img->path, sizeof(img->path), "/tmp/test-part-XXXXXX");
	int fd = mkstemp(img->path);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 64 << 20), 0);
	close(fd);
	assert_int_equal(integrity_part_disk_open(&img->disk, img->path, 0, &err), 0);
	*state = img;
	return 0;
}

static int image_teardown(void **state)
{
	struct image *img = *state;

	integrity_part_disk_free(img->disk);
	unlink(img->path);
	free(img);
	return 0;
}

/* Through the header's macros: the caller's own sizes. */
static void test_current_sizes(void **state)
{
	struct image *img = *state;
	struct integrity_part_spec spec = { .label = "gpt", .count = 2, .size = 1 << 20, .name_prefix = "p" };
	struct integrity_part_plan *plan = NULL;
	struct integrity_part_error err;

	assert_int_equal(integrity_part_plan_create(img->disk, &spec, &plan, &err), 0);
	assert_int_equal(integrity_part_plan_count(plan), 2);
	assert_string_equal(integrity_part_plan_action(plan, 1)->name, "p2");
	integrity_part_plan_free(plan);
	spec.count = 0;
	assert_int_equal(integrity_part_plan_create(img->disk, &spec, &plan, &err), -EINVAL);
	assert_int_equal(err.err, -EINVAL);
	assert_string_equal(err.what, "bad spec");
}

/* An older caller knew a spec without name_prefix: it reads as NULL. */
static void test_older_spec(void **state)
{
	struct image *img = *state;
	struct integrity_part_spec spec = { .label = "gpt", .count = 1, .size = 1 << 20,
					    .name_prefix = (const char *)1 };
	struct integrity_part_plan *plan = NULL;

	assert_int_equal(integrity_part_plan_create_sized(img->disk, &spec,
							  offsetof(struct integrity_part_spec, name_prefix), &plan,
							  NULL, 0), 0);
	assert_int_equal(integrity_part_plan_count(plan), 1);
	assert_null(integrity_part_plan_action(plan, 0)->name);
	integrity_part_plan_free(plan);
}

/* A newer caller's spec: refused while a field this library does not know
 * is set, with the error filled. */
static void test_newer_spec(void **state)
{
	struct image *img = *state;
	struct {
		struct integrity_part_spec spec;
		uint64_t newer;
	} big = { .spec = { .label = "gpt", .count = 1, .size = 1 << 20 } };
	struct integrity_part_plan *plan = NULL;
	struct integrity_part_error err;

	assert_int_equal(integrity_part_plan_create_sized(img->disk, &big.spec, sizeof(big), &plan, &err,
							  sizeof(err)), 0);
	integrity_part_plan_free(plan);
	plan = NULL;
	big.newer = 1;
	assert_int_equal(integrity_part_plan_create_sized(img->disk, &big.spec, sizeof(big), &plan, &err,
							  sizeof(err)), -E2BIG);
	assert_null(plan);
	assert_int_equal(err.err, -E2BIG);
	assert_string_equal(err.what, "bad spec");
	assert_int_equal(integrity_part_plan_create_sized(img->disk, &big.spec, 0, &plan, NULL, 0), -EINVAL);
}

/* An older caller's shorter error record: filled no further than its size. */
static void test_older_error(void **state)
{
	struct image *img = *state;
	struct integrity_part_spec spec = { .count = 0 };
	struct integrity_part_plan *plan = NULL;
	union {
		struct integrity_part_error err;
		unsigned char bytes[sizeof(struct integrity_part_error)];
	} u;
	size_t older = offsetof(struct integrity_part_error, why);

	memset(&u, 0xa5, sizeof(u));
	assert_int_equal(integrity_part_plan_create_sized(img->disk, &spec, sizeof(spec), &plan, &u.err, older),
			 -EINVAL);
	assert_int_equal(u.err.err, -EINVAL);
	assert_string_equal(u.err.what, "bad spec");
	for (size_t i = older; i < sizeof(u.bytes); i++)
		assert_int_equal(u.bytes[i], 0xa5);
	/* The other calls take the size too. */
	memset(&u, 0xa5, sizeof(u));
	assert_int_equal(integrity_part_plan_delete_sized(img->disk, NULL, 0, &plan, &u.err, older), -EINVAL);
	assert_int_equal(u.err.err, -EINVAL);
	for (size_t i = older; i < sizeof(u.bytes); i++)
		assert_int_equal(u.bytes[i], 0xa5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_current_sizes, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_older_spec, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_newer_spec, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_older_error, image_setup, image_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
