/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl format DEVICE --pi-type N: turn protection on or off, or change
 * its type.  Shows the plan, asks, formats, and checks what the device and the
 * kernel say afterwards. */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "columns.h"

static struct {
	char *pi_type;
	char *guard;
	char *block_size;
	char *position;
	int dry_run;
	int yes;
} o;

static const char usage_line[] =
	"DEVICE --pi-type 0|1|2|3 [--guard crc16|crc32c|crc64] [--block-size 512|4096] "
	"[--pi-position first|last] [--dry-run] [--yes]";

/* The row printed afterwards: the columns of `status` that a format changes. */
enum { COL_NAME, COL_MAJMIN, COL_SIZE, COL_PROFILE, COL_INTERVAL, COL_TAGSIZE, COL_PI_TYPE };

static const struct column_def columns[] = {
	[COL_NAME] = { "NAME", 0.15, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING, "kernel device name" },
	[COL_MAJMIN] = { "MAJ:MIN", 7, 0, SCOLS_JSON_STRING, "major:minor device number" },
	[COL_SIZE] = { "SIZE", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "size (bytes in JSON)" },
	[COL_PROFILE] = { "PROFILE", 0.1, 0, SCOLS_JSON_STRING, "the kernel's integrity profile, or none" },
	[COL_INTERVAL] = { "INTERVAL", 4, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "protection interval in bytes" },
	[COL_TAGSIZE] = { "TAGSIZE", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			  "bytes of protection information per interval" },
	[COL_PI_TYPE] = { "PI-TYPE", 1, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			  "protection type the device is formatted with (0 none, 1-3)" },
};

static const size_t default_columns[] = {
	COL_NAME, COL_MAJMIN, COL_SIZE, COL_PROFILE, COL_INTERVAL, COL_TAGSIZE, COL_PI_TYPE,
};

/* ------------------------------------------------------------------ options */

static int parse_request(struct integrity_format_request *req)
{
	static const char *const pi_types[] = { "0", "1", "2", "3", NULL };
	static const char *const guards[] = { "crc16", "crc32c", "crc64", NULL };
	static const enum integrity_guard guard_values[] = {
		INTEGRITY_GUARD_CRC16, INTEGRITY_GUARD_CRC32C, INTEGRITY_GUARD_CRC64,
	};
	static const char *const positions[] = { "first", "last", NULL };
	uint64_t v;
	int i;

	memset(req, 0, sizeof(*req));
	if (!o.pi_type)
		return fail(EXIT_USAGE, NULL, 0, "--pi-type is required (0 turns protection off)");
	if ((i = option_choice("--pi-type", o.pi_type, pi_types)) < 0)
		return EXIT_USAGE;
	req->pi_type = (unsigned)i;
	if (o.guard) {
		if ((i = option_choice("--guard", o.guard, guards)) < 0)
			return EXIT_USAGE;
		req->guard = guard_values[i];
	}
	if (o.block_size) {
		/* 0 is the library's "the current size": not a size to ask for. */
		if (parse_size(o.block_size, &v) < 0 || !v || v > UINT32_MAX)
			return bad_option("--block-size", o.block_size,
					  "a block size in bytes, a power of two from 512 (512, 4096 or 4K)");
		req->block_size = (uint32_t)v;
	}
	if (o.position) {
		if ((i = option_choice("--pi-position", o.position, positions)) < 0)
			return EXIT_USAGE;
		req->pi_position = i == 0 ? INTEGRITY_FORMAT_PI_FIRST : INTEGRITY_FORMAT_PI_LAST;
	}
	return 0;
}

/* ------------------------------------------------------------------ the plan */

static const char *hex_bytes(const uint8_t *p, size_t n, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off + 4 <= len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%02x", i ? " " : "", p[i]);
	return buf;
}

static const char *position_name(const struct integrity_format_layout *l)
{
	if (!l->pi_type)
		return NULL;
	return l->pi_position == INTEGRITY_PI_FIRST ? "first" : "last";
}

static void json_layout(struct json *j, const char *key, const struct integrity_format_layout *l, bool nvme)
{
	json_object_begin(j, key);
	json_u64(j, "block-size", l->block_size);
	if (l->blocks)
		json_u64(j, "blocks", l->blocks);
	else
		json_string(j, "blocks", NULL);
	json_u64(j, "pi-type", l->pi_type);
	json_string(j, "guard", l->pi_type ? integrity_guard_name(l->guard) : NULL);
	json_u64(j, "metadata-size", l->metadata_size);
	json_string(j, "pi-position", nvme ? position_name(l) : NULL);
	json_u64(j, "interval", l->pi_interval);
	if (nvme)
		json_u64(j, "lba-format", (uint64_t)l->lba_format);
	json_string(j, "profile", l->profile);
	json_u64(j, "kernel-interval", l->kernel_interval);
	json_object_end(j);
}

/* Partitions of the disk, space-separated, into buf. */
static const char *partition_names(struct integrity_context *ctx, const struct integrity_device *dev,
				   char *buf, size_t len)
{
	struct integrity_device **all;
	size_t n, off = 0;

	buf[0] = '\0';
	if (integrity_device_list(ctx, &all, &n) < 0)
		return buf;
	for (size_t i = 0; i < n; i++) {
		if (!integrity_device_partno(all[i]) ||
		    strcmp(integrity_device_disk_name(all[i]), integrity_device_name(dev)) != 0)
			continue;
		int w = snprintf(buf + off, len - off, "%s%s", off ? " " : "", integrity_device_name(all[i]));
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
	integrity_device_list_free(all, n);
	return buf;
}

static void json_plan(struct json *j, const struct integrity_format_plan *plan,
		      const struct integrity_device *dev, const char *parts)
{
	const struct integrity_format_scsi_cmds *sc = integrity_format_plan_scsi(plan);
	const struct integrity_format_nvme_cmd *nc = integrity_format_plan_nvme(plan);
	char devt[24], hex[64];

	snprintf(devt, sizeof(devt), "%u:%u", integrity_device_major(dev), integrity_device_minor(dev));
	json_string(j, "device", integrity_device_name(dev));
	json_string(j, "maj:min", devt);
	json_string(j, "transport", integrity_format_plan_transport(plan));
	json_u64(j, "size", integrity_device_size(dev));
	json_string(j, "stable", integrity_device_stable_name(dev));
	json_array_begin(j, "partitions");
	char copy[1024];
	snprintf(copy, sizeof(copy), "%s", parts);
	for (char *save = NULL, *p = strtok_r(copy, " ", &save); p; p = strtok_r(NULL, " ", &save))
		json_string(j, NULL, p);
	json_array_end(j);
	json_layout(j, "current", integrity_format_plan_current(plan), nc != NULL);
	json_layout(j, "new", integrity_format_plan_target(plan), nc != NULL);
	if (sc) {
		json_object_begin(j, "format-unit");
		json_u64(j, "fmtpinfo", sc->fmtpinfo);
		json_u64(j, "pfu", sc->pfu);
		json_u64(j, "p-i-exponent", sc->p_i_exponent);
		json_bool(j, "longlist", sc->longlist);
		json_bool(j, "fmtdata", sc->fmtdata);
		json_bool(j, "cmplst", sc->cmplst);
		json_bool(j, "immed", sc->immed);
		json_string(j, "cdb", hex_bytes(sc->cdb, sizeof(sc->cdb), hex, sizeof(hex)));
		json_string(j, "parameter-list", hex_bytes(sc->param, sc->param_len, hex, sizeof(hex)));
		if (sc->mode_select) {
			json_object_begin(j, "mode-select");
			json_string(j, "cdb", hex_bytes(sc->mode_cdb, sizeof(sc->mode_cdb), hex, sizeof(hex)));
			json_string(j, "parameter-list",
				    hex_bytes(sc->mode_param, sc->mode_param_len, hex, sizeof(hex)));
			json_object_end(j);
		} else {
			json_string(j, "mode-select", NULL);
		}
		json_object_end(j);
	}
	if (nc) {
		json_object_begin(j, "format-nvm");
		json_u64(j, "nsid", nc->nsid);
		json_u64(j, "lbaf", nc->lbaf);
		json_u64(j, "mset", nc->mset);
		json_u64(j, "pi", nc->pi);
		json_u64(j, "pil", nc->pil);
		json_u64(j, "ses", nc->ses);
		json_hex(j, "cdw10", nc->cdw10);
		json_object_end(j);
	}
	json_array_begin(j, "notes");
	for (size_t i = 0; integrity_format_plan_note(plan, i); i++)
		json_string(j, NULL, integrity_format_plan_note(plan, i));
	json_array_end(j);
}

static void row(const char *label, const char *cur, const char *new)
{
	printf("  %-14s %-20s %s\n", label, cur ? cur : "-", new ? new : "-");
}

static void row_u(const char *label, uint64_t cur, bool cur_known, uint64_t new, bool new_known)
{
	char a[32], b[32];

	snprintf(a, sizeof(a), "%" PRIu64, cur);
	snprintf(b, sizeof(b), "%" PRIu64, new);
	row(label, cur_known ? a : NULL, new_known ? b : NULL);
}

static void print_plan(const struct integrity_format_plan *plan, const struct integrity_device *dev,
		       const char *parts)
{
	const struct integrity_format_layout *c = integrity_format_plan_current(plan);
	const struct integrity_format_layout *t = integrity_format_plan_target(plan);
	const struct integrity_format_scsi_cmds *sc = integrity_format_plan_scsi(plan);
	const struct integrity_format_nvme_cmd *nc = integrity_format_plan_nvme(plan);
	const char *stable = integrity_device_stable_name(dev);
	char size[32], hex[64], hex2[64], a[32], b[32];

	printf("format %s: every block on it will be erased\n", integrity_device_name(dev));
	printf("  %-14s %s (%u:%u), %s, %s%s%s\n", "device", integrity_device_name(dev),
	       integrity_device_major(dev), integrity_device_minor(dev), integrity_format_plan_transport(plan),
	       format_size(integrity_device_size(dev), size, sizeof(size)), stable ? ", " : "",
	       stable ? stable : "");
	printf("  %-14s all %" PRIu64 " bytes%s%s\n", "data lost", integrity_device_size(dev),
	       parts[0] ? ", and the partitions " : "", parts);
	row("", "current", "new");
	row_u("block size", c->block_size, true, t->block_size, true);
	row_u("blocks", c->blocks, c->blocks != 0, t->blocks, t->blocks != 0);
	snprintf(a, sizeof(a), "%u%s", c->pi_type, c->pi_type ? "" : " (none)");
	snprintf(b, sizeof(b), "%u%s", t->pi_type, t->pi_type ? "" : " (none)");
	row("PI type", a, b);
	row("guard", c->pi_type ? integrity_guard_name(c->guard) : NULL,
	    t->pi_type ? integrity_guard_name(t->guard) : NULL);
	row_u("metadata", c->metadata_size, true, t->metadata_size, true);
	if (nc)
		row("PI position", position_name(c), position_name(t));
	row_u("interval", c->pi_interval, c->pi_type != 0, t->pi_interval, t->pi_type != 0);
	row("profile", c->profile, t->profile);
	if (nc) {
		row_u("LBA format", (uint64_t)c->lba_format, true, (uint64_t)t->lba_format, true);
		printf("  %-14s nsid %u, LBAF %u, MSET %u, PI %u, PIL %u, SES %u (CDW10 0x%08x)\n", "Format NVM",
		       nc->nsid, nc->lbaf, nc->mset, nc->pi, nc->pil, nc->ses, nc->cdw10);
	}
	if (sc) {
		if (sc->mode_select)
			printf("  %-14s CDB %s, parameter list %s (0 blocks of %u bytes)\n", "MODE SELECT",
			       hex_bytes(sc->mode_cdb, sizeof(sc->mode_cdb), hex, sizeof(hex)),
			       hex_bytes(sc->mode_param, sc->mode_param_len, hex2, sizeof(hex2)), t->block_size);
		printf("  %-14s FMTPINFO %u, PFU %u, LONGLIST %d, P_I_EXPONENT %u, FMTDATA %d, CMPLST %d, "
		       "IMMED %d\n", "FORMAT UNIT", sc->fmtpinfo, sc->pfu, sc->longlist, sc->p_i_exponent,
		       sc->fmtdata, sc->cmplst, sc->immed);
		printf("  %-14s CDB %s, parameter list %s\n", "",
		       hex_bytes(sc->cdb, sizeof(sc->cdb), hex, sizeof(hex)),
		       hex_bytes(sc->param, sc->param_len, hex2, sizeof(hex2)));
	}
	for (size_t i = 0; integrity_format_plan_note(plan, i); i++)
		printf("  %-14s %s\n", "note", integrity_format_plan_note(plan, i));
}

/* ------------------------------------------------------------------ doing it */

/* Ask on a terminal; refuse without one unless --yes. */
static int confirm(const char *name)
{
	char answer[256];

	if (o.yes)
		return 0;
	if (!isatty(STDIN_FILENO))
		return fail(EXIT_USAGE, name, 0, "not on a terminal: refusing to format without --yes");
	fprintf(stderr, "This erases everything on %s. Type the device name (%s) to go on: ", name, name);
	fflush(stderr);
	if (!fgets(answer, sizeof(answer), stdin))
		answer[0] = '\0';
	answer[strcspn(answer, "\r\n")] = '\0';
	const char *given = strncmp(answer, "/dev/", 5) == 0 ? answer + 5 : answer;
	if (strcmp(given, name) != 0)
		return fail(EXIT_FAIL, name, 0, "not confirmed: nothing written");
	return 0;
}

struct progress_state {
	const char *name;
	bool tty;
	bool shown;
	double last_line;
};

static void on_progress(void *data, const struct integrity_format_progress *p)
{
	struct progress_state *s = data;
	char pct[16] = "";

	if (p->fraction >= 0)
		snprintf(pct, sizeof(pct), " %5.1f%%", p->fraction * 100);
	if (s->tty) {
		fprintf(stderr, "\r%s: %s%s, %.0f s   ", s->name, p->phase, pct, p->elapsed);
		s->shown = true;
	} else if (gopt.verbose && p->elapsed - s->last_line >= 10) {
		fprintf(stderr, "%s: %s%s, %.0f s\n", s->name, p->phase, pct, p->elapsed);
		s->last_line = p->elapsed;
	}
}

/* The device as `status` shows it now. */
static void status_row(struct integrity_context *ctx, const char *name, const struct column_set *set,
		       struct json *j)
{
	_cleanup_(integrity_device_freep) struct integrity_device *dev = NULL;
	struct integrity_kernel_state st;
	char size[32];

	if (integrity_device_new(ctx, name, &dev) < 0)
		return;
	/* A state that cannot be read leaves the kernel's fields empty. */
	int r = integrity_device_kernel_state(dev, &st);
	const char *format = r == 0 ? st.format : NULL;
	bool profile = format && strcmp(format, "none") != 0;
	int type = integrity_device_pi_type(dev);
	if (j) {
		char devt[24];
		snprintf(devt, sizeof(devt), "%u:%u", integrity_device_major(dev), integrity_device_minor(dev));
		json_object_begin(j, "blockdevice");
		json_string(j, "name", integrity_device_name(dev));
		json_string(j, "maj:min", devt);
		json_u64(j, "size", integrity_device_size(dev));
		json_string(j, "profile", format);
		if (profile) {
			json_u64(j, "interval", st.interval);
			json_u64(j, "tagsize", st.tag_size);
		} else {
			json_string(j, "interval", NULL);
			json_string(j, "tagsize", NULL);
		}
		if (type >= 0)
			json_u64(j, "pi-type", (uint64_t)type);
		else
			json_string(j, "pi-type", NULL);
		json_object_end(j);
		return;
	}
	struct libscols_table *tb = columns_new_table(set, "blockdevices");
	struct libscols_line *ln = tb ? scols_table_new_line(tb, NULL) : NULL;
	if (ln) {
		columns_set(set, ln, COL_NAME, "%s", integrity_device_name(dev));
		columns_set(set, ln, COL_MAJMIN, "%u:%u", integrity_device_major(dev), integrity_device_minor(dev));
		columns_set(set, ln, COL_SIZE, "%s", format_size(integrity_device_size(dev), size, sizeof(size)));
		if (format)
			columns_set(set, ln, COL_PROFILE, "%s", format);
		if (profile) {
			columns_set(set, ln, COL_INTERVAL, "%u", st.interval);
			columns_set(set, ln, COL_TAGSIZE, "%u", st.tag_size);
		}
		if (type >= 0)
			columns_set(set, ln, COL_PI_TYPE, "%d", type);
		scols_print_table(tb);
	}
	scols_unref_table(tb);
}

int cmd_format(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "pi-type", 't', POPT_ARG_STRING, &o.pi_type, 0,
		  "protection type: 0 (none), 1, 2 or 3", "N" },
		{ "guard", 'g', POPT_ARG_STRING, &o.guard, 0,
		  "guard: crc16, crc32c or crc64 (NVMe); default: the smallest the device offers", "GUARD" },
		{ "block-size", 'b', POPT_ARG_STRING, &o.block_size, 0,
		  "logical block size in bytes; default: the current", "BYTES" },
		{ "pi-position", '\0', POPT_ARG_STRING, &o.position, 0,
		  "NVMe: tuple first or last in the metadata; default: first where offered", "first|last" },
		{ "dry-run", '\0', POPT_ARG_NONE, &o.dry_run, 0, "show the plan, change nothing", NULL },
		{ "yes", 'y', POPT_ARG_NONE, &o.yes, 0, "do not ask for confirmation", NULL },
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(integrity_device_freep) struct integrity_device *dev = NULL;
	_cleanup_(integrity_format_plan_freep) struct integrity_format_plan *plan = NULL;
	struct integrity_format_request req;
	char why[512], parts[1024];
	struct json j;
	int r, ret = EXIT_CLEAN;

	r = parse_options(&pc, "integrityctl format", argc, argv, table, usage_line);
	if (r)
		return r;
	const char **args = poptGetArgs(pc);
	if (!args || !args[0] || args[1]) {
		return usage_error(usage_line);
	}
	const char *name = args[0];
	if ((r = parse_request(&req)) != 0)
		return r;
	/* The columns of the row printed afterwards: a bad -o is refused
	 * before anything is written, never after the format. */
	struct column_set set;
	if ((r = columns_select(&set, columns, ARRAY_SIZE(columns), default_columns, ARRAY_SIZE(default_columns),
				gopt.output)) != 0)
		return r;

	if ((r = open_device(name, &ctx, &dev)) != 0)
		return r;
	name = integrity_device_name(dev);
	if (integrity_device_partno(dev))
		return fail(EXIT_USAGE, name, 0, "is a partition: a format applies to the whole disk (%s) and erases "
			    "all of its partitions", integrity_device_disk_name(dev));
	/* First: a device in use is refused whatever else is wrong with the request. */
	r = integrity_device_in_use(dev, why, sizeof(why));
	if (r != 0)
		return r > 0 ? fail(EXIT_FAIL, name, 0, "in use: %s; nothing written", why) :
			       fail(EXIT_FAIL, name, r, "cannot tell whether it is in use");
	r = integrity_format_plan_new(dev, &req, &plan, why, sizeof(why));
	if (r < 0)
		return fail(r == -EINVAL ? EXIT_USAGE : EXIT_FAIL, name, 0, "cannot format: %s",
			    why[0] ? why : strerror(-r));

	partition_names(ctx, dev, parts, sizeof(parts));
	if (gopt.json) {
		json_open(&j, stdout);
		json_plan(&j, plan, dev, parts);
		json_bool(&j, "dry-run", o.dry_run);
	} else if (!gopt.quiet) {
		print_plan(plan, dev, parts);
	}
	if (o.dry_run) {
		if (gopt.json)
			json_close(&j);
		else if (!gopt.quiet)
			printf("dry run: nothing written\n");
		return EXIT_CLEAN;
	}
	fflush(stdout);
	if ((ret = confirm(name)) != 0) {
		if (gopt.json) {
			json_string(&j, "error", "not confirmed");
			json_close(&j);
		}
		return ret;
	}

	struct progress_state ps = { .name = name, .tty = isatty(STDERR_FILENO) && !gopt.quiet };
	struct integrity_format_callbacks cb = { .progress = on_progress, .data = &ps };
	r = integrity_format_apply(plan, &cb, why, sizeof(why));
	if (ps.shown)
		fputc('\n', stderr);
	const struct integrity_format_layout *res = integrity_format_plan_result(plan);
	if (r < 0) {
		bool written = integrity_format_plan_written(plan);
		if (res)
			ret = fail(EXIT_FAIL, name, 0, "formatted, but not as asked: %s", why);
		else
			ret = fail(EXIT_FAIL, name, 0, "format failed: %s; %s", why[0] ? why : strerror(-r),
				   written ? "the device may be partly formatted" : "nothing written");
	}
	if (gopt.json) {
		if (res)
			json_layout(&j, "result", res, integrity_format_plan_nvme(plan) != NULL);
		json_string(&j, "error", r < 0 ? why : NULL);
		if (res)
			status_row(ctx, name, &set, &j);
		json_close(&j);
	} else if (res && !gopt.quiet) {
		status_row(ctx, name, &set, NULL);
	}
	return ret;
}
