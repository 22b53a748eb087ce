/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl status: one row per disk and partition, as a tree of what is
 * made of what (partitions, md, device-mapper) or as a flat list. */
#include "config.h"

#include <limits.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "columns.h"
#include "util/safefile.h"

/* Where the systemd units have node_exporter's textfile collector read. */
#define METRICS_DIR "/var/lib/integrityctl/metrics"
/* A previous inventory larger than this is not one of ours. */
#define INVENTORY_MAX_SIZE (4u << 20)

enum {
	COL_NAME, COL_MAJMIN, COL_EXT, COL_TRAN, COL_SIZE, COL_PROFILE, COL_INTERVAL, COL_TAGSIZE,
	COL_READ_VERIFY, COL_WRITE_GENERATE, COL_PI_TYPE, COL_CAPABLE, COL_STABLE, COL_TYPE,
	COL_MEMBERS, COL_HOLDERS, COL_STATE, COL_KNAME,
};

static const struct column_def columns[] = {
	[COL_NAME] = { "NAME", 0.15, SCOLS_FL_TREE | SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
		       "device name (device-mapper: the name in /dev/mapper)" },
	[COL_KNAME] = { "KNAME", 0.1, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING, "internal kernel device name" },
	[COL_MAJMIN] = { "MAJ:MIN", 7, 0, SCOLS_JSON_STRING, "major:minor device number" },
	[COL_EXT] = { "EXT", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN,
		      "number in the extended (dynamic) range, major 259" },
	[COL_TRAN] = { "TRAN", 6, 0, SCOLS_JSON_STRING, "transport: scsi, sata, nvme, virtio, loop, dm..." },
	[COL_SIZE] = { "SIZE", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER, "size (bytes in JSON and with --bytes)" },
	[COL_PROFILE] = { "PROFILE", 0.1, 0, SCOLS_JSON_STRING,
			  "the kernel's integrity profile, or none" },
	[COL_INTERVAL] = { "INTERVAL", 4, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			   "protection interval in bytes" },
	[COL_TAGSIZE] = { "TAGSIZE", 3, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			  "tag bytes per interval the application owns (integrity/tag_size)" },
	[COL_READ_VERIFY] = { "READ-VERIFY", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN_OPTIONAL,
			      "the kernel verifies PI on reads" },
	[COL_WRITE_GENERATE] = { "WRITE-GENERATE", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN_OPTIONAL,
				 "the kernel generates PI on writes" },
	[COL_PI_TYPE] = { "PI-TYPE", 1, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			  "protection type the device is formatted with (0 none, 1-3)" },
	[COL_CAPABLE] = { "CAPABLE", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN_OPTIONAL,
			  "the device itself checks PI (not only the host adapter)" },
	[COL_STABLE] = { "STABLE", 0.3, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			 "best stable name (/dev/disk/by-id, by-path, by-partuuid; md and dm UUIDs)" },
	[COL_TYPE] = { "TYPE", 5, 0, SCOLS_JSON_STRING,
		       "disk, part, loop, raid1, raid5..., crypt, lvm, integrity, linear, dm" },
	[COL_MEMBERS] = { "MEMBERS", 0.1, SCOLS_FL_NOEXTREMES, SCOLS_JSON_ARRAY_STRING,
			  "the devices md or dm is made of (slaves)" },
	[COL_HOLDERS] = { "HOLDERS", 0.1, SCOLS_FL_NOEXTREMES, SCOLS_JSON_ARRAY_STRING,
			  "the md and dm devices made of this one (holders)" },
	[COL_STATE] = { "STATE", 0.1, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			"md: the array's state, degraded; a member's role (spare, faulty)" },
};

static const size_t default_columns[] = {
	COL_NAME, COL_MAJMIN, COL_EXT, COL_TRAN, COL_SIZE, COL_PROFILE, COL_INTERVAL, COL_TAGSIZE,
	COL_READ_VERIFY, COL_WRITE_GENERATE, COL_PI_TYPE, COL_STABLE,
};

static int bytes;
/* A device whose kernel state could not be read was listed: exit 3. */
static bool state_unread;

/* The devices of a listing with their stacks (read only when needed). */
struct listing {
	struct integrity_context *ctx;
	struct integrity_device **devs;
	struct integrity_stack **stacks;
	char **stable;		/* STABLE of each device in stable_read, when shown */
	const bool *stable_read;
	size_t n;
};

static void listing_done(struct listing *l)
{
	for (size_t i = 0; l->stacks && i < l->n; i++)
		integrity_stack_free(l->stacks[i]);
	free(l->stacks);
	for (size_t i = 0; l->stable && i < l->n; i++)
		free(l->stable[i]);
	free(l->stable);
	integrity_device_list_free(l->devs, l->n);
}

static ssize_t find_device(const struct listing *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(integrity_device_name(l->devs[i]), name) == 0)
			return (ssize_t)i;
	return -1;
}

/* Names joined: by newlines for a JSON array, by commas for people. */
/* MEMBERS and HOLDERS: the names lsblk's NAME shows (a device-mapper
 * device by its mapper name). */
static void set_names(const struct column_set *set, struct libscols_line *ln, size_t id,
		      const struct listing *l, const struct integrity_stack *st, bool above)
{
	size_t first = above ? integrity_stack_partition_count(st) : 0;
	size_t n = above ? integrity_stack_above_count(st) : integrity_stack_below_count(st);
	int pos = columns_position(set, id);
	_cleanup_free_ char *v = NULL;
	size_t vlen = 0;

	if (pos < 0)
		return;
	/* A partition's disk is not a member of it. */
	if (!above && integrity_stack_kind(st) == INTEGRITY_STACK_PARTITION)
		n = 0;
	if (first >= n) {
		/* An empty JSON array, not [null]. */
		if (gopt.json)
			scols_line_set_data(ln, (size_t)pos, "");
		return;
	}
	FILE *f = open_memstream(&v, &vlen);
	if (!f)
		return;
	for (size_t i = first; i < n; i++) {
		const char *kname = above ? integrity_stack_above(st, i) : integrity_stack_below(st, i);
		char name[NAME_MAX + 1];
		if (integrity_kname_to_name(l->ctx, kname, name, sizeof(name)) < 0)
			snprintf(name, sizeof(name), "%s", kname);
		fprintf(f, "%s%s", i > first ? (gopt.json ? "\n" : ",") : "", name);
	}
	if (fclose(f) == 0 && scols_line_refer_data(ln, (size_t)pos, v) == 0)
		v = NULL;
}

/* md: "clean", "clean, degraded 1"; a member of md: its role there when it
 * is not an active one ("spare in md0", "faulty in md0"). */
static void set_state(const struct column_set *set, struct libscols_line *ln, const struct listing *l,
		      size_t i)
{
	const struct integrity_stack *st = l->stacks[i];
	struct integrity_md_info md;
	char buf[256] = "";

	if (columns_position(set, COL_STATE) < 0)
		return;
	if (integrity_stack_md(st, &md) == 0) {
		snprintf(buf, sizeof(buf), "%s", md.array_state);
		if (md.degraded > 0)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%sdegraded %d",
				 buf[0] ? ", " : "", md.degraded);
	}
	for (size_t h = integrity_stack_partition_count(st); h < integrity_stack_above_count(st); h++) {
		ssize_t j = find_device(l, integrity_stack_above(st, h));
		if (j < 0 || !l->stacks[j])
			continue;
		for (size_t m = 0; m < integrity_stack_md_member_count(l->stacks[j]); m++) {
			const struct integrity_md_member *mem = integrity_stack_md_member(l->stacks[j], m);
			if (strcmp(mem->name, integrity_device_name(l->devs[i])) != 0 || mem->slot >= 0)
				continue;
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s in %s", buf[0] ? ", " : "",
				 mem->state, integrity_stack_name(l->stacks[j]));
		}
	}
	if (buf[0])
		columns_set(set, ln, COL_STATE, "%s", buf);
}

static void add_row(const struct column_set *set, struct libscols_table *tb,
		    struct libscols_line *parent, const struct listing *l, size_t i,
		    struct libscols_line **out)
{
	const struct integrity_device *dev = l->devs[i];
	struct libscols_line *ln = scols_table_new_line(tb, parent);
	struct integrity_kernel_state st;
	char size[32];

	*out = ln;
	if (!ln)
		return;
	/* Not read: the kernel's columns stay empty, never "none" or 0. */
	int r = integrity_device_kernel_state(dev, &st);
	if (r < 0) {
		warnx_obj(integrity_device_name(dev), "cannot read the kernel's integrity state: %s", strerror(-r));
		state_unread = true;
	}
	bool has_profile = r == 0 && strcmp(st.format, "none") != 0;

	char name[NAME_MAX + 1];
	if (integrity_kname_to_name(l->ctx, integrity_device_name(dev), name, sizeof(name)) < 0)
		snprintf(name, sizeof(name), "%s", integrity_device_name(dev));
	columns_set(set, ln, COL_NAME, "%s", name);
	columns_set(set, ln, COL_KNAME, "%s", integrity_device_name(dev));
	columns_set(set, ln, COL_MAJMIN, "%u:%u", integrity_device_major(dev),
		    integrity_device_minor(dev));
	columns_set(set, ln, COL_EXT, "%d", integrity_device_is_extended(dev));
	columns_set(set, ln, COL_TRAN, "%s", integrity_device_transport(dev));
	if (bytes || gopt.json)
		columns_set(set, ln, COL_SIZE, "%" PRIu64, integrity_device_size(dev));
	else
		columns_set(set, ln, COL_SIZE, "%s",
			    format_size(integrity_device_size(dev), size, sizeof(size)));
	if (r == 0)
		columns_set(set, ln, COL_PROFILE, "%s", st.format);
	if (has_profile) {
		columns_set(set, ln, COL_INTERVAL, "%u", st.interval);
		columns_set(set, ln, COL_TAGSIZE, "%u", st.tag_size);
	}
	if (st.read_verify >= 0)
		columns_set(set, ln, COL_READ_VERIFY, "%d", st.read_verify);
	if (st.write_generate >= 0)
		columns_set(set, ln, COL_WRITE_GENERATE, "%d", st.write_generate);
	if (st.device_capable >= 0)
		columns_set(set, ln, COL_CAPABLE, "%d", st.device_capable);
	/* Only asked for when shown: it may open the device. */
	if (columns_position(set, COL_PI_TYPE) >= 0) {
		int t = integrity_device_pi_type(dev);
		if (t >= 0)
			columns_set(set, ln, COL_PI_TYPE, "%d", t);
	}
	if (l->stable) {
		/* A tree adds what is made of the devices named. */
		char buf[PATH_MAX];
		const char *stable = l->stable_read[i] ? l->stable[i]
				 : integrity_resolve_stable_name(dev, buf, sizeof(buf)) == 0 ? buf : NULL;
		if (stable)
			columns_set(set, ln, COL_STABLE, "%s", stable);
	}
	const struct integrity_stack *stk = l->stacks ? l->stacks[i] : NULL;
	if (stk) {
		columns_set(set, ln, COL_TYPE, "%s", integrity_stack_type(stk));
		set_names(set, ln, COL_MEMBERS, l, stk, false);
		set_names(set, ln, COL_HOLDERS, l, stk, true);
		set_state(set, ln, l, i);
	}
}

static bool made_of(const struct integrity_stack *st, const char *name)
{
	for (size_t b = 0; st && b < integrity_stack_below_count(st); b++)
		if (strcmp(integrity_stack_below(st, b), name) == 0)
			return true;
	return false;
}

/* A device and, under it, what is made of it: its partitions (they follow
 * their disk in the listing), then what holds it (from the slaves of md and
 * dm, which only whole devices have: no directory read per partition), each
 * as often as it is reached (an md array under each member, as lsblk shows
 * it). */
static void add_tree(const struct column_set *set, struct libscols_table *tb,
		     struct libscols_line *parent, const struct listing *l, size_t i, unsigned depth)
{
	const char *name = integrity_device_name(l->devs[i]);
	struct libscols_line *ln;

	add_row(set, tb, parent, l, i, &ln);
	if (!ln || depth > 16)
		return;
	if (!integrity_device_partno(l->devs[i]))
		for (size_t j = i + 1; j < l->n && integrity_device_partno(l->devs[j]) &&
				       strcmp(integrity_device_disk_name(l->devs[j]), name) == 0; j++)
			add_tree(set, tb, ln, l, j, depth + 1);
	for (size_t j = 0; j < l->n; j++)
		if (!integrity_device_partno(l->devs[j]) && made_of(l->stacks[j], name))
			add_tree(set, tb, ln, l, j, depth + 1);
}

struct inventory {
	struct listing *l;
	FILE *previous;
	int r;
};

static void write_inventory(FILE *f, void *data)
{
	struct inventory *inv = data;

	inv->r = integrity_metrics_inventory(inv->l->devs, inv->l->n, inv->previous, (double)time(NULL), f);
}

/* --metrics: the inventory, replaced atomically in dir; the previous file
 * is read only when it can be trusted (root's, nobody else may write it). */
static int metrics(struct listing *l, const char *dir)
{
	char path[PATH_MAX];
	struct inventory inv = { l, NULL, 0 };

	if (snprintf(path, sizeof(path), "%s/" INTEGRITY_METRICS_DEVICES_FILE, dir) >= (int)sizeof(path))
		return fail(EXIT_FAIL, dir, -ENAMETOOLONG, "cannot write metrics");
	inv.previous = safe_fopen_read(path, INVENTORY_MAX_SIZE, SAFE_TRUSTED, NULL);
	int w = safe_write_file(path, 0, 0644, write_inventory, &inv);
	if (inv.previous)
		fclose(inv.previous);
	if (w == 0 && inv.r < 0)
		w = inv.r;
	if (w < 0)
		return fail_file(EXIT_FAIL, path, w, "cannot write metrics");
	return EXIT_CLEAN;
}

static void usage(poptContext pc)
{
	poptPrintHelp(pc, stdout, 0);
	columns_help(stdout, columns, ARRAY_SIZE(columns));
	printf("\nDefault columns: NAME,MAJ:MIN,EXT,TRAN,SIZE,PROFILE,INTERVAL,TAGSIZE,READ-VERIFY,"
	       "WRITE-GENERATE,PI-TYPE,STABLE\n"
	       "\nDEVICE: a kernel name (sdb, nvme0n1p1, md0, dm-0), a path (/dev/sdb, /dev/disk/by-id/...),\n"
	       "MAJ:MIN, a device-mapper name (lin1, /dev/mapper/lin1) or an LVM volume (vg/lv).\n");
}

int cmd_status(int argc, const char **argv)
{
	int help = 0, tree = 0, list = 0, all = 0, metrics_default = 0;
	_cleanup_free_ char *metrics_dir = NULL;
	struct poptOption table[] = {
		{ "all", 'a', POPT_ARG_NONE, &all, 0, "also list empty loop devices and RAM disks, as lsblk -a", NULL },
		{ "bytes", 'b', POPT_ARG_NONE, &bytes, 0, "print SIZE in bytes", NULL },
		{ "tree", 'T', POPT_ARG_NONE, &tree, 0,
		  "show what is made of what: partitions, md, device-mapper (the default, except with -r)",
		  NULL },
		{ "list", 'L', POPT_ARG_NONE, &list, 0, "a flat list, one row per device", NULL },
		{ "metrics", '\0', POPT_ARG_NONE, &metrics_default, 0,
		  "write the device inventory for Prometheus to " METRICS_DIR " instead of the table", NULL },
		{ "metrics-dir", '\0', POPT_ARG_STRING, &metrics_dir, 0,
		  "write it to DIR (node_exporter's textfile directory)", "DIR" },
		{ "help", 'h', POPT_ARG_NONE, &help, 0, "show this help and the columns", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	struct column_set set;
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(listing_done) struct listing l = { 0 };
	_cleanup_free_ bool *shown = NULL, *named = NULL;
	_cleanup_(scols_unref_tablep) struct libscols_table *tb = NULL;
	int r, ret = EXIT_CLEAN;

	r = parse_options(&pc, "integrityctl status", argc, argv, table, "[DEVICE...]");
	if (r)
		return r;
	if (help) {
		usage(pc);
		return EXIT_CLEAN;
	}
	if (tree && list)
		return conflicting_options("--tree", "--list", NULL);
	if (metrics_dir && !metrics_dir[0])
		return fail(EXIT_USAGE, NULL, 0, "--metrics-dir: an empty directory name");
	if ((metrics_default || metrics_dir) && poptPeekArg(pc))
		return fail(EXIT_USAGE, NULL, 0, "%s: --metrics lists every device, no DEVICE with it",
			    poptPeekArg(pc));
	/* As lsblk: a tree unless raw, whether or not on a terminal. */
	if (tree && gopt.raw)
		return conflicting_options("--tree", "-r/--raw", "raw output is a list, as lsblk's");
	if (!tree && !list)
		tree = !gopt.raw;
	r = columns_select(&set, columns, ARRAY_SIZE(columns), default_columns,
			   ARRAY_SIZE(default_columns), gopt.output);
	if (r)
		return r;
	r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	l.ctx = ctx;
	r = integrity_device_list(ctx, &l.devs, &l.n);
	if (r < 0)
		return fail_fix(EXIT_FAIL, gopt.sysfs_root ? gopt.sysfs_root : "/sys", r,
				gopt.sysfs_root && r == -ENOENT ? "check --sysfs-root" : NULL, "cannot list block devices");
	if (metrics_default || metrics_dir)
		return metrics(&l, metrics_dir ? metrics_dir : METRICS_DIR);
	struct integrity_device **devs = l.devs;
	size_t n = l.n;

	/* Which devices to show: all, or the named ones (a disk with its
	 * partitions; in a tree, with everything made of them). */
	shown = calloc(n ? n : 1, sizeof(*shown));
	named = calloc(n ? n : 1, sizeof(*named));
	/* Stacks of partitions only for the columns that show them; the
	 * tree needs those of whole devices. */
	bool stack_columns = columns_position(&set, COL_TYPE) >= 0 || columns_position(&set, COL_MEMBERS) >= 0 ||
			     columns_position(&set, COL_HOLDERS) >= 0 || columns_position(&set, COL_STATE) >= 0;
	bool want_stacks = tree || stack_columns;
	if (want_stacks)
		l.stacks = calloc(n ? n : 1, sizeof(*l.stacks));
	if (!shown || !named || (want_stacks && !l.stacks))
		return fail(EXIT_FAIL, NULL, -ENOMEM, "listing");
	for (size_t i = 0; want_stacks && i < n; i++)
		if (stack_columns || !integrity_device_partno(devs[i]))
			integrity_stack_new(devs[i], &l.stacks[i]);	/* gone meanwhile: a row without */
	const char **args = poptGetArgs(pc);
	if (!args)
		for (size_t i = 0; i < n; i++)
			shown[i] = all || !integrity_device_is_empty(devs[i]);
	for (size_t a = 0; args && args[a]; a++) {
		_cleanup_(integrity_device_freep) struct integrity_device *want = NULL;
		r = integrity_device_new(ctx, args[a], &want);
		if (r < 0) {
			ret = device_error(args[a], r);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			bool same = strcmp(integrity_device_name(devs[i]), integrity_device_name(want)) == 0;
			bool part_of = !integrity_device_partno(want) &&
				       strcmp(integrity_device_disk_name(devs[i]), integrity_device_name(want)) == 0;
			if (same || part_of)
				shown[i] = true;
			if (same)
				named[i] = true;
		}
	}

	/* Stable names of the devices shown, each disk's table read once. */
	if (columns_position(&set, COL_STABLE) >= 0) {
		l.stable = calloc(n ? n : 1, sizeof(*l.stable));
		if (!l.stable || integrity_resolve_stable_names(devs, n, shown, l.stable) < 0)
			return fail(EXIT_FAIL, NULL, -ENOMEM, "listing");
		l.stable_read = shown;
	}

	/* The tree's lines as lsblk draws them: UTF-8 in a UTF-8 locale. */
	setlocale(LC_CTYPE, "");
	tb = columns_new_table(&set, "blockdevices");
	if (!tb)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "output");
	for (int pos = 0; pos < (int)set.n; pos++) {
		size_t id = set.ids[pos];
		if (!gopt.json || (id != COL_MEMBERS && id != COL_HOLDERS))
			continue;
		/* JSON arrays are made of a cell's newline-separated chunks. */
		struct libscols_column *cl = scols_table_get_column(tb, (size_t)pos);
		scols_column_set_flags(cl, scols_column_get_flags(cl) | SCOLS_FL_WRAP);
		scols_column_set_wrapfunc(cl, scols_wrapnl_chunksize, scols_wrapnl_nextchunk, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		struct libscols_line *ln;
		if (!tree) {
			if (shown[i])
				add_row(&set, tb, NULL, &l, i, &ln);
			continue;
		}
		/* A tree starts at what is made of nothing else listed, or at
		 * each device named. */
		bool root = args ? named[i] : !integrity_device_partno(devs[i]);
		if (!args && l.stacks[i])
			for (size_t b = 0; b < integrity_stack_below_count(l.stacks[i]); b++)
				if (find_device(&l, integrity_stack_below(l.stacks[i], b)) >= 0)
					root = false;
		if (root)
			add_tree(&set, tb, NULL, &l, i, 0);
	}
	scols_print_table(tb);
	return state_unread && !ret ? EXIT_FAIL : ret;
}
