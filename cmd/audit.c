/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl audit: names that will move, protection left off, scrubs never scheduled. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"

DEFINE_CLEANUP_FUNC(struct integrity_audit *, integrity_audit_free)

static struct {
	int fix;
	int dry_run;
	char *root;
	char *state_dir;
} o;

/* What a fix did to each file: -errno, 0 nothing, 1 written; its backup. */
struct written {
	int result;
	char backup[4096];
};

static char *shown(const char *s)
{
	return printable_name(s, true, true);
}

static void finding_text(const struct integrity_audit *a, size_t i)
{
	enum integrity_audit_kind kind = integrity_audit_kind(a, i);
	const char *file = integrity_audit_file(a, i);
	_cleanup_free_ char *name = shown(integrity_audit_name(a, i));
	_cleanup_free_ char *detail = shown(integrity_audit_detail(a, i));

	if (!file) {
		printf("%s (%u:%u): %s\n", name ? name : "", integrity_audit_major(a, i), integrity_audit_minor(a, i),
		       detail ? detail : "");
		return;
	}
	_cleanup_free_ char *path = shown(file);
	if (kind == INTEGRITY_AUDIT_UNREADABLE) {
		printf("%s: %s\n", path ? path : "", detail ? detail : "");
		return;
	}
	printf("%s:%u: ", path ? path : "", integrity_audit_line(a, i));
	if (kind == INTEGRITY_AUDIT_UNPARSED) {
		printf("%s\n", detail ? detail : "");
		return;
	}
	printf("%s (%s) is %s\n", name ? name : "", integrity_audit_field(a, i), detail ? detail : "");
	if (kind == INTEGRITY_AUDIT_MISSING_NAME) {
		_cleanup_free_ char *reason = shown(integrity_audit_reason(a, i));
		printf("  now:         nothing: %s\n", reason ? reason : "");
		return;
	}
	printf("  now:         %s (%u:%u)\n", integrity_audit_device(a, i), integrity_audit_major(a, i),
	       integrity_audit_minor(a, i));
	for (size_t j = 0; j < integrity_audit_stable_count(a, i); j++) {
		_cleanup_free_ char *s = shown(integrity_audit_stable(a, i, j));
		printf("  %-12s %s\n", j ? "" : "stable:", s ? s : "");
	}
	const char *rec = integrity_audit_recommended(a, i);
	_cleanup_free_ char *reason = shown(integrity_audit_reason(a, i));
	if (rec) {
		_cleanup_free_ char *r = shown(rec);
		printf("  recommended: %s\n  why:         %s\n", r ? r : "", reason ? reason : "");
	} else {
		printf("  recommended: none: %s\n", reason ? reason : "");
	}
}

static void report_json(const struct integrity_audit *a, const struct written *w)
{
	struct json j;

	json_open(&j, stdout);
	json_string(&j, "root", o.root ? o.root : "/");
	json_array_begin(&j, "findings");
	for (size_t i = 0; i < integrity_audit_count(a); i++) {
		const char *file = integrity_audit_file(a, i);
		json_object_begin(&j, NULL);
		json_string(&j, "kind", integrity_audit_kind_name(integrity_audit_kind(a, i)));
		json_string(&j, "file", file);
		if (file)
			json_u64(&j, "line", integrity_audit_line(a, i));
		if (*integrity_audit_field(a, i))
			json_string(&j, "field", integrity_audit_field(a, i));
		if (*integrity_audit_name(a, i))
			json_string(&j, "name", integrity_audit_name(a, i));
		if (*integrity_audit_device(a, i)) {
			json_string(&j, "device", integrity_audit_device(a, i));
			char devt[32];
			snprintf(devt, sizeof(devt), "%u:%u", integrity_audit_major(a, i), integrity_audit_minor(a, i));
			json_string(&j, "maj:min", devt);
			/* 0.1's keys, kept for one release beside maj:min. */
			json_u64(&j, "major", integrity_audit_major(a, i));
			json_u64(&j, "minor", integrity_audit_minor(a, i));
		}
		json_string(&j, "detail", integrity_audit_detail(a, i));
		if (integrity_audit_kind(a, i) == INTEGRITY_AUDIT_UNSTABLE_NAME) {
			json_array_begin(&j, "stable-names");
			for (size_t k = 0; k < integrity_audit_stable_count(a, i); k++)
				json_string(&j, NULL, integrity_audit_stable(a, i, k));
			json_array_end(&j);
			json_string(&j, "recommended", integrity_audit_recommended(a, i));
		}
		if (*integrity_audit_reason(a, i))
			json_string(&j, "reason", integrity_audit_reason(a, i));
		if (file)
			json_bool(&j, "fixable", integrity_audit_fixable(a, i));
		if (integrity_audit_last_scrub(a, i))
			json_u64(&j, "last-scrub", (uint64_t)integrity_audit_last_scrub(a, i));
		json_object_end(&j);
	}
	json_array_end(&j);
	json_array_begin(&j, "files");
	for (size_t f = 0; f < integrity_audit_file_count(a); f++) {
		json_object_begin(&j, NULL);
		json_string(&j, "path", integrity_audit_file_path(a, f));
		json_bool(&j, "parsed", integrity_audit_file_parsed(a, f));
		json_u64(&j, "changes", integrity_audit_file_changes(a, f));
		if (o.fix && integrity_audit_file_changes(a, f))
			json_string(&j, "diff", integrity_audit_file_diff(a, f));
		if (w) {
			json_bool(&j, "written", w[f].result > 0);
			if (w[f].result > 0)
				json_string(&j, "backup", w[f].backup);
		}
		json_object_end(&j);
	}
	json_array_end(&j);
	json_u64(&j, "findings-count", integrity_audit_count(a));
	json_close(&j);
}

/* Write one file's fixes: its result in w, and the message on failure. */
static int apply_fix(struct integrity_audit *a, size_t f, struct written *w)
{
	w->result = integrity_audit_file_fix(a, f, w->backup, sizeof(w->backup));
	if (w->result >= 0)
		return w->result;
	_cleanup_free_ char *path = shown(integrity_audit_file_path(a, f));
	if (w->result == -ESTALE)
		fail(EXIT_FAIL, path, 0, "not written: it changed while it was audited; run the audit again");
	else if (w->result == -EBADMSG)
		fail(EXIT_FAIL, path, 0, "not written: a line of it was not understood");
	else
		fail_file(EXIT_FAIL, path ? path : "", w->result, "not written");
	return w->result;
}

/* Findings, then each file's diff, written (unless --dry-run) once shown. */
static int report_text(struct integrity_audit *a, struct written *w)
{
	size_t n = integrity_audit_count(a);
	int ret = EXIT_CLEAN;

	for (size_t i = 0; i < n; i++)
		finding_text(a, i);
	for (size_t f = 0; o.fix && f < integrity_audit_file_count(a); f++) {
		if (!integrity_audit_file_changes(a, f))
			continue;
		fputs(integrity_audit_file_diff(a, f), stdout);
		if (!w)
			continue;
		fflush(stdout);
		if (apply_fix(a, f, &w[f]) < 0) {
			ret = EXIT_FAIL;
			continue;
		}
		_cleanup_free_ char *path = shown(integrity_audit_file_path(a, f));
		_cleanup_free_ char *backup = shown(w[f].backup);
		printf("%s: written; the old file is kept as %s\n", path ? path : "", backup ? backup : "");
	}
	if (!gopt.quiet)
		printf("%zu finding%s\n", n, n == 1 ? "" : "s");
	return ret;
}

static int exit_code(const struct integrity_audit *a, const struct written *w)
{
	int ret = EXIT_CLEAN;

	for (size_t i = 0; i < integrity_audit_count(a); i++) {
		enum integrity_audit_kind kind = integrity_audit_kind(a, i);
		if (kind == INTEGRITY_AUDIT_UNREADABLE)
			return EXIT_FAIL;
		/* A name a fix has just rewritten is no longer a finding. */
		const char *file = integrity_audit_file(a, i);
		bool fixed = false;
		for (size_t f = 0; w && file && integrity_audit_fixable(a, i) && f < integrity_audit_file_count(a); f++)
			if (strcmp(integrity_audit_file_path(a, f), file) == 0 && w[f].result > 0)
				fixed = true;
		if (!fixed)
			ret = EXIT_BAD;
	}
	return ret;
}

int cmd_audit(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "fix", '\0', POPT_ARG_NONE, &o.fix, 0,
		  "rewrite unstable names with the recommended stable ones (a diff first, a dated backup kept)",
		  NULL },
		{ "dry-run", '\0', POPT_ARG_NONE, &o.dry_run, 0, "with --fix: show the diff and change nothing", NULL },
		{ "root", '\0', POPT_ARG_STRING, &o.root, 0,
		  "read (and fix) the configuration under DIR instead of / (no kernel command line then)", "DIR" },
		{ "state-dir", '\0', POPT_ARG_STRING, &o.state_dir, 0,
		  "where scrub checkpoints are kept (default DIR" DEFAULT_STATE_DIR ")", "DIR" },
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(integrity_audit_freep) struct integrity_audit *a = NULL;
	_cleanup_free_ struct written *w = NULL;
	_cleanup_free_ char *state_dir = NULL;
	int r;

	r = parse_options(&pc, "integrityctl audit", argc, argv, table, "[OPTIONS]");
	if (r)
		return r;
	if (gopt.output || gopt.output_all)
		return refuse_columns("findings have no columns to choose");
	const char **args = poptGetArgs(pc);
	if (args && args[0])
		return usage_error("[OPTIONS]");
	if (o.dry_run && !o.fix)
		return fail(EXIT_USAGE, NULL, 0, "--dry-run goes with --fix");
	if (o.root && !*o.root)
		return fail(EXIT_USAGE, NULL, 0, "--root: an empty directory name");
	const char *root = o.root && strcmp(o.root, "/") != 0 ? o.root : "";
	if (o.state_dir)
		state_dir = strdup(o.state_dir);
	else if (asprintf(&state_dir, "%s%s", root, DEFAULT_STATE_DIR) < 0)
		state_dir = NULL;
	if (!state_dir)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "audit");

	r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	r = integrity_audit_run(ctx, o.root, state_dir, 0, 0, &a);
	if (r < 0)
		return fail(EXIT_FAIL, o.root ? o.root : "/", r, "audit failed");

	int ret = EXIT_CLEAN;
	if (o.fix && !o.dry_run) {
		w = calloc(integrity_audit_file_count(a) + 1, sizeof(*w));
		if (!w)
			return fail(EXIT_FAIL, NULL, -ENOMEM, "audit");
	}
	if (gopt.json) {
		for (size_t f = 0; w && f < integrity_audit_file_count(a); f++)
			if (integrity_audit_file_changes(a, f) && apply_fix(a, f, &w[f]) < 0)
				ret = EXIT_FAIL;
		report_json(a, w);
	} else {
		ret = report_text(a, w);
	}
	int found = exit_code(a, w);
	return ret ? ret : found;
}
