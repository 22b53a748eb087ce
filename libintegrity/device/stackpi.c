/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where protection information goes in the stack around a device: every
 * device above it (up to where a file system sits) and below it (down to
 * the media), and whether PI is carried from the top to the media or
 * stops on the way.  Reads the kernel's profiles through device.c and the
 * stack through stack.c.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "device.h"

#define PI_MAX_NODES 64
#define PI_MAX_LEVEL 16

struct integrity_stack_pi {
	struct integrity_stack_pi_node v[PI_MAX_NODES];
	int level[PI_MAX_NODES];	/* above the device asked about: > 0, below: < 0 */
	size_t n;
	bool end_to_end;
	size_t stop;			/* index of the lowest device without PI; n: none */
	size_t media;			/* devices at the bottom that store PI */
};

/* A profile through which the kernel carries PI ("nop" carries none). */
static bool carries_pi(const struct integrity_kernel_state *st)
{
	return st->format[0] && strcmp(st->format, "none") != 0 && strcmp(st->format, "nop") != 0;
}

static bool has(const struct integrity_stack_pi *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->v[i].name, name) == 0)
			return true;
	return false;
}

/* Add name and, in one direction, everything on that side of it.  md
 * reads from its active members only. */
static void walk(struct integrity_stack_pi *p, struct integrity_context *ctx, const char *name, int level, int dir)
{
	struct integrity_device *dev = NULL;
	struct integrity_stack *st = NULL;
	struct integrity_kernel_state ks;

	if (p->n == PI_MAX_NODES || has(p, name) || level > PI_MAX_LEVEL || level < -PI_MAX_LEVEL ||
	    integrity_device_new(ctx, name, &dev) < 0)
		return;
	if (integrity_stack_new(dev, &st) < 0) {
		integrity_device_free(dev);
		return;
	}
	struct integrity_stack_pi_node *n = &p->v[p->n];
	p->level[p->n++] = level;
	/* A state that cannot be read: "?", and no PI claimed through it. */
	bool known = integrity_device_kernel_state(dev, &ks) == 0;
	snprintf(n->name, sizeof(n->name), "%s", name);
	snprintf(n->type, sizeof(n->type), "%s", integrity_stack_type(st));
	snprintf(n->format, sizeof(n->format), "%s", known ? ks.format : "?");
	n->profile = known && carries_pi(&ks);
	bool bottom = integrity_stack_below_count(st) == 0;
	n->media_pi = bottom && (n->profile || integrity_device_pi_type(dev) > 0);
	integrity_device_free(dev);
	if (dir > 0) {
		for (size_t i = 0; i < integrity_stack_above_count(st); i++)
			walk(p, ctx, integrity_stack_above(st, i), level + 1, dir);
	} else if (integrity_stack_kind(st) != INTEGRITY_STACK_MD) {
		for (size_t i = 0; i < integrity_stack_below_count(st); i++)
			walk(p, ctx, integrity_stack_below(st, i), level - 1, dir);
	} else {
		for (size_t i = 0; i < integrity_stack_md_member_count(st); i++) {
			const struct integrity_md_member *m = integrity_stack_md_member(st, i);
			if (m->slot >= 0 && !strstr(m->state, "faulty"))
				walk(p, ctx, m->name, level - 1, dir);
		}
	}
	integrity_stack_free(st);
}

INTEGRITY_EXPORT int integrity_stack_pi_new(const struct integrity_device *dev, struct integrity_stack_pi **out)
{
	struct integrity_stack *stk = NULL;
	struct integrity_context *ctx = device_ctx(dev);
	int r;

	*out = NULL;
	if ((r = integrity_stack_new(dev, &stk)) < 0)
		return r;
	struct integrity_stack_pi *p = calloc(1, sizeof(*p));
	if (!p) {
		integrity_stack_free(stk);
		return -ENOMEM;
	}
	walk(p, ctx, integrity_device_name(dev), 0, 1);
	if (p->n == 0) {
		integrity_stack_free(stk);
		free(p);
		return -ENODEV;
	}
	/* The device itself is in already: walk down from below it. */
	if (integrity_stack_kind(stk) != INTEGRITY_STACK_MD)
		for (size_t i = 0; i < integrity_stack_below_count(stk); i++)
			walk(p, ctx, integrity_stack_below(stk, i), -1, -1);
	for (size_t i = 0; integrity_stack_kind(stk) == INTEGRITY_STACK_MD && i < integrity_stack_md_member_count(stk);
	     i++) {
		const struct integrity_md_member *m = integrity_stack_md_member(stk, i);
		if (m->slot >= 0 && !strstr(m->state, "faulty"))
			walk(p, ctx, m->name, -1, -1);
	}
	/* At the bottom itself, the device's own PI type counts too. */
	if (integrity_stack_below_count(stk) == 0)
		p->v[0].media_pi = p->v[0].media_pi || p->v[0].profile || integrity_device_pi_type(dev) > 0;
	/* Top first: sort by level, highest first (stable for equal levels). */
	for (size_t i = 1; i < p->n; i++)
		for (size_t j = i; j > 0 && p->level[j - 1] < p->level[j]; j--) {
			struct integrity_stack_pi_node t = p->v[j];
			int l = p->level[j];
			p->v[j] = p->v[j - 1];
			p->level[j] = p->level[j - 1];
			p->v[j - 1] = t;
			p->level[j - 1] = l;
		}
	size_t without = 0;
	p->stop = p->n;
	for (size_t i = 0; i < p->n; i++) {
		p->v[i].depth = (unsigned)(p->level[0] - p->level[i]);
		if (p->v[i].media_pi)
			p->media++;
		if (p->v[i].profile)
			continue;
		without++;
		/* The lowest device without PI: PI ends below it. */
		if (p->stop == p->n || p->level[i] < p->level[p->stop])
			p->stop = i;
	}
	p->end_to_end = without == 0 && p->media > 0;
	if (p->end_to_end || !p->media)
		p->stop = p->n;
	integrity_stack_free(stk);
	*out = p;
	return 0;
}

INTEGRITY_EXPORT void integrity_stack_pi_free(struct integrity_stack_pi *p)
{
	free(p);
}

INTEGRITY_EXPORT size_t integrity_stack_pi_count(const struct integrity_stack_pi *p)
{
	return p->n;
}

INTEGRITY_EXPORT const struct integrity_stack_pi_node *integrity_stack_pi_node(const struct integrity_stack_pi *p,
									   size_t i)
{
	return i < p->n ? &p->v[i] : NULL;
}

INTEGRITY_EXPORT bool integrity_stack_pi_end_to_end(const struct integrity_stack_pi *p)
{
	return p->end_to_end;
}

INTEGRITY_EXPORT bool integrity_stack_pi_on_media(const struct integrity_stack_pi *p)
{
	return p->media > 0;
}

INTEGRITY_EXPORT const struct integrity_stack_pi_node *integrity_stack_pi_stop(const struct integrity_stack_pi *p)
{
	return p->stop < p->n ? &p->v[p->stop] : NULL;
}
