/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A scrub's state file (checkpoint.c): read back when a scrub resumes, with
 * its bad blocks reported by name, and listed by integrity_scrub_states()
 * for status.
 */
#include "config.h"

#include <limits.h>
#include <sys/stat.h>

#include "scrub.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct integrity_scrub *s = calloc(1, sizeof(*s));

	FUZZ_CHECK(s);
	snprintf(dir, sizeof(dir), "%s/states", fuzz_dir());
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/naa.5000c500a1b2c3d4.scrub", dir);
	fuzz_write_file(path, data, size, 0);

	/* Resuming: the scrub of the device the seeds describe. */
	snprintf(s->state_path, sizeof(s->state_path), "%s", path);
	snprintf(s->identity, sizeof(s->identity), "naa.5000c500a1b2c3d4");
	snprintf(s->protection, sizeof(s->protection), "T10-DIF-TYPE1-CRC");
	s->method = INTEGRITY_SCRUB_HOST;
	s->block_size = 512;
	s->blocks = 2048;
	s->progress.end = 2048;
	FUZZ_CHECK(checkpoint_load(s) == 0);
	FUZZ_CHECK(s->nerrors <= s->errors_cap);
	FUZZ_CHECK(s->progress.done <= UINT64_MAX);
	for (size_t i = 0; i < s->nerrors; i++) {
		const char *kind = integrity_scrub_error_kind_name(s->errors[i].kind);
		const char *tag = integrity_tag_name(s->errors[i].tag);
		if (kind)
			FUZZ_CHECK(strlen(kind) < 64);
		if (tag)
			FUZZ_CHECK(strlen(tag) < 64);
	}
	free(s->errors);
	free(s);

	/* Listing. */
	struct integrity_scrub_state *st;
	size_t n;
	if (integrity_scrub_states(dir, &st, &n) == 0) {
		FUZZ_CHECK(n <= 1);
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(memchr(st[i].identity, '\0', sizeof(st[i].identity)));
			FUZZ_CHECK(memchr(st[i].target, '\0', sizeof(st[i].target)));
			FUZZ_CHECK(memchr(st[i].method, '\0', sizeof(st[i].method)));
			FUZZ_CHECK(memchr(st[i].protection, '\0', sizeof(st[i].protection)));
			FUZZ_CHECK(memchr(st[i].status, '\0', sizeof(st[i].status)));
		}
		free(st);
	}
	return 0;
}
