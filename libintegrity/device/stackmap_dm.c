/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * device-mapper's targets (the kernel's Documentation/admin-guide/device-mapper):
 * a table line parsed, and a sector mapped to the devices below and back.
 * In 512-byte sectors; see stackmap.h.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "stackmap.h"

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
	uint64_t data = ndevs - stackmap_md_max_degraded(g);
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
