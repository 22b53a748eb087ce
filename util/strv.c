/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "strv.h"

int strv_pushn(struct strv *s, const char *str, size_t len)
{
	if (GREEDY_REALLOC(s->v, s->cap, s->n + 2) < 0)
		return -ENOMEM;
	char *copy = strndup(str, len);
	if (!copy)
		return -ENOMEM;
	s->v[s->n++] = copy;
	s->v[s->n] = NULL;
	return 0;
}

int strv_push(struct strv *s, const char *str)
{
	return strv_pushn(s, str, strlen(str));
}

int strv_push_unique(struct strv *s, const char *str)
{
	return !*str || strv_contains(s, str) ? 0 : strv_push(s, str);
}

bool strv_contains(const struct strv *s, const char *str)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return true;
	return false;
}

void strv_clear(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}
