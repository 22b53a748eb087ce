/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl resolve: MAJ:MIN, names and stable names, now or in the past. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "columns.h"

enum {
	COL_KEY, COL_NAME, COL_MAJMIN, COL_EXT, COL_DISK, COL_PARTN, COL_DISKSEQ, COL_BY_ID,
	COL_BY_WWN, COL_BY_PATH, COL_BY_PARTUUID, COL_BY_PARTLABEL, COL_BY_UUID, COL_BY_LABEL,
	COL_BY_DISKSEQ, COL_LINKS, COL_SOURCE, COL_TIME, COL_BOOT, COL_ACTION, COL_KNAME,
};

static const struct column_def columns[] = {
	[COL_KEY] = { "KEY", 0.1, 0, SCOLS_JSON_STRING, "the key as given" },
	[COL_NAME] = { "NAME", 0.1, 0, SCOLS_JSON_STRING, "device name (device-mapper: the name in /dev/mapper)" },
	[COL_KNAME] = { "KNAME", 0.1, 0, SCOLS_JSON_STRING, "internal kernel device name" },
	[COL_MAJMIN] = { "MAJ:MIN", 7, 0, SCOLS_JSON_STRING, "major:minor device number" },
	[COL_EXT] = { "EXT", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN,
		      "number in the extended (dynamic) range, major 259" },
	[COL_DISK] = { "DISK", 0.1, 0, SCOLS_JSON_STRING, "the whole disk's kernel name" },
	[COL_PARTN] = { "PARTN", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "partition number (0: whole disk)" },
	[COL_DISKSEQ] = { "DISKSEQ", 4, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "the disk's sequence number" },
	[COL_BY_ID] = { "BY-ID", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			"/dev/disk/by-id names, serial forms (space-separated)" },
	[COL_BY_WWN] = { "BY-WWN", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			 "/dev/disk/by-id/wwn-* names" },
	[COL_BY_PATH] = { "BY-PATH", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING, "/dev/disk/by-path names" },
	[COL_BY_PARTUUID] = { "BY-PARTUUID", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			      "/dev/disk/by-partuuid name" },
	[COL_BY_PARTLABEL] = { "BY-PARTLABEL", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			       "/dev/disk/by-partlabel name" },
	[COL_BY_UUID] = { "BY-UUID", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			  "/dev/disk/by-uuid name (file system)" },
	[COL_BY_LABEL] = { "BY-LABEL", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			   "/dev/disk/by-label name (file system)" },
	[COL_BY_DISKSEQ] = { "BY-DISKSEQ", 0.2, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			     "/dev/disk/by-diskseq name (disks)" },
	[COL_LINKS] = { "LINKS", 0.4, SCOLS_FL_NOEXTREMES, SCOLS_JSON_ARRAY_STRING,
			"every /dev/disk/by-* name (an array in JSON)" },
	[COL_SOURCE] = { "SOURCE", 7, 0, SCOLS_JSON_STRING,
			 "where the names come from: udev, probe (sysfs and libblkid), history" },
	[COL_TIME] = { "TIME", 27, 0, SCOLS_JSON_NUMBER,
		       "history: when the event was recorded (UTC; JSON: seconds since the epoch)" },
	[COL_BOOT] = { "BOOT", 36, 0, SCOLS_JSON_STRING, "history: the boot id" },
	[COL_ACTION] = { "ACTION", 6, 0, SCOLS_JSON_STRING, "history: add or change" },
};

/* Which column shows each kind of /dev/disk/by-* name. */
static const size_t kind_columns[] = {
	[INTEGRITY_LINK_ID] = COL_BY_ID,
	[INTEGRITY_LINK_WWN] = COL_BY_WWN,
	[INTEGRITY_LINK_PATH] = COL_BY_PATH,
	[INTEGRITY_LINK_PARTUUID] = COL_BY_PARTUUID,
	[INTEGRITY_LINK_PARTLABEL] = COL_BY_PARTLABEL,
	[INTEGRITY_LINK_UUID] = COL_BY_UUID,
	[INTEGRITY_LINK_LABEL] = COL_BY_LABEL,
	[INTEGRITY_LINK_DISKSEQ] = COL_BY_DISKSEQ,
	[INTEGRITY_LINK_OTHER] = COL_LINKS,
};

static const size_t default_columns[] = {
	COL_KEY, COL_NAME, COL_MAJMIN, COL_EXT, COL_DISK, COL_PARTN, COL_DISKSEQ, COL_LINKS,
};
static const size_t default_json_columns[] = {
	COL_KEY, COL_NAME, COL_MAJMIN, COL_EXT, COL_DISK, COL_PARTN, COL_DISKSEQ, COL_BY_ID,
	COL_BY_WWN, COL_BY_PATH, COL_BY_PARTUUID, COL_BY_PARTLABEL, COL_BY_UUID, COL_BY_LABEL,
	COL_BY_DISKSEQ, COL_LINKS, COL_SOURCE,
};

static struct {
	char *at;
	char *boot;
	char *history;
	int lba;
	char *block_size;
	int no_udev;
	int help;
} o;

static char *printable(const char *s, bool terminal)
{
	return printable_name(s, terminal, false);
}

/* Set a cell of any length (columns_set() formats into a small buffer).
 * The table does no encoding of its own (it would turn the '\' of udev's
 * \xHH into \x5c): terminal output is made printable here. */
static void set_cell(const struct column_set *set, struct libscols_line *ln, size_t id, const char *s)
{
	int pos = columns_position(set, id);

	if (pos < 0 || !s || !*s)
		return;
	/* JSON: still valid UTF-8 whatever a history file holds.  Newlines
	 * separate the items of a list: JSON arrays, spaces on a terminal. */
	char *p = malloc(strlen(s) * 4 + 1), *o2 = p;
	if (!p)
		return;
	*p = '\0';
	for (const char *item = s; item;) {
		const char *nl = strchr(item, '\n');
		_cleanup_free_ char *one = strndup(item, nl ? (size_t)(nl - item) : strlen(item));
		_cleanup_free_ char *shown = one ? printable(one, !gopt.json) : NULL;
		if (shown) {
			if (o2 != p)
				*o2++ = gopt.json ? '\n' : ' ';
			o2 = stpcpy(o2, shown);
		}
		item = nl ? nl + 1 : NULL;
	}
	scols_line_refer_data(ln, (size_t)pos, p);
}

static int add_row(struct integrity_context *ctx, const struct column_set *set, struct libscols_table *tb,
		   const char *key, const struct integrity_resolve *res)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	size_t n = integrity_resolve_link_count(res), total = 1;
	char name[NAME_MAX + 1];

	if (!ln)
		return -ENOMEM;
	set_cell(set, ln, COL_KEY, key);
	/* A device the history knows but that is gone: its kernel name may be
	 * another device's now. */
	if (integrity_resolve_source(res) == INTEGRITY_SOURCE_HISTORY ||
	    integrity_kname_to_name(ctx, integrity_resolve_name(res), name, sizeof(name)) < 0)
		snprintf(name, sizeof(name), "%s", integrity_resolve_name(res));
	set_cell(set, ln, COL_NAME, name);
	set_cell(set, ln, COL_KNAME, integrity_resolve_name(res));
	columns_set(set, ln, COL_MAJMIN, "%u:%u", integrity_resolve_major(res), integrity_resolve_minor(res));
	columns_set(set, ln, COL_EXT, "%d", integrity_resolve_is_extended(res));
	set_cell(set, ln, COL_DISK, integrity_resolve_disk(res));
	columns_set(set, ln, COL_PARTN, "%u", integrity_resolve_partno(res));
	if (integrity_resolve_diskseq(res))
		columns_set(set, ln, COL_DISKSEQ, "%" PRIu64, integrity_resolve_diskseq(res));
	set_cell(set, ln, COL_SOURCE, integrity_resolve_source_name(integrity_resolve_source(res)));
	if (integrity_resolve_source(res) == INTEGRITY_SOURCE_HISTORY) {
		char t[48];
		int64_t usec = integrity_resolve_time(res);
		if (gopt.json)
			snprintf(t, sizeof(t), "%" PRId64 ".%06" PRId64, usec / 1000000, usec % 1000000);
		else if (!format_time(usec, true, t, sizeof(t)))
			t[0] = '\0';
		set_cell(set, ln, COL_TIME, t);
		set_cell(set, ln, COL_BOOT, integrity_resolve_boot_id(res));
		set_cell(set, ln, COL_ACTION, integrity_resolve_action(res));
	}

	/* Links never contain spaces (udev encodes them): a space joins
	 * several; JSON arrays are newline-separated cells. */
	for (size_t i = 0; i < n; i++)
		total += strlen(integrity_resolve_link(res, i)) + 1;
	_cleanup_free_ char *all = calloc(1, total), *kind = calloc(1, total);
	if (!all || !kind)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(all, "\n");
		strcat(all, integrity_resolve_link(res, i));
	}
	set_cell(set, ln, COL_LINKS, all);
	for (int k = INTEGRITY_LINK_ID; k < INTEGRITY_LINK_OTHER; k++) {
		kind[0] = '\0';
		for (size_t i = 0; i < n; i++) {
			const char *link = integrity_resolve_link(res, i);
			if ((int)integrity_link_kind_of(link) != k)
				continue;
			if (kind[0])
				strcat(kind, " ");
			strcat(kind, link);
		}
		set_cell(set, ln, kind_columns[k], kind);
	}
	return 0;
}

/* "N" or "FIRST-LAST": the first and the last LBA (a count could wrap). */
static int parse_lba(const char *s, uint64_t *first, uint64_t *last)
{
	char a[32];
	const char *dash = strchr(s, '-');

	if (!dash)
		return parse_u64(s, first) < 0 ? -EINVAL : (*last = *first, 0);
	if ((size_t)(dash - s) >= sizeof(a))
		return -EINVAL;
	memcpy(a, s, (size_t)(dash - s));
	a[dash - s] = '\0';
	if (parse_u64(a, first) < 0 || parse_u64(dash + 1, last) < 0 || *last < *first)
		return -EINVAL;
	return 0;
}

static void lbas_json(const char *device, uint32_t bs, const char *const *lbas,
		      const struct integrity_byte_range *ranges, size_t n, const struct integrity_owners *ow)
{
	struct json j;

	json_open(&j, stdout);
	json_string(&j, "device", device);
	json_u64(&j, "block-size", bs);
	json_array_begin(&j, "lbas");
	for (size_t i = 0; i < n; i++) {
		json_object_begin(&j, NULL);
		json_string(&j, "key", lbas[i]);
		json_u64(&j, "lba", ranges[i].offset / bs);
		json_u64(&j, "count", ranges[i].length / bs);
		owners_json(&j, ow, i);
		json_object_end(&j);
	}
	json_array_end(&j);
	damaged_files_json(&j, ow);
	json_close(&j);
}

static void lbas_text(const char *device, uint32_t bs, const struct integrity_byte_range *ranges, size_t n,
		      const struct integrity_owners *ow)
{
	_cleanup_free_ char *dev = printable_name(device, true, true);

	for (size_t i = 0; i < n; i++) {
		uint64_t lba = ranges[i].offset / bs, count = ranges[i].length / bs;
		if (count > 1)
			printf("%s LBA %" PRIu64 "-%" PRIu64 ":\n", dev ? dev : "", lba, lba + count - 1);
		else
			printf("%s LBA %" PRIu64 ":\n", dev ? dev : "", lba);
		owners_text(stdout, ow, i, "  ");
	}
	damaged_files_text(stdout, ow, "");
}

/* resolve --lba DEVICE LBA...: what the blocks belong to. */
/* A key that names no device now: a path that is not there (the file
 * system's own words), not a block device, or a name of none. */
static int no_device(const char *key, const char *obj, int r)
{
	if (r == -ENOENT && key[0] == '/')
		return fail_fix(EXIT_FAIL, obj, r, "check the path", "cannot find the device");
	if (r == -ENOTBLK)
		return fail_fix(EXIT_USAGE, obj, 0, "give a block device, its MAJ:MIN or a stable name",
				"not a block device");
	return fail_fix(EXIT_FAIL, obj, 0, FIX_DEVICE_NAME, "no such device");
}

static int resolve_lbas(const char **args)
{
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(integrity_resolve_freep) struct integrity_resolve *res = NULL;
	_cleanup_(integrity_device_freep) struct integrity_device *dev = NULL;
	_cleanup_(integrity_owners_freep) struct integrity_owners *ow = NULL;
	_cleanup_free_ struct integrity_byte_range *ranges = NULL;
	_cleanup_free_ char *shown = NULL;
	size_t n = 0;
	uint64_t v;
	int r;

	while (args[n + 1])
		n++;
	if (!n)
		return usage_error("--lba DEVICE LBA...");
	if (o.block_size && (parse_size(o.block_size, &v) < 0 || v < 512 || v > (1u << 20) || (v & (v - 1))))
		return bad_option("--block-size", o.block_size, "a power of two from 512 to 1M");
	r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	shown = printable_name(args[0], true, true);
	const char *obj = shown ? shown : "DEVICE";
	/* Only the device: its names are not shown. */
	r = integrity_resolve_key(ctx, args[0], INTEGRITY_RESOLVE_NAME_ONLY | (o.no_udev ? INTEGRITY_RESOLVE_NO_UDEV : 0),
				  &res);
	if (r == -EINVAL)
		return fail(EXIT_USAGE, obj, 0, "not a device key (see --help)");
	if (r == -ENOENT || r == -ENODEV || r == -ENOTBLK)
		return no_device(args[0], obj, r);
	if (r < 0)
		return fail(EXIT_FAIL, obj, r, "cannot find the device");
	if ((r = integrity_device_new(ctx, integrity_resolve_name(res), &dev)) < 0)
		return fail(EXIT_FAIL, obj, r, "cannot open the device");
	uint32_t bs = o.block_size ? (uint32_t)v : integrity_device_logical_block_size(dev);
	if (!bs)
		bs = 512;
	uint64_t size = integrity_device_size(dev);
	ranges = calloc(n, sizeof(*ranges));
	if (!ranges)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "resolve");
	for (size_t i = 0; i < n; i++) {
		uint64_t first, last;
		if (parse_lba(args[i + 1], &first, &last) < 0) {
			_cleanup_free_ char *a = printable_name(args[i + 1], true, true);
			return fail(EXIT_USAGE, a, 0, "not an LBA: N or FIRST-LAST");
		}
		if (last >= size / bs) {
			_cleanup_free_ char *a = printable_name(args[i + 1], true, true);
			return fail(EXIT_USAGE, a, 0, "past the end of %s (%" PRIu64 " blocks of %u bytes)", obj,
				    size / bs, bs);
		}
		ranges[i] = (struct integrity_byte_range){ first * bs, (last - first + 1) * bs };
	}
	char node[4096];
	snprintf(node, sizeof(node), "/dev/%s", integrity_device_name(dev));
	r = integrity_owners_resolve(ctx, integrity_device_name(dev), ranges, n, 0, &ow);
	if (r < 0)
		return fail(EXIT_FAIL, obj, r, "cannot resolve the blocks");
	if (gopt.json)
		lbas_json(node, bs, args + 1, ranges, n, ow);
	else
		lbas_text(node, bs, ranges, n, ow);
	return EXIT_CLEAN;
}

static void usage(poptContext pc)
{
	poptPrintHelp(pc, stdout, 0);
	columns_help(stdout, columns, ARRAY_SIZE(columns));
	printf("\nWith --lba: DEVICE (any KEY) and LBAs (N, or FIRST-LAST) in its logical blocks\n"
	       "(--block-size 512 for a kernel log's sector numbers): what each belongs to, a\n"
	       "file and the offset in it, file-system metadata, or free space.\n");
	printf("\nDefault columns: KEY,NAME,MAJ:MIN,EXT,DISK,PARTN,DISKSEQ,LINKS; with -J also\n"
	       "the BY-* columns and SOURCE; from the history (--at, --boot) also TIME,BOOT,ACTION.\n"
	       "\nKEY: MAJ:MIN, a kernel name or /dev path, a /dev/disk/by-* name, or\n"
	       "PARTUUID=, PARTLABEL=, UUID=, LABEL=, DISKSEQ=, WWN=, SERIAL=.\n"
	       "TIME: ISO 8601 (2025-03-01T12:00:00Z, local time without a zone) or @EPOCH,\n"
	       "from 1970 to 9999.\n"
	       "BOOT: 0 this boot, -1 the one before, ..., or a boot id.\n");
}

/* The history lookup refuses a bad key and a bad --boot alike (-EINVAL): the
 * boot is at fault when the key is taken with this boot instead. */
static bool boot_at_fault(const struct integrity_history *hist, const char *key, int64_t at)
{
	_cleanup_(integrity_resolve_freep) struct integrity_resolve *res = NULL;

	return integrity_history_lookup(hist, key, "0", at, &res) != -EINVAL;
}

int cmd_resolve(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "at", '\0', POPT_ARG_STRING, &o.at, 0, "answer from the history: what the key named then",
		  "TIME" },
		{ "boot", '\0', POPT_ARG_STRING, &o.boot, 0,
		  "answer from the history of a boot (0 this one, -1 the one before, or an id)", "N|ID" },
		{ "history", '\0', POPT_ARG_STRING, &o.history, 0,
		  "the history file (default " INTEGRITY_HISTORY_PATH ")", "FILE" },
		{ "lba", '\0', POPT_ARG_NONE, &o.lba, 0,
		  "DEVICE LBA...: the files (or metadata, free space) that hold these blocks", NULL },
		{ "block-size", '\0', POPT_ARG_STRING, &o.block_size, 0,
		  "--lba: bytes per LBA (default: the device's logical block size)", "N" },
		{ "no-udev", '\0', POPT_ARG_NONE, &o.no_udev, 0,
		  "ignore udev's database: names from sysfs and libblkid", NULL },
		{ "help", 'h', POPT_ARG_NONE, &o.help, 0, "show this help and the columns", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	struct column_set set;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(integrity_history_freep) struct integrity_history *hist = NULL;
	_cleanup_(scols_unref_tablep) struct libscols_table *tb = NULL;
	int64_t at = INTEGRITY_TIME_END;
	_cleanup_popt_ poptContext pc = NULL;
	int r, ret = EXIT_CLEAN;

	r = parse_options(&pc, "integrityctl resolve", argc, argv, table, "KEY... | --lba DEVICE LBA...");
	if (r)
		return r;
	if (o.help) {
		usage(pc);
		return EXIT_CLEAN;
	}
	const char **keys = poptGetArgs(pc);
	if (!keys || !keys[0])
		return usage_error("KEY... | --lba DEVICE LBA...");
	if (o.lba && (o.at || o.boot))
		return conflicting_options("--lba", o.at ? "--at" : "--boot",
					   o.at ? "--lba reads what the device holds now, --at answers from the history"
						: "--lba reads what the device holds now, --boot answers from the history");
	if (o.block_size && !o.lba)
		return fail(EXIT_USAGE, NULL, 0, "--block-size goes with --lba");
	if (o.lba)
		return resolve_lbas(keys);
	bool past = o.at || o.boot;
	if (o.at && time_option("--at", o.at, &at))
		return EXIT_USAGE;

	size_t defaults_n;
	const size_t *defaults;
	size_t with_history[ARRAY_SIZE(default_json_columns) + 3];
	if (gopt.json) {
		defaults = default_json_columns;
		defaults_n = ARRAY_SIZE(default_json_columns);
	} else {
		defaults = default_columns;
		defaults_n = ARRAY_SIZE(default_columns);
	}
	if (past) {
		memcpy(with_history, defaults, defaults_n * sizeof(*defaults));
		with_history[defaults_n++] = COL_TIME;
		with_history[defaults_n++] = COL_BOOT;
		with_history[defaults_n++] = COL_ACTION;
		defaults = with_history;
	}
	r = columns_select(&set, columns, ARRAY_SIZE(columns), defaults, defaults_n, gopt.output);
	if (r)
		return r;

	if (past) {
		const char *path = o.history ? o.history : INTEGRITY_HISTORY_PATH;
		r = integrity_history_open(path, &hist);
		if (r < 0)
			return fail_file(EXIT_FAIL, path, r, "cannot read the device-number history");
		if (integrity_history_bad_lines(hist))
			warnx_obj(path, "%zu lines could not be read and were skipped",
				  integrity_history_bad_lines(hist));
	} else {
		r = integrity_context_new(&ctx, gopt.sysfs_root);
		if (r < 0)
			return fail(EXIT_FAIL, NULL, r, "cannot set up");
	}

	tb = columns_new_table(&set, "devices");
	if (!tb)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "output");
	scols_table_enable_noencoding(tb, 1);
	/* JSON arrays are made of a cell's newline-separated chunks. */
	int links_pos = columns_position(&set, COL_LINKS);
	if (gopt.json && links_pos >= 0) {
		struct libscols_column *cl = scols_table_get_column(tb, (size_t)links_pos);
		scols_column_set_flags(cl, scols_column_get_flags(cl) | SCOLS_FL_WRAP);
		scols_column_set_wrapfunc(cl, scols_wrapnl_chunksize, scols_wrapnl_nextchunk, NULL);
	}
	for (size_t i = 0; keys[i]; i++) {
		_cleanup_(integrity_resolve_freep) struct integrity_resolve *res = NULL;
		_cleanup_free_ char *shown = printable(keys[i], true);
		const char *obj = shown ? shown : "KEY";
		if (past)
			r = integrity_history_lookup(hist, keys[i], o.boot, at, &res);
		else
			r = integrity_resolve_key(ctx, keys[i], o.no_udev ? INTEGRITY_RESOLVE_NO_UDEV : 0, &res);
		int code = 0;
		if (r == -EINVAL && o.boot && boot_at_fault(hist, keys[i], at)) {
			ret = bad_option("--boot", o.boot, "0 (this boot), -N (N boots before it), N (the "
					 "N-th in the history) or a boot id");
			break;
		}
		if (r == -EINVAL)
			code = fail(EXIT_USAGE, obj, 0,
				    "not a key: MAJ:MIN, a name or path, a /dev/disk/by-* name, or "
				    "PARTUUID=, PARTLABEL=, UUID=, LABEL=, DISKSEQ=, WWN=, SERIAL=");
		else if (r == -ESRCH && o.boot)
			code = fail(EXIT_USAGE, o.boot, 0, "no such boot in the history");
		else if (r == -ESRCH)
			code = fail(EXIT_USAGE, o.at, 0, "no boot in the history had begun by then");
		else if ((r == -ENODEV || r == -ENOENT) && past)
			code = fail(EXIT_FAIL, obj, 0, "no device had this number or name then");
		else if (r == -ENODEV || r == -ENOENT || r == -ENOTBLK)
			code = no_device(keys[i], obj, r);
		else if (r < 0)
			code = fail(EXIT_FAIL, obj, r, "cannot resolve");
		else if (integrity_resolve_udev_stale(res))
			warnx_obj(obj, "udev's database describes another device that had %u:%u; "
				  "names read from the device instead", integrity_resolve_major(res),
				  integrity_resolve_minor(res));
		if (r < 0) {
			ret = ret ? ret : code;
			continue;
		}
		r = add_row(ctx, &set, tb, keys[i], res);
		if (r < 0) {
			ret = fail(EXIT_FAIL, NULL, r, "output");
			break;
		}
	}
	if (scols_table_get_nlines(tb) > 0 || gopt.json)
		scols_print_table(tb);
	return ret;
}
