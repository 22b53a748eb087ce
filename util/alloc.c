/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"

int greedy_realloc(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	if (size == 0 || need > SIZE_MAX / size)
		return -ENOMEM;
	size_t n = *cap < 4 ? 8 : *cap;
	while (n < need)
		n = n > SIZE_MAX / 2 ? need : n * 2;
	if (n > SIZE_MAX / size)
		n = need;
	void *q = realloc(*p, n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}
