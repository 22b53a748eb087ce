/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict number parsing for the library and the command; not installed. */
#ifndef INTEGRITY_UTIL_PARSE_H
#define INTEGRITY_UTIL_PARSE_H

#include <stdint.h>

/* Decimal digits only: no sign, no blanks, no base prefix (a leading zero
 * is not octal).  *end is left at the first byte that is not a digit.
 * -EINVAL when s does not start with a digit, -ERANGE past 64 bits. */
int parse_digits(const char *s, const char **end, uint64_t *v);
/* A whole string of digits: "-1" is -EINVAL, never UINT64_MAX; a value
 * with a trailing newline or blank is -EINVAL too. */
int parse_u64(const char *s, uint64_t *v);
/* The same with an optional '-': -ERANGE outside int64_t. */
int parse_s64(const char *s, int64_t *v);

#endif
