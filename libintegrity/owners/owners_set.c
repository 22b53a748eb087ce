/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The owners found so far: the list each resolver adds to (and takes back
 * from when it fails), the byte ranges still wanted, and the public
 * accessors of the result.  The resolvers (owners_ext2.c, owners_xfs.c,
 * owners_mounted.c) and the entry point (owners.c) build on this file;
 * it calls none of them.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "owners_int.h"

/* ------------------------------------------------------------------ results */

INTEGRITY_EXPORT const char *integrity_owner_kind_name(enum integrity_owner_kind kind)
{
	static const char *const names[] = { "file", "metadata", "free", "unknown" };

	return (unsigned)kind < ARRAY_SIZE(names) ? names[kind] : "unknown";
}

int owners_add(struct integrity_owners *o, size_t range, const struct integrity_owner *w)
{
	struct owner_list *l = &o->owners[range];

	if (GREEDY_REALLOC(l->v, l->cap, l->n + 1) < 0)
		return -ENOMEM;
	struct integrity_owner *d = &l->v[l->n];
	*d = *w;
	d->path = w->path ? strdup(w->path) : NULL;
	d->note = w->note ? strdup(w->note) : NULL;
	if ((w->path && !d->path) || (w->note && !d->note)) {
		free((char *)d->path);
		free((char *)d->note);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

/* Each range's count of owners, so that a resolution that fails can take
 * back what it added (owners_rollback()). */
size_t *owners_mark(const struct integrity_owners *o)
{
	size_t *mark = calloc(o->nranges ? o->nranges : 1, sizeof(*mark));

	for (size_t i = 0; mark && i < o->nranges; i++)
		mark[i] = o->owners[i].n;
	return mark;
}

void owners_rollback(struct integrity_owners *o, const size_t *mark)
{
	for (size_t i = 0; i < o->nranges; i++)
		while (o->owners[i].n > mark[i]) {
			struct integrity_owner *w = &o->owners[i].v[--o->owners[i].n];
			free((char *)w->path);
			free((char *)w->note);
		}
}

/* A note on every owner added since mark, after the note it has. */
int owners_note_since(struct integrity_owners *o, const size_t *mark, const char *note)
{
	for (size_t i = 0; i < o->nranges; i++)
		for (size_t k = mark[i]; k < o->owners[i].n; k++) {
			struct integrity_owner *w = &o->owners[i].v[k];
			char *n;
			if (w->note ? asprintf(&n, "%s; %s", w->note, note) < 0 : !(n = strdup(note)))
				return -ENOMEM;
			free((char *)w->note);
			w->note = n;
		}
	return 0;
}

INTEGRITY_EXPORT void integrity_owners_free(struct integrity_owners *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->nranges; i++) {
		for (size_t k = 0; k < o->owners[i].n; k++) {
			free((char *)o->owners[i].v[k].path);
			free((char *)o->owners[i].v[k].note);
		}
		free(o->owners[i].v);
	}
	for (size_t i = 0; i < o->nfs; i++) {
		free(o->fs[i]->type);
		free(o->fs[i]->uuid);
		free(o->fs[i]->mountpoint);
		free(o->fs[i]->device);
		free(o->fs[i]);
	}
	free(o->fs);
	free(o->owners);
	free(o->ranges);
	free(o);
}

INTEGRITY_EXPORT size_t integrity_owners_count(const struct integrity_owners *o, size_t range)
{
	return o && range < o->nranges ? o->owners[range].n : 0;
}

INTEGRITY_EXPORT const struct integrity_owner *integrity_owners_get(const struct integrity_owners *o,
								   size_t range, size_t index)
{
	if (!o || range >= o->nranges || index >= o->owners[range].n)
		return NULL;
	return &o->owners[range].v[index];
}

struct file_key {
	const struct integrity_filesystem *fs;
	uint64_t inode;
};

static int file_key_cmp(const void *a, const void *b)
{
	const struct file_key *x = a, *y = b;

	if (x->fs != y->fs)
		return x->fs < y->fs ? -1 : 1;
	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

INTEGRITY_EXPORT size_t integrity_owners_damaged_files(const struct integrity_owners *o)
{
	size_t n = 0, distinct = 0;

	if (!o)
		return 0;
	for (size_t i = 0; i < o->nranges; i++)
		n += o->owners[i].n;
	struct file_key *keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys)
		return 0;
	n = 0;
	for (size_t i = 0; i < o->nranges; i++)
		for (size_t k = 0; k < o->owners[i].n; k++) {
			const struct integrity_owner *w = &o->owners[i].v[k];
			if (w->kind == INTEGRITY_OWNER_FILE)
				keys[n++] = (struct file_key){ w->fs, w->inode ? w->inode : (uintptr_t)w };
		}
	if (n)
		qsort(keys, n, sizeof(*keys), file_key_cmp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || file_key_cmp(&keys[i - 1], &keys[i]) != 0)
			distinct++;
	free(keys);
	return distinct;
}

INTEGRITY_EXPORT const char *integrity_owners_unresolved(const struct integrity_owners *o)
{
	if (!o)
		return NULL;
	for (size_t i = 0; i < o->nranges; i++)
		for (size_t k = 0; k < o->owners[i].n; k++)
			if (o->owners[i].v[k].kind == INTEGRITY_OWNER_UNKNOWN)
				return o->owners[i].v[k].note ? o->owners[i].v[k].note : "not resolved";
	return NULL;
}

/* ------------------------------------------------------------------ pieces */


int owners_want_add(struct want_set *s, const struct want *w)
{
	if (GREEDY_REALLOC(s->v, s->cap, s->n + 1) < 0)
		return -ENOMEM;
	s->v[s->n++] = *w;
	return 0;
}

static int want_cmp(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int owners_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sort by start, for owners_want_first(). */
int owners_want_index(struct want_set *s)
{
	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), want_cmp);
	free(s->maxend);
	s->maxend = calloc(s->n ? s->n : 1, sizeof(*s->maxend));
	if (!s->maxend)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		s->maxend[i] = i && s->maxend[i - 1] > s->v[i].end ? s->maxend[i - 1] : s->v[i].end;
	return 0;
}

/* The first want that may overlap bytes from start on: later ones that
 * overlap follow it, until one starts at or past the end. */
size_t owners_want_first(const struct want_set *s, uint64_t start)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->maxend[mid] > start)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

void owners_want_free(struct want_set *s)
{
	free(s->v);
	free(s->maxend);
	memset(s, 0, sizeof(*s));
}

void owners_span(struct integrity_owner *w, const struct piece *p, uint64_t fs_start, uint64_t fs_end)
{
	w->device_offset = p->dev_off + (fs_start - p->fs_off);
	w->device_length = fs_end - fs_start;
}

const char *owners_under_mount_root(const struct fs_entry *fs, const char *path)
{
	const char *root = fs->mount_root[0] ? fs->mount_root : "/";
	size_t rl = strcmp(root, "/") ? strlen(root) : 0;

	if (strncmp(path, root, rl) || (path[rl] != '/' && path[rl] != '\0'))
		return NULL;
	path += rl;
	while (*path == '/')
		path++;
	return path;
}

int owners_add_simple(struct integrity_owners *o, const struct fs_entry *fs, const struct piece *p,
		      uint64_t start, uint64_t end, enum integrity_owner_kind kind, const char *metadata,
		      const char *note)
{
	struct integrity_owner w = { .kind = kind, .fs = fs ? &fs->pub : NULL, .metadata = metadata,
				     .note = note };

	owners_span(&w, p, start, end);
	return owners_add(o, p->range, &w);
}
