/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl: the dispatch table. */
#include "config.h"

#include <errno.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

struct command {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "status", cmd_status, "list block devices with their integrity state" },
	{ "show", cmd_show, "everything known about one device's protection" },
	{ "set", cmd_set, "change the kernel's read-verify / write-generate policy" },
	{ "scrub", cmd_scrub, "check every block of a device, partition or image" },
	{ "pi", cmd_pi, "generate, verify or corrupt protection information in files" },
	{ "part", cmd_part, "create, delete, list and register many partitions (BLKPG)" },
	{ "format", cmd_format, "turn protection on or off or change its type (erases the device)" },
	{ "resolve", cmd_resolve, "map MAJ:MIN, names and stable names to each other, now or in the past" },
	{ "monitor", cmd_monitor, "follow the kernel's integrity errors: device, blocks, files, a scrub of them" },
	{ "audit", cmd_audit, "configuration naming devices by names that move, protection left off" },
	{ "udev-helper", cmd_udev_helper, "for udev rules: properties, policy, device-number history" },
};

static void usage(FILE *out)
{
	fputs("Usage: integrityctl [OPTIONS] COMMAND [ARGS...]\n\n"
	      "Show and manage block-device data integrity (T10 PI, DIF/DIX, NVMe PI).\n\n"
	      "Commands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fputs("\nGlobal options (before or after the command):\n"
	      "  -J, --json              use JSON output format\n"
	      "  -o, --output COLUMNS    output columns\n"
	      "  -n, --noheadings        don't print headings\n"
	      "  -r, --raw               use the raw output format\n"
	      "      --sysfs-root DIR    read another sysfs tree\n"
	      "  -q, --quiet             print only errors\n"
	      "  -v, --verbose           say more\n"
	      "  -V, --version           print the version\n"
	      "  -h, --help              print this help\n\n"
	      "Run 'integrityctl COMMAND --help' for a command's options.\n"
	      "Exit status: 0 clean, 1 integrity errors found, 2 usage error,\n"
	      "3 operational failure, 4 interrupted with state saved.\n", out);
}

static const char *nearest_command(const char *name)
{
	const char *best = NULL;
	size_t best_d = 3;

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		size_t d = edit_distance(name, commands[i].name);
		if (strncmp(name, commands[i].name, strlen(name)) == 0)
			d = 1;
		if (d < best_d) {
			best_d = d;
			best = commands[i].name;
		}
	}
	return best;
}

/* util-linux's close_stdout: output that could not be written is an
 * operational failure, never a success.  A closed pipe is the reader's
 * choice and is not reported. */
static int close_stdout(int ret)
{
	bool pending = __fpending(stdout) != 0;
	bool failed = ferror(stdout) != 0;

	errno = 0;
	bool close_failed = fclose(stdout) != 0;
	int err = errno;

	if (!failed && !(close_failed && (pending || err != EBADF)))
		return ret;
	if (err == EPIPE)
		return ret;
	return fail(EXIT_FAIL, NULL, close_failed ? err : 0, "write error");
}

static void print_version(void)
{
	printf("integrityctl %s (libintegrity %s, crc %s)\n", PACKAGE_VERSION, integrity_version(),
	       integrity_crc_implementation());
}

static int run(int argc, const char **argv)
{
	int version = 0, help = 0;
	struct poptOption table[] = {
		{ "version", 'V', POPT_ARG_NONE, &version, 0, NULL, NULL },
		{ "help", 'h', POPT_ARG_NONE, &help, 0, NULL, NULL },
		{ "usage", '?', POPT_ARG_NONE, &help, 0, NULL, NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext ctx = poptGetContext("integrityctl", argc, argv, table,
							POPT_CONTEXT_POSIXMEHARDER);
	int rc;

	while ((rc = poptGetNextOpt(ctx)) > 0)
		;
	if (rc < -1) {
		fail(EXIT_USAGE, poptBadOption(ctx, 0), 0, "%s", poptStrerror(rc));
		fputs("Try 'integrityctl --help'.\n", stderr);
		return EXIT_USAGE;
	}
	if (version) {
		print_version();
		return EXIT_CLEAN;
	}
	const char **rest = poptGetArgs(ctx);
	if (help || !rest || !rest[0]) {
		usage(help ? stdout : stderr);
		return help ? EXIT_CLEAN : EXIT_USAGE;
	}

	int nrest = 0;
	while (rest[nrest])
		nrest++;
	/* Copied: the command's own popt context outlives this one. */
	_cleanup_free_ const char **cargv = calloc((size_t)nrest + 1, sizeof(*cargv));
	if (!cargv)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "allocating arguments");
	for (int i = 0; i < nrest; i++)
		cargv[i] = rest[i];

	/* -h and -V mean the same after a command as before it; "--" ends
	 * the options. */
	for (int i = 1; i < nrest && strcmp(cargv[i], "--") != 0; i++) {
		if (!strcmp(cargv[i], "-V") || !strcmp(cargv[i], "--version")) {
			print_version();
			return EXIT_CLEAN;
		}
		if (!strcmp(cargv[i], "-h") || !strcmp(cargv[i], "-?") || !strcmp(cargv[i], "--usage"))
			cargv[i] = "--help";
	}

	int ret = -1;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(cargv[0], commands[i].name) == 0) {
			/* Named by every message from here on; the
			 * command's own options (and -J -r given before it,
			 * which it sees too) are refused in its name. */
			command_name = commands[i].name;
			ret = commands[i].fn(nrest, cargv);
		}
	if (ret == EXIT_HELP)
		return EXIT_CLEAN;
	if (ret < 0) {
		const char *near = nearest_command(cargv[0]);
		message_start(NULL);
		fprintf(stderr, "'%s' is not a command.", cargv[0]);
		if (near)
			fprintf(stderr, " Did you mean '%s'?", near);
		fputs(" See 'integrityctl --help'.\n", stderr);
		ret = EXIT_USAGE;
	}
	return ret;
}

int main(int argc, const char **argv)
{
	return close_stdout(run(argc, argv));
}
