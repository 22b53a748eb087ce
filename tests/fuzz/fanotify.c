/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monitor's reader of fanotify's file system error events
 * (libintegrity/monitor/fserror.c): any bytes as what read(2) gave, taken
 * event by event as the monitor takes them.  Each event is within the
 * bytes, the walk always moves on, and an error counts at least one.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "monitor/fserror.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The kernel's buffer is aligned for its structs: so is this copy. */
	uint64_t *buf = malloc(size + 8);
	size_t at = 0;

	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	while (at < size) {
		struct fserror_record rec;
		size_t used = 0;
		int r = fserror_parse((const unsigned char *)buf + at, size - at, &rec, &used);
		FUZZ_CHECK(r == 0 || r == 1 || r == -EPROTO);
		if (r != 1) {
			FUZZ_CHECK(used == 0);
			break;
		}
		FUZZ_CHECK(used > 0 && used <= size - at);
		FUZZ_CHECK(!(rec.overflow && rec.is_error));
		FUZZ_CHECK(!rec.is_error || rec.error_count >= 1);
		at += used;
	}
	free(buf);
	return 0;
}
