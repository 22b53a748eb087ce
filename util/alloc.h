/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Growing arrays without hand-written realloc arithmetic; not installed. */
#ifndef INTEGRITY_UTIL_ALLOC_H
#define INTEGRITY_UTIL_ALLOC_H

#include <stddef.h>

/*
 * Make the array *p, of *cap elements of size bytes each, hold at least need
 * elements: the capacity at least doubles (from 8), the product is checked
 * for overflow.  *p and *cap change only on success.  0 or -ENOMEM.
 */
int greedy_realloc(void **p, size_t *cap, size_t need, size_t size);

/* GREEDY_REALLOC(array, capacity, need), as systemd's: array and capacity
 * are lvalues (any element type, a size_t capacity). */
#define GREEDY_REALLOC(array, cap, need) \
	greedy_realloc((void **)&(array), &(cap), (need), sizeof(*(array)))

#endif
