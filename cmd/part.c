/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl part list|create|delete|sync: many partitions, registered
 * with the kernel one by one (BLKPG), never by a re-read. */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "columns.h"

enum {
	COL_ACTION, COL_NR, COL_START, COL_END, COL_SECTORS, COL_SIZE, COL_TYPE, COL_TYPENAME,
	COL_NAME, COL_UUID, COL_KNAME, COL_MAJMIN, COL_EXT, COL_KERNEL, COL_RESULT,
};

static const struct column_def columns[] = {
	[COL_ACTION] = { "ACTION", 6, 0, SCOLS_JSON_STRING,
			 "what create, delete and sync do: create, delete, add, remove, resize, skip" },
	[COL_NR] = { "NR", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "partition number" },
	[COL_START] = { "START", 8, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "first sector" },
	[COL_END] = { "END", 8, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "last sector" },
	[COL_SECTORS] = { "SECTORS", 8, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "size in sectors" },
	[COL_SIZE] = { "SIZE", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
		       "size (bytes in JSON and with --bytes)" },
	[COL_TYPE] = { "TYPE", 36, 0, SCOLS_JSON_STRING, "partition type: GPT GUID or MBR code" },
	[COL_TYPENAME] = { "TYPENAME", 0.1, 0, SCOLS_JSON_STRING, "partition type name" },
	[COL_NAME] = { "NAME", 0.1, 0, SCOLS_JSON_STRING, "partition name (GPT)" },
	[COL_UUID] = { "UUID", 36, 0, SCOLS_JSON_STRING, "partition UUID (PARTUUID)" },
	[COL_KNAME] = { "KNAME", 6, 0, SCOLS_JSON_STRING, "the kernel's name of the partition" },
	[COL_MAJMIN] = { "MAJ:MIN", 7, 0, SCOLS_JSON_STRING, "major:minor device number" },
	/* Optional: a partition the kernel does not have has no number (null). */
	[COL_EXT] = { "EXT", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN_OPTIONAL,
		      "number outside the disk's own range (extended, major 259)" },
	[COL_KERNEL] = { "KERNEL", 7, 0, SCOLS_JSON_STRING,
			 "the kernel's view matches the table: yes, missing, differs, extra" },
	[COL_RESULT] = { "RESULT", 0.2, 0, SCOLS_JSON_STRING,
			 "outcome of an action: ok, planned, failed or skipped, and why" },
};

static const size_t list_columns[] = {
	COL_NR, COL_START, COL_END, COL_SECTORS, COL_SIZE, COL_TYPE, COL_NAME, COL_UUID,
	COL_KNAME, COL_MAJMIN, COL_EXT, COL_KERNEL,
};
static const size_t created_columns[] = {
	COL_NR, COL_START, COL_END, COL_SECTORS, COL_SIZE, COL_NAME, COL_UUID, COL_KNAME,
	COL_MAJMIN, COL_EXT,
};
static const size_t plan_columns[] = {
	COL_ACTION, COL_NR, COL_START, COL_END, COL_SECTORS, COL_SIZE, COL_TYPE, COL_NAME,
};
static const size_t action_columns[] = {
	COL_ACTION, COL_NR, COL_START, COL_SECTORS, COL_SIZE, COL_KNAME, COL_MAJMIN, COL_RESULT,
};

static struct {
	char *count;
	char *size;
	char *type;
	char *name_prefix;
	char *script;
	char *label;
	int dry_run;
	int yes;
	int force;
	int bytes;
	int help;
} o;

static struct poptOption write_table[] = {
	{ "dry-run", '\0', POPT_ARG_NONE, &o.dry_run, 0, "show the plan, change nothing", NULL },
	{ "yes", 'y', POPT_ARG_NONE, &o.yes, 0, "do not ask for confirmation", NULL },
	{ "force", '\0', POPT_ARG_NONE, &o.force, 0,
	  "write even though the current table did not read cleanly", NULL },
	POPT_TABLEEND
};

/* One row of any of the tables: a partition or an action on one. */
struct row {
	const char *action;
	unsigned partno;
	bool has_table;
	uint64_t start, size;
	const char *type, *type_name, *name, *uuid;
	const char *kname;
	unsigned major, minor;
	bool ext;
	const char *kernel;
	const char *result;
};

static void add_row(const struct column_set *set, struct libscols_table *tb, unsigned sector_size,
		    const struct row *r)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	char buf[32];

	if (!ln)
		return;
	if (r->action)
		columns_set(set, ln, COL_ACTION, "%s", r->action);
	columns_set(set, ln, COL_NR, "%u", r->partno);
	if (r->has_table) {
		columns_set(set, ln, COL_START, "%" PRIu64, r->start);
		columns_set(set, ln, COL_END, "%" PRIu64, r->start + r->size - 1);
		columns_set(set, ln, COL_SECTORS, "%" PRIu64, r->size);
		if (o.bytes || gopt.json)
			columns_set(set, ln, COL_SIZE, "%" PRIu64, r->size * sector_size);
		else
			columns_set(set, ln, COL_SIZE, "%s",
				    format_size(r->size * sector_size, buf, sizeof(buf)));
	}
	if (r->type)
		columns_set(set, ln, COL_TYPE, "%s", r->type);
	if (r->type_name)
		columns_set(set, ln, COL_TYPENAME, "%s", r->type_name);
	if (r->name)
		columns_set(set, ln, COL_NAME, "%s", r->name);
	if (r->uuid)
		columns_set(set, ln, COL_UUID, "%s", r->uuid);
	if (r->kname) {
		columns_set(set, ln, COL_KNAME, "%s", r->kname);
		columns_set(set, ln, COL_MAJMIN, "%u:%u", r->major, r->minor);
		columns_set(set, ln, COL_EXT, "%d", r->ext);
	}
	if (r->kernel)
		columns_set(set, ln, COL_KERNEL, "%s", r->kernel);
	if (r->result)
		columns_set(set, ln, COL_RESULT, "%s", r->result);
}

static void row_from_entry(struct row *r, const struct integrity_part_entry *e)
{
	*r = (struct row){
		.partno = e->partno,
		.has_table = e->in_table,
		.start = e->in_table ? e->start : e->kernel_start,
		.size = e->in_table ? e->size : e->kernel_size,
		.type = e->type,
		.type_name = e->type_name,
		.name = e->name,
		.uuid = e->uuid,
		.kname = e->kname,
		.major = e->major,
		.minor = e->minor,
		.ext = e->extended_devt,
		/* "-" where there is no kernel to compare with (an image): null in JSON. */
		.kernel = gopt.json && e->kernel == INTEGRITY_PART_KERNEL_UNKNOWN
				  ? NULL
				  : integrity_part_kernel_state_name(e->kernel),
	};
	/* A partition only the kernel has still shows where it is. */
	r->has_table = e->in_table || e->in_kernel;
}

static void row_from_action(struct row *r, const struct integrity_part_action *a,
			    const struct integrity_part_disk *d, bool applied, char *result,
			    size_t len)
{
	const struct integrity_part_entry *e = integrity_part_disk_find(d, a->partno);

	*r = (struct row){
		.action = integrity_part_op_name(a->op),
		.partno = a->partno,
		.has_table = a->size != 0,
		.start = a->start,
		.size = a->size,
		.type = a->type,
		.type_name = e && e->type && a->type && strcmp(e->type, a->type) == 0 ? e->type_name
										     : NULL,
		.name = a->name,
		.uuid = a->uuid,
		.kname = a->kname,
		.major = a->major,
		.minor = a->minor,
		.ext = a->extended_devt,
		.result = result,
	};
	if (a->op == INTEGRITY_PART_OP_SKIP)
		snprintf(result, len, "skipped: %s", a->why ? a->why : "");
	else if (!applied)
		snprintf(result, len, "planned");
	else if (a->done)
		snprintf(result, len, "ok");
	else
		snprintf(result, len, "failed: %s", a->why ? a->why : strerror(-a->result));
}

/* Print one library error on DEVICE: "[partition N: ]what: why" after fail()'s prefix. */
static int report(int code, const char *dev, const struct integrity_part_error *e)
{
	char part[32] = "";

	if (e->partno)
		snprintf(part, sizeof(part), "partition %u: ", e->partno);
	if (e->err == -EUCLEAN)
		return fail(code, dev, 0, "%s%s: %s (--force writes anyway, unless the disk is in use)", part,
			    e->what, e->why);
	if (e->err == -ENOTBLK)
		return fail_fix(code, dev, 0, "give a disk or an image file ('integrityctl status' lists the disks)",
				"%s%s: %s", part, e->what, e->why);
	if (e->err == -ENOENT && !e->partno)
		return fail_fix(code, dev, e->err, "check the path", "%s%s", part, e->what);
	if (e->why[0])
		return fail(code, dev, 0, "%s%s: %s", part, e->what, e->why);
	return fail(code, dev, e->err, "%s%s", part, e->what);
}

static int open_exit_code(int r)
{
	return r == -EINVAL || r == -ENOTBLK ? EXIT_USAGE : EXIT_FAIL;
}

/* A plan that could not be made: the request (2) or the device's state (3). */
static int plan_exit_code(int r)
{
	switch (-r) {
	case EBUSY:
	case EUCLEAN:
	case EBADF:
	case ENOMEM:
	case EIO:
	case EACCES:
	case EPERM:
	case ENXIO:
		return EXIT_FAIL;
	default:
		return EXIT_USAGE;
	}
}

static int open_disk(const char *path, bool write, struct integrity_part_disk **d)
{
	struct integrity_part_error e;
	unsigned flags = (write ? INTEGRITY_PART_WRITE : 0) | (o.force ? INTEGRITY_PART_FORCE : 0);
	char node[4096];
	int r = integrity_part_disk_open(d, integrity_device_path(NULL, path, node, sizeof(node)) == 0 ? node : path,
					 flags, &e);

	if (r < 0)
		return report(open_exit_code(r), path, &e);
	for (size_t i = 0; i < integrity_part_disk_problem_count(*d); i++)
		warnx_obj(path, "%s", integrity_part_disk_problem(*d, i));
	return 0;
}

static struct libscols_table *new_table(struct column_set *set, const size_t *defaults, size_t n,
					const char *json_name)
{
	if (columns_select(set, columns, ARRAY_SIZE(columns), defaults, n, gopt.output))
		return NULL;
	struct libscols_table *tb = columns_new_table(set, json_name);
	if (!tb)
		fail(EXIT_FAIL, NULL, -ENOMEM, "output");
	return tb;
}

/* The device argument: exactly one, after the options. */
static const char *one_device(poptContext pc, const char *usage, size_t extra)
{
	const char **args = poptGetArgs(pc);
	size_t n = 0;

	while (args && args[n])
		n++;
	if (n < 1 + extra || (!extra && n > 1)) {
		usage_error(usage);
		return NULL;
	}
	return args[0];
}

static void usage_help(poptContext pc, const size_t *defaults, size_t n)
{
	poptPrintHelp(pc, stdout, 0);
	columns_help(stdout, columns, ARRAY_SIZE(columns));
	fputs("\nDefault columns: ", stdout);
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? "," : "", columns[defaults[i]].name);
	putchar('\n');
}

/* What every subcommand does first: its options (name is "integrityctl
 * part SUB", kept by popt), --help with the columns (help_columns are the
 * defaults), and DEVICE followed by at least `extra` more arguments.  True
 * with *pc and *dev set; false when the subcommand ends here (bad options,
 * --help), with *pc freed and its exit code in *code. */
static bool subcommand_start(poptContext *pc, const char *name, int argc, const char **argv,
			     const struct poptOption *table, const char *usage,
			     const size_t *help_columns, size_t nhelp, size_t extra, const char **dev,
			     int *code)
{
	*code = parse_options(pc, name, argc, argv, table, usage);
	if (*code)
		return false;
	if (o.help) {
		usage_help(*pc, help_columns, nhelp);
		*code = EXIT_CLEAN;
	} else if ((*dev = one_device(*pc, usage, extra))) {
		return true;
	} else {
		*code = EXIT_USAGE;
	}
	poptFreeContext(*pc);
	return false;
}

/* ------------------------------------------------------------------ list */

static int part_list(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "bytes", 'b', POPT_ARG_NONE, &o.bytes, 0, "print SIZE in bytes", NULL },
		{ "help", 'h', POPT_ARG_NONE, &o.help, 0, "show this help and the columns", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	struct integrity_part_disk *d = NULL;
	struct column_set set;
	poptContext pc;
	int r;

	const char *dev;

	if (!subcommand_start(&pc, "integrityctl part list", argc, argv, table, "DEVICE",
			      list_columns, ARRAY_SIZE(list_columns), 0, &dev, &r))
		return r;
	struct libscols_table *tb = new_table(&set, list_columns, ARRAY_SIZE(list_columns),
					      "partitions");
	if (!tb) {
		poptFreeContext(pc);
		return EXIT_USAGE;
	}
	r = open_disk(dev, false, &d);
	if (r == 0) {
		for (size_t i = 0; i < integrity_part_disk_count(d); i++) {
			struct row row;
			row_from_entry(&row, integrity_part_disk_entry(d, i));
			add_row(&set, tb, integrity_part_disk_sector_size(d), &row);
		}
		if (!integrity_part_disk_label(d) && !integrity_part_disk_count(d) && !gopt.json)
			warnx_obj(dev, "no partition table");
		else
			scols_print_table(tb);
	}
	scols_unref_table(tb);
	integrity_part_disk_free(d);
	poptFreeContext(pc);
	return r;
}

/* ------------------------------------------------------------------ writing */

/* Ask on a terminal; refuse without one unless --yes. */
static int confirm(const char *dev, const char *what)
{
	char answer[16];

	if (o.yes)
		return 0;
	if (!isatty(STDIN_FILENO))
		return fail(EXIT_USAGE, dev, 0,
			    "not on a terminal: refusing to %s without --yes", what);
	fprintf(stderr, "%s: %s? [y/N] ", dev, what);
	fflush(stderr);
	if (!fgets(answer, sizeof(answer), stdin) || (answer[0] != 'y' && answer[0] != 'Y'))
		return fail(EXIT_FAIL, dev, 0, "not confirmed: nothing written");
	return 0;
}

static void print_plan(const struct integrity_part_plan *plan, const struct integrity_part_disk *d,
		       const size_t *defaults, size_t ndefaults, bool applied, const char *json_name)
{
	struct column_set set;
	struct libscols_table *tb = new_table(&set, defaults, ndefaults, json_name);
	char result[512];

	if (!tb)
		return;
	for (size_t i = 0; i < integrity_part_plan_count(plan); i++) {
		const struct integrity_part_action *a = integrity_part_plan_action(plan, i);
		struct row row;
		if (applied && a->op == INTEGRITY_PART_OP_CREATE && !a->done)
			continue;	/* reported as an error */
		row_from_action(&row, a, d, applied, result, sizeof(result));
		add_row(&set, tb, integrity_part_disk_sector_size(d), &row);
	}
	scols_print_table(tb);
	scols_unref_table(tb);
}

/* Apply the plan and report: every failed action on stderr, exit 3 when any. */
static int apply(struct integrity_part_plan *plan, struct integrity_part_disk *d, const char *dev,
		 const size_t *done_columns, size_t ndone, const char *json_name)
{
	struct integrity_part_error e;
	int r = integrity_part_plan_apply(plan, &e);
	bool failed = false;

	for (size_t i = 0; i < integrity_part_plan_count(plan); i++) {
		const struct integrity_part_action *a = integrity_part_plan_action(plan, i);
		if (a->done || a->op == INTEGRITY_PART_OP_SKIP || (r < 0 && !a->result))
			continue;
		fail(EXIT_FAIL, dev, 0, "partition %u: %s", a->partno,
		     a->why ? a->why : strerror(-a->result));
		failed = true;
	}
	if (r < 0 && !failed)
		return report(EXIT_FAIL, dev, &e);
	if (!gopt.quiet || gopt.json)
		print_plan(plan, d, done_columns, ndone, true, json_name);
	return failed || r < 0 ? EXIT_FAIL : EXIT_CLEAN;
}

static int plan_made(int r, const char *dev, const struct integrity_part_error *e)
{
	return r < 0 ? report(plan_exit_code(r), dev, e) : 0;
}

/* How create and delete show a plan and its outcome. */
struct plan_output {
	const char *verb;		/* "create": "create 3 partitions? [y/N]" */
	const char *dry_run;		/* "planned": "3 partitions planned, nothing written" */
	const size_t *plan_cols, *done_cols;
	size_t nplan, ndone;
	const char *plan_json, *done_json;
};

static const struct plan_output create_output = {
	"create", "planned", plan_columns, created_columns, ARRAY_SIZE(plan_columns),
	ARRAY_SIZE(created_columns), "plan", "partitions",
};

static const struct plan_output delete_output = {
	"delete", "to delete", action_columns, action_columns, ARRAY_SIZE(action_columns),
	ARRAY_SIZE(action_columns), "actions", "actions",
};

/* create and delete, once planned: show the plan (--dry-run), or confirm
 * and apply it. */
static int plan_finish(struct integrity_part_plan *plan, struct integrity_part_disk *d,
		       const char *dev, const struct plan_output *out)
{
	size_t n = integrity_part_plan_count(plan);
	char what[64];
	int r;

	if (o.dry_run) {
		print_plan(plan, d, out->plan_cols, out->nplan, false, out->plan_json);
		if (!gopt.quiet)
			fprintf(stderr, "%s: dry run: %zu partition%s %s, nothing written\n", dev, n,
				n == 1 ? "" : "s", out->dry_run);
		return EXIT_CLEAN;
	}
	snprintf(what, sizeof(what), "%s %zu partition%s", out->verb, n, n == 1 ? "" : "s");
	if ((r = confirm(dev, what)) != 0)
		return r;
	return apply(plan, d, dev, out->done_cols, out->ndone, out->done_json);
}

/* ------------------------------------------------------------------ create */

static int part_create(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "count", '\0', POPT_ARG_STRING, &o.count, 0, "number of partitions to create", "N" },
		{ "size", '\0', POPT_ARG_STRING, &o.size, 0, "size of each (suffixes K, M, G, T)", "S" },
		{ "type", '\0', POPT_ARG_STRING, &o.type, 0,
		  "partition type: GUID or name (default: Linux filesystem)", "T" },
		{ "name-prefix", '\0', POPT_ARG_STRING, &o.name_prefix, 0,
		  "name each partition P<number> (GPT)", "P" },
		{ "script", '\0', POPT_ARG_STRING, &o.script, 0,
		  "the partitions as an sfdisk script; - for standard input", "FILE" },
		{ "label", '\0', POPT_ARG_STRING, &o.label, 0,
		  "partition table to create on an empty disk", "gpt|dos" },
		{ "bytes", 'b', POPT_ARG_NONE, &o.bytes, 0, "print SIZE in bytes", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, write_table, 0, NULL, NULL },
		{ "help", 'h', POPT_ARG_NONE, &o.help, 0, "show this help and the columns", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	static const char usage[] =
		"DEVICE (--count N --size S [--type T] [--name-prefix P] | --script FILE) "
		"[--label gpt|dos] [--dry-run] [--yes]";
	struct integrity_part_disk *d = NULL;
	struct integrity_part_plan *plan = NULL;
	struct integrity_part_error e;
	poptContext pc;
	const char *dev;
	int r, script_fd = -1;

	if (!subcommand_start(&pc, "integrityctl part create", argc, argv, table, usage,
			      created_columns, ARRAY_SIZE(created_columns), 0, &dev, &r))
		return r;
	r = EXIT_USAGE;
	struct integrity_part_spec spec = {
		.label = o.label, .type = o.type, .name_prefix = o.name_prefix,
	};
	if (o.script && (o.count || o.size || o.type || o.name_prefix)) {
		conflicting_options("--script", "--count/--size/--type/--name-prefix", NULL);
		goto out;
	}
	if (!o.script && (!o.count || !o.size)) {
		fail(EXIT_USAGE, dev, 0, "give --count and --size, or --script");
		goto out;
	}
	if (o.label) {
		static const char *const labels[] = { "gpt", "dos", NULL };
		int i = option_choice("--label", o.label, labels);
		if (i < 0)
			goto out;
		spec.label = labels[i];
	}
	if (o.count) {
		uint64_t v;
		if (parse_u64(o.count, &v) < 0 || v > UINT32_MAX) {
			bad_option("--count", o.count, "not a number of partitions (1 to 255)");
			goto out;
		}
		spec.count = (unsigned)v;
		if (parse_size(o.size, &spec.size) < 0) {
			bad_option("--size", o.size, "not a size (64M, 1.5G: bytes, with K, M, G or T)");
			goto out;
		}
	}
	if (o.script) {
		script_fd = strcmp(o.script, "-") == 0 ? STDIN_FILENO
						       : open(o.script, O_RDONLY | O_CLOEXEC);
		if (script_fd < 0) {
			r = fail(EXIT_FAIL, o.script, -errno, "cannot open");
			goto out;
		}
	}
	if ((r = open_disk(dev, !o.dry_run, &d)) != 0)
		goto out;
	if (o.script)
		r = integrity_part_plan_script(d, script_fd, o.label, &plan, &e);
	else
		r = integrity_part_plan_create(d, &spec, &plan, &e);
	if ((r = plan_made(r, dev, &e)) == 0)
		r = plan_finish(plan, d, dev, &create_output);
out:
	if (script_fd > STDIN_FILENO)
		close(script_fd);
	integrity_part_plan_free(plan);
	integrity_part_disk_free(d);
	poptFreeContext(pc);
	return r;
}

/* ------------------------------------------------------------------ delete */

static int add_number(unsigned **v, size_t *n, unsigned x)
{
	unsigned *nv = realloc(*v, (*n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = x;
	*v = nv;
	return 0;
}

/* One of "N", "N-M": a single number must exist (the library says so); a
 * range takes the partitions that exist in it, at least one. */
static int parse_range(const char *dev, const char *arg, char *tok,
		       const struct integrity_part_disk *d, unsigned **out, size_t *nout)
{
	char *dash = strchr(tok, '-');
	uint64_t a, b = 0;

	if (dash)
		*dash = '\0';
	if (parse_u64(tok, &a) < 0 || !a || a > 65535 ||
	    (dash && (parse_u64(dash + 1, &b) < 0 || b < a || b > 65535)))
		return fail(EXIT_USAGE, dev, 0, "'%s': not a partition number or range (N or N-M)", arg);
	if (!dash)
		return add_number(out, nout, (unsigned)a) < 0 ? fail(EXIT_FAIL, NULL, -ENOMEM, "parsing") : 0;
	size_t before = *nout;
	for (uint64_t x = a; x <= b; x++)
		if (integrity_part_disk_find(d, (unsigned)x) && add_number(out, nout, (unsigned)x) < 0)
			return fail(EXIT_FAIL, NULL, -ENOMEM, "parsing");
	if (*nout == before)
		return fail(EXIT_USAGE, dev, 0, "no partitions in %" PRIu64 "-%" PRIu64, a, b);
	return 0;
}

/* The arguments after DEVICE: ranges, each argument possibly a list "N,M-K". */
static int parse_numbers(const char *dev, const char **args, const struct integrity_part_disk *d,
			 unsigned **out, size_t *nout)
{
	for (; *args; args++) {
		char *copy = strdup(*args), *save = NULL;
		int r = 0;
		if (!copy)
			return fail(EXIT_FAIL, NULL, -ENOMEM, "parsing");
		for (char *tok = strtok_r(copy, ",", &save); tok && !r; tok = strtok_r(NULL, ",", &save))
			r = parse_range(dev, *args, tok, d, out, nout);
		free(copy);
		if (r)
			return r;
	}
	return 0;
}

static int part_delete(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, write_table, 0, NULL, NULL },
		{ "bytes", 'b', POPT_ARG_NONE, &o.bytes, 0, "print SIZE in bytes", NULL },
		{ "help", 'h', POPT_ARG_NONE, &o.help, 0, "show this help and the columns", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	static const char usage[] = "DEVICE N[-M]... [--dry-run] [--yes]";
	struct integrity_part_disk *d = NULL;
	struct integrity_part_plan *plan = NULL;
	struct integrity_part_error e;
	unsigned *numbers = NULL;
	size_t n = 0;
	poptContext pc;
	const char *dev;
	int r;

	if (!subcommand_start(&pc, "integrityctl part delete", argc, argv, table, usage,
			      action_columns, ARRAY_SIZE(action_columns), 1, &dev, &r))
		return r;
	if ((r = open_disk(dev, !o.dry_run, &d)) != 0)
		goto out;
	if ((r = parse_numbers(dev, poptGetArgs(pc) + 1, d, &numbers, &n)) != 0)
		goto out;
	r = integrity_part_plan_delete(d, numbers, n, &plan, &e);
	if ((r = plan_made(r, dev, &e)) == 0)
		r = plan_finish(plan, d, dev, &delete_output);
out:
	free(numbers);
	integrity_part_plan_free(plan);
	integrity_part_disk_free(d);
	poptFreeContext(pc);
	return r;
}

/* ------------------------------------------------------------------ sync */

static int part_sync(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "dry-run", '\0', POPT_ARG_NONE, &o.dry_run, 0, "show the actions, change nothing", NULL },
		{ "force", '\0', POPT_ARG_NONE, &o.force, 0,
		  "sync even though the table did not read cleanly", NULL },
		{ "bytes", 'b', POPT_ARG_NONE, &o.bytes, 0, "print SIZE in bytes", NULL },
		{ "help", 'h', POPT_ARG_NONE, &o.help, 0, "show this help and the columns", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	struct integrity_part_disk *d = NULL;
	struct integrity_part_plan *plan = NULL;
	struct integrity_part_error e;
	poptContext pc;
	const char *dev;
	int r;

	if (!subcommand_start(&pc, "integrityctl part sync", argc, argv, table, "DEVICE [--dry-run] [--force]",
			      action_columns, ARRAY_SIZE(action_columns), 0, &dev, &r))
		return r;
	if ((r = open_disk(dev, !o.dry_run, &d)) != 0)
		goto out;
	r = integrity_part_plan_sync(d, &plan, &e);
	if ((r = plan_made(r, dev, &e)) != 0)
		goto out;
	size_t n = integrity_part_plan_count(plan), skipped = 0;
	for (size_t i = 0; i < n; i++)
		skipped += integrity_part_plan_action(plan, i)->op == INTEGRITY_PART_OP_SKIP;
	if (!n && !gopt.json) {
		if (!gopt.quiet)
			printf("%s: the kernel's partitions match the table\n", dev);
		r = EXIT_CLEAN;
		goto out;
	}
	if (o.dry_run) {
		print_plan(plan, d, action_columns, ARRAY_SIZE(action_columns), false, "actions");
		r = EXIT_CLEAN;
		goto out;
	}
	r = apply(plan, d, dev, action_columns, ARRAY_SIZE(action_columns), "actions");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_part_action *a = integrity_part_plan_action(plan, i);
		if (a->op == INTEGRITY_PART_OP_SKIP)
			fail(EXIT_FAIL, dev, 0, "partition %u: left as the kernel has it: %s", a->partno,
			     a->why ? a->why : "");
	}
	if (skipped)
		r = EXIT_FAIL;
out:
	integrity_part_plan_free(plan);
	integrity_part_disk_free(d);
	poptFreeContext(pc);
	return r;
}

static void part_usage(FILE *out)
{
	fputs("Usage: integrityctl part list DEVICE\n"
	      "       integrityctl part create DEVICE (--count N --size S [--type T] [--name-prefix P]\n"
	      "                                       | --script FILE) [--label gpt|dos] [--dry-run] [--yes]\n"
	      "       integrityctl part delete DEVICE N[-M]... [--dry-run] [--yes]\n"
	      "       integrityctl part sync DEVICE [--dry-run] [--force]\n\n"
	      "Many partitions per disk (up to the kernel's 255), each registered with the kernel\n"
	      "on its own (BLKPG), never by a re-read: this works while other partitions of the\n"
	      "disk are in use, and their numbers do not change.  DEVICE is a whole disk or an\n"
	      "image file (the table only).\n\n"
	      "Run 'integrityctl part SUBCOMMAND --help' for the options and columns.\n", out);
}

int cmd_part(int argc, const char **argv)
{
	if (argc < 2) {
		fail(EXIT_USAGE, NULL, 0, "no subcommand given (list, create, delete or sync)");
		fputs("Try 'integrityctl part --help'.\n", stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		part_usage(stdout);
		return EXIT_CLEAN;
	}
	if (strcmp(argv[1], "list") == 0)
		return part_list(argc - 1, argv + 1);
	if (strcmp(argv[1], "create") == 0)
		return part_create(argc - 1, argv + 1);
	if (strcmp(argv[1], "delete") == 0)
		return part_delete(argc - 1, argv + 1);
	if (strcmp(argv[1], "sync") == 0)
		return part_sync(argc - 1, argv + 1);
	return fail(EXIT_USAGE, NULL, 0, "unknown subcommand '%s' (list, create, delete or sync)",
		    argv[1]);
}
