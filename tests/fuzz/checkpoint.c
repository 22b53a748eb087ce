/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A scrub's state file (checkpoint.c): read back when a scrub resumes, with
 * its bad blocks reported by name, and listed by integrity_scrub_states()
 * for status.
 */
#include "config.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scrub.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], copy[PATH_MAX + 16], why[256];
	struct scrub_checkpoint cp = { 0 }, again = { 0 };

	snprintf(dir, sizeof(dir), "%s/states", fuzz_dir());
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/naa.5000c500a1b2c3d4.scrub", dir);
	snprintf(copy, sizeof(copy), "%s/copy.scrub.again", fuzz_dir());
	fuzz_write_file(path, data, size, 0);

	/* Resuming: every field checked, and what passes is self-consistent. */
	if (scrub_checkpoint_read(path, &cp, true, why, sizeof(why)) == 0) {
		FUZZ_CHECK(memchr(cp.identity, '\0', sizeof(cp.identity)));
		FUZZ_CHECK(memchr(cp.method, '\0', sizeof(cp.method)));
		FUZZ_CHECK(cp.progress.start <= cp.progress.done);
		FUZZ_CHECK(cp.progress.done <= cp.progress.end);
		FUZZ_CHECK(cp.progress.end <= cp.blocks);
		FUZZ_CHECK(cp.errors.n <= cp.errors.cap);
		for (size_t i = 0; i < cp.errors.n; i++) {
			const char *kind = integrity_scrub_error_kind_name(cp.errors.v[i].kind);
			FUZZ_CHECK(kind && strlen(kind) < 64);
			FUZZ_CHECK(cp.errors.v[i].count > 0);
		}
		/* What was accepted is written and read back the same. */
		if (scrub_checkpoint_write(copy, &cp) == 0) {
			FUZZ_CHECK(scrub_checkpoint_read(copy, &again, true, why, sizeof(why)) == 0);
			FUZZ_CHECK(again.progress.done == cp.progress.done);
			FUZZ_CHECK(again.progress.end == cp.progress.end);
			FUZZ_CHECK(again.errors.n == cp.errors.n);
			scrub_checkpoint_free(&again);
			unlink(copy);
		}
	}
	scrub_checkpoint_free(&cp);

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
