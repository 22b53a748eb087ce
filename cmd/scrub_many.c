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

static int add_disk(struct run *run, const char *key)
{
	for (size_t i = 0; i < run->ndisks; i++)
		if (strcmp(run->disks[i], key) == 0)
			return 0;
	char **v = realloc(run->disks, (run->ndisks + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	run->disks = v;
	if (!(v[run->ndisks] = strdup(key)))
		return -ENOMEM;
	run->ndisks++;
	return 0;
}

/* The whole disks under the block device spec: its own disk for a
 * partition, its members' disks for md and dm, recursively. */
static int add_stack_disks(struct run *run, struct integrity_context *ctx, const char *spec, unsigned depth)
{
	struct integrity_device *dev;
	struct integrity_stack *st;
	int r;

	if (depth > 16)
		return -ELOOP;
	r = integrity_device_new(ctx, spec, &dev);
	if (r < 0)
		return r;
	r = integrity_stack_new(dev, &st);
	if (r == 0) {
		size_t n = integrity_stack_below_count(st);
		for (size_t i = 0; r == 0 && i < n; i++)
			r = add_stack_disks(run, ctx, integrity_stack_below(st, i), depth + 1);
		if (r == 0 && !n) {
			char key[300];
			snprintf(key, sizeof(key), "disk:%s", integrity_device_name(dev));
			r = add_disk(run, key);
		}
		integrity_stack_free(st);
	}
	integrity_device_free(dev);
	return r;
}

/* What two targets must not share while scrubbed at the same time: the
 * whole disks under a block device, an image file itself. */
static int target_disks(struct run *run, struct integrity_context *ctx)
{
	struct stat st;
	char key[PATH_MAX];

	if (stat(run->target, &st) < 0)
		return add_disk(run, run->target);	/* its scrub will say why */
	if (!S_ISBLK(st.st_mode)) {
		snprintf(key, sizeof(key), "file:%lx:%lu", (unsigned long)st.st_dev, (unsigned long)st.st_ino);
		return add_disk(run, key);
	}
	snprintf(key, sizeof(key), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	if (ctx && add_stack_disks(run, ctx, key, 0) == 0 && run->ndisks)
		return 0;
	/* Unknown to sysfs: the device itself. */
	snprintf(key, sizeof(key), "dev:%u:%u", major(st.st_rdev), minor(st.st_rdev));
	return add_disk(run, key);
}

static bool shares_disk(const struct run *a, const struct run *b)
{
	for (size_t i = 0; i < a->ndisks; i++)
		for (size_t k = 0; k < b->ndisks; k++)
			if (strcmp(a->disks[i], b->disks[k]) == 0)
				return true;
	return false;
}

/* The next target no running one shares a disk with, or NULL. */
static struct run *next_run(struct batch *b, bool *pending)
{
	*pending = false;
	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		if (run->state != RUN_PENDING)
			continue;
		*pending = true;
		bool free = true;
		for (size_t k = 0; k < b->n && free; k++)
			if (b->runs[k].state == RUN_RUNNING && shares_disk(run, &b->runs[k]))
				free = false;
		if (free)
			return run;
	}
	return NULL;
}

struct worker {
	struct batch *batch;
	struct integrity_scrub_budget *budget;
};

static void *worker_main(void *data)
{
	struct worker *w = data;
	struct batch *b = w->batch;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		bool pending = false;
		struct run *run = stop_signal ? NULL : next_run(b, &pending);
		if (!run) {
			if (stop_signal || !pending)
				break;
			/* Every pending target shares a disk with a running one. */
			pthread_cond_wait(&b->changed, &b->lock);
			continue;
		}
		run->state = RUN_RUNNING;
		run->thread = pthread_self();
		pthread_cond_broadcast(&b->changed);
		pthread_mutex_unlock(&b->lock);

		int code = run_open(run);
		if (code < 0)
			run_scrub(run, w->budget);
		else
			run->code = code;
		/* The scrub stays open for the report; it reads nothing more. */
		pthread_mutex_lock(&b->lock);
		run->state = RUN_DONE;
		pthread_cond_broadcast(&b->changed);
	}
	b->workers_left--;
	pthread_cond_broadcast(&b->changed);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* One progress line of a target: device, stable name, percent, rate, ETA
 * and bad blocks so far.  Under the batch's lock. */
static void progress_line(FILE *f, const struct run *run)
{
	const struct integrity_scrub_progress *p = &run->seen;
	char rate[32], eta[32];
	const char *what = run->state == RUN_PENDING ? "waiting" : run->state == RUN_DONE ? "done" : "running";

	fprintf(f, "%s%s%s%s  ", run->target, run->stable ? " (" : "", run->stable ? run->stable : "",
		run->stable ? ")" : "");
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

	if (!b->lines)
		return;
	if (b->in_place) {
		if (b->drawn)
			fprintf(stderr, "\033[%uA", b->drawn);
		for (size_t i = 0; i < b->n; i++) {
			fputs("\r\033[2K", stderr);
			progress_line(stderr, &b->runs[i]);
			fputc('\n', stderr);
		}
		b->drawn = (unsigned)b->n;
	} else if (final || now - b->last_log >= 10.0) {
		b->last_log = now;
		for (size_t i = 0; i < b->n; i++) {
			if (!b->runs[i].seen_any || (!final && b->runs[i].state != RUN_RUNNING))
				continue;
			progress_line(stderr, &b->runs[i]);
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
		json_u64(&j, "exit_status", run->code < 0 ? EXIT_INTERRUPTED : (uint64_t)run->code);
		json_object_end(&j);
	}
	json_array_end(&j);
	double wall = now_monotonic() - b->started;
	json_object_begin(&j, "totals");
	json_u64(&j, "devices", b->n);
	json_u64(&j, "complete", counts[0]);
	json_u64(&j, "interrupted", counts[1]);
	json_u64(&j, "failed", counts[2]);
	json_u64(&j, "not_started", counts[3]);
	json_u64(&j, "blocks_checked", blocks);
	json_u64(&j, "bytes_checked", bytes);
	json_u64(&j, "bad_blocks", bad);
	json_u64(&j, "io_errors", io);
	json_double(&j, "elapsed_seconds", wall);
	json_double(&j, "bytes_per_second", wall > 0 ? (double)run_bytes / wall : 0);
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

/* Scrub targets at once, up to `jobs` at a time, never two that share a
 * disk; the worst exit code.  A stop (SIGINT, SIGTERM) stops every
 * running scrub, saved, and starts no other. */
int scrub_many(const char *const *targets, size_t n, const struct integrity_scrub_params *params,
	       unsigned jobs, bool lines, struct integrity_scrub_budget *budget)
{
	struct batch b = { .n = n, .lines = lines, .in_place = lines && isatty(STDERR_FILENO) };
	struct worker w = { &b, budget };
	int ret = EXIT_CLEAN;

	b.runs = calloc(n ? n : 1, sizeof(*b.runs));
	if (!b.runs)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot scrub");
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.changed, NULL);
	struct integrity_context *ctx = NULL;
	if (integrity_context_new(&ctx, gopt.sysfs_root) < 0)
		ctx = NULL;	/* every block device is then a disk of its own */
	for (size_t i = 0; i < n; i++) {
		struct run *run = &b.runs[i];
		run->target = targets[i];
		run->params = *params;
		run->code = -1;
		run->batch = &b;
		if (target_disks(run, ctx) < 0) {
			integrity_context_free(ctx);
			ret = fail(EXIT_FAIL, run->target, -ENOMEM, "cannot scrub");
			goto out;
		}
		struct integrity_device *dev;
		if (lines && ctx && integrity_device_new(ctx, run->target, &dev) == 0) {
			const char *st = integrity_device_stable_name(dev);
			if (st && strcmp(st, run->target) != 0)
				run->stable = strdup(st);
			integrity_device_free(dev);
		}
	}
	integrity_context_free(ctx);
	if (!jobs || jobs > n)
		jobs = (unsigned)n;
	b.started = now_monotonic();
	pthread_t *threads = calloc(jobs ? jobs : 1, sizeof(*threads));
	if (!threads) {
		ret = fail(EXIT_FAIL, NULL, -ENOMEM, "cannot scrub");
		goto out;
	}
	pthread_mutex_lock(&b.lock);
	for (unsigned i = 0; i < jobs; i++) {
		int r = pthread_create(&threads[i], NULL, worker_main, &w);
		if (r) {
			fail(EXIT_FAIL, NULL, -r, "cannot start a worker");
			ret = EXIT_FAIL;
			break;
		}
		b.workers_left++;
	}
	size_t started = b.workers_left;
	bool told = false;
	while (b.workers_left) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&b.changed, &b.lock, &until);
		if (stop_signal && !told) {
			/* A worker waiting for a lock (--wait) or in a pause sees the
			 * stop at once; the signal was delivered to one thread only. */
			told = true;
			pthread_cond_broadcast(&b.changed);
			for (size_t i = 0; i < n; i++)
				if (b.runs[i].state == RUN_RUNNING)
					pthread_kill(b.runs[i].thread, stop_signal);
		}
		draw_batch(&b, false);
	}
	draw_batch(&b, true);
	pthread_mutex_unlock(&b.lock);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);

	for (size_t i = 0; i < n; i++)
		ret = worse(ret, b.runs[i].code < 0 ? EXIT_INTERRUPTED : b.runs[i].code);
	if (!gopt.quiet || gopt.json)
		write_batch_report(stdout, &b);
	if (o.report) {
		int w2 = safe_write_file(o.report, SAFE_IN_PLACE, 0644, write_batch_report, &b);
		if (w2 < 0)
			ret = worse(ret, fail(EXIT_FAIL, o.report, w2, "cannot write the report"));
	}
out:
	for (size_t i = 0; i < n; i++) {
		run_close(&b.runs[i]);
		for (size_t k = 0; k < b.runs[i].ndisks; k++)
			free(b.runs[i].disks[k]);
		free(b.runs[i].disks);
		free(b.runs[i].stable);
	}
	pthread_cond_destroy(&b.changed);
	pthread_mutex_destroy(&b.lock);
	free(b.runs);
	return ret;
}

/* Every disk with an integrity profile, at once. */
int scrub_all(const struct integrity_scrub_params *params, unsigned jobs, bool lines,
	      struct integrity_scrub_budget *budget)
{
	struct integrity_context *ctx;
	struct integrity_device **devs;
	size_t n;
	int r = integrity_context_new(&ctx, gopt.sysfs_root), ret;

	if (r == 0)
		r = integrity_device_list(ctx, &devs, &n);
	if (r < 0) {
		integrity_context_free(ctx);
		return fail(EXIT_FAIL, NULL, r, "cannot list block devices");
	}
	char **paths = calloc(n ? n : 1, sizeof(*paths));
	size_t count = 0;
	int unknown = EXIT_CLEAN;
	for (size_t i = 0; paths && i < n; i++) {
		struct integrity_kernel_state st;
		char path[4096];
		if (integrity_device_partno(devs[i]))
			continue;
		/* A state that cannot be read is unknown, not "none": the disk
		 * is neither skipped quietly nor scrubbed without its profile. */
		if ((r = integrity_device_kernel_state(devs[i], &st)) < 0) {
			device_path(devs[i], path, sizeof(path));
			unknown = fail(EXIT_FAIL, path, r, "cannot read the kernel's integrity state");
			continue;
		}
		if (!strcmp(st.format, "none") || !strcmp(st.format, "nop"))
			continue;
		/* md and dm inherit their members' profile; the members are
		 * scrubbed themselves, before md could repair what they hold. */
		if (is_stack_device(devs[i]))
			continue;
		device_path(devs[i], path, sizeof(path));
		if ((paths[count] = strdup(path)))
			count++;
	}
	integrity_device_list_free(devs, n);
	integrity_context_free(ctx);
	if (!paths)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot scrub");
	if (!count && unknown == EXIT_CLEAN && !gopt.quiet)
		fprintf(stderr, "integrityctl: scrub: no block device has an integrity profile\n");
	ret = worse(scrub_many((const char *const *)paths, count, params, jobs, lines, budget), unknown);
	for (size_t i = 0; i < count; i++)
		free(paths[i]);
	free(paths);
	return ret;
}
