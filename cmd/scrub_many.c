/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: several targets at once, workers sharing no disk. */
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

/* ------------------------------------------------ several targets at once */

/* One progress line of a target: device, stable name, percent, rate, ETA
 * and bad blocks so far.  Under the batch's lock. */
static int name_width(const struct run *run)
{
	return (int)(strlen(run->target) + (run->stable ? strlen(run->stable) + 3 : 0));
}

static void progress_line(FILE *f, const struct run *run, int width)
{
	const struct integrity_scrub_progress *p = &run->seen;
	char rate[32], eta[32];
	/* A run that ended: how (a stop is not "done"). */
	const char *end = run->r == -EINTR || run->r == -ETIME ? "stopped" : run->r < 0 ? "failed" : "done";
	const char *what = run->state == RUN_PENDING ? "waiting" : run->state == RUN_DONE ? end : "running";

	/* The names padded to the longest: the columns line up. */
	fprintf(f, "%s%s%s%s%*s  ", run->target, run->stable ? " (" : "", run->stable ? run->stable : "",
		run->stable ? ")" : "", width - name_width(run), "");
	if (!run->seen_any) {
		fprintf(f, "%s", what);
		return;
	}
	uint64_t span = p->end - p->start;
	double pct = span ? 100.0 * (double)(p->done - p->start) / (double)span : 100.0;
	double speed = p->run_elapsed > 0 ? (double)(p->done - p->resumed_from) / p->run_elapsed : 0;
	uint32_t bs = run->scrub ? integrity_scrub_block_size(run->scrub) : 512;
	fprintf(f, "%5.1f%%  %s/s  ETA %s  bad %" PRIu64 "%s%s", pct,
		format_size((uint64_t)(speed * bs), rate, sizeof(rate)),
		speed > 0 && p->done < p->end ? format_duration((double)(p->end - p->done) / speed, eta, sizeof(eta))
					       : "-",
		p->bad_blocks, run->state == RUN_DONE ? "  " : "", run->state == RUN_DONE ? what : "");
}

/* Every target's line: redrawn in place on a terminal; in a log, plain
 * lines for the targets being scrubbed, every few seconds and at the end. */
static void draw_batch(struct batch *b, bool final)
{
	double now = now_monotonic();
	int width = 0;

	for (size_t i = 0; i < b->n; i++)
		if (name_width(&b->runs[i]) > width)
			width = name_width(&b->runs[i]);

	if (!b->lines)
		return;
	if (b->in_place) {
		if (b->drawn)
			fprintf(stderr, "\033[%uA", b->drawn);
		for (size_t i = 0; i < b->n; i++) {
			fputs("\r\033[2K", stderr);
			progress_line(stderr, &b->runs[i], width);
			fputc('\n', stderr);
		}
		b->drawn = (unsigned)b->n;
	} else if (final || now - b->last_log >= 10.0) {
		b->last_log = now;
		for (size_t i = 0; i < b->n; i++) {
			if (!b->runs[i].seen_any || (!final && b->runs[i].state != RUN_RUNNING))
				continue;
			progress_line(stderr, &b->runs[i], width);
			fputc('\n', stderr);
		}
	}
	fflush(stderr);
}

static void report_total_human(FILE *out, struct batch *b)
{
	uint64_t bytes = 0, bad = 0, io = 0;
	size_t complete = 0, stopped = 0, failed = 0;
	char a[32], c[32], d[32];

	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		if (run->scrub) {
			const struct integrity_scrub_progress *p = integrity_scrub_get_progress(run->scrub);
			bytes += (p->done - p->resumed_from) * integrity_scrub_block_size(run->scrub);
			bad += p->bad_blocks;
			io += p->io_errors;
		}
		if (run->code < 0 || run->r == -EINTR || run->r == -ETIME)
			stopped++;
		else if (!run->scrub || run->r < 0)
			failed++;
		else
			complete++;
	}
	double wall = now_monotonic() - b->started;
	fprintf(out,
		"total: %zu target%s: %zu complete, %zu stopped, %zu failed\n"
		"  this run checked %s in %s at %s/s\n"
		"  bad blocks %" PRIu64 ", I/O errors %" PRIu64 "\n",
		b->n, b->n == 1 ? "" : "s", complete, stopped, failed, format_size(bytes, a, sizeof(a)),
		format_duration(wall, c, sizeof(c)), format_size(wall > 0 ? (uint64_t)((double)bytes / wall) : 0, d,
								  sizeof(d)),
		bad, io);
}

/* A target that was not scrubbed (stopped before its turn, or it could
 * not be opened), in the run's report. */
static void report_json_unscrubbed(struct json *j, const struct run *run)
{
	json_string(j, "target", run->target);
	json_string(j, "status", run->code < 0 ? "not-started" : "failed");
}

static void report_batch_json(FILE *out, struct batch *b)
{
	uint64_t blocks = 0, bytes = 0, bad = 0, io = 0, run_bytes = 0;
	size_t counts[4] = { 0 };	/* complete, interrupted (or time-limit), failed, not-started */
	struct json j;

	json_open(&j, out);
	json_u64(&j, "version", REPORT_VERSION);
	json_array_begin(&j, "devices");
	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		json_object_begin(&j, NULL);
		if (run->scrub && run->code >= 0) {
			const struct integrity_scrub_progress *p = integrity_scrub_get_progress(run->scrub);
			report_json_fields(&j, run, run->r);
			blocks += p->blocks_checked;
			bytes += p->bytes_checked;
			run_bytes += (p->done - p->resumed_from) * integrity_scrub_block_size(run->scrub);
			bad += p->bad_blocks;
			io += p->io_errors;
			counts[run->r == 0 ? 0 : run->r == -EINTR || run->r == -ETIME ? 1 : 2]++;
		} else {
			report_json_unscrubbed(&j, run);
			counts[run->code < 0 ? 3 : 2]++;
		}
		json_u64(&j, "exit-status", run->code < 0 ? EXIT_INTERRUPTED : (uint64_t)run->code);
		json_object_end(&j);
	}
	json_array_end(&j);
	double wall = now_monotonic() - b->started;
	json_object_begin(&j, "totals");
	json_u64(&j, "devices", b->n);
	json_u64(&j, "complete", counts[0]);
	json_u64(&j, "interrupted", counts[1]);
	json_u64(&j, "failed", counts[2]);
	json_u64(&j, "not-started", counts[3]);
	json_u64(&j, "blocks-checked", blocks);
	json_u64(&j, "bytes-checked", bytes);
	json_u64(&j, "bad-blocks", bad);
	json_u64(&j, "io-errors", io);
	json_double(&j, "elapsed", wall);
	json_double(&j, "bytes-per-second", wall > 0 ? (double)run_bytes / wall : 0);
	json_object_end(&j);
	json_close(&j);
}

static void write_batch_report(FILE *f, void *data)
{
	struct batch *b = data;

	if (gopt.json) {
		report_batch_json(f, b);
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		if (run->scrub && run->code >= 0)
			report_human(f, run, run->r);
		else
			fprintf(f, "%s: %s\n", run->target, run->code < 0 ? "not started (stopped before its turn)"
									: "failed (see above)");
	}
	report_total_human(f, b);
}

static struct run *job_run_of(void *data, size_t i)
{
	return &((struct batch *)data)->runs[i];
}

static void job_opened(void *data, size_t i, const struct integrity_scrub *s, int r)
{
	struct run *run = job_run_of(data, i);

	pthread_mutex_lock(&run->batch->lock);
	run->state = RUN_RUNNING;
	pthread_mutex_unlock(&run->batch->lock);
	/* The job owns the scrub; the report reads it. */
	run->code = run_opened(run, (struct integrity_scrub *)s, r);
}

static void job_progress(void *data, size_t i, const struct integrity_scrub_progress *p)
{
	on_progress(job_run_of(data, i), p);
}

static void job_error(void *data, size_t i, _unused_ const struct integrity_scrub *s,
		      const struct integrity_scrub_error *e)
{
	on_error(job_run_of(data, i), e);
}

static void job_finished(void *data, size_t i, const struct integrity_scrub_report *report)
{
	struct run *run = job_run_of(data, i);

	if (run->scrub)
		run_finish(run, (struct integrity_scrub_report *)report, i, integrity_scrub_report_result(report, i));
	pthread_mutex_lock(&run->batch->lock);
	if (!run->scrub)
		run->r = integrity_scrub_report_result(report, i);
	run->state = RUN_DONE;
	pthread_mutex_unlock(&run->batch->lock);
}

static bool job_should_stop(_unused_ void *data)
{
	return stop_signal != 0;
}

static void job_tick(void *data)
{
	struct batch *b = data;

	pthread_mutex_lock(&b->lock);
	draw_batch(b, false);
	pthread_mutex_unlock(&b->lock);
}

/* Scrub a job's targets at once, up to `jobs` at a time, never two that
 * share a disk; the worst exit code.  A stop (SIGINT, SIGTERM) stops every
 * running scrub, saved, and starts no other. */
int scrub_job(struct integrity_scrub_job *job, bool lines)
{
	size_t n = integrity_scrub_job_count(job);
	struct batch b = { .n = n, .lines = lines, .in_place = lines && isatty(STDERR_FILENO) };
	int ret = EXIT_CLEAN;

	b.runs = calloc(n ? n : 1, sizeof(*b.runs));
	if (!b.runs)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot scrub");
	pthread_mutex_init(&b.lock, NULL);
	struct integrity_context *ctx = NULL;
	if (lines && integrity_context_new(&ctx, gopt.sysfs_root) < 0)
		ctx = NULL;
	for (size_t i = 0; i < n; i++) {
		struct run *run = &b.runs[i];
		run->target = integrity_scrub_job_target(job, i);
		run->code = -1;
		run->batch = &b;
		run->in_job = true;
		struct integrity_device *dev;
		if (ctx && integrity_device_new(ctx, run->target, &dev) == 0) {
			const char *st = integrity_device_stable_name(dev);
			if (st && strcmp(st, run->target) != 0)
				run->stable = strdup(st);
			integrity_device_free(dev);
		}
	}
	integrity_context_free(ctx);
	b.started = now_monotonic();
	struct integrity_scrub_job_callbacks cb = {
		.opened = job_opened, .progress = job_progress, .error = job_error, .finished = job_finished,
		.should_stop = job_should_stop, .tick = job_tick, .data = &b,
	};
	int r = integrity_scrub_job_run(job, &cb);
	if (r < 0 && r != -EINTR)
		ret = fail(EXIT_FAIL, NULL, r, "cannot scrub");
	pthread_mutex_lock(&b.lock);
	draw_batch(&b, true);
	pthread_mutex_unlock(&b.lock);

	for (size_t i = 0; i < n; i++)
		ret = worse(ret, b.runs[i].code < 0 ? EXIT_INTERRUPTED : b.runs[i].code);
	if (!gopt.quiet || gopt.json)
		write_batch_report(stdout, &b);
	if (o.report) {
		int w2 = safe_write_file(o.report, SAFE_IN_PLACE, 0644, write_batch_report, &b);
		if (w2 < 0)
			ret = worse(ret, fail(EXIT_FAIL, o.report, w2, "cannot write the report"));
	}
	for (size_t i = 0; i < n; i++) {
		run_close(&b.runs[i]);
		free(b.runs[i].stable);
	}
	pthread_mutex_destroy(&b.lock);
	free(b.runs);
	return ret;
}

/* A job of this command's scrubs: the shared rate, the stop's signal. */
int new_job(struct integrity_context *ctx, struct integrity_scrub_job **job, unsigned jobs, uint64_t rate)
{
	struct integrity_scrub_job_params jp = { .jobs = jobs, .rate = rate, .wake_signal = SIGINT, .owners = true };
	int r = integrity_scrub_job_new(job, ctx, &jp);

	return r < 0 ? fail(EXIT_FAIL, NULL, r, "cannot scrub") : 0;
}

/* Add target to job with its own --range; 0 or the exit code. */
int job_add_target(struct integrity_scrub_job *job, struct integrity_context *ctx, const char *target,
		   const struct integrity_scrub_params *params)
{
	struct integrity_scrub_params p = *params;
	int r;

	p.target = target;
	if (o.range) {
		uint32_t bs;
		if ((r = integrity_scrub_target_block_size(ctx, &p, &bs)) < 0)
			return setup_error(target, r, NULL);
		if ((r = range_option(o.range, bs, &p.range_start, &p.range_length)))
			return r;
	}
	r = integrity_scrub_job_add(job, &p);
	return r < 0 ? fail(EXIT_FAIL, target, r, "cannot scrub") : 0;
}

/* Several targets at once. */
int scrub_many(const char *const *targets, size_t n, const struct integrity_scrub_params *params,
	       unsigned jobs, bool lines, uint64_t rate)
{
	struct integrity_context *ctx;
	struct integrity_scrub_job *job = NULL;
	int ret = EXIT_CLEAN, r = integrity_context_new(&ctx, gopt.sysfs_root);

	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	if ((ret = new_job(ctx, &job, jobs, rate)) == 0) {
		for (size_t i = 0; i < n; i++)
			ret = worse(ret, job_add_target(job, ctx, targets[i], params));
		ret = worse(ret, scrub_job(job, lines));
	}
	integrity_scrub_job_free(job);
	integrity_context_free(ctx);
	return ret;
}

/* Every disk with an integrity profile, at once. */
int scrub_all(const struct integrity_scrub_params *params, unsigned jobs, bool lines, uint64_t rate)
{
	struct integrity_context *ctx;
	struct integrity_scrub_job *job = NULL, *all = NULL;
	int unknown = EXIT_CLEAN, ret, r = integrity_context_new(&ctx, gopt.sysfs_root);

	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	if ((ret = new_job(ctx, &job, jobs, rate)) || (ret = new_job(ctx, &all, jobs, rate)))
		goto out;
	/* Listed first, then added with a --range of each one's own blocks. */
	r = integrity_scrub_job_add_all(all, params);
	if (r < 0) {
		ret = fail(EXIT_FAIL, NULL, r, "cannot list block devices");
		goto out;
	}
	for (size_t i = 0; i < integrity_scrub_job_skipped_count(all); i++) {
		int err;
		const char *name = integrity_scrub_job_skipped(all, i, &err);
		unknown = fail(EXIT_FAIL, name, err, "cannot read the kernel's integrity state");
	}
	for (size_t i = 0; i < integrity_scrub_job_count(all); i++)
		ret = worse(ret, job_add_target(job, ctx, integrity_scrub_job_target(all, i), params));
	if (!integrity_scrub_job_count(job) && unknown == EXIT_CLEAN)
		warnx_obj(NULL, "no block device has an integrity profile");
	ret = worse(worse(ret, scrub_job(job, lines)), unknown);
out:
	integrity_scrub_job_free(all);
	integrity_scrub_job_free(job);
	integrity_context_free(ctx);
	return ret;
}
