/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What every command shares: the global options, errors, parsing. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <libsmartcols.h>

#include "cmd.h"
#include "util/safefile.h"

/* The options every command takes, set by parse_options(). */
struct global_options gopt;

struct poptOption global_option_table[] = {
	{ "json", 'J', POPT_ARG_NONE, &gopt.json, 0, "use JSON output format", NULL },
	{ "output", 'o', POPT_ARG_STRING, &gopt.output, 0, "output columns (see the command's --help)", "COLUMNS" },
	{ "output-all", '\0', POPT_ARG_NONE, &gopt.output_all, 0, "output every column", NULL },
	{ "noheadings", 'n', POPT_ARG_NONE, &gopt.noheadings, 0, "don't print headings", NULL },
	{ "raw", 'r', POPT_ARG_NONE, &gopt.raw, 0, "use the raw output format", NULL },
	{ "sysfs-root", '\0', POPT_ARG_STRING, &gopt.sysfs_root, 0, "read another sysfs tree", "DIR" },
	{ "quiet", 'q', POPT_ARG_NONE, &gopt.quiet, 0, "print only errors", NULL },
	{ "verbose", 'v', POPT_ARG_NONE, &gopt.verbose, 0, "say more", NULL },
	POPT_TABLEEND
};

/* strerror() (with words for the refusals of util/safefile.c), or which
 * library could not be loaded when that is the cause: the call then failed
 * with ELIBACC, or ENOMEM from a constructor. */
static const char *error_string(int err)
{
	err = err < 0 ? -err : err;
	if ((err == ELIBACC || err == ENOMEM) && integrity_missing_library())
		return integrity_missing_library();
	return safe_strerror(err);
}

const char *command_name;

/* "integrityctl: COMMAND: OBJECT: " as every message starts: the command
 * once, the object unless it is the command itself. */
void message_start(const char *object)
{
	fputs("integrityctl: ", stderr);
	if (command_name)
		fprintf(stderr, "%s: ", command_name);
	if (object && (!command_name || strcmp(object, command_name) != 0))
		fprintf(stderr, "%s: ", object);
}

static int vfail(int code, const char *object, int err, const char *fix, const char *fmt, va_list ap)
{
	message_start(object);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", error_string(err));
	if (fix)
		fprintf(stderr, "; %s", fix);
	fputc('\n', stderr);
	return code;
}

int fail(int code, const char *object, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(code, object, err, NULL, fmt, ap);
	va_end(ap);
	return code;
}

int fail_fix(int code, const char *object, int err, const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(code, object, err, fix, fmt, ap);
	va_end(ap);
	return code;
}

int fail_file(int code, const char *path, int err, const char *fmt, ...)
{
	char what[512], fix[4352];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (err == -EPERM && lstat(path, &st) == 0 && safe_untrusted(&st, path, fix, sizeof(fix)))
		return fail(code, path, 0, "%s: not trusted: %s", what, fix);
	/* The file is fine, or not there: its directory may be what is not
	 * ("." for a bare name, "/" for one at the root). */
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int dirlen = !slash ? 0 : slash == path ? 1 : (int)(slash - path);
	if (err == -EPERM && snprintf(dir, sizeof(dir), "%.*s", dirlen, path) < (int)sizeof(dir) &&
	    stat(dirlen ? dir : ".", &st) == 0 && safe_untrusted(&st, dirlen ? dir : ".", fix, sizeof(fix)))
		return fail(code, path, 0, "%s: its directory is not trusted: %s", what, fix);
	return fail(code, path, err, "%s", what);
}

int output_file_option(const char *old, char **value, char *old_value)
{
	if (!old_value)
		return 0;
	if (*value)
		return conflicting_options(old, "-O/--output-file", NULL);
	message_start(NULL);
	fprintf(stderr, "%s FILE is deprecated and goes away in the next release: "
		"write -O FILE (--output-file)\n", old);
	*value = old_value;
	return 0;
}

int bad_option(const char *option, const char *value, const char *fmt, ...)
{
	_cleanup_free_ char *object = NULL;
	va_list ap;

	if (asprintf(&object, "%s '%s'", option, value) < 0)
		object = NULL;
	va_start(ap, fmt);
	vfail(EXIT_USAGE, object ? object : option, 0, NULL, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int option_choice(const char *option, const char *value, const char *const *choices)
{
	char list[256] = "";
	size_t n = 0, len = 0;

	for (; choices[n]; n++)
		if (strcasecmp(value, choices[n]) == 0)
			return (int)n;
	for (size_t i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i == 0 ? "" : i + 1 == n ? " or " : ", ", choices[i]);
	bad_option(option, value, "use %s", list);
	return -1;
}

int time_option(const char *option, const char *value, int64_t *usec)
{
	if (integrity_time_parse(value, usec) < 0)
		return bad_option(option, value, "not a time from 1970 to 9999: use ISO 8601 "
				  "(2025-03-01T12:00:00Z) or @EPOCH");
	return 0;
}

void warnx_obj(const char *object, const char *fmt, ...)
{
	va_list ap;

	if (gopt.quiet)
		return;
	message_start(object);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int device_error(const char *name, int r)
{
	if (r == -ENODEV)
		return fail_fix(EXIT_FAIL, name, 0, FIX_DEVICE_NAME, "no such block device");
	if (r == -ENOENT)
		return fail_fix(EXIT_FAIL, name, r, "check the path", "cannot look up");
	if (r == -ENOTBLK)
		return fail_fix(EXIT_USAGE, name, 0, "give a disk or a partition ('integrityctl status' lists them)",
				"not a block device");
	return fail(EXIT_FAIL, name, r, "cannot look up");
}

int open_device(const char *name, struct integrity_context **ctx, struct integrity_device **dev)
{
	int r = integrity_context_new(ctx, gopt.sysfs_root);

	*dev = NULL;
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	r = integrity_device_new(*ctx, name, dev);
	return r < 0 ? device_error(name, r) : 0;
}

size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (lb >= sizeof(prev) / sizeof(prev[0]))
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
	}
	return prev[lb];
}

/* The long option of table (and the tables it includes) nearest to opt
 * ("--no-stat"): a prefix of one, or one or two letters off; NULL when
 * none is that near. */
static const char *nearest_option(const struct poptOption *table, const char *opt, size_t *best_d,
				  const char *best)
{
	for (const struct poptOption *t = table; t && (t->longName || t->shortName || t->arg); t++) {
		if ((t->argInfo & POPT_ARG_MASK) == POPT_ARG_INCLUDE_TABLE) {
			best = nearest_option(t->arg, opt, best_d, best);
			continue;
		}
		if (!t->longName)
			continue;
		size_t d = edit_distance(opt, t->longName);
		if (strncmp(t->longName, opt, strlen(opt)) == 0)
			d = 1;
		if (d < *best_d) {
			*best_d = d;
			best = t->longName;
		}
	}
	return best;
}

/* "integrityctl pi generate": "pi generate". */
static const char *command_of(const char *name)
{
	return strncmp(name, "integrityctl ", 13) == 0 ? name + 13 : name;
}

int parse_options(poptContext *ctxp, const char *name, int argc, const char **argv,
		  const struct poptOption *table, const char *usage)
{
	int rc;

	/* popt's usage line starts with argv[0]: "integrityctl COMMAND". */
	if (argc > 0)
		argv[0] = name;
	poptContext ctx = poptGetContext(name, argc, argv, table, 0);

	poptSetOtherOptionHelp(ctx, usage);
	/* name is "integrityctl COMMAND": the command every message names. */
	command_name = command_of(name);
	bool help = false;
	while ((rc = poptGetNextOpt(ctx)) > 0)
		help |= rc == OPT_HELP;
	if (rc < -1) {
		const char *bad = poptBadOption(ctx, 0);
		message_start(bad);
		fputs(poptStrerror(rc), stderr);
		if (rc == POPT_ERROR_BADOPT && bad && bad[0] == '-' && bad[1] == '-' && bad[2]) {
			char opt[64];
			snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(bad + 2, "="), bad + 2);
			size_t d = 3;
			const char *near = nearest_option(table, opt, &d, NULL);
			if (near)
				fprintf(stderr, ". Did you mean '--%s'?", near);
		}
		fprintf(stderr, "\nTry '%s --help'.\n", name);
		poptFreeContext(ctx);
		*ctxp = NULL;
		return EXIT_USAGE;
	}
	if (help) {
		poptPrintHelp(ctx, stdout, 0);
		poptFreeContext(ctx);
		*ctxp = NULL;
		return EXIT_HELP;
	}
	if (gopt.output && gopt.output_all) {
		poptFreeContext(ctx);
		*ctxp = NULL;
		return conflicting_options("-o/--output", "--output-all", NULL);
	}
	if (gopt.json && gopt.raw) {
		poptFreeContext(ctx);
		*ctxp = NULL;
		return conflicting_options("-J/--json", "-r/--raw", NULL);
	}
	*ctxp = ctx;
	return 0;
}

int parse_u64_hex(const char *s, uint64_t *v)
{
	uint64_t x = 0;

	if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return parse_u64(s, v);
	if (!s[2])
		return -EINVAL;
	for (const char *p = s + 2; *p; p++) {
		if (!isxdigit((unsigned char)*p))
			return -EINVAL;
		if (x >> 60)
			return -ERANGE;
		x = x << 4 | (uint64_t)(isdigit((unsigned char)*p) ? *p - '0' : (*p | 0x20) - 'a' + 10);
	}
	*v = x;
	return 0;
}

int parse_size(const char *s, uint64_t *v)
{
	static const char suffixes[] = "KMGTPE";
	const char *end, *p;
	uint64_t x, frac = 0, scale = 1;
	int r = parse_digits(s, &end, &x);

	if (r < 0)
		return r;
	/* A fraction, as sizes are printed ("1.5G"): with a suffix, and only
	 * when it makes whole bytes. */
	if (*end == '.') {
		end++;
		if (!isdigit((unsigned char)*end))
			return -EINVAL;
		for (; isdigit((unsigned char)*end); end++) {
			if (scale >= 1000000000000ull)
				return -EINVAL;
			frac = frac * 10 + (uint64_t)(*end - '0');
			scale *= 10;
		}
		if (!*end)
			return -EINVAL;
	}
	if (*end) {
		p = strchr(suffixes, end[0] & ~0x20);
		if (!p || !end[0])
			return -EINVAL;
		if (end[1] && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)
			return -EINVAL;
		for (int i = 0; i <= p - suffixes; i++) {
			if (x > UINT64_MAX / 1024)
				return -ERANGE;
			x *= 1024;
			/* frac / scale of a unit, kept exact while it divides. */
			if (frac && frac > UINT64_MAX / 1024)
				return -ERANGE;
			frac *= 1024;
			while (scale > 1 && frac % 10 == 0 && scale % 10 == 0) {
				frac /= 10;
				scale /= 10;
			}
		}
		if (frac % scale)
			return -EDOM;	/* not a whole number of bytes */
		if (x > UINT64_MAX - frac / scale)
			return -ERANGE;
		x += frac / scale;
	}
	*v = x;
	return 0;
}

int parse_duration(const char *s, double *secs)
{
	static const struct {
		char unit;
		unsigned secs;
	} units[] = { { '\0', 1 }, { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 } };
	const char *end;
	uint64_t whole, frac = 0, scale = 1;
	int r = parse_digits(s, &end, &whole);

	if (r < 0)
		return r;
	if (*end == '.') {
		end++;
		if (!isdigit((unsigned char)*end))
			return -EINVAL;
		/* Digits past the ninth add nothing a scrub could honour. */
		for (; isdigit((unsigned char)*end); end++)
			if (scale < 1000000000) {
				frac = frac * 10 + (uint64_t)(*end - '0');
				scale *= 10;
			}
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (*end != units[i].unit || (*end && end[1]))
			continue;
		/* At most a year: more is a typing error, not a slice of work. */
		if (whole > 366u * 86400 / units[i].secs)
			return -ERANGE;
		double v = ((double)whole + (double)frac / (double)scale) * units[i].secs;
		if (v <= 0)
			return -EDOM;
		*secs = v;
		return 0;
	}
	return -EINVAL;
}

int parse_block_range(const char *spec, uint32_t block_size, uint64_t *start, uint64_t *len)
{
	char buf[64];
	const char *colon = strchr(spec, ':');
	uint64_t a, b = 0;

	if (!colon || (size_t)(colon - spec) >= sizeof(buf) || !block_size)
		return -EINVAL;
	memcpy(buf, spec, (size_t)(colon - spec));
	buf[colon - spec] = '\0';
	/* A plain number is in blocks; with a suffix, bytes. */
	bool a_bytes = strpbrk(buf, "KMGTPEkmgtpe") != NULL;
	bool b_bytes = strpbrk(colon + 1, "KMGTPEkmgtpe") != NULL;
	if ((a_bytes ? parse_size(buf, &a) : parse_u64(buf, &a)) < 0)
		return -EINVAL;
	if (colon[1] && (b_bytes ? parse_size(colon + 1, &b) : parse_u64(colon + 1, &b)) < 0)
		return -EINVAL;
	if ((a_bytes && a % block_size) || (b_bytes && b % block_size))
		return -EDOM;
	a = a_bytes ? a / block_size : a;
	b = b_bytes ? b / block_size : b;
	/* An empty LEN is "to the end"; a zero one is no range at all. */
	if ((colon[1] && !b) || b > UINT64_MAX - a)
		return -ERANGE;
	*start = a;
	*len = b;
	return 0;
}

int range_option(const char *spec, uint32_t block_size, uint64_t *start, uint64_t *len)
{
	int r = parse_block_range(spec, block_size, start, len);

	if (r == -EDOM)
		return bad_option("--range", spec, "byte values must be multiples of the %u-byte block",
				  block_size);
	if (r == -ERANGE)
		return bad_option("--range", spec, "LEN must be at least one block "
				  "(leave it empty for \"to the end\")");
	if (r < 0)
		return bad_option("--range", spec, "START:LEN in blocks, or in bytes with K/M/G, "
				  "multiples of the %u-byte block", block_size);
	return 0;
}

const char *format_time(int64_t usec, bool fraction, char *buf, size_t len)
{
	int64_t sec = usec / 1000000, frac = usec % 1000000;
	char s[32];
	struct tm tm;

	if (frac < 0) {
		sec--;
		frac += 1000000;
	}
	time_t t = (time_t)sec;
	if (!gmtime_r(&t, &tm) || !strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm))
		return NULL;
	if (fraction)
		snprintf(buf, len, "%s.%06" PRId64 "Z", s, frac);
	else
		snprintf(buf, len, "%sZ", s);
	return buf;
}

int line_printf(struct libscols_line *ln, size_t column, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return scols_line_set_data(ln, column, buf);
}

int usage_error(const char *usage)
{
	fail(EXIT_USAGE, NULL, 0, "usage: integrityctl %s %s", command_name, usage);
	fprintf(stderr, "Try 'integrityctl %s --help'.\n", command_name);
	return EXIT_USAGE;
}

int conflicting_options(const char *a, const char *b, const char *why)
{
	return fail(EXIT_USAGE, NULL, 0, "%s and %s: choose one%s%s", a, b, why ? ": " : "", why ? why : "");
}

int refuse_columns(const char *why)
{
	return fail(EXIT_USAGE, NULL, 0, "%s: %s", gopt.output ? "-o/--output" : "--output-all", why);
}
