/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scrub reports: bad blocks counted per device above the target; what
 * an md repair does with each bad block. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "job.h"

static void place(struct integrity_stack_place *p, const char *device, uint64_t lba)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->device, sizeof(p->device), "%s", device);
	p->lba = lba;
}

/* Each device once, in the order first seen, with the blocks of every
 * record whose chain names it. */
static void totals_in_order_first_seen(void **state)
{
	struct integrity_stack_place a[2], b[1], c[2];
	struct job_chain chains[] = { { a, 2 }, { b, 1 }, { NULL, 0 }, { c, 2 } };
	struct integrity_scrub_error errs[4] = { { .count = 1 }, { .count = 2 }, { .count = 8 }, { .count = 4 } };
	struct job_above_total *t;
	size_t n;

	place(&a[0], "sda1", 10);
	place(&a[1], "md0", 2);
	place(&b[0], "sda1", 20);
	place(&c[0], "sda2", 5);
	place(&c[1], "md0", 900);
	assert_int_equal(job_above_totals(chains, errs, 4, &t, &n), 0);
	assert_int_equal(n, 3);
	assert_string_equal(t[0].device, "sda1");
	assert_int_equal(t[0].bad_blocks, 3);
	assert_string_equal(t[1].device, "md0");
	assert_int_equal(t[1].bad_blocks, 5);
	assert_string_equal(t[2].device, "sda2");
	assert_int_equal(t[2].bad_blocks, 4);
	free(t);

	assert_int_equal(job_above_totals(chains, errs, 0, &t, &n), 0);
	assert_int_equal(n, 0);
	assert_null(t);
}

/* 100,000 bad runs, each in a partition of its own below one array: every
 * sum right (a pass over every record per record would not end in a test's
 * lifetime). */
#define RUNS 100000
static void totals_of_many_runs(void **state)
{
	struct integrity_stack_place *p = calloc(2 * RUNS, sizeof(*p));
	struct job_chain *chains = calloc(RUNS, sizeof(*chains));
	struct integrity_scrub_error *errs = calloc(RUNS, sizeof(*errs));
	struct job_above_total *t;
	size_t n;
	char name[32];

	assert_non_null(p);
	assert_non_null(chains);
	assert_non_null(errs);
	for (size_t i = 0; i < RUNS; i++) {
		snprintf(name, sizeof(name), "part%zu", i);
		place(&p[2 * i], name, i);
		place(&p[2 * i + 1], "md0", i);
		chains[i] = (struct job_chain){ &p[2 * i], 2 };
		errs[i].count = 1 + i % 3;
	}
	assert_int_equal(job_above_totals(chains, errs, RUNS, &t, &n), 0);
	assert_int_equal(n, RUNS + 1);
	uint64_t all = 0;
	for (size_t i = 0; i < RUNS; i++)
		all += 1 + i % 3;
	/* part0, md0, part1, part2, ...: the order first seen */
	assert_string_equal(t[0].device, "part0");
	assert_string_equal(t[1].device, "md0");
	assert_int_equal(t[1].bad_blocks, all);
	for (size_t i = 1; i < RUNS; i++) {
		snprintf(name, sizeof(name), "part%zu", i);
		assert_string_equal(t[i + 1].device, name);
		assert_int_equal(t[i + 1].bad_blocks, 1 + i % 3);
	}
	free(t);
	free(p);
	free(chains);
	free(errs);
}

static struct job_repair_item item(uint64_t lba, uint64_t count, const char *member)
{
	struct job_repair_item it = { .b = { .lba = lba, .count = count } };

	snprintf(it.b.device, sizeof(it.b.device), "md0");
	snprintf(it.b.member, sizeof(it.b.member), "%s", member);
	return it;
}

/* A block failing guard and ref on one copy of a 2-way mirror is two
 * records of one member: the other copy is good, so it is repaired. */
static void repair_two_records_of_one_copy(void **state)
{
	struct job_repair_item items[] = { item(1000, 1, "nvme0n1"), item(1000, 1, "nvme0n1") };
	enum integrity_scrub_repair_result v[2];
	bool skip[2];
	size_t n = 2;

	job_repair_plan(items, n, 2, 1, v, skip);
	assert_int_equal(v[0], INTEGRITY_SCRUB_REPAIRED);
	assert_int_equal(v[1], INTEGRITY_SCRUB_REPAIRED);
	/* and md is asked once for it */
	job_repair_merge(items, &n);
	assert_int_equal(n, 1);
	job_repair_plan(items, n, 2, 1, v, skip);
	assert_int_equal(v[0], INTEGRITY_SCRUB_REPAIRED);
	assert_false(skip[0]);
}

/* Bad on both copies: told once, left alone, and so is its neighbour
 * within md's window; a block far from it is repaired. */
static void repair_bad_on_every_copy(void **state)
{
	struct job_repair_item items[] = {
		item(4000, 1, "nvme1n1"), item(4000, 1, "nvme0n1"), item(4000, 1, "nvme0n1"),
		item(1000, 1, "nvme0n1"), item(4050, 1, "nvme1n1"),
	};
	enum integrity_scrub_repair_result v[5];
	bool skip[5];
	size_t n = 5;

	job_repair_merge(items, &n);
	assert_int_equal(n, 4);
	assert_int_equal(items[0].b.lba, 1000);
	assert_string_equal(items[1].b.member, "nvme0n1");
	assert_string_equal(items[2].b.member, "nvme1n1");
	job_repair_plan(items, n, 2, 1, v, skip);
	assert_int_equal(v[0], INTEGRITY_SCRUB_REPAIRED);
	assert_false(skip[0]);
	assert_int_equal(v[1], INTEGRITY_SCRUB_REPAIR_BAD_EVERYWHERE);
	assert_false(skip[1]);
	assert_true(skip[2]);
	assert_int_equal(v[3], INTEGRITY_SCRUB_REPAIR_NEXT_TO_BAD);
	/* a three-way mirror still has a good copy */
	job_repair_plan(items, n, 3, 1, v, skip);
	assert_int_equal(v[1], INTEGRITY_SCRUB_REPAIRED);
	assert_int_equal(v[3], INTEGRITY_SCRUB_REPAIRED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(totals_in_order_first_seen),
		cmocka_unit_test(totals_of_many_runs),
		cmocka_unit_test(repair_two_records_of_one_copy),
		cmocka_unit_test(repair_bad_on_every_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
