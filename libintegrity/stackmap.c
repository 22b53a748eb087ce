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
