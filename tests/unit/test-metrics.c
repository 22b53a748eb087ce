/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Prometheus metrics on small sysfs trees: the device label and its
 * fallbacks, label escapes, the inventory's md rows and the end of a check
 * carried from the previous file, bad arguments.
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

#include "libintegrity.h"
#include "sysfs-fixture.h"

static int setup(void **state)
{
	(void)state;
	fixture_new("test-metrics");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fixture_remove();
}

static char *render(void (*fn)(FILE *f, void *data), void *data)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(f, data);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void escape_one(FILE *f, void *data)
{
	integrity_metrics_escape(f, data);
}

static void test_escape(void **state)
{
	(void)state;
	char *out = render(escape_one, "a\"b\\c\nd");
	assert_string_equal(out, "a\\\"b\\\\c\\nd");
	free(out);
}

static void test_device_label(void **state)
{
	struct integrity_context *ctx;
	struct integrity_device *dev;
	char dir[PATH_MAX], label[PATH_MAX];

	(void)state;
	disk("loop7", "7:7", 2048, 512);
	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/loop7", root);
	mkdirs("%s/loop", dir);
	put(dir, "loop/backing_file", "/srv/images/a \"b\".img");
	part("loop7", "loop7p2", "259:9", 2, 2048, 1024);
	disk("vdz", "254:0", 2048, 512);
	assert_int_equal(integrity_context_new(&ctx, root), 0);

	assert_int_equal(integrity_device_new(ctx, "loop7", &dev), 0);
	assert_int_equal(integrity_metrics_device_label(dev, label, sizeof(label)), 0);
	assert_string_equal(label, "/srv/images/a \"b\".img");
	/* Too short: an error, never a cut name. */
	assert_int_equal(integrity_metrics_device_label(dev, label, 8), -ENAMETOOLONG);
	integrity_device_free(dev);

	assert_int_equal(integrity_device_new(ctx, "loop7p2", &dev), 0);
	assert_int_equal(integrity_metrics_device_label(dev, label, sizeof(label)), 0);
	assert_string_equal(label, "/srv/images/a \"b\".img-part2");
	integrity_device_free(dev);

	assert_int_equal(integrity_device_new(ctx, "vdz", &dev), 0);
	assert_int_equal(integrity_metrics_device_label(dev, label, sizeof(label)), 0);
	assert_string_equal(label, "/dev/vdz");
	integrity_device_free(dev);

	/* A regular file: its absolute path. */
	snprintf(dir, sizeof(dir), "%s/devices/virtual/block/vdz/size", root);
	assert_int_equal(integrity_metrics_target_label(ctx, dir, label, sizeof(label)), 0);
	assert_string_equal(label, dir);
	assert_int_equal(integrity_metrics_target_label(ctx, "/nonexistent/x", label, sizeof(label)), -ENOENT);
	assert_int_equal(integrity_metrics_target_label(NULL, dir, label, sizeof(label)), -EINVAL);
	integrity_context_free(ctx);
}

struct inv {
	struct integrity_device **devs;
	size_t n;
	FILE *previous;
	double now;
	int r;
};

static void inventory(FILE *f, void *data)
{
	struct inv *v = data;

	v->r = integrity_metrics_inventory(v->devs, v->n, v->previous, v->now, f);
}

static void test_md_check_end(void **state)
{
	struct integrity_context *ctx;
	char md[PATH_MAX];
	struct inv v = { .now = 1700000123 };

	(void)state;
	disk("md5", "9:5", 2048, 512);
	md_array("md5", "raid1", 2, 0, 0, 1024);
	snprintf(md, sizeof(md), "%s/devices/virtual/block/md5/md", root);
	put(md, "mismatch_cnt", "256");
	put(md, "sync_action", "check");
	put(md, "last_sync_action", "resync");
	assert_int_equal(integrity_context_new(&ctx, root), 0);
	assert_int_equal(integrity_device_list(ctx, &v.devs, &v.n), 0);

	char *first = render(inventory, &v);
	assert_int_equal(v.r, 0);
	assert_non_null(strstr(first, "integrityctl_device_info{device=\"/dev/md5\",kname=\"md5\","));
	assert_non_null(strstr(first, "\nintegrityctl_md_mismatch_sectors{device=\"/dev/md5\"} 256\n"));
	assert_non_null(strstr(first, "\nintegrityctl_md_sync_action{device=\"/dev/md5\",action=\"check\"} 1\n"));
	assert_non_null(strstr(first, "\nintegrityctl_md_last_sync_action{device=\"/dev/md5\",action=\"resync\"} 1\n"));
	assert_null(strstr(first, "\nintegrityctl_md_last_check_timestamp_seconds{"));
	/* Not a disk that can protect: no protection row. */
	assert_null(strstr(first, "integrityctl_protection_enabled{"));

	/* The check is over: seen running before, its end is now. */
	put(md, "sync_action", "idle");
	put(md, "last_sync_action", "check");
	v.previous = fmemopen(first, strlen(first), "r");
	assert_non_null(v.previous);
	char *second = render(inventory, &v);
	fclose(v.previous);
	assert_non_null(strstr(second, "\nintegrityctl_md_last_check_timestamp_seconds{device=\"/dev/md5\"} 1700000123\n"));

	/* Later: carried over, not moved. */
	v.now = 1800000000;
	v.previous = fmemopen(second, strlen(second), "r");
	char *third = render(inventory, &v);
	fclose(v.previous);
	assert_non_null(strstr(third, "\nintegrityctl_md_last_check_timestamp_seconds{device=\"/dev/md5\"} 1700000123\n"));
	/* No previous file: not known, not written. */
	v.previous = NULL;
	char *fourth = render(inventory, &v);
	assert_null(strstr(fourth, "integrityctl_md_last_check_timestamp_seconds{"));

	assert_int_equal(integrity_metrics_inventory(v.devs, v.n, NULL, 0, NULL), -EINVAL);
	assert_int_equal(integrity_metrics_inventory(NULL, 1, NULL, 0, stdout), -EINVAL);
	free(first);
	free(second);
	free(third);
	free(fourth);
	integrity_device_list_free(v.devs, v.n);
	integrity_context_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test_setup_teardown(test_device_label, setup, teardown),
		cmocka_unit_test_setup_teardown(test_md_check_end, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
