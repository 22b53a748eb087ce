/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reports: scrubs that have run, their bad blocks up the stack. */
#include "config.h"

#include <sys/stat.h>

#include "internal.h"
#include "scrub.h"
#include "job.h"
#include "libintegrity/owners.h"

/* ------------------------------------------------------ devices above */

struct seen {
	const char *device;
	size_t first;		/* record * stride + depth: the order first seen */
	uint64_t count;
};

static int by_device_then_first(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;
	int c = strcmp(x->device, y->device);

	if (c)
		return c;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int by_first(const void *a, const void *b)
{
	const struct job_above_total *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

int job_above_totals(const struct job_chain *chains, const struct integrity_scrub_error *errs, size_t n,
		     struct job_above_total **totals, size_t *ntotals)
{
	size_t all = 0, depth = 1;

	*totals = NULL;
	*ntotals = 0;
	for (size_t i = 0; i < n; i++) {
		all += chains[i].n;
		if (chains[i].n > depth)
			depth = chains[i].n;
	}
	if (!all)
		return 0;
	struct seen *v = calloc(all, sizeof(*v));
	struct job_above_total *t = calloc(all, sizeof(*t));
	if (!v || !t) {
		free(v);
		free(t);
		return -ENOMEM;
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < chains[i].n; k++)
			v[m++] = (struct seen){ chains[i].v[k].device, i * depth + k, errs[i].count };
	qsort(v, m, sizeof(*v), by_device_then_first);
	size_t nt = 0;
	for (size_t i = 0; i < m; i++) {
		if (nt && !strcmp(t[nt - 1].device, v[i].device)) {
			t[nt - 1].bad_blocks += v[i].count;
			continue;
		}
		t[nt++] = (struct job_above_total){ v[i].device, v[i].count, v[i].first };
	}
	free(v);
	qsort(t, nt, sizeof(*t), by_first);
	*totals = t;
	*ntotals = nt;
	return 0;
}

/* ------------------------------------------------------------ md arrays */

static int add_array(struct job_target *t, const char *name, struct integrity_stack *st)
{
	struct job_array *a = realloc(t->arrays, (t->narrays + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	t->arrays = a;
	a = &t->arrays[t->narrays];
	memset(a, 0, sizeof(*a));
	snprintf(a->name, sizeof(a->name), "%s", name);
	integrity_stack_md(st, &a->info);
	size_t k = integrity_stack_md_member_count(st);
	if (!(a->members = calloc(k ? k : 1, sizeof(*a->members))))
		return -ENOMEM;
	t->narrays++;
	for (size_t i = 0; i < k; i++) {
		a->members[i] = *integrity_stack_md_member(st, i);
		a->members[i].bad_blocks = strdup(a->members[i].bad_blocks ? a->members[i].bad_blocks : "");
		if (!a->members[i].bad_blocks)
			return -ENOMEM;
		a->nmembers++;
	}
	return 0;
}

/* The md arrays above name (its partitions' too), read after the run so
 * that their counters say what the scrub saw. */
static void load_arrays(struct job_target *t, struct integrity_context *ctx, const char *name, unsigned depth)
{
	struct integrity_device *dev;
	struct integrity_stack *st;

	if (depth > 8 || integrity_device_new(ctx, name, &dev) < 0)
		return;
	if (integrity_stack_new(dev, &st) < 0) {
		integrity_device_free(dev);
		return;
	}
	if (depth > 0 && integrity_stack_kind(st) == INTEGRITY_STACK_MD)
		add_array(t, integrity_device_name(dev), st);
	for (size_t i = 0; i < integrity_stack_above_count(st); i++)
		load_arrays(t, ctx, integrity_stack_above(st, i), depth + 1);
	integrity_stack_free(st);
	integrity_device_free(dev);
}

/* --------------------------------------------------------------- report */

INTEGRITY_EXPORT int integrity_scrub_report_new(struct integrity_scrub_report **report)
{
	if (!report)
		return -EINVAL;
	*report = calloc(1, sizeof(**report));
	return *report ? 0 : -ENOMEM;
}

static void target_free(struct job_target *t)
{
	for (size_t i = 0; i < t->nchains; i++)
		free(t->chains[i].v);
	free(t->chains);
	free(t->totals);
	for (size_t i = 0; i < t->narrays; i++) {
		for (size_t k = 0; k < t->arrays[i].nmembers; k++)
			free((char *)t->arrays[i].members[k].bad_blocks);
		free(t->arrays[i].members);
	}
	free(t->arrays);
	integrity_owners_free(t->owners);
	free(t->disk);
	free(t->target);
}

INTEGRITY_EXPORT void integrity_scrub_report_free(struct integrity_scrub_report *report)
{
	if (!report)
		return;
	for (size_t i = 0; i < report->n; i++)
		target_free(&report->v[i]);
	free(report->v);
	free(report);
}

/* Each bad block's chain up the stack from the target's disk. */
static int load_chains(struct job_target *t, struct integrity_context *ctx)
{
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(t->scrub, &n);
	struct integrity_device *disk;

	if (!errs)
		n = 0;

	if (integrity_device_new(ctx, t->disk, &disk) < 0) {
		free(t->disk);	/* a disk that cannot be looked up has no stack to tell */
		t->disk = NULL;
		return 0;
	}
	if (!n) {
		integrity_device_free(disk);
		return 0;
	}
	t->chains = calloc(n, sizeof(*t->chains));
	if (!t->chains) {
		integrity_device_free(disk);
		return -ENOMEM;
	}
	t->nchains = n;
	for (size_t i = 0; i < n; i++)
		if (integrity_stack_map_above(disk, errs[i].lba, &t->chains[i].v, &t->chains[i].n) < 0) {
			t->chains[i].v = NULL;
			t->chains[i].n = 0;
		}
	integrity_device_free(disk);
	return job_above_totals(t->chains, errs, n, &t->totals, &t->ntotals);
}

/* What the stack says about a scrub that has run, into t (target set). */
static int target_load(struct job_target *t, const struct integrity_scrub *scrub, int result)
{
	t->scrub = scrub;
	t->result = result;
	if (!scrub)
		return 0;
	if (scrub->dev && !(t->disk = strdup(integrity_device_disk_name(scrub->dev))))
		return -ENOMEM;
	int r = t->disk ? load_chains(t, scrub->ctx) : 0;
	if (r < 0)
		return r;
	if (t->disk)
		load_arrays(t, scrub->ctx, integrity_device_name(scrub->dev), 0);
	return 0;
}

INTEGRITY_EXPORT int integrity_scrub_report_add(struct integrity_scrub_report *report,
						const struct integrity_scrub *scrub, int result)
{
	if (!report || !scrub)
		return -EINVAL;
	if (GREEDY_REALLOC(report->v, report->cap, report->n + 1) < 0)
		return -ENOMEM;
	struct job_target *t = &report->v[report->n];
	memset(t, 0, sizeof(*t));
	if (!(t->target = strdup(scrub->target)))
		return -ENOMEM;
	int r = target_load(t, scrub, result);
	if (r < 0) {
		target_free(t);
		return r;
	}
	return (int)report->n++;
}

int job_report_reserve(struct integrity_scrub_report *report, const char *const *targets, size_t n)
{
	if (report->n || !(report->v = calloc(n ? n : 1, sizeof(*report->v))))
		return report->n ? -EINVAL : -ENOMEM;
	report->cap = n ? n : 1;
	for (size_t i = 0; i < n; i++) {
		report->v[i].result = -ECANCELED;
		if (!(report->v[i].target = strdup(targets[i])))
			return -ENOMEM;
		report->n++;
	}
	return 0;
}

/* Entries are filled by the job's workers, each its own: no lock. */
int job_report_fill(struct integrity_scrub_report *report, size_t i, const struct integrity_scrub *scrub,
		    int result)
{
	struct job_target *t = &report->v[i];
	int r = target_load(t, scrub, result);

	if (r < 0)
		t->result = t->result < 0 ? t->result : r;
	return r;
}

static const struct job_target *target_at(const struct integrity_scrub_report *report, size_t i)
{
	return report && i < report->n ? &report->v[i] : NULL;
}

INTEGRITY_EXPORT size_t integrity_scrub_report_count(const struct integrity_scrub_report *report)
{
	return report ? report->n : 0;
}

INTEGRITY_EXPORT const struct integrity_scrub *integrity_scrub_report_scrub(const struct integrity_scrub_report *report,
									    size_t target)
{
	const struct job_target *t = target_at(report, target);

	return t ? t->scrub : NULL;
}

INTEGRITY_EXPORT const char *integrity_scrub_report_target(const struct integrity_scrub_report *report,
							   size_t target)
{
	const struct job_target *t = target_at(report, target);

	return t ? t->target : NULL;
}

INTEGRITY_EXPORT int integrity_scrub_report_result(const struct integrity_scrub_report *report, size_t target)
{
	const struct job_target *t = target_at(report, target);

	return t ? t->result : -EINVAL;
}

INTEGRITY_EXPORT const char *integrity_scrub_report_disk(const struct integrity_scrub_report *report, size_t target)
{
	const struct job_target *t = target_at(report, target);

	return t ? t->disk : NULL;
}

INTEGRITY_EXPORT const struct integrity_stack_place *
integrity_scrub_report_above(const struct integrity_scrub_report *report, size_t target, size_t i, size_t *count)
{
	const struct job_target *t = target_at(report, target);

	if (!t || i >= t->nchains || !t->chains[i].n) {
		if (count)
			*count = 0;
		return NULL;
	}
	if (count)
		*count = t->chains[i].n;
	return t->chains[i].v;
}

INTEGRITY_EXPORT size_t integrity_scrub_report_above_device_count(const struct integrity_scrub_report *report,
								  size_t target)
{
	const struct job_target *t = target_at(report, target);

	return t ? t->ntotals : 0;
}

INTEGRITY_EXPORT const char *integrity_scrub_report_above_device(const struct integrity_scrub_report *report,
								 size_t target, size_t i, uint64_t *bad_blocks)
{
	const struct job_target *t = target_at(report, target);

	if (!t || i >= t->ntotals)
		return NULL;
	if (bad_blocks)
		*bad_blocks = t->totals[i].bad_blocks;
	return t->totals[i].device;
}

static const struct job_array *array_at(const struct integrity_scrub_report *report, size_t target, size_t i)
{
	const struct job_target *t = target_at(report, target);

	return t && i < t->narrays ? &t->arrays[i] : NULL;
}

INTEGRITY_EXPORT size_t integrity_scrub_report_array_count(const struct integrity_scrub_report *report, size_t target)
{
	const struct job_target *t = target_at(report, target);

	return t ? t->narrays : 0;
}

INTEGRITY_EXPORT const char *integrity_scrub_report_array_name(const struct integrity_scrub_report *report,
							       size_t target, size_t i)
{
	const struct job_array *a = array_at(report, target, i);

	return a ? a->name : NULL;
}

INTEGRITY_EXPORT const struct integrity_md_info *
integrity_scrub_report_array_info(const struct integrity_scrub_report *report, size_t target, size_t i)
{
	const struct job_array *a = array_at(report, target, i);

	return a ? &a->info : NULL;
}

INTEGRITY_EXPORT size_t integrity_scrub_report_array_member_count(const struct integrity_scrub_report *report,
								  size_t target, size_t i)
{
	const struct job_array *a = array_at(report, target, i);

	return a ? a->nmembers : 0;
}

INTEGRITY_EXPORT const struct integrity_md_member *
integrity_scrub_report_array_member(const struct integrity_scrub_report *report, size_t target, size_t i, size_t k)
{
	const struct job_array *a = array_at(report, target, i);

	return a && k < a->nmembers ? &a->members[k] : NULL;
}

/* ------------------------------------------------------------------ owners */

static int resolve_owners(struct job_target *t)
{
	const struct integrity_scrub *s = t->scrub;
	size_t n;
	const struct integrity_scrub_error *errs = s ? integrity_scrub_errors(s, &n) : NULL;
	struct stat st;

	/* Only a block device's blocks belong to something on it. */
	if (!errs || !n || !s->dev || stat(s->target, &st) < 0 || !S_ISBLK(st.st_mode))
		return 0;
	uint32_t bs = integrity_scrub_block_size(s);
	uint64_t base = integrity_scrub_lba_base(s), blocks = integrity_scrub_blocks(s);
	struct integrity_byte_range *ranges = calloc(n, sizeof(*ranges));
	if (!ranges)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		/* LBAs numbered from a --seed of one's own are not places on
		 * the device: nothing to resolve. */
		if (errs[i].lba < base || errs[i].lba - base > blocks || errs[i].count > blocks - (errs[i].lba - base)) {
			free(ranges);
			return 0;
		}
		ranges[i] = (struct integrity_byte_range){ (errs[i].lba - base) * bs, errs[i].count * bs };
	}
	int r = integrity_owners_resolve(s->ctx, s->target, ranges, n, 0, &t->owners);
	free(ranges);
	return r;
}

int job_report_owners(struct integrity_scrub_report *report, size_t i)
{
	struct job_target *t = report && i < report->n ? &report->v[i] : NULL;

	if (!t)
		return -EINVAL;
	if (!t->owners_done) {
		t->owners_err = resolve_owners(t);
		t->owners_done = true;
	}
	return t->owners_err;
}

INTEGRITY_EXPORT int integrity_scrub_report_resolve_owners(struct integrity_scrub_report *report, size_t target)
{
	return job_report_owners(report, target);
}

INTEGRITY_EXPORT const struct integrity_owners *
integrity_scrub_report_owners(const struct integrity_scrub_report *report, size_t target, int *err)
{
	const struct job_target *t = target_at(report, target);

	if (err)
		*err = t && t->owners_done ? t->owners_err : 0;
	return t ? t->owners : NULL;
}
