/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The stack arithmetic against layouts written down independently: the
 * chunk diagrams of md(4) and the Linux RAID documentation as literal
 * tables, a reference that places parity and data by the layouts' verbal
 * definitions, and, for every small geometry, a check that member and array
 * sectors correspond one to one in both directions.
 */
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

#include "stackmap.h"

#define P -1
#define Q -2

/* The chunk number each slot holds in each stripe, P and Q for parity. */
static void check_table(unsigned level, unsigned layout, unsigned n, unsigned rows, const int *table)
{
	const uint32_t cs = 8;
	struct stackmap_md g = { .level = level, .raid_disks = n, .chunk_sectors = cs, .layout = layout };
	struct stackmap_place pl[4];

	for (unsigned row = 0; row < rows; row++)
		for (unsigned slot = 0; slot < n; slot++) {
			int want = table[row * n + slot];
			uint64_t a = 0;
			/* sector 3 of the chunk: offsets inside a chunk carry over */
			int role = stackmap_md_from_member(&g, slot, 0, (uint64_t)row * cs + 3, &a);

			if (want < 0) {
				assert_int_equal(role, STACKMAP_PARITY);
				continue;
			}
			assert_int_equal(role, STACKMAP_DATA);
			assert_int_equal(a, (uint64_t)want * cs + 3);
			assert_int_equal(stackmap_md_to_members(&g, a, pl, 4), 1);
			assert_int_equal(pl[0].slot, slot);
			assert_int_equal(pl[0].sector, (uint64_t)row * cs + 3);
		}
}

/* RAID5 on four disks, as the Linux RAID wiki draws the four layouts. */
static void raid5_known_diagrams(void **state)
{
	(void)state;
	static const int la[] = { 0, 1, 2, P, 3, 4, P, 5, 6, P, 7, 8, P, 9, 10, 11 };
	static const int ra[] = { P, 0, 1, 2, 3, P, 4, 5, 6, 7, P, 8, 9, 10, 11, P };
	static const int ls[] = { 0, 1, 2, P, 4, 5, P, 3, 8, P, 6, 7, P, 9, 10, 11 };
	static const int rs[] = { P, 0, 1, 2, 5, P, 3, 4, 7, 8, P, 6, 9, 10, 11, P };
	static const int p0[] = { P, 0, 1, 2, P, 3, 4, 5 };
	static const int pn[] = { 0, 1, 2, P, 3, 4, 5, P };

	check_table(5, STACKMAP_MD_LEFT_ASYMMETRIC, 4, 4, la);
	check_table(5, STACKMAP_MD_RIGHT_ASYMMETRIC, 4, 4, ra);
	check_table(5, STACKMAP_MD_LEFT_SYMMETRIC, 4, 4, ls);
	check_table(5, STACKMAP_MD_RIGHT_SYMMETRIC, 4, 4, rs);
	check_table(5, STACKMAP_MD_PARITY_0, 4, 2, p0);
	check_table(5, STACKMAP_MD_PARITY_N, 4, 2, pn);
	/* RAID4: parity on the last disk whatever the layout word says */
	check_table(4, 0, 4, 2, pn);
}

/* RAID6 on five disks: Q follows P; asymmetric data skip them. */
static void raid6_known_diagrams(void **state)
{
	(void)state;
	static const int la[] = {
		Q, 0, 1, 2, P,
		3, 4, 5, P, Q,
		6, 7, P, Q, 8,
		9, P, Q, 10, 11,
		P, Q, 12, 13, 14,
	};
	static const int ls[] = {
		Q, 0, 1, 2, P,
		3, 4, 5, P, Q,
		7, 8, P, Q, 6,
		11, P, Q, 9, 10,
		P, Q, 12, 13, 14,
	};
	/* DDF N-continue: Q just before P, data from just after P */
	static const int nc[] = {
		0, 1, 2, Q, P,
		4, 5, Q, P, 3,
		8, Q, P, 6, 7,
		Q, P, 9, 10, 11,
		P, 12, 13, 14, Q,
	};
	/* left-symmetric-6: RAID5 left-symmetric on four disks, Q last */
	static const int ls6[] = {
		0, 1, 2, P, Q,
		4, 5, P, 3, Q,
		8, P, 6, 7, Q,
		P, 9, 10, 11, Q,
	};

	check_table(6, STACKMAP_MD_LEFT_ASYMMETRIC, 5, 5, la);
	check_table(6, STACKMAP_MD_LEFT_SYMMETRIC, 5, 5, ls);
	check_table(6, STACKMAP_MD_ROTATING_N_CONTINUE, 5, 5, nc);
	check_table(6, STACKMAP_MD_LEFT_SYMMETRIC_6, 5, 4, ls6);
}

/*
 * The reference: a stripe's roles from the layouts' definitions.  role[slot]
 * is the data index in the stripe, P or Q.
 */
static void ref_stripe(unsigned level, unsigned layout, unsigned n, uint64_t stripe, int *role)
{
	unsigned width = n, parities = level == 6 ? 2 : 1, base = layout;
	bool q_last = false;

	if (level == 6 && layout >= 16) {	/* "-6": RAID5 on n - 1 disks, Q last */
		width = n - 1;
		parities = 1;
		q_last = true;
		base = layout == 20 ? 4 : layout - 16;
	}
	if (level == 4)
		base = 5;
	for (unsigned i = 0; i < n; i++)
		role[i] = 0;
	int p, q = -1;
	bool fill_after = false;	/* symmetric: data start after the parity */
	switch (base) {
	case 0: case 2:			/* left: parity from the last disk leftwards */
		p = (int)(width - 1 - stripe % width);
		fill_after = base == 2;
		break;
	case 1: case 3: case 8:		/* right: from the first rightwards */
		p = (int)(stripe % width);
		fill_after = base == 3;
		break;
	case 9:				/* left, starting one stripe later */
		p = (int)(width - 1 - (stripe + 1) % width);
		break;
	case 10:
		p = (int)(width - 1 - stripe % width);
		q = (p + (int)width - 1) % (int)width;
		break;
	case 4:
		p = 0;
		q = parities == 2 ? 1 : -1;
		break;
	default:			/* 5: parity last */
		p = (int)(width - parities);
		q = parities == 2 ? p + 1 : -1;
		break;
	}
	if (parities == 2 && q < 0)
		q = (p + 1) % (int)width;
	if (q_last)
		q = (int)n - 1;
	role[p] = P;
	if (q >= 0)
		role[q] = Q;
	unsigned first = 0;
	if (fill_after)
		first = (unsigned)(parities == 2 ? q : p) + 1;
	if (base == 10)
		first = (unsigned)p + 1;
	int d = 0;
	for (unsigned k = 0; k < width; k++) {
		unsigned slot = (first + k) % width;
		if (role[slot] == 0 && !(slot == (unsigned)p) && !(q >= 0 && slot == (unsigned)q))
			role[slot] = ++d;	/* 1-based while filling */
	}
	for (unsigned i = 0; i < n; i++)
		if (role[i] > 0)
			role[i]--;
}

static void check_parity_layout(unsigned level, unsigned layout, unsigned n, uint32_t cs)
{
	const unsigned stripes = 3 * n;
	struct stackmap_md g = {
		.level = level, .raid_disks = n, .chunk_sectors = cs, .layout = layout,
		.dev_sectors = (uint64_t)stripes * cs + 5,	/* a ragged tail md rounds off */
	};
	unsigned data = n - (level == 6 ? 2 : 1);
	int role[32];
	struct stackmap_place pl[4];

	assert_int_equal(stackmap_md_check(&g), 0);
	assert_int_equal(stackmap_md_array_sectors(&g), (uint64_t)stripes * cs * data);
	for (uint64_t stripe = 0; stripe < stripes; stripe++) {
		ref_stripe(level, layout, n, stripe, role);
		for (unsigned slot = 0; slot < n; slot++)
			for (uint32_t off = 0; off < cs; off += cs / 2 + 1) {
				uint64_t m = stripe * cs + off, a = 0;
				int r = stackmap_md_from_member(&g, slot, 2048, 2048 + m, &a);

				if (role[slot] < 0) {
					assert_int_equal(r, STACKMAP_PARITY);
					continue;
				}
				assert_int_equal(r, STACKMAP_DATA);
				assert_int_equal(a, (stripe * data + (unsigned)role[slot]) * cs + off);
				assert_int_equal(stackmap_md_to_members(&g, a, pl, 4), 1);
				assert_int_equal(pl[0].slot, slot);
				assert_int_equal(pl[0].sector, m);
			}
	}
	uint64_t a;
	assert_int_equal(stackmap_md_from_member(&g, 0, 2048, 2047, &a), STACKMAP_UNMAPPED);
	assert_int_equal(stackmap_md_from_member(&g, 0, 2048, 2048 + (uint64_t)stripes * cs, &a),
			 STACKMAP_UNMAPPED);
	assert_int_equal(stackmap_md_to_members(&g, (uint64_t)stripes * cs * data, pl, 4), -ERANGE);
}

static void raid456_every_layout(void **state)
{
	(void)state;
	static const unsigned l5[] = { 0, 1, 2, 3, 4, 5 };
	static const unsigned l6[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };

	for (unsigned n = 3; n <= 7; n++) {
		check_parity_layout(4, 0, n, 8);
		for (size_t i = 0; i < sizeof(l5) / sizeof(l5[0]); i++) {
			check_parity_layout(5, l5[i], n, 8);
			check_parity_layout(5, l5[i], n, 1024);	/* 512 KiB, mdadm's default */
		}
	}
	for (unsigned n = 4; n <= 8; n++)
		for (size_t i = 0; i < sizeof(l6) / sizeof(l6[0]); i++)
			check_parity_layout(6, l6[i], n, 16);
	/* two disks of RAID5 are a mirror of data and parity */
	check_parity_layout(5, 2, 2, 8);
}

/* What raid5_compute_sector gives for the md0 of the VM tests: RAID5 of
 * three members, 512 KiB chunks, left-symmetric, data offset 2048. */
static void raid5_known_values(void **state)
{
	(void)state;
	struct stackmap_md g = { .level = 5, .raid_disks = 3, .chunk_sectors = 1024, .layout = 2 };
	struct stackmap_place pl[2];
	uint64_t a;

	/* array sector 1000: chunk 0, stripe 0, parity on slot 2, data on 0 */
	assert_int_equal(stackmap_md_to_members(&g, 1000, pl, 2), 1);
	assert_int_equal(pl[0].slot, 0);
	assert_int_equal(pl[0].sector, 1000);
	/* stripe 1 is "3 P 2": chunk 2 on slot 2, chunk 3 wraps to slot 0 */
	assert_int_equal(stackmap_md_to_members(&g, 2 * 1024 + 7, pl, 2), 1);
	assert_int_equal(pl[0].slot, 2);
	assert_int_equal(pl[0].sector, 1024 + 7);
	assert_int_equal(stackmap_md_from_member(&g, 0, 2048, 2048 + 1024 + 7, &a), STACKMAP_DATA);
	assert_int_equal(a, 3 * 1024 + 7);
	assert_int_equal(stackmap_md_from_member(&g, 1, 2048, 2048 + 1024 + 7, &a), STACKMAP_PARITY);
}

static void raid0_and_raid1(void **state)
{
	(void)state;
	struct stackmap_md r0 = { .level = 0, .raid_disks = 3, .chunk_sectors = 128,
				  .dev_sectors = 1000 };
	struct stackmap_md r1 = { .level = 1, .raid_disks = 2, .dev_sectors = 100000 };
	struct stackmap_place pl[4];
	uint64_t a;

	/* RAID0: chunks round-robin; 1000 sectors per member round down to 896 */
	assert_int_equal(stackmap_md_array_sectors(&r0), 3 * 896);
	for (uint64_t s = 0; s < 3 * 896; s++) {
		uint64_t chunk = s / 128;
		assert_int_equal(stackmap_md_to_members(&r0, s, pl, 4), 1);
		assert_int_equal(pl[0].slot, chunk % 3);
		assert_int_equal(pl[0].sector, chunk / 3 * 128 + s % 128);
		assert_int_equal(stackmap_md_from_member(&r0, pl[0].slot, 0, pl[0].sector, &a), STACKMAP_DATA);
		assert_int_equal(a, s);
	}
	assert_int_equal(stackmap_md_from_member(&r0, 1, 0, 900, &a), STACKMAP_UNMAPPED);
	assert_int_equal(stackmap_md_to_members(&r0, 3 * 896, pl, 4), -ERANGE);

	/* RAID1: every member holds it, at member LBA - data offset */
	assert_int_equal(stackmap_md_to_members(&r1, 1000, pl, 4), 2);
	assert_int_equal(pl[0].slot, 0);
	assert_int_equal(pl[1].slot, 1);
	assert_int_equal(pl[1].sector, 1000);
	assert_int_equal(stackmap_md_from_member(&r1, 1, 2048, 3048, &a), STACKMAP_DATA);
	assert_int_equal(a, 1000);
	assert_int_equal(stackmap_md_from_member(&r1, 1, 2048, 100, &a), STACKMAP_UNMAPPED);
	assert_int_equal(stackmap_md_to_members(&r1, 1000, pl, 1), -ENOBUFS);
}

/* RAID10 as md(4) and the Linux RAID wiki draw it: rows of chunks (A1 = 1). */
static void check_raid10_table(unsigned layout, unsigned n, unsigned rows, uint64_t dev_chunks,
			       const int *table)
{
	const uint32_t cs = 4;
	struct stackmap_md g = { .level = 10, .raid_disks = n, .chunk_sectors = cs, .layout = layout,
				 .dev_sectors = dev_chunks * cs };
	struct stackmap_place pl[8];
	unsigned copies = (layout & 0xff) * ((layout >> 8) & 0xff);

	for (unsigned row = 0; row < rows; row++)
		for (unsigned slot = 0; slot < n; slot++) {
			int chunk = table[row * n + slot] - 1;
			uint64_t a = 0, m = (uint64_t)row * cs + 1;

			if (chunk < 0) {
				/* a blank: nothing lives there */
				int r = stackmap_md_from_member(&g, slot, 0, m, &a);
				assert_int_equal(r, STACKMAP_UNMAPPED);
				continue;
			}
			assert_int_equal(stackmap_md_from_member(&g, slot, 0, m, &a), STACKMAP_DATA);
			assert_int_equal(a, (uint64_t)chunk * cs + 1);
			int k = stackmap_md_to_members(&g, a, pl, 8);
			assert_int_equal(k, (int)copies);
			bool found = false;
			for (int i = 0; i < k; i++)
				found |= pl[i].slot == slot && pl[i].sector == m;
			assert_true(found);
		}
}

static void raid10_known_diagrams(void **state)
{
	(void)state;
	static const int n2_3[] = { 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6 };
	/* far 2 on 3 disks, 4 chunks per disk: the second half rotated by one */
	static const int f2_3[] = { 1, 2, 3, 4, 5, 6, 3, 1, 2, 6, 4, 5 };
	static const int o2_3[] = { 1, 2, 3, 3, 1, 2, 4, 5, 6, 6, 4, 5 };
	/* far 2 on 4 disks with far sets of two (dm-raid's raid10_format far) */
	static const int f2s_4[] = { 1, 2, 3, 4, 2, 1, 4, 3 };

	check_raid10_table(0x102, 3, 4, 4, n2_3);
	check_raid10_table(0x201, 3, 4, 4, f2_3);
	check_raid10_table(0x10201, 3, 4, 4, o2_3);
	check_raid10_table(0x40201, 4, 2, 2, f2s_4);
}

/* Every RAID10 sector: its copies are distinct places, each maps back. */
static void raid10_round_trip(void **state)
{
	(void)state;
	static const unsigned layouts[] = { 0x102, 0x103, 0x201, 0x202, 0x301, 0x10201, 0x10202,
					    0x10301, 0x40201, 0x50201 };

	for (unsigned n = 2; n <= 8; n++)
		for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
			struct stackmap_md g = { .level = 10, .raid_disks = n, .chunk_sectors = 8,
						 .layout = layouts[l], .dev_sectors = 8 * 12 + 3 };
			if (stackmap_md_check(&g) < 0)
				continue;
			unsigned copies = (g.layout & 0xff) * ((g.layout >> 8) & 0xff);
			uint64_t size = stackmap_md_array_sectors(&g), members = 0;
			assert_true(size > 0);
			for (uint64_t s = 0; s < size; s++) {
				struct stackmap_place pl[16];
				int k = stackmap_md_to_members(&g, s, pl, 16);
				assert_int_equal(k, (int)copies);
				for (int i = 0; i < k; i++) {
					uint64_t a = 0;
					assert_true(pl[i].slot < n);
					assert_true(pl[i].sector < g.dev_sectors);
					for (int j = 0; j < i; j++)
						assert_false(pl[i].slot == pl[j].slot &&
							     pl[i].sector == pl[j].sector);
					assert_int_equal(stackmap_md_from_member(&g, pl[i].slot, 0,
										 pl[i].sector, &a),
							 STACKMAP_DATA);
					assert_int_equal(a, s);
				}
				members += (uint64_t)k;
			}
			/* and no member sector holds two array sectors */
			uint64_t mapped = 0;
			for (unsigned slot = 0; slot < n; slot++)
				for (uint64_t m = 0; m < g.dev_sectors; m++) {
					uint64_t a;
					if (stackmap_md_from_member(&g, slot, 0, m, &a) == STACKMAP_DATA)
						mapped++;
				}
			assert_int_equal(mapped, members);
		}
}

static void md_bad_geometry(void **state)
{
	(void)state;
	struct stackmap_md g = { .level = 5, .raid_disks = 3, .chunk_sectors = 0 };
	struct stackmap_place pl[2];
	uint64_t a;

	assert_int_equal(stackmap_md_check(&g), -EINVAL);
	g.chunk_sectors = 8;
	g.layout = 8;		/* a RAID6-only layout */
	assert_int_equal(stackmap_md_check(&g), -EINVAL);
	g.level = 6;
	g.raid_disks = 3;
	assert_int_equal(stackmap_md_check(&g), -EINVAL);
	g.level = 9;
	assert_int_equal(stackmap_md_check(&g), -EOPNOTSUPP);
	g = (struct stackmap_md){ .level = 10, .raid_disks = 3, .chunk_sectors = 8, .layout = 0x201 };
	assert_int_equal(stackmap_md_check(&g), -EOPNOTSUPP);	/* far copies need the size */
	g.chunk_sectors = 12;
	assert_int_equal(stackmap_md_check(&g), -EINVAL);
	g = (struct stackmap_md){ .level = 10, .raid_disks = 3, .chunk_sectors = 8, .layout = 0x202 };
	assert_int_equal(stackmap_md_check(&g), -EINVAL);	/* 4 copies on 3 disks */
	g = (struct stackmap_md){ .level = 1, .raid_disks = 2 };
	assert_int_equal(stackmap_md_from_member(&g, 2, 0, 0, &a), -EINVAL);
	g.raid_disks = 0;
	assert_int_equal(stackmap_md_to_members(&g, 0, pl, 2), -EINVAL);
}

/* ---------------------------------------------------------------- dm */

static void dm_linear_and_crypt(void **state)
{
	(void)state;
	struct stackmap_dm_target t;
	struct stackmap_place pl[2];
	uint64_t a;

	/* 777 on dm-0 is 2825 on the namespace below */
	assert_int_equal(stackmap_dm_parse(0, 100000, "linear", "259:3 2048", &t), 0);
	assert_int_equal(t.kind, STACKMAP_DM_LINEAR);
	assert_string_equal(t.devs[0].name, "259:3");
	assert_int_equal(stackmap_dm_to_below(&t, 777, pl, 2), 1);
	assert_int_equal(pl[0].sector, 2825);
	assert_int_equal(stackmap_dm_from_below(&t, 0, 2825, &a), STACKMAP_DATA);
	assert_int_equal(a, 777);
	assert_int_equal(stackmap_dm_from_below(&t, 0, 2047, &a), STACKMAP_UNMAPPED);
	assert_int_equal(stackmap_dm_from_below(&t, 0, 2048 + 100000, &a), STACKMAP_UNMAPPED);
	assert_int_equal(stackmap_dm_to_below(&t, 100000, pl, 2), -ERANGE);

	/* a second segment of a table starts at its own sector */
	assert_int_equal(stackmap_dm_parse(5000, 1000, "linear", "8:16 0", &t), 0);
	assert_int_equal(stackmap_dm_to_below(&t, 5001, pl, 2), 1);
	assert_int_equal(pl[0].sector, 1);
	assert_int_equal(stackmap_dm_to_below(&t, 4999, pl, 2), -ERANGE);
	assert_int_equal(stackmap_dm_from_below(&t, 0, 999, &a), STACKMAP_DATA);
	assert_int_equal(a, 5999);

	/* crypt: the IV offset (7) moves nothing; the data offset (4096) does */
	assert_int_equal(stackmap_dm_parse(0, 8192, "crypt",
					   "aes-xts-plain64 :64:logon:cryptsetup:abc 7 259:1 4096 "
					   "1 sector_size:4096", &t), 0);
	assert_int_equal(t.kind, STACKMAP_DM_CRYPT);
	assert_int_equal(stackmap_dm_to_below(&t, 800, pl, 2), 1);
	assert_int_equal(pl[0].sector, 4896);
	assert_int_equal(stackmap_dm_from_below(&t, 0, 4896, &a), STACKMAP_DATA);
	assert_int_equal(a, 800);

	assert_int_equal(stackmap_dm_parse(0, 8, "linear", "259:3", &t), -EINVAL);
	assert_int_equal(stackmap_dm_parse(0, 8, "linear", "259:3 x", &t), -EINVAL);
	assert_int_equal(stackmap_dm_parse(0, 8, "crypt", "aes 00 0 259:1", &t), -EINVAL);
}

static void dm_striped(void **state)
{
	(void)state;
	struct stackmap_dm_target t;
	struct stackmap_place pl[2];
	uint64_t a;

	/* three stripes of 128 sectors, each device's data at its own offset */
	assert_int_equal(stackmap_dm_parse(0, 3 * 1024, "striped", "3 128 8:0 100 8:16 200 8:32 300", &t), 0);
	assert_int_equal(t.ndevs, 3);
	for (uint64_t s = 0; s < 3 * 1024; s++) {
		uint64_t chunk = s / 128;
		unsigned dev = (unsigned)(chunk % 3);
		assert_int_equal(stackmap_dm_to_below(&t, s, pl, 2), 1);
		assert_int_equal(pl[0].slot, dev);
		assert_int_equal(pl[0].sector, 100 * (dev + 1) + chunk / 3 * 128 + s % 128);
		assert_int_equal(stackmap_dm_from_below(&t, dev, pl[0].sector, &a), STACKMAP_DATA);
		assert_int_equal(a, s);
	}
	assert_int_equal(stackmap_dm_from_below(&t, 1, 200 + 1024, &a), STACKMAP_UNMAPPED);
	assert_int_equal(stackmap_dm_from_below(&t, 3, 0, &a), -EINVAL);
	assert_int_equal(stackmap_dm_parse(0, 8, "striped", "2 128 8:0 0", &t), -EINVAL);
	assert_int_equal(stackmap_dm_parse(0, 8, "striped", "1 0 8:0 0", &t), -EINVAL);
}

static void dm_raid(void **state)
{
	(void)state;
	struct stackmap_dm_target t;
	struct stackmap_place pl[4];
	uint64_t a;

	/* LVM's raid1: two metadata/data pairs, no chunk size to speak of */
	assert_int_equal(stackmap_dm_parse(0, 4096, "raid", "raid1 1 0 2 253:0 253:1 253:2 253:3", &t), 0);
	assert_int_equal(t.kind, STACKMAP_DM_RAID);
	assert_int_equal(t.ndevs, 2);
	assert_string_equal(t.devs[0].name, "253:1");
	assert_string_equal(t.devs[1].name, "253:3");
	assert_int_equal(stackmap_dm_to_below(&t, 100, pl, 4), 2);
	assert_int_equal(pl[1].slot, 1);
	assert_int_equal(pl[1].sector, 100);
	assert_int_equal(stackmap_dm_from_below(&t, 1, 100, &a), STACKMAP_DATA);
	assert_int_equal(a, 100);

	/* raid5_ls over three images, data offset 2048 */
	assert_int_equal(stackmap_dm_parse(0, 2 * 4096, "raid",
					   "raid5_ls 3 128 data_offset 2048 3 - 253:1 - 253:3 - 253:5",
					   &t), 0);
	assert_int_equal(t.raid.level, 5);
	assert_int_equal(t.raid.layout, STACKMAP_MD_LEFT_SYMMETRIC);
	assert_int_equal(stackmap_dm_to_below(&t, 2 * 128 + 5, pl, 4), 1);
	assert_int_equal(pl[0].slot, 2);		/* stripe 1: P on 1, data from 2 */
	assert_int_equal(pl[0].sector, 2048 + 128 + 5);
	assert_int_equal(stackmap_dm_from_below(&t, 2, 2048 + 128 + 5, &a), STACKMAP_DATA);
	assert_int_equal(a, 2 * 128 + 5);
	assert_int_equal(stackmap_dm_from_below(&t, 1, 2048 + 128 + 5, &a), STACKMAP_PARITY);

	/* raid10 far over four images uses far sets of two */
	assert_int_equal(stackmap_dm_parse(0, 2 * 8 * 4, "raid",
					   "raid10 5 8 raid10_copies 2 raid10_format far "
					   "4 - 8:0 - 8:16 - 8:32 - 8:48", &t), 0);
	assert_int_equal(t.raid.layout, 0x40201);
	assert_int_equal(stackmap_dm_to_below(&t, 1, pl, 4), 2);
	assert_int_equal(pl[0].slot, 0);
	assert_int_equal(pl[1].slot, 1);

	assert_int_equal(stackmap_dm_parse(0, 8, "raid", "raid1 1 0 3 - 8:0", &t), -EINVAL);
	assert_int_equal(stackmap_dm_parse(0, 8, "raid", "raid5_ls 2 128 data_offset", &t), -EINVAL);
}

static void dm_not_plain(void **state)
{
	(void)state;
	struct stackmap_dm_target t;
	struct stackmap_place pl[2];
	uint64_t a;

	assert_int_equal(stackmap_dm_parse(0, 1000, "integrity", "259:1 0 4 J 0", &t), 0);
	assert_int_equal(t.kind, STACKMAP_DM_UNMAPPED);
	assert_non_null(strstr(t.why, "interleaves"));
	assert_int_equal(stackmap_dm_to_below(&t, 10, pl, 2), -EOPNOTSUPP);
	assert_int_equal(stackmap_dm_from_below(&t, 0, 10, &a), -EOPNOTSUPP);
	assert_int_equal(stackmap_dm_parse(0, 1000, "thin", "253:2 1", &t), 0);
	assert_int_equal(t.kind, STACKMAP_DM_UNMAPPED);
	assert_int_equal(stackmap_dm_parse(0, 1000, "error", "", &t), 0);
	assert_int_equal(stackmap_dm_to_below(&t, 10, pl, 2), 0);
}

static void units(void **state)
{
	(void)state;
	uint64_t v;

	assert_int_equal(stackmap_lba_to_sector(3048, 512, &v), 0);
	assert_int_equal(v, 3048);
	assert_int_equal(stackmap_lba_to_sector(381, 4096, &v), 0);
	assert_int_equal(v, 3048);
	/* a 4 KiB block holds sectors 3048..3055 */
	assert_int_equal(stackmap_sector_to_lba(3055, 4096, &v), 0);
	assert_int_equal(v, 381);
	assert_int_equal(stackmap_sector_to_lba(3056, 4096, &v), 0);
	assert_int_equal(v, 382);
	assert_int_equal(stackmap_lba_to_sector(1, 520, &v), -EINVAL);
	assert_int_equal(stackmap_lba_to_sector(UINT64_MAX / 4, 4096, &v), -EOVERFLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(raid5_known_diagrams),
		cmocka_unit_test(raid6_known_diagrams),
		cmocka_unit_test(raid456_every_layout),
		cmocka_unit_test(raid5_known_values),
		cmocka_unit_test(raid0_and_raid1),
		cmocka_unit_test(raid10_known_diagrams),
		cmocka_unit_test(raid10_round_trip),
		cmocka_unit_test(md_bad_geometry),
		cmocka_unit_test(dm_linear_and_crypt),
		cmocka_unit_test(dm_striped),
		cmocka_unit_test(dm_raid),
		cmocka_unit_test(dm_not_plain),
		cmocka_unit_test(units),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
