/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a scrub gathers as it goes and what its parts all write to: its
 * note and first failure, and the lists of bad-block runs.  The engine
 * (scrub.c), the target's opening and the backends use this file; it
 * calls none of them.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scrub.h"

/* Notes add up: "auto chose X because ...; resuming at ...". */
__attribute__((format(printf, 2, 3))) void scrub_add_note(struct integrity_scrub *s, const char *fmt, ...)
{
	size_t used = strlen(s->note);
	va_list ap;

	if (used && used + 2 < sizeof(s->note)) {
		memcpy(s->note + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(s->note + used, sizeof(s->note) - used, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 3))) void scrub_fail(struct integrity_scrub *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failure[0])
		return;	/* the first cause is the one to tell */
	va_start(ap, fmt);
	vsnprintf(s->failure, sizeof(s->failure), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------- bad blocks */

/* Runs merge when the next block fails the same way; tag mismatches also
 * need the same value found (a zeroed or constant tag over a range), so
 * that distinct corruptions keep their own expected and found values. */
static bool extends(const struct integrity_scrub_error *run, const struct integrity_scrub_error *e)
{
	return run->lba + run->count == e->lba && run->kind == e->kind && run->tag == e->tag &&
	       run->tag_known == e->tag_known && run->err == e->err && run->device_status == e->device_status &&
	       run->partno == e->partno && (e->kind != INTEGRITY_SCRUB_ERR_TAG || run->found == e->found);
}

/* Whether lba is the first block of a partition or the one after its last. */
static bool partition_edge(const struct scrub_errors *l, uint64_t lba)
{
	for (size_t i = 0; i < l->nparts; i++)
		if (lba == l->parts[i].start || lba == l->parts[i].start + l->parts[i].length)
			return true;
	return false;
}

int scrub_errors_add(struct scrub_errors *l, const struct integrity_scrub_error *e)
{
	/* A block failing two checks interleaves two runs: look a few back. */
	for (size_t i = l->n, k = 0; i > 0 && k < 4; i--, k++)
		if (extends(&l->v[i - 1], e) && !partition_edge(l, e->lba)) {
			l->v[i - 1].count += e->count;
			return 0;
		}
	if (GREEDY_REALLOC(l->v, l->cap, l->n + 1) < 0)
		return -ENOMEM;
	l->v[l->n++] = *e;
	return 0;
}

void scrub_errors_clear(struct scrub_errors *l)
{
	l->n = 0;
}

uint64_t scrub_errors_blocks(const struct scrub_errors *l, bool io_only)
{
	uint64_t blocks = 0, last_end = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct integrity_scrub_error *e = &l->v[i];
		if (io_only && e->kind != INTEGRITY_SCRUB_ERR_IO)
			continue;
		uint64_t from = e->lba > last_end ? e->lba : last_end, end = e->lba + e->count;
		if (end > from)
			blocks += end - from;
		if (end > last_end)
			last_end = end;
	}
	return blocks;
}
