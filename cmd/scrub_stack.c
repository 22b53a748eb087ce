/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: md and dm targets, scrubbed through their members; --repair. */
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

/* After the members of an md RAID1 were scrubbed: repair what is bad on
 * some copies from a good one, and verify it again. */
static int md_repair(const struct integrity_device *md, struct integrity_scrub_repair *repair,
		     const struct integrity_scrub_params *params)
{
	int ret = EXIT_CLEAN;
	int r = integrity_scrub_repair_run(repair, params);

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
	for (size_t i = 0; i < integrity_scrub_repair_count(repair); i++) {
		const struct integrity_scrub_repair_block *it = integrity_scrub_repair_block(repair, i);
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
			json_u64(&j, "member-lba", it->member_lba);
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
	struct integrity_scrub_repair *repair = NULL;
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
		message_start(target);
		fputs("scrubbing the devices under it:", stderr);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", integrity_scrub_job_device(job, i));
		fputc('\n', stderr);
	}
	if (o.repair && (r = integrity_scrub_repair_new(&repair, ctx, integrity_device_name(dev))) < 0) {
		ret = fail(EXIT_FAIL, target, r, "cannot scrub");
		goto out;
	}
	/* One device: its own report, as when it is named itself. */
	if (n == 1) {
		ret = scrub_one(integrity_scrub_job_target(job, 0), params, progress_bar, budget, repair);
	} else {
		ret = scrub_job(job, progress_bar);
		if (repair)
			integrity_scrub_repair_add(repair, integrity_scrub_job_report(job));
	}
	if (ret == EXIT_FAIL && params->method != INTEGRITY_SCRUB_AUTO) {
		message_start(target);
		fputs("the devices under it are:", stderr);
		for (size_t k = 0; k < n; k++)
			fprintf(stderr, " %s", integrity_scrub_job_device(job, k));
		fprintf(stderr, "; scrub each with the method it supports\n");
	}
	if (o.repair && !stop_signal && integrity_scrub_repair_pending(repair))
		ret = worse(ret, md_repair(dev, repair, params));
out:
	integrity_scrub_repair_free(repair);
	integrity_scrub_job_free(job);
	integrity_device_free(dev);
	integrity_context_free(ctx);
	return ret;
}
