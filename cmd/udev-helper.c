/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * integrityctl udev-helper DEVNAME: run by udev (IMPORT{program}) for every
 * block device event.  Prints ID_INTEGRITY_* properties, applies the
 * configured policy and records the event in the device-number history.
 * It never fails an event: problems go to stderr (udev logs them) and the
 * exit status stays 0.
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

static struct {
	char *config;
	char *history;
	int no_history;
	int no_policy;
	int print_rules;
	int help;
} o;

static const char site_rules[] =
	"# Example site rules for integrityctl(8), e.g. /etc/udev/rules.d/62-integrityctl-local.rules\n"
	"# (after 61-integrityctl.rules, which imports the ID_INTEGRITY_* properties).\n"
	"\n"
	"# Partitions with dynamic numbers (259:N) get a link named after the\n"
	"# partition's PARTUUID, so that scripts never need the number.\n"
	"SUBSYSTEM==\"block\", ACTION!=\"remove\", ENV{DEVTYPE}==\"partition\", \\\n"
	"  ENV{ID_INTEGRITY_EXT_DEVT}==\"1\", ENV{ID_INTEGRITY_PARTUUID}==\"?*\", \\\n"
	"  SYMLINK+=\"disk/by-ext-partuuid/$env{ID_INTEGRITY_PARTUUID}\"\n"
	"\n"
	"# Disks whose kernel profile is T10 DIF Type 1 get a tag for systemd units.\n"
	"SUBSYSTEM==\"block\", ACTION!=\"remove\", ENV{ID_INTEGRITY_PROFILE}==\"T10-DIF-TYPE1-*\", \\\n"
	"  TAG+=\"integrity-protected\"\n";

/* KEY=VALUE with the value escaped: nothing a device reports can end the
 * line, add a property, or be a shell word. */
static void print_property(const char *key, const char *value, unsigned flags)
{
	char buf[4096];

	if (!value || !*value)
		return;
	if (integrity_escape_property(value, flags, buf, sizeof(buf)) < 0) {
		warnx_obj(key, "value too long, left out");
		return;
	}
	printf("%s=%s\n", key, buf);
}

static void print_number(const char *key, long long v)
{
	printf("%s=%lld\n", key, v);
}

/* The device's links as udev passes them to programs (DEVLINKS, one
 * space between links; udev's names never contain one).  *copy owns them. */
static size_t env_links(char **copy, const char **links, size_t max)
{
	const char *devlinks = getenv("DEVLINKS");
	size_t n = 0;

	*copy = devlinks ? strdup(devlinks) : NULL;
	for (char *save = NULL, *l = *copy ? strtok_r(*copy, " ", &save) : NULL; l && n < max;
	     l = strtok_r(NULL, " ", &save))
		if (strncmp(l, "/dev/disk/by-", 13) == 0)
			links[n++] = l;
	return n;
}

/* A number udev put in the environment, parsed strictly: 0, -ENOENT when
 * unset, -EINVAL (with a warning) for anything but decimal digits within
 * max. */
static int env_number(const char *devname, const char *key, uint64_t max, uint64_t *v)
{
	const char *s = getenv(key);

	*v = 0;
	if (!s)
		return -ENOENT;
	if (parse_u64(s, v) < 0 || *v > max) {
		warnx_obj(devname, "%s=%s from udev is not a number up to %" PRIu64 "; not recorded", key, s, max);
		return -EINVAL;
	}
	return 0;
}

/* A remove event: the device is gone, what udev knew comes in the
 * environment (its properties, as udev passes them to programs). */
static void record_remove(const char *devname)
{
	const char *node = getenv("DEVNAME") ? getenv("DEVNAME") : devname;
	uint64_t maj, min, seq, partn;
	const char *links[64];
	_cleanup_free_ char *copy = NULL;

	int rmaj = env_number(devname, "MAJOR", UINT32_MAX >> 20, &maj);
	int rmin = env_number(devname, "MINOR", UINT32_MAX >> 12, &min);
	if (rmaj == -EINVAL || rmin == -EINVAL || env_number(devname, "DISKSEQ", UINT64_MAX, &seq) == -EINVAL ||
	    env_number(devname, "PARTN", 65535, &partn) == -EINVAL)
		return;
	if (rmaj < 0 || rmin < 0 || !node) {
		warnx_obj(devname, "remove event without MAJOR, MINOR and DEVNAME: not recorded");
		return;
	}
	size_t nlinks = env_links(&copy, links, ARRAY_SIZE(links));
	const char *name = strrchr(node, '/') ? strrchr(node, '/') + 1 : node;
	struct integrity_history_event ev = {
		.action = "remove",
		.major = (unsigned)maj,
		.minor = (unsigned)min,
		.name = name,
		.partno = (unsigned)partn,
		.diskseq = seq,
		.links = links,
		.nlinks = nlinks,
	};
	int r = integrity_history_append(o.history, &ev);
	if (r < 0)
		fail_file(0, o.history ? o.history : INTEGRITY_HISTORY_PATH, r, "cannot record %s", name);
}

/* A device node is looked up through its number (the library follows
 * <sysfs root>/dev/block); anything else by its last component, as udev
 * passes a kernel name. */
static const char *device_spec(const char *devname)
{
	struct stat st;

	if (stat(devname, &st) == 0 && S_ISBLK(st.st_mode))
		return devname;
	return strrchr(devname, '/') ? strrchr(devname, '/') + 1 : devname;
}

static void apply_policy(const struct integrity_device *dev, const struct integrity_resolve *res)
{
	_cleanup_(integrity_policy_freep) struct integrity_policy *pol = NULL;
	unsigned line;
	int rv, wg;
	const char *path = o.config ? o.config : INTEGRITY_CONFIG_PATH;
	int r = integrity_policy_load(path, &pol, &line);

	if (r == -EINVAL) {
		fail(0, path, 0, "line %u: not understood; no policy applied", line);
		return;
	}
	if (r < 0) {
		fail_file(0, path, r, "cannot read");
		return;
	}
	r = integrity_policy_lookup(pol, dev, res, &rv, &wg);
	if (r <= 0 || (rv < 0 && wg < 0))
		return;
	r = integrity_device_set_policy(dev, rv, wg);
	/* A disk without a profile has no policy to set. */
	if (r < 0 && r != -EOPNOTSUPP)
		fail(0, integrity_device_name(dev), r, "cannot set read-verify/write-generate");
}

static void print_properties(const struct integrity_device *dev, const struct integrity_resolve *res)
{
	struct integrity_kernel_state st;

	integrity_device_kernel_state(dev, &st);
	print_property("ID_INTEGRITY_PROFILE", st.format, 0);
	if (strcmp(st.format, "none") != 0) {
		print_number("ID_INTEGRITY_INTERVAL", st.interval);
		print_number("ID_INTEGRITY_TAG_SIZE", st.tag_size);
	}
	if (st.read_verify >= 0)
		print_number("ID_INTEGRITY_READ_VERIFY", st.read_verify);
	if (st.write_generate >= 0)
		print_number("ID_INTEGRITY_WRITE_GENERATE", st.write_generate);
	int t = integrity_device_pi_type(dev);
	if (t >= 0)
		print_number("ID_INTEGRITY_PI_TYPE", t);
	print_number("ID_INTEGRITY_EXT_DEVT", integrity_device_is_extended(dev));
	if (!res)
		return;
	if (integrity_resolve_diskseq(res))
		print_number("ID_INTEGRITY_DISKSEQ", (long long)integrity_resolve_diskseq(res));
	print_property("ID_INTEGRITY_STABLE_NAME", integrity_resolve_stable_link(res), INTEGRITY_ESCAPE_PATH);
	print_property("ID_INTEGRITY_PARTUUID", integrity_resolve_value(res, INTEGRITY_LINK_PARTUUID), 0);
	print_property("ID_INTEGRITY_PARTLABEL", integrity_resolve_value(res, INTEGRITY_LINK_PARTLABEL), 0);
	print_property("ID_INTEGRITY_FS_UUID", integrity_resolve_value(res, INTEGRITY_LINK_UUID), 0);
	print_property("ID_INTEGRITY_FS_LABEL", integrity_resolve_value(res, INTEGRITY_LINK_LABEL), 0);
}

/* udev kills an event's program after its own timeout and logs only
 * that; this one gives up well before, saying so, and never fails the
 * event.  Output not yet flushed is dropped, so no property is cut. */
#define DEADLINE_SECONDS 10

static void deadline_passed(int sig _unused_)
{
	static const char msg[] = "integrityctl: udev-helper: no answer within 10 s; giving up on this event\n";
	ssize_t n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	_exit(EXIT_CLEAN);
}

int cmd_udev_helper(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "config", '\0', POPT_ARG_STRING, &o.config, 0,
		  "policy configuration (default " INTEGRITY_CONFIG_PATH ")", "FILE" },
		{ "history", '\0', POPT_ARG_STRING, &o.history, 0,
		  "the history file (default " INTEGRITY_HISTORY_PATH ")", "FILE" },
		{ "no-history", '\0', POPT_ARG_NONE, &o.no_history, 0, "do not record the event", NULL },
		{ "no-policy", '\0', POPT_ARG_NONE, &o.no_policy, 0, "do not apply the configured policy", NULL },
		{ "print-rules", '\0', POPT_ARG_NONE, &o.print_rules, 0, "print example site rules", NULL },
		{ "help", 'h', POPT_ARG_NONE, &o.help, 0, "show this help", NULL },
		GLOBAL_OPTIONS,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(integrity_device_freep) struct integrity_device *dev = NULL;
	_cleanup_(integrity_resolve_freep) struct integrity_resolve *res = NULL;
	int r;

	r = parse_options(&pc, "integrityctl udev-helper", argc, argv, table, "DEVNAME");
	if (r)
		return r;
	if (o.help || o.print_rules) {
		if (o.help)
			poptPrintHelp(pc, stdout, 0);
		else
			fputs(site_rules, stdout);
		return EXIT_CLEAN;
	}
	if (gopt.output || gopt.output_all)
		return refuse_columns("it prints udev properties, not columns");
	const char **args = poptGetArgs(pc);
	if (!args || !args[0] || args[1])
		return usage_error("DEVNAME");
	signal(SIGALRM, deadline_passed);
	alarm(DEADLINE_SECONDS);
	const char *devname = args[0];
	/* Set by udev for programs it runs; unset when run by hand (nothing is
	 * recorded then). */
	const char *action = getenv("ACTION");
	bool record = action && !o.no_history;

	if (action && strcmp(action, "remove") == 0) {
		if (record)
			record_remove(devname);
		return EXIT_CLEAN;
	}
	r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r == 0)
		r = integrity_device_new(ctx, device_spec(devname), &dev);
	if (r < 0) {
		fail(0, devname, r, "cannot look up");
		return EXIT_CLEAN;
	}
	/* udev's database is being rewritten by this very event.  The links
	 * udev has given the device in this event are in DEVLINKS (this rule
	 * runs after 60-persistent-storage.rules); without them, ask the device. */
	const char *links[64];
	_cleanup_free_ char *copy = NULL;
	size_t nlinks = action ? env_links(&copy, links, ARRAY_SIZE(links)) : 0;
	if (nlinks)
		r = integrity_resolve_device_links(dev, links, nlinks, &res);
	else
		r = integrity_resolve_device(dev, INTEGRITY_RESOLVE_NO_UDEV, &res);
	if (r < 0)
		fail(0, devname, r, "cannot read the stable names");
	if (!integrity_device_partno(dev) && !o.no_policy)
		apply_policy(dev, res);
	print_properties(dev, res);
	if (record && res && strcmp(action, "add") != 0 && strcmp(action, "change") != 0)
		record = false;	/* bind, move, online...: not a new number */
	if (record && res) {
		r = integrity_history_append_resolve(o.history, action, res);
		if (r < 0)
			fail_file(0, o.history ? o.history : INTEGRITY_HISTORY_PATH, r, "cannot record %s",
				  integrity_device_name(dev));
	}
	return EXIT_CLEAN;
}
