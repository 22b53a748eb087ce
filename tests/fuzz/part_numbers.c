/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * part delete's partition numbers (cmd/part.c): "N", "N-M" and lists
 * "N,M-K" in any number of arguments, against a GPT image with partitions
 * 1 to 3 made once.
 */
#include "../../cmd/common.c"
#include "../../cmd/part.c"

#include <limits.h>

#include "fuzz.h"

static struct integrity_part_disk *disk;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[PATH_MAX];
	struct integrity_part_error err;
	struct integrity_part_plan *plan;
	struct integrity_part_spec spec = { .label = "gpt", .count = 3, .size = 1 << 20 };

	snprintf(path, sizeof(path), "%s/numbers.img", fuzz_dir());
	fuzz_write_file(path, NULL, 0, 16 << 20);
	FUZZ_CHECK(integrity_part_disk_open(&disk, path, INTEGRITY_PART_WRITE, &err) == 0);
	FUZZ_CHECK(integrity_part_plan_create(disk, &spec, &plan, &err) == 0);
	FUZZ_CHECK(integrity_part_plan_apply(plan, &err) == 0);
	integrity_part_plan_free(plan);
	FUZZ_CHECK(integrity_part_disk_reload(disk, &err) == 0);
	FUZZ_CHECK(integrity_part_disk_find(disk, 3) && !integrity_part_disk_find(disk, 4));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *f[5], *args[5];
	char *buf = fuzz_fields(data, size, f, 4);
	unsigned *nums = NULL;
	size_t n = 0, nargs = 0;

	for (size_t i = 0; i < 4; i++)
		if (f[i][0] || i == 0)
			args[nargs++] = f[i];
	args[nargs] = NULL;
	if (parse_numbers("numbers.img", args, disk, &nums, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(nums[i] >= 1 && nums[i] <= 65535);
	}
	free(nums);
	free(buf);
	return 0;
}
