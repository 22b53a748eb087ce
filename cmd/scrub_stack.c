/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: stacks (md, dm), what is above a bad block, --repair. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include "journal.h"
#endif

#include "cmd.h"
#include "columns.h"

#include "scrub.h"

/* ---------------------------------------------------------------- stacks */

void above_of(const struct run *run, const struct integrity_scrub_error *e, struct above *a)
{
	a->v = NULL;
	a->n = 0;
	if (run->disk && integrity_stack_map_above(run->disk, e->lba, &a->v, &a->n) < 0)
		a->n = 0;
}

/* "sda1:3048 md0:1000": the chain as one word list. */
void above_words(const struct above *a, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < a->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s:%" PRIu64, i ? " " : "", a->v[i].device,
				       a->v[i].lba);
}

void load_stack(struct run *run)
{
	struct integrity_device *target;

	if (integrity_device_new(run->ctx, run->target, &target) < 0)
		return;
	if (integrity_device_new(run->ctx, integrity_device_disk_name(target), &run->disk) < 0)
		run->disk = NULL;
	integrity_device_free(target);
}

void stack_free(struct run *run)
{
	integrity_device_free(run->disk);
}

/* ---------------------------------------------------------------- repair */

/* The repair of the array named on the command line, when --repair asks:
 * the bad blocks of its members, taken as each member's run ends. */
static struct {
	pthread_mutex_t lock;	/* runs of a batch end in their own threads */
	struct integrity_scrub_repair *r;
} repairs = { .lock = PTHREAD_MUTEX_INITIALIZER };

void collect_repairs(const struct run *run)
{
	if (!repairs.r || !run->report)
		return;
	pthread_mutex_lock(&repairs.lock);
	integrity_scrub_repair_add(repairs.r, run->report);
	pthread_mutex_unlock(&repairs.lock);
}

/* After the members of an md RAID1 were scrubbed: repair what is bad on
 * some copies from a good one, and verify it again. */
static int md_repair(const struct integrity_device *md, const struct integrity_scrub_params *params)
{
	int ret = EXIT_CLEAN;
	int r = integrity_scrub_repair_run(repairs.r, params);

	if (r == -EMEDIUMTYPE)
		return fail(EXIT_FAIL, integrity_device_name(md), 0, "--repair: only md RAID1 arrays are repaired");
	if (r < 0)
		return fail(EXIT_FAIL, integrity_device_name(md), r, "--repair: cannot read the array");
	struct json j;
	if (gopt.json) {
		json_open(&j, stdout);
		json_string(&j, "target", integrity_device_name(md));
		json_array_begin(&j, "repairs");
	}
	for (size_t i = 0; i < integrity_scrub_repair_count(repairs.r); i++) {
		const struct integrity_scrub_repair_block *it = integrity_scrub_repair_block(repairs.r, i);
		const char *result = integrity_scrub_repair_result_name(it->result);
		if (it->result != INTEGRITY_SCRUB_REPAIRED)
			ret = worse(ret, it->result == INTEGRITY_SCRUB_REPAIR_FAILED || it->result == INTEGRITY_SCRUB_REPAIR_BUSY
						 ? EXIT_FAIL : EXIT_BAD);
		if (gopt.json) {
			json_object_begin(&j, NULL);
			json_string(&j, "device", it->device);
			json_u64(&j, "lba", it->lba);
			json_u64(&j, "count", it->count);
			json_string(&j, "member", it->member);
			json_u64(&j, "member_lba", it->member_lba);
			json_string(&j, "result", result);
			json_object_end(&j);
		} else if (!gopt.quiet) {
			printf("%s: LBA %" PRIu64 " (%s LBA %" PRIu64 "): %s\n", it->device, it->lba, it->member,
			       it->member_lba, result);
		}
	}
	if (gopt.json) {
		json_array_end(&j);
		json_close(&j);
	}
	return ret;
}

/* md's bad-block list as one line: "2048+8 4096+8", "-" when empty. */
static void md_bad_blocks_words(const char *list, char *buf, size_t len)
{
	size_t at = 0;
	unsigned long long sector, count;
	int used;

	buf[0] = '\0';
	while (list && sscanf(list, "%llu %llu%n", &sector, &count, &used) == 2 && at < len) {
		at += (size_t)snprintf(buf + at, len - at, "%s%llu+%llu", at ? " " : "", sector, count);
		list += used;
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

void report_arrays_json(struct json *j, const struct run *run)
{
	size_t n = integrity_scrub_report_array_count(run->report, run->at);

	if (!n)
		return;
	json_array_begin(j, "arrays");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_md_info *info = integrity_scrub_report_array_info(run->report, run->at, i);
		json_object_begin(j, NULL);
		json_string(j, "device", integrity_scrub_report_array_name(run->report, run->at, i));
		json_string(j, "level", info->level);
		if (info->mismatch_cnt >= 0)
			json_u64(j, "mismatch_cnt", (uint64_t)info->mismatch_cnt);
		if (info->degraded >= 0)
			json_u64(j, "degraded", (uint64_t)info->degraded);
		json_array_begin(j, "members");
		for (size_t k = 0; k < integrity_scrub_report_array_member_count(run->report, run->at, i); k++) {
			const struct integrity_md_member *m = integrity_scrub_report_array_member(run->report, run->at, i, k);
			char bb[512];
			json_object_begin(j, NULL);
			json_string(j, "device", m->name);
			json_u64(j, "slot", m->slot < 0 ? UINT64_MAX : (uint64_t)m->slot);
			json_string(j, "state", m->state);
			json_u64(j, "errors", m->errors);
			md_bad_blocks_words(m->bad_blocks, bb, sizeof(bb));
			json_string(j, "bad_blocks", strcmp(bb, "-") ? bb : "");
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

void report_arrays_human(FILE *out, const struct run *run)
{
	for (size_t i = 0; i < integrity_scrub_report_array_count(run->report, run->at); i++) {
		const struct integrity_md_info *info = integrity_scrub_report_array_info(run->report, run->at, i);
		fprintf(out, "  %s (%s): mismatch_cnt %lld", integrity_scrub_report_array_name(run->report, run->at, i),
			info->level, (long long)info->mismatch_cnt);
		for (size_t k = 0; k < integrity_scrub_report_array_member_count(run->report, run->at, i); k++) {
			const struct integrity_md_member *m = integrity_scrub_report_array_member(run->report, run->at, i, k);
			char bb[512];
			md_bad_blocks_words(m->bad_blocks, bb, sizeof(bb));
			fprintf(out, "%s %s errors %" PRIu64 " bad_blocks %s", k ? "," : ";", m->name, m->errors, bb);
		}
		fputc('\n', out);
	}
}

/*
 * An md or dm target: scrub the devices that hold its data and PI, reading
 * them directly, so that md never repairs a fault before it is recorded;
 * each bad block is reported against the member and the devices above it.
 * Members on different disks are scrubbed at once.  Returns -1 when target
 * is not a stack device.
 */
int scrub_stack(const char *target, const struct integrity_scrub_params *params, unsigned jobs,
		bool progress_bar, uint64_t rate, struct integrity_scrub_budget *budget)
{
	struct integrity_context *ctx;
	struct integrity_device *dev = NULL;
	struct integrity_scrub_job *job = NULL;
	int ret = -1, r;

	if (integrity_context_new(&ctx, gopt.sysfs_root) < 0)
		return -1;
	if (integrity_device_new(ctx, target, &dev) < 0 || !integrity_scrub_job_is_stack(dev))
		goto out;
	if (o.range) {
		ret = fail(EXIT_USAGE, target, 0, "--range of a stack device: scrub its members with a range each");
		goto out;
	}
	if ((ret = new_job(ctx, &job, jobs, rate)))
		goto out;
	struct integrity_scrub_params p = *params;
	p.target = target;
	r = integrity_scrub_job_add(job, &p);
	size_t n = integrity_scrub_job_count(job);
	if (r < 0 || n == 0) {
		ret = fail(EXIT_FAIL, target, r == -ENODEV ? 0 : r, "is a stack device with no disk below it to scrub");
		goto out;
	}
	if (!gopt.quiet) {
		fprintf(stderr, "integrityctl: %s: scrubbing the devices under it:", target);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", integrity_scrub_job_device(job, i));
		fputc('\n', stderr);
	}
	if (o.repair && (r = integrity_scrub_repair_new(&repairs.r, ctx, integrity_device_name(dev))) < 0) {
		ret = fail(EXIT_FAIL, target, r, "cannot scrub");
		goto out;
	}
	/* One device: its own report, as when it is named itself. */
	if (n == 1) {
		ret = scrub_one(integrity_scrub_job_target(job, 0), params, progress_bar, budget);
	} else {
		ret = scrub_job(job, progress_bar);
		if (repairs.r)
			integrity_scrub_repair_add(repairs.r, integrity_scrub_job_report(job));
	}
	if (ret == EXIT_FAIL && params->method != INTEGRITY_SCRUB_AUTO) {
		fprintf(stderr, "integrityctl: %s: the devices under it are:", target);
		for (size_t k = 0; k < n; k++)
			fprintf(stderr, " %s", integrity_scrub_job_device(job, k));
		fprintf(stderr, "; scrub each with the method it supports\n");
	}
	if (o.repair && !stop_signal && integrity_scrub_repair_pending(repairs.r))
		ret = worse(ret, md_repair(dev, params));
out:
	integrity_scrub_repair_free(repairs.r);
	repairs.r = NULL;
	integrity_scrub_job_free(job);
	integrity_device_free(dev);
	integrity_context_free(ctx);
	return ret;
}
