/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * md's arithmetic: which member sector holds an array sector, and back,
 * for the layouts of md(4), mdadm(8) and the kernel's
 * drivers/md/raid{0,10,5}.c.  In 512-byte sectors; see stackmap.h.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>

#include "internal.h"
#include "stackmap.h"

/* RAID10's layout word: near copies, far copies, offset, far sets. */
struct raid10_geo {
	unsigned near, far;
	bool offset;
	unsigned set_size;		/* far copies rotate inside sets of disks */
	uint64_t stride;		/* sectors between far copies */
};

unsigned stackmap_md_max_degraded(const struct stackmap_md *g)
{
	return g->level == 6 ? 2 : g->level == 4 || g->level == 5 ? 1 : 0;
}

static bool raid6_only_layout(unsigned a)
{
	return a == STACKMAP_MD_ROTATING_ZERO_RESTART || a == STACKMAP_MD_ROTATING_N_RESTART ||
	       a == STACKMAP_MD_ROTATING_N_CONTINUE ||
	       (a >= STACKMAP_MD_LEFT_ASYMMETRIC_6 && a <= STACKMAP_MD_PARITY_0_6);
}

static int raid10_geometry(const struct stackmap_md *g, struct raid10_geo *r)
{
	uint64_t cs = g->chunk_sectors;

	r->near = g->layout & 0xff;
	r->far = (g->layout >> 8) & 0xff;
	r->offset = g->layout & (1u << 16);
	if (r->near < 1 || r->far < 1 || (uint64_t)r->near * r->far > g->raid_disks)
		return -EINVAL;
	if (cs == 0 || (cs & (cs - 1)))
		return -EINVAL;			/* md's RAID10 needs a power of two */
	switch (g->layout >> 17) {
	case 0:
		r->set_size = g->raid_disks;
		break;
	case 2:
		r->set_size = r->near * r->far;
		break;
	default:
		return -EOPNOTSUPP;		/* 1 is md's withdrawn far-set layout */
	}
	/* Uneven far sets and offset copies wrapping a row are layouts whose
	 * placement md itself does not keep apart: not mapped here. */
	if (r->far > 1 && g->raid_disks % r->set_size)
		return -EOPNOTSUPP;
	if (r->offset && r->far > 1 && g->raid_disks % r->near)
		return -EOPNOTSUPP;
	if (r->far == 1 || r->offset) {
		r->stride = cs;
		return 0;
	}
	if (g->dev_sectors == 0)
		return -EOPNOTSUPP;		/* far copies start at a size-dependent place */
	/* md: the array's chunks, times the copies, spread over the disks and
	 * rounded up, is what each disk uses; a far copy starts each 1/far of it. */
	uint64_t chunks = g->dev_sectors / cs / r->far * g->raid_disks / r->near;
	uint64_t used = (chunks * r->near * r->far + g->raid_disks - 1) / g->raid_disks;
	r->stride = used / r->far * cs;
	return r->stride ? 0 : -EINVAL;
}

int stackmap_md_check(const struct stackmap_md *g)
{
	if (g->raid_disks == 0 || g->raid_disks > STACKMAP_MAX_COPIES)
		return -EINVAL;
	switch (g->level) {
	case 1:
		return 0;
	case 0:
		return g->chunk_sectors ? 0 : -EINVAL;
	case 10: {
		struct raid10_geo r;
		return raid10_geometry(g, &r);
	}
	case 4:
	case 5:
	case 6:
		break;
	default:
		return -EOPNOTSUPP;		/* linear, multipath, faulty: not mapped */
	}
	if (g->chunk_sectors == 0 || g->raid_disks < stackmap_md_max_degraded(g) + 1)
		return -EINVAL;
	if (g->level == 4)
		return 0;
	if (g->layout <= STACKMAP_MD_PARITY_N)
		return g->level == 6 && g->raid_disks < 4 ? -EINVAL : 0;
	if (g->level == 6 && raid6_only_layout(g->layout))
		return g->raid_disks < 4 ? -EINVAL : 0;
	return -EINVAL;
}

static uint64_t md_round_chunk(uint64_t v, uint64_t cs)
{
	return cs ? v / cs * cs : v;
}

uint64_t stackmap_md_array_sectors(const struct stackmap_md *g)
{
	if (g->dev_sectors == 0 || stackmap_md_check(g) < 0)
		return 0;
	uint64_t cs = g->chunk_sectors;

	switch (g->level) {
	case 1:
		return g->dev_sectors;
	case 0:
		return md_round_chunk(g->dev_sectors, cs) * g->raid_disks;
	case 10: {
		struct raid10_geo r;
		if (raid10_geometry(g, &r) < 0)
			return 0;
		return g->dev_sectors / cs / r.far * g->raid_disks / r.near * cs;
	}
	default:
		return md_round_chunk(g->dev_sectors, cs) * (g->raid_disks - stackmap_md_max_degraded(g));
	}
}

/*
 * One stripe (one chunk row) of RAID4/5/6: the slot of each data chunk, in
 * array order, and of P and Q (-1 when absent).  The layouts by their mdadm
 * names: "left" puts P on the last disk of stripe 0 and moves it left, "right"
 * on the first and moves it right; "asymmetric" fills the data chunks from
 * slot 0 skipping parity, "symmetric" starts them just after parity and
 * wraps; the "-6" layouts are a RAID5 layout over all but the last disk,
 * which holds Q; the DDF ones follow the DDF standard's RAID6 definitions.
 */
static void md_parity_stripe(const struct stackmap_md *g, uint64_t stripe, unsigned *slot, int *p,
			     int *q)
{
	unsigned n = g->raid_disks, data = n - stackmap_md_max_degraded(g);
	unsigned r = (unsigned)(stripe % n);
	unsigned a = g->level == 4 ? STACKMAP_MD_PARITY_N : g->layout;

	*q = -1;
	if (g->level == 6 && a >= STACKMAP_MD_LEFT_ASYMMETRIC_6) {
		/* RAID5 over the first n - 1 disks, Q on the last */
		unsigned m = n - 1, rm = (unsigned)(stripe % m);

		*q = (int)(n - 1);
		switch (a) {
		case STACKMAP_MD_LEFT_ASYMMETRIC_6:
		case STACKMAP_MD_RIGHT_ASYMMETRIC_6:
			*p = (int)(a == STACKMAP_MD_LEFT_ASYMMETRIC_6 ? m - 1 - rm : rm);
			for (unsigned d = 0; d < data; d++)
				slot[d] = d < (unsigned)*p ? d : d + 1;
			return;
		case STACKMAP_MD_LEFT_SYMMETRIC_6:
		case STACKMAP_MD_RIGHT_SYMMETRIC_6:
			*p = (int)(a == STACKMAP_MD_LEFT_SYMMETRIC_6 ? m - 1 - rm : rm);
			for (unsigned d = 0; d < data; d++)
				slot[d] = (unsigned)(*p + 1 + d) % m;
			return;
		default:	/* PARITY_0_6 */
			*p = 0;
			for (unsigned d = 0; d < data; d++)
				slot[d] = d + 1;
			return;
		}
	}
	switch (a) {
	case STACKMAP_MD_PARITY_0:
		*p = 0;
		if (g->level == 6)
			*q = 1;
		for (unsigned d = 0; d < data; d++)
			slot[d] = d + (unsigned)stackmap_md_max_degraded(g);
		return;
	case STACKMAP_MD_PARITY_N:
		*p = (int)data;
		if (g->level == 6)
			*q = (int)data + 1;
		for (unsigned d = 0; d < data; d++)
			slot[d] = d;
		return;
	case STACKMAP_MD_ROTATING_N_CONTINUE:	/* RAID6 only: Q just before P */
		*p = (int)(n - 1 - r);
		*q = (int)((unsigned)*p + n - 1) % (int)n;
		for (unsigned d = 0; d < data; d++)
			slot[d] = (unsigned)(*p + 1 + d) % n;
		return;
	default:
		break;
	}
	bool left = a == STACKMAP_MD_LEFT_ASYMMETRIC || a == STACKMAP_MD_LEFT_SYMMETRIC ||
		    a == STACKMAP_MD_ROTATING_N_RESTART;
	bool symmetric = a == STACKMAP_MD_LEFT_SYMMETRIC || a == STACKMAP_MD_RIGHT_SYMMETRIC;

	if (a == STACKMAP_MD_ROTATING_N_RESTART)
		r = (unsigned)((stripe + 1) % n);	/* stripe 0 is D D D P Q */
	if (g->level == 5) {
		*p = (int)(left ? data - r : r);
		for (unsigned d = 0; d < data; d++)
			slot[d] = symmetric ? (unsigned)(*p + 1 + d) % n : d < (unsigned)*p ? d : d + 1;
		return;
	}
	/* RAID6: Q follows P, wrapping to slot 0 */
	*p = (int)(left ? n - 1 - r : r);
	*q = (*p + 1) % (int)n;
	for (unsigned d = 0; d < data; d++) {
		if (symmetric)
			slot[d] = (unsigned)(*p + 2 + d) % n;
		else if (*q == 0)
			slot[d] = d + 1;		/* Q D D D P */
		else
			slot[d] = d < (unsigned)*p ? d : d + 2;	/* D D P Q D */
	}
}

/* The near copies of a RAID10 chunk sit on consecutive disks (a row's last
 * disk wraps to the first of the next row); far copy f lies f strides
 * further, rotated by f * near disks inside its far set. */
static unsigned raid10_rotate(const struct raid10_geo *r, unsigned d, unsigned f, bool back)
{
	unsigned set = d / r->set_size * r->set_size;
	unsigned shift = (unsigned)((uint64_t)f * r->near % r->set_size);
	unsigned pos = d - set;

	pos = back ? (pos + r->set_size - shift) % r->set_size : (pos + shift) % r->set_size;
	return set + pos;
}

static uint64_t raid10_row_sector(const struct raid10_geo *r, uint64_t row, unsigned f, uint64_t cs)
{
	if (r->offset)
		return (row * r->far + f) * cs;
	return f * r->stride + row * cs;
}

int stackmap_md_to_members(const struct stackmap_md *g, uint64_t s, struct stackmap_place *out,
			   size_t max)
{
	int rc = stackmap_md_check(g);
	uint64_t size = stackmap_md_array_sectors(g);
	uint64_t cs = g->chunk_sectors;

	if (rc < 0)
		return rc;
	if (g->dev_sectors && s >= size)
		return -ERANGE;
	if (max == 0)
		return -ENOBUFS;
	switch (g->level) {
	case 1:
		if (max < g->raid_disks)
			return -ENOBUFS;
		for (unsigned i = 0; i < g->raid_disks; i++)
			out[i] = (struct stackmap_place){ .slot = i, .sector = s };
		return (int)g->raid_disks;
	case 0: {
		uint64_t chunk = s / cs;
		out[0].slot = (unsigned)(chunk % g->raid_disks);
		out[0].sector = chunk / g->raid_disks * cs + s % cs;
		return 1;
	}
	case 10: {
		struct raid10_geo r;
		unsigned k = 0;

		raid10_geometry(g, &r);
		if (max < (size_t)r.near * r.far)
			return -ENOBUFS;
		for (unsigned n = 0; n < r.near; n++) {
			uint64_t pos = s / cs * r.near + n;
			unsigned d = (unsigned)(pos % g->raid_disks);
			uint64_t row = pos / g->raid_disks;

			for (unsigned f = 0; f < r.far; f++) {
				out[k].slot = raid10_rotate(&r, d, f, false);
				out[k].sector = raid10_row_sector(&r, row, f, cs) + s % cs;
				k++;
			}
		}
		return (int)k;
	}
	default: {
		unsigned data = g->raid_disks - stackmap_md_max_degraded(g);
		unsigned slot[STACKMAP_MAX_COPIES];
		uint64_t chunk = s / cs, stripe = chunk / data;
		int p, q;

		md_parity_stripe(g, stripe, slot, &p, &q);
		out[0].slot = slot[chunk % data];
		out[0].sector = stripe * cs + s % cs;
		return 1;
	}
	}
}

static int md_from_member_data(const struct stackmap_md *g, unsigned slot, uint64_t m,
			       uint64_t *array)
{
	uint64_t cs = g->chunk_sectors;

	switch (g->level) {
	case 1:
		*array = m;
		return STACKMAP_DATA;
	case 0:
		*array = (m / cs * g->raid_disks + slot) * cs + m % cs;
		return STACKMAP_DATA;
	case 10: {
		struct raid10_geo r;
		uint64_t row;
		unsigned f;

		raid10_geometry(g, &r);
		if (r.offset) {
			f = (unsigned)(m / cs % r.far);
			row = m / cs / r.far;
		} else {
			f = r.far > 1 ? (unsigned)(m / r.stride) : 0;
			if (f >= r.far)
				return STACKMAP_UNMAPPED;
			row = (m - f * (r.far > 1 ? r.stride : 0)) / cs;
		}
		uint64_t pos = row * g->raid_disks + raid10_rotate(&r, slot, f, true);
		*array = pos / r.near * cs + m % cs;
		return STACKMAP_DATA;
	}
	default: {
		unsigned data = g->raid_disks - stackmap_md_max_degraded(g);
		unsigned slots[STACKMAP_MAX_COPIES];
		uint64_t stripe = m / cs;
		int p, q;

		md_parity_stripe(g, stripe, slots, &p, &q);
		if ((int)slot == p || (int)slot == q)
			return STACKMAP_PARITY;
		for (unsigned d = 0; d < data; d++)
			if (slots[d] == slot) {
				*array = (stripe * data + d) * cs + m % cs;
				return STACKMAP_DATA;
			}
		return -EINVAL;		/* unreachable: every slot is data or parity */
	}
	}
}

int stackmap_md_from_member(const struct stackmap_md *g, unsigned slot, uint64_t data_offset,
			    uint64_t sector, uint64_t *array_sector)
{
	int rc = stackmap_md_check(g);

	if (rc < 0)
		return rc;
	if (slot >= g->raid_disks)
		return -EINVAL;
	if (sector < data_offset)
		return STACKMAP_UNMAPPED;
	uint64_t m = sector - data_offset, used = g->dev_sectors;
	/* striped levels use whole chunks of each member */
	if (g->level != 1 && g->level != 10)
		used = md_round_chunk(used, g->chunk_sectors);
	if (g->dev_sectors && m >= used)
		return STACKMAP_UNMAPPED;
	rc = md_from_member_data(g, slot, m, array_sector);
	if (rc == STACKMAP_DATA && g->dev_sectors && *array_sector >= stackmap_md_array_sectors(g))
		return STACKMAP_UNMAPPED;	/* the tail md rounds off */
	return rc;
}
