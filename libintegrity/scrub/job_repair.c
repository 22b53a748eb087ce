/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* md RAID1 repair: md rewrites a block bad on one copy from a good one. */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>

#include "internal.h"
#include "device.h"
#include "scrub.h"
#include "job.h"

static const char *const result_names[] = {
	[INTEGRITY_SCRUB_REPAIRED] = "repaired",
	[INTEGRITY_SCRUB_REPAIR_STILL_BAD] = "still-bad",
	[INTEGRITY_SCRUB_REPAIR_BAD_EVERYWHERE] = "bad-on-every-copy",
	[INTEGRITY_SCRUB_REPAIR_NEXT_TO_BAD] = "next-to-a-block-bad-on-every-copy",
	[INTEGRITY_SCRUB_REPAIR_BUSY] = "array-busy",
	[INTEGRITY_SCRUB_REPAIR_FAILED] = "repair-failed",
};

INTEGRITY_EXPORT const char *integrity_scrub_repair_result_name(enum integrity_scrub_repair_result result)
{
	return (unsigned)result < ARRAY_SIZE(result_names) ? result_names[result] : NULL;
}

INTEGRITY_EXPORT int integrity_scrub_repair_new(struct integrity_scrub_repair **repair,
						struct integrity_context *ctx, const char *array)
{
	if (!repair || !ctx || !array)
		return -EINVAL;
	*repair = calloc(1, sizeof(**repair));
	if (!*repair)
		return -ENOMEM;
	(*repair)->ctx = ctx;
	if (path_printf((*repair)->array, sizeof((*repair)->array), "%s", array) < 0) {
		free(*repair);
		*repair = NULL;
		return -ENAMETOOLONG;
	}
	return 0;
}

INTEGRITY_EXPORT void integrity_scrub_repair_free(struct integrity_scrub_repair *repair)
{
	if (!repair)
		return;
	free(repair->v);
	free(repair->done);
	free(repair);
}

INTEGRITY_EXPORT int integrity_scrub_repair_add(struct integrity_scrub_repair *repair,
						const struct integrity_scrub_report *report)
{
	if (!repair)
		return -EINVAL;
	for (size_t t = 0; t < integrity_scrub_report_count(report); t++) {
		const struct integrity_scrub *s = integrity_scrub_report_scrub(report, t);
		const char *disk = integrity_scrub_report_disk(report, t);
		size_t n;

		if (!s)
			continue;	/* not run */
		const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
		for (size_t i = 0; disk && i < n; i++) {
			size_t na;
			const struct integrity_stack_place *above = integrity_scrub_report_above(report, t, i, &na);
			for (size_t k = 0; k < na; k++) {
				if (strcmp(above[k].device, repair->array))
					continue;
				if (GREEDY_REALLOC(repair->v, repair->cap, repair->n + 1) < 0)
					return -ENOMEM;
				struct job_repair_item *it = &repair->v[repair->n++];
				memset(it, 0, sizeof(*it));
				snprintf(it->b.device, sizeof(it->b.device), "%s", repair->array);
				it->b.lba = above[k].lba;
				it->b.count = errs[i].count;
				snprintf(it->b.member, sizeof(it->b.member), "%s", disk);
				snprintf(it->path, sizeof(it->path), "%s", s->target);
				it->b.member_lba = errs[i].partno ? errs[i].part_offset : errs[i].lba;
			}
		}
	}
	return 0;
}

INTEGRITY_EXPORT size_t integrity_scrub_repair_pending(const struct integrity_scrub_repair *repair)
{
	return repair ? repair->n : 0;
}

/* ------------------------------------------------------------- the plan */

static bool covers(const struct job_repair_item *it, uint64_t lba)
{
	return it->b.lba <= lba && lba < it->b.lba + it->b.count;
}

/* Bad on every copy: as many members as md has copies hold it bad.  A
 * block failing two checks on one member is two records of one copy. */
static bool bad_everywhere(const struct job_repair_item *items, size_t n, size_t i, unsigned copies)
{
	const char *seen[64];
	unsigned found = 0;
	uint64_t lba = items[i].b.lba;

	if (!copies)
		return true;
	for (size_t k = 0; k < n && found < copies; k++) {
		if (!covers(&items[k], lba))
			continue;
		bool dup = false;
		for (unsigned x = 0; x < found && !dup; x++)
			dup = !strcmp(seen[x], items[k].b.member);
		if (!dup && found < ARRAY_SIZE(seen))
			seen[found++] = items[k].b.member;
	}
	return found >= copies;
}

/* md's repair window: one resync step reads and rewrites this much. */
#define MD_REPAIR_WINDOW 128

void job_repair_plan(const struct job_repair_item *items, size_t n, unsigned copies, uint64_t per,
		     enum integrity_scrub_repair_result *verdicts, bool *skip)
{
	bool *everywhere = calloc(n ? n : 1, sizeof(*everywhere));

	for (size_t i = 0; i < n; i++)
		everywhere[i] = bad_everywhere(items, n, i, copies);
	for (size_t i = 0; i < n; i++) {
		uint64_t start = items[i].b.lba * per, end = (items[i].b.lba + items[i].b.count) * per;
		verdicts[i] = INTEGRITY_SCRUB_REPAIRED;
		skip[i] = false;
		for (size_t k = 0; k < i && everywhere[i]; k++)
			skip[i] |= items[k].b.lba == items[i].b.lba;
		/* A block bad on every copy within md's window would fail the
		 * member: leave it, and the range around it, to the operator. */
		for (size_t k = 0; k < n; k++)
			if (everywhere[k] && items[k].b.lba * per < end + MD_REPAIR_WINDOW &&
			    (items[k].b.lba + items[k].b.count) * per + MD_REPAIR_WINDOW > start) {
				verdicts[i] = everywhere[i] ? INTEGRITY_SCRUB_REPAIR_BAD_EVERYWHERE
							    : INTEGRITY_SCRUB_REPAIR_NEXT_TO_BAD;
				break;
			}
	}
	free(everywhere);
}

/* ------------------------------------------------------------------ md */

static int md_write(const char *mddir, const char *attr, const char *value)
{
	char path[PATH_MAX];
	int fd;

	if (path_printf(path, sizeof(path), "%s/%s", mddir, attr) < 0)
		return -ENAMETOOLONG;
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	ssize_t w = write(fd, value, strlen(value));
	int r = w < 0 ? -errno : 0;
	close(fd);
	return r;
}

static void md_read(const char *mddir, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	buf[0] = '\0';
	if (path_printf(path, sizeof(path), "%s/%s", mddir, attr) < 0)
		return;
	if ((f = fopen(path, "re"))) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

struct md_progress {
	const char *mddir;
	uint64_t end;
};

/* Until done(value of attr) holds: each read arms sysfs's notification
 * and poll(POLLPRI) wakes on md's next sysfs_notify, so no change between
 * the read and the wait is missed.  0, or -ETIMEDOUT after timeout_ms
 * without a change. */
static int md_wait(const char *mddir, const char *attr, bool (*done)(const char *, const struct md_progress *),
		   const struct md_progress *arg, int timeout_ms)
{
	char path[PATH_MAX], buf[128];
	struct pollfd pfd = { .events = POLLPRI | POLLERR };
	int r = -ETIMEDOUT;

	if (path_printf(path, sizeof(path), "%s/%s", mddir, attr) < 0)
		return -ENAMETOOLONG;
	if ((pfd.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = pread(pfd.fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (done(buf, arg)) {
			r = 0;
			break;
		}
		if (poll(&pfd, 1, timeout_ms) <= 0)
			break;
	}
	close(pfd.fd);
	return r;
}

static bool is_idle(const char *v, const struct md_progress *arg)
{
	(void)arg;
	return !strcmp(v, "idle");
}

/* sync_completed: "DONE / TOTAL" while running; "none" before the resync
 * thread starts and after it ended (then sync_action is idle again). */
static bool reached(const char *v, const struct md_progress *p)
{
	unsigned long long done, total;
	char action[32];

	if (sscanf(v, "%llu / %llu", &done, &total) == 2)
		return done >= p->end;
	md_read(p->mddir, "sync_action", action, sizeof(action));
	return !strcmp(action, "idle");
}

/* Have md rewrite sectors [start, end) of the array from a good copy: a
 * repair limited by sync_min/sync_max, stopped when md reports reaching
 * sync_max.  0, or -errno. */
static int md_repair_range(const char *mddir, uint64_t start, uint64_t end)
{
	char buf[64];
	int r;

	md_read(mddir, "sync_action", buf, sizeof(buf));
	if (strcmp(buf, "idle"))
		return -EBUSY;
	snprintf(buf, sizeof(buf), "%" PRIu64, end);
	if ((r = md_write(mddir, "sync_max", buf)) < 0)
		return r;
	snprintf(buf, sizeof(buf), "%" PRIu64, start);
	if ((r = md_write(mddir, "sync_min", buf)) == 0 && (r = md_write(mddir, "sync_action", "repair")) == 0) {
		/* running, then paused at sync_max or finished */
		struct md_progress p = { mddir, end };
		r = md_wait(mddir, "sync_completed", reached, &p, 60000);
		md_write(mddir, "sync_action", "idle");
		int w = md_wait(mddir, "sync_action", is_idle, &p, 60000);
		if (r == 0)
			r = w;
	}
	md_write(mddir, "sync_min", "0");
	md_write(mddir, "sync_max", "max");
	return r;
}

/* The repaired range scrubbed again, by itself: no checkpoint. */
static enum integrity_scrub_repair_result verify_again(struct integrity_context *ctx, const struct job_repair_item *it,
						       const struct integrity_scrub_params *params)
{
	struct integrity_scrub_params p = *params;
	struct integrity_scrub *s = NULL;

	p.target = it->path;
	p.range_start = it->b.member_lba;
	p.range_length = it->b.count;
	p.state_dir = NULL;
	p.restart = false;
	int r = integrity_scrub_new(&s, ctx, &p);
	if (r == 0)
		r = integrity_scrub_run(s, NULL);
	const struct integrity_scrub_progress *pr = r == 0 ? integrity_scrub_get_progress(s) : NULL;
	bool good = pr && !pr->bad_blocks && !pr->io_errors;
	integrity_scrub_free(s);
	return good ? INTEGRITY_SCRUB_REPAIRED : INTEGRITY_SCRUB_REPAIR_STILL_BAD;
}

/* Array order, then member name: scrubs of the members end in any order. */
static int by_lba_then_member(const void *a, const void *b)
{
	const struct job_repair_item *x = a, *y = b;

	if (x->b.lba != y->b.lba)
		return x->b.lba < y->b.lba ? -1 : 1;
	return strcmp(x->b.member, y->b.member);
}

void job_repair_merge(struct job_repair_item *items, size_t *n)
{
	size_t kept = 0;

	qsort(items, *n, sizeof(*items), by_lba_then_member);
	for (size_t i = 0; i < *n; i++) {
		struct job_repair_item *last = kept ? &items[kept - 1] : NULL;
		if (last && last->b.lba == items[i].b.lba && !strcmp(last->b.member, items[i].b.member)) {
			if (items[i].b.count > last->b.count)
				last->b.count = items[i].b.count;
			continue;
		}
		if (kept != i)
			items[kept] = items[i];
		kept++;
	}
	*n = kept;
}

static int repair_run(struct integrity_scrub_repair *repair, const struct integrity_scrub_params *params)
{
	struct integrity_device *md;
	struct integrity_stack *st;
	struct integrity_md_info info;
	char mddir[PATH_MAX];
	int r = integrity_device_new(repair->ctx, repair->array, &md);

	if (r < 0)
		return r;
	if ((r = integrity_stack_new(md, &st)) == 0) {
		r = integrity_stack_md(st, &info);
		integrity_stack_free(st);
	}
	uint32_t lbs = integrity_device_logical_block_size(md);
	integrity_device_free(md);
	if (r == -ENODATA || (r == 0 && strcmp(info.level, "raid1")))
		return -EMEDIUMTYPE;
	if (r < 0)
		return r;
	if (path_printf(mddir, sizeof(mddir), "%s/block/%s/md", repair->ctx->root, repair->array) < 0)
		return -ENAMETOOLONG;
	job_repair_merge(repair->v, &repair->n);
	enum integrity_scrub_repair_result *verdicts = calloc(repair->n ? repair->n : 1, sizeof(*verdicts));
	bool *skip = calloc(repair->n ? repair->n : 1, sizeof(*skip));
	free(repair->done);
	repair->done = calloc(repair->n ? repair->n : 1, sizeof(*repair->done));
	repair->ndone = 0;
	if (!verdicts || !skip || !repair->done) {
		free(verdicts);
		free(skip);
		return -ENOMEM;
	}
	uint64_t per = (lbs ? lbs : 512) / 512;
	job_repair_plan(repair->v, repair->n, info.raid_disks, per, verdicts, skip);
	for (size_t i = 0; i < repair->n; i++) {
		const struct job_repair_item *it = &repair->v[i];
		if (skip[i])
			continue;	/* one line for a block bad on every copy */
		enum integrity_scrub_repair_result res = verdicts[i];
		if (res == INTEGRITY_SCRUB_REPAIRED) {
			r = md_repair_range(mddir, it->b.lba * per, (it->b.lba + it->b.count) * per);
			if (r < 0)
				res = r == -EBUSY ? INTEGRITY_SCRUB_REPAIR_BUSY : INTEGRITY_SCRUB_REPAIR_FAILED;
			else
				res = verify_again(repair->ctx, it, params);
		}
		repair->done[repair->ndone] = it->b;
		repair->done[repair->ndone++].result = res;
	}
	free(verdicts);
	free(skip);
	return 0;
}

INTEGRITY_EXPORT int integrity_scrub_repair_run_sized(struct integrity_scrub_repair *repair,
						      const struct integrity_scrub_params *params, size_t size)
{
	struct integrity_scrub_params p;
	int r = struct_copy_in(&p, sizeof(p), params, size);

	if (r < 0)
		return r;
	if (!repair)
		return -EINVAL;
	return repair_run(repair, &p);
}

INTEGRITY_EXPORT size_t integrity_scrub_repair_count(const struct integrity_scrub_repair *repair)
{
	return repair ? repair->ndone : 0;
}

INTEGRITY_EXPORT const struct integrity_scrub_repair_block *
integrity_scrub_repair_block(const struct integrity_scrub_repair *repair, size_t i)
{
	return repair && i < repair->ndone ? &repair->done[i] : NULL;
}
