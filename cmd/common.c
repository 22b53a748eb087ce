/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <libsmartcols.h>

#include "cmd.h"

int fail(int code, const char *object, int err, const char *fmt, ...)
{
	va_list ap;

	fputs("integrityctl: ", stderr);
	if (object)
		fprintf(stderr, "%s: ", object);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err < 0 ? -err : err));
	fputc('\n', stderr);
	return code;
}

void warnx_obj(const char *object, const char *fmt, ...)
{
	va_list ap;

	if (gopt.quiet)
		return;
	fputs("integrityctl: ", stderr);
	if (object)
		fprintf(stderr, "%s: ", object);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int parse_options(poptContext *ctxp, const char *name, int argc, const char **argv,
		  const struct poptOption *table, const char *usage)
{
	poptContext ctx = poptGetContext(name, argc, argv, table, 0);
	int rc;

	poptSetOtherOptionHelp(ctx, usage);
	while ((rc = poptGetNextOpt(ctx)) > 0)
		;
	if (rc < -1) {
		fprintf(stderr, "integrityctl: %s: %s: %s\n", name, poptBadOption(ctx, 0),
			poptStrerror(rc));
		fprintf(stderr, "Try '%s --help'.\n", name);
		poptFreeContext(ctx);
		*ctxp = NULL;
		return EXIT_USAGE;
	}
	*ctxp = ctx;
	return 0;
}

int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

int parse_size(const char *s, uint64_t *v)
{
	static const char suffixes[] = "KMGTPE";
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		const char *p = strchr(suffixes, end[0] & ~0x20);
		if (!p || !end[0])
			return -EINVAL;
		if (end[1] && strcmp(end + 1, "iB") != 0 && strcmp(end + 1, "B") != 0)
			return -EINVAL;
		for (int i = 0; i <= p - suffixes; i++) {
			if (x > UINT64_MAX / 1024)
				return -ERANGE;
			x *= 1024;
		}
	}
	*v = x;
	return 0;
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

const char *format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "BKMGTPE";
	int u = 0;
	uint64_t whole = bytes, frac = 0;

	while (whole >= 1024 && u < 6) {
		frac = whole % 1024;
		whole /= 1024;
		u++;
	}
	if (!u) {
		snprintf(buf, len, "%" PRIu64, bytes);
		return buf;
	}
	/* One decimal, dropped when it is zero, as lsblk does. */
	unsigned tenth = (unsigned)((frac * 10 + 512) / 1024);
	if (tenth == 10) {
		whole++;
		tenth = 0;
	}
	if (tenth)
		snprintf(buf, len, "%" PRIu64 ".%u%c", whole, tenth, units[u]);
	else
		snprintf(buf, len, "%" PRIu64 "%c", whole, units[u]);
	return buf;
}
