/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the owners harnesses check of every answer: each range has owners,
 * each inside it and saying what it is, and together they cover it. */
#ifndef INTEGRITY_FUZZ_OWNERS_CHECK_H
#define INTEGRITY_FUZZ_OWNERS_CHECK_H

#include "libintegrity.h"
#include "owners_int.h"
#include "fuzz.h"

static inline void fuzz_check_owner(const struct integrity_owner *w, const struct integrity_byte_range *range)
{
	FUZZ_CHECK(w->device_length > 0);
	FUZZ_CHECK(w->device_offset >= range->offset);
	FUZZ_CHECK(w->device_offset + w->device_length <= range->offset + range->length);
	FUZZ_CHECK((unsigned)w->kind <= INTEGRITY_OWNER_UNKNOWN);
	FUZZ_CHECK(strlen(integrity_owner_kind_name(w->kind)) > 0);
	if (w->path)
		FUZZ_CHECK(strlen(w->path) < 1u << 20);
	if (w->note)
		FUZZ_CHECK(strlen(w->note) > 0);
	if (w->kind == INTEGRITY_OWNER_FILE)
		FUZZ_CHECK(w->length == w->device_length);
	if (w->kind == INTEGRITY_OWNER_METADATA)
		FUZZ_CHECK(w->metadata && w->metadata[0]);
	if (w->kind == INTEGRITY_OWNER_UNKNOWN)
		FUZZ_CHECK(w->note != NULL);
	if (w->first_inode)
		FUZZ_CHECK(w->last_inode >= w->first_inode);
}

static inline void fuzz_check_owners(const struct integrity_owners *o)
{
	for (size_t i = 0; i < o->nranges; i++) {
		size_t k = integrity_owners_count(o, i);
		uint64_t covered = 0;
		FUZZ_CHECK(k > 0);
		for (size_t j = 0; j < k; j++) {
			const struct integrity_owner *w = integrity_owners_get(o, i, j);
			FUZZ_CHECK(w);
			fuzz_check_owner(w, &o->ranges[i]);
			covered += w->device_length;
		}
		FUZZ_CHECK(covered >= o->ranges[i].length);
		FUZZ_CHECK(integrity_owners_get(o, i, k) == NULL);
	}
}

#endif
