/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The arithmetic of stacked devices: which member sector holds an array
 * sector, and back.  md's layouts are described in md(4), mdadm(8) and the
 * kernel's drivers/md/raid{0,10,5}.c; dm's targets in the kernel's
 * Documentation/admin-guide/device-mapper.  Everything is in 512-byte
 * sectors; see stackmap.h.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "internal.h"
#include "stackmap.h"

/* ------------------------------------------------------------------ md */

/* RAID10's layout word: near copies, far copies, offset, far sets. */
struct raid10_geo {
	unsigned near, far;
	bool offset;
	unsigned set_size;		/* far copies rotate inside sets of disks */
	uint64_t stride;		/* sectors between far copies */
};

static unsigned md_max_degraded(const struct stackmap_md *g)
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
	if (g->chunk_sectors == 0 || g->raid_disks < md_max_degraded(g) + 1)
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
		return md_round_chunk(g->dev_sectors, cs) * (g->raid_disks - md_max_degraded(g));
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
	unsigned n = g->raid_disks, data = n - md_max_degraded(g);
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
			slot[d] = d + (unsigned)md_max_degraded(g);
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
		unsigned data = g->raid_disks - md_max_degraded(g);
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
		unsigned data = g->raid_disks - md_max_degraded(g);
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

/* ------------------------------------------------------- device-mapper */

struct words {
	char *w[2 * STACKMAP_DM_MAX_DEVS + 64];
	unsigned n;
};

static int split_words(char *s, struct words *w)
{
	w->n = 0;
	for (char *save = NULL, *t = strtok_r(s, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
		if (w->n == ARRAY_SIZE(w->w))
			return -E2BIG;
		w->w[w->n++] = t;
	}
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_unsigned(const char *s, unsigned *v, unsigned max)
{
	uint64_t x;

	if (parse_u64(s, &x) < 0 || x > max)
		return -EINVAL;
	*v = (unsigned)x;
	return 0;
}

static int add_dev(struct stackmap_dm_target *t, const char *name, const char *offset)
{
	uint64_t off = 0;

	if (t->ndevs == STACKMAP_DM_MAX_DEVS)
		return -E2BIG;
	if (offset && parse_u64(offset, &off) < 0)
		return -EINVAL;
	if (path_printf(t->devs[t->ndevs].name, sizeof(t->devs[0].name), "%s", name) < 0)
		return -EINVAL;
	t->devs[t->ndevs++].offset = off;
	return 0;
}

static int unmapped(struct stackmap_dm_target *t, const char *why)
{
	t->kind = STACKMAP_DM_UNMAPPED;
	snprintf(t->why, sizeof(t->why), "%s", why);
	return 0;
}

/* dm-raid's types: md level and layout (drivers/md/dm-raid.c's table). */
static const struct dm_raid_type {
	const char *name;
	unsigned level, layout;
} dm_raid_types[] = {
	{ "raid0", 0, 0 },
	{ "raid1", 1, 0 },
	{ "raid10", 10, 0 },
	{ "raid10_near", 10, 0 },
	{ "raid10_far", 10, 0 },
	{ "raid10_offset", 10, 0 },
	{ "raid4", 5, STACKMAP_MD_PARITY_0 },	/* dedicated first parity disk */
	{ "raid5_n", 5, STACKMAP_MD_PARITY_N },
	{ "raid5_0", 5, STACKMAP_MD_PARITY_0 },
	{ "raid5_la", 5, STACKMAP_MD_LEFT_ASYMMETRIC },
	{ "raid5_ra", 5, STACKMAP_MD_RIGHT_ASYMMETRIC },
	{ "raid5_ls", 5, STACKMAP_MD_LEFT_SYMMETRIC },
	{ "raid5_rs", 5, STACKMAP_MD_RIGHT_SYMMETRIC },
	{ "raid6_zr", 6, STACKMAP_MD_ROTATING_ZERO_RESTART },
	{ "raid6_nr", 6, STACKMAP_MD_ROTATING_N_RESTART },
	{ "raid6_nc", 6, STACKMAP_MD_ROTATING_N_CONTINUE },
	{ "raid6_n_6", 6, STACKMAP_MD_PARITY_N },
	{ "raid6_0_6", 6, STACKMAP_MD_PARITY_0_6 },
	{ "raid6_la_6", 6, STACKMAP_MD_LEFT_ASYMMETRIC_6 },
	{ "raid6_ra_6", 6, STACKMAP_MD_RIGHT_ASYMMETRIC_6 },
	{ "raid6_ls_6", 6, STACKMAP_MD_LEFT_SYMMETRIC_6 },
	{ "raid6_rs_6", 6, STACKMAP_MD_RIGHT_SYMMETRIC_6 },
};

/* The options after the chunk size: flags alone, the rest name value. */
static bool dm_raid_flag(const char *w)
{
	return !strcmp(w, "sync") || !strcmp(w, "nosync") || !strcmp(w, "raid10_use_near_sets");
}

static int parse_dm_raid(struct stackmap_dm_target *t, const struct words *w)
{
	const struct dm_raid_type *type = NULL;
	unsigned nparams, ndevs, copies = 2, i;
	uint64_t data_offset = 0, chunk;
	const char *format = NULL;
	bool near_sets = false;

	for (i = 0; i < ARRAY_SIZE(dm_raid_types); i++)
		if (!strcmp(w->w[0], dm_raid_types[i].name))
			type = &dm_raid_types[i];
	if (!type)
		return unmapped(t, "an unknown dm-raid type");
	if (w->n < 3 || parse_unsigned(w->w[1], &nparams, w->n - 2) < 0 || nparams < 1 ||
	    parse_u64(w->w[2], &chunk) < 0 || chunk > UINT32_MAX)
		return -EINVAL;
	if (!strcmp(type->name, "raid10_far"))
		format = "far";
	else if (!strcmp(type->name, "raid10_offset"))
		format = "offset";
	for (i = 3; i < 2 + nparams; i++) {
		const char *key = w->w[i];

		if (dm_raid_flag(key)) {
			near_sets |= !strcmp(key, "raid10_use_near_sets");
			continue;
		}
		if (i + 1 >= 2 + nparams)
			return -EINVAL;
		const char *val = w->w[++i];
		if (!strcmp(key, "raid10_copies") && parse_unsigned(val, &copies, 255) < 0)
			return -EINVAL;
		if (!strcmp(key, "raid10_format"))
			format = val;
		if (!strcmp(key, "data_offset") && parse_u64(val, &data_offset) < 0)
			return -EINVAL;
		if (!strcmp(key, "delta_disks") || !strcmp(key, "journal_dev"))
			return unmapped(t, "a dm-raid array being reshaped or with a journal");
	}
	if (i >= w->n || parse_unsigned(w->w[i], &ndevs, STACKMAP_DM_MAX_DEVS) < 0 ||
	    ndevs == 0 || w->n != i + 1 + 2 * ndevs)
		return -EINVAL;
	t->kind = STACKMAP_DM_RAID;
	t->raid = (struct stackmap_md){
		.level = type->level,
		.raid_disks = ndevs,
		.chunk_sectors = (uint32_t)chunk,
		.layout = type->layout,
	};
	if (type->level == 10) {
		bool far = format && !strcmp(format, "far"), off = format && !strcmp(format, "offset");

		if (format && !far && !off && strcmp(format, "near"))
			return -EINVAL;
		t->raid.layout = far || off ? (copies << 8 | 1) : (1u << 8 | copies);
		if (off)
			t->raid.layout |= 1u << 16;
		if ((far || off) && !near_sets)
			t->raid.layout |= 1u << 18;	/* far sets of `copies` disks */
	}
	for (unsigned d = 0; d < ndevs; d++) {
		int rc = add_dev(t, w->w[i + 2 + 2 * d], NULL);
		if (rc < 0)
			return rc;
		t->devs[d].offset = data_offset;
	}
	/* The members' size follows from the target's: md's sizes inverted. */
	struct stackmap_md *g = &t->raid;
	uint64_t data = ndevs - md_max_degraded(g);
	if (g->level == 1)
		g->dev_sectors = t->length;
	else if (g->level == 10 && g->chunk_sectors) {
		uint64_t cs = g->chunk_sectors, nf = (g->layout & 0xff) * ((g->layout >> 8) & 0xff);
		g->dev_sectors = (t->length / cs * nf + ndevs - 1) / ndevs * cs;
	} else if (g->chunk_sectors)
		g->dev_sectors = t->length / data;
	int rc = stackmap_md_check(g);
	if (rc == -EOPNOTSUPP)
		return unmapped(t, "a dm-raid layout not mapped here");
	return rc;
}

int stackmap_dm_parse(uint64_t start, uint64_t length, const char *type, const char *params,
		      struct stackmap_dm_target *t)
{
	_cleanup_free_ char *copy = strdup(params ? params : "");
	struct words w;
	int rc;

	memset(t, 0, sizeof(*t));
	t->start = start;
	t->length = length;
	if (!copy)
		return -ENOMEM;
	if (path_printf(t->type, sizeof(t->type), "%s", type) < 0)
		return -EINVAL;
	if (start + length < start)
		return -EINVAL;
	rc = split_words(copy, &w);
	if (rc < 0)
		return rc;

	if (!strcmp(type, "linear")) {
		if (w.n != 2)
			return -EINVAL;
		t->kind = STACKMAP_DM_LINEAR;
		return add_dev(t, w.w[0], w.w[1]);
	}
	if (!strcmp(type, "crypt")) {
		/* cipher key iv_offset device offset [#opt_params opt...] */
		if (w.n < 5)
			return -EINVAL;
		t->kind = STACKMAP_DM_CRYPT;
		return add_dev(t, w.w[3], w.w[4]);
	}
	if (!strcmp(type, "striped")) {
		unsigned n;
		uint64_t chunk;

		if (w.n < 4 || parse_unsigned(w.w[0], &n, STACKMAP_DM_MAX_DEVS) < 0 || n == 0 ||
		    w.n != 2 + 2 * n || parse_u64(w.w[1], &chunk) < 0 || chunk == 0 || chunk > UINT32_MAX)
			return -EINVAL;
		t->kind = STACKMAP_DM_STRIPED;
		t->chunk_sectors = (uint32_t)chunk;
		for (unsigned i = 0; i < n; i++)
			if ((rc = add_dev(t, w.w[2 + 2 * i], w.w[3 + 2 * i])) < 0)
				return rc;
		return 0;
	}
	if (!strcmp(type, "raid")) {
		if (w.n < 1)
			return -EINVAL;
		return parse_dm_raid(t, &w);
	}
	if (!strcmp(type, "error") || !strcmp(type, "zero")) {
		t->kind = STACKMAP_DM_NONE;
		return 0;
	}
	if (!strcmp(type, "integrity"))
		return unmapped(t, "dm-integrity interleaves its tags with the data");
	if (!strcmp(type, "thin") || !strcmp(type, "thin-pool"))
		return unmapped(t, "a thin volume maps through its pool's metadata");
	if (!strcmp(type, "snapshot") || !strcmp(type, "snapshot-origin") || !strcmp(type, "cache") ||
	    !strcmp(type, "writecache") || !strcmp(type, "era") || !strcmp(type, "vdo"))
		return unmapped(t, "the target maps through its own metadata");
	return unmapped(t, "a target not mapped here");
}

int stackmap_dm_to_below(const struct stackmap_dm_target *t, uint64_t s, struct stackmap_place *out,
			 size_t max)
{
	if (s < t->start || s - t->start >= t->length)
		return -ERANGE;
	uint64_t rel = s - t->start;

	switch (t->kind) {
	case STACKMAP_DM_NONE:
		return 0;
	case STACKMAP_DM_UNMAPPED:
		return -EOPNOTSUPP;
	case STACKMAP_DM_LINEAR:
	case STACKMAP_DM_CRYPT:
		if (max < 1)
			return -ENOBUFS;
		out[0] = (struct stackmap_place){ .slot = 0, .sector = t->devs[0].offset + rel };
		return 1;
	case STACKMAP_DM_STRIPED: {
		uint64_t cs = t->chunk_sectors, chunk = rel / cs;
		unsigned i = (unsigned)(chunk % t->ndevs);

		if (max < 1)
			return -ENOBUFS;
		out[0].slot = i;
		out[0].sector = t->devs[i].offset + chunk / t->ndevs * cs + rel % cs;
		return 1;
	}
	case STACKMAP_DM_RAID: {
		int n = stackmap_md_to_members(&t->raid, rel, out, max);
		for (int i = 0; i < n; i++)
			out[i].sector += t->devs[out[i].slot].offset;
		return n;
	}
	}
	return -EINVAL;
}

int stackmap_dm_from_below(const struct stackmap_dm_target *t, unsigned dev, uint64_t sector,
			   uint64_t *above)
{
	uint64_t rel = 0;

	if (t->kind == STACKMAP_DM_UNMAPPED)
		return -EOPNOTSUPP;
	if (dev >= t->ndevs)
		return -EINVAL;
	if (sector < t->devs[dev].offset)
		return STACKMAP_UNMAPPED;
	uint64_t below = sector - t->devs[dev].offset;

	switch (t->kind) {
	case STACKMAP_DM_LINEAR:
	case STACKMAP_DM_CRYPT:
		rel = below;
		break;
	case STACKMAP_DM_STRIPED: {
		uint64_t cs = t->chunk_sectors;
		rel = (below / cs * t->ndevs + dev) * cs + below % cs;
		break;
	}
	case STACKMAP_DM_RAID: {
		int rc = stackmap_md_from_member(&t->raid, dev, 0, below, &rel);
		if (rc != STACKMAP_DATA)
			return rc;
		break;
	}
	default:
		return STACKMAP_UNMAPPED;
	}
	if (rel >= t->length)
		return STACKMAP_UNMAPPED;
	*above = t->start + rel;
	return STACKMAP_DATA;
}

/* ---------------------------------------------------------------- units */

int stackmap_lba_to_sector(uint64_t lba, uint32_t block_size, uint64_t *sector)
{
	if (block_size < 512 || block_size % 512)
		return -EINVAL;
	uint64_t per = block_size / 512;
	if (lba > UINT64_MAX / per)
		return -EOVERFLOW;
	*sector = lba * per;
	return 0;
}

int stackmap_sector_to_lba(uint64_t sector, uint32_t block_size, uint64_t *lba)
{
	if (block_size < 512 || block_size % 512)
		return -EINVAL;
	*lba = sector / (block_size / 512);
	return 0;
}

/* ---------------------------------------------------------------- chains */

/* One device of a chain being walked, its sector, how far from the start. */
struct chain_node {
	struct integrity_device *dev;
	struct integrity_stack *stack;
	uint64_t sector;
	unsigned depth;
};

/* The walk's places, nearest first. */
struct chain {
	struct integrity_stack_place *v;
	size_t n, cap;
};

#define CHAIN_MAX_DEPTH 16

static int chain_push(struct chain *c, const struct chain_node *node)
{
	uint64_t lba;
	int r = stackmap_sector_to_lba(node->sector, integrity_device_logical_block_size(node->dev), &lba);

	if (r < 0)
		return r;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 8;
		void *p = realloc(c->v, cap * sizeof(*c->v));
		if (!p)
			return -ENOMEM;
		c->v = p;
		c->cap = cap;
	}
	struct integrity_stack_place *pl = &c->v[c->n++];
	memset(pl, 0, sizeof(*pl));
	path_printf(pl->device, sizeof(pl->device), "%s", integrity_device_name(node->dev));
	pl->lba = lba;
	pl->depth = node->depth;
	return 0;
}

static int chain_open(struct integrity_context *ctx, const char *name, struct chain_node *n)
{
	int r = integrity_device_new(ctx, name, &n->dev);

	if (r < 0)
		return r;
	r = integrity_stack_new(n->dev, &n->stack);
	if (r < 0) {
		integrity_device_free(n->dev);
		n->dev = NULL;
	}
	return r;
}

static void chain_close(struct chain_node *n)
{
	integrity_stack_free(n->stack);
	integrity_device_free(n->dev);
	n->stack = NULL;
	n->dev = NULL;
}

static int md_level_number(const char *level, unsigned *n)
{
	static const struct { const char *name; unsigned level; } levels[] = {
		{ "raid0", 0 }, { "raid1", 1 }, { "raid4", 4 }, { "raid5", 5 }, { "raid6", 6 }, { "raid10", 10 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(levels); i++)
		if (!strcmp(level, levels[i].name)) {
			*n = levels[i].level;
			return 0;
		}
	return -EOPNOTSUPP;		/* linear, multipath, container: not mapped */
}

/* An md array's geometry from its stack and sysfs directory. */
static int md_geometry(const struct chain_node *md, struct stackmap_md *g)
{
	struct integrity_md_info info;
	char dir[PATH_MAX];
	uint64_t kib = 0;
	int r = integrity_stack_md(md->stack, &info);

	if (r < 0)
		return r;
	memset(g, 0, sizeof(*g));
	if ((r = md_level_number(info.level, &g->level)) < 0)
		return r;
	g->raid_disks = info.raid_disks;
	g->chunk_sectors = (uint32_t)(info.chunk_size / 512);
	g->layout = info.layout < 0 ? 0 : (unsigned)info.layout;
	if (path_printf(dir, sizeof(dir), "%s/md", md->dev->dir) < 0)
		return -ENAMETOOLONG;
	if (sysfs_read_u64(dir, "component_size", &kib) == 0)
		g->dev_sectors = kib * 2;
	if (g->level == 0) {
		/* md's RAID0 of unequal members has several zones, each striped
		 * over the members still left: mapped only with one zone. */
		uint64_t size = integrity_device_size(md->dev) / 512;
		size_t n = integrity_stack_md_member_count(md->stack);
		for (size_t i = 0; i < n; i++) {
			const struct integrity_md_member *m = integrity_stack_md_member(md->stack, i);
			char mdir[PATH_MAX];
			if (m->slot < 0)
				continue;
			if (path_printf(mdir, sizeof(mdir), "%s/dev-%s", dir, m->name) < 0 ||
			    sysfs_read_u64(mdir, "size", &kib) < 0)
				return -EOPNOTSUPP;
			uint64_t member = kib * 2 / g->chunk_sectors * g->chunk_sectors;
			if (member * g->raid_disks != size)
				return -EOPNOTSUPP;
			g->dev_sectors = member;
		}
	}
	return stackmap_md_check(g);
}

static const struct integrity_md_member *md_member_by_name(const struct integrity_stack *s, const char *name)
{
	size_t n = integrity_stack_md_member_count(s);

	for (size_t i = 0; i < n; i++) {
		const struct integrity_md_member *m = integrity_stack_md_member(s, i);
		if (!strcmp(m->name, name))
			return m;
	}
	return NULL;
}

static const struct integrity_md_member *md_member_by_slot(const struct integrity_stack *s, unsigned slot)
{
	size_t n = integrity_stack_md_member_count(s);

	for (size_t i = 0; i < n; i++) {
		const struct integrity_md_member *m = integrity_stack_md_member(s, i);
		if (m->slot == (int)slot)
			return m;
	}
	return NULL;
}

/* Does a dm table's "MAJ:MIN" (or a path) name this device? */
static bool dm_dev_is(const char *name, const struct integrity_device *dev)
{
	unsigned maj, min;
	char tail;

	if (sscanf(name, "%u:%u%c", &maj, &min, &tail) == 2)
		return maj == integrity_device_major(dev) && min == integrity_device_minor(dev);
	const char *base = strrchr(name, '/');
	return !strcmp(base ? base + 1 : name, integrity_device_name(dev));
}

/* The sector of `up` (right above `cur`) that holds cur's sector; 1 when
 * there is one, 0 when `up` does not map it. */
static int step_up(const struct chain_node *cur, const struct chain_node *up, uint64_t *sector)
{
	switch (integrity_stack_kind(up->stack)) {
	case INTEGRITY_STACK_PARTITION: {
		uint64_t start, size = integrity_device_size(up->dev) / 512;
		if (sysfs_read_u64(up->dev->dir, "start", &start) < 0)
			return 0;
		if (cur->sector < start || cur->sector - start >= size)
			return 0;
		*sector = cur->sector - start;
		return 1;
	}
	case INTEGRITY_STACK_MD: {
		struct stackmap_md g;
		const struct integrity_md_member *m = md_member_by_name(up->stack, integrity_device_name(cur->dev));
		if (!m || m->slot < 0 || md_geometry(up, &g) < 0)
			return 0;
		return stackmap_md_from_member(&g, (unsigned)m->slot, m->offset, cur->sector, sector) ==
		       STACKMAP_DATA;
	}
	case INTEGRITY_STACK_DM: {
		const struct integrity_dm_target *t;
		size_t n;
		if (integrity_stack_dm_table(up->stack, &t, &n) < 0)
			return 0;
		for (size_t i = 0; i < n; i++) {
			struct stackmap_dm_target dt;
			if (stackmap_dm_parse(t[i].start, t[i].length, t[i].type, t[i].params, &dt) < 0)
				continue;
			for (unsigned d = 0; d < dt.ndevs; d++)
				if (dm_dev_is(dt.devs[d].name, cur->dev) &&
				    stackmap_dm_from_below(&dt, d, cur->sector, sector) == STACKMAP_DATA)
					return 1;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* Where cur's sector lives right below it: places with the device names. */
struct below_place {
	char name[256];
	uint64_t sector;
};

static int step_down(const struct chain_node *cur, struct below_place *out, size_t max)
{
	struct stackmap_place pl[STACKMAP_MAX_COPIES];
	size_t k = 0;

	switch (integrity_stack_kind(cur->stack)) {
	case INTEGRITY_STACK_PARTITION: {
		uint64_t start;
		if (sysfs_read_u64(cur->dev->dir, "start", &start) < 0 || max < 1)
			return 0;
		path_printf(out[0].name, sizeof(out[0].name), "%s", integrity_device_disk_name(cur->dev));
		out[0].sector = start + cur->sector;
		return 1;
	}
	case INTEGRITY_STACK_MD: {
		struct stackmap_md g;
		if (md_geometry(cur, &g) < 0)
			return 0;
		int n = stackmap_md_to_members(&g, cur->sector, pl, ARRAY_SIZE(pl));
		for (int i = 0; i < n && k < max; i++) {
			const struct integrity_md_member *m = md_member_by_slot(cur->stack, pl[i].slot);
			if (!m)
				continue;	/* a missing member of a degraded array */
			path_printf(out[k].name, sizeof(out[k].name), "%s", m->name);
			out[k++].sector = m->offset + pl[i].sector;
		}
		return (int)k;
	}
	case INTEGRITY_STACK_DM: {
		const struct integrity_dm_target *t;
		size_t n;
		if (integrity_stack_dm_table(cur->stack, &t, &n) < 0)
			return 0;
		for (size_t i = 0; i < n; i++) {
			struct stackmap_dm_target dt;
			if (cur->sector < t[i].start || cur->sector - t[i].start >= t[i].length)
				continue;
			if (stackmap_dm_parse(t[i].start, t[i].length, t[i].type, t[i].params, &dt) < 0)
				return 0;
			int m = stackmap_dm_to_below(&dt, cur->sector, pl, ARRAY_SIZE(pl));
			for (int j = 0; j < m && k < max; j++) {
				path_printf(out[k].name, sizeof(out[k].name), "%s", dt.devs[pl[j].slot].name);
				out[k++].sector = pl[j].sector;
			}
			return (int)k;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* Breadth first from dev: nearest first, each device once. */
static int chain_walk(const struct integrity_device *dev, uint64_t lba, bool up,
		      struct integrity_stack_place **places, size_t *count)
{
	struct chain out = { 0 };
	struct chain_node *queue = NULL;
	size_t head = 0, tail = 0, cap = 0;
	uint64_t sector;
	int r = stackmap_lba_to_sector(lba, integrity_device_logical_block_size(dev), &sector);

	*places = NULL;
	*count = 0;
	if (r < 0)
		return r;
	if (lba >= integrity_device_size(dev) / integrity_device_logical_block_size(dev))
		return -ERANGE;
	queue = calloc(1, sizeof(*queue));
	if (!queue)
		return -ENOMEM;
	cap = 1;
	r = chain_open(dev->ctx, integrity_device_name(dev), &queue[0]);
	if (r < 0) {
		free(queue);
		return r;
	}
	queue[0].sector = sector;
	tail = 1;
	while (r >= 0 && head < tail) {
		struct chain_node *cur = &queue[head];
		struct below_place next[STACKMAP_MAX_COPIES];
		size_t nnext = 0;

		if (cur->depth < CHAIN_MAX_DEPTH && up) {
			for (size_t i = 0; i < integrity_stack_above_count(cur->stack); i++) {
				struct chain_node n = { 0 };
				if (chain_open(dev->ctx, integrity_stack_above(cur->stack, i), &n) < 0)
					continue;
				if (nnext < ARRAY_SIZE(next) && step_up(cur, &n, &next[nnext].sector) == 1)
					path_printf(next[nnext++].name, sizeof(next[0].name), "%s",
						    integrity_device_name(n.dev));
				chain_close(&n);
			}
		} else if (cur->depth < CHAIN_MAX_DEPTH) {
			int k = step_down(cur, next, ARRAY_SIZE(next));
			nnext = k > 0 ? (size_t)k : 0;
		}
		for (size_t i = 0; i < nnext && r >= 0; i++) {
			if (tail == cap) {
				size_t c = cap * 2;
				void *p = realloc(queue, c * sizeof(*queue));
				if (!p) {
					r = -ENOMEM;
					break;
				}
				queue = p;
				cur = &queue[head];
				cap = c;
			}
			struct chain_node *n = &queue[tail];
			memset(n, 0, sizeof(*n));
			if (chain_open(dev->ctx, next[i].name, n) < 0)
				continue;
			n->sector = next[i].sector;
			n->depth = cur->depth + 1;
			tail++;
			r = chain_push(&out, n);
		}
		head++;
	}
	for (size_t i = 0; i < tail; i++)
		chain_close(&queue[i]);
	free(queue);
	if (r < 0) {
		free(out.v);
		return r;
	}
	*places = out.v;
	*count = out.n;
	return 0;
}

INTEGRITY_EXPORT int integrity_stack_map_above(const struct integrity_device *dev, uint64_t lba,
					       struct integrity_stack_place **places, size_t *count)
{
	return chain_walk(dev, lba, true, places, count);
}

INTEGRITY_EXPORT int integrity_stack_map_below(const struct integrity_device *dev, uint64_t lba,
					       struct integrity_stack_place **places, size_t *count)
{
	return chain_walk(dev, lba, false, places, count);
}
