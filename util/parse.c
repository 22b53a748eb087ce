/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>

#include "parse.h"

int parse_digits(const char *s, const char **end, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	*end = p;
	*v = x;
	return 0;
}

int parse_u64(const char *s, uint64_t *v)
{
	const char *end;
	uint64_t x;
	int r = parse_digits(s, &end, &x);

	if (r < 0)
		return r;
	if (*end)
		return -EINVAL;
	*v = x;
	return 0;
}

int parse_s64(const char *s, int64_t *v)
{
	bool negative = s && *s == '-';
	uint64_t x;
	int r = parse_u64(negative ? s + 1 : s, &x);

	if (r < 0)
		return r;
	if (x > (uint64_t)INT64_MAX + negative)
		return -ERANGE;
	*v = negative ? (int64_t)(0 - x) : (int64_t)x;
	return 0;
}
