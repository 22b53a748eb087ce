/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl status: one row per disk and partition. */
#include "config.h"

#include <string.h>

#include "cmd.h"
#include "columns.h"

enum {
	COL_NAME, COL_MAJMIN, COL_EXT, COL_TRAN, COL_SIZE, COL_PROFILE, COL_INTERVAL, COL_TAGSIZE,
	COL_READ_VERIFY, COL_WRITE_GENERATE, COL_PI_TYPE, COL_CAPABLE, COL_STABLE,
};

static const struct column_def columns[] = {
	[COL_NAME] = { "NAME", 0.15, SCOLS_FL_TREE | SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
		       "kernel device name" },
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
	[COL_READ_VERIFY] = { "READ-VERIFY", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN,
			      "the kernel verifies PI on reads" },
	[COL_WRITE_GENERATE] = { "WRITE-GENERATE", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN,
				 "the kernel generates PI on writes" },
	[COL_PI_TYPE] = { "PI-TYPE", 1, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			  "protection type the device is formatted with (0 none, 1-3)" },
	[COL_CAPABLE] = { "CAPABLE", 1, SCOLS_FL_RIGHT, SCOLS_JSON_BOOLEAN,
			  "the device itself checks PI (not only the host adapter)" },
	[COL_STABLE] = { "STABLE", 0.3, SCOLS_FL_NOEXTREMES, SCOLS_JSON_STRING,
			 "best stable name (/dev/disk/by-id, by-path, by-partuuid)" },
};

static const size_t default_columns[] = {
	COL_NAME, COL_MAJMIN, COL_EXT, COL_TRAN, COL_SIZE, COL_PROFILE, COL_INTERVAL, COL_TAGSIZE,
	COL_READ_VERIFY, COL_WRITE_GENERATE, COL_PI_TYPE, COL_STABLE,
};

static int bytes;

static void add_row(const struct column_set *set, struct libscols_table *tb,
		    struct libscols_line *parent, const struct integrity_device *dev,
		    struct libscols_line **out)
{
	struct libscols_line *ln = scols_table_new_line(tb, parent);
	struct integrity_kernel_state st;
	char size[32];

	*out = ln;
	if (!ln)
		return;
	integrity_device_kernel_state(dev, &st);
	bool has_profile = strcmp(st.format, "none") != 0;

	columns_set(set, ln, COL_NAME, "%s", integrity_device_name(dev));
	columns_set(set, ln, COL_MAJMIN, "%u:%u", integrity_device_major(dev),
		    integrity_device_minor(dev));
	columns_set(set, ln, COL_EXT, "%d", integrity_device_is_extended(dev));
	columns_set(set, ln, COL_TRAN, "%s", integrity_device_transport(dev));
	if (bytes || gopt.json)
		columns_set(set, ln, COL_SIZE, "%" PRIu64, integrity_device_size(dev));
	else
		columns_set(set, ln, COL_SIZE, "%s",
			    format_size(integrity_device_size(dev), size, sizeof(size)));
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
	if (columns_position(set, COL_STABLE) >= 0) {
		const char *stable = integrity_device_stable_name(dev);
		if (stable)
			columns_set(set, ln, COL_STABLE, "%s", stable);
	}
}

static void usage(poptContext pc)
{
	poptPrintHelp(pc, stdout, 0);
	columns_help(stdout, columns, ARRAY_SIZE(columns));
	printf("\nDefault columns: NAME,MAJ:MIN,EXT,TRAN,SIZE,PROFILE,INTERVAL,TAGSIZE,READ-VERIFY,"
	       "WRITE-GENERATE,PI-TYPE,STABLE\n");
}

int cmd_status(int argc, const char **argv)
{
	int help = 0;
	struct poptOption table[] = {
		{ "bytes", 'b', POPT_ARG_NONE, &bytes, 0, "print SIZE in bytes", NULL },
		{ "help", 'h', POPT_ARG_NONE, &help, 0, "show this help and the columns", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	struct column_set set;
	struct integrity_context *ctx = NULL;
	struct integrity_device **devs = NULL;
	size_t n = 0;
	poptContext pc;
	int r, ret = EXIT_CLEAN;

	r = parse_options(&pc, "integrityctl status", argc, argv, table, "[DEVICE...]");
	if (r)
		return r;
	if (help) {
		usage(pc);
		poptFreeContext(pc);
		return EXIT_CLEAN;
	}
	r = columns_select(&set, columns, ARRAY_SIZE(columns), default_columns,
			   ARRAY_SIZE(default_columns), gopt.output);
	if (r) {
		poptFreeContext(pc);
		return r;
	}
	r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0) {
		poptFreeContext(pc);
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	}
	r = integrity_device_list(ctx, &devs, &n);
	if (r < 0) {
		ret = fail(EXIT_FAIL, gopt.sysfs_root ? gopt.sysfs_root : "/sys", r,
			   "cannot list block devices");
		goto out;
	}

	/* Which devices to show: all, or the named ones (a disk with its partitions). */
	bool *shown = calloc(n ? n : 1, sizeof(*shown));
	if (!shown) {
		ret = fail(EXIT_FAIL, NULL, -ENOMEM, "listing");
		goto out;
	}
	const char **args = poptGetArgs(pc);
	if (!args)
		for (size_t i = 0; i < n; i++)
			shown[i] = true;
	for (size_t a = 0; args && args[a]; a++) {
		struct integrity_device *want;
		r = integrity_device_new(ctx, args[a], &want);
		if (r < 0) {
			ret = fail(EXIT_FAIL, args[a], r == -ENODEV ? 0 : r,
				   r == -ENODEV ? "no such block device" : "cannot look up");
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			bool same = strcmp(integrity_device_name(devs[i]), integrity_device_name(want)) == 0;
			bool part_of = !integrity_device_partno(want) &&
				       strcmp(integrity_device_disk_name(devs[i]), integrity_device_name(want)) == 0;
			if (same || part_of)
				shown[i] = true;
		}
		integrity_device_free(want);
	}

	struct libscols_table *tb = columns_new_table(&set, "blockdevices");
	if (!tb) {
		free(shown);
		ret = fail(EXIT_FAIL, NULL, -ENOMEM, "output");
		goto out;
	}
	struct libscols_line *disk_line = NULL;
	const char *disk_name = NULL;
	for (size_t i = 0; i < n; i++) {
		struct libscols_line *ln;
		if (!integrity_device_partno(devs[i])) {
			disk_line = NULL;
			disk_name = NULL;
		}
		if (!shown[i])
			continue;
		bool under = integrity_device_partno(devs[i]) && disk_name &&
			     strcmp(disk_name, integrity_device_disk_name(devs[i])) == 0;
		add_row(&set, tb, under ? disk_line : NULL, devs[i], &ln);
		if (!integrity_device_partno(devs[i])) {
			disk_line = ln;
			disk_name = integrity_device_name(devs[i]);
		}
	}
	scols_print_table(tb);
	scols_unref_table(tb);
	free(shown);
out:
	integrity_device_list_free(devs, n);
	integrity_context_free(ctx);
	poptFreeContext(pc);
	return ret;
}
