/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The options that describe protection information, for pi and scrub. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cmd.h"

struct pi_options pi_opts;

struct poptOption pi_option_table[] = {
	{ "format", 'f', POPT_ARG_STRING, &pi_opts.format, 0,
	  "protection profile (pi: default T10-DIF-TYPE1-CRC)", "PROFILE" },
	{ "interval", 'i', POPT_ARG_STRING, &pi_opts.interval, 0,
	  "protection interval in bytes (default 512)", "N" },
	{ "metadata-size", 'm', POPT_ARG_STRING, &pi_opts.metadata_size, 0,
	  "metadata bytes per block (default: the tuple size)", "M" },
	{ "pi-position", '\0', POPT_ARG_STRING, &pi_opts.position, 0,
	  "where the tuple sits in the metadata", "first|last" },
	{ "seed", '\0', POPT_ARG_STRING, &pi_opts.seed, 0, "reference tag of block 0 (default 0; decimal or 0x hex)", "LBA" },
	{ "app-tag", '\0', POPT_ARG_STRING, &pi_opts.app_tag, 0,
	  "application tag, and the bits of it to check (default: 0, unchecked; decimal or 0x hex)",
	  "V[/MASK]" },
	{ "pi-file", 'p', POPT_ARG_STRING, &pi_opts.pi_file, 0,
	  "metadata in a separate file (DIX layout)", "FILE" },
	POPT_TABLEEND
};

/* V or V/MASK, each decimal or 0x hex, at most 0xFFFF. */
static int parse_app_tag(struct integrity_pi_params *p)
{
	uint64_t tag, mask = 0xFFFF;

	if (!pi_opts.app_tag)
		return 0;
	char *tag_s = strdup(pi_opts.app_tag);
	if (!tag_s)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "--app-tag");
	char *slash = strchr(tag_s, '/');
	if (slash)
		*slash = '\0';
	bool ok = parse_u64_hex(tag_s, &tag) == 0 && tag <= 0xFFFF &&
		  (!slash || (parse_u64_hex(slash + 1, &mask) == 0 && mask <= 0xFFFF));
	free(tag_s);
	if (!ok)
		return bad_option("--app-tag", pi_opts.app_tag,
				  "use V or V/MASK, each from 0 to 65535 (or 0xFFFF)");
	p->app_tag = (uint16_t)tag;
	p->app_mask = (uint16_t)mask;
	return 0;
}

int pi_options_parse(struct integrity_pi_params *p, const char *default_profile)
{
	uint64_t v;
	const char *name = pi_opts.format ? pi_opts.format : default_profile;

	memset(p, 0, sizeof(*p));
	if (!name) {
		/* The device describes its own protection; only the application
		 * tag to expect can be given. */
		if (pi_opts.interval || pi_opts.metadata_size || pi_opts.position || pi_opts.seed ||
		    pi_opts.pi_file)
			return fail(EXIT_USAGE, NULL, 0, "describe the protection with --format PROFILE");
		return parse_app_tag(p);
	}
	p->profile = integrity_profile_by_name(name);
	if (!p->profile)
		return fail(EXIT_USAGE, NULL, 0, "unknown profile '%s' (see 'integrityctl pi --help')",
			    name);
	if (!integrity_profile_tuple_size(p->profile))
		return fail(EXIT_USAGE, NULL, 0, "profile '%s' carries no protection information", name);

	p->interval = 512;
	if (pi_opts.interval) {
		if (parse_size(pi_opts.interval, &v) < 0 || v < 512 || v > (1u << 20) || (v & (v - 1)))
			return bad_option("--interval", pi_opts.interval,
					  "must be a power of two from 512 to 1M");
		p->interval = (uint32_t)v;
	}
	if (pi_opts.metadata_size) {
		unsigned tuple = integrity_profile_tuple_size(p->profile);
		if (parse_size(pi_opts.metadata_size, &v) < 0 || v < tuple || v > p->interval)
			return bad_option("--metadata-size", pi_opts.metadata_size,
					  "must be from %u (the %s tuple) to the interval", tuple,
					  integrity_profile_name(p->profile));
		p->metadata_size = (uint32_t)v;
	}
	if (pi_opts.position) {
		static const char *const positions[] = { "first", "last", NULL };
		int i = option_choice("--pi-position", pi_opts.position, positions);
		if (i < 0)
			return EXIT_USAGE;
		p->pi_position = i == 0 ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST;
	}
	if (pi_opts.seed && parse_u64_hex(pi_opts.seed, &p->seed) < 0)
		return bad_option("--seed", pi_opts.seed, "not a number (decimal, or hex with 0x)");
	int r = parse_app_tag(p);
	if (r)
		return r;
	p->layout = pi_opts.pi_file ? INTEGRITY_LAYOUT_DIX : INTEGRITY_LAYOUT_DIF;
	return 0;
}
