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
#include "device_int.h"
#include "internal.h"
#include "stackmap.h"

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
	if (GREEDY_REALLOC(c->v, c->cap, c->n + 1) < 0)
		return -ENOMEM;
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
			if (GREEDY_REALLOC(queue, cap, tail + 1) < 0) {
				r = -ENOMEM;
				break;
			}
			cur = &queue[head];
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
