/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * integrityctl scrub: one target's run, from its opening to its close:
 * its progress bar, its journal entries and metrics, its exit code.  The
 * batch (scrub_many.c) and the stacks (scrub_stack.c) run targets through
 * it; it renders through scrub_report.c and calls neither of them.
 */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include "journal.h"
#endif

#include "cmd.h"

#include "scrub.h"

struct scrub_options o;

volatile sig_atomic_t stop_signal;

/* ETA from this run's own rate: time spent in earlier runs or paused does
 * not distort it. */
static void draw_progress(struct run *run, const struct integrity_scrub_progress *p, bool final)
{
	static int tty = -1;
	double now = now_monotonic();
	char done[32], total[32], rate[32], eta[32];

	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	/* Redrawn in place on a terminal; elsewhere (a log, a file, a pipe)
	 * whole lines, as often. */
	if (!run->progress_bar || (!final && run->last_draw > 0 && now - run->last_draw < 0.25))
		return;
	run->last_draw = now;
	uint64_t span = p->end - p->start;
	double pct = span ? 100.0 * (double)(p->done - p->start) / (double)span : 100.0;
	uint64_t run_blocks = p->done - p->resumed_from;
	double speed = p->run_elapsed > 0 ? (double)run_blocks / p->run_elapsed : 0;
	uint32_t bs = integrity_scrub_block_size(run->scrub);
	fprintf(stderr, tty ? "\r%5.1f%%  %s / %s  %s/s  ETA %s  bad %" PRIu64 "  "
			    : "%5.1f%%  %s / %s  %s/s  ETA %s  bad %" PRIu64 "\n",
		pct,
		format_size((p->done - p->start) * bs, done, sizeof(done)),
		format_size(span * bs, total, sizeof(total)),
		format_size((uint64_t)(speed * bs), rate, sizeof(rate)),
		speed > 0 ? format_duration((double)(p->end - p->done) / speed, eta, sizeof(eta)) : "-",
		p->bad_blocks);
	if (final && tty)
		fputc('\n', stderr);
}

void on_progress(void *data, const struct integrity_scrub_progress *p)
{
	struct run *run = data;

	if (run->batch) {
		/* Drawn by the main thread, with every other target's. */
		pthread_mutex_lock(&run->batch->lock);
		run->seen = *p;
		run->seen_any = true;
		pthread_mutex_unlock(&run->batch->lock);
		return;
	}
	draw_progress(run, p, false);
}

static bool on_should_stop(_unused_ void *data)
{
	return stop_signal != 0;
}

/* The target's whole disk, to map its bad blocks up the stack. */
static void load_stack(struct run *run)
{
	struct integrity_device *target;

	if (integrity_device_new(run->ctx, run->target, &target) < 0)
		return;
	if (integrity_device_new(run->ctx, integrity_device_disk_name(target), &run->disk) < 0)
		run->disk = NULL;
	integrity_device_free(target);
}

static void stack_free(struct run *run)
{
	integrity_device_free(run->disk);
}

/* Names of the disk's partitions, for the report. */
static void load_part_names(struct run *run)
{
	struct integrity_device *target = NULL, **all = NULL;
	size_t n = 0;

	if (integrity_device_new(run->ctx, run->target, &target) < 0)
		return;
	if (integrity_device_list(run->ctx, &all, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			unsigned pn = integrity_device_partno(all[i]);
			if (!pn || strcmp(integrity_device_disk_name(all[i]),
					  integrity_device_disk_name(target)) != 0)
				continue;
			if (pn >= run->nparts) {
				char **names = realloc(run->part_names, (pn + 1) * sizeof(*names));
				if (!names)
					break;
				run->part_names = names;
				char **stable = realloc(run->part_stable, (pn + 1) * sizeof(*stable));
				if (!stable)
					break;
				run->part_stable = stable;
				for (unsigned k = run->nparts; k <= pn; k++)
					run->part_names[k] = run->part_stable[k] = NULL;
				run->nparts = pn + 1;
			}
			run->part_names[pn] = strdup(integrity_device_name(all[i]));
			const char *st = integrity_device_stable_name(all[i]);
			run->part_stable[pn] = st ? strdup(st) : NULL;
		}
	}
	integrity_device_list_free(all, n);
	integrity_device_free(target);
}

static void run_free(struct run *run)
{
	for (unsigned i = 0; i < run->nparts; i++) {
		free(run->part_names[i]);
		free(run->part_stable[i]);
	}
	free(run->part_names);
	free(run->part_stable);
	run->part_names = run->part_stable = NULL;
	run->nparts = 0;
}

int setup_error(const char *target, int r, const struct integrity_scrub *s)
{
	const char *why = s ? integrity_scrub_failure(s) : NULL;

	switch (r) {
	case -EBUSY:
		if (s && integrity_scrub_lock_holder(s) > 0)
			return fail(EXIT_FAIL, target, 0, "already being scrubbed by PID %d (--wait to wait for it)",
				    integrity_scrub_lock_holder(s));
		return fail(EXIT_FAIL, target, 0, "already being scrubbed (--wait to wait for it)");
	case -ENOMEDIUM:
		return fail(EXIT_USAGE, target, 0,
			    "is not a block device: describe its protection with --format");
	case -ENOTRECOVERABLE:
		return fail(EXIT_FAIL, target, 0,
			    "the kernel's read-verify is off, so the kernel method would check nothing: "
			    "'integrityctl set DISK read-verify=on', or choose another --method");
	case -EOPNOTSUPP:
		if (why)
			return fail(EXIT_FAIL, target, 0, "%s", why);
		return fail(EXIT_FAIL, target, 0, "the chosen --method is not available for this target");
	case -EBADMSG:
		/* Only the PI file that was given is named. */
		if (pi_opts.pi_file)
			return fail(EXIT_USAGE, target, 0,
				    "its size, or the size of the PI file %s, is not a whole number of blocks of this "
				    "geometry: check --format, --interval and --metadata-size",
				    pi_opts.pi_file);
		return fail(EXIT_USAGE, target, 0,
			    "its size is not a whole number of blocks of this geometry (data and PI interleaved): "
			    "check --format, --interval and --metadata-size, or give the PI's file with --pi-file");
	case -ERANGE:
		return fail(EXIT_USAGE, target, 0, "--range goes past the end");
	case -ENOTBLK:
		return fail_fix(EXIT_USAGE, target, 0, "give a disk, a partition or an image file",
				"not a block device or a regular file");
	case -ENODEV:
		return fail_fix(EXIT_FAIL, target, 0, FIX_DEVICE_NAME, "no such block device");
	default:
		/* A state directory the user may not write: the image is not the cause. */
		if (why && (r == -EACCES || r == -EPERM) && !o.no_state &&
		    strstr(why, o.state_dir ? o.state_dir : DEFAULT_STATE_DIR))
			return fail(EXIT_FAIL, target, 0,
				    "cannot start the scrub: %s (the state directory: give --state-dir DIR, or --no-state)",
				    why);
		if (why)
			return fail(EXIT_FAIL, target, 0, "cannot start the scrub: %s", why);
		return fail_fix(EXIT_FAIL, target, r, r == -ENOENT ? "check the name or path" : NULL,
				"cannot start the scrub");
	}
}

/* A scrub opened for run (r == 0) or not (r < 0, its failure told): names
 * for the report, remarks, the journal.  -1 when open, else the exit code. */
int run_opened(struct run *run, struct integrity_scrub *s, int r)
{
	if (r < 0)
		return setup_error(run->target, r, s);
	run->scrub = s;
	if (!run->ctx && (r = integrity_context_new(&run->ctx, gopt.sysfs_root)) < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	load_part_names(run);
	load_stack(run);

	const char *remark = integrity_scrub_note(run->scrub);
	if (remark)
		warnx_obj(run->target, "%s", remark);
	if (gopt.verbose)
		warnx_obj(run->target, "method %s, protection %s, identity %s",
			integrity_scrub_method_name(integrity_scrub_get_method(run->scrub)),
			integrity_scrub_protection(run->scrub), integrity_scrub_identity(run->scrub));
#ifdef HAVE_LIBSYSTEMD
	sd_journal_send("MESSAGE=%s: scrub started (method %s)", run->target,
			integrity_scrub_method_name(integrity_scrub_get_method(run->scrub)),
			"MESSAGE_ID=" MID_STARTED, "PRIORITY=6", "INTEGRITY_DEVICE=%s", run->target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run->scrub), NULL);
#endif
	return -1;
}

/* Open run->target by itself: the range, the scrub.  -1 when open, else
 * the exit code, its failure told. */
static int run_open(struct run *run)
{
	struct integrity_scrub_params *params = &run->params;
	struct integrity_scrub *s = NULL;
	int r, code;

	r = integrity_context_new(&run->ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	params->target = run->target;
	if (o.range) {
		/* The range's units need the block size, learnt without
		 * opening the scrub: it is opened once, locked once. */
		uint32_t bs;
		r = integrity_scrub_target_block_size(run->ctx, params, &bs);
		if (r < 0)
			return setup_error(params->target, r, NULL);
		code = range_option(o.range, bs, &params->range_start, &params->range_length);
		if (code)
			return code;
	}
	r = integrity_scrub_new(&s, run->ctx, params);
	code = run_opened(run, s, r);
	if (r < 0)
		integrity_scrub_free(s);
	return code;
}

/* Write the metrics of a run that ended with r; false when they could not be. */
static bool run_metrics(struct run *run, int r)
{
	char path[4096];
	char old[4096];
	const char *identity = integrity_scrub_identity(run->scrub);
	int w = metrics_path(path, sizeof(path), o.metrics_dir, identity, false);

	if (w == 0) {
		/* The file under its earlier name, if any, is replaced: the
		 * same series in two files would be exported twice. */
		bool moved = metrics_path(old, sizeof(old), o.metrics_dir, identity, true) == 0 &&
			     strcmp(old, path) != 0 && access(path, F_OK) < 0 && metrics_of(old, identity);
		struct metrics_ctx mc = { run, r, previous_last_success(moved ? old : path) };
		if (r == 0)
			mc.last_success = (double)time(NULL);
		w = safe_write_file(path, 0, 0644, write_metrics, &mc);
		if (w == 0 && moved)
			unlink(old);
	}
	if (w < 0) {
		fail(EXIT_FAIL, w == -ENAMETOOLONG ? o.metrics_dir : path, w, "cannot write metrics");
		return false;
	}
	return true;
}

/* A run that ended with report's entry at: the journal, the metrics;
 * run->r and run->code set.  The reports are written by the caller. */
void run_finish(struct run *run, struct integrity_scrub_report *report, size_t at, int r)
{
	run->report = report;
	run->at = at;
	draw_progress(run, integrity_scrub_get_progress(run->scrub), true);
	resolve_owners(run);

	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(run->scrub);
	if (r < 0 && r != -EINTR && r != -ETIME) {
		const char *why = integrity_scrub_failure(run->scrub);
		if (why)
			fail(EXIT_FAIL, run->target, 0, "scrub stopped at block %" PRIu64 ": %s", p->done, why);
		else
			fail(EXIT_FAIL, run->target, r, "scrub stopped at block %" PRIu64, p->done);
	}
#ifdef HAVE_LIBSYSTEMD
	sd_journal_send("MESSAGE=%s: scrub %s: %" PRIu64 " blocks checked, %" PRIu64 " bad", run->target,
			status_word(r), p->blocks_checked, p->bad_blocks,
			"MESSAGE_ID=%s", r == 0 ? MID_FINISHED : MID_INTERRUPTED,
			"PRIORITY=%d", p->bad_blocks ? 3 : 6, "INTEGRITY_DEVICE=%s", run->target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run->scrub),
			"INTEGRITY_BAD_BLOCKS=%" PRIu64, p->bad_blocks, NULL);
#endif
	bool lost_output = o.metrics_dir && !run_metrics(run, r);
	run->r = r;
	if (r < 0 && r != -EINTR && r != -ETIME)
		run->code = EXIT_FAIL;
	else if (p->bad_blocks || p->io_errors)
		run->code = EXIT_BAD;
	else if ((r == -EINTR || r == -ETIME) && integrity_scrub_state_path(run->scrub))
		run->code = EXIT_INTERRUPTED;	/* its checkpoint says where to go on */
	else if (r == -EINTR || r == -ETIME)
		run->code = EXIT_FAIL;	/* stopped, and nothing to go on from */
	else
		run->code = EXIT_CLEAN;
	/* Metrics that were asked for and are missing: the run failed,
	 * whatever it found. */
	if (lost_output)
		run->code = EXIT_FAIL;
}

/* Scrub an open run by itself, with a report of its own. */
static void run_scrub(struct run *run, struct integrity_scrub_budget *budget)
{
	struct integrity_scrub_callbacks cb = {
		.progress = on_progress, .error = on_error, .should_stop = on_should_stop, .data = run,
	};
	struct integrity_scrub_report *report = NULL;

	integrity_scrub_set_budget(run->scrub, budget);
	int r = integrity_scrub_run(run->scrub, &cb);
	if (integrity_scrub_report_new(&report) < 0 || integrity_scrub_report_add(report, run->scrub, r) < 0) {
		integrity_scrub_report_free(report);
		report = NULL;
	}
	run->own_report = true;
	run_finish(run, report, 0, r);
	if (run->repair && run->report)
		integrity_scrub_repair_add(run->repair, run->report);
}

void run_close(struct run *run)
{
	stack_free(run);
	run->disk = NULL;
	if (run->own_report)
		integrity_scrub_report_free(run->report);
	run->report = NULL;
	run->owners = NULL;
	if (!run->in_job)
		integrity_scrub_free(run->scrub);	/* else the job's */
	run->scrub = NULL;
	integrity_context_free(run->ctx);
	run->ctx = NULL;
	run_free(run);
}

/* Scrub one target; the exit code. */
int scrub_one(const char *target, const struct integrity_scrub_params *params, bool progress_bar,
	      struct integrity_scrub_budget *budget, struct integrity_scrub_repair *repair)
{
	struct run run = { .progress_bar = progress_bar, .params = *params, .target = target, .code = -1,
			   .repair = repair };
	int code = run_open(&run);

	if (code >= 0)
		goto done;
	run_scrub(&run, budget);
	code = run.code;
	if (!gopt.quiet || gopt.json)
		write_report(stdout, &(struct report_ctx){ &run, run.r });
	if (o.report) {
		int w = safe_write_file(o.report, SAFE_IN_PLACE, 0644, write_report,
					&(struct report_ctx){ &run, run.r });
		if (w < 0)
			code = fail(EXIT_FAIL, o.report, w, "cannot write the report");
	}
done:
	run_close(&run);
	return code;
}

/* Exit codes of several scrubs, worst first: a usage error (a --range one
 * target cannot take), then a failure (a target whose state is unknown),
 * then bad blocks found, then a stop (run again to finish), then clean. */
int worse(int a, int b)
{
	static const int rank[] = { [EXIT_CLEAN] = 0, [EXIT_INTERRUPTED] = 1, [EXIT_BAD] = 2,
				    [EXIT_FAIL] = 3, [EXIT_USAGE] = 4 };
	return rank[b] > rank[a] ? b : a;
}
