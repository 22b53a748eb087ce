/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: find every block whose protection does not match. */
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

static void on_signal(int sig)
{
	stop_signal = sig;
}

enum {
	COL_TARGET, COL_IDENTITY, COL_STATUS, COL_METHOD, COL_PROTECTION, COL_PROGRESS, COL_BAD,
	COL_IO_ERRORS, COL_ELAPSED, COL_UPDATED,
};

/* The columns of --status, left-aligned and as wide as their widest cell;
 * in JSON, progress in percent and elapsed time in seconds. */
static const struct column_def status_columns[] = {
	[COL_TARGET] = { "TARGET", 0, 0, SCOLS_JSON_STRING, "the target as given to the scrub" },
	[COL_IDENTITY] = { "IDENTITY", 0, 0, SCOLS_JSON_STRING, "what the checkpoint is named by" },
	[COL_STATUS] = { "STATUS", 0, 0, SCOLS_JSON_STRING, "running, interrupted, complete or invalid" },
	[COL_METHOD] = { "METHOD", 0, 0, SCOLS_JSON_STRING, "how blocks are checked" },
	[COL_PROTECTION] = { "PROTECTION", 0, 0, SCOLS_JSON_STRING, "the protection format checked" },
	[COL_PROGRESS] = { "PROGRESS", 0, 0, SCOLS_JSON_NUMBER, "share of the range done" },
	[COL_BAD] = { "BAD-BLOCKS", 0, 0, SCOLS_JSON_NUMBER, "bad blocks found" },
	[COL_IO_ERRORS] = { "IO-ERRORS", 0, 0, SCOLS_JSON_NUMBER, "blocks that could not be read" },
	[COL_ELAPSED] = { "ELAPSED", 0, 0, SCOLS_JSON_NUMBER, "time spent scrubbing" },
	[COL_UPDATED] = { "UPDATED", 0, 0, SCOLS_JSON_NUMBER,
			  "when the checkpoint was last written (UTC; JSON: seconds since the epoch)" },
};

static int show_status(const char *state_dir, const char *target)
{
	static const size_t defaults[] = { COL_TARGET, COL_IDENTITY, COL_STATUS, COL_METHOD, COL_PROTECTION,
					   COL_PROGRESS, COL_BAD, COL_IO_ERRORS, COL_ELAPSED, COL_UPDATED };
	struct integrity_scrub_state *states;
	struct column_set set;
	size_t n;

	int r = columns_select(&set, status_columns, ARRAY_SIZE(status_columns), defaults,
			       ARRAY_SIZE(defaults), gopt.output);
	if (r)
		return r;
	r = integrity_scrub_states(state_dir, &states, &n);
	if (r < 0) {
		char fix[4200];
		struct stat st;
		if (r == -EPERM && stat(state_dir, &st) == 0 && safe_untrusted(&st, state_dir, fix, sizeof(fix)))
			return fail(EXIT_FAIL, state_dir, 0, "saved scrubs not read: the directory is %s", fix);
		return fail(EXIT_FAIL, state_dir, r, "cannot read saved scrubs");
	}
	struct libscols_table *tb = columns_new_table(&set, "scrubs");
	if (!tb) {
		free(states);
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot list saved scrubs");
	}
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		struct integrity_scrub_state *st = &states[i];
		if (target && strcmp(target, st->target) != 0 && strcmp(target, st->identity) != 0)
			continue;
		struct libscols_line *ln = scols_table_new_line(tb, NULL);
		if (!ln)
			break;
		uint64_t span = st->progress.end - st->progress.start;
		char el[32], when[32];
		if (!st->updated || st->updated > INT64_MAX / 1000000 ||
		    !format_time((int64_t)st->updated * 1000000, false, when, sizeof(when)))
			snprintf(when, sizeof(when), "-");
		columns_set(&set, ln, COL_TARGET, "%s", st->target);
		columns_set(&set, ln, COL_IDENTITY, "%s", st->identity);
		columns_set(&set, ln, COL_STATUS, "%s", st->status);
		columns_set(&set, ln, COL_METHOD, "%s", st->method);
		columns_set(&set, ln, COL_PROTECTION, "%s", st->protection);
		if (span && st->progress.done >= st->progress.start)
			columns_set(&set, ln, COL_PROGRESS, gopt.json ? "%.1f" : "%.1f%%",
				    100.0 * (double)(st->progress.done - st->progress.start) / (double)span);
		columns_set(&set, ln, COL_BAD, "%" PRIu64, st->progress.bad_blocks);
		columns_set(&set, ln, COL_IO_ERRORS, "%" PRIu64, st->progress.io_errors);
		if (gopt.json)
			columns_set(&set, ln, COL_ELAPSED, "%.3f", st->progress.elapsed);
		else
			columns_set(&set, ln, COL_ELAPSED, "%s", format_duration(st->progress.elapsed, el, sizeof(el)));
		if (!gopt.json)
			columns_set(&set, ln, COL_UPDATED, "%s", when);
		else if (st->updated)
			columns_set(&set, ln, COL_UPDATED, "%" PRId64, st->updated);
		shown++;
	}
	free(states);
	if (target && !shown) {
		scols_unref_table(tb);
		return fail(EXIT_FAIL, target, 0, "no saved scrub in %s", state_dir);
	}
	scols_print_table(tb);
	scols_unref_table(tb);
	return EXIT_CLEAN;
}

/* Each TARGET as a path: a name that is not a file (nvme3n1, md0, lin1,
 * vg/lv) becomes the node of the device it names.  0, or the exit code. */
static int target_nodes(const char *const *args, size_t n, char ***nodes)
{
	struct integrity_context *ctx = NULL;
	char node[PATH_MAX];

	int r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	*nodes = calloc(n ? n : 1, sizeof(**nodes));
	if (!*nodes) {
		integrity_context_free(ctx);
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot set up");
	}
	for (size_t i = 0; i < n; i++) {
		const char *t = args[i];
		if (integrity_device_path(ctx, t, node, sizeof(node)) == 0)
			t = node;
		(*nodes)[i] = strdup(t);
		if (!(*nodes)[i]) {
			integrity_context_free(ctx);
			return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot set up");
		}
	}
	integrity_context_free(ctx);
	return 0;
}

int cmd_scrub(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "method", '\0', POPT_ARG_STRING, &o.method, 0,
		  "how blocks are checked (default auto)", "auto|device|host|kernel" },
		{ "range", '\0', POPT_ARG_STRING, &o.range, 0,
		  "only these blocks (START:LEN in blocks, or with K/M/G in bytes)", "START:LEN" },
		{ "rate", '\0', POPT_ARG_STRING, &o.rate, 0,
		  "at most this many bytes per second in all, shared by the targets", "N[K|M|G]" },
		{ "rate-per-device", '\0', POPT_ARG_STRING, &o.rate_per_device, 0,
		  "at most this many bytes per second for each target", "N[K|M|G]" },
		{ "jobs", 'j', POPT_ARG_STRING, &o.jobs, 0,
		  "scrub at most N targets at once (default: all)", "N" },
		{ "duration", '\0', POPT_ARG_STRING, &o.duration, 0,
		  "stop (saved) after this much scrubbing: 90s, 30m, 6h", "TIME" },
		{ "io-size", '\0', POPT_ARG_STRING, &o.io_size, 0, "bytes per request (default 1M; 4M for an image read by --verify-threads)", "N" },
		{ "queue-depth", '\0', POPT_ARG_STRING, &o.queue_depth, 0,
		  "requests in flight (default 4)", "N" },
		{ "verify-threads", '\0', POPT_ARG_STRING, &o.verify_threads, 0,
		  "threads verifying what the host method reads (default 1; auto: one per CPU)", "N|auto" },
		{ "progress", '\0', POPT_ARG_STRING, &o.progress, 0,
		  "progress bar on stderr (default auto: on a terminal)", "auto|always|never" },
		{ "state-dir", '\0', POPT_ARG_STRING, &o.state_dir, 0,
		  "where checkpoints are kept (default " DEFAULT_STATE_DIR ")", "DIR" },
		{ "no-state", '\0', POPT_ARG_NONE, &o.no_state, 0, "keep no checkpoint", NULL },
		{ "restart", '\0', POPT_ARG_NONE, &o.restart, 0, "start again, ignoring a checkpoint", NULL },
		{ "status", '\0', POPT_ARG_NONE, &o.status, 0,
		  "show saved scrubs and their last result (-o: TARGET, IDENTITY, STATUS, METHOD, PROTECTION, "
		  "PROGRESS, BAD-BLOCKS, IO-ERRORS, ELAPSED, UPDATED)", NULL },
		{ "all", '\0', POPT_ARG_NONE, &o.all, 0,
		  "scrub every disk with an integrity profile, at once", NULL },
		{ "output-file", 'O', POPT_ARG_STRING, &o.report, 0, "also write the report to FILE", "FILE" },
		{ "report", '\0', POPT_ARG_STRING | POPT_ARGFLAG_DOC_HIDDEN, &o.report_old, 0, NULL, "FILE" },
		{ "metrics-dir", '\0', POPT_ARG_STRING, &o.metrics_dir, 0,
		  "write Prometheus textfile metrics there", "DIR" },
		{ "io-engine", '\0', POPT_ARG_STRING, &o.io_engine, 0,
		  "how the kernel and image methods read (default auto: io_uring where it works)",
		  "auto|pread|uring" },
		{ "repair", '\0', POPT_ARG_NONE, &o.repair, 0,
		  "md RAID1: have md rewrite a block bad on one copy from a good one, then verify it", NULL },
		{ "wait", '\0', POPT_ARG_NONE, &o.wait, 0,
		  "if another scrub of the target runs, wait for it rather than fail", NULL },
		{ "layout", '\0', POPT_ARG_STRING, &o.layout, 0,
		  "image layout: dif (interleaved) or dix (with --pi-file)", "dif|dix" },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pi_option_table, 0,
		  "Protection of an image or a device with external PI:", NULL },
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	struct integrity_scrub_params params = { 0 };
	struct integrity_scrub_budget *budget = NULL;
	char **nodes = NULL;
	size_t ntargets = 0;
	uint64_t rate = 0;
	unsigned jobs = 0;
	poptContext pc;
	uint64_t v;
	int r, ret;

	r = parse_options(&pc, "integrityctl scrub", argc, argv, table, "TARGET... | --all | --status [TARGET]");
	if (r)
		return r;
	r = output_file_option("--report", &o.report, o.report_old);
	if (r) {
		poptFreeContext(pc);
		return r;
	}
	const char **args = poptGetArgs(pc);
	const char *state_dir = o.state_dir ? o.state_dir : DEFAULT_STATE_DIR;
	if (o.status && o.all) {
		poptFreeContext(pc);
		return conflicting_options("--status", "--all", NULL);
	}
	if ((gopt.output || gopt.output_all) && !o.status) {
		poptFreeContext(pc);
		return refuse_columns("the report has no columns to choose (-o is for --status)");
	}
	if (o.status) {
		ret = show_status(state_dir, args ? args[0] : NULL);
		poptFreeContext(pc);
		return ret;
	}
	if (!o.all && (!args || !args[0])) {
		poptFreeContext(pc);
		return usage_error("TARGET... | --all | --status [TARGET]");
	}

	ret = EXIT_USAGE;
	if (o.method) {
		static const char *const methods[] = { "auto", "device", "host", "kernel", NULL };
		int i = option_choice("--method", o.method, methods);
		if (i < 0 || integrity_scrub_method_from_name(methods[i], &params.method) < 0)
			goto out;
	}
	if (pi_options_parse(&params.pi, NULL))
		goto out;
	params.pi_file = pi_opts.pi_file;
	static const char *const layouts[] = { "dif", "dix", NULL };
	int layout = o.layout ? option_choice("--layout", o.layout, layouts) : -1;
	if (o.layout && layout < 0)
		goto out;
	if (o.layout && (layout == 1) != (pi_opts.pi_file != NULL)) {
		fail(EXIT_USAGE, NULL, 0, "--layout dix goes with --pi-file, dif without it");
		goto out;
	}
	if (o.io_engine) {
		static const char *const engines[] = { "auto", "pread", "uring", NULL };
		static const enum integrity_scrub_io_engine engine_values[] = {
			INTEGRITY_SCRUB_IO_AUTO, INTEGRITY_SCRUB_IO_PREAD, INTEGRITY_SCRUB_IO_URING,
		};
		int i = option_choice("--io-engine", o.io_engine, engines);
		if (i < 0)
			goto out;
		params.io_engine = engine_values[i];
	}
	params.wait = o.wait;
	if (o.rate) {
		if (parse_size(o.rate, &v) < 0 || !v) {
			bad_option("--rate", o.rate, "bytes per second, e.g. 50M");
			goto out;
		}
		rate = v;
	}
	if (o.rate_per_device) {
		if (parse_size(o.rate_per_device, &v) < 0 || !v) {
			bad_option("--rate-per-device", o.rate_per_device, "bytes per second, e.g. 50M");
			goto out;
		}
		params.rate = v;
	}
	if (o.jobs) {
		if (parse_u64(o.jobs, &v) < 0 || !v || v > 65536) {
			bad_option("--jobs", o.jobs, "a number of targets, 1 or more");
			goto out;
		}
		jobs = (unsigned)v;
	}
	while (args && args[ntargets])
		ntargets++;
	if (pi_opts.pi_file && ntargets > 1) {
		fail(EXIT_USAGE, NULL, 0, "--pi-file belongs to one TARGET");
		goto out;
	}
	if (o.io_size) {
		if (parse_size(o.io_size, &v) < 0 || v < 4096 || v > (64u << 20)) {
			bad_option("--io-size", o.io_size, "from 4K to 64M");
			goto out;
		}
		params.io_size = (uint32_t)v;
	}
	if (o.queue_depth) {
		if (parse_u64(o.queue_depth, &v) < 0 || !v || v > 64) {
			bad_option("--queue-depth", o.queue_depth, "from 1 to 64");
			goto out;
		}
		params.queue_depth = (unsigned)v;
	}
	if (o.verify_threads && strcmp(o.verify_threads, "auto") == 0) {
		params.verify_threads = INTEGRITY_SCRUB_VERIFY_THREADS_AUTO;
	} else if (o.verify_threads) {
		if (parse_u64(o.verify_threads, &v) < 0 || !v || v > 16) {
			bad_option("--verify-threads", o.verify_threads, "auto, or from 1 to 16");
			goto out;
		}
		params.verify_threads = (unsigned)v;
	}
	if (o.duration && (parse_duration(o.duration, &params.duration) < 0 || params.duration <= 0)) {
		bad_option("--duration", o.duration, "like 90s, 30m, 6h or 1d");
		goto out;
	}
	static const char *const progress_modes[] = { "auto", "always", "never", NULL };
	int progress_mode = o.progress ? option_choice("--progress", o.progress, progress_modes) : 0;
	if (progress_mode < 0)
		goto out;
	bool progress_bar = !gopt.quiet && (progress_mode == 1 || (progress_mode == 0 && isatty(STDERR_FILENO)));
	if (!o.no_state) {
		if (mkdir(state_dir, 0755) < 0 && errno != EEXIST) {
			ret = fail_fix(EXIT_FAIL, state_dir, -errno, "give --state-dir DIR, or --no-state",
				       "cannot create the state directory");
			goto out;
		}
		params.state_dir = state_dir;
	}
	params.restart = o.restart;

	if (o.all && ntargets) {
		fail(EXIT_USAGE, NULL, 0, "--all takes no TARGET");
		goto out;
	}
	r = rate ? integrity_scrub_budget_new(&budget, rate) : 0;
	if (r < 0) {
		ret = fail(EXIT_FAIL, NULL, r, "cannot set up");
		goto out;
	}

	/* Signals are the command's: the library only polls should_stop. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o.repair && (o.all || ntargets > 1)) {
		ret = fail(EXIT_USAGE, NULL, 0, "--repair is for one md array");
		goto out;
	}
	if (o.all)
		ret = scrub_all(&params, jobs, progress_bar, rate);
	else if ((ret = target_nodes(args, ntargets, &nodes)) != 0)
		;	/* told */
	else if (ntargets > 1)
		ret = scrub_many((const char *const *)nodes, ntargets, &params, jobs, progress_bar, rate);
	else if ((ret = scrub_stack(nodes[0], &params, jobs, progress_bar, rate, budget)) < 0) {
		if (o.repair)
			ret = fail(EXIT_USAGE, args[0], 0, "--repair is for md arrays: name the array");
		else
			ret = scrub_one(nodes[0], &params, progress_bar, budget, NULL);
	}
out:
	for (size_t i = 0; nodes && i < ntargets; i++)
		free(nodes[i]);
	free(nodes);
	integrity_scrub_budget_free(budget);
	poptFreeContext(pc);
	return ret;
}
