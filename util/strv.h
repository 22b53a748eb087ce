/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A growable, NULL-terminated array of strings; not installed. */
#ifndef INTEGRITY_UTIL_STRV_H
#define INTEGRITY_UTIL_STRV_H

#include <stdbool.h>
#include <stddef.h>

struct strv {
	char **v;
	size_t n, cap;
};

/* Append a copy (of the first len bytes): 0 or -ENOMEM. */
int strv_push(struct strv *s, const char *str);
int strv_pushn(struct strv *s, const char *str, size_t len);
/* Append a copy unless str is empty or already there. */
int strv_push_unique(struct strv *s, const char *str);
bool strv_contains(const struct strv *s, const char *str);
void strv_clear(struct strv *s);

#endif
