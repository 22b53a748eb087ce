/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit's fixes: each fixable reference's bytes replaced by the
 * recommended form, nothing else touched; a unified diff of the change;
 * the write, through the safe writer, after a dated backup, and only when
 * the file is still what was read.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "audit_int.h"
#include "util/safefile.h"

#define DIFF_CONTEXT 3

struct buf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct buf *b, const char *s, size_t len)
{
	if (b->oom || GREEDY_REALLOC(b->p, b->cap, b->n + len + 1) < 0) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

static void puts_buf(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* Findings of file fi that a fix writes, by line then offset. */
static int cmp_refs(const void *x, const void *y)
{
	const struct audit_ref *a = *(const struct audit_ref *const *)x, *b = *(const struct audit_ref *const *)y;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Line i of the fixed text into out (without the newline). */
static void fixed_line(const struct audit_text *t, size_t i, const struct audit_ref *const *refs,
		       const char *const *repl, size_t nrefs, struct buf *out)
{
	const char *s = t->data + t->start[i];
	size_t at = 0;

	for (size_t k = 0; k < nrefs; k++) {
		if (refs[k]->line != i + 1)
			continue;
		put(out, s + at, refs[k]->offset - at);
		puts_buf(out, repl[k]);
		at = refs[k]->offset + refs[k]->len;
	}
	put(out, s + at, t->len[i] - at);
}

static void diff_line(struct buf *d, char mark, const char *s, size_t len, bool last_without_newline)
{
	put(d, &mark, 1);
	put(d, s, len);
	puts_buf(d, "\n");
	if (last_without_newline)
		puts_buf(d, "\\ No newline at end of file\n");
}

int audit_plan_fix(struct integrity_audit *a, size_t fi)
{
	struct audit_file *file = &a->files[fi];
	const struct audit_text *t = &file->text;
	size_t n = 0;

	if (!file->read || t->bad_line)
		return 0;
	_cleanup_free_ const struct audit_ref **refs = calloc(t->nrefs + 1, sizeof(*refs));
	_cleanup_free_ const char **repl = calloc(t->nrefs + 1, sizeof(*repl));
	_cleanup_free_ bool *changed = calloc(t->nlines + 1, sizeof(*changed));
	if (!refs || !repl || !changed)
		return -ENOMEM;
	for (size_t i = 0; i < a->nfindings; i++) {
		const struct audit_finding *f = &a->findings[i];
		if (f->file != (ssize_t)fi || !f->fixable)
			continue;
		refs[n] = &t->refs[f->ref];
		n++;
	}
	if (!n)
		return 0;
	qsort(refs, n, sizeof(*refs), cmp_refs);
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < a->nfindings; i++)
			if (a->findings[i].file == (ssize_t)fi && a->findings[i].fixable &&
			    &t->refs[a->findings[i].ref] == refs[k])
				repl[k] = a->findings[i].recommended;
		changed[refs[k]->line - 1] = true;
	}

	/* The fixed text. */
	struct buf out = { 0 };
	for (size_t i = 0; i < t->nlines; i++) {
		fixed_line(t, i, refs, repl, n, &out);
		if (i + 1 < t->nlines || t->final_newline)
			puts_buf(&out, "\n");
	}
	if (out.oom) {
		free(out.p);
		return -ENOMEM;
	}

	/* The diff: hunks of changed lines with DIFF_CONTEXT lines around,
	 * merged where they touch; removed lines of a run before added ones. */
	struct buf d = { 0 };
	char head[64];
	puts_buf(&d, "--- ");
	puts_buf(&d, file->path);
	puts_buf(&d, "\n+++ ");
	puts_buf(&d, file->path);
	puts_buf(&d, "\n");
	for (size_t i = 0; i < t->nlines;) {
		if (!changed[i]) {
			i++;
			continue;
		}
		size_t first = i > DIFF_CONTEXT ? i - DIFF_CONTEXT : 0, last = i;
		for (size_t j = i; j < t->nlines && j <= last + 2 * DIFF_CONTEXT; j++)
			if (changed[j])
				last = j;
		size_t end = last + DIFF_CONTEXT + 1 < t->nlines ? last + DIFF_CONTEXT + 1 : t->nlines;
		snprintf(head, sizeof(head), "@@ -%zu,%zu +%zu,%zu @@\n", first + 1, end - first, first + 1, end - first);
		puts_buf(&d, head);
		for (size_t j = first; j < end;) {
			if (!changed[j]) {
				diff_line(&d, ' ', t->data + t->start[j], t->len[j], j + 1 == t->nlines && !t->final_newline);
				j++;
				continue;
			}
			size_t run = j;
			while (run < end && changed[run])
				run++;
			for (size_t k = j; k < run; k++)
				diff_line(&d, '-', t->data + t->start[k], t->len[k], k + 1 == t->nlines && !t->final_newline);
			for (size_t k = j; k < run; k++) {
				struct buf l = { 0 };
				fixed_line(t, k, refs, repl, n, &l);
				diff_line(&d, '+', l.p ? l.p : "", l.n, k + 1 == t->nlines && !t->final_newline);
				if (l.oom)
					d.oom = true;
				free(l.p);
			}
			j = run;
		}
		i = end;
	}
	if (d.oom) {
		free(out.p);
		free(d.p);
		return -ENOMEM;
	}
	file->fixed = out.p;
	file->fixed_size = out.n;
	file->diff = d.p;
	file->changes = n;
	return 0;
}

/* ---------------------------------------------------------------- writing */

struct bytes {
	const char *p;
	size_t n;
};

static void write_bytes(FILE *f, void *data)
{
	const struct bytes *b = data;
	fwrite(b->p, 1, b->n, f);
}

/* "<full>.integrityctl-YYYYMMDD-HHMMSS~", or with "-N" before the '~'
 * when that exists already. */
static int backup_name(const struct integrity_audit *a, const struct audit_file *file, char *buf, size_t len)
{
	time_t now = (time_t)a->now;
	struct tm tm;
	char stamp[32];
	struct stat st;

	if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm))
		return -EINVAL;
	for (unsigned i = 0; i < 100; i++) {
		int r = i ? path_printf(buf, len, "%s.integrityctl-%s-%u~", file->full, stamp, i)
			  : path_printf(buf, len, "%s.integrityctl-%s~", file->full, stamp);
		if (r < 0)
			return r;
		if (lstat(buf, &st) < 0 && errno == ENOENT)
			return 0;
	}
	return -EEXIST;
}

INTEGRITY_EXPORT int integrity_audit_file_fix(struct integrity_audit *a, size_t fi, char *backup, size_t len)
{
	char bpath[PATH_MAX];
	int r;

	if (backup && len)
		backup[0] = '\0';
	if (fi >= a->nfiles)
		return -EINVAL;
	struct audit_file *file = &a->files[fi];
	if (!file->read || file->text.bad_line)
		return -EBADMSG;
	if (!file->changes || !file->fixed)
		return 0;

	/* Still the file that was audited? */
	_cleanup_free_ char *now = NULL;
	size_t size;
	mode_t mode;
	if ((r = audit_read_file(file->full, a->root, &now, &size, &mode)) < 0)
		return r;
	if (size != file->text.size || memcmp(now, file->text.data, size) != 0)
		return -ESTALE;

	if ((r = backup_name(a, file, bpath, sizeof(bpath))) < 0)
		return r;
	struct bytes old = { file->text.data, file->text.size }, fixed = { file->fixed, file->fixed_size };
	if ((r = safe_write_file(bpath, 0, mode, write_bytes, &old)) < 0)
		return r;
	if (backup && len && path_printf(backup, len, "%s", bpath) < 0)
		backup[0] = '\0';
	if ((r = safe_write_file(file->full, 0, mode, write_bytes, &fixed)) < 0)
		return r;
	return 1;
}
