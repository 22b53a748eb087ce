/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Partition tables read from an image file (part.c through libfdisk and
 * libblkid): opened, listed, and planned on as part list, create and
 * delete do.  The input is the start of the image, padded with zeros to
 * IMAGE_MIN bytes; GPT header and entry-array CRCs are recomputed so that
 * mutations reach past the checksums.
 */
#include "config.h"

#include <limits.h>

#include "libintegrity.h"
#include "fuzz.h"

#define IMAGE_MIN (64 * 1024)
#define SECTOR 512

static uint32_t crc32_ieee(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFF;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xEDB88320 : c >> 1;
	}
	return ~c;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A GPT header at this sector: the CRCs made right. */
static void fix_gpt(uint8_t *img, size_t size, uint64_t lba)
{
	uint8_t *h = img + lba * SECTOR;

	if ((lba + 1) * SECTOR > size || memcmp(h, "EFI PART", 8) != 0)
		return;
	uint64_t entries = le(h + 72, 8), n = le(h + 80, 4), esz = le(h + 84, 4), hsz = le(h + 12, 4);
	if (entries < size / SECTOR && n * esz <= size - entries * SECTOR && n * esz < (1u << 20))
		put_le32(h + 88, crc32_ieee(img + entries * SECTOR, (size_t)(n * esz)));
	if (hsz >= 92 && hsz <= SECTOR) {
		put_le32(h + 16, 0);
		put_le32(h + 16, crc32_ieee(h, (size_t)hsz));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	size_t isize = size < IMAGE_MIN ? IMAGE_MIN : (size + SECTOR - 1) / SECTOR * SECTOR;
	uint8_t *img = calloc(1, isize);
	struct integrity_part_disk *d;
	struct integrity_part_error err;

	FUZZ_CHECK(img);
	memcpy(img, data, size);
	fix_gpt(img, isize, 1);
	fix_gpt(img, isize, isize / SECTOR - 1);
	snprintf(path, sizeof(path), "%s/disk.img", fuzz_dir());
	fuzz_write_file(path, img, isize, 0);
	free(img);

	memset(&err, 0, sizeof(err));
	if (integrity_part_disk_open(&d, path, 0, &err) < 0) {
		FUZZ_CHECK(memchr(err.what, '\0', sizeof(err.what)) && memchr(err.why, '\0', sizeof(err.why)));
		return 0;
	}
	FUZZ_CHECK(integrity_part_disk_sector_size(d) >= SECTOR);
	FUZZ_CHECK(!integrity_part_disk_is_blockdev(d));
	const char *label = integrity_part_disk_label(d), *id = integrity_part_disk_id(d);
	FUZZ_CHECK(!label || strlen(label) < 64);
	FUZZ_CHECK(!id || strlen(id) < 128);
	for (size_t i = 0; i < integrity_part_disk_problem_count(d); i++)
		FUZZ_CHECK(integrity_part_disk_problem(d, i));
	unsigned last = 0, nums[4];
	size_t nn = 0;
	for (size_t i = 0; i < integrity_part_disk_count(d); i++) {
		const struct integrity_part_entry *e = integrity_part_disk_entry(d, i);
		FUZZ_CHECK(e && e->partno > last);
		last = e->partno;
		FUZZ_CHECK(integrity_part_disk_find(d, e->partno) == e);
		FUZZ_CHECK(!e->in_kernel && e->kernel == INTEGRITY_PART_KERNEL_UNKNOWN);
		if (e->name)
			FUZZ_CHECK(strlen(e->name) < 1024);
		if (e->type)
			(void)strlen(e->type);
		if (e->uuid)
			(void)strlen(e->uuid);
		if (nn < 4)
			nums[nn++] = e->partno;
	}
	/* Plans, as a dry run makes them (nothing is written: no WRITE flag). */
	struct integrity_part_plan *plan;
	struct integrity_part_spec spec = { .count = 2, .size = 4096, .name_prefix = "p" };
	if (integrity_part_plan_create(d, &spec, &plan, &err) == 0) {
		FUZZ_CHECK(integrity_part_plan_count(plan) == 2);
		integrity_part_plan_free(plan);
	}
	if (nn && integrity_part_plan_delete(d, nums, nn, &plan, &err) == 0) {
		FUZZ_CHECK(integrity_part_plan_count(plan) == nn);
		integrity_part_plan_free(plan);
	}
	integrity_part_disk_free(d);
	return 0;
}
