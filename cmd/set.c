/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl set DEVICE read-verify=on|off write-generate=on|off */
#include "config.h"

#include <string.h>

#include "cmd.h"

static int parse_switch(const char *value, int *out)
{
	static const char *const on[] = { "on", "1", "yes", "true" };
	static const char *const off[] = { "off", "0", "no", "false" };

	for (size_t i = 0; i < ARRAY_SIZE(on); i++) {
		if (strcmp(value, on[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcmp(value, off[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -EINVAL;
}

/* md and device-mapper pass requests down without acting on the flags:
 * say so, and where they do act. */
/* A policy switch as the kernel shows it; -1: the kernel has none. */
static const char *switch_name(int v)
{
	return v < 0 ? "absent" : v ? "on" : "off";
}

static int refuse_stack(const struct integrity_device *dev)
{
	struct integrity_stack *st = NULL;
	char below[512] = "";

	if (integrity_stack_new(dev, &st) == 0) {
		for (size_t i = 0; i < integrity_stack_below_count(st); i++)
			snprintf(below + strlen(below), sizeof(below) - strlen(below), "%s%s", i ? ", " : "",
				 integrity_stack_below(st, i));
	}
	const char *what = st && integrity_stack_kind(st) == INTEGRITY_STACK_MD ? "md" : "device-mapper";
	int ret = fail(EXIT_FAIL, integrity_device_name(dev), 0,
		       "%s ignores read-verify and write-generate: the kernel applies them on the devices "
		       "below it%s%s%s", what, below[0] ? " (" : "", below, below[0] ? ")" : "");
	integrity_stack_free(st);
	return ret;
}

int cmd_set(int argc, const char **argv)
{
	struct poptOption table[] = {
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	static const char usage[] = "DEVICE read-verify=on|off write-generate=on|off";
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(integrity_device_freep) struct integrity_device *dev = NULL;
	int read_verify = -1, write_generate = -1, r;

	r = parse_options(&pc, "integrityctl set", argc, argv, table, usage);
	if (r)
		return r;
	if (gopt.output || gopt.output_all)
		return refuse_columns("it prints no columns");
	const char **args = poptGetArgs(pc);
	if (!args || !args[0] || !args[1]) {
		return usage_error(usage);
	}
	for (size_t i = 1; args[i]; i++) {
		const char *eq = strchr(args[i], '=');
		int *slot = NULL;
		if (eq && strncmp(args[i], "read-verify", (size_t)(eq - args[i])) == 0 &&
		    eq - args[i] == 11)
			slot = &read_verify;
		else if (eq && strncmp(args[i], "write-generate", (size_t)(eq - args[i])) == 0 &&
			 eq - args[i] == 14)
			slot = &write_generate;
		if (!slot || parse_switch(eq + 1, slot) < 0)
			return fail(EXIT_USAGE, NULL, 0, "'%s': use read-verify=on|off or write-generate=on|off",
				    args[i]);
	}

	const char *name = args[0];
	if ((r = open_device(name, &ctx, &dev)) != 0)
		return r;
	r = integrity_device_set_policy(dev, read_verify, write_generate);
	if (r == -EINVAL) {
		char fix[300];
		snprintf(fix, sizeof(fix), "set the policy on the whole disk (%s)", integrity_device_disk_name(dev));
		return fail_fix(EXIT_USAGE, name, 0, fix, "is a partition");
	}
	if (r == -EMEDIUMTYPE)
		return refuse_stack(dev);
	if (r == -EOPNOTSUPP)
		return fail(EXIT_FAIL, name, 0, "has no integrity profile: nothing to verify or generate");
	if (r == -EACCES || r == -EPERM)
		return fail_fix(EXIT_FAIL, name, r, "run it as root", "cannot change the integrity policy");
	if (r < 0)
		return fail(EXIT_FAIL, name, r, "cannot change the integrity policy");
	struct integrity_kernel_state st;
	r = integrity_device_kernel_state(dev, &st);
	if (r < 0)
		return fail(EXIT_FAIL, name, r, "policy changed, but the kernel's state cannot be read back");
	if (!gopt.quiet) {
		printf("%s: %s, read-verify=%s, write-generate=%s\n", integrity_device_name(dev),
		       st.format, switch_name(st.read_verify), switch_name(st.write_generate));
		if (!st.read_verify && integrity_device_read_check(dev) == INTEGRITY_READ_CHECK_DEVICE)
			printf("%s: the device still checks PI on reads (the NVMe driver asks the controller to)\n",
			       integrity_device_name(dev));
	}
	return EXIT_CLEAN;
}
