/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The device-number history (history.c): a file of event lines read by
 * resolve --history, looked up by number, name and link at a time and
 * boot.
 */
#include "config.h"

#include <limits.h>

#include "devt.h"
#include "fuzz.h"

static const char *const keys[] = {
	"259:1", "8:16", "sda17", "/dev/nvme0n1p7", "PARTUUID=abc-def", "PARTLABEL=part-3",
	"LABEL=fs two", "UUID=0123", "WWN=0x5333333000001f40", "SERIAL=S1",
	"/dev/disk/by-id/wwn-0x5333333000001f40-part17", "/dev/disk/by-partuuid/abc-def",
};
static const char *const boots[] = { NULL, "0", "-1", "1", "2", "0123456789abcdef0123456789abcdef" };
static const int64_t times[] = { INTEGRITY_TIME_END, 0, 1577836800000000, -1, INT64_MIN, INT64_MAX };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX], old[PATH_MAX + 2];
	struct integrity_history *h;

	snprintf(path, sizeof(path), "%s/history", fuzz_dir());
	snprintf(old, sizeof(old), "%s.1", path);
	/* The rotated file and the current one: the input split at the first NUL. */
	const uint8_t *nul = memchr(data, 0, size);
	size_t n1 = nul ? (size_t)(nul - data) : 0;
	fuzz_write_file(old, data, n1, 0);
	fuzz_write_file(path, data + (nul ? n1 + 1 : 0), size - (nul ? n1 + 1 : 0), 0);

	if (integrity_history_open(path, &h) < 0)
		return 0;
	(void)integrity_history_count(h);
	(void)integrity_history_bad_lines(h);
	for (size_t b = 0; b < integrity_history_boot_count(h); b++)
		FUZZ_CHECK(integrity_history_boot(h, b));
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		for (size_t b = 0; b < sizeof(boots) / sizeof(boots[0]); b++) {
			struct integrity_resolve *res;
			int64_t at = times[(k + b) % (sizeof(times) / sizeof(times[0]))];
			if (integrity_history_lookup(h, keys[k], boots[b], at, &res) == 0) {
				FUZZ_CHECK(res);
				FUZZ_CHECK(integrity_resolve_name(res));
				for (size_t l = 0; l < integrity_resolve_link_count(res); l++)
					FUZZ_CHECK(integrity_resolve_link(res, l));
				integrity_resolve_free(res);
			}
		}
	integrity_history_free(h);
	return 0;
}
